# Strategy: command-line start-up, side by side with the reference in one run.
# Every row is a fresh child process, timed by the wall clock from start to
# exit, on the same small valid file:
#
#   python -c pass                                  the interpreter's floor
#   python -c "from safetensors import safe_open    the reference (a): the
#       with safe_open(sys.argv[1], 'np') as f:     shortest way to open the
#           f.keys()" FILE                          file and list its tensors
#   stcheck check FILE                              ours (b): the console script
#   python -m validator check FILE                  ours, without the script
#   python -c "import validator"                    ours (c): the package alone
#
# The rows run in turn, --reps times, the order reversed on every other
# round, so a change of the machine's load falls on every row alike.  Each
# row prints its median and 90th percentile; the figure to read is the ratio
# of medians (b)/(a), also net of the floor ((b - floor) / (a - floor)).
# Ours runs from this checkout (PYTHONPATH is set to it, ahead of any
# installed copy); with --before DIR, the same three rows run from another
# checkout too, in the same rounds, so before and after come from one run.
# The children run in an empty temporary directory, so no pyproject.toml
# policy is found.  Every module's bytecode is cached (in the temporary
# directory, by the warm-up run), as in an installed package; --source runs
# the checkouts from source instead (PYTHONDONTWRITEBYTECODE=1, which
# compiles every stcheck module at every start).  Run as a script:
#
#     nice python tests/benchmarks/bench_startup.py [--reps 30] [--tensors 200] [--before /tmp/startup-base] [--source]
#
# Not collected by pytest (the file name does not start with test_).
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

REFERENCE = "import sys\nfrom safetensors import safe_open\nwith safe_open(sys.argv[1], 'np') as f:\n    f.keys()"


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


def console_script() -> str:
    """The `stcheck` a user runs: the one beside this interpreter, else the one on PATH."""
    beside = Path(sys.executable).parent / "stcheck"
    found = str(beside) if beside.is_file() else shutil.which("stcheck")
    if found is None:
        msg = "no stcheck console script beside this interpreter or on PATH (pip install -e .)"
        raise SystemExit(msg)
    return found


def timed(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one child."""
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=False, env=env, cwd=cwd)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        msg = f"{argv[:4]} exited {done.returncode}: {done.stderr.decode(errors='replace')[-400:]}"
        raise SystemExit(msg)
    return elapsed, (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime)


def commands(path: Path, before: Path | None) -> dict[str, tuple[list[str], Path]]:
    """Row label -> (argv, the checkout on PYTHONPATH)."""
    py, file = sys.executable, str(path)
    rows: dict[str, tuple[list[str], Path]] = {
        "python -c pass": ([py, "-c", "pass"], ROOT),
        "(a) safe_open(FILE).keys()": ([py, "-c", REFERENCE, file], ROOT),
    }
    trees = {"after": ROOT} if before is None else {"before": before, "after": ROOT}
    for name, root in trees.items():
        rows[f"(b) stcheck check FILE [{name}]"] = ([console_script(), "check", file], root)
        rows[f"    python -m validator check [{name}]"] = ([py, "-m", "validator", "check", file], root)
        rows[f"(c) import validator [{name}]"] = ([py, "-c", "import validator"], root)
    return rows


def environment(root: Path, source: bool, tmp: Path) -> dict[str, str]:
    """The child's environment: ``root`` on PYTHONPATH, and where its bytecode comes from.

    By default every module's bytecode is cached under ``tmp`` (written by the
    warm-up run, read by every timed run), as an installed package has it.
    With ``source``, PYTHONDONTWRITEBYTECODE=1: a checkout without
    __pycache__ compiles each of its modules on every start (the standard
    library and site-packages keep their own caches)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("PYTHONPYCACHEPREFIX", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if source:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    return env


def imported(argv: list[str], env: dict[str, str], cwd: str) -> int:
    """How many modules the command imports (an untimed run under -X importtime)."""
    done = subprocess.run(argv, capture_output=True, check=True, env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, cwd=cwd)
    return done.stderr.count(b"import time:") - 1  # less the header line


def main() -> int:
    parser = argparse.ArgumentParser(description="stcheck check FILE against a bare safe_open script")
    parser.add_argument("--reps", type=int, default=30, help="rounds; every row runs once per round")
    parser.add_argument("--tensors", type=int, default=200, help="tensors in the file checked")
    parser.add_argument("--before", type=Path, help="another checkout whose rows run in the same rounds")
    parser.add_argument(
        "--source",
        action="store_true",
        help="no bytecode cache for the checkouts (PYTHONDONTWRITEBYTECODE=1): every start compiles them",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.safetensors"
        write_file(path, args.tensors)
        rows = commands(path, args.before)
        envs = {label: environment(root, args.source, Path(tmp)) for label, (_, root) in rows.items()}
        for label, (argv, _) in rows.items():  # warm the page cache and the bytecode caches
            timed(argv, envs[label], tmp)
        modules = {label: imported(argv, envs[label], tmp) for label, (argv, _) in rows.items()}
        walls: dict[str, list[float]] = {label: [] for label in rows}
        cpus: dict[str, list[float]] = {label: [] for label in rows}
        labels = list(rows)
        for i in range(args.reps):
            for label in labels if i % 2 == 0 else labels[::-1]:
                w, c = timed(rows[label][0], envs[label], tmp)
                walls[label].append(w)
                cpus[label].append(c)
    print(f"{args.reps} interleaved rounds, a valid file of {args.tensors} tensors; milliseconds per process")
    print(f"console script: {console_script()}; Python {sys.version.split()[0]}")
    if args.source:
        cached = [str(root) for root in {ROOT, args.before} if root and any(root.glob("validator/**/__pycache__"))]
        print("bytecode: none (PYTHONDONTWRITEBYTECODE=1)" + (f"; but cached in {cached}" if cached else ""))
    else:
        print("bytecode: cached for every module (written by the warm-up run)")
    for title, times in (("wall", walls), ("CPU (user + system)", cpus)):
        median = {label: statistics.median(t) for label, t in times.items()}
        floor, ref = median[labels[0]], median[labels[1]]
        print(f"\n{title:40} {'median':>8} {'p90':>8} {'/ (a)':>7} {'net / (a)':>10} {'modules':>8}")
        for label in labels:
            p90 = statistics.quantiles(times[label], n=10)[-1]
            ratio = median[label] / ref
            net = (median[label] - floor) / (ref - floor)
            print(
                f"{label:40} {median[label] * 1e3:8.1f} {p90 * 1e3:8.1f} {ratio:6.2f}x {net:9.2f}x {modules[label]:8}"
            )
    print("\n/ (a): ratio of medians to the reference row; net: the same, the floor (python -c pass) subtracted;")
    print("modules: how many the command imports (-X importtime, the interpreter's own start-up included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
