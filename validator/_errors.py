# Strategy: one small exception hierarchy.  Every exception the package lets
# escape derives from StcheckError; bad input bytes never raise, they produce
# findings.  Only the caller's own mistakes (a bad argument) and I/O failures
# raise, plus the explicit raising entry points.
from __future__ import annotations

import os
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from validator._findings import Finding, Report, ReportBase

__all__ = [
    "DeviceError",
    "InvalidFileError",
    "InvalidIndexError",
    "LoadError",
    "RemoteError",
    "SourceError",
    "SourceInterruptedError",
    "SourceIsADirectoryError",
    "SourceNotADirectoryError",
    "SourceNotFoundError",
    "SourcePermissionError",
    "SourceTimeoutError",
    "StcheckError",
    "TensorNotFoundError",
    "WriteError",
    "WriteIOError",
    "headline",
    "source_error",
]


class StcheckError(Exception):
    """Base class of every exception stcheck raises on purpose."""


class SourceError(StcheckError, OSError):
    """The source could not be read: a missing file, a permission error, a
    directory or other special file, or an object that is neither a path,
    bytes nor a binary file.  It is an ``OSError``: ``errno`` is set when an
    operating-system error caused it, and then it is also that errno's own
    ``OSError`` subclass, as ``open()`` raises (``FileNotFoundError``,
    ``PermissionError``, ``IsADirectoryError``, ``NotADirectoryError``,
    ``TimeoutError``, ``InterruptedError``)."""

    # The message as given: OSError would render "[Errno 2] None: 'path'"
    # once errno and filename are set without a strerror.
    __str__ = Exception.__str__

    def __reduce__(self) -> tuple[object, ...]:
        # OSError pickles its errno only through its arguments; ours is the message.
        return (_rebuild, (type(self), str(self), self.errno, self.strerror, self.filename), self.__dict__ or None)


def _rebuild(kind: type[SourceError], message: str, code: int | None, text: str | None, name: object) -> SourceError:
    err = kind(message)
    err.errno, err.strerror, err.filename = code, text, name
    return err


# The OSError subclasses that open() raises for an errno, each also a
# SourceError, so `except FileNotFoundError` and `except StcheckError` both
# catch what validate() raises for a missing file.  Other errnos give a plain
# SourceError (its ``errno`` still set).
class SourceNotFoundError(SourceError, FileNotFoundError):
    """The source does not exist (ENOENT)."""


class SourcePermissionError(SourceError, PermissionError):
    """The source may not be read (EACCES, EPERM)."""


class SourceIsADirectoryError(SourceError, IsADirectoryError):
    """The source is a directory (EISDIR)."""


class SourceNotADirectoryError(SourceError, NotADirectoryError):
    """A component of the source's path is not a directory (ENOTDIR)."""


class SourceTimeoutError(SourceError, TimeoutError):
    """Reading the source timed out (ETIMEDOUT, as a network file system reports it)."""


class SourceInterruptedError(SourceError, InterruptedError):
    """A signal interrupted the read (EINTR)."""


_BY_KIND: Final[Mapping[type[OSError], type[SourceError]]] = MappingProxyType(
    {
        FileNotFoundError: SourceNotFoundError,
        PermissionError: SourcePermissionError,
        IsADirectoryError: SourceIsADirectoryError,
        NotADirectoryError: SourceNotADirectoryError,
        TimeoutError: SourceTimeoutError,
        InterruptedError: SourceInterruptedError,
    }
)


def source_error(message: str, code: int | None = None, filename: str | None = None) -> SourceError:
    """A SourceError for ``message``; for an errno, also that errno's own
    OSError subclass (FileNotFoundError for ENOENT), as ``open()`` raises."""
    kind = SourceError
    if code is not None:
        kind = _BY_KIND.get(type(OSError(code, "")), SourceError)
    err = kind(message)
    if code is not None:
        err.errno, err.strerror = code, os.strerror(code)
    err.filename = filename
    return err


class RemoteError(SourceError):
    """A remote source could not be read: a network error, an HTTP error
    status, a timeout, or a server whose answers contradict themselves.  The
    message names the URL and the reason; ``status`` is the HTTP status when
    one caused it."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class InvalidFileError(StcheckError):
    """A file failed validation; ``report`` holds the findings."""

    def __init__(self, report: Report) -> None:
        self.report = report
        super().__init__(_summary("invalid safetensors file", report))


class LoadError(StcheckError):
    """A valid file could not be loaded as asked: an unknown tensor name, a
    dtype the chosen framework lacks, or a slice of a packed sub-byte tensor."""


class TensorNotFoundError(LoadError, KeyError):
    """No tensor of the asked name; also a ``KeyError``, as a mapping lookup is."""

    __str__ = BaseException.__str__  # KeyError would quote the message


class DeviceError(LoadError):
    """A device is unknown or unavailable, or cannot hold a tensor's dtype."""


class WriteError(StcheckError):
    """Tensors could not be saved: an unsupported dtype, a bad name, tensors
    that share storage, or an I/O failure (then a ``WriteIOError``)."""


class WriteIOError(WriteError, OSError):
    """The file could not be written (no space, no permission, a missing
    directory).  It is an ``OSError``: ``errno`` is that of the failure."""

    __str__ = Exception.__str__  # the message as given, as SourceError's

    def __init__(self, message: str, cause: OSError) -> None:
        super().__init__(message)
        self.errno = cause.errno
        self.strerror = cause.strerror


class InvalidIndexError(StcheckError):
    """A sharded checkpoint's index failed validation; ``report`` holds the findings."""

    def __init__(self, report: ReportBase[Finding]) -> None:
        self.report = report  # a validator.io.index.IndexReport
        super().__init__(_summary("invalid sharded checkpoint", report))


def _summary(what: str, report: ReportBase[Finding]) -> str:
    """``what: path:offset: CODE slug message (and N more)``."""
    where = report.path or "<bytes>"
    first = headline(report.errors)
    detail = first.format(where) if first is not None else where
    count = len(report.errors)
    more = f" (and {count - 1} more)" if count > 1 else ""
    return f"{what}: {detail}{more}"


def headline(errors: Sequence[Finding]) -> Finding | None:
    """The error an exception message leads with: what the file really is
    (a pickle, an LFS pointer: the ``format`` rules) when it is not a
    safetensors file at all, else the first error."""
    for finding in errors:
        if finding.rule.region == "format":
            return finding
    return errors[0] if errors else None
