# Strategy: a deep scan of one very large file, split into tasks that run on
# several workers at once, with a result identical to `scan_file`'s.
#
# The sha256 is a chain: each block's state depends on every block before
# it, so it cannot be computed in pieces and combined.  It stays one task
# that streams the whole file (OpenSSL's SHA-256 runs at 1.5 to 2 GB/s a
# core, several times the deep checks' 300 to 600 MiB/s).  The deep checks
# are local to a tensor, so they are split: the file's tensors, in offset
# order, are cut into ranges of about `split_bytes` each (whole tensors
# only; a tensor larger than that is a range of its own), and each range is
# one task that streams its bytes through its own DeepScanner.  A file is
# thus read twice, once by the hash task and once by the range tasks
# together, and the wall time falls from deep(size) to about
# max(hash(size), deep(size) / workers).
#
# Only a file that validates cleanly is split: its data region is then
# exactly the concatenation of its tensors (no hole, no overlap, nothing
# after the last one), so each byte belongs to one range, the per-tensor
# findings of the ranges, concatenated in range order, are in the order a
# whole-file scan reports them, and the stats add up.  The one whole-file
# finding, data-zero-tail, needs the last nonzero byte of the data region:
# the last range finds it when its bytes are not all zero; otherwise its
# task searches backwards for it and streams a second scanner over the tail
# only (all zeros, so cheap), keeping that scanner's data-zero-tail finding.
# Every task stamps the file (size, mtime, ctime, inode: validator.read.
# identity) when it opens it and again when it is done; a file that
# changed during a task or between tasks is reported unreadable rather than
# merged from two versions.  The planning task's stamp and header digest are
# the merged result's, for the results cache.
# ruff: noqa: PTH123
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from validator._check import Checker
from validator._errors import SourceError
from validator._source import open_regular
from validator.config.policy import check_policy
from validator.pipeline.engine import (
    Job,
    Options,
    cap_per_rule,
    expected_for,
    finish_items,
    job_options,
    scan_file,
)
from validator.read.identity import SeenHeader, Stamp, same_file, stamp_of, validate_fd
from validator.read.integrity import Digester, check_digest
from validator.report.results import FileResult, ReadRecord
from validator.signing.signhash import WHOLE_SHA256, tensor_inventory

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from validator._findings import Finding, TensorInfo

__all__ = ["HashPart", "Plan", "RangePart", "cut", "failed", "hash_file", "merge", "plan", "scan_range", "scan_split"]


@dataclass
class Plan:
    """What the planning task learned: the header's findings and the ranges."""

    stamp: Stamp
    data_start: int
    header_size: int | None
    tensor_count: int
    metadata: dict[str, str] | None
    findings: list[Finding]  # validation, policy and name checks, in check order
    ranges: list[tuple[int, int, dict[str, TensorInfo]]]  # absolute [begin, end) and its tensors
    header_span: int = 0  # the bytes validation read, and their sha256 (see results.FileResult)
    header_sha256: str | None = None
    dtypes: dict[str, list[int]] | None = None  # see results.FileResult


@dataclass
class RangePart:
    """One range's deep findings and totals."""

    stamp: Stamp
    findings: list[Finding]
    stats: dict[str, Any]


@dataclass
class HashPart:
    """The whole file's digest and the integrity findings."""

    stamp: Stamp
    sha256: str
    bytes_read: int
    findings: list[Finding] = field(default_factory=list)
    checked: tuple[str, str, str] | None = None  # the digest compared with


def _stamp(fd: int) -> Stamp:
    return stamp_of(os.fstat(fd))


def _unchanged(fd: int, stamp: Stamp, job: Job) -> None:
    """Raise SourceError when the file changed since ``stamp`` was taken."""
    if _stamp(fd) != stamp:
        raise SourceError(f"{job.names[0][0]}: the file changed while it was scanned")


def cut(tensors: Sequence[tuple[str, TensorInfo]], data_start: int, file_size: int, split_bytes: int) -> list[Any]:
    """Ranges of whole tensors, in offset order, of about split_bytes each;
    together they cover [data_start, file_size) exactly."""
    ordered = sorted(tensors, key=lambda item: (item[1].begin, item[1].end))
    ranges: list[tuple[int, int, dict[str, TensorInfo]]] = []
    start = data_start
    group: dict[str, TensorInfo] = {}
    for name, info in ordered:
        begin = data_start + info.begin
        if group and begin - start >= split_bytes:
            ranges.append((start, begin, group))
            start, group = begin, {}
        group[name] = info
    ranges.append((start, file_size, group))
    return ranges


