# Strategy: an exact model of the serde_json reader that safetensors 0.8.0
# uses (`serde_json::from_str` into a struct with a flattened map), written
# over bytes so that every position is an absolute byte offset.
#
# RFC 8259 is the grammar.  serde_json adds, and so do we:
# - a nesting limit: the 128th nested array or object is refused, so 127
#   levels are the most a header may use ("recursion limit exceeded");
# - numbers: an integer with no fraction or exponent is a u64 when positive
#   and an i64 when negative; minus zero, integers below -2^63 and integers
#   above 2^64-1 become floats; a float whose magnitude overflows f64 is an
#   error, which serde_json calls number out of range;
# - strings: control characters U+0000..U+001F must be escaped, only the
#   eight short escapes and \uXXXX exist, and a \u escape of a surrogate must
#   form a pair;
# - whitespace is space, tab, LF and CR only; nothing but whitespace may
#   follow the value.
#
# The tree is plain Python: objects are tuples of (key, value) pairs in
# document order (duplicates kept), arrays are lists, numbers are int or
# float, strings are str, and true/false/null are True/False/None.  The same
# shape comes from the fast path in _header.py, which runs the C `json`
# module; this parser runs whenever the fast path cannot vouch for a header.
# It is iterative, so no input can exhaust the Python stack, and it stops at
# the first syntax error, as serde_json does.
from __future__ import annotations

import re
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Final, TypeAlias

U64_MAX: Final = (1 << 64) - 1
I64_MIN: Final = -(1 << 63)
MAX_DEPTH: Final = 127

Json: TypeAlias = "tuple[tuple[str, Json], ...] | list[Json] | str | int | float | bool | None"

