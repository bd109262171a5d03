"""What `stcheck fuzz loader-under-test` writes, and where: only under --out, never through a link.

The loader under test can write into --out (it is told where, and it runs as
the user), so what it leaves there (links, files that are not ours) must not
steer stcheck's writes or end its report.  A failed start leaves no folder
behind, and a run leaves no temporary files and no working corpus unless
--workdir asks for one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from validator.cli.main import main
from validator.fuzz import loader_under_test as lut

ROOT = Path(__file__).resolve().parent.parent


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["TMPDIR"] = str(tmp_path / "tmp")
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return env


def _fuzz(tmp_path: Path, *args: str, cwd: Path = ROOT, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "validator", "fuzz", "loader-under-test", *args],
        cwd=cwd,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_record_replaces_a_planted_link_instead_of_writing_through_it(tmp_path: Path) -> None:
    out, outside = tmp_path / "out", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    for suffix in (".json", ".safetensors"):
        (outside / f"victim{suffix}").write_text("untouched")
        (out / f"crash_x{suffix}").symlink_to(outside / f"victim{suffix}")
    lut.record(str(out), "crash:x", "boom", b"abc")
    assert (outside / "victim.json").read_text() == "untouched"
    assert (outside / "victim.safetensors").read_text() == "untouched"
    assert not (out / "crash_x.json").is_symlink()
    assert (out / "crash_x.safetensors").read_bytes() == b"abc"
    assert [e["category"] for e in lut.read_findings(str(out))] == ["crash:x"]
    assert sorted(p.name for p in out.iterdir()) == ["crash_x.json", "crash_x.safetensors"]  # no temporary left


def test_read_findings_skips_and_names_what_stcheck_did_not_write(tmp_path: Path) -> None:
    lut.record(str(tmp_path), "crash:x", "boom", b"abc")
    (tmp_path / "notes.json").write_text("not json at all")
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "linked.json").symlink_to(tmp_path / "crash_x.json")
    (tmp_path / "orphan.json").write_text('{"category": "c", "detail": "d", "size": 1}')
    foreign: list[str] = []
    found = lut.read_findings(str(tmp_path), foreign)
    assert [e["category"] for e in found] == ["crash:x"]
    assert sorted(Path(p).name for p in foreign) == ["linked.json", "list.json", "notes.json", "orphan.json"]


@pytest.mark.parametrize(
    "args",
    [
        ["--loader", "no_such_module_here:load"],
        ["--loader-cmd", "/no/such/binary {path}"],
        ["--persistent", "--loader-cmd", f"{sys.executable} -c 'import sys; sys.exit(3)'"],
    ],
    ids=["missing-module", "missing-binary", "harness-exits"],
)
def test_a_failed_start_leaves_no_folder_behind(tmp_path: Path, args: list[str]) -> None:
    done = _fuzz(tmp_path, *args, "--seconds", "5")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("stcheck fuzz: "), done.stderr
    findings = tmp_path / "cache" / "stcheck" / "loader-findings"
    assert not findings.exists() or not list(findings.iterdir())
    assert not list((tmp_path / "tmp").iterdir())


def test_a_misspelt_option_is_a_usage_error_with_a_guess(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fuzz", "loader-under-test", "--persistant", "--loader-cmd", "x"]) == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --persistant" in err
    assert "--persistent" in err


HOSTILE = """\
import json, os, struct, sys
out = json.loads(os.environ["STCHECK_FUZZ_CONFIG"])["loader"]["out_dir"]
outside = sys.argv[1]
while True:
    prefix = sys.stdin.buffer.read(4)
    if len(prefix) < 4:
        break
    sys.stdin.buffer.read(struct.unpack("<I", prefix)[0])
    for suffix in (".json", ".safetensors"):
        try:
            os.symlink(os.path.join(outside, "victim" + suffix), os.path.join(out, "crash_x" + suffix))
        except FileExistsError:
            pass
    sys.stdout.write("crash x planted\\n")
    sys.stdout.flush()
"""


@pytest.mark.slow
def test_a_hostile_persistent_harness_cannot_write_outside_out(tmp_path: Path) -> None:
    """It plants links where its crash will be recorded; a foreign .json waits in --out too."""
    outside, out = tmp_path / "outside", tmp_path / "out"
    outside.mkdir()
    out.mkdir()
    (outside / "victim.json").write_text("untouched")
    (outside / "victim.safetensors").write_text("untouched")
    (out / "notes.json").write_text("these are my notes, not JSON")
    harness = tmp_path / "hostile.py"
    harness.write_text(HOSTILE)
    command = f"{sys.executable} {harness} {outside}"
    done = _fuzz(tmp_path, "--persistent", "--loader-cmd", command, "--out", str(out), "--seconds", "4")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "crash:x" in done.stdout
    assert "skipped 1 file in" in done.stdout
    assert "notes.json" in done.stdout
    assert (outside / "victim.json").read_text() == "untouched"
    assert (outside / "victim.safetensors").read_text() == "untouched"
    assert not (out / "crash_x.json").is_symlink()


@pytest.mark.slow
def test_a_run_leaves_no_temporary_files_and_no_shared_corpus(tmp_path: Path) -> None:
    """A loader that hangs is killed by the engine mid-input; its input file still goes."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "slow_loader.py").write_text(
        textwrap.dedent(
            """\
            import time

            def load(path):
                with open(path, "rb") as f:
                    if len(f.read()) > 40:
                        time.sleep(30)
                return {}
            """
        )
    )
    done = _fuzz(tmp_path, "--loader", "slow_loader:load", "--seconds", "6", "--timeout", "1", cwd=project)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "hang" in done.stdout
    # The callable is replayed in stcheck's process: the hang's replay line carries a time limit.
    assert "replay the hang under a time limit: timeout 7 stcheck fuzz loader-under-test --loader" in done.stdout
    assert "reproduce: timeout 7 stcheck fuzz loader-under-test --loader slow_loader:load --replay " in done.stdout
    assert not list((tmp_path / "tmp").iterdir())  # no stcheck-loader-* left
    assert not list((tmp_path / "cache" / "stcheck" / "fuzz").iterdir())  # the run's own corpus, removed
    work = tmp_path / "work"
    shared = _fuzz(tmp_path, "--loader", "fuzz.examples.naive_loader:load", "--seconds", "2", "--workdir", str(work))
    assert shared.returncode == 1, shared.stdout + shared.stderr
    assert (work / "loader-under-test" / "corpus").is_dir()  # --workdir keeps it, to share on purpose
    assert any((work / "seeds").iterdir())


def test_an_out_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("a file of the user's")
    done = _fuzz(tmp_path, "--loader", "fuzz.examples.naive_loader:load", "--out", str(taken), "--seconds", "2")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == f"stcheck fuzz: --out {taken}: not a folder\n"
    assert taken.read_text() == "a file of the user's"


@pytest.mark.slow
def test_an_interrupted_campaign_reports_what_it_found_and_exits_130(tmp_path: Path) -> None:
    import signal
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "validator", "fuzz", "loader-under-test", "--loader", "fuzz.examples.naive_loader:load"],
        cwd=ROOT,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    findings = tmp_path / "cache" / "stcheck" / "loader-findings"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(findings.glob("*/*.json")):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err
    assert err.startswith("stcheck fuzz: interrupted; what was found so far:\n"), err
    assert err.endswith("stcheck: interrupted\n"), err
    assert "problem classes (reproducers in " in out
    assert not list((tmp_path / "cache" / "stcheck" / "fuzz").iterdir())
