# Strategy: mlx's C++ safetensors reader, `mx.load(path, return_metadata=True)`
# on the CPU.  Arrays are lazy: reading their bytes evaluates them, which is
# where an out-of-range read happens.  Its errors are ValueError/RuntimeError.
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator


import mlx.core as mx

from validator.conformance.adapter import main, record, tensor_bytes


def load(path: str) -> Iterator[dict[str, object]]:
    arrays, _metadata = mx.load(path, return_metadata=True)
    for name, value in arrays.items():
        yield record(name, value.dtype, value.shape, tensor_bytes(value))


if __name__ == "__main__":
    mx.set_default_device(mx.cpu)
    raise SystemExit(main(load, lambda: str(mx.__version__)))
