# Strategy: the plan of a run, the first stage.  Each target that
# validator.sources.targets.resolve names is planned by one `match` on its type
# (plan_target): what the plan reads itself (an index's checks, a header
# read from standard input or a remote source, a header in `check` and
# `inspect`), the verdicts the walk already gave (another file's kind, a
# link's finding), and, in a scan, the jobs left to the read stage
# (validator.pipeline.engine).  `check` and `scan` differ only in `Read`:
# what a local file's read covers.  Every result is built by index_result,
# header_result or the verdicts of validator.pipeline.verdicts, so a
# finding reads the same in every command; no result is judged here (the
# policy is applied once, by validator.pipeline.judge).
# `-` names standard input: it is read once, into memory only up to the
# header (the format's own bound of 100,000,000 bytes), and the rest is
# counted, never kept; a terminal is refused rather than waited on.
# validator.remote (and with it urllib3) is imported only when a target is
# remote.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH116
from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, assert_never

from validator._check import MAX_PER_RULE, Checker
from validator._errors import SourceError
from validator._prefix import prefix_rule
from validator._rules import MAX_HEADER_SIZE, PREFIX_LEN, Profile
from validator._sniff import SNIFF_LEN
from validator._validate import check_buffer, validate
from validator.config.policy import check_policy
from validator.config.settings import Network
from validator.pipeline.judge import judge, unjudged
from validator.pipeline.verdicts import link_result, other_result, take_verdicts
from validator.report.group import group_per_tensor
from validator.report.results import FileResult
from validator.sources.schemes import STDIN, STDIN_NAME, is_remote, scheme_of
from validator.sources.targets import HubCache, Index, Link, LocalFile, OtherFile, Remote, Stdin, Target, resolve

if TYPE_CHECKING:
    from collections.abc import Sequence

    from validator._findings import Finding, Report
    from validator.config.policy import Policy
    from validator.io.index import IndexReport
    from validator.pipeline.engine import Job
    from validator.pipeline.hubcache import HubWalk
    from validator.sources.kinds import Other

__all__ = [
    "Planned",
    "Read",
    "SourceReader",
    "check_all",
    "check_remote",
    "header_result",
    "index_result",
    "plan_target",
    "read_stdin",
    "results_of",
]

# What the read of a local file covers: its header in this process (check,
# inspect), or all of it in the read stage (scan).
Read: TypeAlias = Literal["header", "scan"]

_DRAIN = 1 << 20


class SourceReader(Protocol):
    """What the module a scheme names (validator.sources.schemes) provides."""

    def read_source(
        self, source: str, *, profile: str, network: Network
    ) -> tuple[list[Report | IndexReport], list[Other]]: ...


def check_remote(source: str, profile: str, network: Network | None) -> tuple[list[Report | IndexReport], list[Other]]:
    """Check a remote source through the module its scheme names: its
    reports, and a verdict on every other file a listed folder holds (judged
    by name); raise SourceError with a one-line reason."""
    scheme = scheme_of(source)
    if scheme is None:
        msg = f"{source}: not a remote source"
        raise SourceError(msg)
    try:
        # The reader (and its HTTP client) loads only for a remote source.
        reader: SourceReader = importlib.import_module(scheme.module)
    except ImportError as exc:
        from validator.config.install import install_hint  # noqa: PLC0415 - only when the extra is missing

        msg = f"{source}: remote checks need {exc.name}, which is not installed: {install_hint(scheme.extra)}"
        raise SourceError(msg) from exc
    try:
        return reader.read_source(source, profile=profile, network=network or Network())
    except ValueError as exc:
        raise SourceError(str(exc)) from exc


def read_stdin(profile: str) -> Report:
    """Validate standard input: the prefix and header are kept (at most
    100,000,000 bytes, the format's limit, or the first 4 KiB sniffed for a
    foreign format), the data only counted.  Raises SourceError when stdin
    is a terminal or closed."""
    report, _ = _read_stdin(profile)
    return report


# Standard input that is no safetensors file is kept up to this size, to be
# judged as a file of a folder is (a pickle, read by validator.formats).
STDIN_KEPT = 256 << 20


