# Strategy: executions per second of the three ways to fuzz a loader
# command, on the naive C loader (fuzz/examples/naive_loader.c), in one run:
#   today       --loader-cmd 'naive_loader {path}': one process per input, atheris;
#   persistent  --persistent --loader-cmd 'harness --persistent': one harness, frames;
#   aflpp       --engine aflpp --loader-cmd 'harness-afl @@': AFL++, __AFL_LOOP.
# Each is `stcheck fuzz loader-under-test` for --seconds, one after another
# (the build machine has two shared cores), with the same seeds, and the
# three run again for each of --rounds: today's rate moves with the
# machine's load (a process start is kernel work; the others are Python or
# afl-fuzz work), so each ratio is taken within its round and the median of
# the rounds is reported.  The rate is the campaign's executions over its
# wall-clock seconds as the command prints them (for AFL++, afl-fuzz's own
# execs_per_sec).  Run as a script:
#
#     nice python tests/benchmarks/bench_native_fuzz.py [--seconds 30] [--rounds 3]
#
# Not collected by pytest (the file name does not start with test_).
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_DONE = re.compile(r"done: (\d+) execs in (\d+)s \((\d+)/s\)")
_AFL = re.compile(r"afl-fuzz: (\d+) execs at ([\d.]+)/s over (\d+)s")


def _campaign(work: Path, name: str, args: list[str], seconds: int) -> tuple[int, float, float]:
    """(executions, seconds, executions per second) of one campaign."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "validator", "fuzz", "loader-under-test", *args, "--seconds", str(seconds)]
    argv += ["--out", str(work / f"out-{name}"), "--workdir", str(work / f"work-{name}"), "--interval", "30"]
    done = subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=seconds * 3 + 120, check=False, cwd=str(ROOT)
    )
    m = _AFL.search(done.stdout)
    if m is not None:
        return int(m.group(1)), float(m.group(3)), float(m.group(2))
    m = _DONE.search(done.stdout)
    if m is None:
        sys.exit(f"{name}: no summary line\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return int(m.group(1)), float(m.group(2)), float(m.group(3))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rounds: list[dict[str, tuple[int, float, float]]] = []
    with tempfile.TemporaryDirectory(prefix="bench-native-") as tmp:
        work = Path(tmp)
        subprocess.run(
            ["make", "-s", "-C", str(ROOT / "fuzz" / "harness"), f"OUT={work}"]
            + [str(work / t) for t in ("naive_loader", "harness", "harness-afl")],
            check=True,
        )
        runs = {
            "today (one process per input)": ["--loader-cmd", f"{work / 'naive_loader'} {{path}}"],
            "--persistent": ["--persistent", "--loader-cmd", f"{work / 'harness'} --persistent"],
            "--engine aflpp": ["--engine", "aflpp", "--loader-cmd", f"{work / 'harness-afl'} @@"],
        }
        rounds.extend(
            {name: _campaign(work, f"{r}-{i}", flags, args.seconds) for i, (name, flags) in enumerate(runs.items())}
            for r in range(args.rounds)
        )
    print(f"{'round':>5} {'mode':34} {'executions':>11} {'seconds':>8} {'exec/s':>9} {'x today':>8}")
    ratios: dict[str, list[float]] = {}
    for r, results in enumerate(rounds, 1):
        base = next(iter(results.values()))[2] or 1.0
        for name, (execs, seconds, rate) in results.items():
            ratios.setdefault(name, []).append(rate / base)
            print(f"{r:>5} {name:34} {execs:>11,} {seconds:>8.0f} {rate:>9,.0f} {rate / base:>8.1f}")
    print()
    for name, values in ratios.items():
        print(
            f"median x today, {name}: {statistics.median(values):.1f} (rounds: {', '.join(f'{v:.1f}' for v in values)})"
        )


if __name__ == "__main__":
    main()
