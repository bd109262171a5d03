# Strategy: shrunk inputs that the property tests found or that sit on a
# boundary the strategies reach only by chance, pinned as named byte strings
# (a directory database would tie them to test names and Hypothesis's
# internal encoding; these stay readable and survive refactoring).
from __future__ import annotations


def _file(header: bytes, data: bytes = b"") -> bytes:
    return len(header).to_bytes(8, "little") + header + data


REGRESSIONS: dict[str, bytes] = {
}
