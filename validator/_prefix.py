# Strategy: the first region of a file, the 8-byte length prefix.
#
# Spec: "8 bytes: N, an unsigned little-endian 64-bit integer, containing the
# size of the header"; "N bytes: a JSON UTF-8 string representing the header".
# The reference refuses N > 100,000,000 before it looks at the file length,
# so a huge N on a short file is HeaderTooLarge, not InvalidHeaderLength.
#
# When the prefix fails, the file is often not a safetensors file at all (a
# pickle, an HTML error page, a Git LFS pointer): _sniff names the format,
# and that diagnosis is the file's one finding, in place of the prefix
# finding (issue 20: "ST102 header-too-large" first was noise, and counted
# as a second error everywhere).  The reference error class stays the
# prefix's: the message says what safetensors 0.8.0 answers, and the report
# keeps the class (prefix_rule).  No message quotes the first 8 bytes as a
# number: they are another format's bytes (the text "root:x:0" would read as
# 3475222254926655346).
from __future__ import annotations

from typing import TYPE_CHECKING, Final

from validator._display import plural
from validator._rules import BY_SLUG, MAX_HEADER_SIZE, PREFIX_LEN
from validator._sniff import SNIFF_LEN, Identified, identify

if TYPE_CHECKING:
    from collections.abc import Callable

    from validator._check import Checker

__all__ = ["check_prefix", "prefix_rule"]

# PREFIX_LEN and MAX_HEADER_SIZE are defined with the rule catalogue, which
# states its rules against them (and which _findings may import without a cycle).
# A declared length is quoted as a number only below this: 8 bytes whose top
# four are zero are a length, not text or another format's magic.
_QUOTED_BELOW: Final = 1 << 32


def check_prefix(
    prefix: bytes,
    file_size: int,
    out: Checker,
    read_more: Callable[[int], bytes] | None = None,
) -> int | None:
    """Check the length prefix; return N when the header can be read.

    ``read_more(k)`` reads k bytes after the prefix; when given, a failing
    prefix makes the file's first bytes be checked for a foreign format.
    """
    if file_size < PREFIX_LEN:
        out.add("file-too-small", f"file is {plural(file_size, 'byte')}; the 8-byte length prefix alone needs 8", 0)
        return None
    n = int.from_bytes(prefix[:PREFIX_LEN], "little")
    failed = prefix_rule(prefix, file_size)
    if failed is not None:
        found = _foreign(prefix, file_size, read_more)
        if found is not None:
            refused = BY_SLUG[failed].reference_error
            out.add(found.slug, f"{found.message}; safetensors 0.8.0 refuses it with {refused} ({_why(failed)})", 0)
        elif failed == "header-too-large":
            out.add(failed, _too_large(n), 0)
        else:
            out.add(failed, _exceeds(n, file_size), 0)
        return None
    if n % 8:
        # Spec: padding the header so that the data region is 8-byte aligned
        # is advisory; an unaligned data region forces copies on load.
        out.add("header-unaligned", f"header length {n} is not a multiple of 8; the data region starts unaligned", 0)
    return n


def _foreign(prefix: bytes, file_size: int, read_more: Callable[[int], bytes] | None) -> Identified | None:
    if read_more is None:
        return identify(bytes(prefix[:PREFIX_LEN]), file_size)
    more = min(SNIFF_LEN, file_size) - PREFIX_LEN
    head = bytes(prefix[:PREFIX_LEN]) + (bytes(read_more(more)) if more > 0 else b"")
    return identify(head, file_size)


def prefix_rule(prefix: bytes, file_size: int) -> str | None:
    """The slug of the length-prefix rule a file breaks (its reference error
    class is what safetensors 0.8.0 raises), or None when the header can be read."""
    if file_size < PREFIX_LEN:
        return "file-too-small"
    n = int.from_bytes(prefix[:PREFIX_LEN], "little")
    if n > MAX_HEADER_SIZE:
        return "header-too-large"
    if PREFIX_LEN + n > file_size:
        return "header-length-exceeds-file"
    return None


def _why(failed: str) -> str:
    if failed == "header-too-large":
        return f"its first 8 bytes, read as a header length, exceed {MAX_HEADER_SIZE:,}"
    return "its first 8 bytes, read as a header length, run past the end of the file"


def _too_large(n: int) -> str:
    limit = f"the limit of {MAX_HEADER_SIZE} bytes"
    if n >= _QUOTED_BELOW:
        return f"declared header length of 2^{n.bit_length() - 1} or more exceeds {limit}"
    return f"declared header length {n} exceeds {limit}"


def _exceeds(n: int, file_size: int) -> str:
    return f"declared header length {n} needs {PREFIX_LEN + n} bytes but the file has {file_size}"
