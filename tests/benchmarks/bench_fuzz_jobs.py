# Strategy: what --jobs buys AFL++.  `stcheck fuzz loader-under-test --engine
# aflpp` on the naive C loader (fuzz/examples/naive_loader.c inside the
# reference harness, built with afl-cc: persistent mode, shared-memory
# input), run with --jobs 1 and then --jobs 2, the same --seconds each, in
# one run of this script, for each of --rounds.  The rate is afl-fuzz's own:
# the executions of every instance (their fuzzer_stats, summed) over
# afl-fuzz's run time, from the campaign's closing line, so the seeds that
# stcheck runs through the loader before afl-fuzz starts do not count.
# Only stcheck's built-in seeds are used (--seeds names an empty folder), so
# that phase is short.  The ratio is taken within each round and the median
# reported; the target is 1.6x or more on two free cores.  On a machine
# whose cores other work is using, the figure says little: the second
# instance has no core of its own.  Run as a script:
#
#     python tests/benchmarks/bench_fuzz_jobs.py [--seconds 30] [--rounds 1]
#
# Not collected by pytest (the file name does not start with test_).
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_AFL = re.compile(r"afl-fuzz: (\d+) execs at [\d.]+/s over (\d+)s")


def _campaign(work: Path, binary: Path, jobs: int, seconds: int) -> tuple[int, int]:
    """(executions, afl-fuzz's seconds) of one campaign with ``jobs`` instances."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(work / "cache")}
    name = f"jobs{jobs}"
    (work / "no-seeds").mkdir(exist_ok=True)
    argv = [sys.executable, "-m", "validator", "fuzz", "loader-under-test", "--engine", "aflpp"]
    argv += ["--loader-cmd", f"{binary} @@", "--jobs", str(jobs), "--seconds", str(seconds), "--interval", "60"]
    argv += [
        "--out",
        str(work / f"out-{name}"),
        "--workdir",
        str(work / f"work-{name}"),
        "--seeds",
        str(work / "no-seeds"),
    ]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=seconds * 3 + 120, check=False)
    shutil.rmtree(work / f"out-{name}", ignore_errors=True)
    shutil.rmtree(work / f"work-{name}", ignore_errors=True)
    m = _AFL.search(done.stdout)
    if m is None:
        sys.exit(f"{name}: no afl-fuzz summary line\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return int(m.group(1)), int(m.group(2))


def main() -> None:
    parser = argparse.ArgumentParser(description="AFL++ executions per second with --jobs 1 and --jobs 2")
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    if shutil.which("afl-fuzz") is None or shutil.which("afl-cc") is None:
        sys.exit("AFL++ is not installed (afl-fuzz, afl-cc: apt-get install afl++)")
    ratios = []
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as tmp:
        work = Path(tmp)
        binary = work / "harness-afl"
        harness = ROOT / "fuzz" / "harness"
        subprocess.run(["make", "-s", "-C", str(harness), f"OUT={work}", str(binary)], check=True, timeout=300)
        print(f"cores: {os.cpu_count()}, load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for round_ in range(1, args.rounds + 1):
            rates = {}
            for jobs in (1, 2):
                execs, seconds = _campaign(work, binary, jobs, args.seconds)
                rates[jobs] = execs / max(1, seconds)
                print(f"round {round_}  --jobs {jobs}: {execs} execs in {seconds}s of afl-fuzz: {rates[jobs]:,.0f}/s")
            ratios.append(rates[2] / rates[1] if rates[1] else 0.0)
            print(f"round {round_}  ratio --jobs 2 / --jobs 1: {ratios[-1]:.2f}x")
    print(f"median ratio over {len(ratios)} rounds: {statistics.median(ratios):.2f}x (target: 1.6x on 2 free cores)")


if __name__ == "__main__":
    main()
