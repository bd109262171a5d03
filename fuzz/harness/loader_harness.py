"""A persistent harness around a Python loader callable (the frame protocol of fuzz/README.md).

    python fuzz/harness/loader_harness.py MODULE:FUNCTION [--bytes]

reads frames from stdin (a u32 little-endian length, then the bytes), calls
FUNCTION on each (with a path to a private temporary file holding the bytes,
in /dev/shm unless TMPDIR names a folder, or with the bytes under --bytes), and answers one line per frame on stdout:
``accept`` when it returns, ``reject <reason>`` when it raises a clean
rejection (ValueError and its subclasses, or a type whose name is
StcheckError, SafetensorError or SafetensorsParsingError: the rule of
validator/harness/rejection.py, copied here so that the harness runs where
stcheck is not installed).  Any other exception is a crash: the harness
prints the traceback to stderr and exits by it, as Python does, and stcheck
records the input and starts a new harness.  Writes of the loader to stdout
go to stderr, so they cannot break the protocol.

    stcheck fuzz loader-under-test --persistent \\
        --loader-cmd 'python fuzz/harness/loader_harness.py fuzz.examples.naive_loader:load'
"""

from __future__ import annotations

import importlib
import os
import struct
import sys
import tempfile
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

_REJECTION_NAMES = frozenset({"StcheckError", "SafetensorError", "SafetensorsParsingError"})


def is_rejection(exc: BaseException) -> bool:
    """A clean refusal of the file, under the one rule of validator/harness/rejection.py."""
    if not isinstance(exc, Exception) or isinstance(exc, (RecursionError, MemoryError, SystemError)):
        return False
    if isinstance(exc, ValueError):
        text = str(exc)
        return not ("digits" in text and "limit" in text)  # Python's integer-digit limit is a crash
    return any(cls.__name__ in _REJECTION_NAMES for cls in type(exc).__mro__)


def load_callable(spec: str) -> Callable[[object], object]:
    """MODULE:FUNCTION, imported."""
    module_name, _, attr = spec.partition(":")
    obj: object = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        msg = f"{spec} is not callable"
        raise TypeError(msg)
    return obj


def answer(function: Callable[[object], object], data: bytes, path: str | None) -> str:
    """The answer line for one input; a crash propagates."""
    if path is not None:
        with open(path, "wb") as f:  # noqa: PTH123 - a plain file, as the loader will open it
            f.write(data)
    try:
        function(data if path is None else path)
    except Exception as exc:
        if not is_rejection(exc):
            raise
        reason = f"{type(exc).__name__}: {exc}".replace("\n", " ").replace("\r", " ")
        return f"reject {reason[:200]}"
    return "accept"


def input_dir() -> str | None:
    """The folder for the input file: TMPDIR when set, else /dev/shm where it
    is writable (a file on disk cost 253 against 127 microseconds per frame
    with the naive Python loader here), else the system's default."""
    if os.environ.get("TMPDIR"):
        return None
    ramdisk = "/dev/shm"
    return ramdisk if os.path.isdir(ramdisk) and os.access(ramdisk, os.W_OK) else None  # noqa: PTH112 - os-level


def serve(function: Callable[[object], object], stdin: IO[bytes], stdout: IO[bytes], *, as_bytes: bool) -> None:
    """Answer frames until stdin ends."""
    fd, path = tempfile.mkstemp(prefix="stcheck-harness-", suffix=".safetensors", dir=input_dir())
    os.close(fd)
    try:
        while True:
            prefix = stdin.read(4)
            if not prefix:
                return
            if len(prefix) < 4:
                sys.exit("loader_harness.py: truncated frame length")
            (size,) = struct.unpack("<I", prefix)
            data = stdin.read(size)
            if len(data) < size:
                sys.exit("loader_harness.py: truncated frame")
            stdout.write(answer(function, data, None if as_bytes else path).encode() + b"\n")
            stdout.flush()
    finally:
        os.unlink(path)  # noqa: PTH108 - os-level, like mkstemp


def main(argv: list[str]) -> int:
    """Entry point: ``MODULE:FUNCTION [--bytes]``."""
    if len(argv) not in (1, 2) or (len(argv) == 2 and argv[1] != "--bytes"):
        print("usage: loader_harness.py MODULE:FUNCTION [--bytes]", file=sys.stderr)
        return 2
    if os.getcwd() not in sys.path:  # noqa: PTH109 - as python -m would
        sys.path.insert(0, os.getcwd())  # noqa: PTH109 - as above
    function = load_callable(argv[0])
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the loader's prints go to stderr
    sys.stdout = sys.stderr
    serve(function, sys.stdin.buffer, protocol, as_bytes=len(argv) == 2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
