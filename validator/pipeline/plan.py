# Strategy: the plan of a run.  The targets that validator.sources.resolve
# names become either jobs for the one read of each local file
# (validator.pipeline.engine), or results finished here: an index's
# checks, a link finding, a remote source's headers, standard input's
# header, and another file's verdict by kind.  `check` and `inspect` check
# their targets here in process (check_target, check_results); `scan` and
# the library's vet() plan them (scan_plan) for the worker pool.  Every
# result is built by index_result, header_result or the verdicts of
# validator.pipeline.verdicts, so a finding reads the same in every command.
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
from typing import TYPE_CHECKING, Any, Protocol

from validator._check import MAX_PER_RULE, Checker
from validator._errors import SourceError
from validator._prefix import prefix_rule
from validator._rules import MAX_HEADER_SIZE, PREFIX_LEN, Profile
from validator._sniff import SNIFF_LEN
from validator._validate import check_buffer, validate
from validator.config.policy import apply_policy, check_policy
from validator.config.settings import Network
from validator.pipeline.verdicts import link_result, one_entry_per_path, other_result
from validator.report.group import group_per_tensor
from validator.report.results import FileResult
from validator.sources.schemes import STDIN, STDIN_NAME, is_remote, scheme_of
from validator.sources.targets import Target, resolve

if TYPE_CHECKING:
    from collections.abc import Sequence

    from validator._findings import Finding, Report
    from validator.config.policy import Policy
    from validator.io.index import IndexReport
    from validator.sources.kinds import Other

_DRAIN = 1 << 20


@dataclass
class Checked:
    """What checking one target gave: lone or shard file reports, checkpoints,
    other files of a folder, and link findings."""

    reports: list[Report] = field(default_factory=list)
    checkpoints: list[IndexReport] = field(default_factory=list)
    others: list[Other] = field(default_factory=list)
    links: list[tuple[str, Finding]] = field(default_factory=list)


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


def stdin_result(profile: str, policy: Policy | None) -> FileResult:
    """Standard input's result: a safetensors file's from its header, or, for
    bytes a loader would unpickle, a folder's file's (the same bytes give the
    same findings however they arrive)."""
    report, kept = _read_stdin(profile)
    if kept is not None:
        from validator.sources.kinds import classify_bytes  # noqa: PLC0415 - only for foreign bytes

        other = classify_bytes(kept, STDIN_NAME)
        if other is not None:
            return other_result(other, profile, policy)
    return header_result(report, profile, policy)


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


def check_target(target: Target, profile: str, network: Network | None = None) -> Checked:
    """Check one target; raise SourceError when it cannot be read at all."""
    if target.kind == "file":
        return Checked([validate(target.path, profile=profile)])
    if target.kind == "stdin":
        report, kept = _read_stdin(profile)
        if kept is not None:
            from validator.sources.kinds import classify_bytes  # noqa: PLC0415 - only for foreign bytes

            other = classify_bytes(kept, STDIN_NAME)
            if other is not None:
                return Checked(others=[other])
        return Checked([report])
    if target.kind == "other" and target.other is not None:
        return Checked(others=[target.other])
    if target.kind == "link" and target.finding is not None:
        return Checked(links=[(target.path, target.finding)])
    from validator.io.index import IndexReport, validate_index  # noqa: PLC0415 - only for indexes and remote sources

    if target.kind == "index":
        index = validate_index(target.path, profile=profile)
        return Checked(list(index.shards.values()), [index])
    reports, others = check_remote(target.path, profile, network)
    checked = Checked(others=others)
    for result in reports:
        if isinstance(result, IndexReport):
            checked.checkpoints.append(result)
            checked.reports.extend(result.shards.values())
        else:
            checked.reports.append(result)
    return checked


@dataclass
class ScanPlan:
    """`stcheck scan` arguments as local files to scan plus finished results
    (indexes and remote headers), kept in argument order."""

    paths: list[str] = field(default_factory=list)
    ready: dict[int, list[FileResult]] = field(default_factory=dict)  # before paths[i] -> results
    others: dict[str, Other] = field(default_factory=dict)  # paths of other files -> their verdicts

    def add_ready(self, result: FileResult) -> None:
        self.ready.setdefault(len(self.paths), []).append(result)

    def merge(self, results: list[FileResult]) -> list[FileResult]:
        """Interleave the finished results with the scan's results of ``paths``
        (the last len(paths) entries of ``results``)."""
        cut = len(results) - len(self.paths)
        out = list(results[:cut])
        for i, result in enumerate(results[cut:]):
            out.extend(self.ready.get(i, []))
            out.append(result)
        out.extend(self.ready.get(len(self.paths), []))
        return out


