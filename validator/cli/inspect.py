# Strategy: `stcheck inspect`: the tensor table, metadata and findings of a
# file, or of everything a folder, an index or a remote source holds.  A lone
# local file's JSON is its fileReport (Report.to_json()); anything else is the
# report document that `check --format json` writes (the same writer, with
# the tensor tables and an index's weight_map), so both validate against
# validator/schemas/report.schema.json.  The policy applies as for check
# (found the same way, the same --fail-on): the last line names it, the exit
# code is its verdict, and a lone file's lines leave out what it ignores.
# Every path and line goes through validator._display; nothing here imports numpy.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH112, T201
from __future__ import annotations

import json
import os
import posixpath
import sys
from typing import TYPE_CHECKING

from validator._display import escape_line, escape_path, finding_line, plural
from validator._errors import SourceError
from validator._findings import REFERENCE_LOADS, strict_only_failure
from validator._rules import Severity
from validator.cli._common import EXIT_ERROR
from validator.cli.options import add_remote_options, network_of
from validator.cli.report import add_policy_options, add_profile_option
from validator.config.policy import PolicyError
from validator.config.resolve import passed_over_note, resolve_policy
from validator.pipeline.judge import judge
from validator.pipeline.plan import Planned, header_result, index_result, plan_target, results_of
from validator.pipeline.verdicts import take_verdicts
from validator.report.group import group_per_tensor
from validator.report.results import exit_status
from validator.sources.targets import LocalFile, Stdin, Target, resolve

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator

    from validator._findings import Report
    from validator.config.policy import Policy
    from validator.io.index import IndexReport
    from validator.report.results import FileResult

__all__ = ["register", "run_inspect"]

_HEADERS = ["name", "dtype", "shape", "begin", "end", "bytes"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "inspect",
        help="print a file's tensor table and metadata",
        description=(
            "Validate one file, index, folder or remote source; print its tensor table (name, dtype, shape, "
            "offsets), metadata and findings."
        ),
        epilog=(
            "Exit codes: 0 valid (after the policy, as for check: --fail-on sets which findings count), "
            "1 invalid, 2 usage or I/O error."
        ),
    )
    p.add_argument(
        "path",
        metavar="PATH",
        help="a safetensors file, an index, a folder, an http(s):// or hf:// source, or - for standard input",
    )
    add_profile_option(p)
    p.add_argument("--format", choices=["text", "json"], default="text", help="output format (default text)")
    p.add_argument(
        "--fail-on",
        choices=["error", "warning", "never"],
        default="error",
        help="which findings make the exit code 1, after the policy (default error)",
    )
    add_policy_options(p)
    add_remote_options(p)
    p.set_defaults(run=run_inspect)


def _err(message: str) -> None:
    _err_line(f"stcheck: {message}")


def _err_line(line: str) -> None:
    print(escape_line(line), file=sys.stderr)


def _table(rows: list[list[str]], headers: list[str], numeric: frozenset[int] = frozenset()) -> None:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    for row in [headers, ["-" * w for w in widths], *rows]:
        cells = [
            c.rjust(w) if i in numeric and row is not headers else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(cells).rstrip())


def _shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _sizes(report: Report) -> str:
    """``123 bytes, header 80 bytes``, or ``123 bytes; no header could be read``."""
    size = plural(report.file_size, "byte")
    if report.header_size is None:
        return f"{size}; no header could be read"
    return f"{size}, header {plural(report.header_size, 'byte')}"


def _policy(args: argparse.Namespace) -> tuple[Policy | None, list[str]]:
    """The policy in force, found as check finds it (validator.config.resolve)."""

    def passed_over(candidate: str) -> None:
        _err_line(f"stcheck inspect: {passed_over_note(candidate)}")

    return resolve_policy(
        [args.path],
        policy=args.policy,
        no_config=args.no_config,
        select=args.select,
        ignore=args.ignore,
        on_passed_over=passed_over,
    )


def _verdict(results: list[FileResult], policy: Policy | None, loads: str = "") -> str:
    """``valid``, or ``invalid: N errors``, after the policy, which it names."""
    errors = sum(1 for r in results for i in r.active if i.severity is Severity.ERROR)
    line = "valid" if all(r.valid for r in results) else f"invalid: {plural(errors, 'error')}{loads}"
    return line if policy is None else escape_line(f"{line} (policy: {policy.source})")


def run_inspect(args: argparse.Namespace) -> int:
    path = args.path
    errors: list[str] = []
    try:
        policy, policies = _policy(args)
    except PolicyError as exc:
        _err(str(exc))
        return EXIT_ERROR
    # The one grammar (validator.sources): a lone file or standard input gets
    # the tensor table; anything that names several files, the report.
    targets = list(resolve([path], errors, empty_is_error=False))
    lone = len(targets) == 1 and isinstance(targets[0], LocalFile | Stdin) and not os.path.isdir(path)
    if not lone:
        return _inspect_many(args, targets, errors, policy, policies)
    try:
        planned = plan_target(targets[0], "header", args.profile, policy, network_of(args))
    except SourceError as exc:
        _err(str(exc))
        return EXIT_ERROR
    if not planned.reports:  # standard input that a loader would unpickle: judged as a folder's file
        return _inspect_many(args, [], errors, policy, policies, [planned])
    report = planned.reports[0]
    path = report.path or path
    result = header_result(report, args.profile, policy)
    judge([result], policy)
    code = exit_status([result], [], args.fail_on)
    if args.format == "json":
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return code
    print(f"{escape_path(path)}: {_sizes(report)}")
    tensors = report.tensors or {}
    if report.tensors is not None:
        rows = [
            [escape_path(name), t.dtype, _shape(t.shape), str(t.begin), str(t.end), str(t.nbytes)]
            for name, t in sorted(tensors.items(), key=lambda kv: kv[1].data_offsets)
        ]
        _table(rows, _HEADERS, frozenset({3, 4, 5}))
        print(f"{plural(len(rows), 'tensor')}, {plural(sum(t.nbytes for t in tensors.values()), 'data byte')}")
    if report.metadata:
        print("metadata:")
        for key, value in report.metadata.items():
            text = value if len(value) <= 200 else value[:200] + f"... ({len(value)} chars)"
            print(escape_line(f"  {key}: {text}"))
    for item in result.active:
        print(finding_line(path, item.finding))
    loads = f" ({REFERENCE_LOADS})" if strict_only_failure(report.reference_valid, report.errors) else ""
    print(_verdict([result], policy, loads))
    return code


