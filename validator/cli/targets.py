# Strategy: what a command-line argument names, and how `check`, `scan` and
# `inspect` check it.  An argument is a file, a sharded checkpoint's index, a
# directory (its indexes become checkpoints; the *.safetensors files no index
# names are checked alone), or a remote source (http(s):// or hf://).  The
# commands call expand_targets and check_target (check), scan_plan (scan)
# and inspect_target (inspect); everything about checkpoints and remote
# sources lives here, so the commands keep one loop over plain reports.
# `-` names standard input (check): it is read once, into memory only up to
# the header (the format's own bound of 100,000,000 bytes), and the rest is
# counted, never kept; a terminal is refused rather than waited on.
# check_results turns what was checked into the FileResults every report
# format writes (validator.scan.formats), the same ones a scan produces.
# validator.remote (and with it urllib3 and huggingface_hub) is imported only
# when an argument is remote.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH112, PTH116, PTH118, PTH120
from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from validator._check import MAX_PER_RULE, Checker
from validator._errors import SourceError
from validator._group import group_per_tensor
from validator._install import install_hint
from validator._rules import MAX_HEADER_SIZE, PREFIX_LEN, Profile
from validator._sniff import SNIFF_LEN
from validator._validate import check_buffer, validate
from validator.scan.format_common import STDIN_NAME
from validator.scan.policy import apply_policy, check_policy
from validator.scan.results import FileResult

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from validator._findings import Finding, Report
    from validator._kinds import Other
    from validator.io.index import IndexReport
    from validator.remote._hub import HubRepo
    from validator.scan.policy import Policy

SUFFIX = ".safetensors"
REMOTE_PREFIXES = ("http://", "https://", "hf://")
STDIN = "-"
_DRAIN = 1 << 20


def is_index(name: str) -> bool:
    # Only names ending in .json can be indexes; the index module (and its
    # imports) loads only for those, so `stcheck check FILE` stays light.
    if not name.endswith(".json"):
        return False
    from validator.io.index import is_index_name  # noqa: PLC0415 - see above

    return is_index_name(name)


@dataclass(frozen=True)
class Target:
    """One thing to check: a lone file, an index, a remote source, another
    file of a folder (judged by validator._kinds) or a link finding."""

    kind: str  # "file", "index", "remote", "stdin", "other" or "link"
    path: str
    other: Other | None = None  # for "other"
    finding: Finding | None = None  # for "link"


@dataclass
class Checked:
    """What checking one target gave: lone or shard file reports, checkpoints,
    other files of a folder, and link findings."""

    reports: list[Report] = field(default_factory=list)
    checkpoints: list[IndexReport] = field(default_factory=list)
    others: list[Other] = field(default_factory=list)
    links: list[tuple[str, Finding]] = field(default_factory=list)


def add_remote_options(parser: argparse.ArgumentParser) -> None:
    """--network-timeout (also spelt --timeout, its old name) and --concurrency, for remote sources."""
    group = parser.add_argument_group("remote sources (http(s)://, hf://)")
    group.add_argument(
        "--network-timeout",
        dest="timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds per network connect and per read (default 30)",
    )
    group.add_argument("--timeout", dest="timeout", type=float, help=argparse.SUPPRESS)  # the old name
    group.add_argument(
        "--concurrency", type=int, default=16, metavar="N", help="header fetches in flight at once (default 16)"
    )
    group.add_argument(
        "-H",
        "--header",
        dest="headers",
        action="append",
        type=header_arg,
        default=[],
        metavar="'NAME: VALUE'",
        help="an HTTP request header for a private server, as curl -H (repeatable; sent to the URL's origin only)",
    )


# RFC 9110 5.1: a field name is a token; 5.5: a value holds no CR, LF or NUL.
_FIELD_NAME: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_RESERVED: Final = frozenset({"host", "range", "accept-encoding", "content-length", "transfer-encoding", "connection"})


def header_arg(text: str) -> tuple[str, str]:
    """``NAME: VALUE`` (curl -H's form) as a pair; argparse reports the reason."""
    name, colon, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not colon or not _FIELD_NAME.fullmatch(name):
        msg = "expected 'NAME: VALUE' with NAME a header field name, such as 'Authorization: Bearer TOKEN'"
        raise argparse.ArgumentTypeError(msg)
    if name.lower() in _RESERVED:
        msg = f"{name} is set by stcheck itself (it reads files by Range requests)"
        raise argparse.ArgumentTypeError(msg)
    if any(c in value for c in "\r\n\0"):
        msg = f"the value of {name} holds a line break or NUL"
        raise argparse.ArgumentTypeError(msg)
    return name, value


