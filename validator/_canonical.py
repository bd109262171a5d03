# Strategy: the two "clean" fast paths, tried before any finding-producing
# code.  Each only ever answers "clean": no finding of any rule, warnings
# included; on anything else it returns None (or UNCLEAN) and the general
# path (C json in _header._fast, then the exact parser in _json.py) decides
# and locates every finding.  test_fast_paths.py checks that every path
# gives the same Report as the exact parser alone.
#
# 1. Canonical headers, as the reference serializer writes them: `{` +
#    optional `"__metadata__"` map of plain strings + entries
#    `"name":{"dtype":"X","shape":[..],"data_offsets":[b,e]}` in data order
#    + space padding.  One regex `split` (in C) cuts the header into
#    columns; the gaps between the matches must all be empty, which proves
#    the text is exactly a sequence of entries, i.e. valid JSON with these
#    values.  The checks then run over whole columns (list equality, map,
#    accumulate) instead of per entry in Python.
# 2. Any escape-free header (spaced, reordered, entries out of data order):
#    plain C json dicts, duplicates detected by counting keys in the text,
#    the same column-wise checks.
from __future__ import annotations

import json
import re
from itertools import accumulate, chain
from operator import itemgetter, mod, sub
from typing import TYPE_CHECKING, Any, Final

from validator._dtypes import DTYPE_BITS
from validator._json import U64_MAX

if TYPE_CHECKING:
    from collections.abc import Callable

# One entry, loosely: the name, then dtype and shape as one "kind" group,
# then the two offsets as one group, then "," or "}".  The loose classes
# keep the regex fast; the kinds and offsets are checked strictly after.
_ENTRY: Final = re.compile(
    r'"([^"\\\x00-\x1f]*)":\{"dtype":"([^"]*","shape":\[[0-9,]*)\],"data_offsets":\[([0-9]+,[0-9]+)\]\}([,}])'
)
_GROUPS: Final = 5  # the gap before a match plus its four groups
_KIND_CUT: Final = '","shape":['  # splits a kind group into dtype and shape
_INT: Final = r"(?:0|[1-9][0-9]{0,18})"  # at most 19 ASCII digits: always below 2^64
_LONG_NUMBER: Final = re.compile("[0-9]{20}")
_DIMS: Final = re.compile(f"(?:{_INT}(?:,{_INT})*)?")
_CUT_METADATA: Final = 4096


class _Pairs(list):  # type: ignore[type-arg]
    """A JSON object as its (key, value) pairs, duplicates kept."""


