# Strategy: name the pickle-bearing container a file's first bytes begin,
# for a verdict's label before (or without) the read.  Each test is the one
# the loaders make (_dispatch), on the head alone:
#   zip       "PK\x03\x04" or "PK\x05\x06": npz when the first member's name
#             ends in ".npy", else a torch.save archive
#   npy       "\x93NUMPY"
#   tar       a first block whose checksum adds up (tarfile's test): the
#             legacy torch.save tar (torch < 0.4)
#   legacy    PROTO 2-5, then LONG1 of 10 bytes holding torch's magic number
#   joblib    a compressor's magic over a pickle, joblib's "ZF", or a
#             pickle that names joblib.numpy_pickle early
#   pickle    PROTO 2-5; or, for protocols 0 and 1 (no PROTO opcode), a
#             prefix that reads as two opcodes or more without error
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Final

from validator.formats import _compressed, _npy, _tar, _zip
from validator.formats._inflate import ERRORS, inflate
from validator.pickles._ops import HIGHEST_PROTOCOL, MAGIC, Reader, ReadError

if TYPE_CHECKING:
    from validator.pickles._verdict import Container

__all__ = ["SNIFF_HEAD", "sniff"]

SNIFF_HEAD: Final = 4096
_LEGACY_TAIL: Final = b"\x8a\x0a" + MAGIC.to_bytes(10, "little")
_LOCAL_NAME: Final = struct.Struct("<HH")


def sniff(head: bytes) -> Container | None:
    """The container ``head`` (a file's first bytes) starts, or None."""
    if head.startswith((_zip.SIG_LOCAL, _zip.SIG_EOCD)):
        if head.startswith(_zip.SIG_LOCAL) and len(head) >= 30:
            n, _ = _LOCAL_NAME.unpack_from(head, 26)
            if head[30 : 30 + n].endswith(b".npy"):
                return "npz"
        return "torch-zip"
    if head.startswith(_npy.MAGIC):
        return "npy"
    if _tar.tar_header(head):
        return "torch-tar"
    if len(head) > 1 and head[0] == 0x80 and 2 <= head[1] <= HIGHEST_PROTOCOL and head.startswith(_LEGACY_TAIL, 2):
        return "torch-legacy"
    if _compressed_pickle(head):
        return "joblib"
    return _plain(head[:SNIFF_HEAD]) if head else None


def _plain(head: bytes) -> Container | None:
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


def _compressed_pickle(head: bytes) -> bool:
    method = _compressed.compression(head)
    if method is None:
        return False
    if method == "ZF" or method not in _compressed.DECODERS:
        return True  # joblib's own forms (ZF, lz4): only joblib writes them among these formats
    try:
        out, _ = inflate(_compressed.DECODERS[method], head, 0, len(head), SNIFF_HEAD)
    except ERRORS:
        return False
    return bool(out) and _plain(out) is not None
