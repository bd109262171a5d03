# Strategy: the header bytes.  UTF-8 first, then JSON, then the header
# object, in one pass over the bytes that builds no tree for the header as a
# whole.  It is the exact path: every finding comes out with the offset the
# token-by-token parser in _json.py gives it.
#
# The root object is read member by member.  Runs of "regular" tensor
# entries (`"name":{"dtype":"X","shape":[..],"data_offsets":[b,e]}`, any
# JSON whitespace, any valid string as the name) are recognised by one C
# regex match per chunk of up to _CHUNK entries and turned into columns in
# bulk; a regex only takes text that is exactly such an entry, so anything
# else (another key order, an unknown field, a float, a bad token) is left
# to the member-by-member code, which uses the exact parser on that member
# alone: one entry, or the metadata object.  The values of unknown fields
# and other ignored values are validated by `_json.skip` and never built.
#
# JSON errors abort the parse, as in serde_json, and then the only finding
# is the error: the table's findings are collected aside and kept only when
# the whole header parsed.
from __future__ import annotations

import re
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import TYPE_CHECKING, Any, Final

from validator._check import Checker
from validator._dtypes import DTYPE_BITS
from validator._entries import (
    FIELDS,
    SUSPICIOUS,
    Entry,
    Locator,
    check_name,
    duplicate_field,
    duplicate_metadata,
    finish_entry,
    metadata_duplicate,
    metadata_not_object,
    metadata_not_string,
    metadata_null,
    read_dtype,
    read_entry,
    read_table,
    unknown_field,
)
from validator._json import (
    _W,
    _WS,
    GOOD_STRING,
    JsonError,
    _separator_error,
    decode_string,
    read_key,
    skip,
)
from validator._numbers import U64_MAX
from validator._parse import parse
from validator._rules import PREFIX_LEN
from validator._table import _DIM, Table

if TYPE_CHECKING:
    from validator._json import Json

__all__ = ["check_header", "utf8_error"]

