# Strategy: the exceptions of the compatibility layer.  Each one is what
# safetensors 0.8.0 raises in the same place (its SafetensorError, or a
# builtin such as FileNotFoundError or ValueError) and, at the same time, a
# member of stcheck's own hierarchy, so `except SafetensorError` and
# `except validator.StcheckError` both keep working.
#
# SafetensorError is the installed safetensors' own class when that package
# can be imported, so an `except safetensors.SafetensorError` written for the
# reference catches our errors too.  Without safetensors (or while a shim
# named `safetensors` maps onto this package) a stand-in class of the same
# name is defined here.
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from validator._errors import (
    DeviceError,
    InvalidFileError,
    LoadError,
    SourceError,
    StcheckError,
    TensorNotFoundError,
    WriteError,
    headline,
)
from validator._findings import REFERENCE_LOADS
from validator._rules import REFERENCE_MESSAGES, Profile

if TYPE_CHECKING:
    from validator._findings import Report

    class SafetensorError(Exception):
        """safetensors' exception class (or a stand-in of that name)."""

else:

    def _safetensor_error() -> type[Exception]:
        try:
            from safetensors import SafetensorError as found  # noqa: N813, PLC0415 - optional, and a local name
        except ImportError:  # not installed, or a shim that maps back onto us
            found = None
        if isinstance(found, type) and issubclass(found, Exception):
            return found
        doc = "Stand-in for safetensors' SafetensorError (safetensors is not installed)."
        return type("SafetensorError", (Exception,), {"__module__": __name__, "__doc__": doc})

    SafetensorError = _safetensor_error()

__all__ = [
    "REFERENCE_IS_INSTALLED",
    "CompatDeviceError",
    "CompatError",
    "CompatLoadError",
    "DeviceValueError",
    "FileMissingError",
    "HeaderError",
    "MissingTensorError",
    "SaveRuntimeError",
    "SaveTypeError",
    "SaveValueError",
    "SerializeError",
    "as_u64",
    "invalid_file",
    "non_contiguous",
]

REFERENCE_IS_INSTALLED: Final = SafetensorError.__module__ != __name__


class _Picklable:
    """Rebuild from the message alone (the reference's error pickles this way)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self),))


class CompatError(_Picklable, SafetensorError, StcheckError):
    """A SafetensorError of the compatibility layer that fits no narrower class."""


class HeaderError(_Picklable, SafetensorError, InvalidFileError):
    """A file failed validation (``report`` holds the findings, when known)."""

    def __init__(self, message: str, report: Report | None = None) -> None:
        Exception.__init__(self, message)
        self.report = report  # type: ignore[assignment]  # None after unpickling


class CompatLoadError(_Picklable, SafetensorError, LoadError):
    """A valid file could not be loaded as asked (a closed file, a bad slice)."""


class MissingTensorError(_Picklable, SafetensorError, TensorNotFoundError):
    """The file holds no tensor of the asked name (also a ``KeyError``)."""

    __str__ = BaseException.__str__


class CompatDeviceError(_Picklable, SafetensorError, DeviceError):
    """A device name safetensors refuses too."""


class SerializeError(_Picklable, SafetensorError, WriteError):
    """Tensors could not be serialised."""


class FileMissingError(_Picklable, SourceError, FileNotFoundError):
    """The file could not be opened (the reference says FileNotFoundError)."""


class SaveValueError(_Picklable, WriteError, ValueError):
    """A save the reference refuses with ValueError (sparse, non-contiguous, not a tensor)."""


class SaveRuntimeError(_Picklable, WriteError, RuntimeError):
    """A save the reference refuses with RuntimeError (tensors sharing memory)."""


class SaveTypeError(_Picklable, WriteError, TypeError):
    """An argument of a type the reference refuses with TypeError."""


class DeviceValueError(_Picklable, DeviceError, ValueError):
    """A device index that is not a number (the reference says ValueError)."""


# Rust error class -> the phrase its Display text starts with.
_PHRASES: Final = {cls: phrase for phrase, cls in REFERENCE_MESSAGES}


def invalid_file(report: Report, context: str) -> HeaderError:
    """The error for a file that failed validation, worded as the reference's.

    ``context`` is the reference's prefix: "Error while deserializing header"
    (safe_open) or "Error while deserializing" (deserialize).  When only the
    strict profile refuses the file, the message says that safetensors 0.8.0
    loads it (validator._findings.REFERENCE_LOADS) and how to accept it.
    """
    where = report.path or "<bytes>"
    errors = report.errors
    shared = [f for f in errors if f.rule.applies_to(Profile.REFERENCE)]
    if shared:
        first = shared[0]
        phrase = _PHRASES.get(report.reference_error or "", "invalid file")
        # The reference's phrase, with what the file really is when it is not
        # safetensors at all (a pickle, an LFS pointer).
        shown = headline(shared) or first
        message = f"{context}: {phrase} ({shown.format(where)})"
    else:
        first = errors[0]
        message = (
            f"{context}: stcheck's strict profile refuses this file ({REFERENCE_LOADS}): "
            f'{first.format(where)}; pass profile="reference" to load what 0.8.0 loads'
        )
    more = len(errors) - 1
    if more:
        message += f" (and {more} more)"
    return HeaderError(message, report)


def as_u64(number: int) -> int:
    """``number`` as an unsigned 64-bit integer, or the OverflowError the
    reference's binding raises converting it."""
    if number < 0:
        msg = "can't convert negative int to unsigned"
        raise OverflowError(msg)
    if number >= 1 << 64:
        msg = "int too big to convert"
        raise OverflowError(msg)
    return number


def non_contiguous(name: str) -> str:
    """The reference's message for a non-contiguous tensor given to save."""
    return (
        f"You are trying to save a non contiguous tensor: `{name}` which is not allowed. It either means you"
        " are trying to save tensors which are reference of each other in which case it's recommended to save"
        " only the full tensors, and reslice at load time, or simply call `.contiguous()` on your tensor to"
        " pack it before saving."
    )
