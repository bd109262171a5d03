# Strategy: what a command-line argument names, and how `check`, `scan` and
# `inspect` check it.  An argument is a file, a sharded checkpoint's index, a
# directory (its indexes become checkpoints; the *.safetensors files no index
# names are checked alone), or a remote source (http(s):// or hf://).  The
# commands call expand_targets and check_target (check), scan_plan (scan)
# and inspect_target (inspect); everything about checkpoints and remote
# sources lives here, so the commands keep one loop over plain reports.
# validator.remote (and with it urllib3 and huggingface_hub) is imported only
# when an argument is remote.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH112, PTH118, PTH120, T201
from __future__ import annotations

import argparse
import os
import posixpath
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from validator._check import MAX_PER_RULE, Checker
from validator._display import encodable, escape_line, escape_path, finding_line
from validator._errors import SourceError
from validator._rules import Severity
from validator._validate import validate

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from validator._findings import Finding, Report
    from validator._kinds import Other
    from validator.io.index import IndexReport
    from validator.scan.policy import Policy

SUFFIX = ".safetensors"
REMOTE_PREFIXES = ("http://", "https://", "hf://")


def _is_index(name: str) -> bool:
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

    kind: str  # "file", "index", "remote", "other" or "link"
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
    """--timeout and --concurrency, for remote sources."""
    group = parser.add_argument_group("remote sources (http(s)://, hf://)")
    group.add_argument(
        "--timeout", type=float, default=30.0, metavar="S", help="seconds per connect and per read (default 30)"
    )
    group.add_argument(
        "--concurrency", type=int, default=16, metavar="N", help="header fetches in flight at once (default 16)"
    )


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

    tree = walk(path, is_index=_is_index)
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
        if path.startswith(REMOTE_PREFIXES):
            yield Target("remote", path)
        elif os.path.isdir(path):
            yield from _folder_targets(path, errors, empty_is_error=empty_is_error)
        elif _is_index(path) and os.path.lexists(path):
            yield Target("index", path)
        elif os.path.lexists(path):
            yield Target("file", path)
        else:
            errors.append(f"{path}: no such file or directory")


def _remote_options(args: argparse.Namespace) -> Any:  # noqa: ANN401 - validator.remote.Options, imported lazily
    from validator.remote import default_options  # noqa: PLC0415 - the remote extra loads only for remote sources

    return default_options(timeout=getattr(args, "timeout", None), concurrency=getattr(args, "concurrency", None))


def check_remote(source: str, profile: str, args: argparse.Namespace | None) -> list[Report | IndexReport]:
    """Check a remote source; raise SourceError with a one-line reason."""
    try:
        from validator.remote import check_source  # noqa: PLC0415 - the remote extra loads only for remote sources
    except ImportError as exc:
        msg = f"{source}: remote checks need the remote extra: pip install 'stcheck[remote]' ({exc.name} is missing)"
        raise SourceError(msg) from exc
    try:
        return check_source(source, profile=profile, options=_remote_options(args or argparse.Namespace()))
    except ValueError as exc:
        raise SourceError(str(exc)) from exc


def check_target(target: Target, profile: str, args: argparse.Namespace | None = None) -> Checked:
    """Check one target; raise SourceError when it cannot be read at all."""
    if target.kind == "file":
        return Checked([validate(target.path, profile=profile)])
    if target.kind == "other" and target.other is not None:
        return Checked(others=[target.other])
    if target.kind == "link" and target.finding is not None:
        return Checked(links=[(target.path, target.finding)])
    from validator.io.index import IndexReport, validate_index  # noqa: PLC0415 - only for indexes and remote sources

    if target.kind == "index":
        index = validate_index(target.path, profile=profile)
        return Checked(list(index.shards.values()), [index])
    checked = Checked()
    for result in check_remote(target.path, profile, args):
        if isinstance(result, IndexReport):
            checked.checkpoints.append(result)
            checked.reports.extend(result.shards.values())
        else:
            checked.reports.append(result)
    return checked


