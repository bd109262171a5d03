"""Loader and writer benchmark: stcheck vs safetensors 0.8.0, side by side.

Usage: python tests/benchmarks/bench_loader.py [--big-mib 1024] [--small 20000] [--reps 3] [--dir /tmp/stcheck-bench]

Two files: one of about 1 GB (64 F32 tensors) and one of many small tensors
(20,000 F32 tensors of 256 elements).  Every measurement runs in a fresh
Python process; the files are read once beforehand so both sides start
from a warm page cache.  Reported per file, as medians over --reps runs:

- first: open the file and get one tensor, touching its pages
  (ours: validator.open + get; theirs: safetensors.safe_open + get_tensor).
- all-pages: get every tensor and read one byte of every 4 KiB page of it,
  so that every page is mapped into (ours) or copied into (theirs) the process
  (theirs: safetensors.numpy.load_file / safetensors.torch.load_file).
- all-bytes: get every tensor and read every byte of it once (a uint8 sum).
- peak RSS growth (the peak-RSS mark, VmHWM, reset after the imports with
  /proc/self/clear_refs, minus the RSS then; ru_maxrss where /proc lacks
  that) and anonymous-memory growth (RssAnon from /proc/self/status).
  Mapped file pages count in RSS but are page cache shared with every other
  reader; anonymous memory is what a load really costs the machine.
- save: write the same arrays (ours: validator.save, theirs:
  safetensors.numpy.save_file), to a file that does not exist yet.

Ratios are ours / theirs: below 1 is better for us.
"""

# Strategy: the parent process only builds files, spawns children and
# prints; each child imports what it needs, records a baseline, runs one
# measurement and prints one JSON line.  Nothing here is collected by pytest.
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = 4096


def _status_kib(field: str) -> int:
    try:
        with open("/proc/self/status") as status:  # noqa: PTH123
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _anon_kib() -> int:
    return _status_kib("RssAnon")


