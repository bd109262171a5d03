# Strategy: `stcheck download`, vet first, then fetch once.  Every header of
# the source (a file, an index and all its shards, or a whole repository) is
# checked from Range requests before any file's data is asked for; one
# error anywhere refuses the whole download.  Each header is fetched once:
# the bytes a shard's header was cross-checked with the index from are the
# bytes written (a server that answers with another shard the second time
# is never asked a second time), and the rest of the file is asked for from
# where they end, with the same length and ETag or the download stops.
# Every name to be written is checked (io.index.unsafe_shard_name) before
# any of its bytes are asked for.  Each file is then streamed
# once, from where its header check stopped: every chunk is written to a
# temporary file in the output directory, hashed (sha256, and the git blob
# id when that is the only digest known) and fed to the deep checks
# (validator.read.deep.DeepScanner, which only reads), all in the same pass.
# The digest is compared with --sha256, or the hub's LFS oid, or its
# X-Linked-Etag.  With ``verify`` (a model signature: `stcheck download
# --public-key`), the staged files are handed to it once all are written
# and checked, with the one listing they were downloaded from (the
# signature is fetched and compared at that commit, never by listing the
# address again: a branch may have moved); a finding it returns refuses
# the download.  Only when every
# file of the source has passed are the temporary files renamed into place; otherwise they are removed and nothing
# is left behind but the directories created.  Files get the mode
# validator.save gives: an existing file's, else 0o666 less the umask.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH103, PTH105, PTH108, PTH116, PTH118, PTH119, PTH120
from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import stat
import tempfile
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from validator._check import Checker
from validator._errors import RemoteError, SourceError
from validator._rules import Severity
from validator._validate import as_profile
from validator.io.index import unsafe_shard_name
from validator.io.writer import current_umask  # the one umask reader, shared with save
from validator.read.integrity import Digester, Expected, check_digest
from validator.remote._check import Plan, RemoteEntry, RemoteHeader, check_index, plan, read_header, unnamed_files
from validator.remote._http import Client, Options

if TYPE_CHECKING:
    from validator._findings import Finding
    from validator._rules import Profile
    from validator.remote._hub import HubRepo

__all__ = ["BATCH", "CHUNK", "DownloadRefused", "FileDone", "Verify", "download"]

# The staged files (path in the repository -> staged copy) and the hub's
# listing they were downloaded from (the commit: None for a URL) -> the
# findings that refuse them.
Verify = Callable[[dict[str, str], "HubRepo | None"], list[tuple[str, "Finding"]]]
CHUNK: Final = 8 << 20  # deep-check feed size
BATCH: Final = 8 << 20  # bytes gathered before a write, a hash and a feed
_HEX64: Final = re.compile(r"[0-9a-f]{64}")
_HEX40: Final = re.compile(r"[0-9a-f]{40}")


class DownloadRefused(SourceError):  # noqa: N818 - it is the refusal, named as the CLI says it
    """The source failed a check; nothing was written.  ``findings`` holds
    (display path, finding) pairs for every error that caused the refusal."""

    def __init__(self, message: str, findings: list[tuple[str, Finding]]) -> None:
        super().__init__(message)
        self.findings = findings


@dataclass
class FileDone:
    """One downloaded file."""

    path: str  # where it now is
    source: str  # what it was fetched from (display form)
    size: int
    sha256: str
    expected: str | None  # where the digest it was checked against came from
    findings: list[Finding] = field(default_factory=list)  # deep-check warnings


def _expected(entry: RemoteEntry, header: RemoteHeader, sha256: str | None) -> Expected | None:
    if sha256 is not None:
        return Expected("sha256", sha256, "--sha256")
    if entry.sha256 is not None and _HEX64.fullmatch(entry.sha256):
        return Expected("sha256", entry.sha256, "the hub's LFS oid")
    linked = header.file.linked_etag if header.file is not None else None
    if linked is not None and _HEX64.fullmatch(linked):
        return Expected("sha256", linked, "X-Linked-Etag")
    if entry.git_blob is not None and _HEX40.fullmatch(entry.git_blob):
        return Expected("git-sha1", entry.git_blob, "the hub's git blob id")
    return None


def _target(out_dir: str, rel: str) -> str:
    problem = unsafe_shard_name(rel)
    if problem is not None:
        msg = f"refusing to write {rel!r}: the name {problem}"
        raise SourceError(msg)
    return os.path.join(out_dir, *rel.split("/"))


def _check_output(out_dir: str, found: Plan) -> None:
    """Refuse, before any byte is asked for, an output that is not a
    directory and every name known now (a shard's is checked when the index
    is read, index-shard-path, before any of its bytes are asked for)."""
    for rel in [*(index.rel for index in found.indexes), *(entry.rel for entry in found.files)]:
        _target(out_dir, rel)
    if os.path.lexists(out_dir) and not os.path.isdir(out_dir):  # noqa: PTH112 - paths are str here
        msg = f"{out_dir}: not a directory"
        raise SourceError(msg)


