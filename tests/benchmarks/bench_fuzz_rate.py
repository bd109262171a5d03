# Strategy: fuzz executions per CPU second, side by side with an older
# checkout in one run.  Each harness (fuzz/fuzz_<target>.py, the OSS-Fuzz
# entry points) runs under atheris for --seconds with the flags `stcheck
# fuzz` passes (-max_len=16384, -timeout=10, -rss_limit_mb=2048, the
# dictionary, the built-in seeds and the shipped corpus) and a fixed
# -seed; this checkout's and --before's engines run at the same time, one
# per core, so a change of machine load hits both.  The CPU time is the
# engine's own (user + system, from /proc), so other jobs on the machine
# matter less than in libFuzzer's wall-clock exec/s.  "total" counts
# start-up and seed loading, as `stcheck fuzz` does; "steady" counts from
# libFuzzer's INITED line.  The coverage is libFuzzer's last cov (edges) and
# ft (features).  Run as a script:
#
#     nice python tests/benchmarks/bench_fuzz_rate.py [--before /tmp/core-base] [--seconds 60] [--targets validate,differential]
#
# Not collected by pytest (the file name does not start with test_).
from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def start(root: Path, target: str, seconds: int, tmp: str) -> subprocess.Popen[str]:
    corpus = Path(tmp) / "corpus"
    corpus.mkdir()
    args = [
        sys.executable,
        str(root / "fuzz" / f"fuzz_{target}.py"),
        f"-max_total_time={seconds}",
        f"-artifact_prefix={tmp}/",
        "-print_final_stats=1",
        "-timeout=10",
        "-rss_limit_mb=2048",
        "-max_len=16384",
        "-seed=7",
        str(corpus),
    ]
    if target != "hypothesis":
        args += [f"-dict={ROOT / 'fuzz' / 'safetensors.dict'}", str(ROOT / "fuzz" / "seeds"), str(ROOT / "corpus")]
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp, text=True)


def follow(proc: subprocess.Popen[str]) -> dict[str, Any]:
    """Read the engine's output to its end; the executions, CPU seconds and coverage."""
    assert proc.stdout is not None
    init_cpu, init_execs, cpu = 0.0, 0, 0.0
    lines = []
    for line in proc.stdout:
        lines.append(line)
        with contextlib.suppress(OSError):
            cpu = _cpu(proc.pid)
        m = re.match(r"#(\d+)\s+INITED", line)
        if m:
            init_cpu, init_execs = cpu, int(m.group(1))
    proc.wait()
    out = "".join(lines)
    if proc.returncode != 0:  # a finding (or a crash of the engine) ended the run early: say so
        sys.stderr.write(
            f"engine exited {proc.returncode} before its time was up; the end of its log:\n{out[-4000:]}\n"
        )
    runs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", out)
    if not runs:
        raise SystemExit(f"the engine gave no totals:\n{out[-3000:]}")
    execs = int(runs[-1])
    cov = re.findall(r"cov: (\d+) ft: (\d+)", out)
    return {
        "execs": execs,
        "cpu": cpu,
        "total": execs / cpu,
        "steady": (execs - init_execs) / max(cpu - init_cpu, 1e-9),
        "cov": cov[-1] if cov else ("?", "?"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", type=Path, help="another checkout, fuzzed at the same time")
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--targets", default="validate,differential,loader,roundtrip,hypothesis")
    args = parser.parse_args()
    roots = {"after": ROOT} if args.before is None else {"before": args.before, "after": ROOT}
    print(
        f"{'harness':14}"
        + "".join(
            f" {n + ' execs':>13} {'CPU s':>6} {'total/s':>8} {'steady/s':>8} {'cov':>5} {'ft':>6}" for n in roots
        )
    )
    for target in args.targets.split(","):
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            procs = {
                name: start(root, target, args.seconds, tmp)
                for (name, root), tmp in zip(roots.items(), (a, b), strict=False)
            }
            # Each engine's output is read by its own thread: read one after
            # the other, the second engine blocked on a full pipe meanwhile.
            with ThreadPoolExecutor(len(procs)) as pool:
                futures = {name: pool.submit(follow, proc) for name, proc in procs.items()}
                results = {name: f.result() for name, f in futures.items()}
        line = f"{target:14}"
        for name in roots:
            r = results[name]
            line += f" {r['execs']:13,} {r['cpu']:6.0f} {r['total']:8.0f} {r['steady']:8.0f} {r['cov'][0]:>5} {r['cov'][1]:>6}"
        print(line, flush=True)
    print(
        "per CPU second of the engine process (total: start-up and seed loading included; steady: after INITED);\n"
        "the engines of one row ran at the same time; cov/ft: libFuzzer's last edges and features"
    )


if __name__ == "__main__":
    main()
