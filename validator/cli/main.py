# Strategy: the command line.  Sub-commands are registered in _COMMANDS as
# (name, module) and imported only when chosen, so `stcheck check` starts
# without importing numpy or torch.  Every sub-command module provides
# `register(subparsers)` and `run(args) -> int`.
#
# Exit codes: 0 every file valid, 1 some file invalid, 2 usage or I/O error.
from __future__ import annotations

import argparse
import importlib
import sys
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

EXIT_OK: Final = 0
EXIT_INVALID: Final = 1
EXIT_ERROR: Final = 2

# name -> module providing register() and run()
_COMMANDS: Final = (
    ("check", "validator.cli.check"),
    ("inspect", "validator.cli.check"),
    ("rules", "validator.cli.check"),
    ("fuzz", "validator.cli.fuzz"),
    ("scan", "validator.cli.scan"),
    ("conformance", "validator.cli.conformance"),
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    from validator import __version__  # noqa: PLC0415 - avoids an import cycle with validator/__init__

    parser = argparse.ArgumentParser(
        prog="stcheck",
        description="Validate, inspect, scan, fuzz and conformance-test safetensors files.",
        epilog="Exit codes: 0 all files valid, 1 a file is invalid, 2 usage or I/O error.",
    )
    parser.add_argument("--version", action="version", version=f"stcheck {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    seen: set[str] = set()
    for _name, module_name in _COMMANDS:
        if module_name in seen:
            continue
        seen.add(module_name)
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # an optional command whose extra is missing
            continue
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
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