# Reads one JSON value; objects become _Pairs, NaN and Infinity None.
_METADATA_SCAN: Final = json.JSONDecoder(object_pairs_hook=_Pairs, parse_constant=lambda _: None).raw_decode
# What tensor-name-suspicious flags, and every other control character.
_BAD_CHAR: Final = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SUSPICIOUS_NON_ASCII: Final = re.compile("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


class Clean:
    """A header proven clean, as column lists in document order.

    ``kinds`` holds what ``parse`` turns into dtype and shape: the text of
    the canonical path, or (dtype, shape) tuples from the JSON path.
    """

    __slots__ = ("begins", "ends", "index", "kinds", "metadata", "parse")

    def __init__(
        self,
        *,
        index: dict[str, int],
        kinds: list[Any],
        begins: list[int],
        ends: list[int],
        metadata: dict[str, str] | None,
        parse: Callable[[Any], tuple[str, tuple[int, ...]]],
    ) -> None:
        self.parse = parse
        self.index = index
        self.kinds = kinds
        self.begins = begins
        self.ends = ends
        self.metadata = metadata


def parse_kind(kind: str) -> tuple[str, tuple[int, ...]]:
    """A kind column value (`F32","shape":[4,4`) as dtype and shape."""
    dtype, shape = kind.split(_KIND_CUT)
    return dtype, parse_shape(shape)


def parse_shape(text: str) -> tuple[int, ...]:
    """A shape column value ("4,4") as a tuple."""
    return tuple(map(int, text.split(","))) if text else ()


UNCLEAN: Final = Clean(index={}, kinds=[], begins=[], ends=[], metadata=None, parse=parse_kind)


def _size(dtype: str, shape: str = "", *more: str) -> tuple[int, int] | None:
    """(bytes, alignment) of a clean tensor, or None if anything is off."""
    if more or _DIMS.fullmatch(shape) is None:
        return None
    return _size_of((dtype, parse_shape(shape)))


def clean_table(text: str, header_size: int, file_size: int) -> Clean | None:
    """The header's table if the header is canonical and every check passes.

    None when the header is not canonical; UNCLEAN when it is but some
    check fails (the caller then skips the JSON path).
    """
    if header_size % 8 or "\\" in text or not text.startswith('{"'):
        return None
    metadata: dict[str, str] | None = None
    start = 1
    if text.startswith('{"__metadata__":'):
        # The metadata map is read by the C scanner alone (a long value would
        # make the entry regex backtrack over it); without a backslash in
        # the text its strings are plain.
        try:
            pairs, start = _METADATA_SCAN(text, len('{"__metadata__":'))
        except (ValueError, RecursionError):
            # RecursionError: nesting past the C scanner's limit; the exact
            # parser reports json-depth at the right offset.
            return None
        if type(pairs) is not _Pairs or set(map(type, map(itemgetter(1), pairs))) - {str}:
            return None
        metadata = dict(pairs)
        if len(metadata) != len(pairs) or not text.startswith(',"', start):
            return None
        start += 1
    # Long metadata is cut off first (the entry regex would backtrack over a
    # long value); short metadata stays, to spare a copy of the text.
    body = text[start:] if start > _CUT_METADATA else text
    if body.isascii():
        if "\x7f" in body:
            return None
    elif _SUSPICIOUS_NON_ASCII.search(body) is not None:
        return None
    parts = _ENTRY.split(body)
    k = len(parts) // _GROUPS
    if k == 0:
        return None
    # The text is exactly lead + entry + "," + ... + entry + "}" + padding.
    if (
        parts[0] != (text[:start] if body is text else "")
        or parts[_GROUPS:-1:_GROUPS].count("") != k - 1
        or parts[-1].strip(" ")
    ):
        return None
    terms = parts[4::_GROUPS]
    if terms[-1] != "}" or terms.count(",") != k - 1:
        return None
    names = parts[1::_GROUPS]
    index = dict(zip(names, range(k), strict=True))
    # From here on the text is proven canonical, so a failed check means a
    # finding, which the JSON path would meet as well.
    if len(index) != k or "" in index or "__metadata__" in index:
        return UNCLEAN
    kinds = parts[2::_GROUPS]
    offsets = ";".join(parts[3::_GROUPS])
    del parts  # memory: the columns above are all that is kept
    # One string object per distinct kind (memory: 100,000 tensors share a
    # few dozen kinds).
    distinct = {kind: kind for kind in dict.fromkeys(kinds)}
    kinds = list(map(distinct.__getitem__, kinds))
    sizes: dict[str, int] = {}
    aligns: dict[str, int] = {}
    for kind in distinct:
        found = _size(*kind.split(_KIND_CUT))
        if found is None:
            # A 20-digit dimension may still be clean JSON; let that path see it.
            return None if _LONG_NUMBER.search(kind) else UNCLEAN
        sizes[kind], aligns[kind] = found
    # Contiguous, and every span equal to its size: then the ends are the
    # running sums of the sizes and each begin is the previous end.  The
    # offsets text must be exactly those numbers, spelled canonically.
    ends = list(accumulate(map(sizes.__getitem__, kinds)))
    begins = [0, *ends[:-1]]
    if ";".join(map("{},{}".format, begins, ends)) != offsets or 8 + header_size + ends[-1] != file_size:
        return UNCLEAN
    # data_start is a multiple of 8 and every alignment divides 8.
    if max(aligns.values()) > 1 and any(map(mod, begins, map(aligns.__getitem__, kinds))):
        return UNCLEAN
    return Clean(index=index, kinds=kinds, begins=begins, ends=ends, metadata=metadata, parse=parse_kind)


# --- the JSON path: any well-formed header without escapes ---------------
#
# For headers in another layout (spaces after separators, another key
# order, entries not in data order) the C json module builds dicts, which
# drop duplicate keys silently.  Without a backslash no string can hold a
# quote, so every '":' in the text ends a key; when no quote is followed by
# whitespace, those are all the keys, and their count must equal the keys
# the dicts kept.

_KEY_SPACE: Final = ('" ', '"\t', '"\n', '"\r')


class _Refused(Exception):  # noqa: N818 - a control-flow signal, not an error
    pass


def _refuse(_: str) -> None:
    raise _Refused


def _same(kind: tuple[str, tuple[int, ...]]) -> tuple[str, tuple[int, ...]]:
    return kind


def _size_of(kind: tuple[str, tuple[int, ...]]) -> tuple[int, int] | None:
    """(bytes, alignment) for a (dtype, shape) pair, or None if anything is off."""
    dtype, shape = kind
    bits = DTYPE_BITS.get(dtype)
    if bits is None:
        return None
    count = 1
    for dim in shape:
        if type(dim) is not int or not 0 <= dim <= U64_MAX:
            return None
        count *= dim
        if count > U64_MAX:
            return None
    nbits = count * bits
    if nbits > U64_MAX or nbits % 8:
        return None
    nbytes = nbits // 8
    return nbytes, (bits // 8 if nbytes and bits > 8 else 1)


def clean_json_table(text: str, header_size: int, file_size: int) -> Clean | None:
    """Like clean_table, for any escape-free header the C json module reads."""
    if header_size % 8 or "\\" in text or "-0" in text or not text.startswith("{"):
        return None
    if not text.isprintable() if text.isascii() else _BAD_CHAR.search(text) is not None:
        return None
    if not text.rstrip(" ").endswith("}") or any(q in text for q in _KEY_SPACE):
        return None
    try:
        root = json.loads(text, parse_constant=_refuse)
    except (ValueError, RecursionError, _Refused):
        return None
    if type(root) is not dict:
        return None
    keys = len(root)
    metadata = None
    if "__metadata__" in root:
        metadata = root.pop("__metadata__")
        if type(metadata) is not dict or set(map(type, metadata.values())) - {str}:
            return None
        keys += len(metadata)
    # Column by column, in C: every entry a 3-key object of the right types.
    names = list(root)
    values = list(root.values())
    k = len(names)
    if not k or set(map(type, values)) != {dict} or set(map(len, values)) != {3}:
        return None
    try:
        dtypes = list(map(itemgetter("dtype"), values))
        shapes = list(map(itemgetter("shape"), values))
        offsets = list(map(itemgetter("data_offsets"), values))
    except KeyError:
        return None
    if set(map(type, dtypes)) != {str} or set(map(type, shapes)) != {list} or set(map(type, offsets)) != {list}:
        return None
    if set(map(len, offsets)) != {2}:
        return None
    # Every dimension an int (not a float or bool) before kinds are
    # de-duplicated below: (1,), (1.0,) and (True,) are equal dict keys.
    if set(map(type, chain.from_iterable(shapes))) - {int}:
        return None
    begins = list(map(itemgetter(0), offsets))
    ends = list(map(itemgetter(1), offsets))
    if set(map(type, begins)) != {int} or set(map(type, ends)) != {int}:
        return None
    if text.count('":') != keys + 3 * k:
        return None
    kinds = list(zip(dtypes, map(tuple, shapes), strict=True))
    index = dict(zip(names, range(k), strict=True))
    if "" in index or min(begins) < 0 or max(ends) > U64_MAX:
        return None
    sizes: dict[tuple[str, tuple[int, ...]], int] = {}
    aligns: dict[tuple[str, tuple[int, ...]], int] = {}
    try:
        distinct = dict.fromkeys(kinds)
    except TypeError:  # a list inside a shape
        return None
    for kind in distinct:
        found = _size_of(kind)
        if found is None:
            return None
        sizes[kind], aligns[kind] = found
    # Contiguous in document order (the common case) implies contiguous in
    # the reference's (begin, end) order; otherwise sort first.
    if begins[0] != 0 or ends[:-1] != begins[1:]:
        order = sorted(range(k), key=list(zip(begins, ends, strict=True)).__getitem__)
        sorted_begins = [begins[i] for i in order]
        sorted_ends = [ends[i] for i in order]
        if sorted_begins[0] != 0 or sorted_ends[:-1] != sorted_begins[1:]:
            return None
        last = sorted_ends[-1]
    else:
        last = ends[-1]
    if 8 + header_size + last != file_size:
        return None
    if list(map(sub, ends, begins)) != list(map(sizes.__getitem__, kinds)):
        return None
    if max(aligns.values()) > 1 and any(map(mod, begins, map(aligns.__getitem__, kinds))):
        return None
    return Clean(index=index, kinds=kinds, begins=begins, ends=ends, metadata=metadata, parse=_same)
