# Strategy: `stcheck scan` as a pipeline of plain data.  Discovery turns
# paths (or a Hugging Face hub cache) into Jobs; `scan_file` turns one Job
# into a FileResult in a worker process; the command sorts the results back
# into discovery order and hands them to a report format.  A file is opened
# once: the validator reads the prefix and header through the descriptor,
# then, only when a deep scan or a digest is wanted, one sequential pass
# reads the whole file in fixed-size chunks into two reused buffers.  Each
# chunk goes to the sha256 in a worker thread (hashlib releases the GIL) and,
# at the same time, to the numpy deep checks in this thread, so a file is
# read from disk once and memory stays at two chunks per process.
#
# Hub cache layout (huggingface_hub): <cache>/models--<org>--<name>/
# snapshots/<revision>/<path> are symlinks to ../../blobs/<hash>, where an
# LFS file's blob is named by its sha256 and a small git file's blob by its
# git blob id.  A blob shared by several snapshots is read once and
# reported under each file that points to it.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH110, PTH111, PTH112, PTH116, PTH118, PTH119, PTH123, PTH208
from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from validator._check import Checker
from validator._errors import SourceError
from validator._rules import Profile, Severity
from validator._source import open_regular
from validator._validate import validate
from validator.scan.integrity import Digester, Expected, check_digest, from_blob_name, lookup
from validator.scan.policy import Policy, ScanItem, apply_policy, check_policy

if TYPE_CHECKING:
    import io
    from collections.abc import Callable, Iterator, Sequence
    from concurrent.futures import Future

    from validator._findings import Finding

SUFFIX: Final = ".safetensors"
DEFAULT_CHUNK: Final = 16 << 20


@dataclass(frozen=True)
class Job:
    """One file to read, and the names it is reported under."""

    path: str
    names: tuple[tuple[str, str | None], ...]  # (display path, hub repo id or None)
    expected: Expected | None = None
    validate: bool = True  # False: a hub blob that is not a safetensors file
    checksum_required: bool = False


@dataclass(frozen=True)
class Options:
    """What every worker needs to know."""

    profile: Profile = Profile.STRICT
    deep: bool = False
    policy: Policy | None = None
    sha256: str | None = None  # --sha256: applies to every file given
    checksums: dict[str, Expected] | None = None
    chunk_size: int = DEFAULT_CHUNK


@dataclass
class FileResult:
    """Everything a scan learned about one file."""

    path: str
    model: str | None = None
    kind: str = "safetensors"  # or "blob": integrity only
    file_size: int | None = None
    header_size: int | None = None
    tensor_count: int | None = None
    items: list[ScanItem] = field(default_factory=list)
    sha256: str | None = None
    bytes_read: int = 0
    deep: dict[str, Any] | None = None
    error: str | None = None
    seconds: float = 0.0
    profile: str = "strict"
    metadata: dict[str, str] | None = None
    cached: bool = False  # replayed from a results cache (validator.scan.cache), not read

    @property
    def active(self) -> list[ScanItem]:
        """Items that are not suppressed."""
        return [i for i in self.items if i.suppressed is None]

    @property
    def valid(self) -> bool:
        """Readable, and no unsuppressed item at error severity."""
        return self.error is None and not any(i.severity is Severity.ERROR for i in self.active)

    def to_json(self) -> dict[str, Any]:
        """A readable file's entry: spec/report.schema.json's fileReport plus
        the scan's own fields.  (Unreadable files are listed in the summary's
        ``unreadable``, as `stcheck check` does.)  Tensor tables are left out
        (``tensors`` is null): a scan reports their count instead."""
        doc: dict[str, Any] = {
            "path": self.path,
            "valid": self.valid,
            "profile": self.profile,
            "file_size": self.file_size,
            "header_size": self.header_size,
            "findings": [i.to_json() for i in self.items],
            "tensors": None,
            "metadata": self.metadata,
            "model": self.model,
            "kind": self.kind,
            "tensor_count": self.tensor_count,
            "sha256": self.sha256,
            "bytes_read": self.bytes_read,
            "deep": self.deep,
        }
        if self.cached:
            doc["cached"] = True
        return doc


# -- discovery ---------------------------------------------------------------


