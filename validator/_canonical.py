# Strategy: the canonical fast path.  Nearly every file in the wild has the
# header the reference serializer writes: `{` + optional `"__metadata__"` map
# of plain strings + entries `"name":{"dtype":"X","shape":[..],
# "data_offsets":[b,e]}` in data order + space padding.  One regex `split`
# (in C) cuts such a header into its fields; the gaps between the matches
# must all be empty, which proves the text is exactly a sequence of entries,
# i.e. valid JSON with these values.  The checks then run over whole columns
# (list equality, map, set) instead of per entry in Python.
#
# This path only ever answers "clean": no finding of any rule, warnings
# included.  On anything else (a key escaped with a backslash, another field
# order, a hole, a zero-size tensor in a shared slot, an unaligned tensor, a
# number over 19 digits, ...) it returns None and the general path (C json,
# then the exact parser) decides and locates every finding.  A differential
# test checks that both paths give the same Report.
from __future__ import annotations

import re
from operator import mod, sub
from typing import Final

from validator._dtypes import DTYPE_BITS
from validator._json import U64_MAX

_NAME: Final = r'"([^"\\\x00-\x1f]*)"'
_INT: Final = r"(?:0|[1-9][0-9]{0,18})"  # at most 19 digits: always below 2^64
_ENTRY: Final = re.compile(
    _NAME
    + r':\{"dtype":"([A-Z0-9_]{1,16})","shape":\[((?:'
    + _INT
    + r"(?:,"
    + _INT
    + r')*)?)\],"data_offsets":\[('
    + _INT
    + "),"
    + "("
    + _INT
    + r")\]\}([,}])",
)
_GROUPS: Final = 7  # the gap before a match plus its six groups
_STR: Final = r'"[^"\\\x00-\x1f]*"'
_METADATA: Final = re.compile(r'\{"__metadata__":\{((?:' + _STR + ":" + _STR + "(?:," + _STR + ":" + _STR + r")*)?)\},")
_PAIR: Final = re.compile(r'"([^"]*)":"([^"]*)"')
_SUSPICIOUS_NON_ASCII: Final = re.compile("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


class Clean:
    """A header proven clean: column lists in document (= data) order."""

    __slots__ = ("begins", "dtypes", "ends", "index", "metadata", "shapes")

    def __init__(
        self,
        *,
        index: dict[str, int],
        dtypes: list[str],
        shapes: list[str],
        begins: list[int],
        ends: list[int],
        metadata: dict[str, str] | None,
    ) -> None:
        self.index = index
        self.dtypes = dtypes
        self.shapes = shapes
        self.begins = begins
        self.ends = ends
        self.metadata = metadata


def parse_shape(text: str) -> tuple[int, ...]:
    """A shape column value ("4,4") as a tuple."""
    return tuple(map(int, text.split(","))) if text else ()


def _size(dtype: str, shape: str) -> tuple[int, int] | None:
    """(bytes, alignment) of a clean tensor, or None if anything is off."""
    bits = DTYPE_BITS.get(dtype)
    if bits is None:
        return None
    count = 1
    for dim in parse_shape(shape):
        count *= dim
        if count > U64_MAX:
            return None
    nbits = count * bits
    if nbits > U64_MAX or nbits % 8:
        return None
    nbytes = nbits // 8
    align = bits // 8 if nbytes and bits > 8 else 1
    return nbytes, align


def clean_table(text: str, header_size: int, file_size: int) -> Clean | None:
    """The header's table if the header is canonical and every check passes."""
    if header_size % 8 or "\\" in text:
        return None
    if text.isascii():
        if "\x7f" in text:
            return None
    elif _SUSPICIOUS_NON_ASCII.search(text) is not None:
        return None
    parts = _ENTRY.split(text)
    k = len(parts) // _GROUPS
    if k == 0:
        return None
    # The text is exactly lead + entry + "," + ... + entry + "}" + padding.
    if parts[_GROUPS:-1:_GROUPS].count("") != k - 1 or parts[-1].strip(" "):
        return None
    terms = parts[6::_GROUPS]
    if terms[-1] != "}" or terms.count(",") != k - 1:
        return None
    lead = parts[0]
    metadata: dict[str, str] | None = None
    if lead != "{":
        m = _METADATA.fullmatch(lead)
        if m is None:
            return None
        pairs = _PAIR.findall(m.group(1))
        metadata = dict(pairs)
        if len(metadata) != len(pairs):
            return None
    names = parts[1::_GROUPS]
    index = dict(zip(names, range(k), strict=True))
    if len(index) != k or "" in index or "__metadata__" in index:
        return None
    dtypes = parts[2::_GROUPS]
    shapes = parts[3::_GROUPS]
    begins = list(map(int, parts[4::_GROUPS]))
    ends = list(map(int, parts[5::_GROUPS]))
    if begins[0] != 0 or ends[:-1] != begins[1:] or 8 + header_size + ends[-1] != file_size:
        return None
    kinds: dict[tuple[str, str], tuple[int, int] | None] = dict.fromkeys(zip(dtypes, shapes, strict=True))
    for key in kinds:
        kinds[key] = _size(*key)
        if kinds[key] is None:
            return None
    sized: list[tuple[int, int]] = list(map(kinds.__getitem__, zip(dtypes, shapes, strict=True)))  # type: ignore[arg-type]
    if list(map(sub, ends, begins)) != [s[0] for s in sized]:
        return None
    # data_start is a multiple of 8 and every alignment divides 8.
    if any(map(mod, begins, [s[1] for s in sized])):
        return None
    return Clean(index=index, dtypes=dtypes, shapes=shapes, begins=begins, ends=ends, metadata=metadata)
