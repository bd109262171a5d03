# Strategy: what makes `stcheck check` and `stcheck scan` one family.  Both
# register their report, policy and rule-selection options here, resolve
# the one policy in force here (--policy FILE, else the user's pyproject
# [tool.stcheck] from the working directory up, never one inside what is
# checked; --no-config skips it; --select/--ignore on top), write their
# reports through the same writers (validator.scan.formats: one writer per
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
import difflib
import os
import sys
from dataclasses import replace
from typing import IO, TYPE_CHECKING, Any, Final

from validator._display import escape_line
from validator._rules import BY_CODE, BY_SLUG, RULES, Profile, Rule, Severity
from validator.cli._common import EXIT_ERROR, EXIT_INVALID, EXIT_OK
from validator.scan.format_common import Context
from validator.scan.formats import FORMATS, WRITERS
from validator.scan.policy import Policy, PolicyError, RuleSetting, discover_policy, load_policy, rejected_by_reference

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from validator.scan.results import FileResult

REMOTE_PREFIXES: Final = ("http://", "https://", "hf://")
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


def add_output_options(parser: argparse.ArgumentParser, *, bom: bool = False) -> None:
    """--format, -o, --sarif, --junit, --fail-on, -q, --color, --no-warnings, --statistics.

    ``bom``: offer --format cyclonedx (scan only: a BOM lists each file's
    sha256, which check, reading headers only, never computes)."""
    group = parser.add_argument_group("output (the same for check and scan)")
    formats = [f for f in FORMATS if bom or f != "cyclonedx"]
    group.add_argument(
        "--format",
        choices=formats,
        default="text",
        help="report format (default text)" + ("; cyclonedx: a CycloneDX 1.6 ML-BOM (the sbom extra)" if bom else ""),
    )
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


# -- rule selection ----------------------------------------------------------------


def _matching(token: str, option: str) -> list[Rule]:
    """The rules a --select/--ignore token names: a code, a slug, a code prefix, or ALL."""
    key = token.strip()
    if key.upper() == "ALL":
        return list(RULES)
    rule = BY_SLUG.get(key) or BY_CODE.get(key.upper())
    if rule is not None:
        return [rule]
    if key[:2].upper() == "ST" and key[2:].isdigit() and len(key) < 5:
        found = [r for r in RULES if r.code.startswith(key.upper())]
        if found:
            return found
    names = [r.slug for r in RULES] + [r.code for r in RULES]
    close = difflib.get_close_matches(key, names, n=1)
    hint = f"; did you mean {close[0]}?" if close else "; `stcheck rules` lists them"
    msg = f"{option} {token}: no rule has this code, slug or code prefix{hint}"
    raise PolicyError(msg)


def _tokens(values: Sequence[str]) -> list[str]:
    return [t.strip() for value in values for t in value.split(",") if t.strip()]


def selection(select: Sequence[str], ignore: Sequence[str]) -> tuple[dict[str, RuleSetting], list[str]]:
    """The rule settings of --select and --ignore, and their names for the report.

    Raises PolicyError for an unknown rule, or an --ignore of a rule for
    which safetensors 0.8.0 rejects the file."""
    settings: dict[str, RuleSetting] = {}
    names = []
    chosen = _tokens(select)
    if chosen:
        names.append("--select " + ",".join(chosen))
        keep = {r.slug for token in chosen for r in _matching(token, "--select")}
        why = f"not in --select {','.join(chosen)}"
        for rule in RULES:
            if rule.slug not in keep and not rejected_by_reference(rule):
                settings[rule.slug] = RuleSetting(why, ignore=True)
    dropped = _tokens(ignore)
    if dropped:
        names.append("--ignore " + ",".join(dropped))
        for token in dropped:
            for rule in _matching(token, "--ignore"):
                if rejected_by_reference(rule):
                    msg = (
                        f"--ignore {token}: safetensors 0.8.0 rejects every file that breaks {rule.code} "
                        f"{rule.slug}; it cannot be ignored"
                    )
                    raise PolicyError(msg)
                settings[rule.slug] = RuleSetting(f"--ignore {token}", ignore=True)
    return settings, names


