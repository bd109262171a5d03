# Strategy: header validation speed and memory, side by side with the
# reference in one run.  For each file, ours (`validator.validate(path)`,
# strict profile, every rule) and the reference
# (`safetensors.safe_open(path, "np").keys()`) run in their own fresh child
# process: the child imports its library, records ru_maxrss as a baseline,
# then times several repetitions with process_time (CPU seconds: the
# machine is shared) and reports the best and the median time and the RSS
# growth over the baseline.  Run as a script:
#
#     nice python tests/benchmarks/bench_header.py [--quick]
#     nice python tests/benchmarks/bench_header.py --corpus [REPS [OTHER_CHECKOUT]]   # small files: the shipped corpus
#
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

CHILD = r"""
import json, resource, statistics, sys, time
impl, path, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
if impl == "ours":
    import validator
    def run():
        report = validator.validate(path)
        assert report.valid, [f.format() for f in report.errors][:3]
        return len(report.tensors)
else:
    import numpy  # safe_open(..., "np") needs it; imported before the baseline
    import safetensors
    def run():
        with safetensors.safe_open(path, "np") as f:
            return len(f.keys())
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
times = []
for _ in range(reps):
    t = time.process_time()
    n = run()
    times.append(time.process_time() - t)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"n": n, "best": min(times), "median": statistics.median(times), "rss_kb": peak - base}))
"""

LAYER_PARTS = (
    "self_attn.q_proj.weight",
    "self_attn.k_proj.weight",
    "self_attn.v_proj.weight",
    "self_attn.o_proj.weight",
    "mlp.gate_proj.weight",
    "mlp.up_proj.weight",
    "mlp.down_proj.weight",
    "input_layernorm.weight",
    "post_attention_layernorm.weight",
)


def names(count: int) -> list[str]:
    out = ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]
    layer = 0
    while len(out) < count:
        out.extend(f"model.layers.{layer}.{part}" for part in LAYER_PARTS)
        layer += 1
    return out[:count]


