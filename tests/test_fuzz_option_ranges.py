"""Numbers out of range are refused before a campaign starts, with the flag
named, never clamped or read as the default (`--jobs 0` once ran one job,
`--seconds -5` a short campaign, `--big-rate 2` every input big)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from validator.fuzz import campaign
from validator.fuzz.config import CampaignConfig

ROOT = Path(__file__).resolve().parent.parent

CASES = [
    ({"seconds": -5.0}, "--seconds must be more than 0 (got -5)"),
    ({"seconds": float("nan")}, "--seconds must be more than 0 (got nan)"),
    ({"jobs": 0}, "--jobs must be at least 1 (got 0)"),
    ({"timeout_s": 0.0}, "--timeout must be more than 0 (got 0)"),
    ({"interval_s": 0.0}, "--interval must be more than 0 (got 0)"),
    ({"rss_limit_mb": -1}, "--rss-limit-mb must be 0 (no limit) or more (got -1)"),
    ({"max_len": -1}, "--max-len must be 0 (the target's default) or more (got -1)"),
    ({"max_findings": 0}, "--max-findings must be at least 1 (got 0)"),
    ({"big_max_bytes": -5}, "--big-max-bytes must be at least 64 (got -5)"),
    ({"big_rate": 2.0}, "--big-rate must be between 0 (off) and 1 (got 2)"),
    ({"big_rate": -0.1}, "--big-rate must be between 0 (off) and 1 (got -0.1)"),
]


@pytest.mark.parametrize(
    ("fields", "message"), CASES, ids=[next(iter(f)) + "=" + str(next(iter(f.values()))) for f, _ in CASES]
)
def test_a_number_out_of_range_is_refused_with_its_flag(fields: dict[str, object], message: str) -> None:
    assert campaign.options_problem(CampaignConfig(target="validate", **fields)) == message  # type: ignore[arg-type]


def test_the_defaults_are_in_range() -> None:
    assert campaign.options_problem(CampaignConfig(target="validate")) is None


@pytest.mark.parametrize("argv", [["--jobs", "0"], ["--big-rate", "2"], ["--seconds", "-5"]])
def test_the_command_line_refuses_them_with_one_line_and_exit_2(argv: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "validator", "fuzz", "validate", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"stcheck fuzz: {argv[0]} must be"), lines
