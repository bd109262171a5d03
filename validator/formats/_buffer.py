# Strategy: the standard library's own readers (tarfile, the decompressors)
# are given the bytes through this seekable view, so a mapped file is never
# copied whole to be read.
from __future__ import annotations

import io
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import mmap

    Buffer = bytes | mmap.mmap

__all__ = ["BufferFile"]


class BufferFile(io.RawIOBase):
    """A read-only seekable file over a buffer (no copy of it)."""

    def __init__(self, buf: Buffer) -> None:
        self._buf = buf
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = (0, self._pos, len(self._buf))[whence]
        if base + offset < 0:
            raise OSError(22, "Invalid argument")  # as a file's seek: tarfile expects an OSError
        self._pos = base + offset
        return self._pos

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]  # any writable buffer
        data = self._buf[self._pos : self._pos + len(b)]
        n = len(data)
        memoryview(b).cast("B")[:n] = data
        self._pos += n
        return n
