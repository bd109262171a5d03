"""Campaigns as a module: one configuration, one variable to the children, engines behind one interface,
and --jobs N engine processes whose findings land in one report."""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from validator.fuzz import aflpp, campaign, supervisor
from validator.fuzz import loader_under_test as lut
from validator.fuzz.config import CONFIG_ENV, CampaignConfig, LoaderSpec, build_loader, from_env
from validator.fuzz.seeds import seed_files

ROOT = Path(__file__).resolve().parent.parent
FUZZ = ROOT / "validator" / "fuzz"
NO_AFL = shutil.which("afl-fuzz") is None or shutil.which("afl-cc") is None
ONE_F32 = seed_files()["y_one_f32.safetensors"]


def _config(tmp_path: Path, **loader: object) -> CampaignConfig:
    spec = LoaderSpec(out_dir=str(tmp_path / "out"), **loader)  # type: ignore[arg-type]
    return CampaignConfig("loader-under-test", seconds=3, workdir=str(tmp_path / "w"), loader=spec)


def test_the_configuration_travels_as_one_value_and_comes_back_equal(tmp_path: Path) -> None:
    config = CampaignConfig(
        "loader-under-test",
        engine="persistent",
        jobs=2,
        seed_dirs=("a", "b"),
        engine_args=("-use_value_profile=1",),
        loader=LoaderSpec(command="h --persistent", reject_names=("m:E",), reject_exit=3, out_dir=str(tmp_path)),
    )
    env = config.child_env()
    assert list(env) == [CONFIG_ENV]
    assert from_env(env) == config
    with pytest.raises(ValueError, match=CONFIG_ENV):
        from_env({CONFIG_ENV: '{"target": 1}'})
    with pytest.raises(ValueError, match="not set"):
        from_env({})


def test_the_engine_child_gets_one_stcheck_variable_and_no_other(tmp_path: Path) -> None:
    config = _config(tmp_path, function="fuzz.examples.naive_loader:load")
    child = supervisor._Campaign(config, out=lambda _s: None).child_env
    ours = sorted(key for key in child if key.startswith("STCHECK_") and key not in os.environ)
    assert ours == [CONFIG_ENV]
    assert from_env(child) == config


def test_a_child_builds_the_loader_from_the_variable(tmp_path: Path) -> None:
    """The import probe, as the CLI runs it before a campaign: a real child process, the variable only."""
    config = _config(tmp_path, function="fuzz.examples.naive_loader:load", reject_names=("builtins:KeyError",))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STCHECK_")}
    env.update(config.child_env(), PYTHONPATH=str(ROOT))
    code = "from validator.fuzz.config import build_loader, from_env; print(build_loader(from_env()).clean)"
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(<class 'KeyError'>,)"


def test_aflpp_replays_run_the_command_with_the_input_as_path(tmp_path: Path) -> None:
    config = CampaignConfig("loader-under-test", engine="aflpp", loader=LoaderSpec(command="/bin/x -v @@"))
    assert build_loader(config).command == "/bin/x -v {path}"


@pytest.mark.parametrize("name", ["atheris", "persistent", "aflpp"])
def test_every_engine_offers_the_one_interface(name: str) -> None:
    engine = campaign.engine(name)
    assert callable(engine.problem)
    assert callable(engine.run)


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_engine_imports_another_engines_internals() -> None:
    engines = {"supervisor", "aflpp", "persistent_engine"}
    for name in engines:
        imported = _imports(FUZZ / f"{name}.py")
        for other in engines - {name}:
            module = f"validator.fuzz.{other}"
            # The persistent engine drives atheris' campaign through its public run() and problem().
            public = {"validator.fuzz.supervisor"}
            allowed = public if (name, other) == ("persistent_engine", "supervisor") else set()
            assert not {m for m in imported if m.startswith(module) and m not in allowed}, (name, other)
            assert f"validator.fuzz.{other}" not in imported or module in allowed, (name, other)


def test_the_command_line_only_parses_and_prints() -> None:
    source = (ROOT / "validator" / "cli" / "fuzz.py").read_text(encoding="utf-8")
    assert len(source.splitlines()) < 250
    for word in ("subprocess", "shutil", "tempfile", "Session", "judge_command", "os.makedirs", "os.remove"):
        assert word not in source, word
    assert "STCHECK_FUZZ" not in source


def test_only_the_config_module_names_the_childs_variable() -> None:
    for path in [*FUZZ.glob("*.py"), ROOT / "validator" / "cli" / "fuzz.py"]:
        if path.name == "config.py":
            continue
        assert "STCHECK_FUZZ" not in path.read_text(encoding="utf-8"), path


