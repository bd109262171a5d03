# Strategy: the one ZIP reader, for every format that is a zip inside
# (torch.save since torch 1.6, NumPy's .npz, an archive met in a folder).
# Its layouts are the struct table below (APPNOTE.TXT 4.3); the two readers
# it stands in for are CPython's zipfile (numpy.load) and miniz
# (torch.load, through caffe2/serialize/inline_container.cc).  Where they
# could read the same bytes differently, the archive is refused
# (ArchiveError) rather than read one way:
#
# - the end record: zipfile takes the one at size - 22 when its comment
#   length is 0, else the last signature in the final 64 KiB + 22; miniz
#   takes the last signature with 22 bytes after it.  They must agree.
# - the zip64 end record: zipfile looks right before the locator, miniz
#   where the locator points.  They must agree.
# - data before the archive: zipfile shifts every offset by it, miniz does
#   not: refused.
# - the member count: zipfile reads the directory to its size, miniz counts
#   the entries the end record says (and reads no more): zipfile's reading.
# - every local header must repeat its directory entry's name and method
#   (and CRC and sizes unless a data descriptor follows): both loaders take
#   these from the directory, but a tool that walks local headers does not.
# - a name with a NUL byte: zipfile cuts it there, miniz does not.
#
# Members a loader cannot open (encrypted, flag bits 0x20 or 0x40, a method
# other than stored, deflate, bzip2 and LZMA) are listed with the reason,
# read as Unreadable.  Names are looked up as miniz looks them up: ASCII
# case folded.
from __future__ import annotations

import bz2
import lzma
import re
import struct
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from validator.formats._errors import ArchiveError, Unreadable
from validator.formats._inflate import ERRORS, Decoder, inflate

if TYPE_CHECKING:
    import mmap

    Buffer = bytes | mmap.mmap

__all__ = [
    "DESCRIPTOR",
    "ENCRYPTED",
    "MAX_COMMENT",
    "MAX_INFLATE",
    "MAX_MEMBER",
    "MAX_MEMBERS",
    "METHODS",
    "PATCHED",
    "SIG_EOCD",
    "SIG_LOCAL",
    "STRONG",
    "UTF8",
    "Archive",
    "Member",
    "member_bytes",
    "names_a_pickle",
    "open_zip",
]

MAX_MEMBERS: Final = 100_000
MAX_MEMBER: Final = 256 << 20  # a member's compressed size, read whole (it is copied)
MAX_INFLATE: Final = 256 << 20  # a member's decompressed size, read whole
MAX_COMMENT: Final = 0xFFFF

# Each record's layout, one (struct code, field) per field in APPNOTE order.
_EOCD: Final = struct.Struct("<4sHHHHIIH")
# sig, disk, cd disk, entries here, entries, cd size, cd offset, comment length
_LOCATOR: Final = struct.Struct("<4sIQI")
# sig, disk of the zip64 end record, its offset, disks
_EOCD64: Final = struct.Struct("<4sQHHIIQQQQ")
# sig, size, made by, needed, disk, cd disk, entries here, entries, cd size, cd offset
_CENTRAL: Final = struct.Struct("<4sHHHHHHIIIHHHHHII")
# sig, made by, needed, flags, method, time, date, crc, csize, usize,
# name length, extra length, comment length, disk, internal attrs, external attrs, local header offset
_LOCAL: Final = struct.Struct("<4sHHHHHIIIHH")
# sig, needed, flags, method, time, date, crc, csize, usize, name length, extra length
_EXTRA: Final = struct.Struct("<HH")
_U64: Final = struct.Struct("<Q")
SIG_EOCD: Final = b"PK\x05\x06"
SIG_LOCAL: Final = b"PK\x03\x04"
_SIG_CENTRAL: Final = b"PK\x01\x02"
_SIG_LOCATOR: Final = b"PK\x06\x07"
_SIG_EOCD64: Final = b"PK\x06\x06"
_ZIP64_EXTRA: Final = 0x0001
_FULL: Final = 0xFFFFFFFF

