# Strategy: `stcheck check` and `stcheck rules`: the validator's own commands.
# `check` is `scan` without the data: it reads each file's prefix and header
# only, in this process, and shares everything else with scan through
# validator.cli.report: the same formats and writers (text, JSON, SARIF,
# JUnit, and the --sarif/--junit copies), the same policy (--policy, the
# user's pyproject [tool.stcheck], --no-config, --select, --ignore), the
# same summary line and the same exit codes.  Nothing here imports numpy,
# multiprocessing or the scan engine.  Every path and line is written
# through validator._display, so a hostile file name can neither crash the
# writer nor forge a line.  A run that checked nothing (an empty directory,
# a mistyped path) is an error, never "0 files checked: valid".
from __future__ import annotations

# ruff: noqa: T201 - a command's job is to print
import json
import sys
import time
from typing import TYPE_CHECKING

from validator._display import escape_line
from validator._rules import RULES
from validator.cli._common import EXIT_OK
from validator.cli.options import add_remote_options, network_of
from validator.cli.report import (
    add_output_options,
    add_policy_options,
    add_profile_option,
    exit_code,
    fail,
    resolve_policy,
    write_reports,
)
from validator.config.policy import PolicyError
from validator.pipeline.plan import check_all
from validator.report.format_common import spec_base, spec_link
from validator.sources.schemes import STDIN

if TYPE_CHECKING:
    import argparse

__all__ = ["register", "run_check", "run_rules"]


_EXITS = (
    "Exit codes: 0 no finding at error severity (after the policy; --fail-on sets which findings count), "
    "1 at least one, 2 usage or I/O error (also: nothing found to check)."
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "check",
        help="validate files from their headers (directories: every file below is judged)",
        description=(
            "Validate safetensors files: the length prefix, the header JSON, every tensor entry and the layout "
            "of the data region; tensor data is never read (`stcheck scan` reads it).  Prints one line per finding "
            "(PATH:OFFSET: CODE slug message) and a summary line.  The same formats, policy and exit codes as "
            "`stcheck scan`.  PATH - reads standard input."
        ),
        epilog=_EXITS,
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="files, indexes, directories (every file below is judged; links are followed), http(s):// or hf:// "
        "sources, or - for standard input",
    )
    add_profile_option(p)
    add_output_options(p)
    add_policy_options(p)
    add_remote_options(p)
    p.set_defaults(run=run_check)

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


def run_check(args: argparse.Namespace) -> int:
    if args.paths.count(STDIN) > 1:
        return fail("check", "- (standard input) can be given once")
    try:
        policy, policies = resolve_policy(args, args.paths, "check")
    except PolicyError as exc:
        return fail("check", str(exc))
    started = time.perf_counter()
    errors: list[str] = []
    # The one grammar (validator.sources): files, indexes, directories, remote sources and stdin.
    results = check_all(args.paths, args.profile, policy, errors, network_of(args))
    problem = write_reports(args, results, errors, time.perf_counter() - started, command="check", policies=policies)
    for message in errors:
        sys.stderr.write(escape_line(f"stcheck: {message}") + "\n")
    if problem is not None:
        return fail("check", problem)
    return exit_code(results, errors, args.fail_on)


def run_rules(args: argparse.Namespace) -> int:
    if args.rule is not None:
        from validator.cli.explain import explain  # noqa: PLC0415 - only when one rule is asked for

        return explain(args.rule, args.format)  # validator._rules' one lookup and one guess
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
                "spec": spec_link(r.anchor),
            }
            for r in RULES
        ]
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    rows = [
        (
            r.code,
            r.slug,
            r.severity.value,
            "both" if len(r.profiles) == 2 else "strict",
            r.reference_error or "-",
            r.title,
        )
        for r in RULES
    ]
    header = ("code", "slug", "severity", "profiles", "safetensors 0.8.0", "title")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(5)]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row[:5], widths, strict=True)) + "  " + row[5])
    print(
        "\nExplain one rule, with a bad example, what stcheck says on it and the fix: stcheck rules CODE (or SLUG)."
        "\nThe full text of each rule is the section of the same name in SPEC.md, in stcheck's source tree"
        + (f" ({base})" if (base := spec_base()) else "; set STCHECK_SPEC_URL to where it is hosted to get links")
        + "."
    )
    return EXIT_OK
