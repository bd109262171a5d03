# Strategy: the loaders' own dispatch, so that every byte a loader would
# unpickle is shown to the opcode reader from the byte that loader starts
# at.  Four loaders, by their first bytes:
#
#   torch.load     "PK\x03\x04": a zip, its <first folder>/data.pkl (miniz
#                  finds names case-folded; every member named *.pkl is
#                  read, which covers it however it is spelled); else a tar
#                  when tarfile opens it (_tar); else the legacy stream:
#                  one pickle from byte 0, and only when it is torch's magic
#                  number, four more (version, sys_info, object, keys), then
#                  raw storage bytes that are never unpickled.
#   numpy.load     "PK\x03\x04" or "PK\x05\x06": an .npz (zipfile): every
#                  member whose content starts "\x93NUMPY", whatever its
#                  name, is an array (_npy); "\x93NUMPY": an .npy; else one
#                  pickle from byte 0 (allow_pickle=True).
#   joblib.load    a compressor's magic (_compressed): one pickle from the
#                  decompressed bytes; else one pickle from byte 0.
#   pickle.load    one pickle from byte 0.
#
# Each loader's reading is a view; every view that applies is read, into
# the one Reader.  A view that fails is an error (ReadError or ArchiveError,
# raised with reader.member naming where), with one exception that keeps
# ordinary files from being called pickles: a stream read from byte 0, or
# from a decompressed file, that fails before it imports anything is a file
# on which the loader raises before running any code (pickle cannot call
# what it has not imported), once _lenient agrees that pickle itself stops
# before any import (the reader is stricter than pickle).  It is forgiven
# unless the file's name says pickle (``named``).  A byte-0 stream that starts with a persistent id
# (PERSID, BINPERSID) is not read: none of these loaders' plain unpickling
# has a persistent_load, so pickle raises there.
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from validator.formats import _compressed, _lenient, _npy, _tar, _zip
from validator.formats._errors import ArchiveError, NoPickle, Unreadable
from validator.pickles._ops import LEGACY_PROTOCOL, MAGIC, Reader, ReadError

if TYPE_CHECKING:
    import mmap

    from validator.formats._zip import Archive, Member
    from validator.pickles._verdict import Container

    Buffer = bytes | mmap.mmap

__all__ = ["COMPRESSED_SUFFIXES", "PICKLE_SUFFIXES", "SHARED_SUFFIXES", "Seen", "pickle_name", "read"]

# Names a loader unpickles by convention; also under a compressor's suffix.
PICKLE_SUFFIXES: Final = (".pkl", ".pickle", ".pt", ".pth", ".ckpt", ".joblib", ".npy", ".npz")
# Pickle names that other formats share (OpenVINO, Core ML, GGML weights are
# .bin too): judged by content only; a byte-0 failure before any import is
# harmless whatever the name.
SHARED_SUFFIXES: Final = (".bin", ".dat")
COMPRESSED_SUFFIXES: Final = (".gz", ".bz2", ".xz", ".lzma", ".z", ".lz4")
_ZIP_HEADS: Final = (_zip.SIG_LOCAL, _zip.SIG_EOCD)
_PERSISTENT: Final = (b"P", b"Q")
_PERSISTENT_OPS: Final = frozenset({"PERSID", "BINPERSID"})
_NPY_PEEK: Final = len(_npy.MAGIC)


def pickle_name(name: str) -> bool:
    """Whether a loader unpickles a file of this name by convention (.pkl, .pt.gz, ...)."""
    low = os.path.basename(name).lower()  # noqa: PTH119 - paths are str in this package
    for suffix in COMPRESSED_SUFFIXES:
        if low.endswith(suffix) and low[: -len(suffix)].endswith(PICKLE_SUFFIXES + SHARED_SUFFIXES):
            return True
    return low.endswith(PICKLE_SUFFIXES)


@dataclass
class Seen:
    """What the dispatch met beside the pickles: for the findings of a folder's file."""

    kind: Container | None = None  # the container of the last view that read or refused a pickle
    pickled: bool = False  # a stream was read (or refused): some loader unpickles these bytes
    unread: list[str] = field(default_factory=list)  # what no loader could open (ST708)
    escapes: list[str] = field(default_factory=list)  # member names that climb out (ST709)
    archive: str | None = None  # "zip" or "tar" when the file is one


