# Strategy: the tiers.  check_buffer's ``tiers`` parameter picks which run
# (the test suite runs each alone against the tree path, the oracle, and
# records which tier answered).  The canonical tier answers only when the
# header itself has no finding of any rule, warnings included, in either
# profile; otherwise it says "not mine" (None) and the exact path decides
# and locates every finding.  So it can never change a verdict, an offset
# or a message; the worst a wrong refusal costs is time.
#
# Tier CANONICAL (`clean_table`), on the decoded text.  Invariant: the text
# is exactly `{` + optional `"__metadata__"` map of plain strings + entries
# `"name":{"dtype":"X","shape":[..],"data_offsets":[b,e]}` + space padding,
# with no backslash, so every string is its own bytes and every key is
# what it looks like.  One regex `split` (in C) cuts the text into columns;
# the gaps between the matches must all be empty, which proves the text is
# exactly that sequence, i.e. valid JSON with these values.  Then: names
# unique, none empty, none suspicious (the rule's own regex), every dtype
# known, every size computed by _layout.size_of (the reference's checked
# arithmetic), offsets exactly the running sums of the sizes (contiguous,
# in document order, no trailing bytes, the last a u64), every tensor
# aligned.  The offsets are read by one json.loads of their text.  A run
# of more than 4 KiB of padding is checked by one count and cut off first.
#
# An unknown dtype is its entry's only finding: the entry is located by
# find and left out of the table, and its declared span stands for its
# size in the running sums, so a table that is otherwise clean needs no
# walk of its layout.
#
# A layout-only problem (hole, overlap, trailing bytes, truncation, a size
# that differs from its span, size overflow, misalignment) does not send
# the header anywhere else: its columns go to validator._layout, which
# reports exactly what it reports for the exact path's columns, since the
# rows are the same (names unique, in document order, every entry good).
#
# (A second tier, the C json module into dicts for escape-free headers in
# other layouts, was removed: the one-pass reader below answers the same
# headers about three times faster and never builds long arrays.)
#
# What the canonical tier answers for is declared rule by rule (PROVES and
# REFUSES below), so that a rule added to the catalogue cannot be left out
# of it unseen: tests/test_rule_rows.py fails until every rule of the
# header, entries and layout regions is in one of the two.
#
# SCAN (validator._header.check_header): the exact path, one pass over the bytes; runs of
# regular entries in bulk by regex, everything else member by member with
# the exact parser on that member alone; ignored values validated by
# _json.skip without being built; layout column-wise (validator._layout).
# It is exact by construction (see _header.py) and linear in the header.
from __future__ import annotations

import enum
import json
import re
from itertools import accumulate, compress
from math import gcd
from operator import mod
from types import MappingProxyType
from typing import Any, Final

from validator._dtypes import DTYPE_BITS
from validator._entries import SUSPICIOUS
from validator._findings import TensorTable
from validator._layout import Layout, size_of
from validator._numbers import U64_MAX
from validator._rules import PREFIX_LEN

