# Strategy: command-line start-up, side by side with the reference in one run.
# Each pair runs `stcheck check FILE` and the reference's shortest way to open
# the same file and list its tensors,
#
#     python -c "from safetensors import safe_open; safe_open(FILE, 'np').keys()"
#
# as fresh child processes, in alternating order, and times each by the wall
# clock (fork to exit).  The ratio of the medians over all pairs is the
# figure to read (ours / theirs; lower is better for us).  A second reference
# row, `python -c "import safetensors"`, shows the reference's floor: the
# interpreter plus its import, without numpy (which safe_open(..., "np")
# loads).  Run as a script:
#
#     nice python tests/benchmarks/bench_startup.py [--pairs 30] [--tensors 200] [--module]
#
# Not collected by pytest (the file name does not start with test_).
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_file(path: Path, tensors: int) -> None:
    """A valid file of ``tensors`` F32 tensors of 16 x 16, the header padded to 8."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    size = 16 * 16 * 4
    for i in range(tensors):
        header[f"model.layers.{i}.weight"] = {
            "dtype": "F32",
            "shape": [16, 16],
            "data_offsets": [i * size, (i + 1) * size],
        }
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(size * tensors))


def wall(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        msg = f"{argv[:3]} exited {done.returncode}: {done.stderr.decode()[-400:]}"
        raise SystemExit(msg)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--tensors", type=int, default=200)
    parser.add_argument(
        "--module",
        action="store_true",
        help="run ours as `python -m validator` (the package PYTHONPATH finds) instead of the stcheck script",
    )
    args = parser.parse_args()
    stcheck = None if args.module else shutil.which("stcheck")
    ours_argv = [stcheck] if stcheck else [sys.executable, "-m", "validator"]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.safetensors"
        write_file(path, args.tensors)
        commands = {
            "stcheck check FILE": [*ours_argv, "check", str(path)],
            "safe_open(FILE, 'np').keys()": [
                sys.executable,
                "-c",
                f"from safetensors import safe_open; safe_open({str(path)!r}, 'np').keys()",
            ],
            "import safetensors": [sys.executable, "-c", "import safetensors"],
        }
        for argv in commands.values():  # warm the page cache and the bytecode caches
            wall(argv)
        times: dict[str, list[float]] = {name: [] for name in commands}
        names = list(commands)
        for i in range(args.pairs):
            order = names if i % 2 == 0 else names[::-1]
            for name in order:
                times[name].append(wall(commands[name]))
    ours = statistics.median(times[names[0]])
    print(f"ours: {' '.join(ours_argv)}; {args.pairs} paired runs, file of {args.tensors} tensors; wall time")
    print(f"{'command':34} {'median ms':>10} {'min ms':>8} {'ours / this':>12}")
    for name in names:
        med = statistics.median(times[name])
        print(f"{name:34} {med * 1e3:10.1f} {min(times[name]) * 1e3:8.1f} {ours / med:11.2f}x")


if __name__ == "__main__":
    main()
