# Strategy: the first region of a file, the 8-byte length prefix.
#
# Spec: "8 bytes: N, an unsigned little-endian 64-bit integer, containing the
# size of the header"; "N bytes: a JSON UTF-8 string representing the header".
# The reference refuses N > 100,000,000 before it looks at the file length,
# so a huge N on a short file is HeaderTooLarge, not InvalidHeaderLength.
from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from validator._check import Checker

PREFIX_LEN: Final = 8
MAX_HEADER_SIZE: Final = 100_000_000


def check_prefix(prefix: bytes, file_size: int, out: Checker) -> int | None:
    """Check the length prefix; return N when the header can be read."""
    if file_size < PREFIX_LEN:
        out.add("file-too-small", f"file is {file_size} bytes; the 8-byte length prefix alone needs 8", 0)
        return None
    n = int.from_bytes(prefix[:PREFIX_LEN], "little")
    if n > MAX_HEADER_SIZE:
        out.add("header-too-large", f"declared header length {n} exceeds the limit of {MAX_HEADER_SIZE} bytes", 0)
        return None
    if PREFIX_LEN + n > file_size:
        out.add(
            "header-length-exceeds-file",
            f"declared header length {n} needs {PREFIX_LEN + n} bytes but the file has {file_size}",
            0,
        )
        return None
    if n % 8:
        # Spec: padding the header so that the data region is 8-byte aligned
        # is advisory; an unaligned data region forces copies on load.
        out.add("header-unaligned", f"header length {n} is not a multiple of 8; the data region starts unaligned", 0)
    return n
