# Strategy: joblib.load's first step (joblib/numpy_pickle.py
# _read_fileobject, _detect_compressor; joblib/compressor.py's table): the
# file's first bytes pick a compressor, whose output is the pickle.
#   "ZF"         joblib < 0.10 (numpy_pickle_compat.read_zfile): "ZF", the
#                decompressed length as 19 characters of hex (int(..., 16)),
#                an optional space, then one zlib stream
#   "x"          zlib          "\x1f\x8b"  gzip      "BZh"  bz2
#   "]\x00\x00"  lzma (alone)  "\xfd7zXZ"  xz        "\x04\x22\x4d\x18"  lz4
# Anything else is a plain pickle from byte 0.  Streams are read as joblib's
# file objects read them: bz2, xz and lzma (the standard library's BZ2File
# and LZMAFile) one after another, bytes after the last ignored; zlib and
# gzip (joblib's own BinaryZlibFile) one stream only: past its end joblib
# reads nothing more (it spins on trailing bytes, never decompressing them).
# lz4 is not in the standard library: such a file is an ArchiveError (joblib
# unpickles it where the lz4 package is installed; stcheck cannot read it).
from __future__ import annotations

import bz2
import lzma
import zlib
from typing import TYPE_CHECKING, Final

from validator.formats._errors import ArchiveError
from validator.formats._inflate import ERRORS, Decoder, inflate

if TYPE_CHECKING:
    import mmap
    from collections.abc import Callable

    Buffer = bytes | mmap.mmap

__all__ = ["COMPRESSED", "DECODERS", "MAX_INFLATE", "ZFILE", "compression", "decompress"]

MAX_INFLATE: Final = 256 << 20  # the decompressed output of one file
ZFILE: Final = b"ZF"
_ZFILE_LENGTH: Final = 19  # len(hex(2**64)), joblib's _MAX_LEN
COMPRESSED: Final = (
    (b"x", "zlib"),
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"]\x00\x00", "lzma"),
    (b"\xfd7zXZ", "xz"),
    (b"\x04\x22\x4d\x18", "lz4"),
)
DECODERS: Final[dict[str, Callable[[], Decoder]]] = {
    "zlib": lambda: Decoder(zlib.decompressobj(zlib.MAX_WBITS)),
    "gzip": lambda: Decoder(zlib.decompressobj(zlib.MAX_WBITS | 16)),
    "bz2": lambda: Decoder(bz2.BZ2Decompressor()),
    "lzma": lambda: Decoder(lzma.LZMADecompressor()),
    "xz": lambda: Decoder(lzma.LZMADecompressor()),
}


_MULTI: Final = frozenset({"bz2", "lzma", "xz"})


def compression(head: bytes) -> str | None:
    """The compressor joblib.load picks for a file starting with ``head``: a name of COMPRESSED, "ZF", or None."""
    if head.startswith(ZFILE):
        return "ZF"
    for magic, name in COMPRESSED:
        if head.startswith(magic):
            return name
    return None


def decompress(buf: Buffer, method: str) -> bytes | None:
    """What joblib unpickles from a file compressed with ``method``, or None
    when the first stream is not valid (joblib.load raises before unpickling).

    Raises ArchiveError when stcheck cannot follow it (lz4, over MAX_INFLATE).
    """
    if method == "ZF":
        return _zfile(buf)
    new = DECODERS.get(method)
    if new is None:
        raise ArchiveError(f"compressed with {method}, not read (the standard library has no {method})")
    try:
        out, _ = inflate(new, buf, 0, len(buf), MAX_INFLATE, multi=method in _MULTI)
    except ERRORS:
        return None
    if len(out) > MAX_INFLATE:
        raise ArchiveError(f"compressed with {method}: decompresses to over {MAX_INFLATE >> 20} MiB, not read")
    return out


def _zfile(buf: Buffer) -> bytes | None:
    head = bytes(buf[: len(ZFILE) + _ZFILE_LENGTH + 1])
    try:
        length = int(head[len(ZFILE) : len(ZFILE) + _ZFILE_LENGTH], 16)
    except ValueError:
        return None
    start = len(ZFILE) + _ZFILE_LENGTH + (head[-1:] == b" ")
    try:
        out, ended = inflate(DECODERS["zlib"], buf, start, len(buf), MAX_INFLATE)
    except ERRORS:
        return None
    if len(out) > MAX_INFLATE:
        raise ArchiveError(f"compressed with ZF: decompresses to over {MAX_INFLATE >> 20} MiB, not read")
    # zlib.decompress, whole, before unpickling: a cut stream raises first.
    # joblib then asserts the length (gone under python -O): not relied on.
    return out if ended and length >= 0 else None
