# Strategy: `stcheck check`, `stcheck inspect` and `stcheck rules`: the
# validator's own commands.  Output goes to stdout, one-line errors about
# unreadable paths go to stderr, and nothing here imports numpy.  Every path
# and line is written through validator._display, so a hostile file name
# (a newline, an escape sequence, bytes that are not UTF-8) can neither crash
# the writer nor forge a line.  A run that checked nothing (an empty
# directory, a mistyped path) is an error, never "0 files checked: valid".
from __future__ import annotations

# ruff: noqa: T201 - a command's job is to print
import json
import sys
from typing import TYPE_CHECKING, Any

from validator import __version__
from validator._display import encodable, escape_line, escape_path, finding_line
from validator._errors import SourceError
from validator._findings import REFERENCE_LOADS, strict_only_failure
from validator._group import group_per_tensor
from validator._rules import RULES, Profile, Severity
from validator._validate import validate
from validator.cli._common import EXIT_ERROR, EXIT_INVALID, EXIT_OK
from validator.cli.targets import (
    Checked,
    add_remote_options,
    check_target,
    checkpoint_heading,
    checkpoint_json,
    expand_targets,
    inspect_target,
    other_lines,
    others_json,
)

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from validator._findings import Finding, Report
    from validator.io.index import IndexReport

SUFFIX = ".safetensors"
_PROFILE_HELP = (
    "strict (default): the spec and every disputed construct; reference: exactly what safetensors 0.8.0 accepts"
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "check",
        help="validate files (directories are searched for *.safetensors)",
        description=(
            "Validate safetensors files: the length prefix, the header JSON, every tensor entry and the layout "
            "of the data region.  Prints one line per finding (PATH:OFFSET: CODE slug message) and a summary.  "
            "Tensor data is never read."
        ),
        epilog="Exit codes: 0 every file valid, 1 a file is invalid, 2 usage or I/O error (also: no file found).",
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="files, or directories (every file below is judged; links are followed)",
    )
    p.add_argument("--profile", choices=[p.value for p in Profile], default="strict", help=_PROFILE_HELP)
    p.add_argument("--format", choices=["text", "json"], default="text", help="output format (default text)")
    p.add_argument("--no-warnings", action="store_true", help="do not print warnings")
    add_remote_options(p)  # remote/checkpoint hook (validator.cli.targets)
    p.set_defaults(run=run_check)

    p = sub.add_parser(
        "inspect",
        help="print a file's tensor table and metadata",
        description="Validate one file; print its tensor table (name, dtype, shape, offsets), metadata and findings.",
        epilog="Exit codes: 0 valid, 1 invalid, 2 usage or I/O error.",
    )
    p.add_argument("path", metavar="FILE", help="the safetensors file")
    p.add_argument("--profile", choices=[p.value for p in Profile], default="strict", help=_PROFILE_HELP)
    p.add_argument("--format", choices=["text", "json"], default="text", help="output format (default text)")
    add_remote_options(p)  # remote/checkpoint hook (validator.cli.targets)
    p.set_defaults(run=run_inspect)

    p = sub.add_parser(
        "rules",
        help="list the rule catalogue, or explain one rule",
        description=(
            "Without RULE: list every rule (code, slug, severity, profiles, the safetensors 0.8.0 error class).  "
            "With RULE (a code such as ST401 or a slug such as offsets-not-contiguous): explain it, with a bad "
            "example, what stcheck reports on it, and the fix."
        ),
        epilog="Exit codes: 0 done, 2 unknown rule.",
    )
    p.add_argument("rule", nargs="?", metavar="RULE", help="a rule code (ST401) or slug (offsets-not-contiguous)")
    p.add_argument("--format", choices=["text", "json"], default="text", help="output format (default text)")
    p.set_defaults(run=run_rules)


def _err(message: str) -> None:
    print(escape_line(f"stcheck: {message}"), file=sys.stderr)


def shown_findings(report: Report) -> list[Finding]:
    """A report's findings as the command shows them: per-tensor repeats grouped."""
    return group_per_tensor(report.findings)


