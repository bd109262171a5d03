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

from validator._check import Checker
from validator._errors import SourceError
from validator._validate import validate

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from validator._findings import Report
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
    """One thing to check: a lone file, an index, or a remote source."""

    kind: str  # "file", "index" or "remote"
    path: str


@dataclass
class Checked:
    """What checking one target gave: lone or shard file reports, checkpoints."""

    reports: list[Report] = field(default_factory=list)
    checkpoints: list[IndexReport] = field(default_factory=list)


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


def expand_targets(paths: Sequence[str], errors: list[str], *, empty_is_error: bool = True) -> Iterator[Target]:  # noqa: C901, PLR0912 - one branch per kind of target (file, directory, index, URL, special file)
    """Targets for command-line arguments, in order; unreadable ones go to ``errors``,
    and so does a directory with nothing to check unless ``empty_is_error`` is false."""
    for path in paths:
        if path.startswith(REMOTE_PREFIXES):
            yield Target("remote", path)
        elif os.path.isdir(path):
            files: list[str] = []
            indexes: list[str] = []
            for root, dirs, names in os.walk(path, onerror=lambda e: errors.append(f"{e.filename}: {e.strerror}")):
                dirs.sort()
                for name in sorted(names):
                    full = os.path.join(root, name)
                    if _is_index(name):
                        indexes.append(full)
                    elif name.endswith(SUFFIX):
                        files.append(full)
            if empty_is_error and not files and not indexes:
                # A check that checked nothing there must not pass.
                errors.append(f"{path}: no *{SUFFIX} file in this directory or below it")
            named: set[str] = set()
            for index in sorted(indexes):
                named |= _named_shards(index)
                yield Target("index", index)
            for file in sorted(files):
                if os.path.normpath(file) not in named:
                    yield Target("file", file)
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
        f"checkpoint {index.path}: {s.shards} shard{'s' if s.shards != 1 else ''}, {s.tensors} tensors, "
        f"{s.parameters:,} parameters: {verdict}"
    )


def checkpoint_json(index: IndexReport) -> dict[str, Any]:
    """A checkpoint's entry in `check --format json` (its shards are in ``files``)."""
    from validator.io.checkpoint import summarize  # noqa: PLC0415 - the index modules load only for checkpoints

    return {
        "path": index.path,
        "valid": index.valid,
        "findings": [f.to_json() for f in index.findings],
        "shards": [r.path for r in index.shards.values()],
        "summary": summarize(index.weight_map or {}, index.shards).to_json(),
    }


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
    except SourceError as exc:
        errors.append(str(exc))
    if not errors and not checked.reports and not checked.checkpoints:
        errors.append(f"{path}: not a regular file (a directory with no *.safetensors file or index)")
    for message in errors:
        print(f"stcheck: {message}", file=sys.stderr)
    if errors:
        return 2
    if args.format == "json":
        import json  # noqa: PLC0415 - only for this output

        doc = {
            "checkpoints": [
                {**checkpoint_json(c), "weight_map": dict(c.weight_map or {})} for c in checked.checkpoints
            ],
            "files": [r.to_json() for r in checked.reports],
        }
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _inspect_text(checked)
    valid = all(r.valid for r in checked.reports) and all(c.valid for c in checked.checkpoints)
    return 0 if valid else 1


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
                rows.append([name, "?", "?", shard, "-"])
                continue
            rows.append([name, info.dtype, "[" + ", ".join(map(str, info.shape)) + "]", shard, f"{info.nbytes:,}"])
        _table(rows, ["name", "dtype", "shape", "shard", "bytes"])
        print(f"shards ({s.shards}):")
        for shard, report in sorted(index.shards.items()):
            count = 0 if report.tensors is None else len(report.tensors)
            print(f"  {shard}: {report.file_size:,} bytes, {count} tensors, {'valid' if report.valid else 'invalid'}")
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
        print(f"{report.path}: {report.file_size:,} bytes, header {report.header_size} bytes, {len(tensors)} tensors")
        for finding in report.findings:
            print(finding.format(report.path or ""))


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
    )


def _header_result(report: Report, profile: str, policy: Policy | None) -> Any:  # noqa: ANN401 - scan types, imported lazily
    from validator.scan.engine import FileResult  # noqa: PLC0415 - scan's types load with scan
    from validator.scan.policy import apply_policy, check_policy  # noqa: PLC0415 - as above

    out = Checker()
    if policy is not None:
        check_policy(report, policy, out)
    return FileResult(
        path=report.path or "",
        file_size=report.file_size,
        header_size=report.header_size,
        tensor_count=None if report.tensors is None else len(report.tensors),
        items=apply_policy([*report.findings, *out.findings], policy),
        profile=profile,
        metadata=None if report.metadata is None else dict(report.metadata),
        reference_valid=report.reference_valid,
    )


def scan_plan(
    paths: Sequence[str],
    profile: str,
    policy_for: Callable[[str], Policy | None],
    errors: list[str],
    args: argparse.Namespace | None = None,
) -> ScanPlan:
    """Expand scan arguments: local files become scan jobs; an index's checks
    and remote headers (checked here, header only) become finished results."""
    from validator.io.index import IndexReport, validate_index  # noqa: PLC0415 - the index modules load only for checkpoints

    plan = ScanPlan()
    for target in expand_targets(paths, errors):
        policy = policy_for(target.path)
        try:
            if target.kind == "file":
                plan.paths.append(target.path)
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
        except SourceError as exc:
            errors.append(str(exc))
    return plan
