# Benchmark: `stcheck scan` at scale, side by side in one run.
#   cache:    a re-scan of N files with a warm results cache against the cold
#             scan that filled it (both `stcheck scan` processes, wall time).
#   scaling:  a --deep scan on Dask with 1 worker against 2 workers (the
#             scan only, on clusters already started).
#   overhead: `--cluster local:1` (whole command, cluster start included)
#             and a scan on an already-running 1-worker cluster, against a
#             plain local `--jobs 1` scan of the same files.
#   split:    one large file, --deep on 2 workers, whole against split by
#             tensor range.
# Every file is read once before the clock starts, so the page cache is warm
# and the figures compare work, not the disk.  Run by hand:
#   nice python tests/benchmarks/bench_cluster.py [--files 10000] [--size-kib 256]
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from validator.pipeline.engine import Job, Options  # noqa: E402 - after the path set-up


def make_file(path: Path, size: int, tensors: int, seed: int) -> None:
    """A valid file of about ``size`` bytes: F32 tensors of pseudo-random values."""
    per = max(4, (size // tensors) // 4 * 4)
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    for k in range(tensors):
        header[f"layer.{k}.weight"] = {"dtype": "F32", "shape": [per // 4], "data_offsets": [k * per, (k + 1) * per]}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    rng = bytearray(os.urandom(min(per, 1 << 20)))
    for i in range(0, len(rng), 4):  # keep every value finite: clear one exponent bit
        rng[i + 3] &= 0xBF
    block = bytes(rng)
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(text)) + text)
        for _ in range(tensors):
            left = per
            while left:
                n = min(left, len(block))
                fh.write(block[:n])
                left -= n
    del seed


def warm(paths: list[Path]) -> None:
    for p in paths:
        with p.open("rb") as fh:
            while fh.read(1 << 24):
                pass


def stcheck(*argv: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "validator", "scan", "--no-config", "--progress", "never", "--format", "json", *argv],
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return time.perf_counter() - started


def bench_cache(top: Path, files: int, size_kib: int) -> None:
    tree = top / "many"
    tree.mkdir()
    paths = []
    for k in range(files):
        p = tree / f"{k // 1000:03d}" / f"m{k:05d}.safetensors"
        p.parent.mkdir(exist_ok=True)
        make_file(p, size_kib << 10, 4, k)
        paths.append(p)
    warm(paths)
    print(f"\n## cache: {files} files of {size_kib} KiB ({files * size_kib / 1024:.0f} MiB), --jobs 2")
    print("| scan | cold s | warm s | warm / cold |")
    print("|---|---:|---:|---:|")
    for label, extra in (("--deep", ["--deep"]), ("header only", [])):
        db = top / f"cache-{len(extra)}.db"
        cold = stcheck("--jobs", "2", "--cache", str(db), *extra, str(tree))
        hot = stcheck("--jobs", "2", "--cache", str(db), *extra, str(tree))
        print(f"| {label} | {cold:.2f} | {hot:.2f} | {hot / cold:.3f} |")
    nothing = stcheck("--jobs", "2", "--cache", str(top / "cache-1.db"), str(tree / "000" / "m00000.safetensors"))
    print(f"(one file, warm: {nothing:.2f} s: interpreter start and imports, the floor of every run)")


def bench_cluster(top: Path, count: int, size_mib: int, reps: int) -> None:
    import distributed

    from validator.pipeline.cluster import scan_with_client

    tree = top / "deep"
    tree.mkdir()
    paths = []
    for k in range(count):
        p = tree / f"d{k:03d}.safetensors"
        make_file(p, size_mib << 20, 16, k)
        paths.append(p)
    big = top / "big.safetensors"
    make_file(big, count * size_mib << 20, 64, 0)
    warm([*paths, big])
    jobs = [Job(str(p), ((str(p), None),)) for p in paths]
    options = Options(deep=True)
    total = count * size_mib
    print(f"\n## Dask: {count} files of {size_mib} MiB ({total} MiB), --deep (sha256 + content checks), best of {reps}")
    from validator.pipeline.engine import run_jobs

    def clock(fn: object) -> float:
        started = time.perf_counter()
        fn()  # type: ignore[operator]
        return time.perf_counter() - started

    run_jobs(jobs[:2], options, workers=1)  # numpy imported here too
    best: dict[str, float] = {}
    whole = [Job(str(big), ((str(big), None),))]
    with contextlib.ExitStack() as stack:
        clients = {}
        for n in (1, 2):
            lc = stack.enter_context(
                distributed.LocalCluster(
                    n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=50
                )
            )
            clients[n] = stack.enter_context(distributed.Client(lc))
            scan_with_client(clients[n], jobs[:2], options)  # workers import numpy once
        # Alternate the measurements and keep each one's best of `reps`, so
        # a burst of load from elsewhere does not land on one side only.
        for _ in range(reps):
            runs = {
                "in_process": lambda: run_jobs(jobs, options, workers=1),
                "one": lambda: scan_with_client(clients[1], jobs, options),
                "two": lambda: scan_with_client(clients[2], jobs, options),
                "unsplit": lambda: scan_with_client(clients[2], whole, options, split_bytes=1 << 62),
                "split": lambda: scan_with_client(clients[2], whole, options, split_bytes=64 << 20),
            }
            for key, fn in runs.items():
                best[key] = min(best.get(key, float("inf")), clock(fn))
    times = {1: best["one"], 2: best["two"]}
    in_process, unsplit, split = best["in_process"], best["unsplit"], best["split"]
    plain = stcheck("--jobs", "1", "--deep", str(tree))
    local1 = stcheck("--cluster", "local:1", "--deep", str(tree))
    print("| measurement | seconds | MiB/s | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| 1 worker (scan only) | {times[1]:.2f} | {total / times[1]:.0f} | 1.00x |")
    print(f"| 2 workers (scan only) | {times[2]:.2f} | {total / times[2]:.0f} | {times[1] / times[2]:.2f}x speed-up |")
    print(f"| plain `stcheck scan --jobs 1 --deep` | {plain:.2f} | {total / plain:.0f} | 1.00x |")
    print(
        f"| `--cluster local:1` (command, cluster start included) | {local1:.2f} | {total / local1:.0f} | {local1 / plain:.2f}x time |"
    )
    print(f"| plain local scan, in this process (scan only) | {in_process:.2f} | {total / in_process:.0f} | 1.00x |")
    print(
        f"| 1-worker cluster already running (scan only) | {times[1]:.2f} | {total / times[1]:.0f} | {times[1] / in_process:.2f}x time |"
    )
    print(f"| one {total} MiB file on 2 workers, whole | {unsplit:.2f} | {total / unsplit:.0f} | 1.00x |")
    print(
        f"| the same file split by tensor range (64 MiB) | {split:.2f} | {total / split:.0f} | {unsplit / split:.2f}x speed-up |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10000, help="files for the cache benchmark")
    parser.add_argument("--size-kib", type=int, default=256, help="size of each of those files")
    parser.add_argument("--deep-files", type=int, default=32, help="files for the Dask benchmarks")
    parser.add_argument("--deep-mib", type=int, default=32, help="size of each of those files")
    parser.add_argument("--reps", type=int, default=3, help="repeats of each Dask measurement (best kept)")
    parser.add_argument("--skip", choices=["cache", "cluster"], action="append", default=[])
    args = parser.parse_args()
    top = Path(tempfile.mkdtemp(prefix="stcheck-bench-cluster-"))
    try:
        print(f"cores: {os.cpu_count()}, load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        if "cache" not in args.skip:
            bench_cache(top, args.files, args.size_kib)
        if "cluster" not in args.skip:
            bench_cluster(top, args.deep_files, args.deep_mib, args.reps)
        print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
