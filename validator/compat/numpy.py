"""``safetensors.numpy``, validating: save, save_file, load, load_file.

Arrays come back writable and the caller's own, as safetensors' copies do;
``load_file`` reads small tensors straight into them and gives large ones
without copying (a copy-on-write mapping of the file).  Dtypes numpy lacks load as ml_dtypes
types (BF16, the float8 types); F4 and F6 load as one ml_dtypes element per
byte.  Every load validates first; pass ``profile="reference"`` to load what
safetensors 0.8.0 loads.
"""

# Strategy: thin wrappers.  Saving goes through stcheck's writer (bytes equal
# to safetensors'), loading through compat.safe_open (files) or one copy of
# the data region (bytes), viewed per tensor.
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from validator._errors import WriteError
from validator._findings import TensorInfo
from validator.compat._errors import CompatLoadError, SaveTypeError, SerializeError
from validator.compat._open import safe_open
from validator.compat._serialize import check_metadata, copied, write_items
from validator.io._extras import needs_extra
from validator.io._mapping import ELEMENT_BYTES, gc_paused
from validator.io.dtypes_np import numpy_dtype, safetensors_dtype
from validator.io.subbyte import unpack_subbyte
from validator.io.writer import to_bytes

if TYPE_CHECKING:
    import os

    from validator._rules import Profile
    from validator.io._mapping import Row

__all__ = ["load", "load_file", "save", "save_file"]

with needs_extra("validator.compat.numpy"):  # an error that names the extra, not a bare ModuleNotFoundError
    import numpy as np

    safetensors_dtype(np.dtype(np.float32))  # builds the dtype table (ml_dtypes included) at import, not at first save
_DTYPES: Final = {name: numpy_dtype(name) for name, size in ELEMENT_BYTES.items() if size}


def _arrays(tensor_dict: object) -> dict[str, Any]:
    if not hasattr(tensor_dict, "items"):
        msg = f"expected a dict of str to numpy arrays, not {type(tensor_dict).__name__}"
        raise SaveTypeError(msg)
    for name, value in tensor_dict.items():
        if not isinstance(value, np.ndarray):
            msg = f"tensor {name!r}: expected a numpy array, not {type(value).__name__}"
            raise SaveTypeError(msg)
    return dict(tensor_dict.items())


def save(tensor_dict: dict[str, np.ndarray], metadata: dict[str, str] | None = None) -> bytes:
    """The safetensors file of ``tensor_dict`` as bytes.

    Big-endian arrays are written little-endian; non-contiguous arrays are
    written as their values (safetensors 0.8.0 writes the wrong bytes).  The
    same array may appear under several names, each written in full.
    """
    arrays = _arrays(tensor_dict)
    check_metadata(metadata)
    try:
        return to_bytes(arrays, metadata, check_shared=False)
    except WriteError as exc:
        raise SerializeError(f"Error while serializing: {exc}") from exc


def save_file(
    tensor_dict: dict[str, np.ndarray],
    filename: str | os.PathLike[str],
    metadata: dict[str, str] | None = None,
) -> None:
    """Write ``tensor_dict`` to ``filename`` as a safetensors file, atomically."""
    arrays = _arrays(tensor_dict)
    check_metadata(metadata)
    write_items(arrays, filename, metadata, check_shared=False)


def load(data: bytes, *, profile: Profile | str = "strict") -> dict[str, np.ndarray]:
    """Validate a file held in memory and return its arrays (writable, one copy in all)."""
    with gc_paused():
        return dict(_items(*copied(data, profile)))


def load_items(data: bytes, profile: Profile | str) -> list[tuple[str, np.ndarray, TensorInfo]]:
    """Validate an in-memory file; (name, array, header entry) for each tensor, in file order."""
    with gc_paused():
        batch, buffer = copied(data, profile)
        arrays = _items(batch, buffer)
        return [
            (name, array, TensorInfo(row[1], row[2], (row[3], row[4])))
            for (name, array), row in zip(arrays, batch, strict=True)
        ]


def _items(batch: list[Row], buffer: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """(name, array) of each row: a view of ``buffer`` where the tensor is aligned in it."""
    frombuffer, out = np.frombuffer, []
    for name, dtype, shape, begin, end in batch:
        size = ELEMENT_BYTES[dtype]
        if size and end > begin and not begin % size:
            array = frombuffer(buffer, _DTYPES[dtype], (end - begin) // size, begin).reshape(shape)
        else:
            array = _array(name, buffer, TensorInfo(dtype, shape, (begin, end)))
        out.append((name, array))
    return out


def _array(name: str, buffer: np.ndarray, info: TensorInfo) -> np.ndarray:
    raw = buffer[info.begin : info.end]
    if info.bits % 8:
        return unpack_subbyte(raw, info.dtype, info.numel).reshape(info.shape)  # type: ignore[no-any-return]
    dtype = numpy_dtype(info.dtype)
    if info.numel == 0:
        try:
            return np.empty(info.shape, dtype)
        except (ValueError, OverflowError):
            msg = f"tensor {name!r} is empty but its shape {list(info.shape)} is too large for a numpy array"
            raise CompatLoadError(msg) from None
    return raw.copy().view(dtype).reshape(info.shape)  # misaligned: an aligned copy


def load_file(
    filename: str | os.PathLike[str],
    *,
    backend: str = "mmap",
    profile: Profile | str = "strict",
) -> dict[str, np.ndarray]:
    """Validate and load every tensor of ``filename`` as numpy arrays, without copying."""
    with safe_open(filename, framework="np", backend=backend, profile=profile) as f:
        return f.get_tensors()