def _reset_peak() -> int:
    """Reset the peak-RSS mark (Linux clear_refs 5) and return the RSS in KiB.

    Without a reset, ru_maxrss keeps the peak reached while importing torch,
    and a run that stays below it shows no growth at all.  Where the reset is
    unavailable, fall back to ru_maxrss.
    """
    try:
        with open("/proc/self/clear_refs", "w") as f:  # noqa: PTH123
            f.write("5")
        return _status_kib("VmRSS")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _peak_kib() -> int:
    return _status_kib("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _touch_np(arr, *, every_byte: bool) -> int:
    import numpy as np

    flat = arr.reshape(-1).view(np.uint8)
    if every_byte:
        return int(flat.sum(dtype=np.uint64))
    return int(flat[::PAGE].sum(dtype=np.uint64))


def _touch_torch(t, *, every_byte: bool) -> int:
    import torch

    # The same numpy reduction as for numpy arrays (torch's own uint8 sum is
    # several times slower and would dominate both sides).
    return _touch_np(t.reshape(-1).view(torch.uint8).numpy(), every_byte=every_byte)


def child(kind: str, side: str, path: str, out: str) -> dict[str, float]:
    """Run one measurement in this (fresh) process."""
    framework = "torch" if side.endswith("torch") else "numpy"
    import numpy as np

    if framework == "torch":
        import torch  # noqa: F401
    import safetensors
    import safetensors.numpy
    import safetensors.torch

    import validator
    import validator.io.dtypes_np
    import validator.io.loader
    import validator.io.writer  # both libraries fully imported before the baseline

    touch = _touch_torch if framework == "torch" else _touch_np
    arrays = None
    if kind == "save":
        with validator.open(path) as f:
            arrays = {name: np.array(f.get(name)) for name in f}
    base_rss = _reset_peak()
    base_anon = _anon_kib()
    start = time.perf_counter()
    checksum = 0
    if kind == "first":
        with validator.open(path) as f:
            name = next(iter(f))
        start = time.perf_counter()
        if side.startswith("ours"):
            handle = validator.open(path, framework=framework)
            checksum = touch(handle.get(name), every_byte=True)
        else:
            handle = safetensors.safe_open(path, framework="pt" if framework == "torch" else "np")
            checksum = touch(handle.get_tensor(name), every_byte=True)
    elif kind in ("all-pages", "all-bytes"):
        every = kind == "all-bytes"
        if side.startswith("ours"):
            handle = validator.open(path, framework=framework)
            tensors = {name: handle.get(name) for name in handle}
        elif framework == "torch":
            tensors = safetensors.torch.load_file(path)
        else:
            tensors = safetensors.numpy.load_file(path)
        for t in tensors.values():
            checksum += touch(t, every_byte=every)
    elif kind == "save":
        assert arrays is not None
        start = time.perf_counter()
        if side.startswith("ours"):
            validator.save(arrays, out)
        else:
            safetensors.numpy.save_file(arrays, out)
    seconds = time.perf_counter() - start
    rss = _peak_kib() - base_rss
    anon = _anon_kib() - base_anon
    return {"seconds": seconds, "rss_mib": rss / 1024, "anon_mib": anon / 1024, "checksum": float(checksum)}


def _spawn(kind: str, side: str, path: Path, out: Path) -> dict[str, float]:
    if out.exists():
        out.unlink()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, __file__, "--child", kind, side, str(path), str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def make_files(directory: Path, big_mib: int, small: int) -> tuple[Path, Path]:
    """The two benchmark files (written once, then reused): 64 F32 tensors of
    ``big_mib`` MiB in all, and ``small`` F32 tensors of 16x16."""
    import numpy as np
    import safetensors.numpy

    directory.mkdir(parents=True, exist_ok=True)
    big = directory / f"big_{big_mib}MiB.safetensors"
    many = directory / f"many_{small}.safetensors"
    if not big.exists():
        count = 64
        per = big_mib * (1 << 20) // 4 // count
        rng = np.random.default_rng(0)
        block = rng.standard_normal(per, dtype=np.float32)
        tensors = {f"layers.{i:02d}.weight": block + np.float32(i) for i in range(count)}
        safetensors.numpy.save_file(tensors, big)
        del tensors
    if not many.exists():
        rng = np.random.default_rng(1)
        tensors = {f"blocks.{i // 8}.p{i % 8}": rng.standard_normal((16, 16), dtype=np.float32) for i in range(small)}
        safetensors.numpy.save_file(tensors, many)
    for path in (big, many):
        with path.open("rb") as f:  # warm the page cache
            while f.read(1 << 24):
                pass
    return big, many


def _labelled_files(directory: Path, big_mib: int, small: int) -> dict[str, Path]:
    big, many = make_files(directory, big_mib, small)
    return {"~1 GB": big, f"{small} small tensors": many}


SIDES = {
    "first": [("ours-numpy", "theirs-numpy"), ("ours-torch", "theirs-torch")],
    "all-pages": [("ours-numpy", "theirs-numpy"), ("ours-torch", "theirs-torch")],
    "all-bytes": [("ours-numpy", "theirs-numpy"), ("ours-torch", "theirs-torch")],
    "save": [("ours-numpy", "theirs-numpy")],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big-mib", type=int, default=1024)
    parser.add_argument("--small", type=int, default=20000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/stcheck-bench"))
    parser.add_argument("--child", nargs=4, metavar=("KIND", "SIDE", "PATH", "OUT"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    files = _labelled_files(args.dir, args.big_mib, args.small)
    out = args.dir / "saved.safetensors"
    rows = []
    for label, path in files.items():
        for kind, pairs in SIDES.items():
            for ours, theirs in pairs:
                runs: dict[str, list[dict[str, float]]] = {ours: [], theirs: []}
                for _ in range(args.reps):
                    for side in (ours, theirs):
                        runs[side].append(_spawn(kind, side, path, out))
                a = {k: statistics.median(r[k] for r in runs[ours]) for k in ("seconds", "rss_mib", "anon_mib")}
                b = {k: statistics.median(r[k] for r in runs[theirs]) for k in ("seconds", "rss_mib", "anon_mib")}
                if runs[ours][0]["checksum"] != runs[theirs][0]["checksum"]:
                    print(f"checksum mismatch: {label} {kind} {ours}", file=sys.stderr)
                    return 1
                rows.append((label, kind, ours.split("-")[1], a, b))
    if out.exists():
        out.unlink()
    head = f"{'file':<22} {'measure':<10} {'api':<6} {'ours s':>8} {'theirs s':>9} {'time x':>7}  {'RSS MiB':>15} {'RSS x':>6}  {'anon MiB':>15} {'anon x':>6}"
    print(head)
    for label, kind, api, a, b in rows:
        ratio = a["seconds"] / b["seconds"] if b["seconds"] else float("nan")
        mem = ""
        if kind.startswith("all"):
            rss_ratio = a["rss_mib"] / b["rss_mib"] if b["rss_mib"] > 0 else float("nan")
            anon_ratio = a["anon_mib"] / b["anon_mib"] if b["anon_mib"] > 0 else float("nan")
            mem = (
                f"  {a['rss_mib']:>7.0f}/{b['rss_mib']:<7.0f} {rss_ratio:>6.2f}"
                f"  {a['anon_mib']:>7.0f}/{b['anon_mib']:<7.0f} {anon_ratio:>6.2f}"
            )
        print(f"{label:<22} {kind:<10} {api:<6} {a['seconds']:>8.4f} {b['seconds']:>9.4f} {ratio:>7.3f}{mem}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
