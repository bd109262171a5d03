# Strategy: find every pickle stream a loader would read in a container, and
# hand each to the stream reader (_ops).  One function per container:
#
# - zip (torch.save since torch 1.6; .npz): the central directory is listed
#   with zipfile, and every member's local header must agree with it (name,
#   method, and CRC and sizes unless a data descriptor follows).  Every
#   member whose name ends in ".pkl", in any folder, is read whole, its CRC32
#   checked, and read as a pickle: torch.load picks its record prefix from
#   the archive, so an "x/data.pkl" or "foo/extra.pkl" counts as much as
#   "archive/data.pkl".  Tensor members ("data/0", ...) are raw bytes: only
#   their headers are checked, not their CRC, so that a 500 MB checkpoint
#   costs a read of its pickle members, not of its weights.
# - legacy torch.save: five pickles in a row (magic number, protocol
#   version, sys_info, the object, the storage keys), then raw storage bytes,
#   which are never read as a pickle.
# - legacy tar (torch < 0.4): members sys_info, pickle, storages, tensors.
#   storages and tensors interleave pickles with raw bytes whose layout
#   depends on the storage types; a tar whose storages or tensors count is
#   not 0 is refused rather than half-read.
# - .npy: the header is a Python literal; an object dtype ("O") means the
#   data is a pickle (np.load(allow_pickle=True)), which is read.
# - joblib: a pickle with array bytes after each NumpyArrayWrapper (_ops
#   skips them), possibly compressed whole: decompressed up to MAX_INFLATE.
from __future__ import annotations

import ast
import io
import re
import struct
import tarfile
import zipfile
import zlib
from typing import TYPE_CHECKING, Final

from validator.pickles._ops import Reader, ReadError
from validator.pickles._sniff import compression, decompressor, sniff

if TYPE_CHECKING:
    import mmap

    Buffer = bytes | mmap.mmap

MAX_MEMBERS: Final = 100_000
MAX_MEMBER: Final = 256 << 20  # a pickle member's stored size (it is copied)
MAX_INFLATE: Final = 256 << 20  # decompressed output of one member or one joblib file
MAX_NPY_HEADER: Final = 1 << 20
_CHUNK: Final = 1 << 20
_LOCAL: Final = struct.Struct("<4sHHHHHIIIHH")
_DESCRIPTOR: Final = 0x08
_UTF8: Final = 0x800
_OBJECT_DESCR: Final = re.compile(r"[<>|=]?O\d*")


class ArchiveError(Exception):
    """A container that is not what it claims (the public API reports it as a problem)."""


def read(buf: Buffer, reader: Reader) -> str:
    """Read every pickle stream in ``buf`` into ``reader``; return the container's kind.

    Raises ReadError (a stream) or ArchiveError (the container).
    """
    kind = sniff(bytes(buf[:4096])) or "pickle"
    if kind in {"torch-zip", "npz"}:
        return _zip(buf, reader)
    if kind == "npy":
        _npy(buf, 0, len(buf), reader)
        return "npy"
    if kind == "torch-tar":
        return _tar(buf, reader)
    if kind == "torch-legacy":
        reader.legacy(buf, 0, len(buf))
        return kind
    method = compression(bytes(buf[:8]))
    if kind == "joblib" and method is not None:
        _whole(_decompress(buf, method), reader)
        return "joblib"
    _whole(buf, reader)
    return "joblib" if reader.joblib else "pickle"


def _whole(buf: Buffer, reader: Reader, start: int = 0, end: int | None = None) -> None:
    # One stream to its STOP, then nothing: a second pickle.load would run
    # whatever follows, so trailing bytes must read as pickles too.
    end = len(buf) if end is None else end
    _, pos = reader.stream(buf, start, end)
    while pos < end:
        pos = _next_stream(buf, reader, pos, end)


def _next_stream(buf: Buffer, reader: Reader, pos: int, end: int) -> int:
    try:
        return reader.stream(buf, pos, end)[1]
    except ReadError as exc:
        raise ReadError(
            f"trailing bytes after the STOP are not a pickle ({exc.what} at byte {exc.offset})", pos
        ) from None


def _decompress(buf: Buffer, method: str) -> bytes:
    inner = decompressor(method)
    if inner is None:
        raise ArchiveError(f"compressed with {method}, not read (the standard library has no {method})")
    out: list[bytes] = []
    total = 0
    try:
        for at in range(0, len(buf), _CHUNK):
            chunk = inner.decompress(bytes(buf[at : at + _CHUNK]), MAX_INFLATE + 1 - total)
            out.append(chunk)
            total += len(chunk)
            if total > MAX_INFLATE or getattr(inner, "unconsumed_tail", None):
                raise ArchiveError(f"compressed with {method}: decompresses to over {MAX_INFLATE >> 20} MiB, not read")
            if getattr(inner, "eof", False):
                break
    except (zlib.error, OSError, EOFError, ValueError) as exc:
        raise ArchiveError(f"compressed with {method}: the data does not decompress ({exc})") from None
    if not getattr(inner, "eof", True):
        raise ArchiveError(f"compressed with {method}: the compressed data is truncated")
    return b"".join(out)


