# Strategy: the read stage of `stcheck scan` and vet(), as plain data.  The
# plan (validator.pipeline.plan) turns targets into Jobs; `scan_file` turns
# one Job into a FileResult in a worker process; `run_jobs` keeps job order,
# and vet groups the results by their target's ordinal.  A file is opened
# once: the validator reads the prefix and header through the descriptor,
# then, only when a deep scan or a digest is wanted, one sequential pass
# (validator.read.reading) reads the whole file in chunks, hashing them in a
# worker thread while the numpy deep checks run in this one.  The findings
# are left unjudged: the policy's checks run here (they need the header),
# its severities are applied by the judge (validator.pipeline.judge).
#
# A hub-cache blob shared by several snapshots (validator.pipeline.hubcache)
# is one job, read once and reported under each name that points to it.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH116, PTH123
from __future__ import annotations

import contextlib
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from validator._check import MAX_PER_RULE, Checker
from validator._display import plural
from validator._errors import SourceError
from validator._rules import Profile
from validator._source import open_regular
from validator.config.policy import Policy, check_policy
from validator.io.names import HUB_INCOMPLETE
from validator.pipeline.judge import unjudged
from validator.read.identity import SeenHeader, stamp_of, validate_fd
from validator.read.integrity import Expected, check_digest, lookup
from validator.read.reading import read_pass
from validator.report.group import group_per_tensor
from validator.report.results import FileResult, ReadRecord, ResultKind
from validator.signing.signhash import DigestSpec, SignedDigester, make_digester, tensor_inventory

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from validator._findings import Finding

__all__ = [
    "DEFAULT_CHUNK",
    "INCOMPLETE",
    "Job",
    "JobKind",
    "Options",
    "cap_per_rule",
    "choose_expected",
    "expand",
    "expected_for",
    "finish_items",
    "job_options",
    "run_jobs",
    "scan_file",
    "stderr_is_tty",
    "total_size",
]

INCOMPLETE: Final = HUB_INCOMPLETE
# A file to read; an interrupted hub download (a .incomplete blob); a file a
# checksum list names that is not on disk.
JobKind: TypeAlias = Literal["file", "incomplete", "missing"]
DEFAULT_CHUNK: Final = 16 << 20


@dataclass(frozen=True)
class Job:
    """One file to read, and the names it is reported under."""

    path: str
    names: tuple[tuple[str, str | None], ...]  # (display path, hub repo id or None)
    expected: Expected | None = None
    validate: bool = True  # False: a hub blob that is not a safetensors file
    checksum_required: bool = False
    policy: Policy | None = None  # the policy in force for this file (given, or found above it)
    kind: JobKind = "file"
    listed_by: str | None = None  # for "missing": the checksum line that names the file
    digests: tuple[DigestSpec, ...] = ()  # digests to compute in the read (a signature's: signing.signhash)


@dataclass(frozen=True)
class Options:
    """What every worker needs to know."""

    profile: Profile = Profile.STRICT
    deep: bool = False
    policy: Policy | None = None
    sha256: str | None = None  # --sha256: applies to every file given
    checksums: dict[str, Expected] | None = None
    chunk_size: int = DEFAULT_CHUNK


# -- one file ----------------------------------------------------------------


def job_options(job: Job, options: Options) -> Options:
    """The options one job is scanned under: its own policy (found from its
    path, see `stcheck scan`) replaces the scan-wide one."""
    return options if job.policy is None else replace(options, policy=job.policy)


def choose_expected(job: Job, options: Options, listed: Expected | None) -> tuple[Expected | None, bool]:
    """The digest a job is checked against and whether one is required:
    --sha256, else the --checksums line ``listed`` for it (looked up by the
    caller, once), else what discovery found (a hub blob's name)."""
    if options.sha256 is not None:
        return Expected("sha256", options.sha256, "--sha256"), job.checksum_required
    if options.checksums is not None:
        return listed or job.expected, True
    return job.expected, job.checksum_required