def report_json(report: Report) -> dict[str, Any]:
    """One file's entry in the JSON output (paths that are not valid Unicode are escaped)."""
    doc = report.to_json()
    doc["findings"] = [f.to_json() for f in shown_findings(report)]
    if report.path is not None and not encodable(report.path):
        doc["path"] = escape_path(report.path)
    return doc


def _summary_line(
    args: argparse.Namespace,
    reports: Sequence[Report],
    checkpoints: Sequence[IndexReport],
    errors: Sequence[str],
    walked: Checked,
) -> str:
    invalid = sum(not r.valid for r in reports)
    bad_checkpoints = sum(not c.valid for c in checkpoints)
    n_err, n_warn = _counts(reports, checkpoints, walked)
    n_sup = sum(r.suppressed for r in reports) + sum(c.suppressed for c in checkpoints)
    others = _others_line(walked)
    loads = sum(strict_only_failure(r.reference_valid, r.errors) for r in reports)
    return (
        f"{len(reports)} file{'s' if len(reports) != 1 else ''} checked ({args.profile}): "
        f"{len(reports) - invalid} valid, {invalid} invalid"
        + (f" ({loads} of them: {REFERENCE_LOADS})" if loads else "")
        + f"; {n_err} errors, {n_warn} warnings"
        + (f"; {n_sup} more findings not listed (1000 per rule kept)" if n_sup else "")
        + (f"; {len(errors)} unreadable" if errors else "")
        + (f"; {len(checkpoints)} checkpoints, {bad_checkpoints} invalid" if checkpoints else "")
        + (f"; {others}" if others else "")
    )


def _others_line(walked: Checked) -> str:
    if not walked.others:
        return ""
    from validator._walk import count_kinds, kinds_line  # noqa: PLC0415 - only when a folder was walked

    return kinds_line(count_kinds(walked.others))


def _other_counts(walked: Checked) -> dict[str, int]:
    from validator._walk import count_kinds  # noqa: PLC0415 - only when a folder was walked

    return count_kinds(walked.others)


def _walked_findings(walked: Checked) -> list[Finding]:
    return [f for _, f in walked.links] + [f for o in walked.others for f in o.findings]


def _counts(reports: Sequence[Report], checkpoints: Sequence[IndexReport], walked: Checked) -> tuple[int, int]:
    """(errors, warnings) of every file, checkpoint, other file and link."""
    extra = _walked_findings(walked)
    errors = sum(len(r.errors) for r in reports) + sum(len(c.errors) for c in checkpoints)
    warnings = sum(len(r.warnings) for r in reports) + sum(len(c.warnings) for c in checkpoints)
    n_extra_err = sum(f.severity is Severity.ERROR for f in extra)
    return errors + n_extra_err, warnings + len(extra) - n_extra_err


def run_check(args: argparse.Namespace) -> int:  # noqa: C901, PLR0912 - one branch per output mode and exit code
    errors: list[str] = []
    reports: list[Report] = []
    checkpoints: list[IndexReport] = []
    walked = Checked()  # a folder's other files and links (validator._walk)
    text = args.format == "text"
    # Hook (validator.cli.targets): files, indexes, directories and remote sources.
    for target in expand_targets(args.paths, errors):
        try:
            checked = check_target(target, args.profile, args)
        except SourceError as exc:
            errors.append(str(exc))
            continue
        checkpoints.extend(checked.checkpoints)
        walked.others.extend(checked.others)
        walked.links.extend(checked.links)
        if text:
            for line in other_lines(checked, warnings=not args.no_warnings):
                sys.stdout.write(line + "\n")
        if text:
            for index in checked.checkpoints:
                print(checkpoint_heading(index))
                for finding in group_per_tensor(index.findings):
                    if not (args.no_warnings and finding.severity is Severity.WARNING):
                        sys.stdout.write(finding_line(index.path, finding) + "\n")
        for report in checked.reports:
            path = report.path or target.path
            reports.append(report)
            if text:
                for finding in shown_findings(report):
                    if args.no_warnings and finding.severity is Severity.WARNING:
                        continue
                    sys.stdout.write(finding_line(path, finding) + "\n")
                if strict_only_failure(report.reference_valid, report.errors):
                    sys.stdout.write(f"{escape_path(path)}: invalid ({REFERENCE_LOADS})\n")
    for message in errors:
        _err(message)
    invalid = sum(not r.valid for r in reports)
    bad_checkpoints = sum(not c.valid for c in checkpoints)
    bad_walked = any(f.severity is Severity.ERROR for f in _walked_findings(walked))
    if text:
        print(_summary_line(args, reports, checkpoints, errors, walked))
    else:
        n_err, n_warn = _counts(reports, checkpoints, walked)
        doc = {
            "tool": "stcheck",
            "version": __version__,
            "profile": args.profile,
            "files": [report_json(r) for r in reports],
            **({"checkpoints": [checkpoint_json(c) for c in checkpoints]} if checkpoints else {}),
            **others_json(walked.others, walked.links),
            "summary": {
                "files": len(reports),
                "valid": len(reports) - invalid,
                "invalid": invalid,
                "reference_loads": sum(strict_only_failure(r.reference_valid, r.errors) for r in reports),
                "errors": n_err,
                "warnings": n_warn,
                "suppressed": sum(r.suppressed for r in reports) + sum(c.suppressed for c in checkpoints),
                "unreadable": [m if encodable(m) else escape_line(m) for m in errors],
                **({"other_files": _other_counts(walked)} if walked.others else {}),
            },
        }
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    if errors:
        return EXIT_ERROR
    return EXIT_INVALID if invalid or bad_checkpoints or bad_walked else EXIT_OK