def checkpoint_heading(index: IndexReport) -> str:
    """One line naming a checkpoint and its verdict, printed above its findings."""
    from validator.io.checkpoint import summarize  # noqa: PLC0415 - the index modules load only for checkpoints

    s = summarize(index.weight_map or {}, index.shards)
    n = len(index.errors)
    verdict = "valid" if index.valid else f"invalid ({n} error{'s' if n != 1 else ''} in the index)"
    return (
        f"checkpoint {escape_path(index.path)}: {s.shards} shard{'s' if s.shards != 1 else ''}, {s.tensors} tensors, "
        f"{s.parameters:,} parameters: {verdict}"
    )


def checkpoint_json(index: IndexReport) -> dict[str, Any]:
    """A checkpoint's entry in `check --format json` (its shards are in ``files``)."""
    from validator.io.checkpoint import summarize  # noqa: PLC0415 - the index modules load only for checkpoints

    return {
        "path": index.path,
        "valid": index.valid,
        "findings": [f.to_json() for f in index.findings],
        "suppressed": index.suppressed,
        "shards": [r.path for r in index.shards.values()],
        "summary": summarize(index.weight_map or {}, index.shards).to_json(),
    }


# -- download ----------------------------------------------------------------


def listing_lines(names: Sequence[str], source: str) -> list[str]:
    """What `stcheck download` of a repository or folder leaves behind, from
    the hub's listing (``names``): a line for each pickle and Python file and
    a count per kind of the rest; nothing for a single-file source."""
    from validator._kinds import listed_kind, safetensors_copy  # noqa: PLC0415 - only for hf:// sources
    from validator.remote._hub import is_hf, parse_hf  # noqa: PLC0415 - as above

    if not is_hf(source):
        return []
    folder = parse_hf(source).path.strip("/")
    if folder.endswith(SUFFIX) or _is_index(folder):
        return []
    left = [
        n for n in names if (not folder or n.startswith(folder + "/")) and not n.endswith(SUFFIX) and not _is_index(n)
    ]
    siblings: dict[str, set[str]] = {}
    for name in names:
        siblings.setdefault(posixpath.dirname(name), set()).add(posixpath.basename(name))
    lines = []
    counts: dict[str, int] = {}
    for name in left:
        kind, warning = listed_kind(name)
        counts[kind] = counts.get(kind, 0) + 1
        if warning is None:
            continue
        copy = None if kind == "Python" else safetensors_copy(name, siblings[posixpath.dirname(name)])
        note = f"; {copy} is a safetensors copy" if copy is not None else ""
        lines.append(escape_line(f"{name}: not downloaded: {warning}{note}"))
    if counts:
        parts = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        total = sum(counts.values())
        lines.append(escape_line(f"not downloaded (not safetensors): {total} file{'s' if total != 1 else ''}: {parts}"))
    return lines


# -- inspect -----------------------------------------------------------------


def inspect_target(args: argparse.Namespace) -> int | None:
    """`stcheck inspect` of a checkpoint, directory or remote source; None for a
    lone local file (the command's own table handles it)."""
    path = args.path
    remote = path.startswith(REMOTE_PREFIXES)
    if not remote and not os.path.isdir(path) and not _is_index(path):
        return None
    errors: list[str] = []
    checked = Checked()
    try:
        for target in expand_targets([path], errors, empty_is_error=False):
            part = check_target(target, args.profile, args)
            checked.reports.extend(part.reports)
            checked.checkpoints.extend(part.checkpoints)
            checked.others.extend(part.others)
            checked.links.extend(part.links)
    except SourceError as exc:
        errors.append(str(exc))
    judged = checked.links or any(o.findings for o in checked.others)
    if not errors and not checked.reports and not checked.checkpoints and not judged:
        errors.append(f"{path}: not a regular file (a directory with no *.safetensors file or index)")
    for message in errors:
        print(escape_line(f"stcheck: {message}"), file=sys.stderr)
    if errors:
        return 2
    if args.format == "json":
        import json  # noqa: PLC0415 - only for this output

        doc = {
            "checkpoints": [
                {**checkpoint_json(c), "weight_map": dict(c.weight_map or {})} for c in checked.checkpoints
            ],
            "files": [r.to_json() for r in checked.reports],
            **others_json(checked.others, checked.links),
        }
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _inspect_text(checked)
    valid = (
        all(r.valid for r in checked.reports)
        and all(c.valid for c in checked.checkpoints)
        and all(o.valid for o in checked.others)
        and all(f.severity is not Severity.ERROR for _, f in checked.links)
    )
    return 0 if valid else 1