def iter_paths(paths: Sequence[str], errors: list[str]) -> Iterator[str]:
    """Files named, and the *.safetensors files below directories, sorted."""
    for path in paths:
        if os.path.isdir(path):
            found: list[str] = []
            for root, dirs, files in os.walk(path, onerror=lambda e: errors.append(f"{e.filename}: {e.strerror}")):
                dirs.sort()
                found.extend(os.path.join(root, f) for f in files if f.endswith(SUFFIX))
            yield from sorted(found)
        elif os.path.lexists(path):
            yield path
        else:
            errors.append(f"{path}: no such file or directory")


def default_hf_cache() -> str:
    """Where huggingface_hub keeps its cache, from its environment variables."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HUGGINGFACE_HUB_CACHE"):
        return os.environ["HUGGINGFACE_HUB_CACHE"]
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "huggingface"
    )
    return os.path.join(home, "hub")


def _repo_id(dirname: str) -> str | None:
    kind, sep, rest = dirname.partition("--")
    if not sep or kind not in {"models", "datasets", "spaces"}:
        return None
    repo = rest.replace("--", "/")
    return repo if kind == "models" else f"{kind}/{repo}"


def hf_cache_jobs(cache: str, errors: list[str]) -> list[Job]:
    """Jobs for every file of every snapshot in a hub cache, one per blob."""
    if not os.path.isdir(cache):
        errors.append(f"{cache}: not a Hugging Face hub cache directory")
        return []
    by_blob: dict[str, list[tuple[str, str | None]]] = {}
    kinds: dict[str, bool] = {}
    for repo_dir in sorted(os.listdir(cache)):
        repo = _repo_id(repo_dir)
        snapshots = os.path.join(cache, repo_dir, "snapshots")
        if repo is None or not os.path.isdir(snapshots):
            continue
        for revision in sorted(os.listdir(snapshots)):
            top = os.path.join(snapshots, revision)
            for root, dirs, files in os.walk(top, onerror=lambda e: errors.append(f"{e.filename}: {e.strerror}")):
                dirs.sort()
                for name in sorted(files):
                    link = os.path.join(root, name)
                    rel = os.path.relpath(link, top).replace(os.sep, "/")
                    display = f"{repo}@{revision[:12]}/{rel}"
                    target = os.path.realpath(link)
                    if not os.path.exists(target):
                        errors.append(f"{display}: points to a missing blob {os.path.basename(target)}")
                        continue
                    by_blob.setdefault(target, []).append((display, repo))
                    kinds[target] = kinds.get(target, False) or name.endswith(SUFFIX)
    jobs = []
    for blob, names in by_blob.items():
        expected = from_blob_name(blob)
        jobs.append(Job(blob, tuple(names), expected, validate=kinds[blob], checksum_required=True))
    jobs.sort(key=lambda j: j.names[0][0])
    return jobs


# -- one file ----------------------------------------------------------------


def _read_pass(
    fh: io.FileIO,
    size: int,
    chunk_size: int,
    digester: Digester | None,
    feed: Callable[[memoryview, int], None] | None,
    *,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Read the whole file once, in order; return the bytes read."""
    buffers = [bytearray(chunk_size), bytearray(chunk_size)]
    pending: list[Future[None] | None] = [None, None]
    offset = 0
    fh.seek(0)
    with ThreadPoolExecutor(max_workers=1) as hasher:
        i = 0
        while offset < size:
            slot = i % 2
            waiting = pending[slot]
            if waiting is not None:
                waiting.result()  # the buffer is free only once it is hashed
            view = memoryview(buffers[slot])[: min(chunk_size, size - offset)]
            got = fh.readinto(view)
            if not got:
                break
            view = view[:got]
            if digester is not None:
                pending[slot] = hasher.submit(digester.update, view)
            if feed is not None:
                feed(view, offset)
            if progress is not None:
                progress(got)
            offset += got
            i += 1
        for waiting in pending:
            if waiting is not None:
                waiting.result()
    return offset


def scan_file(job: Job, options: Options, progress: Callable[[int], None] | None = None) -> FileResult:
    """Validate, deep-check and hash one file; never raises for bad bytes.

    ``progress``, when given, is called with the byte count of each chunk read.
    """
    started = time.perf_counter()
    display, model = job.names[0]
    result = FileResult(
        path=display, model=model, kind="safetensors" if job.validate else "blob", profile=options.profile.value
    )
    try:
        _scan_into(job, options, result, progress)
    except (OSError, SourceError) as exc:
        result.error = str(exc) if isinstance(exc, SourceError) else f"{display}: {exc.strerror or exc}"
    except MemoryError:
        result.error = f"{display}: out of memory"
    result.seconds = time.perf_counter() - started
    return result