def plan(job: Job, options: Options, split_bytes: int) -> Plan | FileResult:
    """Read the header and cut the file into ranges; a file that is not
    worth splitting (or cannot be) is scanned whole here instead."""
    options = job_options(job, options)
    try:
        fd, _ = open_regular(job.path)
    except SourceError:
        return scan_file(job, options)
    with open(fd, "rb", buffering=0, closefd=True) as fh:
        stamp = _stamp(fh.fileno())
        size = stamp[0]
        # A signature's per-shard (or non-sha256) digests are made by one
        # whole read: only the file's sha256 is streamed beside the ranges.
        if not (job.validate and options.deep and size >= 2 * split_bytes) or set(job.digests) - {WHOLE_SHA256}:
            return scan_file(job, options)
        seen = SeenHeader()
        report = validate_fd(fh.fileno(), size, options.profile, seen, job.names[0][0])
        if not report.valid or report.tensors is None or report.data_start is None:
            return scan_file(job, options)
        ranges = cut(list(report.tensors.items()), report.data_start, size, split_bytes)
        if len(ranges) < 2:
            return scan_file(job, options)
        from validator.read.deep import check_names  # noqa: PLC0415 - numpy-backed deep checks load only with --deep

        out = Checker()
        if options.policy is not None:
            check_policy(report, options.policy, out)
        check_names(report.tensors, report.metadata, out)
        _unchanged(fh.fileno(), stamp, job)
        return Plan(
            stamp=stamp,
            data_start=report.data_start,
            header_size=report.header_size,
            tensor_count=len(report.tensors),
            metadata=None if report.metadata is None else dict(report.metadata),
            findings=[*report.findings, *out.findings],
            ranges=ranges,
            header_span=seen.span,
            header_sha256=seen.sha256,
            dtypes=tensor_inventory(report.tensors),
        )


def _stream(fd: int, begin: int, end: int, chunk_size: int, feed: Callable[[memoryview, int], None]) -> None:
    chunk_size = min(chunk_size, max(end - begin, 1))  # no buffer larger than the range
    buf = bytearray(chunk_size)
    offset = begin
    while offset < end:
        view = memoryview(buf)[: min(chunk_size, end - offset)]
        got = os.preadv(fd, [view], offset)
        if not got:
            raise SourceError(f"file ended at {offset} while reading up to {end}")
        feed(view[:got], offset)
        offset += got


def _last_nonzero(fd: int, lo: int, hi: int, block: int) -> int:
    """Offset just past the last nonzero byte in [lo, hi), or lo."""
    while hi > lo:
        start = max(lo, hi - block)
        data = os.pread(fd, hi - start, start)
        kept = len(data.rstrip(b"\x00"))
        if kept:
            return start + kept
        hi = start
    return lo


def scan_range(job: Job, options: Options, plan_: Plan, index: int) -> RangePart:
    """Deep-check one range; the last range also settles data-zero-tail."""
    from validator.read.deep import DeepScanner  # noqa: PLC0415 - numpy-backed deep checks load only with --deep

    begin, end, tensors = plan_.ranges[index]
    last = index == len(plan_.ranges) - 1
    fd, _ = open_regular(job.path)
    try:
        stamp = _stamp(fd)
        size = stamp[0]
        scanner = DeepScanner(fd, size, plan_.data_start, tensors, options.chunk_size)
        _stream(fd, begin, end, options.chunk_size, scanner.feed)
        out = Checker()
        stats = scanner.finish(out).to_json()
        findings = [f for f in out.findings if f.slug != "data-zero-tail"]
        if last:
            nonempty = sum(info.nbytes > 0 for info in tensors.values())
            if stats["all_zero_tensors"] < nonempty:
                # A nonzero byte lies in this range, so this scanner saw the last one.
                findings += [f for f in out.findings if f.slug == "data-zero-tail"]
            else:
                findings += _zero_tail(fd, size, plan_, begin, options.chunk_size)
        _unchanged(fd, stamp, job)
        return RangePart(stamp, findings, stats)
    finally:
        os.close(fd)