def others_json(others: Sequence[Other], links: Sequence[tuple[str, Finding]]) -> dict[str, Any]:
    """The ``other_files`` and ``links`` entries of a JSON report (absent when empty)."""
    doc: dict[str, Any] = {}
    if others:
        doc["other_files"] = [_json_paths(o.to_json()) for o in others]
    if links:
        doc["links"] = [_json_paths({"path": p, "findings": [f.to_json()]}) for p, f in links]
    return doc


def _json_paths(doc: dict[str, Any]) -> dict[str, Any]:
    if not encodable(doc["path"]):
        doc["path"] = escape_path(doc["path"])
    for finding in doc["findings"]:
        if not encodable(finding["message"]):
            finding["message"] = escape_line(finding["message"])
    return doc


def other_lines(checked: Checked, *, warnings: bool = True) -> Iterator[str]:
    """The finding lines of a folder's other files and links, escaped."""
    for link, finding in checked.links:
        if warnings or finding.severity is Severity.ERROR:
            yield finding_line(link, finding)
    for other in checked.others:
        for finding in other.findings:
            if warnings or finding.severity is Severity.ERROR:
                yield finding_line(other.path, finding)


def _inspect_text(checked: Checked) -> None:  # noqa: C901 - one branch per kind of text file a user may pass
    from validator.io.checkpoint import summarize  # noqa: PLC0415 - the index modules load only for checkpoints

    in_checkpoint = set()
    for index in checked.checkpoints:
        print(checkpoint_heading(index))
        s = summarize(index.weight_map or {}, index.shards)
        base = {r.path: posixpath.basename(r.path or "") for r in index.shards.values()}
        rows = []
        for name, shard in sorted((index.weight_map or {}).items()):
            report = index.shards.get(shard)
            info = None if report is None or report.tensors is None else report.tensors.get(name)
            if info is None:
                rows.append([escape_path(name), "?", "?", escape_path(shard), "-"])
                continue
            shape = "[" + ", ".join(map(str, info.shape)) + "]"
            rows.append([escape_path(name), info.dtype, shape, escape_path(shard), f"{info.nbytes:,}"])
        _table(rows, ["name", "dtype", "shape", "shard", "bytes"])
        print(f"shards ({s.shards}):")
        for shard, report in sorted(index.shards.items()):
            count = 0 if report.tensors is None else len(report.tensors)
            verdict = "valid" if report.valid else "invalid"
            print(f"  {escape_path(shard)}: {report.file_size:,} bytes, {count} tensors, {verdict}")
            in_checkpoint.add(report.path)
        print("dtypes:")
        for dtype, (n, params) in sorted(s.dtypes.items()):
            print(f"  {dtype}: {n} tensors, {params:,} parameters")
        print(
            f"{s.tensors} tensors, {s.parameters:,} parameters, {s.data_bytes:,} data bytes "
            f"in {s.shards} shards ({s.file_bytes:,} bytes)"
        )
        for finding in index.findings:
            print(finding.format(index.path))
        for report in index.shards.values():
            for finding in report.findings:
                print(finding.format(base.get(report.path, report.path or "")))
    for report in checked.reports:
        if report.path in in_checkpoint:
            continue
        tensors = report.tensors or {}
        shown = escape_path(report.path or "")
        print(f"{shown}: {report.file_size:,} bytes, header {report.header_size} bytes, {len(tensors)} tensors")
        for finding in report.findings:
            print(finding.format(report.path or ""))
    _inspect_others(checked)


