# Strategy: peak memory and time of `stcheck scan` on a file that breeds one
# finding per tensor (issue 15, section 4): N zero-filled F32 tensors, so
# `--deep` reports every tensor all-zero, and a `forbidden_dtypes = ["F32"]`
# policy forbids every one.  Each command runs in its own fresh child that
# reports its peak RSS (ru_maxrss) and wall time, in each output format, with
# the report written to a file (its size is reported too).  The reference,
# `safetensors.safe_open(path, "np").keys()`, runs in a child of its own on
# the same file as the yardstick: ratios are ours / reference.
#
#     nice python tests/benchmarks/bench_scan_findings.py [--tensors 200000] [--pythonpath DIR]
#
# --pythonpath runs another checkout of stcheck (for a before/after figure).
# Not collected by pytest (the file name does not start with test_).
from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD_OURS = r"""
import resource, sys, time
from validator.cli.main import main
start = time.perf_counter()
rc = main(sys.argv[1:])
seconds = time.perf_counter() - start
print("RESULT", rc, seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""

CHILD_REFERENCE = r"""
import resource, sys, time
import numpy, safetensors
start = time.perf_counter()
with safetensors.safe_open(sys.argv[1], "np") as f:
    n = len(f.keys())
seconds = time.perf_counter() - start
print("RESULT", 0, seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def build(path: Path, n: int) -> None:
    """N F32 [1] tensors of zeros, back to back, the header padded to 8."""
    parts = [f'"t{i}":{{"dtype":"F32","shape":[1],"data_offsets":[{4 * i},{4 * i + 4}]}}' for i in range(n)]
    header = ("{" + ",".join(parts) + "}").encode()
    header += b" " * (-len(header) % 8)
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
        f.write(bytes(4 * n))


def run(code: str, argv: list[str], pythonpath: str, cwd: str) -> tuple[int, float, int]:
    # cwd: not the checkout, whose validator/ `python -c` would import first.
    env = {**os.environ, "PYTHONPATH": pythonpath}
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, check=False, timeout=3600, cwd=cwd
    )
    line = next((ln for ln in proc.stderr.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        return -1, 0.0, 0  # the child died (a MemoryError traceback, for one)
    _, rc, seconds, rss_kib = line.split()
    return int(rc), float(seconds), int(rss_kib) * 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tensors", type=int, default=200_000)
    parser.add_argument("--pythonpath", default=str(ROOT), help="the stcheck checkout to measure")
    parser.add_argument("--formats", default="text,json,sarif,junit")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stcheck-bench-") as tmp:
        path = Path(tmp) / "zeros.safetensors"
        build(path, args.tensors)
        policy = Path(tmp) / "policy.toml"
        policy.write_text('forbidden_dtypes = ["F32"]\n')
        _, ref_s, ref_rss = run(CHILD_REFERENCE, [str(path)], args.pythonpath, tmp)
        rows = []
        for fmt in args.formats.split(","):
            for label, extra in (("--deep", ["--deep"]), ("--deep + policy", ["--deep", "--policy", str(policy)])):
                out = Path(tmp) / f"report.{fmt}"
                argv = ["scan", "--no-config", "--progress", "never", "-j", "1", "--format", fmt, "-o", str(out)]
                rc, seconds, rss = run(CHILD_OURS, [*argv, *extra, str(path)], args.pythonpath, tmp)
                size = out.stat().st_size if out.exists() else 0
                rows.append(
                    {
                        "format": fmt,
                        "command": label,
                        "exit": rc,
                        "seconds": round(seconds, 2),
                        "peak_rss_mib": round(rss / 2**20, 1),
                        "report_mib": round(size / 2**20, 2),
                        "rss_ratio_to_reference": round(rss / ref_rss, 2) if ref_rss else None,
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
        header_mib = (path.stat().st_size - 4 * args.tensors) / 2**20
        print(
            json.dumps(
                {
                    "tensors": args.tensors,
                    "header_mib": round(header_mib, 1),
                    "reference_keys_seconds": round(ref_s, 2),
                    "reference_peak_rss_mib": round(ref_rss / 2**20, 1),
                }
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
