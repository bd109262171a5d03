"""validator.compat per-call overhead against safetensors 0.8.0, small tensors.

Usage: python tests/benchmarks/bench_compat_calls.py [--rounds 9] [--budget 0.05] [--frameworks]

Three files of small F32 tensors (2, 272 and 3,000 tensors; shapes [4, 4]
and [8], the names of a Llama-style checkpoint), written once to a temporary
folder.  Five calls, each on each file:

- ``safe_open(path, "np")`` and ``get_tensor`` for every key;
- ``safe_open(path, "pt")`` and ``get_tensor`` for every key;
- ``numpy.load_file(path)``;
- ``numpy.load(data)`` of the file's bytes (read before the clock);
- ``torch.load_file(path)``.

``--distinct`` gives every tensor a shape of its own ([i + 1]): a
checkpoint repeats a few shapes, and this is the case where none repeats.
``--frameworks`` adds ``safe_open`` + ``get_tensor`` for "flax", "mlx" and
"paddle" where those frameworks are installed (the conversion is the
framework's own and costs the same on both sides).

Both libraries are imported in this one process, and ours and theirs
alternate within every round (which goes first alternates too), so that a
change of machine load hits both.  Each sample times as many calls as fit in
--budget seconds and divides; the table shows the best of --rounds samples
per side (microseconds per call) and ours / theirs: below 1 is better for us.
"""

# Strategy: everything in one process, on purpose: the costs measured are a
# few microseconds per call, far below the noise of process start-up, and
# the file is in the page cache after the first call.  Nothing here is
# collected by pytest.
from __future__ import annotations

import argparse
import importlib
import json
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_header import names  # noqa: E402 - the same tensor names as the header benchmark

if TYPE_CHECKING:
    from collections.abc import Callable

COUNTS = (2, 272, 3000)
CALLS = (
    'safe_open(..., "np") + get_tensor',
    'safe_open(..., "pt") + get_tensor',
    "numpy.load_file",
    "numpy.load(bytes)",
    "torch.load_file",
)
EXTRA = ("flax", "mlx", "paddle")


def write_file(path: Path, count: int, *, distinct: bool = False) -> None:
    """``count`` F32 tensors of shape [4, 4] or [8] (``distinct``: [i + 1]), with zeroed data."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for i, name in enumerate(names(count)):
        shape = [i + 1] if distinct else [4, 4] if i % 3 else [8]
        nbytes = 4 * shape[0] * (shape[1] if len(shape) > 1 else 1)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))


def _every_key(safe_open: Callable[..., object], framework: str) -> Callable[[object], object]:
    def run(path: object) -> object:
        with safe_open(path, framework) as f:  # type: ignore[attr-defined]
            return [f.get_tensor(key) for key in f.keys()]  # type: ignore[attr-defined]  # noqa: SIM118 - safe_open is not iterable

    return run


def sides(frameworks: bool) -> dict[str, tuple[Callable[[object], object], Callable[[object], object], bool]]:
    """call -> (ours, theirs, takes bytes)."""
    import safetensors
    import safetensors.numpy
    import safetensors.torch

    import validator.compat
    import validator.compat.numpy
    import validator.compat.torch

    out = {
        CALLS[0]: (_every_key(validator.compat.safe_open, "np"), _every_key(safetensors.safe_open, "np"), False),
        CALLS[1]: (_every_key(validator.compat.safe_open, "pt"), _every_key(safetensors.safe_open, "pt"), False),
        CALLS[2]: (validator.compat.numpy.load_file, safetensors.numpy.load_file, False),
        CALLS[3]: (validator.compat.numpy.load, safetensors.numpy.load, True),
        CALLS[4]: (validator.compat.torch.load_file, safetensors.torch.load_file, False),
    }
    if frameworks:
        modules = {"flax": "jax", "mlx": "mlx.core", "paddle": "paddle"}
        for framework in EXTRA:
            try:
                importlib.import_module(modules[framework])
            except ImportError:
                print(f"({framework} is not installed: skipped)", file=sys.stderr)
                continue
            ours = _every_key(validator.compat.safe_open, framework)
            theirs = _every_key(safetensors.safe_open, framework)
            out[f'safe_open(..., "{framework}") + get_tensor'] = (ours, theirs, False)
    return out


def sample(run: Callable[[object], object], arg: object, budget: float) -> float:
    """Seconds per call, over as many calls as fit in ``budget``."""
    calls, start = 0, time.perf_counter()
    while True:
        run(arg)
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= budget:
            return elapsed / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="samples per side and cell; the best is shown")
    parser.add_argument("--budget", type=float, default=0.05, help="seconds of calls per sample")
    parser.add_argument("--frameworks", action="store_true", help="add flax, mlx, paddle where installed")
    parser.add_argument("--distinct", action="store_true", help="every tensor of its own shape (no two alike)")
    args = parser.parse_args()
    table = sides(args.frameworks)
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for count in COUNTS:
            path = Path(tmp) / f"{count}.safetensors"
            write_file(path, count, distinct=args.distinct)
            files[count] = (str(path), path.read_bytes())
        best: dict[tuple[str, int], tuple[float, float]] = {}
        for call, (ours, theirs, takes_bytes) in table.items():
            for count, (path, data) in files.items():
                arg = data if takes_bytes else path
                ours(arg), theirs(arg)  # warm up: imports, page cache
                a, b = [], []
                for i in range(args.rounds):
                    pair = ((ours, a), (theirs, b)) if i % 2 == 0 else ((theirs, b), (ours, a))
                    for run, into in pair:
                        into.append(sample(run, arg, args.budget))
                best[call, count] = (min(a), min(b))
    width = max(len(call) for call in table)
    head = f"{'call':<{width}} | " + " | ".join(f"{f'{count:,} tensors':^28}" for count in COUNTS)
    print(head)
    print(f"{'':<{width}} | " + " | ".join(f"{'ours us':>9} {'ref us':>8} {'ratio':>8} " for _ in COUNTS))
    print("-" * len(head))
    for call in table:
        cells = []
        for count in COUNTS:
            ours_s, theirs_s = best[call, count]
            cells.append(f"{ours_s * 1e6:>9.1f} {theirs_s * 1e6:>8.1f} {ours_s / theirs_s:>7.2f}x ")
        print(f"{call:<{width}} | " + " | ".join(cells))
    print(f"best of {args.rounds} samples of {args.budget:g} s per side; ratio: ours / safetensors 0.8.0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