# -- zip ----------------------------------------------------------------------------
class _BufferFile(io.RawIOBase):
    """A read-only seekable file over a buffer, for zipfile and tarfile (no copy of it)."""

    def __init__(self, buf: Buffer) -> None:
        self._buf = buf
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = (0, self._pos, len(self._buf))[whence]
        if base + offset < 0:
            raise OSError(22, "Invalid argument")  # as a file's seek: zipfile expects an OSError
        self._pos = base + offset
        return self._pos

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]  # any writable buffer
        data = self._buf[self._pos : self._pos + len(b)]
        n = len(data)
        memoryview(b).cast("B")[:n] = data
        self._pos += n
        return n


def _zip(buf: Buffer, reader: Reader) -> str:
    try:
        with zipfile.ZipFile(_BufferFile(buf)) as archive:
            infos = archive.infolist()
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        NotImplementedError,
        ValueError,
        EOFError,
        OverflowError,
        OSError,
    ) as exc:
        raise ArchiveError(f"bad zip archive: {exc}") from None
    if len(infos) > MAX_MEMBERS:
        raise ArchiveError(f"zip archive with more than {MAX_MEMBERS:,} members")
    regions = [_region(buf, info) for info in infos]
    pickles = [(info, r) for info, r in zip(infos, regions, strict=True) if info.filename.endswith(".pkl")]
    arrays = [(info, r) for info, r in zip(infos, regions, strict=True) if info.filename.endswith(".npy")]
    if not pickles and not arrays:
        raise ArchiveError("a zip archive with no .pkl or .npy member: not a torch.save archive or .npz")
    for info, (start, end) in pickles:
        data = _member(buf, info, start, end, whole=True)
        reader.member = info.filename
        _whole(data, reader)
    for info, (start, end) in arrays if not pickles else ():
        head = _member(buf, info, start, end, whole=False)
        at = _npy_pickle_at(head, 0, len(head))
        if at is not None:  # an object array: its data is a pickle, read the whole member
            reader.member = info.filename
            _whole(_member(buf, info, start, end, whole=True), reader, at)
    reader.member = None
    return "torch-zip" if pickles else "npz"


def _region(buf: Buffer, info: zipfile.ZipInfo) -> tuple[int, int]:
    """Where a member's data lies, once its local header agrees with the central directory."""
    off = info.header_offset
    name = info.filename
    if off < 0 or off + _LOCAL.size > len(buf):
        raise ArchiveError(f"bad zip archive: the local header of {name!r} lies outside the file")
    sig, _, flags, method, _, _, crc, csize, usize, nlen, xlen = _LOCAL.unpack_from(buf, off)
    encoding = "utf-8" if info.flag_bits & _UTF8 else "cp437"
    try:
        central = info.orig_filename.encode(encoding)
    except UnicodeEncodeError:
        central = b""
    if sig != b"PK\x03\x04" or bytes(buf[off + 30 : off + 30 + nlen]) != central:
        raise ArchiveError(f"bad zip archive: the local header of {name!r} does not match the central directory")
    if method != info.compress_type:
        raise ArchiveError(f"bad zip archive: {name!r} has a different method in its local header")
    if not flags & _DESCRIPTOR and (
        crc != info.CRC
        or csize not in {0xFFFFFFFF, info.compress_size}  # 0xFFFFFFFF: the size is in the zip64 extra
        or usize not in {0xFFFFFFFF, info.file_size}
    ):
        raise ArchiveError(f"bad zip archive: {name!r} has a different CRC or size in its local header")
    start = off + _LOCAL.size + nlen + xlen
    end = start + info.compress_size
    if end > len(buf):
        raise ArchiveError(f"bad zip archive: {name!r} runs past the end of the file")
    return start, end


