# Strategy: an exact model of the serde_json reader that safetensors 0.8.0
# uses (`serde_json::from_str` into a struct with a flattened map), written
# over bytes so that every position is an absolute byte offset.
#
# RFC 8259 is the grammar.  serde_json adds, and so do we:
# - a nesting limit: the 128th nested array or object is refused, so 127
#   levels are the most a header may use ("recursion limit exceeded");
# - numbers: the values serde_json gives them, modelled in _numbers.py; one
#   that comes out infinite is an error, "number out of range";
# - strings: control characters U+0000..U+001F must be escaped, only the
#   eight short escapes and \uXXXX exist, and a \u escape of a surrogate must
#   form a pair;
# - whitespace is space, tab, LF and CR only; nothing but whitespace may
#   follow the value.
#
# The tree (validator._parse) is plain Python: objects are tuples of (key,
# value) pairs in document order (duplicates kept), arrays are lists,
# numbers are int or float, strings are str, and true/false/null are
# True/False/None.  This module holds the tokens it is built from.
#
# `skip` validates a value exactly as `parse` would (same errors, same
# offsets) without building it: runs of scalars, runs of opening and of
# closing brackets are consumed by one C regex match each.  A regex only
# ever consumes text that the token-by-token code would accept, so where it
# stops the token code takes over and meets any error itself.
from __future__ import annotations

import math
import re
from json.decoder import c_scanstring, scanstring  # type: ignore[attr-defined]
from typing import Final, TypeAlias

from validator._numbers import number

__all__ = [
    "GOOD_STRING",
    "MAX_DEPTH",
    "STRICT_SCANNER",
    "Json",
    "JsonError",
    "decode_string",
    "describe",
    "key_end",
    "read_key",
    "skip",
    "string_end",
]

MAX_DEPTH: Final = 127

Json: TypeAlias = "tuple[tuple[str, Json], ...] | list[Json] | str | int | float | bool | None"

_W: Final = rb"[ \t\n\r]*+"
_WS: Final = re.compile(_W)
_PLAIN_STRING: Final = re.compile(rb'"([^"\\\x00-\x1f]*+)"')
# "Unrolled loop" form, normal* (escape normal*)*, possessive: every way to
# split a string is unique, so no input makes the match backtrack.
_ESCAPE: Final = rb'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})'
_STRING: Final = re.compile(rb'"[^"\\\x00-\x1f]*+(?:' + _ESCAPE + rb'[^"\\\x00-\x1f]*+)*+"')
_STRING_PREFIX: Final = re.compile(rb'"[^"\\\x00-\x1f]*+(?:' + _ESCAPE + rb'[^"\\\x00-\x1f]*+)*+')
_STRING_PIECE: Final = re.compile(rb'[^"\\\x00-\x1f]+|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4}')
# A string whose \u escapes of surrogates all form pairs: what serde_json accepts.
_PAIRED_ESCAPE: Final = (
    rb'\\(?:["\\/bfnrt]|u(?:[0-9a-cefA-CEF][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}'
    rb"|[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}))"
)
# Bounded (at most 4096 plain bytes between escapes, 512 escapes), so that a
# run regex gives up on a huge string after a bounded scan; the
# token-by-token code then reads that string with the C scanner.
GOOD_STRING: Final = rb'"[^"\\\x00-\x1f]{0,4096}+(?:' + _PAIRED_ESCAPE + rb'[^"\\\x00-\x1f]{0,4096}+){0,512}+"'
_NUMBER: Final = re.compile(rb"-?(?:0|[1-9][0-9]*+)(\.[0-9]++)?([eE][+-]?[0-9]++)?")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_NAMED: Final = (b"NaN", b"Infinity", b"-Infinity", b"+Infinity", b"nan", b"inf", b"-inf")

