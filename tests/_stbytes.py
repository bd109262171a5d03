# Strategy: the one builder of hand-made safetensors bytes, shared by every
# test.  Every test states its bytes literally through these, so a reader
# sees the defect; nothing here validates or normalises anything.  `st`
# writes a header as given; `tensors_file` lays tensors out in order.
from __future__ import annotations

import json
import struct
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence


def prefix(n: int) -> bytes:
    """The 8-byte little-endian length prefix."""
    return struct.pack("<Q", n)


def padded(header: str | bytes) -> bytes:
    """Header bytes padded with spaces to a multiple of 8."""
    raw = header.encode() if isinstance(header, str) else header
    return raw + b" " * (-len(raw) % 8)


def st(header: str | bytes | dict[str, Any], data: bytes = b"", *, pad: bool = True, n: int | None = None) -> bytes:
    """A file: prefix (``n``, else the header's length), header (space-padded
    to 8 unless pad=False; a dict is written as compact JSON), data."""
    if isinstance(header, dict):
        header = json.dumps(header, separators=(",", ":"))
    raw = header.encode() if isinstance(header, str) else header
    if pad:
        raw = padded(raw)
    return prefix(len(raw) if n is None else n) + raw + data


def tensors_file(
    tensors: Iterable[tuple[str, str, Sequence[int], bytes]], metadata: dict[str, str] | None = None, *, align: int = 8
) -> bytes:
    """A file of (name, dtype, shape, raw bytes) tensors laid out in the given
    order, __metadata__ first when given; the header space-padded to ``align``."""
    header: dict[str, object] = {} if metadata is None else {"__metadata__": metadata}
    parts: list[bytes] = []
    offset = 0
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        parts.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    return st(text + b" " * (-len(text) % max(align, 1)), b"".join(parts), pad=False)


def entry(dtype: str = "F32", shape: tuple[int, ...] | list[int] = (1,), offsets: tuple[int, int] = (0, 4)) -> str:
    """One tensor entry as compact JSON."""
    return json.dumps({"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}, separators=(",", ":"))


def one_tensor(
    extra: str = "", *, dtype: str = '"F32"', shape: str = "[1]", offsets: str = "[0,4]", name: str = "t"
) -> str:
    """A header of one tensor, its fields written as given (raw JSON text), ``extra`` after them."""
    return '{"' + name + '":{"dtype":' + dtype + ',"shape":' + shape + ',"data_offsets":' + offsets + extra + "}}"


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
