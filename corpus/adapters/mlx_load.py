# Strategy: mlx's C++ safetensors reader, `mx.load(path, return_metadata=True)`
# on the CPU.  Arrays are lazy: reading their bytes evaluates them, which is
# where an out-of-range read happens.  Its errors are ValueError/RuntimeError:
# mlx reports a file it refuses as a RuntimeError ("[load_safetensors] ..."),
# so RuntimeError is named as its documented rejection (see the one
# reject-or-crash rule in validator/conformance/adapter.py).
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator


import mlx.core as mx

from validator.conformance.adapter import is_rejection, main, record, tensor_bytes


def load(path: str) -> Iterator[dict[str, object]]:
    arrays, _metadata = mx.load(path, return_metadata=True)
    for name, value in arrays.items():
        yield record(name, value.dtype, value.shape, tensor_bytes(value))


if __name__ == "__main__":
    mx.set_default_device(mx.cpu)
    raise SystemExit(main(load, lambda: str(mx.__version__), lambda exc: is_rejection(exc, (RuntimeError,))))
