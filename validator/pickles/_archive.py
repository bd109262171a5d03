# Strategy: the containers are validator.formats' business (the loaders'
# dispatch, the one ZIP reader, .npy, tar, the compressed forms); this is
# the entry point the public boundary calls, kept so that it is one call.
from __future__ import annotations

from typing import TYPE_CHECKING

from validator.formats._errors import ArchiveError

if TYPE_CHECKING:
    import mmap

    from validator.pickles._ops import Reader
    from validator.pickles._verdict import Container

    Buffer = bytes | mmap.mmap

__all__ = ["ArchiveError", "read"]


def read(buf: Buffer, reader: Reader, *, named: bool = True) -> Container:
    """Read every pickle stream a loader would unpickle in ``buf`` into ``reader``;
    return the container's kind.  Raises ReadError (a stream) or ArchiveError
    (the container)."""
    from validator.formats._dispatch import read as dispatch  # noqa: PLC0415 - formats imports this package

    return dispatch(buf, reader, named=named)