def index_result(index: IndexReport, profile: str, policy: Policy | None, *, inspect: bool = False) -> FileResult:
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
        items=apply_policy(index.findings, policy),
        profile=profile,
        not_listed=index.suppressed,
        policy=None if policy is None else policy.source,
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
        items=apply_policy(group_per_tensor([*report.findings, *out.findings], not_kept=out.dropped), policy),
        profile=profile,
        not_listed=report.suppressed + sum(out.dropped.values()),
        metadata=None if report.metadata is None else dict(report.metadata),
        policy=None if policy is None else policy.source,
        reference_valid=report.reference_valid,
        tensors=report.to_json()["tensors"] if tensors else None,
    )


def check_results(checked: Checked, profile: str, policy: Policy | None, *, inspect: bool = False) -> list[FileResult]:
    """What `check` (and `inspect` of many files) reports: a result per link,
    index, file and other file, in that order, as the scan reports them."""
    results = [index_result(index, profile, policy, inspect=inspect) for index in checked.checkpoints]
    results += [header_result(report, profile, policy, tensors=True) for report in checked.reports]
    if checked.links or checked.others:
        links = [link_result(path, finding, profile, policy) for path, finding in checked.links]
        results = links + results + [other_result(other, profile, policy) for other in checked.others]
    return results


def scan_plan(
    paths: Sequence[str],
    profile: str,
    policy: Policy | None,
    errors: list[str],
    network: Network | None = None,
    *,
    not_read: frozenset[str] = frozenset(),
) -> ScanPlan:
    """Expand scan arguments: local files become scan jobs (a folder's other
    files too, for their digests; their verdicts are in ``others``); an
    index's checks, link findings and remote headers (checked here, header
    only) become finished results.  An other file whose real path is in
    ``not_read`` (the checksum list itself) is reported without being read."""
    plan = ScanPlan()
    for target in resolve(paths, errors):
        try:
            _plan_target(plan, target, profile, policy, network, not_read)
        except SourceError as exc:  # noqa: PERF203 - one unreadable target must not stop the others
            errors.append(str(exc))
    return plan


def _plan_target(  # noqa: PLR0917 - one private call site
    plan: ScanPlan,
    target: Target,
    profile: str,
    policy: Policy | None,
    network: Network | None,
    not_read: frozenset[str],
) -> None:
    from validator.io.index import validate_index  # noqa: PLC0415 - the index modules load only for checkpoints

    if target.kind == "file":
        plan.paths.append(target.path)
    elif target.kind == "other" and target.other is not None:
        if os.path.realpath(target.path) in not_read:
            plan.add_ready(other_result(target.other, profile, policy))
        else:
            plan.others[target.path] = target.other
            plan.paths.append(target.path)
    elif target.kind == "link" and target.finding is not None:
        plan.add_ready(link_result(target.path, target.finding, profile, policy))
    elif target.kind == "index":
        index = validate_index(target.path, profile=profile)
        plan.add_ready(index_result(index, profile, policy))
        plan.paths.extend(r.path for r in index.shards.values() if r.path is not None)
    elif target.kind == "stdin":
        plan.add_ready(stdin_result(profile, policy))
    else:
        _plan_remote(plan, target, profile, policy, network)


def _plan_remote(plan: ScanPlan, target: Target, profile: str, policy: Policy | None, network: Network | None) -> None:
    from validator.io.index import IndexReport  # noqa: PLC0415 - the index modules load only for checkpoints

    reports, others = check_remote(target.path, profile, network)
    for result in reports:
        if isinstance(result, IndexReport):
            plan.add_ready(index_result(result, profile, policy))
            for shard in result.shards.values():
                plan.add_ready(header_result(shard, profile, policy))
        else:
            plan.add_ready(header_result(result, profile, policy))
    for other in others:  # judged by name: nothing of them is read
        plan.add_ready(other_result(other, profile, policy))


def check_all(
    paths: Sequence[str], profile: str, policy: Policy | None, errors: list[str], network: Network | None = None
) -> list[FileResult]:
    """What `stcheck check` reports on ``paths``: each target checked from its
    header, in this process, as check_results builds it; a source that
    cannot be read goes to ``errors``."""
    results: list[FileResult] = []
    for target in resolve(paths, errors):
        try:
            checked = check_target(target, profile, network)
        except SourceError as exc:
            errors.append(str(exc))
            continue
        results.extend(check_results(checked, profile, policy))
    return one_entry_per_path(results)