# A number serde_json can never refuse: at most 200 integer digits and an
# exponent below +100 keep it below 10^300; a negative exponent only shrinks
# it.  Longer ones are checked one by one by `number`.
_SAFE_NUMBER: Final = rb"-?(?:0|[1-9][0-9]{0,199}+)(?:\.[0-9]++)?(?:[eE](?:-[0-9]++|\+?[0-9]{1,2}+))?"
_SCALAR: Final = rb"(?:" + _SAFE_NUMBER + rb"|" + GOOD_STRING + rb"|true|false|null)"
_EMPTY: Final = rb"|\[" + _W + rb"\]|\{" + _W + rb"\}"
# Runs of complete items, each followed by a comma: what follows '[' or ','
# in an array, or '{' or ',' in an object.  The variants with empty
# containers are used only where one more level is still allowed.
_ARRAY_RUN: Final = re.compile(rb"(?:" + _W + _SCALAR + _W + rb",)*+")
_ARRAY_RUN_E: Final = re.compile(rb"(?:" + _W + rb"(?:" + _SCALAR + _EMPTY + rb")" + _W + rb",)*+")
_OBJECT_RUN: Final = re.compile(rb"(?:" + _W + GOOD_STRING + _W + rb":" + _W + _SCALAR + _W + rb",)*+")
_OBJECT_RUN_E: Final = re.compile(
    rb"(?:" + _W + GOOD_STRING + _W + rb":" + _W + rb"(?:" + _SCALAR + _EMPTY + rb")" + _W + rb",)*+"
)
# The same runs in the two spellings writers use (no whitespace, or one
# space after each comma), with short integers and plain short strings
# only: several times faster per item, so they are tried first.
_SHORT_INT: Final = rb"-?+(?:0|[1-9][0-9]{0,18}+)"
_PLAIN: Final = rb'"[^"\\\x00-\x1f]{0,256}+"'
_COMPACT: Final = rb"(?:" + _SHORT_INT + rb"|" + _PLAIN + rb"|true|false|null"
_ARRAY_FAST: Final = re.compile(rb"(?:" + _COMPACT + rb"), ?)*+")
_ARRAY_FAST_E: Final = re.compile(rb"(?:" + _COMPACT + rb"|\[\]|\{\}), ?)*+")
_OBJECT_FAST: Final = re.compile(rb"(?:" + _PLAIN + rb": ?" + _COMPACT + rb"), ?)*+")
_OBJECT_FAST_E: Final = re.compile(rb"(?:" + _PLAIN + rb": ?" + _COMPACT + rb"|\[\]|\{\}), ?)*+")
_FAST_OF: Final = {
    id(_ARRAY_RUN): _ARRAY_FAST,
    id(_ARRAY_RUN_E): _ARRAY_FAST_E,
    id(_OBJECT_RUN): _OBJECT_FAST,
    id(_OBJECT_RUN_E): _OBJECT_FAST_E,
}
# At most MAX_DEPTH + 1 per match: a chain past the limit is refused at its
# 128th bracket without scanning the rest of it.
_OPENS: Final = re.compile(rb"\[(?:" + _W + rb"\[){0,%d}+" % MAX_DEPTH)
# Nested objects, each opened with a plain key whose bytes hold no '{':
# then every '{' in the match opens one level.
_OBJECT_OPENS: Final = re.compile(
    rb"(?:\{" + _W + rb'"[^"\\\x00-\x1f{]{0,256}+"' + _W + rb":" + _W + rb"){1,%d}+" % (MAX_DEPTH + 1)
)
_CLOSES: Final = re.compile(rb"[\]}](?:" + _W + rb"[\]}])*+")
_CLOSE_OF: Final = bytes.maketrans(b"]}", b"[{")


class JsonError(Exception):
    """A fatal JSON problem: rule slug, absolute offset and message."""

    def __init__(self, slug: str, offset: int, message: str) -> None:
        super().__init__(message)
        self.slug = slug
        self.offset = offset
        self.message = message


def describe(buf: bytes, pos: int) -> str:
    """How an error message names the byte at ``pos``."""
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


def string_end(buf: bytes, pos: int, base: int) -> int:
    """The end of the valid string at ``pos``; JsonError as decode_string raises it."""
    if buf.find(b'"', pos + 1, pos + _LONG_STRING) < 0:
        end = _closing_quote(buf, pos)
        if end > 0 and buf.find(b"\\", pos + 1, end) < 0 and _no_controls(buf[pos + 1 : end - 1]):
            return end
        return decode_string(buf, pos, base)[1]
    m = _PLAIN_STRING.match(buf, pos)
    if m is not None:
        return m.end()
    return decode_string(buf, pos, base)[1]


def _closing_quote(buf: bytes, pos: int) -> int:
    """The offset after the quote that closes the string at ``pos``, or -1."""
    i = pos + 1
    while True:
        j = buf.find(b'"', i)
        if j < 0:
            return -1
        k = j
        while buf[k - 1] == 0x5C:  # a backslash; buf[pos] is the opening quote, so this stops
            k -= 1
        if (j - k) % 2 == 0:
            return j + 1
        i = j + 1


