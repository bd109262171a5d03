# Strategy: the command line.  The first argument names the subcommand, and
# only that subcommand's module is imported (so `stcheck check` imports
# neither the scanner, the fuzzer, the conformance harness, numpy nor
# multiprocessing); `--help`, `--version` or an unknown name import them all
# to list them.  What only an error needs (difflib's guess at a misspelt
# option, the install hint of a missing extra) is imported on that error.
# Every subcommand module provides `register(subparsers)`, which sets
# `run(args) -> int` as the parser default.
#
# A subcommand whose optional extra is missing is still listed; choosing it
# prints one line naming the package and the extra, and exits 2.  Any other
# ImportError is a bug in stcheck and is not hidden.
#
# Exit codes (validator.cli._common): 0 every file valid, 1 some file
# invalid, 2 usage or I/O error.
from __future__ import annotations

import argparse
import importlib
import sys
from typing import TYPE_CHECKING, Final

from validator._version import __version__
from validator.cli._common import EXIT_ERROR, EXIT_INVALID, EXIT_OK

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType

__all__ = ["EXIT_ERROR", "EXIT_INVALID", "EXIT_OK", "build_parser", "main"]

# subcommand -> (module providing register(), the extra that installs what it needs)
_COMMANDS: Final = {
    "check": ("validator.cli.check", None),
    "inspect": ("validator.cli.inspect", None),
    "rules": ("validator.cli.check", None),
    "fuzz": ("validator.cli.fuzz", "fuzz"),
    "scan": ("validator.cli.scan", "scan"),
    "conformance": ("validator.cli.conformance", None),
    "download": ("validator.cli.download", "remote"),
}


class _MissingExtraError(Exception):
    """A subcommand's module needs a third-party package that is not installed."""

    def __init__(self, command: str, package: str, extra: str | None) -> None:
        from validator.config.install import install_hint  # noqa: PLC0415 - only when an extra is missing

        how = install_hint(extra) if extra else f"pip install {package}"
        super().__init__(f"`stcheck {command}` needs the package {package!r}, which is not installed: {how}")


def _load(command: str) -> ModuleType:
    module_name, extra = _COMMANDS[command]
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if not missing or missing.partition(".")[0] == "validator":
            raise  # stcheck itself is broken: show it
        raise _MissingExtraError(command, missing.partition(".")[0], extra) from exc


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser: with only ``command``'s module registered, or every subcommand."""
    parser = argparse.ArgumentParser(
        prog="stcheck",
        description="Validate, inspect, scan, fuzz and conformance-test safetensors files.",
        epilog="Exit codes: 0 all files valid, 1 a file is invalid, 2 usage or I/O error.",
    )
    parser.add_argument("--version", action="version", version=f"stcheck {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    registered: set[str] = set()
    for name in _COMMANDS if command is None else (command,):
        module_name = _COMMANDS[name][0]
        if module_name in registered:
            continue
        registered.add(module_name)
        try:
            module = _load(name)
        except _MissingExtraError as exc:
            if command is not None:
                raise
            sub.add_parser(name, help=f"unavailable: {exc}")  # listed; choosing it goes through _load again
            continue
        module.register(sub)
    return parser


def _subparser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser | None:
    for action in parser._actions:  # noqa: SLF001 - argparse keeps its subparsers only here
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:  # noqa: SLF001 - as above
            found: argparse.ArgumentParser = action.choices[command]
            return found
    return None


def _did_you_mean(parser: argparse.ArgumentParser, extra: Sequence[str]) -> str:
    """`` (did you mean --format?)`` for the first unknown option that looks like a known one."""
    known = [
        o
        for action in parser._actions  # noqa: SLF001 - the parser's own options
        if action.help is not argparse.SUPPRESS
        for o in action.option_strings
        if o.startswith("--")
    ]
    import difflib  # noqa: PLC0415 - only for a usage error

    for word in extra:
        if word.startswith("--"):
            close = difflib.get_close_matches(word.partition("=")[0], known, n=1, cutoff=0.7)
            if close:
                return f" (did you mean {close[0]}?)"
    return ""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    for stream in (sys.stdout, sys.stderr):
        # A tensor name or a path the terminal's encoding cannot show is
        # written escaped, never raised as UnicodeEncodeError.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    arguments = sys.argv[1:] if argv is None else list(argv)
    # Only the top-level parser's own options (-h, --version) can come before
    # the subcommand's name, and they list everything anyway.
    command = arguments[0] if arguments and arguments[0] in _COMMANDS else None
    try:
        parser = build_parser(command)
    except _MissingExtraError as exc:
        print(f"stcheck: {exc}", file=sys.stderr)  # noqa: T201 - the CLI talks to its terminal
        return EXIT_ERROR
    try:
        args, extra = parser.parse_known_args(arguments)
        if extra:  # the subcommand's usage, not the top-level one, and a guess for a misspelt option
            own = _subparser(parser, getattr(args, "command", None)) or parser
            own.error(f"unrecognized arguments: {' '.join(extra)}{_did_you_mean(own, extra)}")
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code) if isinstance(exc.code, int) else EXIT_ERROR
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        print("stcheck: interrupted", file=sys.stderr)  # noqa: T201 - the CLI talks to its terminal
        return 130
    except BrokenPipeError:
        return EXIT_OK
