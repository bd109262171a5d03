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
#
# The table arrives as columns (one list per field, one row per tensor).  A
# screen over whole columns, in C (list equality, map, accumulate), proves
# the common case free of per-tensor findings: contiguous in document order
# (then the (begin, end) order is the document order) and every span equal
# to its size.  Only a table that fails the screen is walked row by row.
from __future__ import annotations

from itertools import repeat
from operator import add, lt, mod, sub
from typing import TYPE_CHECKING, Any, Final

from validator._display import plural
from validator._dtypes import DTYPE_BITS
from validator._entries import pointer
from validator._numbers import U64_MAX
from validator._rules import PREFIX_LEN

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from validator._check import Checker

__all__ = ["MISALIGNED", "OVERFLOW", "Layout", "check_layout", "checked_bits", "size_of"]

# A kind is what dtype and shape a row has, in whatever form the reader kept
# it; `Size` is what the checked arithmetic says about it.
OVERFLOW: Final = -1
MISALIGNED: Final = -2
_ANY: Final = -3  # a row without a usable kind: no size to compare


def checked_bits(dims: Iterable[int], bits: int) -> int | None:
    """Bit count with the reference's checked u64 arithmetic; None on overflow.

    Every dimension must already be a u64.  Dimensions equal to 1 may be
    left out: multiplying by 1 never overflows or changes the count.
    """
    count = 1
    for dim in dims:
        count *= dim
        if count > U64_MAX:
            return None
        if count == 0:
            break  # 0 times anything stays 0 and never overflows
    total = count * bits
    return None if total > U64_MAX else total


