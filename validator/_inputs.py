# Strategy: the one reader of the files stcheck reads as input to its own
# decisions, never as something vetted: checksum lists (--checksums),
# policies (--policy, a discovered pyproject.toml), keys, certificates,
# Sigstore trust configurations and model signatures.  Each must be a
# regular file (validator._source.open_regular: a FIFO, a device, a socket
# or a directory is refused by its kind, without blocking), no larger than
# the bound its kind gives, and is read once, whole: a link to /dev/zero or
# a file that grows while it is read is refused, never read on.  A refusal
# is one SourceError line naming the path and why.
from __future__ import annotations

from typing import Final

from validator._errors import SourceError
from validator._source import RegularFile, os_error, read_exact

__all__ = ["CHECKSUMS_LIMIT", "KEY_LIMIT", "POLICY_LIMIT", "read_input"]

CHECKSUMS_LIMIT: Final = 64 << 20  # bytes: some 600,000 sha256sum lines
POLICY_LIMIT: Final = 4 << 20  # bytes: a policy or a pyproject.toml
KEY_LIMIT: Final = 4 << 20  # bytes: a PEM key, a certificate chain, a trust configuration


def read_input(path: str, what: str, limit: int) -> bytes:
    """The whole of the regular file ``path``, a ``what`` ("checksum list")
    of at most ``limit`` bytes; raise SourceError (one line) otherwise."""
    try:
        with RegularFile(path) as (fd, st):
            # A size past the bound is refused before the read; one that
            # grows past it while read is caught below by the extra byte.
            data = b"" if st.st_size > limit else read_exact(fd, 0, limit + 1)
            size = st.st_size
    except SourceError as exc:
        if str(exc).endswith(": not a regular file"):
            raise SourceError(f"{path}: not a regular file: a {what} is read from a file") from exc
        raise
    except OSError as exc:
        raise os_error(path, exc) from exc
    if size > limit:
        msg = f"{path}: {size} bytes, more than the {limit} a {what} may have"
        raise SourceError(msg)
    if len(data) > limit:
        msg = f"{path}: grew past the {limit} bytes a {what} may have while it was read"
        raise SourceError(msg)
    return data