def remote_headers(args: argparse.Namespace) -> dict[str, str]:
    """The --header pairs of ``args`` (a later one of a name replaces an earlier)."""
    return dict(getattr(args, "headers", None) or [])


def _named_shards(index: str) -> set[str]:
    """The shard paths an index names, normalised (empty when unreadable)."""
    from validator.io.index import parse_index, read_index  # noqa: PLC0415 - only for indexes

    try:
        raw, size = read_index(index)
    except SourceError:
        return set()
    parsed = parse_index(raw, size, Checker())
    if parsed is None:
        return set()
    base = os.path.dirname(index)
    return {os.path.normpath(os.path.join(base, shard)) for shard in parsed.first_name}


def _folder_targets(path: str, errors: list[str], *, empty_is_error: bool) -> Iterator[Target]:
    """A directory's targets (validator._walk): link findings, its indexes,
    the *.safetensors files no index names, then every other file."""
    from validator._walk import count_kinds, judge_others, kinds_line, walk  # noqa: PLC0415 - only for folders

    tree = walk(path, is_index=is_index)
    errors.extend(tree.unreadable())
    indexes = tree.of_kind("index")
    files = tree.of_kind("safetensors")
    others = judge_others(tree, errors)
    if empty_is_error and not files and not indexes and not tree.links and all(not o.findings for o in others):
        # A check that checked nothing there must not pass.
        line = kinds_line(count_kinds(others))
        errors.append(f"{path}: no *{SUFFIX} file in this directory or below it" + (f" ({line})" if line else ""))
    named: set[str] = set()
    for index in indexes:
        named |= _named_shards(index)
    for link, finding in tree.links:
        # A shard link that leaves the folder is the index's ST502 already.
        if os.path.normpath(link) not in named:
            yield Target("link", link, finding=finding)
    for index in indexes:
        yield Target("index", index)
    for file in files:
        if os.path.normpath(file) not in named:
            yield Target("file", file)
    for other in others:
        yield Target("other", other.path, other=other)


def expand_targets(paths: Sequence[str], errors: list[str], *, empty_is_error: bool = True) -> Iterator[Target]:
    """Targets for command-line arguments, in order; unreadable ones go to ``errors``,
    and so does a directory with nothing to check unless ``empty_is_error`` is false."""
    for path in paths:
        if path == STDIN:
            yield Target("stdin", STDIN_NAME)
        elif path.startswith(REMOTE_PREFIXES):
            yield Target("remote", path)
        elif os.path.isdir(path):
            yield from _folder_targets(path, errors, empty_is_error=empty_is_error)
        elif is_index(path) and os.path.lexists(path):
            yield Target("index", path)
        elif os.path.lexists(path):
            yield Target("file", path)
        else:
            errors.append(f"{path}: no such file or directory")


def _remote_options(args: argparse.Namespace) -> Any:  # noqa: ANN401 - validator.remote.Options, imported lazily
    from validator.remote import default_options  # noqa: PLC0415 - the remote extra loads only for remote sources

    return default_options(
        timeout=getattr(args, "timeout", None),
        concurrency=getattr(args, "concurrency", None),
        headers=remote_headers(args),
    )


def check_remote(
    source: str, profile: str, args: argparse.Namespace | None
) -> tuple[list[Report | IndexReport], list[Other]]:
    """Check a remote source: its reports, and a verdict on every other file
    an hf:// folder lists (judged by name); raise SourceError with a
    one-line reason."""
    try:
        from validator.remote import check_source  # noqa: PLC0415 - the remote extra loads only for remote sources
    except ImportError as exc:
        msg = f"{source}: remote checks need {exc.name}, which is not installed: {install_hint('remote')}"
        raise SourceError(msg) from exc
    from validator.cli.listing import remote_others  # noqa: PLC0415 - as above

    repos: list[HubRepo] = []
    try:
        reports = check_source(
            source, profile=profile, options=_remote_options(args or argparse.Namespace()), on_repo=repos.append
        )
    except ValueError as exc:
        raise SourceError(str(exc)) from exc
    return reports, (remote_others(source, repos[0]) if repos else [])


