"""``safetensors.paddle``, validating: save, save_file, load, load_file.

Tensors must be dense and contiguous, as in safetensors 0.8.0.  paddle has
no uint32, uint64 or float4/float6 types and reads uint16 as bfloat16;
loading such a tensor raises ``SafetensorError`` naming the reason.
"""

# Strategy: paddle tensors are written as raw (dtype, shape, bytes) triples,
# their dtype named by paddle (a bfloat16 tensor's numpy form is uint16, so
# numpy's name would be wrong); loading goes through numpy.
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from validator._errors import WriteError
from validator.compat._errors import SaveValueError, SerializeError, non_contiguous
from validator.compat._open import safe_open, to_paddle
from validator.compat._serialize import DTYPE_CODES, check_metadata, write_items
from validator.io._extras import needs_extra
from validator.io.writer import to_bytes

with needs_extra("validator.compat.paddle"):  # an error that names the extra, not a bare ModuleNotFoundError
    import paddle  # type: ignore[import-not-found,unused-ignore]

    from validator.compat import numpy as _numpy

if TYPE_CHECKING:
    import os

    from validator._rules import Profile

__all__ = ["load", "load_file", "save", "save_file"]


def _triples(tensors: object) -> dict[str, tuple[str, list[int], Any]]:
    if not isinstance(tensors, dict):
        msg = f"Expected a dict of [str, paddle.Tensor] but received {type(tensors)}"
        raise SaveValueError(msg)
    for name, value in tensors.items():
        if not isinstance(value, paddle.Tensor):
            msg = f"Key `{name}` is invalid, expected paddle.Tensor but received {type(value)}"
            raise SaveValueError(msg)
    out = {}
    for name, value in tensors.items():
        if not value.is_contiguous():
            raise SaveValueError(non_contiguous(name))
        dtype = str(value.dtype).split(".")[-1]
        code = DTYPE_CODES.get(dtype)
        if code is None:
            msg = f'Unknown dtype "{dtype}". Supported dtypes: {", ".join(DTYPE_CODES)}'
            raise SerializeError(msg)
        array = value.cpu().numpy() if not value.place.is_cpu_place() else value.numpy()
        out[name] = (code, list(value.shape), array.reshape(-1).view("u1"))
    return out


def save(tensors: dict[str, Any], metadata: dict[str, str] | None = None) -> bytes:
    """The safetensors file of ``tensors`` (paddle tensors) as bytes."""
    triples = _triples(tensors)
    check_metadata(metadata)
    try:
        return to_bytes(triples, metadata, check_shared=False)
    except WriteError as exc:
        raise SerializeError(f"Error while serializing: {exc}") from exc


def save_file(
    tensors: dict[str, Any], filename: str | os.PathLike[str], metadata: dict[str, str] | None = None
) -> None:
    """Write ``tensors`` (paddle tensors) to ``filename``, atomically."""
    triples = _triples(tensors)
    check_metadata(metadata)
    write_items(triples, filename, metadata, check_shared=False)


def load(data: bytes, device: str = "cpu", *, profile: Profile | str = "strict") -> dict[str, Any]:
    """Validate a file held in memory and return its tensors as paddle tensors on ``device``."""
    return {name: to_paddle(array, info, device) for name, array, info in _numpy.load_items(data, profile)}


def load_file(
    filename: str | os.PathLike[str],
    device: str = "cpu",
    *,
    backend: str = "mmap",
    profile: Profile | str = "strict",
) -> dict[str, Any]:
    """Validate ``filename`` and load every tensor as a paddle tensor on ``device``."""
    with safe_open(filename, framework="paddle", device=device, backend=backend, profile=profile) as f:
        return f.get_tensors()
