"""stcheck: a strict validator for safetensors files.

>>> import validator
>>> report = validator.validate(b"\\x02\\x00\\x00\\x00\\x00\\x00\\x00\\x00{}")
>>> report.valid, report.tensors
(True, {})
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from validator._dtypes import DTYPE_BITS, DTYPES
from validator._errors import (
    DeviceError,
    InvalidFileError,
    InvalidIndexError,
    LoadError,
    SourceError,
    StcheckError,
    WriteError,
    WriteIOError,
)
from validator._findings import Finding, Report, TensorInfo
from validator._rules import REFERENCE_ERRORS, RULES, Profile, Rule, Severity, rule
from validator._validate import ensure_valid, is_valid, validate
from validator._version import __version__

if TYPE_CHECKING:  # the lazy exports below, typed for users' type checkers
    from validator.io._extras import MissingExtraError
    from validator.io.index import open_index, validate_index
    from validator.io.loader import open_file as open  # noqa: A004 - `validator.open` is the public name
    from validator.io.writer import save
    from validator.pipeline.vet import VetError, VetOptions, Vetted, vet


__all__ = [
    "DTYPES",
    "DTYPE_BITS",
    "REFERENCE_ERRORS",
    "RULES",
    "DeviceError",
    "Finding",
    "InvalidFileError",
    "InvalidIndexError",
    "LoadError",
    "MissingExtraError",
    "Profile",
    "Report",
    "Rule",
    "Severity",
    "SourceError",
    "StcheckError",
    "TensorInfo",
    "VetError",
    "VetOptions",
    "Vetted",
    "WriteError",
    "WriteIOError",
    "__version__",
    "ensure_valid",
    "is_valid",
    "open",
    "open_index",
    "rule",
    "save",
    "validate",
    "validate_index",
    "vet",
]

# The loader, writer and index checker import numpy/torch when used, and
# vet() (the run `stcheck scan` makes) its worker pool; they are imported on
# first attribute access so that `import validator` stays light
# (type checkers see them through the TYPE_CHECKING imports above).
_LAZY = {
    "open": ("validator.io.loader", "open_file"),
    "save": ("validator.io.writer", "save"),
    "open_index": ("validator.io.index", "open_index"),
    "validate_index": ("validator.io.index", "validate_index"),
    "vet": ("validator.pipeline.vet", "vet"),
    "VetOptions": ("validator.pipeline.vet", "VetOptions"),
    "Vetted": ("validator.pipeline.vet", "Vetted"),
    "VetError": ("validator.pipeline.vet", "VetError"),
    "MissingExtraError": ("validator.io._extras", "MissingExtraError"),
}


def __getattr__(name: str) -> object:
    target = _LAZY.get(name)
    if target is None:
        msg = f"module 'validator' has no attribute {name!r}"
        raise AttributeError(msg)
    from importlib import import_module  # noqa: PLC0415 - only when a lazy name is used

    value = getattr(import_module(target[0]), target[1])
    globals()[name] = value
    return value
