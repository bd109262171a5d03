"""``safetensors.flax``, validating: save, save_file, load, load_file for JAX arrays.

As in safetensors 0.8.0, arrays go through numpy: 64-bit types become
32-bit unless ``jax_enable_x64`` is set (JAX warns), and XLA has no float6
types.  Unlike the reference, ``save`` leaves the caller's dict unchanged.
"""

# Strategy: JAX arrays <-> numpy arrays, then validator.compat.numpy.
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from validator.io._extras import needs_extra

with needs_extra("validator.compat.flax"):  # an error that names the extra, not a bare ModuleNotFoundError
    import numpy as np

    from validator.compat import numpy as _numpy
    from validator.compat._open import safe_open, to_jax

if TYPE_CHECKING:
    import os

    from validator._rules import Profile

__all__ = ["load", "load_file", "save", "save_file"]


def _to_numpy(tensors: dict[str, Any]) -> dict[str, np.ndarray]:
    if not hasattr(tensors, "items"):
        return tensors  # refused with the numpy module's message
    return {name: np.asarray(value) for name, value in tensors.items()}


def save(tensors: dict[str, Any], metadata: dict[str, str] | None = None) -> bytes:
    """The safetensors file of ``tensors`` (JAX arrays) as bytes."""
    return _numpy.save(_to_numpy(tensors), metadata=metadata)


def save_file(
    tensors: dict[str, Any], filename: str | os.PathLike[str], metadata: dict[str, str] | None = None
) -> None:
    """Write ``tensors`` (JAX arrays) to ``filename``, atomically."""
    _numpy.save_file(_to_numpy(tensors), filename, metadata=metadata)


def load(data: bytes, *, profile: Profile | str = "strict") -> dict[str, Any]:
    """Validate a file held in memory and return its tensors as JAX arrays."""
    return {name: to_jax(array, info) for name, array, info in _numpy.load_items(data, profile)}


def load_file(
    filename: str | os.PathLike[str], *, backend: str = "mmap", profile: Profile | str = "strict"
) -> dict[str, Any]:
    """Validate ``filename`` and load every tensor as a JAX array."""
    with safe_open(filename, framework="flax", backend=backend, profile=profile) as f:
        return f.get_tensors()