_CHUNK: Final = 2048  # entries or pairs per bulk regex match
_INT: Final = rb"(?:0|[1-9][0-9]{0,18}+)"  # at most 19 digits: always a u64
_NAME: Final = rb'(?!"__metadata__")' + GOOD_STRING
# One regular entry's value; the four groups are dtype, shape, begin, end.
_VALUE: Final = (
    rb"\{" + _W + rb'"dtype"' + _W + rb":" + _W + rb'"([^"\\\x00-\x1f]*+)"' + _W + rb"," + _W
    + rb'"shape"' + _W + rb":" + _W + rb"\[" + _W + rb"((?:" + _INT + rb"(?:" + _W + rb"," + _W + _INT + rb")*+)?)"
    + _W + rb"\]" + _W + rb"," + _W + rb'"data_offsets"' + _W + rb":" + _W + rb"\[" + _W + rb"(" + _INT + rb")"
    + _W + rb"," + _W + rb"(" + _INT + rb")" + _W + rb"\]" + _W + rb"\}"
)  # fmt: skip
_ONE_VALUE: Final = re.compile(_VALUE)
_ENTRY: Final = re.compile(rb"(" + _NAME + rb")" + _W + rb":" + _W + _VALUE)
_ENTRY_RUN: Final = re.compile(
    rb"(?:" + _NAME + _W + rb":" + _W + re.sub(rb"\((?!\?)", b"(?:", _VALUE) + _W + rb"," + _W + rb"){1,%d}+" % _CHUNK
)
_PAIR: Final = re.compile(rb"(" + GOOD_STRING + rb")" + _W + rb":" + _W + rb"(" + GOOD_STRING + rb")")
_PAIR_RUN: Final = re.compile(
    rb"(?:" + GOOD_STRING + _W + rb":" + _W + GOOD_STRING + _W + rb"," + _W + rb"){1,%d}+" % _CHUNK
)
# Unknown fields of an entry whose values are scalars or empty containers.
_FIELD_KEY: Final = rb'(?!"(?:dtype|shape|data_offsets)")' + GOOD_STRING
_SAFE_VALUE: Final = (
    rb"(?:-?(?:0|[1-9][0-9]{0,199}+)(?:\.[0-9]++)?(?:[eE](?:-[0-9]++|\+?[0-9]{1,2}+))?|"
    + GOOD_STRING + rb"|true|false|null|\[" + _W + rb"\]|\{" + _W + rb"\})"
)  # fmt: skip
_UNKNOWN_RUN: Final = re.compile(
    rb"(?:" + _FIELD_KEY + _W + rb":" + _W + _SAFE_VALUE + _W + rb"," + _W + rb"){1,%d}+" % _CHUNK
)
# Compact forms of the two runs above (no whitespace but one space after
# a comma or colon, short plain strings, short integers), tried first: they
# cost a third as much per member.
_PLAIN_KEY: Final = rb'"[^"\\\x00-\x1f]{0,256}+"'
_PAIR_FAST: Final = re.compile(rb"(?:" + _PLAIN_KEY + rb": ?" + _PLAIN_KEY + rb", ?){1,%d}+" % _CHUNK)
_UNKNOWN_FAST: Final = re.compile(
    rb'(?:(?!"(?:dtype|shape|data_offsets)")' + _PLAIN_KEY + rb": ?(?:-?+(?:0|[1-9][0-9]{0,18}+)|" + _PLAIN_KEY
    + rb"|true|false|null|\[\]|\{\}), ?){1,%d}+" % _CHUNK
)  # fmt: skip
_UNKNOWN_KEY: Final = re.compile(rb"(" + _FIELD_KEY + rb")" + _W + rb":" + _W + _SAFE_VALUE)
# A known field with the value every writer gives it: a plain string for
# dtype, an array of integers of at most 20 digits for shape and
# data_offsets (a u64 has at most 20; larger ones go to the exact parser).
# Groups: 1 dtype's string token, 2 the array field's name, 3 its array,
# 4 the array's items.
_INT20: Final = rb"(?:0|[1-9][0-9]{0,19}+)"
_KNOWN_FIELD: Final = re.compile(
    rb'"(?:dtype"' + _W + rb":" + _W + rb'("[^"\\\x00-\x1f]*+")|(shape|data_offsets)"' + _W + rb":" + _W
    + rb"(\[" + _W + rb"((?:" + _INT20 + rb"(?:" + _W + rb"," + _W + _INT20 + rb")*+)?)" + _W + rb"\]))"
)  # fmt: skip
_NOT_SPACE: Final = re.compile(rb"[^ ]")
_DTYPE_OF: Final = {name.encode(): name for name in DTYPE_BITS}
_KIND_OF_BYTE: Final = {0x7B: "object", 0x5B: "array", 0x22: "string", 0x74: "boolean", 0x66: "boolean", 0x6E: "null"}
_BASE: Final = PREFIX_LEN


def _decode(raw: bytes) -> str:
    """A string token already known to be valid JSON, quotes included."""
    if b"\\" not in raw:
        return raw[1:-1].decode("utf-8")
    value: str = scanstring(raw.decode("utf-8"), 1, True)[0]  # noqa: FBT003 - a C function, positional only
    return value


def _known_field(buf: bytes, pos: int, fields: dict[str, tuple[Json, int | None]]) -> int:
    """Read a first dtype, shape or data_offsets member of a usual spelling into ``fields``.

    Returns the end of its value, or -1 when the member at ``pos`` is
    anything else (the exact parser then reads it).
    """
    f = _KNOWN_FIELD.match(buf, pos)
    if f is None:
        return -1
    if f.start(1) >= 0:
        if "dtype" in fields:
            return -1
        fields["dtype"] = (f.group(1)[1:-1].decode(), _BASE + f.start(1))
        return f.end()
    field = f.group(2).decode()
    dims = list(map(int, _DIM.findall(f.group(4))))
    # No item of such an array can have a finding of its own, so no item
    # offsets are recorded; one past 2^64-1 goes to the exact parser.
    if field in fields or (dims and max(dims) > U64_MAX):
        return -1
    fields[field] = (dims, _BASE + f.start(3))  # type: ignore[assignment]  # list[int] is a list[Json]
    return f.end()


