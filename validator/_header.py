# Strategy: the header bytes.  UTF-8 first, then JSON, then the header
# object.  Clean headers, the common case, go through the C `json` module
# (fast path); anything the fast path cannot vouch for byte-for-byte goes
# through the exact parser in _json.py, which also locates every finding.
#
# The fast path is only taken when the answer cannot differ from the exact
# parser's: it refuses NaN/Infinity tokens, routes any `-0` or surrogate
# escape to the exact parser (the C module reads `-0` as the integer 0 and
# accepts lone surrogates), and aborts on the first finding of any kind.
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Final, NoReturn

from validator._check import Checker, Retry
from validator._entries import Locator, Table, read_table
from validator._json import _WS, JsonError, parse

if TYPE_CHECKING:
    from validator._json import Json

PREFIX_LEN: Final = 8
_NEEDS_EXACT: Final = re.compile(rb"-0|\\u[dD][89a-fA-F]")
_NOT_SPACE: Final = re.compile(rb"[^ ]")
# The C json fast path (_fast); tests switch it off to compare with the exact parser.
USE_FAST = True


def _refuse_constant(_: str) -> NoReturn:
    raise Retry


def _fast(header: bytes, text: str, out: Checker) -> Table | None:
    """The C json fast path; None when it cannot vouch for the header.

    Leading whitespace and non-space padding are located here directly
    (their offsets need no parser), so such headers stay on the fast path.
    """
    end = len(header.rstrip(b" \t\n\r"))
    lead = _WS.match(header).end()  # type: ignore[union-attr]
    if lead >= end or header[lead] != 0x7B or header[end - 1] != 0x7D:  # { ... }
        return None
    if _NEEDS_EXACT.search(header) is not None:
        return None
    try:
        root: Json = json.loads(text, object_pairs_hook=tuple, parse_constant=_refuse_constant)
        table = read_table(root, None, Locator(None), Checker(fast=True))
    except (Retry, ValueError, RecursionError, MemoryError):
        return None
    if lead:
        _leading(lead, out)
    _padding(header, end, len(header), out)
    return table


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


def check_header(header: bytes, out: Checker) -> Table | None:
    """Check the N header bytes; return the table when the JSON parsed."""
    try:
        text = header.decode("utf-8")
    except UnicodeDecodeError as exc:
        out.add(
            "header-not-utf8",
            f"header byte {header[exc.start : exc.start + 1]!r} is not valid UTF-8 ({exc.reason})",
            PREFIX_LEN + exc.start,
        )
        return None
    table = _fast(header, text, out) if USE_FAST else None
    if table is not None:
        return table
    try:
        parsed = parse(header, PREFIX_LEN)
    except JsonError as exc:
        out.add(exc.slug, exc.message, exc.offset)
        return None
    if parsed.start:
        _leading(parsed.start, out)
    table = read_table(parsed.root, parsed.root_offset, Locator(parsed.positions), out)
    ws_end = _WS.match(header, parsed.end).end()  # type: ignore[union-attr]
    if ws_end < len(header):
        # serde_json: "trailing characters".  NUL padding lands here.
        out.add(
            "header-trailing-bytes",
            f"{len(header) - ws_end} bytes after the JSON object, starting with {header[ws_end : ws_end + 1]!r}; "
            "pad the header with spaces (0x20) only",
            PREFIX_LEN + ws_end,
        )
    _padding(header, parsed.end, ws_end, out)
    return table