def _temp(final: str) -> tuple[int, str]:
    folder = os.path.dirname(final)
    os.makedirs(folder, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(final)}.", suffix=".part")
    try:
        # mkstemp makes 0600; the file gets what validator.save gives it.
        try:
            mode = stat.S_IMODE(os.stat(final).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~current_umask()
        os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return fd, temp


def _write_all(fd: int, data: memoryview | bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fetch(  # noqa: C901 - retry, resume and verify in one loop
    entry: RemoteEntry,
    header: RemoteHeader,
    fd: int,
    expected: Expected | None,
    *,
    deep: bool,
    progress: Callable[[int], None] | None,
) -> tuple[str, list[Finding]]:
    """Stream one file into ``fd``; return (sha256, findings)."""
    report = header.report
    remote = header.file
    if remote is None:
        msg = f"{entry.display}: no open connection to fetch it from"
        raise RemoteError(msg)
    digester = Digester(header.size, git_blob=expected is not None and expected.algorithm == "git-sha1")
    scanner = None
    if deep and report.tensors is not None and report.data_start is not None:
        from validator.read.deep import DeepScanner, check_names  # noqa: PLC0415 - numpy loads only for deep checks

        scanner = DeepScanner(fd, header.size, report.data_start, report.tensors, CHUNK)
    out = Checker()
    if scanner is not None:
        check_names(report.tensors or {}, report.metadata, out)
    offset = 0
    buf = bytearray()
    hasher = ThreadPoolExecutor(max_workers=1)  # hashlib releases the GIL: hash while the next batch arrives
    pending: list[Future[None]] = []

    def flush() -> None:
        nonlocal offset, buf
        if not buf:
            return
        data = bytes(buf)
        buf = bytearray()
        view = memoryview(data)
        _write_all(fd, view)
        for waiting in pending:
            waiting.result()
        pending[:] = [hasher.submit(digester.update, view)]
        if scanner is not None:
            for start in range(0, len(view), CHUNK):
                scanner.feed(view[start : start + CHUNK], offset + start)
        offset += len(view)

    def take(chunk: bytes) -> None:
        buf.extend(chunk)
        if progress is not None:
            progress(len(chunk))
        if len(buf) >= BATCH:
            flush()

    try:
        take(remote.held())
        remote.stream_rest(take)
        flush()
        for waiting in pending:
            waiting.result()
    finally:
        hasher.shutdown(wait=True)
    if offset != header.size:
        msg = f"{entry.display}: received {offset} of {header.size} bytes"
        raise RemoteError(msg)
    if scanner is not None:
        scanner.finish(out)
    check_digest(digester, expected, out, required=False)
    return digester.sha256(), list(out.findings)


def download(  # noqa: C901 - one branch per source kind and failure
    source: str,
    out_dir: str,
    *,
    profile: Profile | str = "strict",
    sha256: str | None = None,
    deep: bool = True,
    options: Options | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    listing: Callable[[list[str]], None] | None = None,
    verify: Verify | None = None,
) -> list[FileDone]:
    """Vet a remote source from its headers, then download it into ``out_dir``.

    Raises DownloadRefused (with the findings) when a header, a shard, an
    index, a digest or a deep check at error severity fails, before any data
    is written in place; RemoteError on network and HTTP errors.  ``sha256``
    (one file only) overrides the digest the hub announces.  ``progress`` is
    called with (file, bytes so far, file size); ``listing``, for an hf://
    source, with the repository's file names (what is not downloaded is
    judged from them: validator.sources.kinds).  ``verify`` is given every
    staged file (its path in the repository -> the staged copy) before any
    is moved into place; what it returns refuses the download.
    """
    prof = as_profile(profile)
    opts = options or Options()
    with Client(opts) as client:
        found = plan(source, opts, cache=False)  # a download needs the hub's listing and bytes
        _check_output(out_dir, found)
        vetted: dict[str, RemoteHeader] = {}  # by URL: the header each file was vetted from

        def fetch(entry: RemoteEntry) -> RemoteHeader:
            _target(out_dir, entry.rel)
            header = read_header(client, _uncached(entry), prof, keep_open=True)
            if header.file is not None:
                header.file.close()  # frees the connection; the bytes read stay held
            vetted[entry.url] = header
            return header

        if listing is not None and found.hub is not None:
            listing(sorted(found.hub.entries))
        kept: list[bytes] = []
        checkpoints = [
            check_index(client, index, prof, keep=kept, read=lambda e: fetch(e).report) for index in found.indexes
        ]
        entries: list[RemoteEntry] = unnamed_files(found, checkpoints)
        for index, report in zip(found.indexes, checkpoints, strict=True):
            for shard in sorted(set((report.weight_map or {}).values())):
                entry = index.shard(shard)
                # An unsafe name is already refused (index-shard-path): fetch nothing for it.
                if entry is not None and unsafe_shard_name(shard) is None:
                    entries.append(entry)
        refusals: list[tuple[str, Finding]] = [
            (c.path, f) for c in checkpoints for f in c.findings if f.severity is Severity.ERROR
        ]
        for shard_report in (r for c in checkpoints for r in c.shards.values()):
            refusals.extend((shard_report.path or "", f) for f in shard_report.errors)
        if sha256 is not None and len(entries) != 1:
            msg = f"{source}: --sha256 names one file's digest, but the source has {len(entries)} files"
            raise SourceError(msg)
        headers: list[RemoteHeader] = []
        try:
            for entry in entries:
                header = vetted.get(entry.url)
                if header is None:  # a file no index names: vetted here, alone
                    header = fetch(entry)
                    refusals.extend((entry.display, f) for f in header.report.errors)
                headers.append(header)
            if refusals:
                msg = f"{source}: refused before downloading any tensor data: {len(refusals)} errors"
                raise DownloadRefused(msg, refusals)
            return _commit(entries, headers, found, kept, out_dir, sha256, deep=deep, progress=progress, verify=verify)
        finally:
            for header in [*headers, *vetted.values()]:
                if header.file is not None:
                    header.file.close()


def _uncached(entry: RemoteEntry) -> RemoteEntry:
    """Download reads from the network even when the hub cache has the file."""
    if entry.cached is None:
        return entry
    return dataclasses.replace(entry, cached=None)


def _commit(  # noqa: C901, PLR0917 - one private call site; stage, check, verify, then move, in one cleanup
    entries: list[RemoteEntry],
    headers: list[RemoteHeader],
    found: Plan,
    kept: list[bytes],
    out_dir: str,
    sha256: str | None,
    *,
    deep: bool,
    progress: Callable[[str, int, int], None] | None,
    verify: Verify | None = None,
) -> list[FileDone]:
    temps: list[tuple[str, str]] = []  # (temporary, final)
    done: list[FileDone] = []
    refusals: list[tuple[str, Finding]] = []
    try:
        finals = [_target(out_dir, entry.rel) for entry in entries]  # every name, before any data
        index_finals = [_target(out_dir, index.rel) for index in found.indexes]
        for entry, header, final in zip(entries, headers, finals, strict=True):
            fd, temp = _temp(final)
            temps.append((temp, final))
            expected = _expected(entry, header, sha256)
            seen = 0

            def tick(n: int, name: str = entry.display, size: int = header.size) -> None:
                nonlocal seen
                seen += n
                if progress is not None:
                    progress(name, seen, size)

            try:
                digest, findings = _fetch(entry, header, fd, expected, deep=deep, progress=tick)
            finally:
                os.close(fd)
            refusals.extend((entry.display, f) for f in findings if f.severity is Severity.ERROR)
            source_of = None if expected is None else expected.source
            done.append(FileDone(final, entry.display, header.size, digest, source_of, findings))
        if refusals:
            what = entries[0].display if len(entries) == 1 else "the source"
            msg = f"{what}: refused after download: {len(refusals)} errors; nothing was kept"
            raise DownloadRefused(msg, refusals)  # noqa: TRY301 - the cleanup below covers this refusal too
        for raw, final in zip(kept, index_finals, strict=True):
            fd, temp = _temp(final)
            temps.append((temp, final))
            try:
                _write_all(fd, raw)
            finally:
                os.close(fd)
        if verify is not None:
            _verify_staged(verify, entries, found, [temp for temp, _ in temps])
        for temp, final in temps:
            os.replace(temp, final)
    except BaseException as exc:
        for temp, _ in temps:
            with contextlib.suppress(OSError):
                os.unlink(temp)
        if isinstance(exc, OSError) and not isinstance(exc, SourceError):  # writing, not reading, failed
            raise _write_error(exc, out_dir) from exc
        raise
    return done


def _verify_staged(verify: Verify, entries: list[RemoteEntry], found: Plan, temps: list[str]) -> None:
    """Hand every staged file to ``verify``; raise DownloadRefused with what it finds."""
    rels = [*(entry.rel for entry in entries), *(index.rel for index in found.indexes)]
    refused = verify(dict(zip(rels, temps, strict=True)), found.hub)  # the one listing of the download
    if refused:
        msg = f"the model signature refuses the download ({len(refused)} findings): nothing was kept"
        raise DownloadRefused(msg, refused)


def _write_error(exc: OSError, out_dir: str) -> SourceError:
    where = exc.filename if isinstance(exc.filename, str) else out_dir
    return SourceError(f"{where}: cannot write the download: {exc.strerror or exc}")