def _fmt_table(rows: list[list[str]], headers: list[str]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    numeric = {3, 4, 5}
    lines = []
    for row in [headers, *rows]:
        cells = [
            c.rjust(w) if i in numeric and row is not headers else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def run_inspect(args: argparse.Namespace) -> int:
    handled = inspect_target(args)  # hook (validator.cli.targets): checkpoints, directories, remote sources
    if handled is not None:
        return handled
    try:
        report = validate(args.path, profile=args.profile)
    except SourceError as exc:
        _err(str(exc))
        return EXIT_ERROR
    if args.format == "json":
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK if report.valid else EXIT_INVALID
    shown = escape_path(args.path)
    if report.header_size is None:
        print(f"{shown}: {report.file_size} bytes; no header could be read")
    else:
        print(f"{shown}: {report.file_size} bytes, header {report.header_size} bytes")
    tensors = report.tensors or {}
    if report.tensors is not None:
        rows = [
            [escape_path(name), t.dtype, _shape(t.shape), str(t.begin), str(t.end), str(t.nbytes)]
            for name, t in sorted(tensors.items(), key=lambda kv: kv[1].data_offsets)
        ]
        print(_fmt_table(rows, ["name", "dtype", "shape", "begin", "end", "bytes"]))
        print(f"{len(rows)} tensors, {sum(t.nbytes for t in tensors.values())} data bytes")
    if report.metadata:
        print("metadata:")
        for key, value in report.metadata.items():
            text = value if len(value) <= 200 else value[:200] + f"... ({len(value)} chars)"
            print(escape_line(f"  {key}: {text}"))
    for finding in shown_findings(report):
        print(finding_line(args.path, finding))
    loads = f" ({REFERENCE_LOADS})" if strict_only_failure(report.reference_valid, report.errors) else ""
    print("valid" if report.valid else f"invalid: {len(report.errors)} errors{loads}")
    return EXIT_OK if report.valid else EXIT_INVALID


def run_rules(args: argparse.Namespace) -> int:
    if args.rule is not None:
        from validator.cli.explain import explain  # noqa: PLC0415 - only when one rule is asked for

        return explain(args.rule, args.format)
    if args.format == "json":
        doc = [
            {
                "code": r.code,
                "slug": r.slug,
                "title": r.title,
                "severity": r.severity.value,
                "profiles": sorted(p.value for p in r.profiles),
                "reference_error": r.reference_error,
                "anchor": r.anchor,
            }
            for r in RULES
        ]
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    for r in RULES:
        profiles = "both" if len(r.profiles) == 2 else "strict"
        print(f"{r.code}  {r.slug:26} {r.severity.value:7} {profiles:6} {r.reference_error or '-':29} {r.title}")
    print("\nExplain one rule, with a bad example and the fix: stcheck rules CODE (or SLUG)")
    return EXIT_OK
