"""The big and deep mutation family (validator/fuzz/_big.py) and the planted
stack overflow it exists to find (fuzz/examples/deep_loader.c).

The fast tests check the family's reach (depth past 100,000 levels, the
100 MB header limit) and its bounds (never past max_size or the budget, at
its rate).  The slow test runs a real 60 s campaign on the planted loader.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from validator.fuzz import _big
from validator.fuzz._child import child_env
from validator.fuzz.config import BIG_ENV, CONFIG_ENV, LOADER_UNDER_TEST, CampaignConfig, big_settings
from validator.fuzz.mutator import mutate
from validator.fuzz.seeds import seed_files

ROOT = Path(__file__).resolve().parent.parent
HARNESS_DIR = ROOT / "fuzz" / "harness"
ONE_F32 = seed_files()["y_one_f32.safetensors"]
NO_CC = shutil.which("cc") is None or shutil.which("make") is None
HAS_AFL = shutil.which("afl-fuzz") is not None and shutil.which("afl-cc") is not None


def _depth(data: bytes) -> int:
    """The deepest nesting of brackets in the header (strings skipped), without recursion."""
    n = int.from_bytes(data[:8], "little")
    header = data[8 : 8 + n]
    depth = deepest = 0
    in_string = escaped = False
    for byte in header:
        if in_string:
            escaped = not escaped and byte == 0x5C
            in_string = escaped or byte != 0x22
        elif byte == 0x22:
            in_string = True
        elif byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif byte in b"]}":
            depth -= 1
    return deepest


def _header(depth: int) -> bytes:
    header = b'{"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":' + b"[" * depth + b"0" + b"]" * depth + b"}"
    return struct.pack("<Q", len(header)) + header + b"\0"


def _seeds(family: str, amount: int, count: int = 3) -> list[int]:
    return [seed for seed in range(20_000) if _big.plan(seed) == _big.Plan(family, amount)][:count]


@pytest.mark.parametrize("depth", [127, 128, 129, 100_000, 200_000])
def test_family_nests_around_serde_limit_and_past_100000_levels(depth: int) -> None:
    reached = [_depth(out) for seed in _seeds("deep", depth, 6) if (out := _big.big(ONE_F32, 1 << 20, seed))]
    # Objects-in-arrays count two brackets a level, and half as many levels.
    assert max(reached) >= depth, reached


def test_deep_nesting_is_shrunk_to_the_budget() -> None:
    for seed in _seeds("deep", 1_000_000):
        out = _big.big(ONE_F32, 1 << 16, seed)
        assert out is not None
        assert len(out) <= 1 << 16
        assert _depth(out) > 10_000


def test_family_respects_max_size_and_budget() -> None:
    for cap in (64, 100, 1000, 16384, 1 << 18):
        for seed in range(60):
            out = _big.big(ONE_F32, cap, seed)
            assert out is None or len(out) <= cap, (cap, seed)
            out = _big.big(ONE_F32, 1 << 30, seed, limit=cap)
            assert out is None or len(out) <= cap, (cap, seed)
    for seed in range(60):  # the default budget holds whatever max_size says
        out = _big.big(ONE_F32, 1 << 30, seed)
        assert out is None or len(out) <= _big.DEFAULT_BUDGET
    assert _big.big(ONE_F32, 63, 1) is None


@pytest.mark.parametrize("size", [_big.HEADER_LIMIT, _big.HEADER_LIMIT + 1])
def test_family_reaches_the_100_mb_header_limit_when_the_budget_allows(size: int) -> None:
    limit = _big.HEADER_LIMIT + 1024
    out = _big.big(ONE_F32, limit, _seeds("size", size, 1)[0], limit=limit)
    assert out is not None
    assert int.from_bytes(out[:8], "little") == size
    assert len(out) <= limit
    assert _big.big(ONE_F32, 1 << 20, _seeds("size", size, 1)[0]) is not None  # the default budget: shrunk


def test_family_is_picked_at_its_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    picked = sum(_big.chosen(seed * 100 + 7) for seed in range(20_000))
    assert 0.02 < picked / 20_000 < 0.04  # the default, 3%
    assert not any(_big.chosen(seed, 0.0) for seed in range(0, 2_000_000, 97))
    # Without a campaign's configuration (an entry point of fuzz/ run by hand): the two variables.
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    monkeypatch.setenv(BIG_ENV[0], "0.5")
    assert big_settings()[0] == 0.5
    monkeypatch.setenv(BIG_ENV[0], "nonsense")
    assert big_settings()[0] == _big.DEFAULT_RATE
    monkeypatch.setenv(BIG_ENV[1], "1048576")
    assert big_settings()[1] == 1 << 20


def test_the_campaigns_configuration_sets_the_rate_and_budget_over_the_variables() -> None:
    config = CampaignConfig(LOADER_UNDER_TEST, big_rate=0.25, big_max_bytes=1 << 20)
    env = {**config.child_env(), BIG_ENV[0]: "0.9", BIG_ENV[1]: "99"}
    assert big_settings(env) == (0.25, 1 << 20)
    assert big_settings(CampaignConfig(LOADER_UNDER_TEST, big_rate=0.0).child_env())[0] == 0.0
    assert big_settings({CONFIG_ENV: "not json", BIG_ENV[0]: "0.5"})[0] == _big.DEFAULT_RATE  # broken: the default
    assert big_settings({}) == (0.03, 16 << 20)


@pytest.mark.parametrize(("rate", "share"), [(0.0, 0.0), (0.5, 0.5)])
def test_a_fuzzing_child_takes_the_family_at_the_campaigns_rate(rate: float, share: float) -> None:
    """AFL++'s custom mutator in a child started with the campaign's one variable (as afl-fuzz starts it)."""
    config = CampaignConfig(LOADER_UNDER_TEST, big_rate=rate, big_max_bytes=1 << 16)
    code = (
        "from validator.fuzz import _big, afl_mutator\n"
        "afl_mutator.init(1)\n"
        "picked = sum(_big.chosen(s * 100 + 7) for s in range(4000)) / 4000\n"
        "print(picked, _big.budget())"
    )
    env = child_env(config.child_env(), {k: v for k, v in os.environ.items() if k not in BIG_ENV})
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    picked, budget = done.stdout.split()
    assert abs(float(picked) - share) < 0.05
    assert int(budget) == 1 << 16


def test_mutator_takes_the_family_within_max_size() -> None:
    seeds = [s for s in range(0, 3_000_000, 100) if _big.chosen(s)][:30]
    outs = [mutate(ONE_F32, 1 << 18, seed) for seed in seeds]
    assert all(len(out) <= 1 << 18 for out in outs)
    assert max(len(out) for out in outs) > 1 << 16  # past the old 16 KiB inputs
    deepest = {_big.Plan("deep", d) for d in (100_000, 200_000, 1_000_000)}
    deep = next(s for s in range(0, 30_000_000, 100) if _big.chosen(s) and _big.plan(s) in deepest)
    assert _depth(mutate(ONE_F32, 1 << 18, deep)) > 3000  # past anything the other mutations nest


def test_each_construct_takes_milliseconds() -> None:
    started = time.monotonic()
    for seed in range(100):
        _big.big(ONE_F32, 1 << 20, seed)
    assert time.monotonic() - started < 5


def _make(out: Path, *targets: str) -> None:
    subprocess.run(
        ["make", "-s", "-C", str(HARNESS_DIR), f"OUT={out}", *(str(out / t) for t in targets)],
        check=True,
        capture_output=True,
        timeout=120,
    )


@pytest.mark.skipif(NO_CC, reason="no C compiler or make")
def test_planted_loader_survives_3000_levels_and_overflows_at_100000(tmp_path: Path) -> None:
    _make(tmp_path, "deep_loader")
    shallow, deep = tmp_path / "shallow.st", tmp_path / "deep.st"
    shallow.write_bytes(_header(3000))
    deep.write_bytes(_header(100_000))
    loader = str(tmp_path / "deep_loader")
    assert subprocess.run([loader, str(shallow)], check=False, timeout=10).returncode == 0
    assert subprocess.run([loader, str(deep)], check=False, timeout=10).returncode == -11  # SIGSEGV


@pytest.mark.slow
@pytest.mark.skipif(NO_CC, reason="no C compiler or make")
def test_a_60_s_campaign_finds_the_planted_stack_overflow(tmp_path: Path) -> None:
    """The real campaign, 60 s: AFL++ where installed, else atheris over the persistent harness."""
    if HAS_AFL:
        _make(tmp_path, "deep-afl")
        engine = ["--engine", "aflpp", "--loader-cmd", f"{tmp_path / 'deep-afl'} @@"]
    else:
        pytest.importorskip("atheris", reason="neither afl-fuzz nor atheris is installed")
        _make(tmp_path, "deep")
        # loader-under-test's defaults: inputs up to 1 MiB, with -len_control=0.
        engine = ["--persistent", "--loader-cmd", f"{tmp_path / 'deep'} --persistent"]
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "validator", "fuzz", "loader-under-test", *engine, "--seconds", "60"]
    argv += ["--out", str(out), "--workdir", str(tmp_path / "work"), "--seeds", str(tmp_path / "no-extra-seeds")]
    argv += ["--interval", "2"]  # AFL++'s crashes are judged at each progress line
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.time()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=150, check=False)
    reproducer = out / "crash_signal-SIGSEGV.safetensors"
    assert reproducer.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    found_after = reproducer.stat().st_mtime - started
    engine_ms = [
        int(m) for m in re.findall(r"time:(\d+)", " ".join(p.name for p in tmp_path.glob("work/**/crashes/id*")))
    ]
    print(f"planted overflow recorded {found_after:.1f} s after the start ({'aflpp' if HAS_AFL else 'atheris'})")
    if engine_ms:
        print(f"afl-fuzz's first crash {min(engine_ms) / 1000:.1f} s into its run")
    assert _depth(reproducer.read_bytes()) > 3000
    note = json.loads((out / "crash_signal-SIGSEGV.json").read_text())
    assert note["category"] == "crash:signal-SIGSEGV"
