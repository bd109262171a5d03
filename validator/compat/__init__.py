"""A validating drop-in for the safetensors API.

Switching takes one changed import::

    from validator.compat.torch import load_file, save_file   # was: safetensors.torch
    from validator.compat import safe_open                    # was: safetensors

The names, signatures, return types and exceptions are those of
safetensors 0.8.0.  Every load validates the file first, under stcheck's
``strict`` profile unless ``profile="reference"`` is passed; a refused file
raises ``SafetensorError`` that is also a ``validator.InvalidFileError``.
``SafetensorError`` is safetensors' own class when safetensors is installed,
else a stand-in of the same name.  The README's "Switching from
safetensors" lists every difference that remains.
"""

from __future__ import annotations

from validator.compat._errors import SafetensorError
from validator.compat._open import _safe_open_handle, safe_open
from validator.compat._serialize import TensorSpec, deserialize, serialize, serialize_file

__version__ = "0.8.0"
"""The safetensors API version this module follows."""

__all__ = [
    "SafetensorError",
    "TensorSpec",
    "__version__",
    "_safe_open_handle",
    "deserialize",
    "safe_open",
    "serialize",
    "serialize_file",
]