__all__ = ["PROVES", "REFUSES", "Clean", "Tier", "clean_table", "fast_table", "kind_size", "parse_kind", "parse_shape"]
# The canonical tier's rules, by slug, for every rule of the header,
# entries and layout regions (the prefix is checked before any tier runs).
# Canonical shape is what the tier's patterns take: no backslash, "{", an
# optional "__metadata__" value that the C scanner reads, entries that
# _ENTRY matches with nothing between them, "}", then spaces.
#
# PROVES: a header of canonical shape can break the rule, and the tier
# checks the rule itself after the patterns.  A header that breaks it is
# declined (the exact path reports the finding) or answered with the
# finding, reported by the exact path's own check (read_dtype in
# validator._entries, validator._layout).  Each one has a canonical header
# that breaks it in tests/tier_cases.py.
PROVES: Final = MappingProxyType(
    {
        "header-not-utf8": "the header is decoded as strict UTF-8 (_text); bytes that are not UTF-8 decline",
        "json-syntax": "a shape takes any digits and commas in _ENTRY; _DIMS takes only a list of integers",
        "json-depth": "a metadata value nested in a container is not a string; a RecursionError declines",
        "json-number": "a leading zero passes _ENTRY; _DIMS refuses it in a shape, json.loads in data_offsets",
        "duplicate-field": "a tensor named __metadata__ after the metadata declines",
        "duplicate-key": "names and metadata keys are counted unique",
        "metadata-invalid": "metadata values must all be str; a tensor named __metadata__ declines",
        "metadata-null": "the metadata value must be a map (_Pairs)",
        "dtype-unknown": "a dtype not in DTYPE_BITS is reported by read_dtype and its row left out",
        "shape-invalid": "_DIMS takes at most 19 digits, below 2^64; a longer dimension declines",
        "offsets-invalid": "an offset above U64_MAX declines",
        "tensor-name-suspicious": "the SUSPICIOUS regex over the text, and the empty name, decline",
        "offsets-not-contiguous": "the ends must be the running sums of the sizes, else validator._layout reports",
        "offsets-reversed": "an end before its begin fails the running sums, and validator._layout reports",
        "size-overflow": "_layout.size_of's checked arithmetic fails the sums, and validator._layout reports",
        "subbyte-misaligned": "_layout.size_of's sub-byte check fails the sums, and validator._layout reports",
        "byte-length-mismatch": "a span that is not its size fails the sums, and validator._layout reports",
        "buffer-trailing-bytes": "the last end must reach the file's end exactly, else validator._layout reports",
        "buffer-truncated": "the last end must reach the file's end exactly, else validator._layout reports",
        "tensor-unaligned": "every begin must be a multiple of its alignment, else validator._layout reports",
    }
)
# REFUSES: no header of canonical shape can break the rule, so every header
# that could is declined by the patterns and the exact path decides.
REFUSES: Final = MappingProxyType(
    {
        "header-leading-bytes": 'canonical text starts with "{"',
        "header-padding": "canonical text is padded with spaces only",
        "header-trailing-bytes": 'canonical text ends with "}" and spaces',
        "json-string": "no backslash, _ENTRY takes no control character, the C scanner refuses one in metadata",
        "header-not-object": 'canonical text is an object, "{" to "}"',
        "tensor-entry-invalid": "_ENTRY takes an object entry only",
        "tensor-entry-array": "_ENTRY takes an object entry only",
        "tensor-field-missing": "_ENTRY takes dtype, shape and data_offsets, each once",
        "tensor-field-unknown": "_ENTRY takes dtype, shape and data_offsets, and nothing else",
        "dtype-not-string": "_ENTRY takes a string dtype only",
    }
)

# One entry, loosely: the name, then dtype and shape as one "kind" group,
# then the two offsets as one group, then "," or "}".  The loose classes
# keep the regex fast; the kinds and offsets are checked strictly after.
# Neither string takes a raw control character (JSON refuses one there).
_ENTRY: Final = re.compile(
    r'"([^"\\\x00-\x1f]*+)":\{"dtype":"([^"\\\x00-\x1f]*+","shape":\[[0-9,]*+)\],"data_offsets":\[([0-9]++,[0-9]++)\]\}([,}])'
)
_GROUPS: Final = 5  # the gap before a match plus its four groups
_KIND_CUT: Final = '","shape":['  # splits a kind group into dtype and shape
_INT: Final = r"(?:0|[1-9][0-9]{0,18})"  # at most 19 ASCII digits: always below 2^64
_DIMS: Final = re.compile(f"(?:{_INT}(?:,{_INT})*+)?")  # possessive: no backtracking state per dimension
_NOT_ONE: Final = re.compile("(?<![0-9])(?!1(?![0-9]))[0-9]+")
_CUT_METADATA: Final = 4096


class _Pairs(list):  # type: ignore[type-arg]
    """A JSON object as its (key, value) pairs, duplicates kept."""