# -- the policy in force -------------------------------------------------------------


def resolve_policy(args: argparse.Namespace, checked: Sequence[str], command: str) -> tuple[Policy | None, list[str]]:
    """The one policy in force and the names of what it is made of.

    --policy FILE, else the [tool.stcheck] of the nearest pyproject.toml from
    the working directory upward that lies inside no checked path
    (configuration comes from the user, never from what is vetted), else
    none; then --select and --ignore on top.  A candidate passed over is
    named in one line on stderr.  Raises PolicyError."""
    policy: Policy | None = None
    if args.policy:
        policy = load_policy(args.policy)
    elif not args.no_config:
        found = discover_policy([p for p in checked if not p.startswith(REMOTE_PREFIXES) and p != "-"])
        for candidate in found.passed_over:
            if not args.quiet:
                sys.stderr.write(
                    escape_line(
                        f"stcheck {command}: not reading {candidate}: it lies inside a {_VERB[command]} path, and "
                        "configuration comes from the user, never from what is vetted (give it with --policy "
                        "to use it)"
                    )
                    + "\n"
                )
        policy = found.policy
    names = [policy.source] if policy is not None and policy.source else []
    settings, extra = selection(args.select, args.ignore)
    if settings:
        base = policy or Policy()
        source = "; ".join([*names, *extra])
        policy = replace(base, rules={**base.rules, **settings}, source=source)
    return policy, [*names, *extra]


# -- output -------------------------------------------------------------------------


def use_color(mode: str, stream: IO[str]) -> bool:
    """--color: always, never, or auto (a terminal; NO_COLOR turns it off, FORCE_COLOR on)."""
    if mode in {"always", "never"}:
        return mode == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "").strip() not in {"", "0", "false"}:
        return True
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and os.environ.get("TERM") != "dumb"


def write_reports(
    args: argparse.Namespace,
    results: Sequence[FileResult],
    errors: Sequence[str],
    seconds: float,
    *,
    command: str,
    policies: Sequence[str],
    models: Sequence[Any] | None = None,
) -> str | None:
    """The report in --format on stdout (or -o FILE), and the --sarif and
    --junit copies; a one-line reason when one cannot be written.
    ``models`` groups the results for --format cyclonedx."""
    base = Context(
        command=command,
        profile=args.profile,
        policies=tuple(policies),
        errors=tuple(errors),
        seconds=seconds,
        models=models,
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
            WRITERS[args.format](out, results, text)
        for fmt, target in (("sarif", args.sarif), ("junit", args.junit)):
            if target:
                with open(target, "w", encoding="utf-8", errors="backslashreplace") as fh:
                    WRITERS[fmt](fh, results, base)
    except BrokenPipeError:
        raise  # stdout closed early (| head): not an error (validator.cli.main)
    except OSError as exc:
        where = exc.filename if isinstance(exc.filename, str) else "the report"
        return f"cannot write {where}: {exc.strerror or exc}"
    return None


def exit_code(results: Sequence[FileResult], errors: Sequence[str], fail_on: str) -> int:
    """0 clean, 1 failing findings (after the policy and --fail-on), 2 unreadable input."""
    if errors or any(r.error is not None for r in results):
        return EXIT_ERROR
    if fail_on == "never":
        return EXIT_OK
    failing = {Severity.ERROR} if fail_on == "error" else {Severity.ERROR, Severity.WARNING}
    if any(i.severity in failing for r in results for i in r.active):
        return EXIT_INVALID
    return EXIT_OK


def fail(command: str, message: str) -> int:
    """One escaped line on stderr; the exit code of a usage or I/O error."""
    sys.stderr.write(escape_line(f"stcheck {command}: {message}") + "\n")
    return EXIT_ERROR


__all__ = [
    "PROFILE_HELP",
    "REMOTE_PREFIXES",
    "add_output_options",
    "add_policy_options",
    "add_profile_option",
    "exit_code",
    "fail",
    "resolve_policy",
    "selection",
    "use_color",
    "write_reports",
]
