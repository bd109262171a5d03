# Strategy: one bounded decompression loop for every compressed thing a
# loader reads: zip members (raw deflate, bzip2, raw LZMA) and joblib's
# whole-file wrappers (zlib, gzip, bz2, xz, lzma).  The input is read in
# CHUNK slices of the buffer (a mapped file is never copied whole), and the
# output stops one byte past ``limit``, so a bomb costs at most limit bytes.
# ``multi``: after the end of one stream the next one starts, as joblib's
# file objects (and bz2/lzma's) read concatenated streams; bytes after the
# last stream that do not start a new one are ignored, as they ignore them.
from __future__ import annotations

import bz2
import lzma
import zlib
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import mmap
    from collections.abc import Callable

    Buffer = bytes | mmap.mmap

__all__ = ["CHUNK", "ERRORS", "Decoder", "inflate"]

CHUNK: Final = 1 << 20
ERRORS: Final = (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError)


class Decoder:
    """zlib's, bz2's and lzma's decompressors behind one interface."""

    def __init__(self, inner: zlib._Decompress | bz2.BZ2Decompressor | lzma.LZMADecompressor) -> None:
        self._inner = inner
        self._tail = b""  # zlib keeps what max_length held back outside the object

    @property
    def hungry(self) -> bool:
        inner = self._inner
        if isinstance(inner, (bz2.BZ2Decompressor, lzma.LZMADecompressor)):
            return inner.needs_input
        return not self._tail

    @property
    def eof(self) -> bool:
        return self._inner.eof

    @property
    def unused(self) -> bytes:
        return self._inner.unused_data

    def feed(self, data: bytes, room: int) -> bytes:
        inner = self._inner
        if isinstance(inner, (bz2.BZ2Decompressor, lzma.LZMADecompressor)):
            return inner.decompress(data, room)
        out = inner.decompress(self._tail + data, room)
        self._tail = inner.unconsumed_tail
        return out


def inflate(
    new: Callable[[], Decoder], buf: Buffer, start: int, end: int, limit: int, *, multi: bool = False
) -> tuple[bytes, bool]:
    """Decompress ``buf[start:end]``: (at most limit + 1 bytes, whether the last stream ended).

    Raises one of ERRORS when the first stream is not valid.
    """
    dec = new()
    out = bytearray()
    at = start
    first = True
    while len(out) <= limit:
        data = b""
        if dec.eof:
            rest = dec.unused
            if not multi or (not rest and at >= end):
                return bytes(out), True
            dec, first = new(), False
            data = rest
        elif dec.hungry:
            if at >= end:
                return bytes(out), False  # truncated
            data = bytes(buf[at : min(end, at + CHUNK)])
            at += len(data)
        try:
            out += dec.feed(data, limit + 1 - len(out))
        except ERRORS:
            if first:
                raise
            return bytes(out), True  # junk after the last stream: the loaders stop there too
    return bytes(out), False