# Reads one JSON value; objects become _Pairs, NaN and Infinity None.
_METADATA_SCAN: Final = json.JSONDecoder(object_pairs_hook=_Pairs, parse_constant=lambda _: None).raw_decode
# What tensor-name-suspicious flags (the rule's own regex), and every other
# control character.  Raw C0 controls cannot sit in canonical text (the
# entry regex and the C scanner refuse them in strings, and the layout has
# no whitespace but the padding spaces), so the canonical tier looks for
# the printable ASCII the rule flags, and for anything the rule flags when
# the text is not ASCII.
_ASCII_SUSPICIOUS: Final = tuple(c for c in map(chr, range(0x20, 0x80)) if SUSPICIOUS.match(c))
_STR: Final = {str}
_LONG_PADDING: Final = 4096
# Above this many tensors, the kind column shares one string per kind.
_SHARE_KINDS: Final = 64


class Clean:
    """A header proven clean, as column lists in document order.

    ``kinds`` holds what ``parse`` turns into dtype and shape: the text of
    the canonical path, or (dtype, shape) tuples from the JSON path.
    """

    __slots__ = ("begins", "checked", "ends", "index", "kinds", "metadata", "names", "parse", "unknown")

    def __init__(self, index: dict[str, int], kinds: list[Any], metadata: dict[str, str] | None) -> None:
        self.parse = parse_kind
        self.index = index
        self.kinds = kinds
        self.begins: list[int] = []
        self.ends: list[int] = []
        self.metadata = metadata
        self.checked = True  # False: the layout has findings; run validator._layout on the columns
        # (name, dtype, byte offset) of each entry whose dtype is unknown, in document order.
        self.unknown: list[tuple[str, str, int]] = []
        self.names: list[str] = []  # every row's name, when ``index`` leaves some rows out

    def tensors(self) -> TensorTable:
        """The report's tensor mapping over the columns."""
        return TensorTable(self.index, self.kinds, self.begins, self.ends, self.parse)

    def layout(self) -> Layout:
        """The columns for validator._layout."""
        names = list(self.index) if not self.unknown else self.names
        return Layout(names, begins=self.begins, ends=self.ends, kinds=self.kinds, parse=self.parse, size=kind_size)


def parse_kind(kind: str) -> tuple[str, tuple[int, ...]]:
    """A kind column value (`F32","shape":[4,4`) as dtype and shape."""
    dtype, shape = kind.split(_KIND_CUT)
    return dtype, parse_shape(shape)


def parse_shape(text: str) -> tuple[int, ...]:
    """A shape column value ("4,4") as a tuple."""
    return tuple(map(int, text.split(","))) if text else ()