ENCRYPTED: Final = 0x01
DESCRIPTOR: Final = 0x08
PATCHED: Final = 0x20
STRONG: Final = 0x40
UTF8: Final = 0x800
STORED, DEFLATED, BZIP2, LZMA = 0, 8, 12, 14
METHODS: Final = {STORED: "stored", DEFLATED: "deflate", BZIP2: "bzip2", LZMA: "lzma"}
_ESCAPE: Final = re.compile(r"^(?:[/\\]|[A-Za-z]:)|(?:^|[/\\])\.\.(?:[/\\]|$)")


@dataclass(frozen=True, slots=True)
class Member:
    """One member, as its directory entry and local header agree it is."""

    name: str  # decoded as zipfile decodes it
    flags: int
    method: int
    crc: int
    compressed: int
    size: int
    start: int  # the first byte of its data

    @property
    def unreadable(self) -> str | None:
        """Why no loader opens it, or None."""
        if self.flags & ENCRYPTED:
            return "encrypted"
        if self.flags & PATCHED:
            return "compressed patched data (flag bit 0x20)"
        if self.flags & STRONG:
            return "strong encryption (flag bit 0x40)"
        if self.method not in METHODS:
            return f"compression method {self.method}"
        return None

    @property
    def escapes(self) -> bool:
        """Whether unpacking it would write outside the folder (``../``, absolute, a drive)."""
        return _ESCAPE.search(self.name) is not None


@dataclass(frozen=True, slots=True)
class Archive:
    """A zip's members, in directory order."""

    members: tuple[Member, ...]

    def find(self, name: str) -> list[Member]:
        """The members named ``name`` with ASCII case folded, as miniz finds them."""
        want = _fold(name)
        return [m for m in self.members if _fold(m.name) == want]


def _fold(name: str) -> str:
    return name.translate(_ASCII_LOWER)


_ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _bad(what: str) -> ArchiveError:
    return ArchiveError(f"bad zip archive: {what}")


def _end_zipfile(buf: Buffer) -> int | None:
    size = len(buf)
    at = size - _EOCD.size
    if at >= 0 and buf[at : at + 4] == SIG_EOCD and buf[size - 2 : size] == b"\x00\x00":
        return at
    low = max(0, size - MAX_COMMENT - 1 - _EOCD.size)
    found = bytes(buf[low:size]).rfind(SIG_EOCD)
    if found < 0 or low + found + _EOCD.size > size:
        return None
    return low + found


def _end_miniz(buf: Buffer) -> int | None:
    size = len(buf)
    low = max(0, size - MAX_COMMENT - _EOCD.size)
    tail = bytes(buf[low : size - _EOCD.size + 4]) if size >= _EOCD.size else b""
    found = tail.rfind(SIG_EOCD)
    return None if found < 0 else low + found


def open_zip(buf: Buffer) -> Archive:
    """The members of the zip in ``buf``; raises ArchiveError."""
    end = _end_zipfile(buf)
    if end is None:
        raise _bad("no end of central directory record")
    # At size - 22 the two agree (no later signature has 22 bytes after it):
    # the last 64 KiB are searched only for an archive with a comment.
    if end != len(buf) - _EOCD.size and _end_miniz(buf) != end:
        raise ArchiveError("ambiguous zip archive: torch.load and numpy.load would take different end records")
    # zipfile reads the directory to its size, whatever the counts and disk
    # numbers say; miniz, which checks them, reads no more than that.
    *_, cd_size, cd_offset, _ = _EOCD.unpack_from(buf, end)
    directory_end = end
    if end >= _LOCATOR.size and buf[end - _LOCATOR.size : end - _LOCATOR.size + 4] == _SIG_LOCATOR:
        _, disk64, where, disks = _LOCATOR.unpack_from(buf, end - _LOCATOR.size)
        at = end - _LOCATOR.size - _EOCD64.size
        if disk64 != 0 or disks > 1:
            raise Unreadable("a zip archive that spans several disks")
        if at < 0 or where != at or buf[at : at + 4] != _SIG_EOCD64:
            raise ArchiveError("ambiguous zip archive: its zip64 locator does not point right before itself")
        *_, cd_size, cd_offset = _EOCD64.unpack_from(buf, at)
        directory_end = at
    if cd_offset + cd_size != directory_end:
        raise ArchiveError("bad zip archive: data before the archive or between its directory and end record")
    members: list[Member] = []
    at = cd_offset
    while at < directory_end:
        if len(members) >= MAX_MEMBERS:
            raise ArchiveError(f"zip archive with more than {MAX_MEMBERS:,} members")
        members.append(_entry(buf, at, directory_end))
        at += _CENTRAL.size + sum(_CENTRAL.unpack_from(buf, at)[10:13])
    return Archive(tuple(members))


