# Strategy: tell the pickle-bearing containers apart from their first bytes,
# whatever the file's name.  Each test is a signature at a fixed place:
#   zip       "PK\x03\x04" (a member) or "PK\x05\x06" (empty); npz when the
#             first member's name ends in ".npy", else a torch.save archive
#   npy       "\x93NUMPY"
#   tar       "ustar" at byte 257 (POSIX and GNU headers): the legacy
#             torch.save tar form (torch < 0.4)
#   legacy    PROTO 2, LONG1 of 10 bytes, torch's MAGIC_NUMBER: torch.save's
#             legacy stream (_use_new_zipfile_serialization=False)
#   joblib    a compressor's magic (joblib.dump(compress=...)) over a pickle,
#             or a pickle that names joblib.numpy_pickle early
#   pickle    PROTO 2-5; or, for protocols 0 and 1 (no PROTO opcode), a
#             prefix that reads as opcodes without error
from __future__ import annotations

import bz2
import lzma
import struct
import zlib
from typing import Final

from validator.pickles._ops import HIGHEST_PROTOCOL, MAGIC, Reader, ReadError

LEGACY_HEAD: Final = b"\x80\x02\x8a\x0a" + MAGIC.to_bytes(10, "little")
SNIFF_HEAD: Final = 4096
# joblib/compressor.py's prefixes: zlib, gzip, bz2, xz, lzma (raw "alone"), lz4
COMPRESSED: Final = (
    (b"\x78", "zlib"),
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"]\x00\x00", "lzma"),
    (b"\x04\x22\x4d\x18", "lz4"),
)


def compression(head: bytes) -> str | None:
    """The compressor whose magic ``head`` starts with, or None."""
    for magic, name in COMPRESSED:
        if head.startswith(magic):
            return name
    return None


def decompressor(method: str) -> zlib._Decompress | bz2.BZ2Decompressor | lzma.LZMADecompressor | None:
    """A fresh decompressor for ``method``, or None (lz4: not in the standard library)."""
    if method == "zlib":
        return zlib.decompressobj()
    if method == "gzip":
        return zlib.decompressobj(wbits=31)
    if method == "bz2":
        return bz2.BZ2Decompressor()
    if method in {"xz", "lzma"}:
        return lzma.LZMADecompressor()
    return None


def _plain(head: bytes) -> str | None:
    if head[:1] == b"\x80":
        if len(head) > 1 and 2 <= head[1] <= HIGHEST_PROTOCOL:
            return "joblib" if b"joblib.numpy_pickle" in head else "pickle"
        return None
    reader = Reader()
    try:
        reader.stream(head, 0, len(head))
    except ReadError as exc:
        # Running out of bytes is fine for a prefix; two opcodes read is the bar.
        if not exc.what.startswith("truncated") or reader.ops_left > Reader().ops_left - 2:
            return None
    return "pickle"


def sniff(head: bytes) -> str | None:
    """The container ``head`` (a file's first bytes) starts, or None."""
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        if head.startswith(b"PK\x03\x04") and len(head) >= 30:
            (n,) = struct.unpack_from("<H", head, 26)
            if head[30 : 30 + n].endswith(b".npy"):
                return "npz"
        return "torch-zip"
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    if head[257:262] == b"ustar":
        return "torch-tar"
    if head.startswith(LEGACY_HEAD):
        return "torch-legacy"
    if _compressed_pickle(head):
        return "joblib"
    return _plain(head[:SNIFF_HEAD]) if head else None


def _compressed_pickle(head: bytes) -> bool:
    method = compression(head)
    if method is None:
        return False
    inner = decompressor(method)
    if inner is None:
        return True  # lz4: only joblib writes it among these formats
    try:
        out = inner.decompress(head, SNIFF_HEAD)
    except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError):
        return False
    return bool(out) and _plain(out) is not None