def _read_stdin(profile: str) -> tuple[Report, bytes | None]:
    stream = sys.stdin
    if stream is None or stream.closed:
        msg = f"{STDIN}: standard input is closed"
        raise SourceError(msg)
    if stream.isatty():
        msg = f"{STDIN}: standard input is a terminal; pipe a file in (stcheck check - < model.safetensors)"
        raise SourceError(msg)
    raw: Any = getattr(stream, "buffer", stream)  # a binary stream, buffered or not
    try:
        prefix = _read_up_to(raw, PREFIX_LEN)
        declared = int.from_bytes(prefix, "little") if len(prefix) == PREFIX_LEN else 0
        head = _read_up_to(raw, min(max(declared, SNIFF_LEN), MAX_HEADER_SIZE))
        foreign = len(prefix) == PREFIX_LEN and prefix_rule(prefix, PREFIX_LEN + MAX_HEADER_SIZE + 1) is not None
        kept: list[bytes] | None = [prefix, head] if foreign else None
        rest = 0
        while chunk := raw.read(_DRAIN):
            rest += len(chunk)
            if kept is not None and rest + len(head) <= STDIN_KEPT:
                kept.append(chunk)
            else:
                kept = None
    except OSError as exc:
        msg = f"{STDIN}: {exc.strerror or exc}"
        raise SourceError(msg) from exc

    def read_header(n: int) -> bytes:
        return head[:n]

    size = len(prefix) + len(head) + rest
    report = check_buffer(prefix, read_header, size, Profile(profile), STDIN_NAME)
    return report, None if kept is None else b"".join(kept)


def _read_up_to(stream: Any, n: int) -> bytes:  # noqa: ANN401 - a binary stream, buffered or not
    parts = []
    while n > 0:
        chunk = stream.read(min(n, _DRAIN))
        if not chunk:
            break
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


@dataclass
class Planned:
    """One target's share of the run: what the plan read or judged itself,
    and, in a scan, the files left to the read stage."""

    ordinal: int
    reports: list[Report] = field(default_factory=list)  # files checked from their headers
    checkpoints: list[IndexReport] = field(default_factory=list)
    others: list[Other] = field(default_factory=list)  # files judged by kind, not read again
    links: list[tuple[str, Finding]] = field(default_factory=list)  # link findings that name no file read
    jobs: list[Job] = field(default_factory=list)  # scan: files read in full by the read stage
    verdicts: dict[str, Other] = field(default_factory=dict)  # scan: the kinds of the jobs that are other files
    via: dict[str, Finding] = field(default_factory=dict)  # a link's finding, by the path of the file it names
    models: dict[str, str] = field(default_factory=dict)  # hub cache: path -> repository id
    hub: HubWalk | None = None  # the hub cache's walk (the signatures stage reads its jobs)
    errors: list[str] = field(default_factory=list)  # what could not be read, the rest planned


def plan_target(  # noqa: C901, PLR0912 - one branch per kind of target
    target: Target,
    read: Read,
    profile: str,
    policy: Policy | None = None,
    network: Network | None = None,
    *,
    not_read: frozenset[str] = frozenset(),
) -> Planned:
    """Plan one target; raise SourceError when it cannot be read at all.
    An other file whose real path is in ``not_read`` (a scan's checksum
    list) is reported without being read."""
    planned = Planned(target.ordinal)
    match target:
        case LocalFile(path=path, via=via):
            if read == "header":
                planned.reports.append(validate(path, profile=profile))
            else:
                planned.jobs.append(_job(path, policy))
            _via(planned, path, via)
        case Index(path=path, via=via):
            from validator.io.index import validate_index  # noqa: PLC0415 - the index modules load only for checkpoints

            index = validate_index(path, profile=profile)
            planned.checkpoints.append(index)
            if read == "header":
                planned.reports.extend(index.shards.values())
            else:
                planned.jobs.extend(_job(r.path, policy) for r in index.shards.values() if r.path is not None)
            _via(planned, path, via)
        case OtherFile(other=other, via=via):
            if read == "header" or os.path.realpath(other.path) in not_read:
                planned.others.append(other)
            else:
                planned.verdicts[other.path] = other
                planned.jobs.append(_job(other.path, policy, validate=False))
            _via(planned, other.path, via)
        case Link(path=path, finding=finding):
            planned.links.append((path, finding))
        case Stdin():
            report, kept = _read_stdin(profile)
            foreign = None if kept is None else _foreign_stdin(kept)
            if foreign is not None:
                planned.others.append(foreign)
            else:
                planned.reports.append(report)
        case Remote(source=source):
            _plan_remote(planned, source, profile, network)
        case HubCache(cache=cache):
            _plan_hub(planned, cache, profile, policy)
        case _:
            assert_never(target)
    return planned


def _job(path: str, policy: Policy | None, *, validate: bool = True) -> Job:
    from validator.pipeline.engine import Job  # noqa: PLC0415 - the read stage's types load only for a scan

    return Job(path, ((path, None),), policy=policy, validate=validate)


def _via(planned: Planned, path: str, via: Finding | None) -> None:
    if via is not None:
        planned.via[path] = via


def _foreign_stdin(kept: bytes) -> Other | None:
    # Bytes a loader would unpickle are judged as a folder's file is: the
    # same bytes give the same findings however they arrive.
    from validator.sources.kinds import classify_bytes  # noqa: PLC0415 - only for foreign bytes

    return classify_bytes(kept, STDIN_NAME)


