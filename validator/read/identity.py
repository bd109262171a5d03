# Strategy: which bytes a verdict is about, for the results cache.  A path
# is only a name: a `current -> vN` link can flip, a folder can be swapped,
# a file can be replaced or rewritten while it is read, so a verdict is
# tied to the bytes that were read, never to the name.
#   - A Stamp is taken by fstat of the descriptor that is read, at open, and
#     again when the read is done: a file whose stamp moved meanwhile was
#     rewritten under the scan, and its verdict is not stored.  The cache
#     stores a verdict only when the path's stat before the scan, the
#     descriptor's stamp and the path's stat after the scan all agree.
#   - The prefix and header are hashed as validation reads them (one span,
#     [0, 8 + k): the prefix, then the N header bytes or the bytes sniffed
#     for a foreign format), and a cache hit re-reads that span and compares
#     it byte for byte (by sha256).  A write through a shared mmap can leave
#     mtime and ctime alone (the kernel updates them only when a clean page
#     is first written), so the stat alone does not prove the header is the
#     one judged; the digest does.  The data region is not re-read on a hit.
from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING

from validator._errors import SourceError
from validator._rules import PREFIX_LEN
from validator._source import open_regular, read_exact
from validator._validate import check_buffer

if TYPE_CHECKING:
    from validator._findings import Report
    from validator._rules import Profile

__all__ = ["SeenHeader", "Stamp", "same_file", "stamp_of", "still_judged", "validate_fd"]

Stamp = tuple[int, int, int, int, int]  # size, mtime_ns, ctime_ns, inode, device


def stamp_of(st: os.stat_result) -> Stamp:
    """The stamp of a stat or fstat result."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def same_file(a: Stamp, b: Stamp, *, device: bool = True) -> bool:
    """Whether two stamps name the same, unchanged bytes.  ``device=False``
    for stamps taken on different machines (an NFS mount's device number
    differs from client to client; size, times and inode do not)."""
    return a[:4] == b[:4] and (not device or a[4] == b[4])


class SeenHeader:
    """The span validation read, [0, span), and its sha256."""

    __slots__ = ("sha256", "span")

    def __init__(self) -> None:
        self.span = 0
        self.sha256: str | None = None


def validate_fd(fd: int, size: int, profile: Profile, seen: SeenHeader, where: str) -> Report:
    """Validate the open file ``fd`` of ``size`` bytes as `validate` does,
    recording in ``seen`` the span it read and that span's sha256; ``where``
    names the file in errors."""
    prefix = read_exact(fd, 0, min(PREFIX_LEN, size))
    seen.span = len(prefix)
    seen.sha256 = hashlib.sha256(prefix).hexdigest()

    def read_header(n: int) -> bytes:
        # Every read after the prefix starts at byte 8 (the header, or the
        # bytes sniffed for another format): the longest one is the span.
        header = read_exact(fd, PREFIX_LEN, n)
        if len(header) != n:
            msg = f"{where}: file shrank while it was being read"
            raise SourceError(msg)
        if PREFIX_LEN + n > seen.span:
            seen.span = PREFIX_LEN + n
            seen.sha256 = hashlib.sha256(prefix + header).hexdigest()
        return header

    return check_buffer(prefix, read_header, size, profile)


def still_judged(path: str, stamp: Stamp, span: int, sha256: str | None) -> bool:
    """Whether ``path`` still names the file of ``stamp`` and its first
    ``span`` bytes still have the digest ``sha256`` (one bounded read)."""
    try:
        fd, st = open_regular(path)
    except (OSError, SourceError):
        return False
    try:
        if not same_file(stamp_of(st), stamp):
            return False
        if span == 0:
            return True
        return sha256 is not None and hashlib.sha256(read_exact(fd, 0, span)).hexdigest() == sha256
    except OSError:
        return False
    finally:
        os.close(fd)
