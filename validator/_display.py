# Strategy: how a path or a line reaches a terminal, a log or a report.
# File names are bytes on POSIX: Python decodes the undecodable ones with
# surrogateescape, and a name may hold a newline, an escape sequence or a
# bidi override.  Written as they are, such names crash a UTF-8 writer
# (UnicodeEncodeError on a lone surrogate), break a line-based log, or forge
# output (a name ending in "\n1 file checked: 1 valid").  Every output path
# goes through this module instead.
#
# escape_path is `ls -b`: printable characters stay, a backslash doubles,
# \n \r \t are written so, a byte Python could not decode (a surrogateescape
# code point U+DC80..U+DCFF) is \xNN of the original byte, any other
# unprintable character (controls, bidi marks, lone surrogates) is \xNN,
# \uNNNN or \UNNNNNNNN.  The result is one line of valid Unicode, and the
# original name can be read back from it unambiguously.  escape_line does the
# same to a whole line of text but leaves backslashes alone (a message that
# quotes a name with repr() already escapes them).
from __future__ import annotations

from typing import Final, Protocol

__all__ = ["encodable", "escape_line", "escape_path", "finding_line", "plural"]

_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(c: str) -> str:
    named = _NAMED.get(c)
    if named is not None:
        return named
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:  # a byte surrogateescape could not decode
        return f"\\x{o - 0xDC00:02x}"
    if o < 0x100:
        return f"\\x{o:02x}"
    if o < 0x10000:
        return f"\\u{o:04x}"
    return f"\\U{o:08x}"


def escape_path(path: str) -> str:
    """A path as one printable line, escaped the way ``ls -b`` does."""
    if path.isprintable() and "\\" not in path:
        return path
    return "".join("\\\\" if c == "\\" else c if c.isprintable() else _escape_char(c) for c in path)


def escape_line(text: str) -> str:
    """A line of output with every unprintable character escaped (backslashes kept)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape_char(c) for c in text)


def encodable(text: str) -> bool:
    """Whether ``text`` is valid Unicode (no lone surrogates) and so can be written as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class _FindingLike(Protocol):
    @property
    def code(self) -> str: ...
    @property
    def slug(self) -> str: ...
    @property
    def offset(self) -> int | None: ...
    @property
    def message(self) -> str: ...


def finding_line(path: str, finding: _FindingLike) -> str:
    """``path:offset: CODE slug message``, or ``path: CODE slug message`` when
    no single offset applies; the path escaped, the line printable."""
    where = escape_path(path) if path else "<bytes>"
    if finding.offset is not None:
        where += f":{finding.offset}"
    return escape_line(f"{where}: {finding.code} {finding.slug} {finding.message}")


def plural(n: int, noun: str, many: str | None = None) -> str:
    """A count and its noun, singular only for one: ``1 error``, ``2 errors``,
    ``0 errors``; ``many`` is the plural when adding an s is wrong."""
    return f"{n} {noun if n == 1 else many or noun + 's'}"