def _plan_remote(planned: Planned, source: str, profile: str, network: Network | None) -> None:
    from validator.io.index import IndexReport  # noqa: PLC0415 - the index modules load only for checkpoints

    reports, others = check_remote(source, profile, network)
    planned.others.extend(others)  # judged by name: nothing of them is read
    for result in reports:
        if isinstance(result, IndexReport):
            planned.checkpoints.append(result)
            planned.reports.extend(result.shards.values())
        else:
            planned.reports.append(result)


def _plan_hub(planned: Planned, cache: str, profile: str, policy: Policy | None) -> None:
    from validator.io.index import validate_index  # noqa: PLC0415 - the index modules load only for checkpoints
    from validator.pipeline.hubcache import hf_cache_walk  # noqa: PLC0415 - only for a hub cache

    hub = hf_cache_walk(cache, planned.errors, policy)
    planned.hub = hub
    planned.jobs.extend(hub.jobs)
    planned.verdicts.update(hub.others)
    planned.via.update(hub.via)
    planned.links.extend((path, finding) for path, finding, _ in hub.links)
    planned.models.update((path, repo) for path, _, repo in hub.links)
    for path, repo in hub.indexes:  # each snapshot index's checks (missing shards, orphans, ties), as for a folder
        planned.checkpoints.append(validate_index(path, profile=profile))
        planned.models[path] = repo


def index_result(index: IndexReport, profile: str, *, inspect: bool = False) -> FileResult:
    """A checkpoint's index as a result of its own (its shards are results too):
    its size (unknown for a remote index, whose JSON alone was fetched), its
    findings, and its totals; with ``inspect``, its weight_map too."""
    from validator.io.checkpoint import summarize  # noqa: PLC0415 - the index modules load only for checkpoints

    s = summarize(index.weight_map or {}, index.shards)
    size = None
    if not is_remote(index.path):
        try:
            size = os.stat(index.path).st_size
        except OSError:  # gone since it was read: say nothing rather than a wrong size
            size = None
    checkpoint: dict[str, Any] = {**s.to_json(), "shard_paths": [r.path for r in index.shards.values()]}
    if inspect:
        checkpoint["weight_map"] = dict(index.weight_map or {})
    return FileResult(
        path=index.path,
        kind="index",
        file_size=size,
        tensor_count=s.tensors,
        items=unjudged(index.findings),
        profile=profile,
        not_listed=index.suppressed,
        checkpoint=checkpoint,
    )


def header_result(report: Report, profile: str, policy: Policy | None, *, tensors: bool = False) -> FileResult:
    """A file checked from its header (check, inspect, a remote or stdin
    source in a scan), with the policy's checks; with ``tensors``, its tensor
    table as JSON (check and inspect)."""
    out = Checker(limit=MAX_PER_RULE)  # one policy finding per tensor can be millions
    if policy is not None:
        check_policy(report, policy, out)
    return FileResult(
        path=report.path or "",
        file_size=report.file_size,
        header_size=report.header_size,
        tensor_count=None if report.tensors is None else len(report.tensors),
        items=unjudged(group_per_tensor([*report.findings, *out.findings], not_kept=out.dropped)),
        profile=profile,
        not_listed=report.suppressed + sum(out.dropped.values()),
        metadata=None if report.metadata is None else dict(report.metadata),
        reference_valid=report.reference_valid,
        tensors=report.to_json()["tensors"] if tensors else None,
    )


def results_of(
    planned: Planned, profile: str, policy: Policy | None, *, tensors: bool = False, inspect: bool = False
) -> list[FileResult]:
    """The results the plan finished for one target, unjudged: a result per
    link, index, file checked from its header and other file, in that order
    (a scan's jobs follow them)."""
    results = [link_result(path, finding, profile, planned.models.get(path)) for path, finding in planned.links]
    for index in planned.checkpoints:
        result = index_result(index, profile, inspect=inspect)
        result.model = planned.models.get(index.path)
        results.append(result)
    results += [header_result(report, profile, policy, tensors=tensors) for report in planned.reports]
    results += [other_result(other, profile) for other in planned.others]
    return results


def check_all(
    paths: Sequence[str], profile: str, policy: Policy | None, errors: list[str], network: Network | None = None
) -> list[FileResult]:
    """What `stcheck check` reports on ``paths``: each target checked from its
    header, in this process; a source that cannot be read goes to ``errors``."""
    results: list[FileResult] = []
    for target in resolve(paths, errors):
        try:
            planned = plan_target(target, "header", profile, policy, network)
        except SourceError as exc:
            errors.append(str(exc))
            continue
        errors.extend(planned.errors)
        results.extend(take_verdicts(results_of(planned, profile, policy, tensors=True), planned.verdicts, planned.via))
    judge(results, policy)
    return results
