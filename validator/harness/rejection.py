# Strategy: the one rule that tells a loader's clean rejection of a file
# from a crash, shared by the conformance harness (`stcheck conformance
# --impl`, validator/conformance/) and by `stcheck fuzz loader-under-test`.
# Pure: it inspects exception objects, or what a loader command left behind
# (its exit status and stderr); it runs nothing.
#
# A function loader rejects a file cleanly only when it raises a type it
# documents for bad input: ValueError and its subclasses (json.JSONDecodeError,
# UnicodeDecodeError), StcheckError, SafetensorError, SafetensorsParsingError,
# or a type named with --reject-exception.  Every other exception is a
# crash: KeyError, IndexError, TypeError, struct.error, OSError from a parser
# that trusted a field, RecursionError, MemoryError and SystemError from one
# that ran away, the ValueError of Python's integer-digit limit, and anything
# that is not an Exception at all (a pyo3 panic).
#
# A command loader (`CMD {path}`) is judged by the same rule, in this order:
#   1. killed by a signal (SIGSEGV, SIGABRT, SIGKILL at the memory cap): crash;
#   2. a sanitizer report on stderr (`==PID==ERROR: AddressSanitizer: ...`,
#      `SUMMARY: ...Sanitizer`, UBSan's `runtime error:`): crash, whatever the
#      exit code (ASan exits 1, UBSan 0);
#   3. exit 0: accepted;
#   4. exit 1 with a Python traceback on stderr, Python's own exit for an
#      uncaught exception: the traceback's exception line decides, by class
#      name, under the function rule above (a crash shows that line,
#      `KeyError: 'F4'`);
#   5. exit REJECT_EXIT (1, or the code chosen with --reject-exit): rejected;
#   6. any other exit (2, 101 from a Rust panic, 134 from abort() under a
#      shell): crash.
# So an uncaught exception never reads as a rejection, and a loader whose
# runtime exits 1 on any uncaught error (Java, Node.js) picks another code
# for its rejections with --reject-exit.
from __future__ import annotations

import builtins
import re
import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from validator._display import escape_line

if TYPE_CHECKING:
    from collections.abc import Collection

__all__ = [
    "DOCUMENTED_REJECTIONS",
    "REJECT_EXIT",
    "ExitVerdict",
    "is_crash",
    "is_rejection",
    "is_rejection_named",
    "judge_exit",
    "sanitizer_report",
    "traceback_exception",
]


# Exception class names that libraries document as "this file is invalid";
# matched by name along the MRO, so that no library has to be imported to
# recognise its error type.
DOCUMENTED_REJECTIONS: Final = frozenset({"StcheckError", "SafetensorError", "SafetensorsParsingError"})

# Standard-library ValueError subclasses that a traceback names with their
# module (builtins print bare and are looked up in `builtins`).
_STDLIB_REJECTIONS: Final = frozenset({"json.decoder.JSONDecodeError", "json.JSONDecodeError", "binascii.Error"})

REJECT_EXIT: Final = 1  # the JSONTestSuite code for "rejected"
_PYTHON_UNCAUGHT_EXIT: Final = 1  # what Python exits with on an uncaught exception
_RUST_PANIC_EXIT: Final = 101
_DETAIL_CHARS: Final = 300


def _crash_type(cls: type[BaseException], text: str) -> bool:
    if not issubclass(cls, Exception):
        return True
    if issubclass(cls, (RecursionError, MemoryError, SystemError)):
        return True
    return issubclass(cls, ValueError) and "digits" in text and "limit" in text


def is_crash(exc: BaseException) -> bool:
    """Whether an exception means the parser broke even if its type looks like a refusal."""
    return _crash_type(type(exc), str(exc))


def is_rejection(exc: BaseException, documented: tuple[type[BaseException], ...] = ()) -> bool:
    """Whether ``exc`` is a clean rejection under the one rule above.

    ``documented`` adds the types a user or an adapter names for its loader.
    """
    if is_crash(exc):
        return False
    if isinstance(exc, (ValueError, *documented)):
        return True
    return any(cls.__name__ in DOCUMENTED_REJECTIONS for cls in type(exc).__mro__)


def _named(printed: str, documented: Collection[str]) -> bool:
    """Whether a traceback's class name is one of the MODULE:NAME types the user named.

    A traceback prints MODULE.NAME, or the bare NAME for builtins and for a
    class of the script run as __main__.
    """
    for spec in documented:
        module, _, name = spec.partition(":")
        if printed in (f"{module}.{name}", name):
            return True
    return False


