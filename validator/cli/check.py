# Strategy: `stcheck check`, `stcheck inspect` and `stcheck rules`: the
# validator's own commands.  Output goes to stdout, one-line errors about
# unreadable paths go to stderr, and nothing here imports numpy.
from __future__ import annotations

# ruff: noqa: T201 - a command's job is to print
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from validator import __version__
from validator._errors import SourceError
from validator._rules import RULES, Profile
from validator._validate import validate
from validator.cli._common import EXIT_ERROR, EXIT_INVALID, EXIT_OK
from validator.cli.targets import (
    add_remote_options,
    check_target,
    checkpoint_heading,
    checkpoint_json,
    expand_targets,
    inspect_target,
)

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator

    from validator._findings import Report
    from validator.io.index import IndexReport

SUFFIX = ".safetensors"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("check", help="validate files (directories are searched for *.safetensors)")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--profile", choices=[p.value for p in Profile], default="strict")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("--no-warnings", action="store_true", help="do not print warnings")
    add_remote_options(p)  # remote/checkpoint hook (validator.cli.targets)
    p.set_defaults(run=run_check)

    p = sub.add_parser("inspect", help="print a file's tensor table and metadata")
    p.add_argument("path", metavar="FILE")
    p.add_argument("--profile", choices=[p.value for p in Profile], default="strict")
    p.add_argument("--format", choices=["text", "json"], default="text")
    add_remote_options(p)  # remote/checkpoint hook (validator.cli.targets)
    p.set_defaults(run=run_inspect)

    p = sub.add_parser("rules", help="list the rule catalogue")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(run=run_rules)


def iter_files(paths: list[str], errors: list[str]) -> Iterator[str]:
    """Expand directories to the *.safetensors files below them, sorted."""
    for path in paths:
        if Path(path).is_dir():
            found: list[str] = []
            for root, dirs, files in os.walk(path, onerror=lambda e: errors.append(f"{e.filename}: {e.strerror}")):
                dirs.sort()
                found.extend(str(Path(root) / f) for f in files if f.endswith(SUFFIX))
            yield from sorted(found)
        elif Path(path).exists():
            yield path
        else:
            errors.append(f"{path}: no such file or directory")


def run_check(args: argparse.Namespace) -> int:
    errors: list[str] = []
    reports: list[Report] = []
    checkpoints: list[IndexReport] = []
    text = args.format == "text"
    # Hook (validator.cli.targets): files, indexes, directories and remote sources.
    for target in expand_targets(args.paths, errors):
        try:
            checked = check_target(target, args.profile, args)
        except SourceError as exc:
            errors.append(str(exc))
            continue
        checkpoints.extend(checked.checkpoints)
        if text:
            for index in checked.checkpoints:
                print(checkpoint_heading(index))
                for finding in index.findings:
                    if not (args.no_warnings and finding.severity.value == "warning"):
                        sys.stdout.write(finding.format(index.path) + "\n")
        for report in checked.reports:
            path = report.path or target.path
            reports.append(report)
            if text:
                for finding in report.findings:
                    if args.no_warnings and finding.severity.value == "warning":
                        continue
                    sys.stdout.write(finding.format(path) + "\n")
    for message in errors:
        print(f"stcheck: {message}", file=sys.stderr)
    invalid = sum(not r.valid for r in reports)
    bad_checkpoints = sum(not c.valid for c in checkpoints)
    n_err = sum(len(r.errors) for r in reports) + sum(len(c.errors) for c in checkpoints)
    n_warn = sum(len(r.warnings) for r in reports) + sum(len(c.warnings) for c in checkpoints)
    n_sup = sum(r.suppressed for r in reports)
    if text:
        print(
            f"{len(reports)} file{'s' if len(reports) != 1 else ''} checked ({args.profile}): "
            f"{len(reports) - invalid} valid, {invalid} invalid; {n_err} errors, {n_warn} warnings"
            + (f"; {n_sup} more findings not listed (1000 per rule kept)" if n_sup else "")
            + (f"; {len(errors)} unreadable" if errors else "")
            + (f"; {len(checkpoints)} checkpoints, {bad_checkpoints} invalid" if checkpoints else "")
        )
    else:
        doc = {
            "tool": "stcheck",
            "version": __version__,
            "profile": args.profile,
            "files": [r.to_json() for r in reports],
            **({"checkpoints": [checkpoint_json(c) for c in checkpoints]} if checkpoints else {}),
            "summary": {
                "files": len(reports),
                "valid": len(reports) - invalid,
                "invalid": invalid,
                "errors": n_err,
                "warnings": n_warn,
                "suppressed": n_sup,
                "unreadable": errors,
            },
        }
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    if errors:
        return EXIT_ERROR
    return EXIT_INVALID if invalid or bad_checkpoints else EXIT_OK


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


def run_inspect(args: argparse.Namespace) -> int:
    handled = inspect_target(args)  # hook (validator.cli.targets): checkpoints, directories, remote sources
    if handled is not None:
        return handled
    try:
        report = validate(args.path, profile=args.profile)
    except SourceError as exc:
        print(f"stcheck: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.format == "json":
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK if report.valid else EXIT_INVALID
    print(f"{args.path}: {report.file_size} bytes, header {report.header_size} bytes")
    tensors = report.tensors or {}
    rows = [
        [name, t.dtype, "[" + ", ".join(map(str, t.shape)) + "]", str(t.begin), str(t.end), str(t.nbytes)]
        for name, t in sorted(tensors.items(), key=lambda kv: kv[1].data_offsets)
    ]
    print(_fmt_table(rows, ["name", "dtype", "shape", "begin", "end", "bytes"]))
    print(f"{len(rows)} tensors, {sum(t.nbytes for t in tensors.values())} data bytes")
    if report.metadata:
        print("metadata:")
        for key, value in report.metadata.items():
            shown = value if len(value) <= 200 else value[:200] + f"... ({len(value)} chars)"
            print(f"  {key}: {shown}")
    for finding in report.findings:
        print(finding.format(args.path))
    print("valid" if report.valid else f"invalid: {len(report.errors)} errors")
    return EXIT_OK if report.valid else EXIT_INVALID


def run_rules(args: argparse.Namespace) -> int:
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
    return EXIT_OK
