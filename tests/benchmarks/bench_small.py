# Strategy: small files, where fixed costs decide, side by side with the
# reference in one run.  A child process imports validator (from this
# checkout, or from --before's) and safetensors 0.8.0, then times
# `validator.validate(bytes)` (strict profile) and
# `safetensors.deserialize(bytes)` (its exception swallowed) over the same
# bytes, alternating the two over several rounds, with process_time (CPU
# seconds: the machine is shared).  Rows: the mean over the shipped corpus
# (corpus/*.safetensors, this checkout's) and the median of its per-file
# ratios, then files written by `safetensors.numpy.save` with 2, 20 and 272
# small F32 tensors and `{"format": "pt"}` metadata.  With --before, the
# other checkout's validator runs in its own child, interleaved with this
# one's, so the before and after ratios come from one run.  Run as a script:
#
#     nice python tests/benchmarks/bench_small.py [--before /tmp/core-base] [--rounds 3] [--reps 20]
#
# Not collected by pytest (the file name does not start with test_).
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import glob, json, statistics, sys, time
import numpy, safetensors, safetensors.numpy, validator
corpus, reps = sys.argv[1], int(sys.argv[2])
blobs = [open(p, "rb").read() for p in sorted(glob.glob(corpus + "/*.safetensors"))]

def written(count):
    arrays = {f"model.layers.{i}.mlp.weight": numpy.zeros((4, 4), numpy.float32) for i in range(count)}
    return safetensors.numpy.save(arrays, metadata={"format": "pt"})

def ref(b):
    try:
        safetensors.deserialize(b)
    except Exception:
        pass

def best(fn, files, n):
    out = float("inf")
    for _ in range(5):
        t = time.process_time()
        for _ in range(n):
            for b in files:
                fn(b)
        out = min(out, time.process_time() - t)
    return out / (n * len(files))

rows = {"corpus": blobs, "2 tensors": [written(2)], "20 tensors": [written(20)], "272 tensors": [written(272)]}
result = {}
for label, files in rows.items():
    if label == "corpus":
        n = reps
    else:  # about as many calls as a corpus pass takes time
        t = time.process_time()
        validator.validate(files[0])
        n = max(1, int(reps * 0.01 / max(time.process_time() - t, 1e-6)))
    ours, theirs = [], []
    for _ in range(3):  # interleaved, so that a change of load hits both
        ours.append(best(validator.validate, files, n))
        theirs.append(best(ref, files, n))
    result[label] = {"ours_us": min(ours) * 1e6, "ref_us": min(theirs) * 1e6, "files": len(files)}
ratios = []
for b in blobs:
    ratios.append(best(validator.validate, [b], reps) / max(best(ref, [b], reps), 1e-9))
result["corpus"]["median_ratio"] = statistics.median(ratios)
print(json.dumps(result))
"""


def measure(root: Path, reps: int) -> dict[str, dict[str, float]]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT / "corpus"), str(reps)],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,  # `python -c` puts the working directory first on sys.path
        check=False,
        timeout=3600,
    )
    if proc.returncode:
        raise SystemExit(f"the child for {root} failed:\n{proc.stderr[-2000:]}")
    result: dict[str, dict[str, float]] = json.loads(proc.stdout)
    return result


def best_of(runs: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Per row: the run with the lowest ours/reference ratio's figures (and the median ratio's median)."""
    out = {}
    for label in runs[0]:
        row = min((r[label] for r in runs), key=lambda x: x["ours_us"] / x["ref_us"])
        out[label] = dict(row)
        if "median_ratio" in row:
            out[label]["median_ratio"] = sorted(r[label]["median_ratio"] for r in runs)[len(runs) // 2]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", type=Path, help="another checkout, timed in its own child, interleaved")
    parser.add_argument("--rounds", type=int, default=3, help="children per checkout")
    parser.add_argument("--reps", type=int, default=20, help="passes over the corpus per timing")
    args = parser.parse_args()
    roots = {"after": ROOT} if args.before is None else {"before": args.before, "after": ROOT}
    runs: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in roots}
    for _ in range(args.rounds):
        for name, root in roots.items():
            runs[name].append(measure(root, args.reps))
    results = {name: best_of(r) for name, r in runs.items()}
    head = f"{'file':22}" + "".join(f" {name + ' us':>10} {'ref us':>8} {name + ' x':>9}" for name in roots)
    print(head)
    print("-" * len(head))
    for label in results["after"]:
        line = f"{label:22}"
        for name in roots:
            row = results[name][label]
            line += f" {row['ours_us']:10.1f} {row['ref_us']:8.1f} {row['ours_us'] / row['ref_us']:9.2f}"
        print(line)
    median = "  ".join(f"{name} {results[name]['corpus']['median_ratio']:.1f}x" for name in roots)
    print(f"corpus: {results['after']['corpus']['files']:.0f} files; median of the per-file ratios: {median}")
    print(
        "us: CPU microseconds per call (best of 5 timings x 3 interleaved rounds per child, the child with the\n"
        "lowest ratio of --rounds); x: validate(bytes) / safetensors.deserialize(bytes), measured in one process"
    )


if __name__ == "__main__":
    main()