def clean_table(text: str, header_size: int, file_size: int, *, probed: bool = False) -> Clean | None:  # noqa: C901, PLR0912, PLR0915 - the canonical tier's gates, in one pass for speed
    """The header's table if the header is canonical and free of header findings.

    None when it is not canonical or a header-level check fails.  When only
    the layout fails, ``checked`` is False and the caller runs
    validator._layout on the columns.  ``probed``: the caller has already
    probed the first entries (see _probe), so they are not split twice.
    ``text`` holds no backslash: fast_table has checked its bytes.
    """
    if header_size % 8 or not text.startswith('{"'):
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
        if type(pairs) is not _Pairs:
            return None
        metadata = dict(pairs)
        if len(metadata) != len(pairs) or not {*map(type, metadata.values())} <= _STR:
            return None
        if not text.startswith(',"', start):
            return None
        start += 1
    # Long metadata is cut off first (the entry regex would backtrack over a
    # long value); short metadata stays, to spare a copy of the text.
    if _ENTRY.match(text, start) is None:
        return None  # not even the first entry is canonical: spare the split
    if not probed and len(text) - start > _PROBE_ABOVE and not _probe(text[start : start + _PROBE]):
        return None
    # A long run of padding is checked by one count and cut off, so that
    # the split below does not try a match at every one of its spaces.
    close = text.rfind("}")
    if len(text) - close > _LONG_PADDING:
        if text.count(" ", close + 1) != len(text) - close - 1:
            return None
        text = text[: close + 1]
    body = text[start:] if start > _CUT_METADATA else text
    if body.isascii():
        if any(map(body.__contains__, _ASCII_SUSPICIOUS)):
            return None
    elif SUSPICIOUS.search(body) is not None:
        return None
    parts = _ENTRY.split(body)
    k = len(parts) // _GROUPS
    # The text is exactly lead + entry + "," + ... + entry + "}" + padding.
    if (
        not k
        or parts[0] != (text[:start] if body is text else "")
        or parts[_GROUPS:-1:_GROUPS].count("") != k - 1
        or parts[-1].count(" ") != len(parts[-1])  # str.strip(" ") tests each character by a call
    ):
        return None
    terms = parts[4::_GROUPS]
    if terms[-1] != "}" or terms.count(",") != k - 1:
        return None
    names = parts[1::_GROUPS]
    index = dict(zip(names, range(k)))  # noqa: B905 - equal lengths; a keyword argument costs on the hot path
    # From here on the text is proven canonical; a failed check below is a
    # finding, which the exact path reports.
    if len(index) != k or "" in index or "__metadata__" in index:
        return None
    kinds = parts[2::_GROUPS]
    offsets_list = parts[3::_GROUPS]
    del parts  # memory: the columns above are all that is kept
    distinct = dict.fromkeys(kinds)
    if k > _SHARE_KINDS:
        # One string object per distinct kind (memory: 100,000 tensors share
        # a few dozen kinds).
        kinds = list(map({kind: kind for kind in distinct}.__getitem__, kinds))
    sizes: dict[str | None, int] = {}
    aligns: dict[str | None, int] = {}
    unknown = set()
    for kind in distinct:
        dtype, shape, *more = kind.split(_KIND_CUT)
        if more or _DIMS.fullmatch(shape) is None:
            return None  # a 20-digit dimension: the exact path says what it is
        if dtype not in DTYPE_BITS:
            unknown.add(kind)
            continue
        sizes[kind], aligns[kind] = _size(dtype, shape)
    # The offsets as numbers, in one C call; the pattern took only digits,
    # so json refuses only leading zeros and numbers past int()'s digit limit.
    offsets_list[0] = "[" + offsets_list[0]
    offsets_list[-1] += "]"
    try:
        numbers = json.loads(",".join(offsets_list))
    except ValueError:
        return None  # the exact path says what the number is
    del offsets_list
    clean = Clean(index, kinds, metadata)
    spans = list(sizes.values())  # what the running sums add up, by kind
    if unknown:
        # An unknown dtype is the entry's only finding (names are clean, the
        # shape and offsets are u64s); the rows go on to the layout check
        # without a size, as the exact path leaves them.  For the running
        # sums below, a row's declared span stands for its size (the exact
        # path checks no size there either).
        bad = _rows_of(kinds, unknown)
        clean.unknown = _unknown_dtypes(text, start, names, kinds, bad)
        clean.names = names
        sizes[None] = 0
        aligns[None] = 1
        for i in bad:
            kinds[i] = None
            del index[names[i]]
        column = list(map(sizes.__getitem__, kinds))
        for i in bad:
            column[i] = numbers[2 * i + 1] - numbers[2 * i]
            spans.append(column[i])
    else:
        column = list(map(sizes.__getitem__, kinds))
    begins, ends = numbers[0::2], numbers[1::2]
    clean.begins, clean.ends = begins, ends
    # Contiguous, and every span equal to its size: then the ends are the
    # running sums of the sizes and each begin is the previous end; every
    # number lies between 0 and the last end, a u64 (one past 2^64-1 is
    # offsets-invalid, which the exact path reports).
    if min(spans) >= 0 and ends == list(accumulate(column)) and begins[0] == 0 and begins[1:] == ends[:-1]:
        if ends[-1] > U64_MAX:
            return None
        # data_start is a multiple of 8 and every alignment divides 8; every
        # begin is a sum of sizes, so a common divisor of the sizes that the
        # largest alignment divides proves every tensor aligned.
        top = max(aligns.values())
        clean.checked = PREFIX_LEN + header_size + ends[-1] == file_size and (
            top == 1 or gcd(*spans) % top == 0 or not any(map(mod, begins, map(aligns.__getitem__, kinds)))
        )
        return clean
    if max(numbers) > U64_MAX:
        return None
    clean.checked = False  # a layout finding: validator._layout reports it from the columns
    return clean


