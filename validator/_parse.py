# Strategy: the token-by-token tree builder over the grammar of _json.py:
# `parse` builds a value (objects as tuples of (key, value) pairs in
# document order, duplicates kept; arrays as lists) with the byte offset
# of every key and value in a side table, and stops at the first syntax
# error, as serde_json does.  It is iterative, so no input can exhaust the
# Python stack.  The exact path uses it on one member of the header at a
# time; the tree path (check_header(scan=False), the oracle of the tests)
# on the whole header.
from __future__ import annotations

from array import array

from validator._json import (
    _WS,
    MAX_DEPTH,
    Json,
    JsonError,
    _depth_error,
    _end_error,
    _parse_scalar,
    _separator_error,
    read_key,
    skip,
)

__all__ = ["Parsed", "parse"]


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
        positions: dict[int, array[int]],
        start: int,
        end: int,
    ) -> None:
        self.root = root
        self.root_offset = root_offset
        self.positions = positions
        self.start = start
        self.end = end


class _Frame:
    __slots__ = ("is_object", "items", "key", "key_at", "offsets", "open_at")

    def __init__(self, is_object: bool, open_at: int) -> None:  # noqa: FBT001
        self.is_object = is_object
        self.open_at = open_at
        self.items: list[Json] = []
        self.offsets: array[int] = array("q")
        self.key = ""
        self.key_at = 0

    def add(self, value: Json, at: int) -> None:
        if self.is_object:
            self.items.append((self.key, value))  # type: ignore[arg-type]
            self.offsets.append(self.key_at)
        else:
            self.items.append(value)
        self.offsets.append(at)

    def finish(self, positions: dict[int, array[int]]) -> Json:
        done: Json = tuple(self.items) if self.is_object else self.items  # type: ignore[arg-type]
        positions[id(done)] = self.offsets
        return done


def parse(  # noqa: C901, PLR0912, PLR0915 - serde_json's value grammar, one branch per token kind
    buf: bytes,
    base: int,
    pos: int = 0,
    *,
    depth: int = 0,
    keep: frozenset[str] | None = None,
) -> Parsed:
    """Parse the JSON value at ``buf[pos:]`` whose first byte sits at offset ``base``.

    ``depth`` counts the containers around it.  With ``keep``, members of
    the outermost object whose key is not in ``keep`` are validated but not
    built: their value is None.  Raises JsonError at the first fatal
    problem.  Trailing bytes after the value are not an error here:
    ``Parsed.end`` says where the value ended.
    """
    n = len(buf)
    ws = _WS.match
    positions: dict[int, array[int]] = {}
    pos = ws(buf, pos).end()  # type: ignore[union-attr]
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
        if keep is not None and len(stack) == 1 and stack[0].is_object and stack[0].key not in keep:
            value, pos = None, skip(buf, pos, base, depth + 1)
        elif c in {0x7B, 0x5B}:  # { or [
            if depth + len(stack) >= MAX_DEPTH:
                raise _depth_error(base, pos)
            frame = _Frame(c == 0x7B, pos)
            stack.append(frame)
            pos = ws(buf, pos + 1).end()  # type: ignore[union-attr]
            if pos < n and buf[pos] == (0x7D if frame.is_object else 0x5D):
                pos += 1
                stack.pop()
                value = frame.finish(positions)
            else:
                if frame.is_object:
                    frame.key_at = base + pos
                    frame.key, pos = read_key(buf, pos, base)
                continue
        else:
            value, pos = _parse_scalar(buf, pos, base)
        # Attach the complete value to its parent, closing containers as we go.
        while stack:
            frame = stack[-1]
            frame.add(value, base + value_pos)
            pos = ws(buf, pos).end()  # type: ignore[union-attr]
            if pos >= n:
                raise _end_error(base, pos)
            c = buf[pos]
            if c == 0x2C:  # ,
                pos = ws(buf, pos + 1).end()  # type: ignore[union-attr]
                if frame.is_object:
                    frame.key_at = base + pos
                    frame.key, pos = read_key(buf, pos, base)
                break
            if c != (0x7D if frame.is_object else 0x5D):
                raise _separator_error(buf, base, pos, is_object=frame.is_object)
            pos += 1
            stack.pop()
            value_pos = frame.open_at
            value = frame.finish(positions)
        else:
            return Parsed(value, base + value_pos, positions, start, pos)
