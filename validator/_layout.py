# Strategy: the data region.  Entries are walked in the order the reference
# walks them, sorted by (begin, end), so that the first layout finding is the
# error safetensors 0.8.0 raises; unlike the reference, the walk goes on and
# reports every tensor's problems.
#
# Spec: "The byte buffer needs to be entirely indexed, and cannot contain
# holes"; "data_offsets point to the tensor data relative to the beginning of
# the byte buffer ... [BEGIN, END)"; the size of a tensor is its element
# count times its element size.  Reference: the element count and the bit
# count are computed with checked u64 multiplication in shape order, so
# [2^63, 4, 0] overflows although its product is 0.
from __future__ import annotations

from typing import TYPE_CHECKING, Final

from validator._dtypes import DTYPE_BITS
from validator._entries import pointer
from validator._json import U64_MAX

if TYPE_CHECKING:
    from validator._check import Checker
    from validator._entries import Entry

PREFIX_LEN: Final = 8


def _bits(shape: tuple[int, ...], bits: int) -> int | None:
    """Bit count with the reference's checked arithmetic; None on overflow."""
    count = 1
    for dim in shape:
        count *= dim
        if count > U64_MAX:
            return None
    total = count * bits
    return None if total > U64_MAX else total


def check_layout(entries: dict[str, Entry], header_size: int, file_size: int, out: Checker) -> None:
    """Check offsets, sizes and buffer coverage of every placed entry."""
    data_start = PREFIX_LEN + header_size
    placed = [e for e in entries.values() if e.offsets is not None]
    # Contiguity and coverage are only decidable when every entry has offsets.
    complete = len(placed) == len(entries)
    placed.sort(key=lambda e: e.offsets)  # type: ignore[arg-type,return-value]
    cursor = 0
    previous: str | None = None
    last_name: str | None = None
    for entry in placed:
        name = entry.name
        begin, end = entry.offsets  # type: ignore[misc]
        where = data_start + begin
        reversed_ = end < begin
        if reversed_:
            out.add(
                "offsets-reversed",
                f"tensor {name!r} ends at {end} before it begins at {begin}",
                where,
                tensor=name,
                json_path=pointer(name, "data_offsets"),
            )
        elif complete and begin != cursor:
            if begin > cursor:
                after = f"tensor {previous!r}" if previous is not None else "the start of the data region"
                out.add(
                    "offsets-not-contiguous",
                    f"{begin - cursor} unindexed bytes between {after} (ends at {cursor}) "
                    f"and tensor {name!r} (begins at {begin})",
                    data_start + cursor,
                    tensor=name,
                    json_path=pointer(name, "data_offsets"),
                )
            else:
                out.add(
                    "offsets-not-contiguous",
                    f"tensor {name!r} [{begin}, {end}) overlaps tensor {previous!r}, which ends at {cursor}",
                    where,
                    tensor=name,
                    json_path=pointer(name, "data_offsets"),
                )
        if entry.dtype is not None and entry.shape is not None:
            bits = DTYPE_BITS[entry.dtype]
            nbits = _bits(entry.shape, bits)
            if nbits is None:
                out.add(
                    "size-overflow",
                    f"tensor {name!r}: shape {list(entry.shape)} of {entry.dtype} overflows 64-bit size arithmetic",
                    where,
                    tensor=name,
                    json_path=pointer(name, "shape"),
                )
            elif nbits % 8:
                out.add(
                    "subbyte-misaligned",
                    f"tensor {name!r}: {nbits} bits of {entry.dtype} do not fill whole bytes",
                    where,
                    tensor=name,
                    json_path=pointer(name, "shape"),
                )
            elif not reversed_ and end - begin != nbits // 8:
                out.add(
                    "byte-length-mismatch",
                    f"tensor {name!r}: shape {list(entry.shape)} of {entry.dtype} needs {nbits // 8} bytes "
                    f"but data_offsets [{begin}, {end}) span {end - begin}",
                    where,
                    tensor=name,
                    json_path=pointer(name, "data_offsets"),
                )
            elif not reversed_ and end > begin and bits % 8 == 0 and bits > 8 and where % (bits // 8):
                out.add(
                    "tensor-unaligned",
                    f"tensor {name!r} ({entry.dtype}) starts at absolute offset {where}, "
                    f"not a multiple of {bits // 8}; loading it needs a copy",
                    where,
                    tensor=name,
                    json_path=pointer(name, "data_offsets"),
                )
        if reversed_:
            cursor = max(cursor, begin)
        elif end >= cursor:
            cursor = end
            previous = name
        last_name = name
    if not complete:
        return
    expected = data_start + cursor
    if expected > file_size:
        out.add(
            "buffer-truncated",
            f"file ends at {file_size} but tensor {last_name!r} ends at {expected}: "
            f"{expected - file_size} bytes missing",
            file_size,
            tensor=last_name,
        )
    elif expected < file_size:
        out.add(
            "buffer-trailing-bytes",
            f"{file_size - expected} bytes follow the end of the last tensor at {expected}",
            expected,
        )
