# Strategy: one run, side by side, on one ~1 GB file: `sha256sum` alone (the
# floor: one read plus one hash), `stcheck scan --sha256` (hash only),
# `stcheck scan --deep --sha256` (one read doing both), and the best peer
# scanner that installs here (modelaudit, from its own --target directory).
# Each tool runs as a child process; wall time comes from the clock and peak
# RSS from wait4's rusage for that child alone.  The file is read once before
# timing so every tool sees a warm page cache: this measures CPU throughput,
# which is what "one read must do both" is about.
#
#   python tests/benchmarks/bench_scan.py [--size-mib 1024] [--file /tmp/x]
#       [--modelaudit-path /work/ext/modelaudit] [--repeat 1]
#
# Not collected by pytest (bench_*.py).
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def make_file(path: Path, size_mib: int) -> str:
    """A valid file of about size_mib MiB: F32, BF16, F16 and U8 tensors of
    random values, with a few NaNs, so the deep checks do real work."""
    import numpy as np

    rng = np.random.default_rng(0)
    per = 64 << 20  # bytes per tensor
    n = max(1, (size_mib << 20) // per)
    dtypes = ["F32", "BF16", "F16", "U8"]
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    plan = []
    for i in range(n):
        dtype = dtypes[i % len(dtypes)]
        esize = {"F32": 4, "BF16": 2, "F16": 2, "U8": 1}[dtype]
        header[f"layer.{i}.weight"] = {"dtype": dtype, "shape": [per // esize], "data_offsets": [offset, offset + per]}
        plan.append(dtype)
        offset += per
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    digest = hashlib.sha256()
    with path.open("wb") as fh:
        for part in (struct.pack("<Q", len(text)), text):
            fh.write(part)
            digest.update(part)
        for dtype in plan:
            if dtype == "U8":
                block = rng.integers(1, 255, per, dtype=np.uint8)
            else:
                values = rng.standard_normal(per // (4 if dtype == "F32" else 2), dtype=np.float32)
                values[:: 1 << 20] = np.nan
                block = values.astype({"F32": np.float32, "F16": np.float16, "BF16": np.float32}[dtype])
                if dtype == "BF16":
                    block = (block.view(np.uint32) >> 16).astype(np.uint16)
            raw = block.tobytes()
            fh.write(raw)
            digest.update(raw)
    return digest.hexdigest()


def _hwm_kib(pid: int) -> int | None:
    try:
        with Path(f"/proc/{pid}/status").open() as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def measure(name: str, argv: list[str], env: dict[str, str] | None = None) -> dict[str, object]:
    """Run one tool; peak RSS is the child's own VmHWM, polled every 20 ms
    (wait4's ru_maxrss would include the RSS inherited at fork)."""
    import tempfile

    with tempfile.TemporaryFile() as log:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        peak = 0
        while proc.poll() is None:
            peak = max(peak, _hwm_kib(proc.pid) or 0)
            time.sleep(0.02)
        seconds = time.perf_counter() - started
        log.seek(0)
        output = log.read()
    return {
        "tool": name,
        "seconds": seconds,
        "rc": proc.returncode,
        "peak_rss_mib": peak / 1024,
        "tail": output.decode(errors="replace").strip().splitlines()[-3:],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--file", default="/tmp/stcheck-bench-scan.safetensors")
    parser.add_argument("--modelaudit-path", default="/work/ext/modelaudit")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the generated file")
    args = parser.parse_args()
    path = Path(args.file)
    print(f"generating {args.size_mib} MiB at {path} ...", flush=True)
    digest = make_file(path, args.size_mib)
    size = path.stat().st_size
    with path.open("rb") as fh:  # warm the page cache
        while fh.read(64 << 20):
            pass
    py = sys.executable
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs: list[tuple[str, list[str], dict[str, str] | None]] = []
    if shutil.which("sha256sum"):
        runs.append(("sha256sum", ["sha256sum", str(path)], None))
    stcheck = [py, "-m", "validator", "scan", "--progress", "never", "--no-config", "-j", "1", "--sha256", digest]
    runs.append(("stcheck scan --sha256", [*stcheck, str(path)], env))
    runs.append(("stcheck scan --deep --sha256", [*stcheck, "--deep", str(path)], env))
    if Path(args.modelaudit_path, "modelaudit").is_dir():
        ma_env = {
            **os.environ,
            "PYTHONPATH": args.modelaudit_path,
            "PROMPTFOO_DISABLE_TELEMETRY": "1",
            "NO_ANALYTICS": "1",
        }
        runs.append(("modelaudit scan", [py, "-m", "modelaudit", "scan", "--format", "json", str(path)], ma_env))
    else:
        print(f"modelaudit not found under {args.modelaudit_path}; skipped")
    results = []
    for _ in range(args.repeat):
        for name, argv, run_env in runs:
            results.append(measure(name, argv, run_env))
    best: dict[str, dict[str, object]] = {}
    for r in results:
        if r["tool"] not in best or float(r["seconds"]) < float(best[str(r["tool"])]["seconds"]):  # type: ignore[arg-type]
            best[str(r["tool"])] = r
    base = best.get("sha256sum")
    mib = size / 2**20
    print(f"\nfile: {size} bytes ({mib:.0f} MiB), warm page cache, best of {args.repeat}")
    print(f"{'tool':32} {'seconds':>8} {'MiB/s':>8} {'vs sha256sum':>13} {'peak RSS MiB':>13} {'rc':>3}")
    for name, r in best.items():
        seconds = float(r["seconds"])  # type: ignore[arg-type]
        ratio = "" if base is None else f"{float(base['seconds']) / seconds:.2f}x"  # type: ignore[arg-type]
        print(
            f"{name:32} {seconds:8.2f} {mib / seconds:8.0f} {ratio:>13} {float(r['peak_rss_mib']):13.0f} {r['rc']:>3}"
        )  # type: ignore[arg-type]
    for name, r in best.items():
        print(f"-- {name} output tail: {r['tail']}")
    if not args.keep:
        path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
