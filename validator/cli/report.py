# Strategy: what makes `stcheck check` and `stcheck scan` one family.  Both
# register their report, policy and rule-selection options here, resolve
# the one policy in force here (--policy FILE, else the user's pyproject
# [tool.stcheck] from the working directory up, never one inside what is
# checked; --no-config skips it; --select/--ignore on top), write their
# reports through the same writers (validator.report.formats: one writer per
# format) and compute their exit code here.  Nothing in this module loads
# the scan engine, multiprocessing or numpy: `stcheck check FILE` stays
# light (tests/test_layering.py).
#
# --select and --ignore take rule codes, slugs or code prefixes (ST6, ST40)
# and mean what a policy's `ignore = true` means: the findings stay in the
# machine formats, marked suppressed with the reason, and do not count.  A
# rule for which safetensors 0.8.0 rejects the file cannot be ignored: an
# --ignore that names one is refused, and --select leaves those rules on.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH123
from __future__ import annotations

import contextlib
import sys
from dataclasses import replace
from typing import IO, TYPE_CHECKING, Final

from validator._display import escape_line
from validator._rules import Profile
from validator.cli._common import EXIT_ERROR
from validator.config.resolve import FLAG_NAMES, passed_over_note
from validator.config.resolve import resolve_policy as resolve
from validator.config.settings import environment
from validator.report.format_common import Context
from validator.report.formats import OUTPUTS
from validator.report.results import exit_status

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from validator.config.policy import (
        Policy,
    )
    from validator.report.results import FileResult

_VERB: Final = {"scan": "scanned", "check": "checked"}
PROFILE_HELP: Final = (
    "strict (default): the spec and every disputed construct; reference: exactly what safetensors 0.8.0 accepts"
)


def add_profile_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", choices=[p.value for p in Profile], default="strict", help=PROFILE_HELP)


def add_policy_options(parser: argparse.ArgumentParser) -> None:
    """--policy, --no-config, --select, --ignore."""
    group = parser.add_argument_group("policy and rule selection (the same for check and scan)")
    group.add_argument(
        "--policy",
        metavar="FILE.toml",
        help="policy file (default: [tool.stcheck] of the nearest pyproject.toml from the working directory up, "
        "never one inside a checked path)",
    )
    group.add_argument("--no-config", action="store_true", help="read no pyproject.toml: no policy unless --policy")
    group.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="RULES",
        help="report only these rules: codes, slugs or code prefixes, comma-separated (ST6,header-unaligned); "
        "rules for which safetensors 0.8.0 rejects a file always apply (default: every rule)",
    )
    group.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="RULES",
        help="suppress these rules, as a policy's ignore does (kept, marked suppressed, in JSON and SARIF); "
        "a rule for which safetensors 0.8.0 rejects a file cannot be ignored (default: none)",
    )


def add_output_options(parser: argparse.ArgumentParser, *, sha256: bool = False) -> None:
    """--format, -o, --sarif, --junit, --fail-on, -q, --color, --no-warnings, --statistics.

    ``sha256``: offer the formats that list each file's sha256 too (scan
    only: check, reading headers only, never computes it)."""
    group = parser.add_argument_group("output (the same for check and scan)")
    formats = [name for name, output in OUTPUTS.items() if sha256 or not output.sha256]
    helps = "".join(f"; {name}: {OUTPUTS[name].help}" for name in formats if OUTPUTS[name].help)
    group.add_argument("--format", choices=formats, default="text", help="report format (default text)" + helps)
    group.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE (default: standard output)")
    group.add_argument("--sarif", metavar="FILE", help="also write a SARIF 2.1.0 report to FILE (default: none)")
    group.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report to FILE (default: none)")
    group.add_argument(
        "--fail-on",
        choices=["error", "warning", "never"],
        default="error",
        help="which findings make the exit code 1 (default error)",
    )
    group.add_argument(
        "-q",
        "--quiet",
        action="count",
        default=0,
        help="text: print the finding lines only, so nothing on success; twice: print nothing "
        "(errors still go to stderr; the exit code says it all) (default: off)",
    )
    group.add_argument(
        "--color",
        choices=["auto", "always", "never"],
        default="auto",
        help="colour the text report: auto, on a terminal unless NO_COLOR is set (FORCE_COLOR forces it) "
        "(default auto)",
    )
    group.add_argument("--no-warnings", action="store_true", help="leave warnings out of the text report")
    group.add_argument("--statistics", action="store_true", help="text: add the finding counts per rule")


