"""``safetensors.mlx``, validating: save, save_file, load, load_file for MLX arrays.

Arrays go through numpy as in safetensors 0.8.0, except that bfloat16
works both ways here (through a uint16 view).  MLX has no float8, float6 or
float4 types; loading one raises ``SafetensorError``.
"""

# Strategy: MLX arrays <-> numpy arrays, then validator.compat.numpy.
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from validator.io._extras import needs_extra

with needs_extra("validator.compat.mlx"):  # an error that names the extra, not a bare ModuleNotFoundError
    import ml_dtypes
    import mlx.core as mx  # type: ignore[import-not-found,unused-ignore]
    import numpy as np

    from validator.compat import numpy as _numpy
    from validator.compat._open import safe_open, to_mlx

if TYPE_CHECKING:
    import os

    from validator._rules import Profile

__all__ = ["load", "load_file", "save", "save_file"]


def _array(value: Any) -> np.ndarray:  # noqa: ANN401 - an MLX array
    if isinstance(value, mx.array) and value.dtype == mx.bfloat16:
        return np.array(value.view(mx.uint16)).view(ml_dtypes.bfloat16)
    return np.asarray(value)


def _to_numpy(tensors: dict[str, Any]) -> dict[str, np.ndarray]:
    if not hasattr(tensors, "items"):
        return tensors  # refused with the numpy module's message
    return {name: _array(value) for name, value in tensors.items()}


def save(tensors: dict[str, Any], metadata: dict[str, str] | None = None) -> bytes:
    """The safetensors file of ``tensors`` (MLX arrays) as bytes."""
    return _numpy.save(_to_numpy(tensors), metadata=metadata)


def save_file(
    tensors: dict[str, Any], filename: str | os.PathLike[str], metadata: dict[str, str] | None = None
) -> None:
    """Write ``tensors`` (MLX arrays) to ``filename``, atomically."""
    _numpy.save_file(_to_numpy(tensors), filename, metadata=metadata)


def load(data: bytes, *, profile: Profile | str = "strict") -> dict[str, Any]:
    """Validate a file held in memory and return its tensors as MLX arrays."""
    return {name: to_mlx(array, info) for name, array, info in _numpy.load_items(data, profile)}


def load_file(
    filename: str | os.PathLike[str], *, backend: str = "mmap", profile: Profile | str = "strict"
) -> dict[str, Any]:
    """Validate ``filename`` and load every tensor as an MLX array."""
    with safe_open(filename, framework="mlx", backend=backend, profile=profile) as f:
        return f.get_tensors()