_PIECE: Final = 1 << 20
# A string whose closing quote is not within this many bytes is read by the
# C scanner first (a regex steps through it a character at a time).
_LONG_STRING: Final = 1 << 12
_CONTROLS: Final = bytes(range(0x20))


def _no_controls(body: bytes) -> bool:
    """Whether no byte of a string's body is a control character (U+0000..U+001F), by one C pass."""
    return len(body.translate(None, _CONTROLS)) == len(body)


# What serde_json refuses inside a string besides a lone surrogate: a raw
# control character, or a backslash that does not start a valid escape.
# json's C scanner refuses exactly these; its pure-Python fallback (used
# where the C accelerator is missing; the fuzz engine met it) reads \uXXXX
# with int(x, 16), which takes " 12 ", "+123" and "1_23", so without the C
# scanner this regex checks first.
STRICT_SCANNER: Final = c_scanstring
_REFUSED_IN_STRING: Final = re.compile(rb'[\x00-\x1f]|\\(?!["\\/bfnrt]|u[0-9a-fA-F]{4})')
# A cut before this backslash cannot split an escape or a surrogate pair.
_CUT_AT: Final = re.compile(rb"\\(?!u[dD][c-fC-F])")


def _scan_pieces(buf: bytes, start: int, end: int) -> str | None:
    """The string body buf[start:end] decoded by the C scanner, or None if it refuses.

    A long body goes in pieces of about a megabyte, cut before an escape, so
    that no decoded copy of the whole body is held beside the result.
    """
    scan = STRICT_SCANNER
    if scan is None:
        if _REFUSED_IN_STRING.search(buf, start, end) is not None:
            return None
        scan = scanstring
    view = memoryview(buf)
    pieces = []
    while start < end:
        cut = end
        if end - start > _PIECE:
            at = start + _PIECE
            while (m := _CUT_AT.search(buf, at, end)) is not None:
                # A bad cut only costs time: the caller falls back to the regexes.
                before = buf[max(start, m.start() - 64) : m.start()]
                if (len(before) - len(before.rstrip(b"\\"))) % 2 == 0:  # this backslash starts an escape
                    break
                at = m.start() + 1
            cut = end if m is None else m.start()
        text = '"' + str(view[start:cut], "utf-8") + '"'
        try:
            value, stop = scan(text, 1, True)  # noqa: FBT003 - a C function, positional only
        except ValueError:
            return None
        if stop != len(text):
            return None
        pieces.append(value)
        start = cut
    return "".join(pieces)


def _long_string(buf: bytes, pos: int) -> tuple[str, int] | None:
    """A string with no quote near its start, and its end; None to leave it to the regexes.

    Without a backslash a string is its bytes (valid UTF-8: the header is),
    if no byte is a control character; with escapes the C scanner reads it.
    Both are many times faster than a regex stepping through it.
    """
    end = _closing_quote(buf, pos)
    if end < 0:
        return None
    if buf.find(b"\\", pos + 1, end) < 0:
        body = buf[pos + 1 : end - 1]
        return (body.decode("utf-8"), end) if _no_controls(body) else None
    value = _scan_pieces(buf, pos + 1, end - 1)
    if value is None:
        return None
    # An ASCII string holds no surrogate (str.isascii is a flag, read in
    # O(1)); else one search of the decoded text.  (Searching the bytes for a
    # \uD escape first costs more than that search wherever \u escapes are
    # dense: bytes.find stops at every one.)
    if not value.isascii() and _SURROGATE.search(value):
        return None
    return value, end


def decode_string(buf: bytes, pos: int, base: int) -> tuple[str, int]:
    """The string at ``pos`` and its end; JsonError as serde_json refuses it."""
    if buf.find(b'"', pos + 1, pos + _LONG_STRING) < 0:
        long = _long_string(buf, pos)
        if long is not None:
            return long
    m = _PLAIN_STRING.match(buf, pos)
    if m is not None:
        return m.group(1).decode("utf-8"), m.end()
    # Fast: the C scanner on the string alone (it refuses what serde_json
    # refuses, except lone surrogates, checked below).  On any refusal the
    # regexes below find the exact place and reason.
    end = _closing_quote(buf, pos)
    if end > 0:
        value = _scan_pieces(buf, pos + 1, end - 1)
        if value is not None and (value.isascii() or _SURROGATE.search(value) is None):
            return value, end
    # Without a closing quote the regexes below would fail only after
    # scanning the rest of the header.
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
        raise JsonError("json-number", base + pos, f"invalid number at {describe(buf, pos)}")
    end = m.end()
    if end < len(buf) and buf[end] in b"0123456789.eE":
        raise JsonError("json-number", base + pos, f"invalid number {buf[pos : end + 1]!r}")
    text = m.group()
    value = number(text)
    if value is None:
        raise JsonError("json-number", base + pos, _out_of_range(text))
    return value, end