def write_file(path: Path, count: int, metadata_bytes: int = 0, *, spaced: bool = False) -> int:
    header: dict[str, object] = {
        "__metadata__": {"format": "pt", **({"blob": "x" * metadata_bytes} if metadata_bytes else {})}
    }
    offset = 0
    for i, name in enumerate(names(count)):
        shape = [4, 4] if i % 3 else [8]
        nbytes = 2 * (16 if i % 3 else 8)
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header, separators=(", ", ": ") if spaced else (",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        f.write(b"\0" * offset)
    return len(raw)


def write_in_child(path: Path, count: int, metadata_bytes: int, *, spaced: bool) -> int:
    """Write the file in a child, so that this process stays small.

    Linux keeps ru_maxrss across fork and exec: a parent that had built a
    100 MB header would lend its peak to every child's baseline.
    """
    args = [sys.executable, __file__, "--write", str(path), str(count), str(metadata_bytes), str(int(spaced))]
    proc = subprocess.run(args, capture_output=True, text=True, check=True, timeout=1800)
    return int(proc.stdout)


def measure(impl: str, path: Path, reps: int) -> dict[str, float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, impl, str(path), str(reps)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=1800,
    )
    if proc.returncode:
        raise SystemExit(f"{impl} failed on {path}:\n{proc.stderr}")
    result: dict[str, float] = json.loads(proc.stdout)
    return result


def combine(runs: list[dict[str, float]]) -> dict[str, float]:
    """Best time over all rounds, median of the rounds' medians, largest RSS."""
    medians = sorted(r["median"] for r in runs)
    return {
        "n": runs[0]["n"],
        "best": min(r["best"] for r in runs),
        "median": medians[len(medians) // 2],
        "rss_kb": max(r["rss_kb"] for r in runs),
    }


SMALL = r"""
import glob, json, sys, time
import safetensors, validator
blobs = [open(p, "rb").read() for p in sorted(glob.glob(sys.argv[1] + "/*.safetensors"))]
reps = int(sys.argv[2])
def ref(b):
    try:
        safetensors.deserialize(b)
    except Exception:
        pass
def total(fn):
    best = float("inf")
    for _ in range(5):
        t = time.process_time()
        for _ in range(reps):
            for b in blobs:
                fn(b)
        best = min(best, time.process_time() - t)
    return best / (reps * len(blobs))
# Interleaved, so that a change of load hits both.
ours, theirs = [], []
for _ in range(3):
    ours.append(total(validator.validate))
    theirs.append(total(ref))
sizes = []
for b in blobs:
    t = time.process_time()
    for _ in range(reps):
        validator.validate(b)
    mine = time.process_time() - t
    t = time.process_time()
    for _ in range(reps):
        ref(b)
    sizes.append(mine / max(time.process_time() - t, 1e-9))
sizes.sort()
print(json.dumps({"files": len(blobs), "ours_us": min(ours) * 1e6, "ref_us": min(theirs) * 1e6,
                  "median_ratio": sizes[len(sizes) // 2]}))
"""


def small_files(reps: int, root: Path = ROOT) -> None:
    """validate(bytes) against safetensors.deserialize, per file over the shipped corpus.

    ``root``: the checkout whose validator is timed (an older one, for a before figure);
    the corpus is always this checkout's.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-c", SMALL, str(ROOT / "corpus"), str(reps)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=1800,
    )
    r = json.loads(proc.stdout)
    print(
        f"corpus: {r['files']} files; validate(bytes) {r['ours_us']:.1f} us per file, "
        f"safetensors.deserialize {r['ref_us']:.1f} us per file: {r['ours_us'] / r['ref_us']:.2f}x "
        f"(median of the per-file ratios {r['median_ratio']:.1f}x)"
    )


def main() -> None:
    if sys.argv[1:2] == ["--corpus"]:
        small_files(int(sys.argv[2]) if len(sys.argv) > 2 else 20, Path(sys.argv[3]) if len(sys.argv) > 3 else ROOT)
        return
    if sys.argv[1:2] == ["--write"]:
        path, count, meta, spaced = sys.argv[2:6]
        print(write_file(Path(path), int(count), int(meta), spaced=spaced == "1"))
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and rounds, no 100 MB case")
    parser.add_argument("--rounds", type=int, default=3, help="alternating ours/reference child pairs per file")
    args = parser.parse_args()
    # label, tensors, metadata bytes, repetitions per child, ", "/": " separators
    cases = [
        ("272 tensors", 272, 0, 50, False),
        ("3,000 tensors", 3000, 0, 20, False),
        ("100,000 tensors", 100_000, 0, 5, False),
        ("100,000 tensors, spaced", 100_000, 0, 5, True),
    ]
    rounds = args.rounds
    if args.quick:
        cases = [(label, count, meta, max(2, reps // 5), spaced) for label, count, meta, reps, spaced in cases]
        rounds = 1
    else:
        cases.append(("~100 MB metadata string", 10, 99_990_000, 3, False))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, count, meta, reps, spaced in cases:
            path = Path(tmp) / "bench.safetensors"
            header = write_in_child(path, count, meta, spaced=spaced)
            # Alternate the two so that a change of machine load hits both.
            ours_runs, ref_runs = [], []
            for _ in range(rounds):
                ours_runs.append(measure("ours", path, reps))
                ref_runs.append(measure("reference", path, reps))
            ours, ref = combine(ours_runs), combine(ref_runs)
            assert ours["n"] == ref["n"] == count
            rows.append((label, header, ours, ref))
            path.unlink()
    head = (
        f"{'file':25} {'header B':>11} {'ours ms':>8} {'ref ms':>8} {'time x':>6} {'med x':>6}"
        f" {'ours MB':>8} {'ref MB':>7} {'RSS x':>6}"
    )
    print(head)
    print("-" * len(head))
    for label, header, ours, ref in rows:
        ob, rb = ours["best"] * 1e3, ref["best"] * 1e3
        med = ours["median"] / ref["median"]
        orss, rrss = ours["rss_kb"] / 1024, ref["rss_kb"] / 1024
        rss_ratio = f"{orss / rrss:6.2f}" if rrss > 0.05 else "   n/a"
        print(
            f"{label:25} {header:>11,} {ob:8.2f} {rb:8.2f} {ob / rb:6.2f} {med:6.2f}"
            f" {orss:8.1f} {rrss:7.1f} {rss_ratio}"
        )
    print(
        "ms: best of all repetitions; time x: ours / reference on the best times; med x: on the medians;\n"
        "MB: peak RSS growth over the child's own post-import baseline (largest over the rounds);\n"
        "'spaced': ', ' and ': ' separators, so the canonical fast path does not apply"
    )


if __name__ == "__main__":
    main()