def size_of(dtype: str, dims: Iterable[int]) -> tuple[int, int]:
    """(bytes or OVERFLOW or MISALIGNED, alignment) of a known dtype and u64 dims."""
    bits = DTYPE_BITS[dtype]
    nbits = checked_bits(dims, bits)
    if nbits is None:
        return OVERFLOW, 1
    if nbits % 8:
        return MISALIGNED, 1
    nbytes = nbits // 8
    return nbytes, (bits // 8 if nbytes and bits > 8 else 1)


class Layout:
    """The placed tensors as columns, in the reference's table order.

    Row i: ``names[i]``, ``begins[i]``/``ends[i]`` (None when the entry has
    no usable data_offsets), ``kinds[i]`` (None when dtype or shape is
    unusable) and ``parse(kind)`` giving (dtype, shape) for messages.
    ``size(kind)`` gives (bytes or OVERFLOW or MISALIGNED, alignment).
    """

    __slots__ = ("begins", "ends", "kinds", "names", "parse", "size")

    def __init__(
        self,
        names: Sequence[str],
        *,
        begins: Sequence[int | None],
        ends: Sequence[int | None],
        kinds: Sequence[Any],
        parse: Callable[[Any], tuple[str, tuple[int, ...]]],
        size: Callable[[Any], tuple[int, int]],
    ) -> None:
        self.names = names
        self.begins = begins
        self.ends = ends
        self.kinds = kinds
        self.parse = parse
        self.size = size


def check_layout(table: Layout, header_size: int, file_size: int, out: Checker) -> None:
    """Check offsets, sizes and buffer coverage of every placed entry."""
    data_start = PREFIX_LEN + header_size
    begins, ends, kinds = table.begins, table.ends, table.kinds
    k = len(begins)
    if not k:
        _coverage(data_start, 0, None, file_size, out)
        return
    if None not in begins:
        sizes: dict[object, tuple[int, int]] = {
            kind: table.size(kind) for kind in dict.fromkeys(kinds) if kind is not None
        }
        order = _sorted_if_contiguous(begins, ends)  # type: ignore[arg-type]
        spans = list(map(sub, ends, begins))
        if None in kinds:  # no size to check for these rows
            sizes[None] = (_ANY, 1)
            spans = [_ANY if kind is None else span for span, kind in zip(spans, kinds, strict=True)]
        if order is not None and spans == [sizes[kind][0] for kind in kinds]:
            # No contiguity or size finding anywhere: only alignment warnings
            # and the end of the buffer are left to check.
            aligns = [sizes[kind][1] for kind in kinds]
            if max(aligns) > 1 and any(map(mod, map(add, begins, repeat(data_start)), aligns)):
                for i in order:
                    if aligns[i] > 1 and (data_start + begins[i]) % aligns[i]:  # type: ignore[operator]
                        _aligned(table, i, data_start, out)
            last = order[-1]
            _coverage(data_start, ends[last], table.names[last], file_size, out)  # type: ignore[arg-type]
            return
    _walk(table, data_start, file_size, out)


def _sorted_if_contiguous(begins: list[int], ends: list[int]) -> Sequence[int] | None:
    """The rows in (begin, end) order when they tile [0, last end) exactly."""
    k = len(begins)
    if begins[0] == 0 and ends[:-1] == begins[1:] and not any(map(lt, ends, begins)):
        # A contiguous chain is already in (begin, end) order.
        return range(k)
    order = sorted(range(k), key=list(zip(begins, ends, strict=True)).__getitem__)
    b = [begins[i] for i in order]
    e = [ends[i] for i in order]
    if b[0] == 0 and e[:-1] == b[1:] and not any(map(lt, e, b)):
        return order
    return None


def _aligned(table: Layout, i: int, data_start: int, out: Checker) -> None:
    dtype, _ = table.parse(table.kinds[i])
    bits = DTYPE_BITS[dtype]
    begin, end = table.begins[i], table.ends[i]
    where = data_start + begin  # type: ignore[operator]
    if end > begin and bits % 8 == 0 and bits > 8 and where % (bits // 8):  # type: ignore[operator]
        name = table.names[i]
        out.add(
            "tensor-unaligned",
            f"tensor {name!r} ({dtype}) starts at absolute offset {where}, "
            f"not a multiple of {bits // 8}; loading it needs a copy",
            where,
            tensor=name,
            json_path=pointer(name, "data_offsets"),
        )


def _walk(table: Layout, data_start: int, file_size: int, out: Checker) -> None:  # noqa: C901, PLR0912 - one branch per layout rule, in the reference's order
    names, begins, ends, kinds = table.names, table.begins, table.ends, table.kinds
    placed = [i for i in range(len(names)) if begins[i] is not None]
    # Contiguity and coverage are only decidable when every entry has offsets.
    complete = len(placed) == len(names)
    placed.sort(key=lambda i: (begins[i], ends[i]))
    sizes: dict[object, tuple[int, int]] = {}
    cursor = 0
    previous: str | None = None
    last_name: str | None = None
    for i in placed:
        name = names[i]
        begin: int = begins[i]  # type: ignore[assignment]
        end: int = ends[i]  # type: ignore[assignment]
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
        kind = kinds[i]
        if kind is not None:
            size = sizes.get(kind)
            if size is None:
                size = sizes[kind] = table.size(kind)
            nbytes = size[0]
            if nbytes == OVERFLOW:
                dtype, shape = table.parse(kind)
                out.add(
                    "size-overflow",
                    f"tensor {name!r}: shape {list(shape)} of {dtype} overflows 64-bit size arithmetic",
                    where,
                    tensor=name,
                    json_path=pointer(name, "shape"),
                )
            elif nbytes == MISALIGNED:
                dtype, shape = table.parse(kind)
                nbits = checked_bits(shape, DTYPE_BITS[dtype])
                out.add(
                    "subbyte-misaligned",
                    f"tensor {name!r}: {nbits} bits of {dtype} do not fill whole bytes",
                    where,
                    tensor=name,
                    json_path=pointer(name, "shape"),
                )
            elif not reversed_ and end - begin != nbytes:
                dtype, shape = table.parse(kind)
                out.add(
                    "byte-length-mismatch",
                    f"tensor {name!r}: shape {list(shape)} of {dtype} needs {nbytes} bytes "
                    f"but data_offsets [{begin}, {end}) span {end - begin}",
                    where,
                    tensor=name,
                    json_path=pointer(name, "data_offsets"),
                )
            elif not reversed_ and size[1] > 1 and (data_start + begin) % size[1]:
                _aligned(table, i, data_start, out)
        if reversed_:
            cursor = max(cursor, begin)
        elif end >= cursor:
            cursor = end
            previous = name
        last_name = name
    if complete:
        _coverage(data_start, cursor, last_name, file_size, out)


def _coverage(data_start: int, cursor: int, last_name: str | None, file_size: int, out: Checker) -> None:
    expected = data_start + cursor
    if expected > file_size:
        out.add(
            "buffer-truncated",
            f"file ends at {file_size} but tensor {last_name!r} ends at {expected}: "
            f"{plural(expected - file_size, 'byte')} missing",
            file_size,
            tensor=last_name,
        )
    elif expected < file_size:
        out.add(
            "buffer-trailing-bytes",
            f"{plural(file_size - expected, 'byte')} follow{'s' if file_size - expected == 1 else ''} "
            f"the end of the last tensor at {expected}",
            expected,
        )