_PROBE: Final = 1 << 14  # enough entries to see a repeated name
# Only headers above this are probed: below it a wasted split costs less
# than the probe does on every valid header.
_PROBE_ABOVE: Final = 1 << 20
_TO_DTYPE: Final = len('"":{"dtype":')  # from an entry's start to its dtype's opening quote, besides the name


def _rows_of(kinds: list[Any], unknown: set[str]) -> list[int]:
    """The rows whose kind is in ``unknown``, in order."""
    if len(kinds) <= _SHARE_KINDS or len(unknown) > _FEW:
        return list(compress(range(len(kinds)), map(unknown.__contains__, kinds)))
    # Shared kind strings: list.index compares identities first, in C.
    rows = []
    for kind in unknown:
        i = -1
        try:
            while True:
                i = kinds.index(kind, i + 1)
                rows.append(i)
        except ValueError:
            pass
    return sorted(rows)


_FEW: Final = 8


def _unknown_dtypes(
    text: str, start: int, names: list[str], kinds: list[str], bad: list[int]
) -> list[tuple[str, str, int]]:
    """(name, dtype, byte offset in the header of the dtype's string) for the rows ``bad``, in order."""
    out = []
    at = start
    done_chars = done_bytes = 0  # a prefix of the text whose UTF-8 length is known
    ascii_text = text.isascii()
    for i in bad:
        name = names[i]
        # The entry's key: names are unique and plain, and in canonical text
        # '":{"dtype":"' follows nothing but a tensor name.
        at = text.find(f'"{name}":{{"dtype":"', at)
        c = at + _TO_DTYPE + len(name)
        if not ascii_text:
            done_bytes += len(text[done_chars:c].encode("utf-8"))
            done_chars = c
        out.append((name, kinds[i].split(_KIND_CUT)[0], c if ascii_text else done_bytes))
    return out


def _probe(head: str) -> bool:
    """Whether the first entries pass the header-level checks (a repeated name, an
    unknown dtype or a suspicious name would send the whole header to the exact
    path after a full split)."""
    parts = _ENTRY.split(head)
    names = parts[1:-1:_GROUPS]
    return len(set(names)) == len(names) and "" not in names


# Shapes up to this many characters are sized with int() per dimension;
# longer ones skip their ones by regex (a shape of 50 million ones).
_SHORT_SHAPE: Final = 64


def kind_size(kind: str) -> tuple[int, int]:
    """(bytes or OVERFLOW or MISALIGNED, alignment) of a valid kind column value."""
    dtype, shape = kind.split(_KIND_CUT)
    return _size(dtype, shape)


def _size(dtype: str, shape: str) -> tuple[int, int]:
    if len(shape) <= _SHORT_SHAPE:  # a few dimensions: int() each, in C
        return size_of(dtype, map(int, shape.split(",")) if shape else ())
    # Dimensions of 1 change nothing: a shape of only ones (no "11", nothing
    # but "1" and ",") is two scans in C, and any other skips its ones.
    if "11" not in shape and not shape.strip("1,"):
        return size_of(dtype, ())
    return size_of(dtype, (int(m.group()) for m in _NOT_ONE.finditer(shape)))


class Tier(enum.IntFlag):
    """The tiers check_buffer may use; without SCAN the tree path is the exact path."""

    NONE = 0  # the tree path alone: the oracle of the tests
    CANONICAL = 1
    SCAN = 2  # the one-pass exact reader (validator._header) instead of the tree path
    ALL = 3