def read(buf: Buffer, reader: Reader, *, named: bool = True, seen: Seen | None = None) -> Container:
    """Read every pickle stream a loader would unpickle in ``buf`` into ``reader``;
    return the container's kind.  Raises ReadError (a stream) or ArchiveError
    (the container).  ``named=False``: see the strategy comment."""
    seen = Seen() if seen is None else seen
    _Views(buf, reader, named, seen).run()
    if seen.kind is None and seen.unread:
        raise Unreadable(f"not read: {'; '.join(seen.unread)}")
    if seen.kind is None:
        raise NoPickle(_nothing(seen))
    return seen.kind


def _nothing(seen: Seen) -> str:
    if seen.archive == "zip":
        return "a zip archive with no .pkl or .npy member: not a torch.save archive or .npz"
    if seen.archive == "tar":
        return "a tar archive without storages, tensors or pickle members: not a legacy torch.save archive"
    return "no loader unpickles these bytes"


class _Views:
    def __init__(self, buf: Buffer, reader: Reader, named: bool, seen: Seen) -> None:  # noqa: FBT001 - private
        self.buf = buf
        self.reader = reader
        self.named = named
        self.seen = seen
        self.end = len(buf)

    def run(self) -> None:
        head = bytes(self.buf[:8])
        if head.startswith(_ZIP_HEADS):
            self._zip(torch=head.startswith(_zip.SIG_LOCAL))
        elif head.startswith(_npy.MAGIC):
            self._npy()
        method = _compressed.compression(head)
        if method is not None:
            self._joblib(method)
        legacy = not head.startswith(_zip.SIG_LOCAL) and not self._tar()
        if not head.startswith(_PERSISTENT):
            self._byte0(legacy=legacy)

    # -- the streams -----------------------------------------------------------
    def _found(self, kind: Container) -> None:
        self.seen.kind = kind
        self.seen.pickled = True

    def _guessed(self, kind: Container, buf: Buffer, *, legacy: bool, whole: bool) -> None:
        """A stream from byte 0 of ``buf``: forgiven when it fails before importing anything."""
        before = len(self.reader.imports)
        try:
            value, pos = self.reader.stream(buf, 0, len(buf))
        except ReadError:
            if self.named or len(self.reader.imports) > before or _lenient.may_import(buf):
                self._found(kind)
                raise
            return
        self._found(kind)
        if legacy and type(value) is int and value == MAGIC:
            self._legacy(buf, pos)
        elif whole:
            _rest(buf, self.reader, pos, len(buf))

    def _legacy(self, buf: Buffer, pos: int) -> None:
        self.seen.kind = "torch-legacy"
        version, pos = self._legacy_stream(buf, pos)
        if type(version) is not int or version != LEGACY_PROTOCOL:
            return  # torch.load raises here
        _, pos = self._legacy_stream(buf, pos)  # sys_info
        _, pos = self.reader.stream(buf, pos, len(buf))  # the object: its storages are persistent ids
        self._legacy_stream(buf, pos)  # the storage keys; raw bytes follow

    def _legacy_stream(self, buf: Buffer, pos: int) -> tuple[object, int]:
        # torch.load unpickles these with no persistent_load: with
        # weights_only=True a persistent id is refused ("unsupported
        # persistent id encountered"), without it pickle raises there.
        value, after = self.reader.stream(buf, pos, len(buf))
        scratch = Reader()
        scratch.stream(buf, pos, after)
        if scratch.opcodes() & _PERSISTENT_OPS and self.reader.torch_refusal is None:
            self.reader.torch_refusal = "a persistent id outside the legacy stream's object pickle"
        return value, after

    def _byte0(self, *, legacy: bool) -> None:
        kind = self.seen.kind
        if kind is not None:  # beside a container: pickle.load's view of the same file
            self.named = False
            self._guessed(kind, self.buf, legacy=False, whole=False)
            self.seen.kind = kind
            return
        self._guessed("pickle", self.buf, legacy=legacy, whole=True)
        if self.seen.kind == "pickle" and self.reader.joblib:
            self.seen.kind = "joblib"

    # -- the containers ----------------------------------------------------------
    def _zip(self, *, torch: bool) -> None:
        self.seen.archive = "zip"
        try:
            archive = _zip.open_zip(self.buf)
        except ArchiveError:
            # torch.load's miniz, or another tool, may still read a .pkl the
            # refused archive names: its refusal is an error, not "unreadable".
            if torch and _zip.names_a_pickle(self.buf):
                self._found("torch-zip")
            raise
        self.seen.escapes.extend(m.name for m in archive.members if m.escapes)
        pickles = [m for m in archive.members if torch and m.name.lower().endswith(".pkl")]
        for m in pickles:
            self.reader.member = m.name
            try:
                data = self._member(m, None)
            except ArchiveError:  # torch.load reads it: a member stcheck cannot check is an error
                self._found("torch-zip")
                raise
            if data is not None:
                self._found("torch-zip")
                _whole(data, self.reader)
        arrays = self._arrays(archive, torch_kind="torch-zip" if pickles else "npz")
        self.reader.member = None
        if self.seen.kind is None and arrays:
            self.seen.kind = "npz"

    def _arrays(self, archive: Archive, *, torch_kind: Container) -> bool:
        """numpy.load's view of a zip: every member that starts as an .npy; whether there was one."""
        arrays = False
        for m in archive.members:
            try:
                peek = self._member(m, _NPY_PEEK) if m.size else b""
                if peek is None or not peek.startswith(_npy.MAGIC):
                    continue
                arrays = True
                peek = self._member(m, _npy.MAX_HEADER + 16) or b""
                header = _npy.header(peek, 0, len(peek))
            except ArchiveError:
                # numpy.load's zipfile may read what stcheck cannot (a member
                # of a duplicated name, a stream it decodes differently): an
                # error, never "unreadable".
                self.reader.member = m.name
                self._found(torch_kind)
                raise
            if header.objects:
                data = self._member(m, None) or b""
                self.reader.member = m.name
                self._found(torch_kind)
                self.reader.stream(data, header.data, len(data))
        return arrays

    def _member(self, m: Member, limit: int | None) -> bytes | None:
        # A member no loader can open (zipfile and miniz refuse the same
        # flags and know no more methods) runs nothing: listed, not read.
        try:
            return _zip.member_bytes(self.buf, m, limit=limit)
        except Unreadable as exc:
            if str(exc) not in self.seen.unread:
                self.seen.unread.append(str(exc))
            return None

    def _npy(self) -> None:
        header = _npy.header(self.buf, 0, self.end)
        self.seen.kind = "npy"
        if header.objects:
            self._found("npy")
            self.reader.stream(self.buf, header.data, self.end)

    def _joblib(self, method: str) -> None:
        data = _compressed.decompress(self.buf, method)
        if data is None:
            if self.named:
                raise ArchiveError(f"compressed with {method}: the data does not decompress")
            return
        self.reader.member = None
        self._guessed("joblib", data, legacy=False, whole=True)

    def _tar(self) -> bool:
        """torch's tar view; False when torch goes on to the legacy stream."""
        found = _tar.members(self.buf)
        if found is None:
            return False
        self.seen.archive = "tar"
        try:
            for name in ("storages", "tensors"):
                data = _tar.member(self.buf, found, name)
                if data is None:
                    return True
                self.reader.member = name
                self._found("torch-tar")
                count, pos = self.reader.stream(data, 0, len(data))
                if type(count) is not int or count != 0:
                    raise ArchiveError(f"legacy tar checkpoint: {name!r} interleaves pickles with raw bytes; not read")
                if name == "storages":  # then the storage views
                    _whole(data, self.reader, pos)
                elif pos != len(data):
                    raise ReadError("trailing bytes after the tensor count", pos)
            data = _tar.member(self.buf, found, "pickle")
            if data is not None:
                self.reader.member = "pickle"
                _whole(data, self.reader)
        except _tar.Cut:
            return False
        finally:
            self.reader.member = None
        return True


def _whole(buf: Buffer, reader: Reader, start: int = 0) -> None:
    # One stream to its STOP, then nothing: a second pickle.load would run
    # whatever follows, so trailing bytes must read as pickles too.
    _, pos = reader.stream(buf, start, len(buf))
    _rest(buf, reader, pos, len(buf))


def _rest(buf: Buffer, reader: Reader, pos: int, end: int) -> None:
    while pos < end:
        try:
            pos = reader.stream(buf, pos, end)[1]
        except ReadError as exc:  # noqa: PERF203 - one stream after another, each may fail
            raise ReadError(
                f"trailing bytes after the STOP are not a pickle ({exc.what} at byte {exc.offset})", pos
            ) from None