def _zero_tail(fd: int, size: int, plan_: Plan, begin: int, chunk_size: int) -> list[Finding]:
    from validator.read.deep import DeepScanner  # noqa: PLC0415 - numpy-backed deep checks load only with --deep

    everything = {name: info for _, _, group in plan_.ranges for name, info in group.items()}
    last = _last_nonzero(fd, plan_.data_start, begin, chunk_size)
    # Start at the chunk that holds the last nonzero byte, so the scanner
    # sees it, then stream the (all-zero) rest.
    start = max(plan_.data_start, last - 1)
    tail = DeepScanner(fd, size, plan_.data_start, everything, chunk_size)
    _stream(fd, start, size, chunk_size, tail.feed)
    out = Checker()
    tail.finish(out)
    return [f for f in out.findings if f.slug == "data-zero-tail"]


def hash_file(job: Job, options: Options) -> HashPart:
    """Stream the whole file once for its sha256 (and the expected digest)."""
    fd, _ = open_regular(job.path)
    try:
        stamp = _stamp(fd)
        expected, required = expected_for(job, options)
        digester = Digester(stamp[0], git_blob=expected is not None and expected.algorithm == "git-sha1")
        total = 0

        def feed(view: memoryview, _offset: int) -> None:
            nonlocal total
            digester.update(view)
            total += len(view)

        _stream(fd, 0, stamp[0], options.chunk_size, feed)
        out = Checker()
        if expected is not None or required:
            check_digest(digester, expected, out, required=required)
        _unchanged(fd, stamp, job)
        return HashPart(stamp, digester.sha256(), total, out.findings, None if expected is None else expected.fields())
    finally:
        os.close(fd)


def merge(job: Job, options: Options, plan_: Plan, parts: Sequence[RangePart], digest: HashPart) -> FileResult:
    """The FileResult a whole-file scan_file would have given."""
    options = job_options(job, options)
    display, model = job.names[0]
    policy = options.policy
    result = FileResult(
        path=display, model=model, profile=options.profile.value, policy=None if policy is None else policy.source
    )
    # Tasks may run on other machines: their device numbers may differ.
    if not all(same_file(s, plan_.stamp, device=False) for s in (*(p.stamp for p in parts), digest.stamp)):
        result.error = f"{display}: the file changed while it was scanned"
        return result
    totals: dict[str, Any] = {
        "tensors_scanned": 0,
        "bytes_scanned": 0,
        "nan": 0,
        "inf": 0,
        "all_zero_tensors": 0,
        "embedded_payloads": 0,
        "skipped_tensors": [],
    }
    for part in parts:
        for key, value in part.stats.items():
            totals[key] = totals[key] + value
    findings = [*plan_.findings, *(f for p in parts for f in p.findings), *digest.findings]
    result.file_size = plan_.stamp[0]
    result.header_size = plan_.header_size
    result.reference_valid = True  # plan() splits a file only when it is valid, so 0.8.0 reads it
    result.tensor_count = plan_.tensor_count
    result.metadata = plan_.metadata
    result.dtypes = plan_.dtypes
    result.sha256 = digest.sha256
    result.bytes_read = digest.bytes_read
    result.deep = totals
    result.read = ReadRecord(plan_.stamp, plan_.header_span, plan_.header_sha256)
    result.checked = digest.checked
    # Capped and grouped exactly as a whole-file scan_file does.
    kept, dropped = cap_per_rule(findings)
    finish_items(result, kept, dropped, policy)
    return result


def scan_split(job: Job, options: Options, split_bytes: int) -> FileResult:
    """All of the above in one process, one task after another (tests and
    the reference for what a cluster computes in parallel)."""
    first = plan(job, options, split_bytes)
    if isinstance(first, FileResult):
        return first
    try:
        parts = [scan_range(job, options, first, i) for i in range(len(first.ranges))]
        digest = hash_file(job, options)
    except (OSError, SourceError) as exc:
        return failed(job, options, exc)
    return merge(job, options, first, parts, digest)


def failed(job: Job, options: Options, exc: BaseException) -> FileResult:
    """A result for a file whose split scan could not read it."""
    display, model = job.names[0]
    message = str(exc) if isinstance(exc, SourceError) else getattr(exc, "strerror", None) or str(exc)
    return FileResult(path=display, model=model, profile=options.profile.value, error=f"{display}: {message}")
