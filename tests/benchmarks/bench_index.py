# Strategy: validate_index's cost against the number of distinct shard names.
# Each size builds one index whose every tensor names its own shard file,
# with no shard on disk (each is then an index-shard-missing finding), so the
# run measures the index pass itself: parsing, grouping tensors by shard and
# one failed open per shard.  The baseline is what any index reader does,
# `json.load` of the same file; the ratio to it must stay flat as the index
# grows (linear), where a rescan of weight_map per shard makes it grow with N.
#
#   python tests/benchmarks/bench_index.py [--sizes 5000,10000,20000,100000]
#
# Not collected by pytest (bench_*.py).
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import validator


def build(root: Path, n: int) -> Path:
    weight_map = {f"model.layers.{i}.weight": f"model-{i:06d}-of-{n:06d}.safetensors" for i in range(n)}
    path = root / f"n{n}.safetensors.index.json"
    path.write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}))
    return path


def best(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="5000,10000,20000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| distinct shards | json.load | validate_index | ratio | µs per shard |")
    print("|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in args.sizes.split(",")):
            path = build(Path(tmp), n)

            def load(path: Path = path) -> None:
                with path.open() as fh:
                    json.load(fh)

            def check(path: Path = path, n: int = n) -> None:
                report = validator.validate_index(path)
                # The first 1,000 findings of a rule are kept, the rest counted.
                kept = len(report.findings)
                assert kept + getattr(report, "suppressed", 0) == n, (kept, n)

            base = best(load, args.repeat)
            ours = best(check, args.repeat)
            print(f"| {n:,} | {base:.3f} s | {ours:.3f} s | {ours / base:.0f}x | {ours / n * 1e6:.1f} |")


if __name__ == "__main__":
    main()