def _inspect_others(checked: Checked) -> None:
    from validator._walk import count_kinds, kinds_line  # noqa: PLC0415 - only for folders

    for other in checked.others:
        print(f"{escape_path(other.path)}: {other.size:,} bytes, {other.kind}")
    for line in other_lines(checked):
        print(line)
    line = kinds_line(count_kinds(checked.others))
    if line:
        print(line)


def _table(rows: list[list[str]], headers: list[str]) -> None:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    for row in [headers, ["-" * w for w in widths], *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


# -- scan --------------------------------------------------------------------


@dataclass
class ScanPlan:
    """`stcheck scan` arguments as local files to scan plus finished results
    (indexes and remote headers), kept in argument order."""

    paths: list[str] = field(default_factory=list)
    ready: dict[int, list[Any]] = field(default_factory=dict)  # before paths[i] -> FileResults
    others: dict[str, Other] = field(default_factory=dict)  # paths of other files -> their verdicts

    def add_ready(self, result: Any) -> None:  # noqa: ANN401 - scan.engine.FileResult, imported lazily
        self.ready.setdefault(len(self.paths), []).append(result)

    def merge(self, results: list[Any]) -> list[Any]:
        """Interleave the finished results with the scan's results of ``paths``
        (the last len(paths) entries of ``results``)."""
        cut = len(results) - len(self.paths)
        out = list(results[:cut])
        for i, result in enumerate(results[cut:]):
            out.extend(self.ready.get(i, []))
            out.append(result)
        out.extend(self.ready.get(len(self.paths), []))
        return out


def _index_result(index: IndexReport, profile: str, policy: Policy | None) -> Any:  # noqa: ANN401 - scan types, imported lazily
    from validator.io.checkpoint import summarize  # noqa: PLC0415 - the index modules load only for checkpoints
    from validator.scan.engine import FileResult  # noqa: PLC0415 - scan's types load with scan
    from validator.scan.policy import apply_policy  # noqa: PLC0415 - as above

    s = summarize(index.weight_map or {}, index.shards)
    return FileResult(
        path=index.path,
        kind="index",
        file_size=None,
        tensor_count=s.tensors,
        items=apply_policy(index.findings, policy),
        profile=profile,
        not_listed=index.suppressed,
        policy=None if policy is None else policy.source,
    )


def _header_result(report: Report, profile: str, policy: Policy | None) -> Any:  # noqa: ANN401 - scan types, imported lazily
    from validator.scan.engine import FileResult  # noqa: PLC0415 - scan's types load with scan
    from validator.scan.policy import apply_policy, check_policy  # noqa: PLC0415 - as above

    out = Checker(limit=MAX_PER_RULE)  # one policy finding per tensor can be millions
    if policy is not None:
        check_policy(report, policy, out)
    return FileResult(
        path=report.path or "",
        file_size=report.file_size,
        header_size=report.header_size,
        tensor_count=None if report.tensors is None else len(report.tensors),
        items=apply_policy([*report.findings, *out.findings], policy),
        profile=profile,
        not_listed=report.suppressed + sum(out.dropped.values()),
        metadata=None if report.metadata is None else dict(report.metadata),
        policy=None if policy is None else policy.source,
        reference_valid=report.reference_valid,
    )


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
    from validator.io.index import IndexReport, validate_index  # noqa: PLC0415 - the index modules load only for checkpoints
    from validator.scan.verdicts import link_result, other_result  # noqa: PLC0415 - scan's types load with scan

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
        plan.add_ready(_index_result(index, profile, policy))
        plan.paths.extend(r.path for r in index.shards.values() if r.path is not None)
    else:
        for result in check_remote(target.path, profile, args):
            if isinstance(result, IndexReport):
                plan.add_ready(_index_result(result, profile, policy))
                for shard in result.shards.values():
                    plan.add_ready(_header_result(shard, profile, policy))
            else:
                plan.add_ready(_header_result(result, profile, policy))
