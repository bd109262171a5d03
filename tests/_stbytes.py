# Strategy: tiny builders for hand-made safetensors bytes, shared by the core
# validator tests.  Every test states its bytes literally through these, so a
# reader sees the defect; nothing here validates or normalises anything.
from __future__ import annotations

import json
import struct


def prefix(n: int) -> bytes:
    """The 8-byte little-endian length prefix."""
    return struct.pack("<Q", n)


def padded(header: str | bytes) -> bytes:
    """Header bytes padded with spaces to a multiple of 8."""
    raw = header.encode() if isinstance(header, str) else header
    return raw + b" " * (-len(raw) % 8)


def st(header: str | bytes, data: bytes = b"", *, pad: bool = True, n: int | None = None) -> bytes:
    """A file: prefix, header (space-padded to 8 unless pad=False), data."""
    raw = header.encode() if isinstance(header, str) else header
    if pad:
        raw = padded(raw)
    return prefix(len(raw) if n is None else n) + raw + data


def entry(dtype: str = "F32", shape: tuple[int, ...] | list[int] = (1,), offsets: tuple[int, int] = (0, 4)) -> str:
    """One tensor entry as compact JSON."""
    return json.dumps({"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}, separators=(",", ":"))


def at(blob: bytes, marker: str | bytes, nth: int = 0) -> int:
    """Absolute offset of the nth occurrence of marker in the file bytes."""
    m = marker.encode() if isinstance(marker, str) else marker
    pos = -1
    for _ in range(nth + 1):
        pos = blob.index(m, pos + 1)
    return pos


def data_start(blob: bytes) -> int:
    """8 + N for a file whose prefix is intact."""
    return 8 + struct.unpack("<Q", blob[:8])[0]