# Above this size a header must look like a plain table before it is
# decoded and split (below it the three counts cost a valid header more
# than a wasted decode and split costs a hostile one).
_GATE_SIZE: Final = 1 << 19
# Above this the header bytes are let go while their text is in use.
_HOLD_ONCE: Final = 1 << 24


# The whole first entry, loosely (as _ENTRY), so that a header whose first
# entry has another field is not decoded for nothing.
_FIRST_ENTRY: Final = re.compile(
    rb'\{"[^"\\\x00-\x1f]{0,4096}+":\{"dtype":"[^"\\\x00-\x1f]{0,64}+","shape":\[[0-9,]*+\],"data_offsets":\[[0-9]++,[0-9]++\]\}[,}]'
)


def _looks_plain(header: bytes, start: int, end: int) -> bool:
    """At most two arrays and a few keys per entry in ``header[start:end]``: no long value to split around."""
    # A colon or bracket inside a name only makes the gate stricter.  Nested
    # arrays anywhere fail the bracket count.  A cut through an entry at
    # either end of the range may count its brackets but not its key.
    entries = header.count(b'"data_offsets"', start, end)
    return header.count(b":", start, end) <= 4 * entries + 1024 and header.count(b"[", start, end) <= 2 * entries + 4


def _gated(header: bytes, end: int, *, metadata: bool) -> bool:
    """Whether a long header looks like a plain table, by the counts of _looks_plain.

    With metadata first the whole header is counted: the C scanner builds
    the metadata map whole, so millions of pairs must not reach it.
    Otherwise the first and the last _GATE_SIZE bytes are: what passes the
    gate meets the split, which is linear, so a hostile middle costs one
    failed split, while three counts of every byte cost a tenth of a valid
    header's check.
    """
    if metadata or end <= 3 * _GATE_SIZE:
        return _looks_plain(header, 0, end)
    return _looks_plain(header, 0, _GATE_SIZE) and _looks_plain(header, end - _GATE_SIZE, end)


def fast_table(holder: list[bytes], header_size: int, file_size: int) -> Clean | None:
    """The canonical tier's table, or None when it does not vouch for the header.

    ``holder`` holds the header bytes and is their only owner: above
    _HOLD_ONCE the bytes are dropped while the decoded text is in use, and put
    back (re-encoded, which is exact) when the tier declines, so a long header
    is held once, not twice, beside what the metadata scan builds.
    """
    header = holder[0]
    if b"\\" in header:
        return None
    metadata = header.startswith(b'{"__metadata__":')
    if not metadata and _FIRST_ENTRY.match(header) is None:
        return None  # the first entry is not canonical: spare the decoding
    # A long run of padding is checked by one count (canonical text ends
    # with "}" and spaces), then left out of the gates, the decoding and the
    # split.
    end = header.rfind(b"}") + 1
    pad = len(header) - end
    if pad <= _LONG_PADDING:
        end, pad = len(header), 0
    elif header.count(b" ", end) != pad:
        return None
    # A cut character at the end of the probe only costs the probe an entry.
    probed = not metadata and end > _PROBE_ABOVE
    if probed and not _probe(header[1:_PROBE].decode("utf-8", "ignore")):
        return None
    if end > _GATE_SIZE and not _gated(header, end, metadata=metadata):
        return None
    text = _text(header, end)
    if text is None:
        return None
    if len(header) <= _HOLD_ONCE:
        return clean_table(text, header_size, file_size, probed=probed)
    holder.clear()
    del header
    clean = clean_table(text, header_size, file_size, probed=probed)
    if clean is None:
        # Exact: the text came from valid UTF-8, and the cut run was spaces.
        holder.append(text.encode("utf-8") + b" " * pad if pad else text.encode("utf-8"))
    return clean


def _text(header: bytes, end: int) -> str | None:
    """``header[:end]`` decoded, without a copy of the bytes; None if it is not UTF-8."""
    codec = "ascii" if header.isascii() else "utf-8"
    try:
        if end == len(header):
            return header.decode(codec)
        with memoryview(header) as whole, whole[:end] as view:
            return str(view, codec)
    except UnicodeDecodeError:
        return None
