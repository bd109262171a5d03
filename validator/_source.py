# Strategy: the one way stcheck opens a file it was given by name.  Every
# entry point (validate, open, the index reader, scan) goes through
# open_regular, so none of them can block on a FIFO or a device, and all of
# them refuse what is not a regular file with the same one-line SourceError.
#
# O_NONBLOCK: opening a FIFO for reading waits for a writer; with the flag the
# open returns at once, fstat says what the file is, and anything that is not
# a regular file is refused before the first read.  A regular file is then
# switched back to blocking reads.
from __future__ import annotations

import errno
import os
import stat
from typing import TYPE_CHECKING, Final

from validator._errors import SourceError, source_error

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["RegularFile", "open_regular", "os_error", "read_exact"]

_FLAGS: Final = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def os_error(path: str, exc: OSError) -> SourceError:
    """A SourceError for an OSError met on ``path``, keeping its errno: also
    that errno's own OSError subclass (FileNotFoundError, PermissionError, ...)."""
    err = source_error(f"{path}: {exc.strerror or exc}", exc.errno, path)
    if exc.strerror:
        err.strerror = exc.strerror
    return err


def open_regular(path: str) -> tuple[int, os.stat_result]:
    """Open ``path`` read-only; return (fd, stat) or raise SourceError.

    Never blocks: a FIFO, socket, device or directory is refused by its kind.
    The caller owns the descriptor.
    """
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        raise os_error(path, exc) from exc
    try:
        st = os.fstat(fd)
        regular = stat.S_ISREG(st.st_mode)
        if regular and _FLAGS & getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)
    except OSError as exc:
        os.close(fd)
        raise os_error(path, exc) from exc
    except BaseException:
        os.close(fd)
        raise
    if not regular:
        os.close(fd)
        if stat.S_ISDIR(st.st_mode):  # as open() refuses it: an IsADirectoryError
            raise source_error(f"{path}: not a regular file", errno.EISDIR, path)
        msg = f"{path}: not a regular file"
        raise SourceError(msg)
    return fd, st


class RegularFile:
    """Context manager over open_regular: ``with RegularFile(p) as (fd, st)``."""

    __slots__ = ("_fd", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = -1

    def __enter__(self) -> tuple[int, os.stat_result]:
        self._fd, st = open_regular(self.path)
        return self._fd, st

    def __exit__(self, *exc: object) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read_exact(fd: int, offset: int, n: int) -> bytes:
    """Up to ``n`` bytes at ``offset`` by pread; shorter only at end of file."""
    chunks = list(_preads(fd, offset, n))
    # One read is the rule for a regular file; joining would copy the header.
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _preads(fd: int, offset: int, n: int) -> Iterator[bytes]:
    while n > 0:
        chunk = os.pread(fd, min(n, 1 << 30), offset)
        if not chunk:
            return
        yield chunk
        offset += len(chunk)
        n -= len(chunk)