class _Reader:
    """One pass over the header object; findings go to ``out``."""

    __slots__ = ("buf", "metadata_seen", "out", "table")

    def __init__(self, buf: bytes, out: Checker) -> None:
        self.buf = buf
        self.out = out
        self.table = Table()
        self.metadata_seen = False

    def root(self, pos: int) -> int:
        """Read the object at ``pos`` ('{'); return the position after it."""
        buf = self.buf
        ws = _WS.match
        pos = ws(buf, pos + 1).end()  # type: ignore[union-attr]
        if pos < len(buf) and buf[pos] == 0x7D:
            return pos + 1
        while True:
            m = _ENTRY_RUN.match(buf, pos)
            if m is not None:
                pos = self.run(pos, m.end())
                continue
            pos = ws(buf, self.member(pos)).end()  # type: ignore[union-attr]
            if pos < len(buf) and buf[pos] == 0x2C:
                pos = ws(buf, pos + 1).end()  # type: ignore[union-attr]
                continue
            if pos < len(buf) and buf[pos] == 0x7D:
                return pos + 1
            if pos >= len(buf):
                raise JsonError("json-syntax", _BASE + pos, "unexpected end of header inside a container")
            raise _separator_error(buf, _BASE, pos, is_object=True)

    def run(self, start: int, end: int) -> int:
        """A chunk of regular entries, each followed by ','; return ``end``."""
        buf = self.buf
        rows = _ENTRY.findall(buf, start, end)
        raw, dtypes, shapes, begins, ends = zip(*rows, strict=True)
        if buf.find(b"\\", start, end) >= 0:
            names = list(map(_decode, raw))
            text = " ".join(names)
        else:
            # No quote inside a plain name: the quoted names end to end are
            # the names joined by '""', decoded at once.
            text = b"".join(raw)[1:-1].decode()
            names = text.split('""')
        known = list(map(_DTYPE_OF.get, dtypes))
        if "__metadata__" in names or None in known or "" in names or SUSPICIOUS.search(text) is not None:
            return self.slow_run(start, end)
        index = self.table.index
        repeats = len(set(names)) != len(names) or not index.keys().isdisjoint(names)
        # Duplicate names: in bulk only once their findings are past the cap.
        if repeats and not self._saturated("duplicate-key", len(names) - len(set(names) - index.keys())):
            return self.slow_run(start, end)
        kinds = list(zip(known, shapes, strict=True))
        self.table.extend(names, kinds, list(map(int, begins)), list(map(int, ends)), repeats=repeats)
        return end

    def _saturated(self, slug: str, count: int) -> bool:
        """Count ``count`` findings of ``slug`` in bulk if the cap has dropped them anyway."""
        out = self.out
        if out.limit is None or out.counts.get(slug, 0) < out.limit:
            return False
        out.counts[slug] += count
        out.dropped[slug] = out.dropped.get(slug, 0) + count
        return True

    def slow_run(self, start: int, end: int) -> int:
        """The same chunk entry by entry, with each finding at its offset."""
        for m in _ENTRY.finditer(self.buf, start, end):
            self.regular(m.start(), _decode(m.group(1)), m, 2)
        return end

    def regular(self, key_at: int, name: str, m: re.Match[bytes], g: int) -> None:
        """A regular entry whose dtype is group ``g`` of ``m``."""
        table = self.table
        if name == "__metadata__":  # an escaped spelling of the key
            self.metadata(key_at, self.buf.find(b"{", m.end(1)))
            return
        check_name(name, _BASE + key_at, name in table.index, self.out)
        raw_dtype = m.group(g)
        dtype = _DTYPE_OF.get(raw_dtype)
        if dtype is None:
            read_dtype(name, raw_dtype.decode(), _BASE + m.start(g) - 1, self.out)
        kind = None if dtype is None else (dtype, m.group(g + 1))
        table.add(name, kind, int(m.group(g + 2)), int(m.group(g + 3)), ok=dtype is not None)

    def member(self, key_at: int) -> int:
        """One member of the root object; return the position after its value."""
        buf = self.buf
        name, after = read_key(buf, key_at, _BASE)
        pos = _WS.match(buf, after).end()  # type: ignore[union-attr]
        if name == "__metadata__":
            return self.metadata(key_at, pos)
        m = _ONE_VALUE.match(buf, pos)
        if m is not None:
            self.regular(key_at, name, m, 1)
            return m.end()
        check_name(name, _BASE + key_at, name in self.table.index, self.out)
        if pos < len(buf) and buf[pos] == 0x7B:
            entry, end = self.entry_object(name, pos)
        else:
            parsed = parse(buf, _BASE, pos, depth=1)
            entry = read_entry(name, parsed.root, parsed.root_offset, Locator(parsed.positions), self.out)
            end = parsed.end
        kind = None if entry.dtype is None or entry.shape is None else (entry.dtype, entry.shape)
        begin, stop = entry.offsets if entry.offsets is not None else (None, None)
        self.table.add(name, kind, begin, stop, ok=entry.ok)
        return end

    def entry_object(self, name: str, pos: int) -> tuple[Entry, int]:
        """An entry written as an object, member by member."""
        buf = self.buf
        out = self.out
        ws = _WS.match
        entry = Entry(name, _BASE + pos)
        fields: dict[str, tuple[Json, int | None]] = {}
        positions: dict[int, Any] = {}
        pos = ws(buf, pos + 1).end()  # type: ignore[union-attr]
        if pos < len(buf) and buf[pos] == 0x7D:
            return finish_entry(entry, fields, Locator(positions), out), pos + 1
        while True:
            end = _known_field(buf, pos, fields)
            if end >= 0:
                pos = end
            else:
                m = _UNKNOWN_FAST.match(buf, pos)
                # In the compact form every '":' ends a key (no string there holds a quote).
                count = -1 if m is None else buf.count(b'":', pos, m.end())
                m = m or _UNKNOWN_RUN.match(buf, pos)
                if m is not None:
                    pos = self.unknown_run(name, pos, m.end(), count)
                    if pos == m.end():
                        pos = ws(buf, pos).end()  # type: ignore[union-attr]
                        continue
                pos = self.field(entry, fields, positions, pos)
            pos = ws(buf, pos).end()  # type: ignore[union-attr]
            if pos < len(buf) and buf[pos] == 0x2C:
                pos = ws(buf, pos + 1).end()  # type: ignore[union-attr]
                continue
            if pos < len(buf) and buf[pos] == 0x7D:
                return finish_entry(entry, fields, Locator(positions), out), pos + 1
            if pos >= len(buf):
                raise JsonError("json-syntax", _BASE + pos, "unexpected end of header inside a container")
            raise _separator_error(buf, _BASE, pos, is_object=True)

    def field(
        self, entry: Entry, fields: dict[str, tuple[Json, int | None]], positions: dict[int, Any], pos: int
    ) -> int:
        """One member of an entry, read by the exact parser; return the end of its value."""
        buf = self.buf
        key_at = pos
        field, after = read_key(buf, pos, _BASE)
        pos = _WS.match(buf, after).end()  # type: ignore[union-attr]
        if field in FIELDS and field not in fields:
            parsed = parse(buf, _BASE, pos, depth=2)
            fields[field] = (parsed.root, parsed.root_offset)
            positions.update(parsed.positions)
            return parsed.end
        if field in FIELDS:
            duplicate_field(entry.name, field, _BASE + key_at, self.out)
            entry.ok = False
        else:
            unknown_field(entry.name, field, _BASE + key_at, self.out)
        return skip(buf, pos, _BASE, 2)

    def unknown_run(self, name: str, start: int, end: int, count: int) -> int:
        """Unknown fields with plain values, each followed by ','; return where the run stops.

        ``count`` is the number of members, or -1 if unknown.  It stops early
        at a key that is a field name written with escapes.
        """
        if count < 0:
            count = len(_UNKNOWN_KEY.findall(self.buf, start, end))
        if self.buf.find(b"\\", start, end) < 0 and self._saturated("tensor-field-unknown", count):
            return end
        for k in _UNKNOWN_KEY.finditer(self.buf, start, end):
            field = _decode(k.group(1))
            if field in FIELDS:
                return k.start()
            unknown_field(name, field, _BASE + k.start(), self.out)
        return end

    def metadata(self, key_at: int, pos: int) -> int:  # noqa: C901, PLR0912 - one branch per metadata shape the reference distinguishes
        """The __metadata__ member's value at ``pos``; return its end."""
        buf = self.buf
        out = self.out
        ws = _WS.match
        if self.metadata_seen:
            duplicate_metadata(_BASE + key_at, out)
        self.metadata_seen = True
        if pos >= len(buf) or buf[pos] != 0x7B:
            end = skip(buf, pos, _BASE, 1)
            what = _KIND_OF_BYTE.get(buf[pos], "number")
            if what == "null":
                metadata_null(_BASE + pos, out)
            else:
                metadata_not_object(what, _BASE + pos, out)
            self.table.metadata = None
            return end
        result: dict[str, str] = {}
        pos = ws(buf, pos + 1).end()  # type: ignore[union-attr]
        if pos < len(buf) and buf[pos] == 0x7D:
            self.table.metadata = result
            return pos + 1
        while True:
            m = _PAIR_FAST.match(buf, pos)
            if m is not None:
                self.pairs(result, pos, m.end(), plain=True)
                pos = ws(buf, m.end()).end()  # type: ignore[union-attr]
                continue
            m = _PAIR_RUN.match(buf, pos)
            if m is not None:
                self.pairs(result, pos, m.end())
                pos = ws(buf, m.end()).end()  # type: ignore[union-attr]
                continue
            key, after = read_key(buf, pos, _BASE)
            value_at = ws(buf, after).end()  # type: ignore[union-attr]
            if key in result:
                metadata_duplicate(key, _BASE + pos, out)
            if value_at < len(buf) and buf[value_at] == 0x22:
                result[key], end = decode_string(buf, value_at, _BASE)
            else:
                end = skip(buf, value_at, _BASE, 2)
                metadata_not_string(key, _KIND_OF_BYTE.get(buf[value_at], "number"), _BASE + value_at, out)
            pos = ws(buf, end).end()  # type: ignore[union-attr]
            if pos < len(buf) and buf[pos] == 0x2C:
                pos = ws(buf, pos + 1).end()  # type: ignore[union-attr]
                continue
            if pos < len(buf) and buf[pos] == 0x7D:
                self.table.metadata = result
                return pos + 1
            if pos >= len(buf):
                raise JsonError("json-syntax", _BASE + pos, "unexpected end of header inside a container")
            raise _separator_error(buf, _BASE, pos, is_object=True)

    def pairs(self, result: dict[str, str], start: int, end: int, *, plain: bool = False) -> None:
        """A chunk of string-to-string metadata pairs, each followed by ','.

        ``plain``: the chunk matched _PAIR_FAST, so no string in it holds a
        quote or a backslash, and splitting at the quotes cuts it into
        key, separator, value, separator, exactly.
        """
        buf = self.buf
        if plain:
            cut = buf[start:end].split(b'"')
            keys = cut[1::4]
            chunk = dict(zip(keys, cut[3::4]))  # noqa: B905 - a key and a value per pair, by the match
            decoded = {k.decode(): v.decode() for k, v in chunk.items()}
            repeats = len(keys) - len(decoded) + len(decoded.keys() & result.keys())
            if not repeats or self._saturated("duplicate-key", repeats):
                result.update(decoded)
                return
            self._pairs_one_by_one(result, start, end)
            return
        rows = _PAIR.findall(buf, start, end)
        chunk = dict(rows)  # last value wins, first position kept: as a run of assignments does
        if buf.find(b"\\", start, end) >= 0:
            decoded = {_decode(k): _decode(v) for k, v in chunk.items()}
            repeats = len(rows) - len(decoded) + len(decoded.keys() & result.keys())
            if len(decoded) != len(chunk):  # two spellings of one key
                repeats = -1
        else:
            decoded = {k[1:-1].decode(): v[1:-1].decode() for k, v in chunk.items()}
            repeats = len(rows) - len(decoded) + len(decoded.keys() & result.keys())
        if repeats and not (repeats > 0 and self._saturated("duplicate-key", repeats)):
            self._pairs_one_by_one(result, start, end)
            return
        result.update(decoded)

    def _pairs_one_by_one(self, result: dict[str, str], start: int, end: int) -> None:
        for m in _PAIR.finditer(self.buf, start, end):
            key = _decode(m.group(1))
            if key in result:
                metadata_duplicate(key, _BASE + m.start(), self.out)
            result[key] = _decode(m.group(2))


