# Strategy: torch.load's second test (torch/serialization.py _legacy_load,
# legacy_load), for a file that is not a zip: tarfile.open(mode="r:") on it
# from byte 0.  tarfile takes a first block as a header when its checksum
# adds up, whatever its magic says (a pre-POSIX tar has no "ustar").  Then
# torch extracts "storages" (the last member of that name, as getmember
# finds it): a pickled count, per storage a pickle and raw bytes, then the
# storage views; "tensors": a pickled count then raw records; then unpickles
# "pickle".  A member missing stops it (KeyError).  A tarfile.TarError on the
# way (a bad later header, a member cut short) sends torch back to the
# legacy stream at byte 0, which the caller then reads too.
from __future__ import annotations

import struct
import tarfile
from typing import TYPE_CHECKING, Final

from validator.formats._buffer import BufferFile
from validator.formats._errors import ArchiveError

if TYPE_CHECKING:
    import mmap

    Buffer = bytes | mmap.mmap

__all__ = ["MAX_MEMBER", "MAX_MEMBERS", "Cut", "member", "members", "tar_header"]

MAX_MEMBERS: Final = 100_000
MAX_MEMBER: Final = 256 << 20  # a pickle member is copied
_BLOCK: Final = 512
_UNSIGNED: Final = struct.Struct("148B8x356B")
_SIGNED: Final = struct.Struct("148b8x356b")


def tar_header(head: bytes) -> bool:
    """Whether tarfile takes ``head``'s first block as a header (its checksum adds up)."""
    block = head[:_BLOCK]
    if len(block) < _BLOCK or block.count(0) == _BLOCK:
        return False
    field = block[148:156]
    if field[0] in {0o200, 0o377}:  # base-256, as tarfile's nti reads it
        declared = int.from_bytes(field[1:], "big")
        if field[0] == 0o377:
            declared -= 256 ** (len(field) - 1)
    else:
        try:
            declared = int(field.split(b"\x00", 1)[0].decode("ascii").strip() or "0", 8)
        except (UnicodeDecodeError, ValueError):
            return False
    return declared in {256 + sum(_UNSIGNED.unpack_from(block)), 256 + sum(_SIGNED.unpack_from(block))}


def members(buf: Buffer) -> dict[str, tarfile.TarInfo] | None:
    """The tar's members by name (the last of a name), or None when torch would
    go back to the legacy stream (tarfile refuses the file)."""
    found: dict[str, tarfile.TarInfo] = {}
    try:
        with tarfile.open(fileobj=BufferFile(buf), mode="r:") as archive:
            for count, m in enumerate(archive):
                if count >= MAX_MEMBERS:
                    raise ArchiveError(f"tar archive with more than {MAX_MEMBERS:,} members")
                found[m.name] = m
    except (tarfile.TarError, EOFError, OSError, ValueError, OverflowError):
        return None
    return found


class Cut(Exception):  # noqa: N818 - a signal, not an error: torch goes back to the legacy stream
    """A member cut short by the end of the file: tarfile raises, torch reads byte 0 instead."""


def member(buf: Buffer, found: dict[str, tarfile.TarInfo], name: str) -> bytes | None:
    """The bytes torch extracts for ``name``; None when it is missing (torch stops).

    Raises Cut where the member runs past the end of the file, ArchiveError
    where it is not a regular file.
    """
    m = found.get(name)
    if m is None:
        return None
    start = m.offset_data
    if start + m.size > len(buf):
        raise Cut(name)
    if not m.isreg():
        raise ArchiveError(f"bad tar archive: member {name!r} is not a regular file")
    if m.size > MAX_MEMBER:
        raise ArchiveError(f"tar member {name!r} is larger than {MAX_MEMBER >> 20} MiB: not read")
    return bytes(buf[start : start + m.size])