_WS: Final = re.compile(rb"[ \t\n\r]*")
_PLAIN_STRING: Final = re.compile(rb'"([^"\\\x00-\x1f]*)"')
# "Unrolled loop" form, normal* (escape normal*)*: every way to split a
# string is unique, so a failed match backtracks in linear time.  (The
# obvious (run+|escape)* form is exponential on an unterminated string.)
_STRING: Final = re.compile(rb'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"')
_STRING_PREFIX: Final = re.compile(rb'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*')
_STRING_PIECE: Final = re.compile(rb'[^"\\\x00-\x1f]+|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4}')
_NUMBER: Final = re.compile(rb"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_NAMED: Final = (b"NaN", b"Infinity", b"-Infinity", b"+Infinity", b"nan", b"inf", b"-inf")


class JsonError(Exception):
    """A fatal JSON problem: rule slug, absolute offset and message."""

    def __init__(self, slug: str, offset: int, message: str) -> None:
        super().__init__(message)
        self.slug = slug
        self.offset = offset
        self.message = message


class Parsed:
    """A parsed document with the byte offset of every value and key.

    ``positions[id(container)]`` lists offsets: for an object, key and value
    offsets alternating; for an array, one offset per item.
    """

    __slots__ = ("end", "positions", "root", "root_offset", "start")

    def __init__(
        self,
        root: Json,
        root_offset: int,
        positions: dict[int, list[int]],
        start: int,
        end: int,
    ) -> None:
        self.root = root
        self.root_offset = root_offset
        self.positions = positions
        self.start = start
        self.end = end


def _describe(buf: bytes, pos: int) -> str:
    if pos >= len(buf):
        return "end of header"
    return f"byte {buf[pos : pos + 1]!r}"


def _string_error(buf: bytes, pos: int, base: int) -> JsonError:
    """Explain why the string starting at ``pos`` did not match."""
    m = _STRING_PREFIX.match(buf, pos)
    i = m.end() if m is not None else pos + 1
    if i >= len(buf):
        return JsonError("json-syntax", base + i, "unterminated string")
    c = buf[i]
    if c < 0x20:
        return JsonError("json-string", base + i, f"control character 0x{c:02x} inside a string must be escaped")
    # a backslash that does not start a valid escape
    return JsonError("json-string", base + i, f"invalid escape {buf[i : i + 6]!r} in a string")


def _decode_string(buf: bytes, pos: int, base: int) -> tuple[str, int]:
    m = _PLAIN_STRING.match(buf, pos)
    if m is not None:
        return m.group(1).decode("utf-8"), m.end()
    # Without a closing quote the regexes below would fail only after
    # scanning (and backtracking over) the rest of the header.
    m = _STRING.match(buf, pos) if buf.find(b'"', pos + 1) >= 0 else None
    if m is None:
        raise _string_error(buf, pos, base)
    text = m.group().decode("utf-8")
    value, _ = scanstring(text, 1, True)  # noqa: FBT003 - a C function, positional only
    if _SURROGATE.search(value) is not None:
        # serde_json: "lone leading surrogate in hex escape" and friends.
        at = _lone_surrogate(buf, pos, m.end())
        raise JsonError("json-string", base + at, f"unpaired surrogate escape {buf[at : at + 6].decode()} in a string")
    return value, m.end()


def _lone_surrogate(buf: bytes, pos: int, end: int) -> int:
    """Offset of the first \\u escape in buf[pos:end] that is not half of a pair."""
    i = pos + 1
    pending = -1  # offset of a high surrogate escape waiting for its low half
    while i < end - 1:
        m = _STRING_PIECE.match(buf, i)
        if m is None:  # cannot happen: the whole string matched _STRING
            break
        piece = m.group()
        unit = int(piece[2:], 16) if piece.startswith(b"\\u") else -1  # noqa: FURB166 - the prefix is \\u, not 0x
        if pending >= 0:
            if 0xDC00 <= unit <= 0xDFFF:
                pending = -1
                i = m.end()
                continue
            return pending
        if 0xD800 <= unit <= 0xDBFF:
            pending = i
        elif 0xDC00 <= unit <= 0xDFFF:
            return i
        i = m.end()
    return pending if pending >= 0 else pos


def _number(buf: bytes, pos: int, base: int) -> tuple[int | float, int]:
    m = _NUMBER.match(buf, pos)
    if m is None:
        for word in _NAMED:
            if buf.startswith(word, pos):
                raise JsonError("json-number", base + pos, f"{word.decode()} is not a JSON number")
        raise JsonError("json-number", base + pos, f"invalid number at {_describe(buf, pos)}")
    end = m.end()
    if end < len(buf) and buf[end] in b"0123456789.eE":
        raise JsonError("json-number", base + pos, f"invalid number {buf[pos : end + 1]!r}")
    text = m.group()
    if m.group(1) is None and m.group(2) is None:
        negative = text[0] == 0x2D
        digits = len(text) - negative
        if digits <= 20:
            value = int(text)
            if value == 0 and negative:
                return -0.0, end  # serde_json reads `-0` as the float -0.0
            if I64_MIN <= value <= U64_MAX:
                return value, end
    value_f = float(text)
    if value_f in (float("inf"), float("-inf")):
        raise JsonError("json-number", base + pos, f"number {text[:40].decode()} is out of range for f64")
    return value_f, end


def parse(buf: bytes, base: int) -> Parsed:
    """Parse the JSON text ``buf`` whose first byte sits at offset ``base``.

    Raises JsonError at the first fatal problem.  Trailing bytes after the
    value are not an error here: ``Parsed.end`` says where the value ended.
    """
    n = len(buf)
    ws = _WS.match
    positions: dict[int, list[int]] = {}
    pos = ws(buf, 0).end()  # type: ignore[union-attr]
    start = pos
    stack: list[_Frame] = []
    value: Json
    while True:
        # Read one value at pos.
        pos = ws(buf, pos).end()  # type: ignore[union-attr]
        if pos >= n:
            raise JsonError("json-syntax", base + pos, "unexpected end of header where a value was expected")
        value_pos = pos
        c = buf[pos]
        if c in {0x7B, 0x5B}:  # { or [
            if len(stack) >= MAX_DEPTH:
                raise JsonError("json-depth", base + pos, f"nesting deeper than {MAX_DEPTH} levels")
            frame = _Frame(c == 0x7B, pos)
            stack.append(frame)
            pos = ws(buf, pos + 1).end()  # type: ignore[union-attr]
            if pos < n and buf[pos] == (0x7D if frame.is_object else 0x5D):
                pos += 1
                stack.pop()
                value = frame.finish(positions)
            else:
                if frame.is_object:
                    pos = _read_key(buf, pos, base, frame)
                continue
        elif c == 0x22:
            value, pos = _decode_string(buf, pos, base)
        elif c == 0x2D or 0x30 <= c <= 0x39:
            value, pos = _number(buf, pos, base)
        elif buf.startswith(b"true", pos):
            value, pos = True, pos + 4
        elif buf.startswith(b"false", pos):
            value, pos = False, pos + 5
        elif buf.startswith(b"null", pos):
            value, pos = None, pos + 4
        elif any(buf.startswith(word, pos) for word in _NAMED):
            raise JsonError("json-number", base + pos, "NaN and Infinity are not JSON numbers")
        else:
            raise JsonError("json-syntax", base + pos, f"expected a value, found {_describe(buf, pos)}")
        # Attach the complete value to its parent, closing containers as we go.
        while stack:
            frame = stack[-1]
            frame.add(value, base + value_pos)
            pos = ws(buf, pos).end()  # type: ignore[union-attr]
            if pos >= n:
                raise JsonError("json-syntax", base + pos, "unexpected end of header inside a container")
            c = buf[pos]
            if c == 0x2C:  # ,
                pos += 1
                if frame.is_object:
                    pos = _read_key(buf, ws(buf, pos).end(), base, frame)  # type: ignore[union-attr]
                break
            if c != (0x7D if frame.is_object else 0x5D):
                want = "',' or '}'" if frame.is_object else "',' or ']'"
                raise JsonError("json-syntax", base + pos, f"expected {want}, found {_describe(buf, pos)}")
            pos += 1
            stack.pop()
            value_pos = frame.open_at
            value = frame.finish(positions)
        else:
            return Parsed(value, base + value_pos, positions, start, pos)


class _Frame:
    __slots__ = ("is_object", "items", "key", "key_at", "offsets", "open_at")

    def __init__(self, is_object: bool, open_at: int) -> None:  # noqa: FBT001
        self.is_object = is_object
        self.open_at = open_at
        self.items: list[Json] = []
        self.offsets: list[int] = []
        self.key = ""
        self.key_at = 0

    def add(self, value: Json, at: int) -> None:
        if self.is_object:
            self.items.append((self.key, value))  # type: ignore[arg-type]
            self.offsets.append(self.key_at)
        else:
            self.items.append(value)
        self.offsets.append(at)

    def finish(self, positions: dict[int, list[int]]) -> Json:
        done: Json = tuple(self.items) if self.is_object else self.items  # type: ignore[arg-type]
        positions[id(done)] = self.offsets
        return done


def _read_key(buf: bytes, pos: int, base: int, frame: _Frame) -> int:
    if pos >= len(buf):
        raise JsonError("json-syntax", base + pos, "unexpected end of header where a key was expected")
    if buf[pos] != 0x22:
        raise JsonError("json-syntax", base + pos, f"expected a string key, found {_describe(buf, pos)}")
    frame.key, after = _decode_string(buf, pos, base)
    frame.key_at = base + pos
    after = _WS.match(buf, after).end()  # type: ignore[union-attr]
    if after >= len(buf) or buf[after] != 0x3A:
        raise JsonError("json-syntax", base + after, f"expected ':' after a key, found {_describe(buf, after)}")
    return after + 1