@pytest.mark.parametrize("flags", [["--engine", "aflpp"], ["--persistent"]])
def test_a_loader_engine_on_stchecks_own_target_is_a_usage_error(
    flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from validator.cli.main import main

    assert main(["fuzz", "validate", *flags, "--seconds", "1"]) == 2
    err = capsys.readouterr().err
    assert (
        err == "stcheck fuzz: --engine aflpp and --persistent fuzz a loader: use them with TARGET loader-under-test\n"
    )


# --- --jobs ---------------------------------------------------------------------------------------


def test_the_judge_merges_the_findings_of_every_instance(tmp_path: Path) -> None:
    """Each AFL++ instance has its own crashes/ and queue/ (a synced entry is in both): one report, each input once."""
    script = tmp_path / "loader.py"
    script.write_text(
        "import sys\ndata = open(sys.argv[1], 'rb').read()\n"
        "sys.exit(0 if data.startswith(b'ok') else 7 if data.startswith(b'seven') else 1)\n",
        encoding="utf-8",
    )
    config = _config(tmp_path, command=f"{sys.executable} {script} @@", timeout_s=10)
    config = CampaignConfig(**{**config.__dict__, "engine": "aflpp"})
    nodes = aflpp._nodes(str(tmp_path / "afl"), 2)
    assert [Path(n).name for n in nodes] == ["main", "sec-1"]
    for node, crash in zip(nodes, (b"seven-a", b"okay but too short"), strict=True):
        for folder in ("queue", "crashes", "hangs"):
            (Path(node) / folder).mkdir(parents=True)
        (Path(node) / "crashes" / "id:000000,sig:06").write_bytes(crash)
        (Path(node) / "queue" / "id:000000,orig:seed").write_bytes(ONE_F32)  # the same entry, synced to both
    judge = aflpp._Judge(config)
    assert aflpp._sweep_all(judge, nodes, until=time.monotonic() + 60) == 0
    assert judge.judged == 3  # two crashes and the one queue entry, judged once
    classes = {entry["category"] for entry in lut.read_findings(config.loader.out_dir)}  # type: ignore[union-attr]
    assert {"crash:exit-7", "crash:not-reproduced"} <= classes, classes


def _afl_campaign(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    argv = [sys.executable, "-m", "validator", "fuzz", "loader-under-test", "--engine", "aflpp", *args]
    start = time.monotonic()
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    return done, time.monotonic() - start


@pytest.fixture(scope="module")
def harness_afl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if NO_AFL or shutil.which("make") is None:
        pytest.skip("AFL++ is not installed (afl-fuzz, afl-cc: apt-get install afl++)")
    out = tmp_path_factory.mktemp("afl")
    harness = ROOT / "fuzz" / "harness"
    subprocess.run(["make", "-s", "-C", str(harness), f"OUT={out}", str(out / "harness-afl")], check=True, timeout=300)
    return out / "harness-afl"


@pytest.mark.slow
def test_jobs_2_runs_a_main_and_a_secondary_and_reports_their_findings_as_one(
    tmp_path: Path, harness_afl: Path
) -> None:
    work = tmp_path / "work"
    done, took = _afl_campaign(
        tmp_path, "--loader-cmd", f"{harness_afl} @@", "--jobs", "2", "--seconds", "10", "--interval", "30",
        "--workdir", str(work), "--out", str(tmp_path / "out"),
    )  # fmt: skip
    log = done.stdout + done.stderr
    assert done.returncode == 1, log
    nodes = {p.name: aflpp.read_stats(str(p / "fuzzer_stats")) for p in (work / "aflpp" / "out").iterdir()}
    assert set(nodes) == {"main", "sec-1"}, log
    assert all(int(stats["execs_done"]) > 0 for stats in nodes.values()), nodes
    assert "2 afl-fuzz instances (-M main, -S sec-1..) sharing one queue" in log
    m = re.search(r"afl-fuzz: (\d+) execs at [\d.]+/s over \d+s \(2 instances\)", log)
    assert m is not None, log
    assert int(m.group(1)) == sum(int(stats["execs_done"]) for stats in nodes.values())
    # One report: the naive loader's classes, found by either instance, in the one --out.
    assert "problem classes (reproducers in" in log
    assert {"crash:signal-SIGSEGV", "accepts-invalid:buffer-trailing-bytes"} & set(
        re.findall(r"^  (\S+)", log, re.MULTILINE)
    )
    # Progress from the first second: the seeds' line at once, afl-fuzz's a second after it starts,
    # although --interval is 30; and --seconds bounds the whole run, seeds included.
    assert re.search(r"\[loader-under-test/aflpp\]\s+[12]s  seeds \d+ of \d+ run through the loader", log), log
    assert re.search(r"\[loader-under-test/aflpp x2\]\s+\d+s  execs ", log), log
    assert took < 10 + 4, took  # afl-fuzz's grace and Python's start and stop


_ACCEPTS_ALL = """\
import os, struct, sys
open(os.path.join(sys.argv[1], str(os.getpid())), "w").close()  # one file per harness process
while True:
    prefix = sys.stdin.buffer.read(4)
    if len(prefix) < 4:
        break
    sys.stdin.buffer.read(struct.unpack("<I", prefix)[0])
    sys.stdout.write("accept\\n")
    sys.stdout.flush()
"""


@pytest.mark.slow
def test_persistent_jobs_2_serves_the_campaign_with_two_harnesses_and_one_report(tmp_path: Path) -> None:
    """A harness that accepts everything never dies: each job keeps its own for the whole campaign."""
    pytest.importorskip("atheris", reason="the persistent engine is atheris over the harness")
    script, pids = tmp_path / "accepts_all.py", tmp_path / "pids"
    script.write_text(_ACCEPTS_ALL, encoding="utf-8")
    pids.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    argv = [sys.executable, "-m", "validator", "fuzz", "loader-under-test", "--persistent", "--jobs", "2"]
    argv += ["--loader-cmd", f"{sys.executable} {script} {pids}", "--seconds", "6", "--out", str(tmp_path / "out")]
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=90, check=False)
    log = done.stdout + done.stderr
    assert done.returncode == 1, log
    assert len(list(pids.iterdir())) == 1 + 2, log  # the check before the campaign, then one per job
    classes = {entry["category"] for entry in lut.read_findings(str(tmp_path / "out"))}
    assert classes, log
    assert all(c.startswith("accepts-invalid:") for c in classes), classes  # found by either job, one --out
    assert re.search(r"problem classes \(reproducers in ", log), log


def _parsed(*argv: str) -> CampaignConfig:
    """The configuration `stcheck fuzz ARGV` builds (parsed only: nothing runs)."""
    from validator.cli import fuzz as cli_fuzz
    from validator.cli.main import build_parser

    return cli_fuzz._config(build_parser().parse_args(["fuzz", *argv, "--seeds", "none"]))


def test_the_big_familys_flags_travel_in_the_one_configuration(tmp_path: Path) -> None:
    assert (_parsed("loader-under-test").big_rate, _parsed("all").big_max_bytes) == (0.03, 16 << 20)
    config = _parsed("loader-under-test", "--loader", "m:f", "--big-rate", "0", "--big-max-bytes", "1048576")
    assert (config.big_rate, config.big_max_bytes) == (0.0, 1 << 20)
    assert from_env(config.child_env()) == config
    # AFL++'s custom mutator runs inside afl-fuzz: the variable reaches it too.
    afl = dataclasses.replace(config, engine="aflpp", loader=LoaderSpec(command="bin @@", out_dir=str(tmp_path)))
    assert from_env(aflpp._env(afl, base={})).big_rate == 0.0


def test_loader_under_test_gets_inputs_up_to_1_mib_at_once_under_atheris(tmp_path: Path) -> None:
    assert _parsed("loader-under-test", "--loader", "m:f").input_limit() == 1 << 20
    assert _parsed("validate").input_limit() == 16384
    assert _parsed("loader-under-test", "--loader", "m:f", "--max-len", "4096").input_limit() == 4096
    config = dataclasses.replace(_config(tmp_path, function="m:f"), engine_args=("-len_control=100",))
    job = supervisor._Job(supervisor._Campaign(config, out=lambda _s: None), 0)
    argv: list[str] = []

    class _StopError(Exception):
        pass

    def popen(args: list[str], **_kw: object) -> None:
        argv.extend(args)
        raise _StopError

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(supervisor.subprocess, "Popen", popen)
        with pytest.raises(_StopError):
            job._one_process(5)
    assert f"-max_len={1 << 20}" in argv
    assert argv.index("-len_control=0") < argv.index("-len_control=100")  # the user's flag comes last and wins


def test_the_loader_runner_keeps_no_settings_of_its_own_from_the_environment() -> None:
    assert not [name for name in vars(lut) if name.startswith("ENV_")]
    assert not hasattr(lut, "from_env")
    assert not hasattr(lut, "_import")