def _entry(buf: Buffer, at: int, limit: int) -> Member:
    if at + _CENTRAL.size > limit or buf[at : at + 4] != _SIG_CENTRAL:
        raise _bad(f"no central directory entry at byte {at}")
    fields = _CENTRAL.unpack_from(buf, at)
    flags, method, crc, csize, usize, nlen, xlen, clen, offset = (*fields[3:5], *fields[7:13], fields[16])
    name_at = at + _CENTRAL.size
    if name_at + nlen + xlen + clen > limit:
        raise _bad(f"the central directory entry at byte {at} runs past the directory")
    raw = bytes(buf[name_at : name_at + nlen])
    try:
        name = raw.decode("utf-8" if flags & UTF8 else "cp437")
    except UnicodeDecodeError:
        raise _bad(f"member name {raw!r} is not UTF-8") from None
    if "\x00" in name:
        raise ArchiveError(f"ambiguous zip archive: member name {raw!r} holds a NUL byte")
    usize, csize, offset = _zip64(bytes(buf[name_at + nlen : name_at + nlen + xlen]), usize, csize, offset, name)
    start = _local(buf, offset, raw, name, (flags, method, crc, csize, usize))
    return Member(name, flags, method, crc, csize, usize, start)


def _zip64(extra: bytes, usize: int, csize: int, offset: int, name: str) -> tuple[int, int, int]:
    # zipfile's reading: in the zip64 field, the sizes and offset that are
    # 0xFFFFFFFF in the entry follow in this order.
    while len(extra) >= _EXTRA.size:
        kind, n = _EXTRA.unpack_from(extra)
        if _EXTRA.size + n > len(extra):
            raise _bad(f"corrupt extra field of {name!r}")
        if kind == _ZIP64_EXTRA:
            data = extra[_EXTRA.size : _EXTRA.size + n]
            values = [usize, csize, offset]
            for i, value in enumerate(values):
                if value == _FULL:
                    if len(data) < _U64.size:
                        raise _bad(f"corrupt zip64 extra field of {name!r}")
                    (values[i],) = _U64.unpack_from(data)
                    data = data[_U64.size :]
            usize, csize, offset = values
        extra = extra[_EXTRA.size + n :]
    return usize, csize, offset


def _local(buf: Buffer, off: int, raw: bytes, name: str, central: tuple[int, int, int, int, int]) -> int:
    """Where a member's data starts, once its local header agrees with its directory entry."""
    flags, method, crc, csize, usize = central
    if off + _LOCAL.size > len(buf):
        raise _bad(f"the local header of {name!r} lies outside the file")
    sig, _, _, lmethod, _, _, lcrc, lcsize, lusize, nlen, xlen = _LOCAL.unpack_from(buf, off)
    if sig != SIG_LOCAL or bytes(buf[off + _LOCAL.size : off + _LOCAL.size + nlen]) != raw:
        raise _bad(f"the local header of {name!r} does not match the central directory")
    if lmethod != method:
        raise _bad(f"{name!r} has a different method in its local header")
    if not flags & DESCRIPTOR and (lcrc != crc or lcsize not in {_FULL, csize} or lusize not in {_FULL, usize}):
        raise _bad(f"{name!r} has a different CRC or size in its local header")
    start: int = off + _LOCAL.size + nlen + xlen
    if start + csize > len(buf):
        raise _bad(f"{name!r} runs past the end of the file")
    return start