def expected_for(job: Job, options: Options) -> tuple[Expected | None, bool]:
    """choose_expected with the --checksums lookup done here."""
    listed = None if options.checksums is None else lookup(options.checksums, job.path)
    return choose_expected(job, options, listed)


def scan_file(job: Job, options: Options, progress: Callable[[int], None] | None = None) -> FileResult:
    """Validate, deep-check and hash one file; never raises for bad bytes.

    ``progress``, when given, is called with the byte count of each chunk read.
    """
    started = time.perf_counter()
    display, model = job.names[0]
    policy = job.policy if job.policy is not None else options.policy
    result = FileResult(
        path=display,
        model=model,
        kind=_result_kind(job),
        profile=options.profile.value,
        policy=None if policy is None else policy.source,
    )
    try:
        if job.kind == "file":
            _scan_into(job, options, policy, result, progress)
        else:
            _not_a_file(job, result)
    except (OSError, SourceError) as exc:
        result.error = str(exc) if isinstance(exc, SourceError) else f"{display}: {exc.strerror or exc}"
    except MemoryError:
        result.error = f"{display}: out of memory"
    result.seconds = time.perf_counter() - started
    return result


def _result_kind(job: Job) -> ResultKind:
    if job.kind == "missing":
        return "missing"
    return "safetensors" if job.validate and job.kind == "file" else "blob"


def _not_a_file(job: Job, result: FileResult) -> None:
    """A job that is a finding by itself: a listed file not on disk, an interrupted download."""
    out = Checker()
    if job.kind == "missing":
        result.file_size = 0
        out.add("checksum-file-missing", f"{job.listed_by} lists this file, but it is not on disk", None)
    else:
        size = os.lstat(job.path).st_size
        result.file_size = size
        with contextlib.suppress(OSError):  # the verdict is about this blob as it is now
            result.read = ReadRecord(stamp_of(os.stat(job.path)))
        out.add(
            "download-incomplete",
            f"an interrupted download ({plural(size, 'byte')} so far): resume or restart it, or delete the blob",
            None,
        )
    result.items = unjudged(out.findings)


def _scan_into(
    job: Job, options: Options, policy: Policy | None, result: FileResult, progress: Callable[[int], None] | None
) -> None:
    # The scan's own rules keep at most MAX_PER_RULE findings each, as
    # validate() does, and count the rest: memory stays bounded whatever
    # the number of findings (1.45 million all-zero tensors, say).
    out = Checker(limit=MAX_PER_RULE)
    try:
        fd, _ = open_regular(job.path)
    except SourceError as exc:
        # Name the file as the scan displays it (a hub blob by its snapshot name).
        raise SourceError(str(exc).replace(job.path, result.path, 1)) from exc
    fh = open(fd, "rb", buffering=0, closefd=True)  # noqa: SIM115 - the with below closes it
    with fh:
        opened = stamp_of(os.fstat(fh.fileno()))
        size = opened[0]
        result.file_size = size
        report = None
        findings: list[Finding] = []
        seen = SeenHeader()
        if job.validate:
            report = validate_fd(fh.fileno(), size, options.profile, seen, result.path)
            findings.extend(report.findings)
            result.not_listed += report.suppressed
            result.header_size = report.header_size
            result.reference_valid = report.reference_valid
            result.tensor_count = None if report.tensors is None else len(report.tensors)
            result.metadata = None if report.metadata is None else dict(report.metadata)
            result.dtypes = tensor_inventory(report.tensors)
            if policy is not None:
                check_policy(report, policy, out)
        expected, required = expected_for(job, options)
        if expected is not None:
            result.checked = expected.fields()
        want_digest = expected is not None or required or bool(job.digests)
        # Buffers no larger than the file: a 16 MiB chunk allocated (and
        # zero-filled) for a 256 KiB file cost more than reading it.
        chunk = min(options.chunk_size, max(size, 1))
        scanner = None
        if options.deep and report is not None and report.tensors is not None and report.data_start is not None:
            from validator.read.deep import DeepScanner, check_names  # noqa: PLC0415 - numpy-backed deep checks load only with --deep

            check_names(report.tensors, report.metadata, out)
            scanner = DeepScanner(fh.fileno(), size, report.data_start, report.tensors, chunk)
        digester = None
        if want_digest or scanner is not None:
            digester = make_digester(
                size, job.digests, git_blob=expected is not None and expected.algorithm == "git-sha1"
            )
            result.bytes_read = read_pass(
                fh, size, chunk, digester, None if scanner is None else scanner.feed, progress=progress
            )
            if result.bytes_read != size:
                raise SourceError(
                    f"{result.path}: file shrank from {size} to {result.bytes_read} bytes while it was read"
                )
            result.sha256 = digester.sha256()
            result.signed = digester.signed() if isinstance(digester, SignedDigester) else None
        if scanner is not None:
            result.deep = scanner.finish(out).to_json()
        if digester is not None and want_digest:
            check_digest(digester, expected, out, required=required)
        # Stamped only when the bytes did not change while they were read.
        stamp = opened if stamp_of(os.fstat(fh.fileno())) == opened else None
        result.read = ReadRecord(stamp, seen.span, seen.sha256)
    finish_items(result, [*findings, *out.findings], out.dropped, policy)