def _leading(count: int, out: Checker) -> None:
    # Spec: "The header data MUST begin with a `{` character".
    # Reference: serde_json skips leading whitespace.
    out.add("header-leading-bytes", f"{count} whitespace bytes precede the opening '{{'", PREFIX_LEN)


def _padding(header: bytes, start: int, end: int, out: Checker) -> None:
    other = _NOT_SPACE.search(header, start, end)
    if other is not None:
        # Spec: "The header data MAY be trailing padded with whitespace
        # (0x20)".  Reference: any JSON whitespace is accepted.
        i = other.start()
        out.add("header-padding", f"padding byte {header[i : i + 1]!r} is not a space (0x20)", PREFIX_LEN + i)


def utf8_error(header: bytes) -> UnicodeDecodeError | None:
    """The first UTF-8 error in the header, or None; never holds a decoded copy."""
    if header.isascii():
        return None
    view = memoryview(header)
    step = 1 << 20
    i = 0
    n = len(header)
    while i < n:
        j = min(i + step, n)
        back = 0
        while j < n and back < 3 and 0x80 <= header[j] <= 0xBF:
            j -= 1
            back += 1
        try:
            str(view[i:j], "utf-8")
        except UnicodeDecodeError as exc:
            return UnicodeDecodeError("utf-8", header, i + exc.start, i + exc.end, exc.reason)
        i = j
    return None


