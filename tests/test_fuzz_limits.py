"""The figures and limits that `stcheck fuzz loader-under-test` prints and keeps, as named.

--timeout is the hang threshold of every kind of loader; --seconds bounds
the whole run, seed phase included; the coverage figure says whose coverage
it is; a replay says when a saved case no longer does what was recorded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from validator.cli.main import main
from validator.fuzz import loader_under_test as lut
from validator.fuzz.engine import Summary
from validator.fuzz.report import summary_lines
from validator.fuzz.seeds import seed_files

ROOT = Path(__file__).resolve().parent.parent
NAIVE = "fuzz.examples.naive_loader:load"
ONE_F32 = seed_files()["y_one_f32.safetensors"]


def _fuzz(tmp_path: Path, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "validator", "fuzz", "loader-under-test", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.parametrize(
    ("label", "line"),
    [("oracle coverage", "oracle coverage 862,"), ("loader edges", "loader edges 862,")],
)
def test_the_summary_names_whose_coverage_it_counts(capsys: pytest.CaptureFixture[str], label: str, line: str) -> None:
    out = "\n".join(summary_lines(Summary("loader-under-test", seconds=1, execs=5, coverage=862, coverage_label=label)))
    assert line in out
    assert " cov " not in out


def test_a_command_counts_as_hung_past_timeout_not_past_five_seconds(tmp_path: Path) -> None:
    case = tmp_path / "case.safetensors"
    case.write_bytes(ONE_F32)
    command = "sh -c 'sleep 2; exit 0' {path}"
    done = _fuzz(tmp_path, "--loader-cmd", command, "--timeout", "1", "--replay", str(case))
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{case}: hang: no exit within 1s" in done.stdout


def test_replay_says_not_reproduced_when_a_case_no_longer_does_what_was_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    lut.record(str(tmp_path), "hang", "the machine was busy", ONE_F32)  # the naive loader loads it at once
    lut.record(str(tmp_path), "crash:struct.error", "too short", b"abc")
    code = main(["fuzz", "loader-under-test", "--loader", NAIVE, "--replay", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    assert "hang.safetensors: not reproduced: recorded as hang, now ok" in out
    assert "crash_struct.error.safetensors: crash:struct.error: " in out
    assert out.count("not reproduced") == 1


@pytest.mark.slow
def test_seconds_bounds_the_whole_run_seed_phase_included(tmp_path: Path) -> None:
    """A command loader (a Python process per input) cannot run its ~300 seeds in 4 s; the run stops anyway."""
    command = f"{sys.executable} fuzz/examples/naive_loader.py {{path}}"
    start = time.monotonic()
    done = _fuzz(tmp_path, "--loader-cmd", command, "--seconds", "4", "--interval", "1")
    took = time.monotonic() - start
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert "oracle coverage" in done.stdout
    # --seconds, plus the engine's start-up and stop (5 s of grace); before, 15 s of grace on top of the seeds.
    assert took < 4 + 9, f"{took:.1f}s for --seconds 4"