def is_rejection_named(printed: str, message: str, documented: Collection[str] = ()) -> bool:
    """The rule of ``is_rejection`` for an exception known by its printed class name only.

    ``printed`` is the name a traceback shows (``KeyError``, ``struct.error``,
    ``json.decoder.JSONDecodeError``); ``documented`` holds MODULE:NAME specs.
    Builtins are judged by their real class; a class from elsewhere is a
    rejection when it is a known standard-library ValueError, when its name is
    one of DOCUMENTED_REJECTIONS, or when the user named it.  A user's own
    ValueError subclass cannot be seen from its name: name it.
    """
    if _named(printed, documented):
        return True
    builtin = getattr(builtins, printed, None) if "." not in printed else None
    if isinstance(builtin, type) and issubclass(builtin, BaseException):
        return not _crash_type(builtin, message) and issubclass(builtin, ValueError)
    return printed in _STDLIB_REJECTIONS or printed.rsplit(".", 1)[-1] in DOCUMENTED_REJECTIONS


# "  File "x.py", line 3, in <module>": the frame lines of a traceback.
_FRAME: Final = re.compile(r'^\s+File "[^"]*", line \d+')
_TB_HEADER: Final = re.compile(r"^(?:\s*\+\s*Exception Group )?Traceback \(most recent call last\):\s*$")
# The exception line: a dotted class name at column 0, then ": message" or nothing.
_EXC_LINE: Final = re.compile(r"^([A-Za-z_][\w.]*)(?::(?: (.*))?)?$")


def traceback_exception(stderr: str) -> tuple[str, str] | None:
    """The class name and the exception line of the last Python traceback in ``stderr``.

    A traceback starts with its header or, when the head of a long stderr was
    cut, with a frame line; its exception line is the first unindented line
    after the frames.  None when stderr holds no traceback.
    """
    found: tuple[str, str] | None = None
    in_traceback = False
    for line in stderr.splitlines():
        if _TB_HEADER.match(line) or _FRAME.match(line):
            in_traceback = True
            continue
        if not in_traceback or not line or line[0].isspace():
            continue
        m = _EXC_LINE.match(line)
        if m is not None:
            found = (m.group(1), line)
        in_traceback = False
    return found


_SANITIZER: Final = (
    re.compile(r"^==\d+==\s*ERROR: (\w*Sanitizer)\b"),
    re.compile(r"^SUMMARY: (\w*Sanitizer)\b"),
    re.compile(r"^WARNING: (ThreadSanitizer)\b"),
)
_UBSAN: Final = re.compile(r":\d+:\d+: runtime error: ")


def sanitizer_report(stderr: str) -> tuple[str, str] | None:
    """The sanitizer's name and its first report line, when stderr holds one."""
    for line in stderr.splitlines():
        for pattern in _SANITIZER:
            m = pattern.match(line)
            if m is not None:
                return m.group(1), line.strip()
        if _UBSAN.search(line):
            return "UndefinedBehaviorSanitizer", line.strip()
    return None


@dataclass(frozen=True)
class ExitVerdict:
    """How a loader command's exit reads under the protocol."""

    outcome: Literal["accepted", "rejected", "crash"]
    kind: str = ""  # for a crash: the class name, signal-NAME, exit-N or the sanitizer
    detail: str = ""  # one escaped line for people


def _line(text: str) -> str:
    return escape_line(text.strip())[:_DETAIL_CHARS]


def _first_line(stderr: str) -> str:
    return next((_line(line) for line in stderr.splitlines() if line.strip()), "")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def judge_exit(
    rc: int | None,
    sig: int | None,
    stderr: str,
    *,
    reject_exit: int = REJECT_EXIT,
    documented: Collection[str] = (),
) -> ExitVerdict:
    """Accepted, rejected or crash, for a command that exited with ``rc`` or died of ``sig``.

    ``documented`` holds the MODULE:NAME types named with --reject-exception.
    """
    if sig is not None:
        name = _signal_name(sig)
        first = _first_line(stderr)
        return ExitVerdict(
            "crash", f"signal-{name}", f"killed by signal {sig} ({name})" + (f": {first}" if first else "")
        )
    report = sanitizer_report(stderr)
    if report is not None:
        return ExitVerdict("crash", report[0], _line(report[1]))
    if rc == 0:
        return ExitVerdict("accepted")
    uncaught = traceback_exception(stderr) if rc == _PYTHON_UNCAUGHT_EXIT else None
    if uncaught is not None:
        printed, line = uncaught
        message = line.partition(":")[2].strip()
        if is_rejection_named(printed, message, documented):
            return ExitVerdict("rejected", "", _line(line))
        return ExitVerdict("crash", printed, _line(line))
    if rc == reject_exit:
        return ExitVerdict("rejected", "", _first_line(stderr))
    if rc is None:
        return ExitVerdict("crash", "no-exit", _first_line(stderr) or "the command did not run")
    how = f"exit code {rc}" + (" (a Rust panic)" if rc == _RUST_PANIC_EXIT else "")
    first = _first_line(stderr)
    return ExitVerdict("crash", f"exit-{rc}", f"{how}: {first}" if first else how)