def resolve_policy(args: argparse.Namespace, checked: Sequence[str], command: str) -> tuple[Policy | None, list[str]]:
    """The policy in force for ``args`` (validator.config.resolve), naming on
    stderr each pyproject.toml passed over because it lies inside a checked path."""

    def passed_over(candidate: str) -> None:
        if not args.quiet:
            sys.stderr.write(escape_line(f"stcheck {command}: {passed_over_note(candidate, _VERB[command])}") + "\n")

    return resolve(
        checked,
        policy=args.policy,
        no_config=args.no_config,
        select=args.select,
        ignore=args.ignore,
        on_passed_over=passed_over,
        spelling=FLAG_NAMES,
    )


# -- output -------------------------------------------------------------------------


def use_color(mode: str, stream: IO[str]) -> bool:
    """--color: always, never, or auto (a terminal; NO_COLOR turns it off, FORCE_COLOR on)."""
    if mode in {"always", "never"}:
        return mode == "always"
    env = environment()
    if env.no_color:
        return False
    if env.force_color:
        return True
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and not env.dumb_terminal


def write_reports(
    args: argparse.Namespace,
    results: Sequence[FileResult],
    errors: Sequence[str],
    seconds: float,
    *,
    command: str,
    policies: Sequence[str],
    sources: Sequence[str] = (),
) -> str | None:
    """The report in --format on stdout (or -o FILE), and the --sarif and
    --junit copies; a one-line reason when one cannot be written.
    ``sources``, the arguments as given, group the results into a BOM's models."""
    base = Context(
        command=command,
        profile=args.profile,
        policies=tuple(policies),
        errors=tuple(errors),
        seconds=seconds,
        sources=tuple(sources),
    )
    try:
        with contextlib.ExitStack() as stack:
            out: IO[str] = (
                stack.enter_context(open(args.output, "w", encoding="utf-8", errors="backslashreplace"))
                if args.output
                else sys.stdout
            )
            text = replace(
                base,
                warnings=not args.no_warnings,
                quiet=args.quiet,
                color=use_color(args.color, out),
                statistics=args.statistics,
            )
            OUTPUTS[args.format].writer(out, results, text)
        for fmt, target in (("sarif", args.sarif), ("junit", args.junit)):
            if target:
                with open(target, "w", encoding="utf-8", errors="backslashreplace") as fh:
                    OUTPUTS[fmt].writer(fh, results, base)
    except BrokenPipeError:
        raise  # stdout closed early (| head): not an error (validator.cli.main)
    except OSError as exc:
        where = exc.filename if isinstance(exc.filename, str) else "the report"
        return f"cannot write {where}: {exc.strerror or exc}"
    return None


def exit_code(results: Sequence[FileResult], errors: Sequence[str], fail_on: str) -> int:
    """0 clean, 1 failing findings (after the policy and --fail-on), 2 unreadable input."""
    return exit_status(results, errors, fail_on)


def fail(command: str, message: str) -> int:
    """One escaped line on stderr; the exit code of a usage or I/O error."""
    sys.stderr.write(escape_line(f"stcheck {command}: {message}") + "\n")
    return EXIT_ERROR


__all__ = [
    "PROFILE_HELP",
    "add_output_options",
    "add_policy_options",
    "add_profile_option",
    "exit_code",
    "fail",
    "resolve_policy",
    "use_color",
    "write_reports",
]