def _member(buf: Buffer, info: zipfile.ZipInfo, start: int, end: int, *, whole: bool) -> bytes:
    """A member's bytes (a copy: its offsets are its own), inflated if deflated.

    ``whole``: all of it, CRC checked; else only a prefix (an .npy header).
    """
    name = info.filename
    if end - start > MAX_MEMBER:
        raise ArchiveError(f"{name!r} is larger than {MAX_MEMBER >> 20} MiB: not read")
    limit = MAX_INFLATE if whole else MAX_NPY_HEADER + 16
    if info.compress_type == zipfile.ZIP_STORED:
        data = bytes(buf[start : end if whole else min(end, start + limit)])
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        inflate = zlib.decompressobj(-15)
        try:
            data = inflate.decompress(bytes(buf[start:end]), limit + 1)
        except zlib.error as exc:
            raise ArchiveError(f"bad zip archive: {name!r} does not inflate ({exc})") from None
        if whole and (len(data) > limit or inflate.unconsumed_tail):
            raise ArchiveError(f"{name!r} inflates to more than {limit >> 20} MiB: not read")
    else:
        raise ArchiveError(f"{name!r} uses zip compression method {info.compress_type}, which is not read here")
    if not whole:
        return data
    crc = zlib.crc32(data)
    if crc != info.CRC:
        raise ArchiveError(f"bad zip archive: the CRC32 of {name!r} does not match (0x{crc:08x}, not 0x{info.CRC:08x})")
    if len(data) != info.file_size:
        raise ArchiveError(f"bad zip archive: {name!r} is not the size its directory entry says")
    return data


# -- npy --------------------------------------------------------------------------------
def _npy(buf: Buffer, start: int, end: int, reader: Reader) -> None:
    at = _npy_pickle_at(buf, start, end)
    if at is not None:
        _whole(buf, reader, at, end)


def _npy_pickle_at(buf: Buffer, start: int, end: int) -> int | None:
    """Where an .npy at ``buf[start:end]`` holds a pickle (an object array), or None."""
    head = bytes(buf[start : min(end, start + 12)])
    if not head.startswith(b"\x93NUMPY") or len(head) < 10:
        raise ArchiveError("bad .npy: no \\x93NUMPY magic")
    major = head[6]
    if major == 1:
        (n,) = struct.unpack_from("<H", head, 8)
        at = start + 10
    elif major in {2, 3} and len(head) >= 12:
        (n,) = struct.unpack_from("<I", head, 8)
        at = start + 12
    else:
        raise ArchiveError(f"bad .npy: format version {major} is not 1, 2 or 3")
    if n > MAX_NPY_HEADER or at + n > end:
        raise ArchiveError("bad .npy: the header runs past the end of the file or over 1 MiB")
    try:
        text = bytes(buf[at : at + n]).decode("utf-8" if major == 3 else "latin-1")
        header = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError, UnicodeDecodeError):
        raise ArchiveError("bad .npy: the header is not a Python literal") from None
    if not isinstance(header, dict) or "descr" not in header:
        raise ArchiveError("bad .npy: the header is not a dict with a 'descr'")
    return at + n if _objects(header["descr"]) else None


def _objects(descr: object) -> bool:
    if isinstance(descr, str):
        return _OBJECT_DESCR.fullmatch(descr) is not None
    if isinstance(descr, (list, tuple)):
        return any(_objects(part) for part in descr)
    return False


# -- tar ------------------------------------------------------------------------------------
_TAR_MEMBERS: Final = ("sys_info", "pickle", "storages", "tensors")


def _tar(buf: Buffer, reader: Reader) -> str:
    members = _tar_members(buf)
    for name in _TAR_MEMBERS:
        m = members[name]
        start = m.offset_data
        if not m.isreg() or start + m.size > len(buf) or m.size > MAX_MEMBER:
            raise ArchiveError(f"bad tar archive: member {name!r} is not a regular file within the archive")
        data = bytes(buf[start : start + m.size])
        reader.member = name
        if name in {"sys_info", "pickle"}:
            _whole(data, reader)
            continue
        count, after = reader.stream(data, 0, len(data))
        if type(count) is not int or count != 0:
            raise ArchiveError(f"legacy tar checkpoint: {name!r} interleaves pickles with raw bytes; not read")
        if name == "storages":  # storage_views, after the storages
            _whole(data, reader, after)
        elif after != len(data):
            raise ReadError("trailing bytes after the tensor count", after)
    reader.member = None
    return "torch-tar"


def _tar_members(buf: Buffer) -> dict[str, tarfile.TarInfo]:
    try:
        with tarfile.open(fileobj=_BufferFile(buf), mode="r:") as archive:
            members: dict[str, tarfile.TarInfo] = {}
            for count, m in enumerate(archive):
                if count >= MAX_MEMBERS:
                    raise ArchiveError(f"tar archive with more than {MAX_MEMBERS:,} members")
                members[m.name] = m
    except (tarfile.TarError, ValueError, EOFError, OverflowError, OSError) as exc:
        raise ArchiveError(f"bad tar archive: {exc}") from None
    missing = [name for name in _TAR_MEMBERS if name not in members]
    if missing:
        raise ArchiveError(f"a tar archive without {', '.join(missing)}: not a legacy torch.save archive")
    return members