def read_stdin(profile: str) -> Report:
    """Validate standard input: the prefix and header are kept (at most
    100,000,000 bytes, the format's limit, or the first 4 KiB sniffed for a
    foreign format), the data only counted.  Raises SourceError when stdin
    is a terminal or closed."""
    stream = sys.stdin
    if stream is None or stream.closed:
        msg = f"{STDIN}: standard input is closed"
        raise SourceError(msg)
    if stream.isatty():
        msg = f"{STDIN}: standard input is a terminal; pipe a file in (stcheck check - < model.safetensors)"
        raise SourceError(msg)
    raw = getattr(stream, "buffer", stream)
    try:
        prefix = _read_up_to(raw, PREFIX_LEN)
        declared = int.from_bytes(prefix, "little") if len(prefix) == PREFIX_LEN else 0
        head = _read_up_to(raw, min(max(declared, SNIFF_LEN), MAX_HEADER_SIZE))
        rest = 0
        while chunk := raw.read(_DRAIN):
            rest += len(chunk)
    except OSError as exc:
        msg = f"{STDIN}: {exc.strerror or exc}"
        raise SourceError(msg) from exc

    def read_header(n: int) -> bytes:
        return head[:n]

    size = len(prefix) + len(head) + rest
    return check_buffer(prefix, read_header, size, Profile(profile), STDIN_NAME)


def _read_up_to(stream: Any, n: int) -> bytes:  # noqa: ANN401 - a binary stream, buffered or not
    parts = []
    while n > 0:
        chunk = stream.read(min(n, _DRAIN))
        if not chunk:
            break
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def check_target(target: Target, profile: str, args: argparse.Namespace | None = None) -> Checked:
    """Check one target; raise SourceError when it cannot be read at all."""
    if target.kind == "file":
        return Checked([validate(target.path, profile=profile)])
    if target.kind == "stdin":
        return Checked([read_stdin(profile)])
    if target.kind == "other" and target.other is not None:
        return Checked(others=[target.other])
    if target.kind == "link" and target.finding is not None:
        return Checked(links=[(target.path, target.finding)])
    from validator.io.index import IndexReport, validate_index  # noqa: PLC0415 - only for indexes and remote sources

    if target.kind == "index":
        index = validate_index(target.path, profile=profile)
        return Checked(list(index.shards.values()), [index])
    reports, others = check_remote(target.path, profile, args)
    checked = Checked(others=others)
    for result in reports:
        if isinstance(result, IndexReport):
            checked.checkpoints.append(result)
            checked.reports.extend(result.shards.values())
        else:
            checked.reports.append(result)
    return checked


# -- download ----------------------------------------------------------------


# -- scan --------------------------------------------------------------------


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
    if not index.path.startswith(REMOTE_PREFIXES):
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
        from validator.scan.verdicts import link_result, other_result  # noqa: PLC0415 - only for folders

        links = [link_result(path, finding, profile, policy) for path, finding in checked.links]
        results = links + results + [other_result(other, profile, policy) for other in checked.others]
    return results


def scan_plan(
    paths: Sequence[str],
    profile: str,
    policy: Policy | None,
    errors: list[str],
    args: argparse.Namespace | None = None,
    *,
    not_read: frozenset[str] = frozenset(),
) -> ScanPlan:
    """Expand scan arguments: local files become scan jobs (a folder's other
    files too, for their digests; their verdicts are in ``others``); an
    index's checks, link findings and remote headers (checked here, header
    only) become finished results.  An other file whose real path is in
    ``not_read`` (the checksum list itself) is reported without being read."""
    plan = ScanPlan()
    for target in expand_targets(paths, errors):
        try:
            _plan_target(plan, target, profile, policy, args, not_read)
        except SourceError as exc:  # noqa: PERF203 - one unreadable target must not stop the others
            errors.append(str(exc))
    return plan


def _plan_target(  # noqa: PLR0917 - one private call site
    plan: ScanPlan,
    target: Target,
    profile: str,
    policy: Policy | None,
    args: argparse.Namespace | None,
    not_read: frozenset[str],
) -> None:
    from validator.io.index import validate_index  # noqa: PLC0415 - the index modules load only for checkpoints
    from validator.scan.verdicts import link_result, other_result  # noqa: PLC0415 - only for folders

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
        plan.add_ready(header_result(read_stdin(profile), profile, policy))
    else:
        _plan_remote(plan, target, profile, policy, args)


def _plan_remote(
    plan: ScanPlan, target: Target, profile: str, policy: Policy | None, args: argparse.Namespace | None
) -> None:
    from validator.io.index import IndexReport  # noqa: PLC0415 - the index modules load only for checkpoints
    from validator.scan.verdicts import other_result  # noqa: PLC0415 - only for hf:// folders

    reports, others = check_remote(target.path, profile, args)
    for result in reports:
        if isinstance(result, IndexReport):
            plan.add_ready(index_result(result, profile, policy))
            for shard in result.shards.values():
                plan.add_ready(header_result(shard, profile, policy))
        else:
            plan.add_ready(header_result(result, profile, policy))
    for other in others:  # judged by name: nothing of them is read
        plan.add_ready(other_result(other, profile, policy))