def check_header(header: bytes, out: Checker, *, scan: bool = True) -> Table | None:
    """Check the N header bytes; return the table when the JSON parsed.

    ``scan=False`` takes the tree path instead: the whole header through
    the token-by-token parser, then read_table over the tree.  It is the
    simplest statement of the rules and the oracle the one-pass reader is
    tested against; nothing else uses it.
    """
    bad = utf8_error(header)
    if bad is not None:
        out.add(
            "header-not-utf8",
            f"header byte {header[bad.start : bad.start + 1]!r} is not valid UTF-8 ({bad.reason})",
            PREFIX_LEN + bad.start,
        )
        return None
    if not scan:
        return _tree(header, out)
    aside = Checker(limit=out.limit)
    reader = _Reader(header, aside)
    lead = _WS.match(header).end()  # type: ignore[union-attr]
    table: Table | None = None
    try:
        if lead < len(header) and header[lead] == 0x7B:
            end = reader.root(lead)
            table = reader.table
        else:
            end = skip(header, lead, _BASE, 0)
            aside.add(
                "header-not-object",
                f"header is a JSON {_KIND_OF_BYTE.get(header[lead], 'number')}; it must be an object",
                _BASE + lead,
            )
    except JsonError as exc:
        out.add(exc.slug, exc.message, exc.offset)
        return None
    if lead:
        _leading(lead, out)
    out.merge(aside)
    _after_value(header, end, out)
    return table


