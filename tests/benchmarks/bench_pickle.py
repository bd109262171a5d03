"""Static pickle reading of a ~500 MB pytorch_model.bin, beside torch.load.

    nice python tests/benchmarks/bench_pickle.py [--size-mib 512]

Writes a torch.save checkpoint of a few large float32 tensors (zip form,
then the legacy form) to a temporary directory, evicts it from the page
cache (fsync, then posix_fadvise DONTNEED), and measures, in this process,
the wall time and the bytes fetched from storage (/proc/self/io read_bytes,
which counts mmap page faults too) of:

- validator.pickles.read_pickle_file (reads the .pkl members: the tensor
  data members are located, not read), and
- torch.load(weights_only=True, mmap=True), cold then warm.

The files are deleted at the end.  Not collected by pytest.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable


def _io() -> dict[str, int]:
    fields = {}
    for line in Path("/proc/self/io").read_text(encoding="ascii").splitlines():
        key, _, value = line.partition(":")
        fields[key] = int(value)
    return fields


def _evict(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _measure(label: str, path: Path, run: Callable[[], object], *, cold: bool) -> float:
    if cold:
        _evict(path)
    before = _io()
    start = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - start
    after = _io()
    fetched = after["read_bytes"] - before["read_bytes"]
    syscalls = after["rchar"] - before["rchar"]
    state = "cold" if cold else "warm"
    print(
        f"{label:42} {state:4} {seconds * 1000:9.1f} ms"
        f"  fetched {fetched / 1024:10,.0f} KiB  read() {syscalls / 1024:10,.0f} KiB"
    )
    del result
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mib", type=int, default=512)
    args = parser.parse_args()

    import torch

    from validator.pickles import read_pickle_file

    per = args.size_mib * 2**20 // 4 // 4  # four float32 tensors
    state = {f"layer{i}.weight": torch.full((per,), float(i)) for i in range(4)}
    with tempfile.TemporaryDirectory(prefix="bench_pickle_") as tmp:
        for form, legacy in (("zip", False), ("legacy", True)):
            path = Path(tmp) / f"pytorch_model_{form}.bin"
            torch.save(state, path, _use_new_zipfile_serialization=not legacy)
            size = path.stat().st_size
            print(f"\n{path.name}: {size:,} bytes ({size / 2**20:.0f} MiB), torch {torch.__version__}")
            ours = _measure("validator.pickles.read_pickle_file", path, lambda p=path: read_pickle_file(p), cold=True)
            verdict = read_pickle_file(path)
            print(f"  verdict: {verdict.kind}, weights_only={verdict.weights_only}: {verdict.message()}")
            _measure("validator.pickles.read_pickle_file", path, lambda p=path: read_pickle_file(p), cold=False)
            if legacy:  # torch.load's mmap=True needs the zip form
                theirs = _measure(
                    "torch.load(weights_only=True)", path, lambda p=path: torch.load(p, weights_only=True), cold=True
                )
            else:
                theirs = _measure(
                    "torch.load(weights_only=True, mmap=True)",
                    path,
                    lambda p=path: torch.load(p, weights_only=True, mmap=True),
                    cold=True,
                )
                _measure(
                    "torch.load(weights_only=True, mmap=True)",
                    path,
                    lambda p=path: torch.load(p, weights_only=True, mmap=True),
                    cold=False,
                )
            print(f"  cold ratio torch.load / read_pickle_file: {theirs / ours:.2f}x")
            path.unlink()


if __name__ == "__main__":
    main()
