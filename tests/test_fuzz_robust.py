# `stcheck fuzz loader-under-test` never passes work it did not do (issue
# 12): an unimportable loader, a missing command, an --out left by an
# earlier run and a campaign of 0 executions all exit 2 with a one-line
# reason.  And one rule decides reject or crash for a loader's exception, the
# same in fuzz-your-loader and in the conformance adapter.
from __future__ import annotations

import json
import os
import struct
import sys
import time
from pathlib import Path

import pytest

from validator.cli.main import main
from validator.conformance import adapter
from validator.fuzz import loader_under_test as yours
from validator.fuzz import supervisor
from validator.fuzz.config import CampaignConfig, LoaderSpec, build_loader
from validator.fuzz.seeds import seed_files

ROOT = Path(__file__).resolve().parent.parent
NAIVE = "fuzz.examples.naive_loader:load"


def _fuzz(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["fuzz", "loader-under-test", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_misspelt_loader_exits_2(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, err = _fuzz(
        capsys, "--loader", "fuzz.examples.naive_loader:nope", "--seconds", "1", "--out", str(tmp_path)
    )
    assert code == 2
    assert err.startswith("stcheck fuzz: cannot import --loader fuzz.examples.naive_loader:nope")
    assert "AttributeError" in err
    assert "no disagreement" not in out


def test_unimportable_module_exits_2_also_in_replay(tmp_path, capsys):
    seed = tmp_path / "x.safetensors"
    seed.write_bytes(seed_files()["y_one_f32.safetensors"])
    code, _, err = _fuzz(capsys, "--loader", "no_such_module_xyz:load", "--replay", str(seed))
    assert code == 2
    assert "ModuleNotFoundError" in err


def test_missing_loader_command_exits_2(tmp_path, capsys):
    code, _, err = _fuzz(capsys, "--loader-cmd", "no-such-program-xyz {path}", "--seconds", "1", "--out", str(tmp_path))
    assert code == 2
    assert "no-such-program-xyz: command not found" in err


def test_stale_out_is_refused_and_overwrite_clears_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    yours.record(str(tmp_path), "crash:KeyError", "from an earlier loader", b"old input")
    code, out, err = _fuzz(capsys, "--loader", NAIVE, "--seconds", "1", "--out", str(tmp_path))
    assert code == 2
    assert "holds 1 problem reports of an earlier run" in err
    assert "crash:KeyError" not in out

    seen: list[str] = []

    def fake_run(config, out=print):
        seen.append(config.target)
        return supervisor.Summary(target=config.target, seconds=1.0, execs=10)

    monkeypatch.setattr(supervisor, "run", fake_run)
    code, out, err = _fuzz(capsys, "--loader", NAIVE, "--seconds", "1", "--out", str(tmp_path), "--overwrite")
    assert seen == ["loader-under-test"]
    assert yours.read_findings(str(tmp_path)) == []
    assert code == 0, err
    assert "no disagreement with safetensors 0.8.0 found" in out


@pytest.mark.parametrize("target", ["loader-under-test", "validate"])
def test_zero_executions_exit_2(tmp_path, capsys, monkeypatch, target):
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(supervisor, "atheris_available", lambda: True)
    monkeypatch.setattr(supervisor, "run", lambda config, out=print: supervisor.Summary(target=config.target))
    argv = ["fuzz", target, "--seconds", "1", "--workdir", str(tmp_path / "w")]
    if target == "loader-under-test":
        argv += ["--loader", NAIVE, "--out", str(tmp_path / "o")]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert f"{target}: 0 executions; the target never ran" in err


# --- one rule: reject or crash --------------------------------------------------------


class _DocumentedError(Exception):
    pass


def _raising(exc: BaseException):
    def load(_arg: object) -> object:
        raise exc

    return load


CASES = [
    # (exception, a clean rejection?)
    (ValueError("bad header"), True),
    (json.JSONDecodeError("x", "doc", 0), True),
    (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), True),
    (KeyError("data_offsets"), False),
    (IndexError("list index out of range"), False),
    (TypeError("string indices must be integers"), False),
    (struct.error("unpack requires a buffer of 8 bytes"), False),
    (RecursionError("maximum recursion depth exceeded"), False),
    (MemoryError(), False),
    (OSError("short read"), False),
    (ValueError("Exceeds the limit (4300 digits) for integer string conversion"), False),
    (BaseException("a Rust panic"), False),
]


@pytest.mark.parametrize(("exc", "rejects"), CASES, ids=[type(e).__name__ + str(i) for i, (e, _) in enumerate(CASES)])
def test_one_rule_for_fuzz_and_conformance(exc: BaseException, rejects: bool, capsys) -> None:
    data = seed_files()["y_one_f32.safetensors"]
    outcome = yours.LoaderUnderTest(function=_raising(exc), pass_bytes=True).run(data)
    assert outcome.crashed is not rejects
    code = adapter.run_one(lambda _path: _raising(exc)(None), "x.safetensors")
    capsys.readouterr()
    assert code == (adapter.REJECT if rejects else adapter.CRASH)
    assert adapter.is_rejection(exc) is rejects


def test_documented_types_are_rejections_in_both(capsys) -> None:
    exc = _DocumentedError("refused")
    assert not adapter.is_rejection(exc)
    assert adapter.is_rejection(exc, (_DocumentedError,))
    loader = yours.LoaderUnderTest(function=_raising(exc), pass_bytes=True, clean=(_DocumentedError,))
    assert not loader.run(b"").crashed
    assert (
        adapter.run_one(lambda _p: _raising(exc)(None), "x", lambda e: adapter.is_rejection(e, (_DocumentedError,)))
        == 1
    )
    capsys.readouterr()


def test_library_errors_are_recognised_by_name() -> None:
    import validator

    class SafetensorError(Exception):  # the binding's type, without importing it
        pass

    assert adapter.is_rejection(SafetensorError("header too large"))
    assert adapter.is_rejection(validator.SourceError("x: not a regular file"))  # a StcheckError


def test_naive_loader_crashes_on_a_short_file_in_both(monkeypatch) -> None:
    # Before: conformance counted its struct.error as a reject, fuzz as a crash.
    monkeypatch.syspath_prepend(str(ROOT))
    short = seed_files()["n_too_small.safetensors"]
    loader = build_loader(CampaignConfig("loader-under-test", loader=LoaderSpec(function=NAIVE)))
    assert [c for c, _ in yours.classify(loader, short)] == ["crash:struct.error"]
    sys.modules.pop("naive", None)


def test_conformance_impl_applies_the_same_rule(tmp_path, capsys, monkeypatch):
    (tmp_path / "keyerror_loader.py").write_text("def load(path):\n    raise KeyError('data_offsets')\n")
    monkeypatch.chdir(tmp_path)
    argv = ["conformance", "--corpus", str(ROOT / "corpus"), "--impl", "keyerror_loader:load", "--quiet"]
    argv += ["--files", "n_prefix_7_bytes.safetensors"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "FAIL crash: n_prefix_7_bytes.safetensors" in out
    assert main([*argv, "--reject-exception", "builtins:KeyError"]) == 0
    assert "passed: all 1 verdicts as expected" in capsys.readouterr().out


# --- fuzzing your own loader, as a newcomer (issue 24) ----------------------------------------


def _fake_campaign(monkeypatch, found_by_engine=()):
    """Replace the engine: record ``found_by_engine`` into --out, as the target would."""
    seen: list[CampaignConfig] = []

    def fake_run(config, out=print):
        seen.append(config)
        out_dir = config.loader.out_dir
        for category, data in found_by_engine:
            yours.record(out_dir, category, "detail", data)
        return supervisor.Summary(target=config.target, seconds=1.0, execs=10, found=len(found_by_engine))

    monkeypatch.setattr(supervisor, "atheris_available", lambda: True)
    monkeypatch.setattr(supervisor, "run", fake_run)
    return seen


def test_progress_counts_the_loaders_problem_classes_as_they_are_found(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out_dir = tmp_path / "findings"
    config = CampaignConfig(
        target="loader-under-test",
        seconds=1,
        workdir=str(tmp_path / "work"),
        loader=LoaderSpec(function="x:y", out_dir=str(out_dir)),
    )
    campaign = supervisor._Campaign(config, out=lambda _s: None)
    assert campaign.progress().endswith("findings 0")
    yours.record(str(out_dir), "crash:KeyError", "KeyError: 'x'", b"x")
    yours.record(str(out_dir), "accepts-invalid:json-syntax", "d", b"y")
    assert campaign.progress().endswith("findings 2")
    assert campaign.found() == 2


def test_replay_shows_the_loaders_own_traceback(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    short = tmp_path / "short.safetensors"
    short.write_bytes(seed_files()["n_too_small.safetensors"])
    code, out, _ = _fuzz(capsys, "--loader", NAIVE, "--replay", str(short))
    assert code == 1
    assert f"{short}: crash:struct.error: struct.error: unpack requires a buffer of 8 bytes" in out
    assert "Traceback (most recent call last):" in out
    assert 'naive_loader.py", line ' in out  # the user's frame
    assert "(n,) = struct.unpack" in out
    assert "loader_under_test.py" not in out  # not ours


def test_replay_of_a_command_shows_its_traceback(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT / "fuzz" / "examples"), str(ROOT)]))
    script = tmp_path / "my_loader.py"
    script.write_text("import sys\nfrom naive_loader import load\nload(sys.argv[1])\n", encoding="utf-8")
    missing = tmp_path / "missing_offsets.safetensors"
    header = b'{"t":{"dtype":"F32","shape":[1]}}'
    missing.write_bytes(struct.pack("<Q", len(header)) + header + bytes(4))
    code, out, _ = _fuzz(capsys, "--loader-cmd", f"{sys.executable} {script} {{path}}", "--replay", str(missing))
    assert code == 1
    assert f"{missing}: crash:KeyError: KeyError: 'data_offsets'" in out
    assert "Traceback (most recent call last):" in out
    assert "naive_loader.py" in out


def test_explanations_name_the_reproducer_not_bytes(tmp_path, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    loader = build_loader(CampaignConfig("loader-under-test", loader=LoaderSpec(function=NAIVE)))
    hole = seed_files()["n_layout_hole.safetensors"]
    yours.make_target(loader, str(tmp_path))(hole)
    [entry] = yours.read_findings(str(tmp_path))
    assert entry["detail"].startswith(f"{entry['path']}:")
    assert "<bytes>" not in entry["detail"]
    replayed = tmp_path / "hole.safetensors"
    replayed.write_bytes(hole)
    monkeypatch.chdir(ROOT)
    code, out, _ = _fuzz(capsys, "--loader", NAIVE, "--replay", str(replayed))
    assert code == 1
    assert f"{replayed}: accepts-invalid:offsets-not-contiguous(hole): {replayed}:" in out
    assert "<bytes>" not in out


def test_the_default_output_stays_out_of_the_users_project(tmp_path, capsys, monkeypatch):
    project = tmp_path / "project"
    (project / "corpus").mkdir(parents=True)
    (project / "corpus" / "notes.txt").write_text("the user's own corpus, not safetensors")
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.chdir(project)
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    seen = _fake_campaign(monkeypatch, [("crash:KeyError", b"k")])
    code, out, err = _fuzz(capsys, "--loader", NAIVE, "--seconds", "1")
    assert code == 1, err
    assert sorted(p.name for p in project.iterdir()) == ["corpus"]  # nothing written here
    [config] = seen
    assert Path(config.workdir).parent == cache / "stcheck" / "fuzz"  # this run's own, under the cache
    assert not Path(config.workdir).exists()  # and removed at its end
    out_dir = Path(config.loader.out_dir)
    assert out_dir.parent == cache / "stcheck" / "loader-findings"
    assert f"problem classes (reproducers in {out_dir})" in out
    assert str(project / "corpus") not in config.seed_dirs  # the user's corpus/ is not read as seeds
    # A second run gets a fresh folder: no "holds problem reports of an earlier run".
    code, _, err = _fuzz(capsys, "--loader", NAIVE, "--seconds", "1")
    assert code == 1, err
    assert Path(seen[1].loader.out_dir) != out_dir
    assert seen[1].workdir != config.workdir


def test_install_hint_works_from_a_checkout(capsys, monkeypatch):
    monkeypatch.setattr(supervisor, "atheris_available", lambda: False)
    assert main(["fuzz", "validate", "--seconds", "1"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'stcheck[fuzz]'" not in err
    assert f"pip install '{ROOT}[fuzz]'" in err


def test_the_example_loader_speaks_to_users():
    text = (ROOT / "fuzz" / "examples" / "naive_loader.py").read_text(encoding="utf-8")
    assert "shared notes" not in text
    assert "stcheck fuzz loader-under-test --loader fuzz.examples.naive_loader:load" in text


def test_reject_exit_reaches_a_fuzzed_command(tmp_path, monkeypatch):
    script = tmp_path / "code3.py"
    script.write_text("import sys\nsys.exit(3)\n", encoding="utf-8")
    spec = LoaderSpec(command=f"{sys.executable} {script} {{path}}", reject_exit=3)
    loader = build_loader(CampaignConfig.from_json(CampaignConfig("loader-under-test", loader=spec).to_json()))
    assert loader.reject_exit == 3
    assert yours.classify(loader, seed_files()["n_too_small.safetensors"]) == []


def test_replaying_nothing_is_a_usage_error(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    empty = tmp_path / "empty"
    empty.mkdir()
    for argv in (
        ["fuzz", "loader-under-test", "--loader", "fuzz.examples.naive_loader:load", "--replay", str(empty)],
        ["fuzz", "validate", "--replay", str(empty)],
    ):
        assert main(argv) == 2
        captured = capsys.readouterr()
        assert captured.err == f"stcheck fuzz: no inputs to replay in {empty}\n"
        assert "0 failures" not in captured.out


def test_seconds_is_a_limit_even_while_the_engine_loads_seeds(tmp_path, monkeypatch):
    # libFuzzer's -max_total_time is not checked while it runs the seeds; a
    # command loader at a few inputs per second then ran minutes past --seconds.
    monkeypatch.setattr(supervisor, "BOOT", "import time\ntime.sleep(120)\n")
    config = CampaignConfig(target="validate", seconds=2, workdir=str(tmp_path / "w"), interval_s=0.5, grace_s=1.0)
    lines: list[str] = []
    start = time.monotonic()
    summary = supervisor.run(config, out=lines.append)
    assert time.monotonic() - start < 30
    assert any("time is up" in line for line in lines)
    assert summary.execs == 0


def test_problems_found_before_the_first_progress_line_are_reported(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)

    def stopped_while_seeding(config, out=print):
        yours.record(config.loader.out_dir, "crash:KeyError", "KeyError: 'data_offsets'", b"k")
        return supervisor.Summary(target=config.target, seconds=20.0, execs=0, found=1)

    monkeypatch.setattr(supervisor, "atheris_available", lambda: True)
    monkeypatch.setattr(supervisor, "run", stopped_while_seeding)
    code, out, err = _fuzz(capsys, "--loader", NAIVE, "--seconds", "1", "--out", str(tmp_path / "o"))
    assert code == 1, err
    assert "never ran" not in err
    assert "1 problem classes" in out


def test_a_reject_exception_must_be_module_colon_name_for_a_command_too(tmp_path, capsys):
    cmd = f"{sys.executable} -c pass {{path}}"
    code, _, err = _fuzz(capsys, "--loader-cmd", cmd, "--reject-exception", "KeyError", "--replay", str(tmp_path))
    assert code == 2
    assert (
        err == "stcheck fuzz: --reject-exception KeyError: write it MODULE:NAME (builtins:KeyError, mypkg.errors:Bad)\n"
    )