def _after_value(header: bytes, end: int, out: Checker) -> None:
    if header.count(b" ", end) == len(header) - end:
        return  # space padding only (one C scan; a regex would step through a 100 MB run)
    ws_end = _WS.match(header, end).end()  # type: ignore[union-attr]
    if ws_end < len(header):
        # serde_json: "trailing characters".  NUL padding lands here.
        out.add(
            "header-trailing-bytes",
            f"{len(header) - ws_end} bytes after the JSON object, starting with {header[ws_end : ws_end + 1]!r}; "
            "pad the header with spaces (0x20) only",
            PREFIX_LEN + ws_end,
        )
    _padding(header, end, ws_end, out)


def _tree(header: bytes, out: Checker) -> Table | None:
    try:
        parsed = parse(header, PREFIX_LEN)
    except JsonError as exc:
        out.add(exc.slug, exc.message, exc.offset)
        return None
    if parsed.start:
        _leading(parsed.start, out)
    read = read_table(parsed.root, parsed.root_offset, Locator(parsed.positions), out)
    _after_value(header, parsed.end, out)
    if read is None:
        return None
    table = Table()
    for e in read.entries.values():
        kind = None if e.dtype is None or e.shape is None else (e.dtype, e.shape)
        begin, end = e.offsets if e.offsets is not None else (None, None)
        table.add(e.name, kind, begin, end, ok=e.ok)
    table.metadata = read.metadata
    return table