def _out_of_range(text: bytes) -> str:
    """Why serde_json refuses a number token: beyond f64, or only beyond its own arithmetic."""
    shown = text[:40].decode()
    if math.isfinite(float(text)):
        # 1.7976931348623158e308 is f64::MAX itself; serde_json without float_roundtrip
        # computes 17976931348623158 * 1e292 in f64 steps, which overflow.
        return (
            f"number {shown} fits an f64, but serde_json's float parser (without float_roundtrip, as "
            "safetensors 0.8.0 builds it) overflows to infinity on it and rejects it as out of range"
        )
    return f"number {shown} is out of range for f64"


def _scalar_end(buf: bytes, pos: int, base: int) -> int:
    """Check the scalar at ``pos`` as _parse_scalar does; return its end."""
    c = buf[pos]
    if c == 0x22:
        return string_end(buf, pos, base)
    if c == 0x2D or 0x30 <= c <= 0x39:
        return _number(buf, pos, base)[1]
    return _parse_scalar(buf, pos, base)[1]


def _parse_scalar(buf: bytes, pos: int, base: int) -> tuple[Json, int]:
    c = buf[pos]
    if c == 0x22:
        return decode_string(buf, pos, base)
    if c == 0x2D or 0x30 <= c <= 0x39:
        return _number(buf, pos, base)
    if buf.startswith(b"true", pos):
        return True, pos + 4
    if buf.startswith(b"false", pos):
        return False, pos + 5
    if buf.startswith(b"null", pos):
        return None, pos + 4
    if any(buf.startswith(word, pos) for word in _NAMED):
        raise JsonError("json-number", base + pos, "NaN and Infinity are not JSON numbers")
    raise JsonError("json-syntax", base + pos, f"expected a value, found {describe(buf, pos)}")


def _run(runner: re.Pattern[bytes], buf: bytes, pos: int) -> int:
    """Where a run of complete items starting at ``pos`` ends: the compact form first."""
    pos = _FAST_OF[id(runner)].match(buf, pos).end()  # type: ignore[union-attr]
    return runner.match(buf, pos).end()  # type: ignore[union-attr]


def _depth_error(base: int, pos: int) -> JsonError:
    return JsonError("json-depth", base + pos, f"nesting deeper than {MAX_DEPTH} levels")


def _end_error(base: int, pos: int) -> JsonError:
    return JsonError("json-syntax", base + pos, "unexpected end of header inside a container")


def _separator_error(buf: bytes, base: int, pos: int, *, is_object: bool) -> JsonError:
    want = "',' or '}'" if is_object else "',' or ']'"
    return JsonError("json-syntax", base + pos, f"expected {want}, found {describe(buf, pos)}")


def key_end(buf: bytes, pos: int, base: int) -> int:
    """Check the key and ':' at ``pos`` without decoding; return the position after ':'."""
    if pos >= len(buf):
        raise JsonError("json-syntax", base + pos, "unexpected end of header where a key was expected")
    if buf[pos] != 0x22:
        raise JsonError("json-syntax", base + pos, f"expected a string key, found {describe(buf, pos)}")
    after = _WS.match(buf, string_end(buf, pos, base)).end()  # type: ignore[union-attr]
    if after >= len(buf) or buf[after] != 0x3A:
        raise JsonError("json-syntax", base + after, f"expected ':' after a key, found {describe(buf, after)}")
    return after + 1


def read_key(buf: bytes, pos: int, base: int) -> tuple[str, int]:
    """The key at ``pos`` and the position after its ':'."""
    if pos >= len(buf):
        raise JsonError("json-syntax", base + pos, "unexpected end of header where a key was expected")
    if buf[pos] != 0x22:
        raise JsonError("json-syntax", base + pos, f"expected a string key, found {describe(buf, pos)}")
    key, after = decode_string(buf, pos, base)
    after = _WS.match(buf, after).end()  # type: ignore[union-attr]
    if after >= len(buf) or buf[after] != 0x3A:
        raise JsonError("json-syntax", base + after, f"expected ':' after a key, found {describe(buf, after)}")
    return key, after + 1


