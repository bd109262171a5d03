"""validator.compat benchmark: the same calls on validator.compat and safetensors 0.8.0.

Usage: python tests/benchmarks/bench_compat.py [--big-mib 512] [--small 20000] [--reps 3] [--dir /tmp/stcheck-bench-compat]

Two files: one of --big-mib MiB (64 F32 tensors) and one of --small F32
tensors of 16x16.  Every measurement runs in a fresh Python process with
numpy, torch, safetensors and validator.compat all imported before the
clock and the memory baseline start; ours and theirs alternate, each going
first in every other round (disk write-back otherwise favours one side); the
table shows medians over --reps runs.  The files are read once first, so
both sides start from a warm page cache.

- numpy.load_file / torch.load_file: the call alone (both return every
  tensor; ours are zero-copy views, theirs copies for numpy), then the same
  call followed by reading one byte of every 4 KiB page ("+touch").
- numpy.save / torch.save (bytes in memory) and numpy.save_file /
  torch.save_file (to a new file).
- numpy.load / torch.load of the file's bytes (read before the clock).

Peak RSS growth is the peak-RSS mark (VmHWM, reset after the imports with
/proc/self/clear_refs) minus the RSS then.  Ratios are ours / theirs: below
1 is better for us.  Targets (issue 13): numpy.load_file <= 0.2x time,
torch.load_file, saves and load(bytes) <= 1.0x, peak RSS no higher.
"""

# Strategy: the parent builds files, spawns children and prints; each child
# runs one measurement and prints one JSON line.  Nothing here is collected
# by pytest.
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_loader import make_files  # noqa: E402 - the same two files as the loader benchmark

PAGE = 4096
MEASURES = (
    "numpy.load_file",
    "numpy.load_file+touch",
    "torch.load_file",
    "torch.load_file+touch",
    "numpy.save",
    "torch.save",
    "numpy.save_file",
    "torch.save_file",
    "numpy.load",
    "torch.load",
)


def _status_kib(field: str) -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _reset_peak() -> int:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return _status_kib("VmRSS")


def _peak_kib() -> int:
    import resource

    return _status_kib("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _touch(tensors: dict[str, object]) -> int:
    import numpy as np
    import torch

    total = 0
    for value in tensors.values():
        array = (
            value.reshape(-1).view(torch.uint8).numpy()
            if isinstance(value, torch.Tensor)
            else value.reshape(-1).view(np.uint8)
        )
        total += int(array[::PAGE].sum(dtype=np.uint64))
    return total


def child(measure: str, side: str, path: str, out: str) -> dict[str, float]:
    """Run one measurement in this (fresh) process."""
    import numpy as np  # noqa: F401 - imported before the baseline
    import safetensors.numpy
    import safetensors.torch
    import torch

    import validator.compat.numpy
    import validator.compat.torch

    lib = {"numpy": validator.compat.numpy, "torch": validator.compat.torch}
    if side == "theirs":
        lib = {"numpy": safetensors.numpy, "torch": safetensors.torch}
    api, _, call = measure.partition(".")
    module = lib[api]
    touch = call.endswith("+touch")
    call = call.removesuffix("+touch")
    arg: object = path
    if call in ("save", "save_file"):
        arg = safetensors.numpy.load_file(path)
        if api == "torch":
            arg = {name: torch.from_numpy(array) for name, array in arg.items()}
    elif call == "load":
        arg = Path(path).read_bytes()
    base = _reset_peak()
    start = time.perf_counter()
    checksum = 0
    if call == "save_file":
        module.save_file(arg, out)
    else:
        result = getattr(module, call)(arg)
        if touch:
            checksum = _touch(result)
        elif call == "load":
            checksum = len(result)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "rss_mib": (_peak_kib() - base) / 1024, "checksum": float(checksum)}


def _spawn(measure: str, side: str, path: Path, out: Path) -> dict[str, float]:
    if out.exists():
        out.unlink()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, __file__, "--child", measure, side, str(path), str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _make_files(directory: Path, big_mib: int, small: int) -> dict[str, Path]:
    big, many = make_files(directory, big_mib, small)
    return {f"{big_mib} MiB, 64 tensors": big, f"{small} small tensors": many}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big-mib", type=int, default=512)
    parser.add_argument("--small", type=int, default=20000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/stcheck-bench-compat"))
    parser.add_argument("--only", default="", help="comma-separated measures to run (default: all)")
    parser.add_argument("--child", nargs=4, metavar=("MEASURE", "SIDE", "PATH", "OUT"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    files = _make_files(args.dir, args.big_mib, args.small)
    out = args.dir / "saved.safetensors"
    measures = [m for m in MEASURES if not args.only or m in args.only.split(",")]
    print(f"{'file':<24} {'call':<22} {'ours s':>8} {'theirs s':>9} {'time x':>7}  {'peak RSS MiB':>15} {'RSS x':>6}")
    for label, path in files.items():
        for measure in measures:
            runs: dict[str, list[dict[str, float]]] = {"ours": [], "theirs": []}
            for rep in range(args.reps):
                for side in ("ours", "theirs") if rep % 2 == 0 else ("theirs", "ours"):  # neither always goes first
                    runs[side].append(_spawn(measure, side, path, out))
            a = {k: statistics.median(r[k] for r in runs["ours"]) for k in ("seconds", "rss_mib")}
            b = {k: statistics.median(r[k] for r in runs["theirs"]) for k in ("seconds", "rss_mib")}
            if runs["ours"][0]["checksum"] != runs["theirs"][0]["checksum"]:
                print(f"checksum mismatch: {label} {measure}", file=sys.stderr)
                return 1
            ratio = a["seconds"] / b["seconds"] if b["seconds"] else float("nan")
            rss = a["rss_mib"] / b["rss_mib"] if b["rss_mib"] > 1 else float("nan")
            memory = f"{a['rss_mib']:>7.0f}/{b['rss_mib']:<7.0f} {rss:>6.2f}"
            print(
                f"{label:<24} {measure:<22} {a['seconds']:>8.4f} {b['seconds']:>9.4f} {ratio:>7.3f}  {memory}",
                flush=True,
            )
    if out.exists():
        out.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