def _decoder(buf: Buffer, m: Member) -> tuple[Decoder, int]:
    if m.method == DEFLATED:
        return Decoder(zlib.decompressobj(-15)), m.start
    if m.method == BZIP2:
        return Decoder(bz2.BZ2Decompressor()), m.start
    # LZMA: a 2-byte version, a 2-byte length, the LZMA1 properties, then raw data (APPNOTE 5.8.8)
    head = bytes(buf[m.start : m.start + 4])
    if len(head) < 4 or m.compressed < 4 + int.from_bytes(head[2:4], "little"):
        raise _bad(f"{m.name!r} has a truncated LZMA header")
    n = int.from_bytes(head[2:4], "little")
    props = bytes(buf[m.start + 4 : m.start + 4 + n])
    decode = getattr(lzma, "_decode_filter_properties")  # noqa: B009 - zipfile's own call, absent from the stubs
    try:
        chain = [decode(lzma.FILTER_LZMA1, props)]
    except ERRORS:
        raise _bad(f"{m.name!r} has bad LZMA properties") from None
    return Decoder(lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=chain)), m.start + 4 + n


def names_a_pickle(buf: Buffer) -> bool:
    """Whether any directory entry or local header in ``buf`` names a ``.pkl``.

    For an archive open_zip refused: the readers it stands in for might still
    find a pickle in it (miniz reads names from the directory, a tool that
    walks local headers from those), so its refusal cannot be a clean verdict.
    """
    for count, hit in enumerate(_SIGNATURES.finditer(buf)):
        if count >= 2 * MAX_MEMBERS:
            return True  # too many to look at: assume the worst
        at = hit.start()
        layout, name_field = (_CENTRAL, 10) if hit.group() == _SIG_CENTRAL else (_LOCAL, 9)
        if at + layout.size > len(buf):
            continue
        n = layout.unpack_from(buf, at)[name_field]
        name = bytes(buf[at + layout.size : at + layout.size + n]).lower()
        if name.endswith(b".pkl") or name.split(b"\x00", 1)[0].endswith(b".pkl"):  # zipfile cuts at a NUL
            return True
    return False


_SIGNATURES: Final = re.compile(re.escape(_SIG_CENTRAL) + b"|" + re.escape(SIG_LOCAL))


def member_bytes(buf: Buffer, m: Member, *, limit: int | None = None) -> bytes:
    """A member's content: whole (CRC checked), or its first ``limit`` bytes.

    Raises Unreadable for a member no loader opens, ArchiveError for bad data.
    """
    why = m.unreadable
    if why is not None:
        raise Unreadable(f"{m.name!r} is {why}" if "method" not in why else f"{m.name!r} uses {why}")
    end = m.start + m.compressed
    whole = limit is None
    if whole and m.compressed > MAX_MEMBER:
        raise ArchiveError(f"{m.name!r} is larger than {MAX_MEMBER >> 20} MiB: not read")
    if m.method == STORED:
        data = bytes(buf[m.start : end if limit is None else min(end, m.start + limit)])
    else:
        bound = MAX_INFLATE if limit is None else limit
        try:
            dec, start = _decoder(buf, m)
            data, _ = inflate(lambda: dec, buf, start, end, bound)
        except ERRORS as exc:
            raise _bad(f"{m.name!r} does not decompress ({exc})") from None
        if whole and len(data) > bound:
            raise ArchiveError(f"{m.name!r} decompresses to more than {bound >> 20} MiB: not read")
        data = data[:bound]
    if not whole:
        return data
    if len(data) != m.size:
        raise _bad(f"{m.name!r} is not the size its directory entry says")
    crc = zlib.crc32(data)
    if crc != m.crc:
        raise _bad(f"the CRC32 of {m.name!r} does not match (0x{crc:08x}, not 0x{m.crc:08x})")
    return data