def _inspect_many(  # noqa: PLR0917 - one private call site
    args: argparse.Namespace,
    targets: list[Target],
    errors: list[str],
    policy: Policy | None,
    policies: list[str],
    planned: list[Planned] | None = None,
) -> int:
    """A checkpoint, folder or remote source: every file in it."""
    path = args.path
    planned = planned or []
    try:
        planned += [plan_target(target, "header", args.profile, policy, network_of(args)) for target in targets]
    except SourceError as exc:
        errors.append(str(exc))
    judged = any(p.links or p.via or any(o.findings for o in p.others) for p in planned)
    if not errors and not any(p.reports or p.checkpoints for p in planned) and not judged:
        errors.append(f"{path}: not a regular file (a directory with no *.safetensors file or index)")
    for message in errors:
        _err(message)
    if errors:
        return EXIT_ERROR
    results = [
        r
        for p in planned
        for r in take_verdicts(results_of(p, args.profile, policy, tensors=True, inspect=True), p.verdicts, p.via)
    ]
    judge(results, policy)
    if args.format == "json":
        from validator.report.formats import write  # noqa: PLC0415 - only for this output

        write("json", sys.stdout, results, [], 0.0, profile=args.profile, policies=policies, command="inspect")
    else:
        _inspect_text(planned, args.profile)
        print(_verdict(results, policy))
    return exit_status(results, [], args.fail_on)


def _other_lines(planned: list[Planned]) -> Iterator[str]:
    """The finding lines of a folder's links and other files, escaped."""
    for p in planned:
        for link, finding in [*p.links, *p.via.items()]:
            yield finding_line(link, finding)
    for p in planned:
        for other in p.others:
            for finding in other.findings:
                yield finding_line(other.path, finding)


def _inspect_checkpoint(index: IndexReport, profile: str) -> None:
    from validator.io.checkpoint import summarize  # noqa: PLC0415 - the index modules load only for checkpoints
    from validator.report.formats import checkpoint_line  # noqa: PLC0415 - as above

    print(checkpoint_line(index_result(index, profile)))
    s = summarize(index.weight_map or {}, index.shards)
    rows = []
    for name, shard in sorted((index.weight_map or {}).items()):
        report = index.shards.get(shard)
        info = None if report is None or report.tensors is None else report.tensors.get(name)
        if info is None:
            rows.append([escape_path(name), "?", "?", escape_path(shard), "-"])
            continue
        rows.append([escape_path(name), info.dtype, _shape(info.shape), escape_path(shard), f"{info.nbytes:,}"])
    _table(rows, ["name", "dtype", "shape", "shard", "bytes"])
    print(f"shards ({s.shards}):")
    for shard, report in sorted(index.shards.items()):
        count = 0 if report.tensors is None else len(report.tensors)
        verdict = "valid" if report.valid else "invalid"
        print(f"  {escape_path(shard)}: {report.file_size:,} bytes, {plural(count, 'tensor')}, {verdict}")
    print("dtypes:")
    for dtype, (n, params) in sorted(s.dtypes.items()):
        print(f"  {dtype}: {plural(n, 'tensor')}, {params:,} parameters")
    print(
        f"{plural(s.tensors, 'tensor')}, {s.parameters:,} parameters, {s.data_bytes:,} data bytes "
        f"in {plural(s.shards, 'shard')} ({s.file_bytes:,} bytes)"
    )
    for finding in group_per_tensor(index.findings):
        print(finding_line(index.path, finding))
    base = {r.path: posixpath.basename(r.path or "") for r in index.shards.values()}
    for report in index.shards.values():
        for finding in group_per_tensor(report.findings):
            print(finding_line(base.get(report.path, report.path or ""), finding))


def _inspect_text(planned: list[Planned], profile: str) -> None:
    in_checkpoint: set[str | None] = set()
    for index in (index for p in planned for index in p.checkpoints):
        _inspect_checkpoint(index, profile)
        in_checkpoint.update(r.path for r in index.shards.values())
    for report in (report for p in planned for report in p.reports):
        if report.path in in_checkpoint:
            continue
        count = len(report.tensors or {})
        print(f"{escape_path(report.path or '')}: {_sizes(report)}, {plural(count, 'tensor')}")
        for finding in group_per_tensor(report.findings):
            print(finding_line(report.path or "", finding))
    _inspect_others(planned)


def _inspect_others(planned: list[Planned]) -> None:
    from validator.sources.kinds import count_kinds, kinds_line  # noqa: PLC0415 - only for folders

    others = [o for p in planned for o in p.others]
    for other in others:
        print(f"{escape_path(other.path)}: {other.size:,} bytes, {other.kind}")
    for line in _other_lines(planned):
        print(line)
    line = kinds_line(count_kinds(o.kind for o in others))
    if line:
        print(line)