def skip(buf: bytes, pos: int, base: int, depth: int = 0) -> int:  # noqa: C901, PLR0912, PLR0915 - one loop over serde_json's grammar, kept whole for speed
    """Validate the value at ``pos`` (inside ``depth`` open containers); return its end.

    Raises the JsonError that `parse` would raise for the same bytes.
    """
    ws = _WS.match
    n = len(buf)
    stack = bytearray()  # b"[" or b"{" per open container
    pos = ws(buf, pos).end()  # type: ignore[union-attr]
    while True:
        # Read one value at pos.
        if pos >= n:
            raise JsonError("json-syntax", base + pos, "unexpected end of header where a value was expected")
        c = buf[pos]
        if c == 0x5B:  # [: a run of them at once
            m = _OPENS.match(buf, pos)
            run = m.group()  # type: ignore[union-attr]
            count = run.count(b"[")
            room = MAX_DEPTH - depth - len(stack)
            if count > room:
                at = pos
                for _ in range(room):
                    at = ws(buf, at + 1).end()  # type: ignore[union-attr]
                raise _depth_error(base, at)
            stack += b"[" * count
            pos = ws(buf, m.end()).end()  # type: ignore[union-attr]
            if pos < n and buf[pos] == 0x5D:
                pos += 1
                stack.pop()
            else:
                runner = _ARRAY_RUN_E if room > count else _ARRAY_RUN
                pos = ws(buf, _run(runner, buf, pos)).end()  # type: ignore[union-attr]
                continue
        elif c == 0x7B:
            m = _OBJECT_OPENS.match(buf, pos)
            if m is not None:
                count = m.group().count(b"{")
                room = MAX_DEPTH - depth - len(stack)
                if count > room:
                    at = pos
                    for _ in range(room):
                        at = buf.find(b"{", at + 1)
                    raise _depth_error(base, at)
                stack += b"{" * count
                pos = m.end()
                continue
            if depth + len(stack) >= MAX_DEPTH:
                raise _depth_error(base, pos)
            stack += b"{"
            pos = ws(buf, pos + 1).end()  # type: ignore[union-attr]
            if pos < n and buf[pos] == 0x7D:
                pos += 1
                stack.pop()
            else:
                runner = _OBJECT_RUN_E if depth + len(stack) < MAX_DEPTH else _OBJECT_RUN
                pos = ws(buf, _run(runner, buf, pos)).end()  # type: ignore[union-attr]
                pos = ws(buf, key_end(buf, pos, base)).end()  # type: ignore[union-attr]
                continue
        else:
            pos = _scalar_end(buf, pos, base)
        # After a complete value: separators and closing brackets.
        while stack:
            pos = ws(buf, pos).end()  # type: ignore[union-attr]
            if pos >= n:
                raise _end_error(base, pos)
            c = buf[pos]
            if c == 0x2C:
                pos += 1
                is_object = stack[-1] == 0x7B
                room = depth + len(stack) < MAX_DEPTH
                if is_object:
                    runner = _OBJECT_RUN_E if room else _OBJECT_RUN
                    pos = ws(buf, _run(runner, buf, pos)).end()  # type: ignore[union-attr]
                    pos = ws(buf, key_end(buf, pos, base)).end()  # type: ignore[union-attr]
                else:
                    runner = _ARRAY_RUN_E if room else _ARRAY_RUN
                    pos = ws(buf, _run(runner, buf, pos)).end()  # type: ignore[union-attr]
                break
            if c not in {0x5D, 0x7D}:
                raise _separator_error(buf, base, pos, is_object=stack[-1] == 0x7B)
            m = _CLOSES.match(buf, pos)
            closers = m.group().translate(None, b" \t\n\r").translate(_CLOSE_OF)  # type: ignore[union-attr]
            k = len(closers)
            if k <= len(stack) and stack[len(stack) - k :] == closers[::-1]:
                del stack[len(stack) - k :]
                pos = m.end()  # type: ignore[union-attr]
                continue
            if k > len(stack) and k == m.end() - pos and stack == closers[len(stack) - 1 :: -1]:  # type: ignore[union-attr]
                # The run closes this value and goes on into the containers
                # around it; without whitespace in it, the value ends after
                # its own closers (one at a time, a deep value's closing run
                # would be matched again per level).
                pos += len(stack)
                del stack[:]
                continue
            # A mismatch (or more closers than containers) inside the run:
            # close one at a time, so the error lands where parse puts it.
            if (c == 0x7D) != (stack[-1] == 0x7B):
                raise _separator_error(buf, base, pos, is_object=stack[-1] == 0x7B)
            pos += 1
            stack.pop()
        else:
            return pos