def finish_items(
    result: FileResult, findings: Sequence[Finding], dropped: dict[str, int], policy: Policy | None
) -> None:
    """Group per-tensor repeats and count what the per-rule cap dropped: the
    last step of every way a file is read.  The items are left unjudged
    (validator.pipeline.judge applies ``policy``'s severities once, for the
    whole run); ``policy`` is the one its checks ran under."""
    result.not_listed += sum(dropped.values())
    result.items = unjudged(group_per_tensor(list(findings), not_kept=dropped))  # grouped as every command groups
    result.policy = None if policy is None else policy.source


def cap_per_rule(findings: Sequence[Finding], limit: int = MAX_PER_RULE) -> tuple[list[Finding], dict[str, int]]:
    """The first ``limit`` findings of each rule, and how many of each were dropped."""
    kept: list[Finding] = []
    seen: dict[str, int] = {}
    dropped: dict[str, int] = {}
    for f in findings:
        n = seen[f.slug] = seen.get(f.slug, 0) + 1
        if n > limit:
            dropped[f.slug] = dropped.get(f.slug, 0) + 1
        else:
            kept.append(f)
    return kept, dropped


# -- many files --------------------------------------------------------------


def expand(job: Job, result: FileResult) -> list[FileResult]:
    """One result per name of the job (a shared hub blob is read once: its
    bytes count under its first name only)."""
    if len(job.names) == 1 and job.names[0] == (result.path, result.model):
        return [result]  # the common case: one name, the result's own
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
    on_file: Callable[[], None] | None = None,
    scan: Callable[..., FileResult] = scan_file,
    on_result: Callable[[int, FileResult], None] | None = None,
) -> list[FileResult]:
    """Scan every job, in parallel when there is more than one; keep job order.

    ``progress`` is called with byte counts as files are read; ``on_file``
    once per finished job.  ``scan`` replaces scan_file (a picklable callable
    with its signature); ``on_result(index, result)`` sees each job's result
    as it completes."""
    results: list[list[FileResult] | None] = [None] * len(jobs)

    sizes = [_size(job.path) if job.kind == "file" else 0 for job in jobs]
    if workers <= 1 or len(jobs) <= 1:
        # In this process the bar can follow each chunk of a large file.
        for i, job in enumerate(jobs):
            result = scan(job, options, progress)
            if on_result is not None:
                on_result(i, result)
            results[i] = expand(job, result)
            if progress is not None:
                progress(max(0, sizes[i] - result.bytes_read))
            if on_file is not None:
                on_file()
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
                if on_file is not None:
                    on_file()
    return [r for group in results if group is not None for r in group]


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def total_size(jobs: Sequence[Job]) -> int:
    """Bytes the jobs will read at most (for the progress bar)."""
    return sum(_size(job.path) for job in jobs if job.kind == "file")


def stderr_is_tty() -> bool:
    """Whether a progress bar may be drawn."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