def _scan_into(job: Job, options: Options, result: FileResult, progress: Callable[[int], None] | None) -> None:
    out = Checker()
    try:
        fd, _ = open_regular(job.path)
    except SourceError as exc:
        # Name the file as the scan displays it (a hub blob by its snapshot name).
        raise SourceError(str(exc).replace(job.path, result.path, 1)) from exc
    fh = open(fd, "rb", buffering=0, closefd=True)  # noqa: SIM115 - the with below closes it
    with fh:
        st = os.fstat(fh.fileno())
        size = st.st_size
        result.file_size = size
        report = None
        findings: list[Finding] = []
        if job.validate:
            report = validate(fh, profile=options.profile)
            findings.extend(report.findings)
            result.header_size = report.header_size
            result.tensor_count = None if report.tensors is None else len(report.tensors)
            result.metadata = None if report.metadata is None else dict(report.metadata)
            if options.policy is not None:
                check_policy(report, options.policy, out)
        expected = job.expected
        required = job.checksum_required
        if options.sha256 is not None:
            expected = Expected("sha256", options.sha256, "--sha256")
        elif options.checksums is not None:
            expected = lookup(options.checksums, job.path) or expected
            required = True
        want_digest = expected is not None or required
        scanner = None
        if options.deep and report is not None and report.tensors is not None and report.data_start is not None:
            from validator.scan.deep import DeepScanner, check_names  # noqa: PLC0415 - numpy-backed deep checks load only with --deep

            check_names(report.tensors, report.metadata, out)
            scanner = DeepScanner(fh.fileno(), size, report.data_start, report.tensors, options.chunk_size)
        digester = None
        if want_digest or scanner is not None:
            digester = Digester(size, git_blob=expected is not None and expected.algorithm == "git-sha1")
            result.bytes_read = _read_pass(
                fh, size, options.chunk_size, digester, None if scanner is None else scanner.feed, progress=progress
            )
            if result.bytes_read != size:
                raise SourceError(
                    f"{result.path}: file shrank from {size} to {result.bytes_read} bytes while it was read"
                )
            result.sha256 = digester.sha256()
        if scanner is not None:
            result.deep = scanner.finish(out).to_json()
        if digester is not None and want_digest:
            check_digest(digester, expected, out, required=required)
    result.items = apply_policy([*findings, *out.findings], options.policy)


# -- many files --------------------------------------------------------------


def expand(job: Job, result: FileResult) -> list[FileResult]:
    """One result per name of the job (a shared hub blob is read once: its
    bytes count under its first name only)."""
    return [
        replace(result, path=name, model=model, items=list(result.items), bytes_read=result.bytes_read if k == 0 else 0)
        for k, (name, model) in enumerate(job.names)
    ]


def run_jobs(
    jobs: Sequence[Job],
    options: Options,
    *,
    workers: int,
    progress: Callable[[int], None] | None = None,
    scan: Callable[..., FileResult] = scan_file,
    on_result: Callable[[int, FileResult], None] | None = None,
) -> list[FileResult]:
    """Scan every job, in parallel when there is more than one; keep job order.

    ``scan`` replaces scan_file (a picklable callable with its signature);
    ``on_result(index, result)`` sees each job's result as it completes."""
    results: list[list[FileResult] | None] = [None] * len(jobs)

    sizes = [_size(job.path) for job in jobs]
    if workers <= 1 or len(jobs) <= 1:
        # In this process the bar can follow each chunk of a large file.
        for i, job in enumerate(jobs):
            result = scan(job, options, progress)
            if on_result is not None:
                on_result(i, result)
            results[i] = expand(job, result)
            if progress is not None:
                progress(max(0, sizes[i] - result.bytes_read))
    else:
        with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
            futures = {pool.submit(scan, job, options): i for i, job in enumerate(jobs)}
            for future in as_completed(futures):
                i = futures[future]
                if on_result is not None:
                    on_result(i, future.result())
                results[i] = expand(jobs[i], future.result())
                if progress is not None:
                    progress(sizes[i])
    return [r for group in results if group is not None for r in group]


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def total_size(jobs: Sequence[Job]) -> int:
    """Bytes the jobs will read at most (for the progress bar)."""
    return sum(_size(job.path) for job in jobs)


def stderr_is_tty() -> bool:
    """Whether a progress bar may be drawn."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
