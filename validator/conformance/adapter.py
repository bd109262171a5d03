# Strategy: the adapter side of the conformance protocol, shared by every
# adapter in corpus/adapters/ and by `stcheck conformance --impl mod:func`.
#
# The protocol follows JSONTestSuite: `python ADAPTER FILE` exits 0 to accept,
# 1 to reject, anything else (another code, a signal) is a crash.  On accept
# it prints one JSON line, {"tensors": [{"name", "dtype", "shape", "nbytes",
# "sha256"}]}, describing what the library handed back, so the harness can
# compare the bytes with the declared range.  `ADAPTER --probe` prints
# {"version": ...} or exits 3 with the reason the library is unavailable.
#
# `ADAPTER --serve` is a fork server: it imports the library once, then for
# each request line {"path", "timeout", "memory_mb"} forks a child that runs
# the same code as `ADAPTER FILE` under an address-space limit and an alarm,
# and answers one JSON line {"rc", "signal", "stdout", "stderr", "seconds"}.
# Every file still gets its own process, but a library that takes seconds to
# import (torch) pays that once.
#
# `ADAPTER --persistent` serves `stcheck fuzz loader-under-test --persistent`
# (the frame protocol of fuzz/README.md) with the same load and the same
# rejection rule, so a fuzz campaign judges the loader exactly as the matrix
# does.  Each frame is written to a private file and loaded in this process
# (thousands of inputs a second rather than one); an exception that is not a
# rejection is answered `crash <Type> <innermost frame>: <message>` and the
# session goes on.  The loader's own writes to stdout go to stderr, so they
# cannot break the protocol; STCHECK_ADAPTER_MEMORY_MB caps the address
# space on top of what the imported library maps.
#
# Which exceptions count as a rejection: ONE rule, shared with `stcheck fuzz
# loader-under-test` and stated in full in validator/harness/rejection.py.  A loader
# rejects a file cleanly only when it raises an exception of a type it
# documents for bad input (ValueError and its subclasses, StcheckError,
# SafetensorError, SafetensorsParsingError, or a type the adapter or the user
# names); every other exception is a crash.  An adapter may pass `rejects`,
# its own predicate, when its library documents other types.  A user's own
# command (`--impl 'CMD {path}'`) is judged by the same rule from its exit
# status and its stderr (a traceback's exception line, by class name).
from __future__ import annotations

import hashlib
import importlib
import json
import operator
import os
import re
import signal
import struct
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from validator.harness.rejection import is_rejection

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    Record = dict[str, Any]
    Loader = Callable[[str], Iterable[Record]]

__all__ = [
    "ACCEPT",
    "CRASH",
    "ENV_MEMORY",
    "ENV_REJECT",
    "REJECT",
    "UNAVAILABLE",
    "answer",
    "default_rejects",
    "limit_memory",
    "load_callable",
    "main",
    "module_version",
    "persistent",
    "record",
    "run_one",
    "serve",
    "tensor_bytes",
]

ACCEPT = 0
REJECT = 1
CRASH = 2
UNAVAILABLE = 3


def _dim(value: object) -> int | str:
    """One dimension as the library returned it: an int, else its text.  A
    header-only loader hands back the header's own values (1e309 is float
    infinity, 1.5 a float), and describing them must not fail: that would be
    a crash of the adapter, blamed on the loader."""
    if isinstance(value, int):
        return int(value)
    try:
        return operator.index(value)  # type: ignore[arg-type]  # numpy and torch integers
    except TypeError:
        return repr(value)[:40]


def _shape(shape: object) -> list[int | str]:
    """A shape as the library returned it; a header-only loader may hand back
    the header's own `null` or `3`, which it accepted."""
    try:
        dims = list(shape)  # type: ignore[call-overload]
    except TypeError:
        return [repr(shape)[:40]]
    return [_dim(d) for d in dims]


def record(name: str, dtype: object, shape: object, data: bytes | None) -> Record:
    """One tensor as the library returned it; data None when not readable."""
    return {
        "name": name,
        "dtype": str(dtype),
        "shape": _shape(shape),
        "nbytes": None if data is None else len(data),
        "sha256": None if data is None else hashlib.sha256(data).hexdigest(),
    }


def default_rejects(exc: BaseException) -> bool:
    """The rule for an adapter that names no error types of its own."""
    return is_rejection(exc)


def run_one(load: Loader, path: str, rejects: Callable[[BaseException], bool] = default_rejects) -> int:
    """Load one file; print the accept line or the error; return the exit code."""
    try:
        records = list(load(path))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - classifying every failure is the point
        if rejects(exc):
            sys.stderr.write(f"reject: {type(exc).__name__}: {str(exc)[:500]}\n")
            return REJECT
        sys.stderr.write(f"crash: {type(exc).__name__}: {str(exc)[:500]}\n")
        traceback.print_exc(limit=6, file=sys.stderr)
        return CRASH
    sys.stdout.write(json.dumps({"tensors": records}) + "\n")
    return ACCEPT


def _vm_bytes() -> int:
    try:
        with Path("/proc/self/status").open(encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def limit_memory(memory_mb: int, *, on_top: bool) -> None:
    """Cap the address space at memory_mb, above what is mapped now if on_top."""
    import resource  # noqa: PLC0415 - POSIX only, needed only under a limit

    cap = memory_mb * 1024 * 1024 + (_vm_bytes() if on_top else 0)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def _child(
    load: Loader, rejects: Callable[[BaseException], bool], path: str, files: tuple[str, str], limits: tuple[float, int]
) -> None:
    """Runs in the forked child; never returns.  files: (stdout, stderr); limits: (seconds, memory_mb)."""
    out, err = files
    timeout, memory_mb = limits
    code = CRASH
    try:
        fd_out = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        fd_err = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(fd_out, 1)
        os.dup2(fd_err, 2)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        if memory_mb:
            limit_memory(memory_mb, on_top=True)
        code = run_one(load, path, rejects)
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def serve(load: Loader, rejects: Callable[[BaseException], bool] = default_rejects) -> int:
    """Answer requests from stdin, one forked child per file."""
    with tempfile.TemporaryDirectory(prefix="stcheck-adapter-") as tmp:
        out, err = str(Path(tmp) / "out"), str(Path(tmp) / "err")
        for line in sys.stdin:
            if not line.strip():
                continue
            req = json.loads(line)
            start = time.monotonic()
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                limits = (float(req.get("timeout", 20)), int(req.get("memory_mb", 0)))
                _child(load, rejects, req["path"], (out, err), limits)
            _, status = os.waitpid(pid, 0)
            seconds = time.monotonic() - start
            rc = os.waitstatus_to_exitcode(status)
            answer = {
                "rc": rc if rc >= 0 else None,
                "signal": -rc if rc < 0 else None,
                "stdout": _read(out, 1 << 22),
                "stderr": _read_ends(err),
                "seconds": round(seconds, 4),
            }
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
    return 0


def _read(path: str, limit: int) -> str:
    try:
        with Path(path).open("rb") as f:
            data = f.read(limit)
    except OSError:
        return ""
    return data.decode("utf-8", "replace")


def _read_ends(path: str, head: int = 8 << 10, tail: int = 24 << 10) -> str:
    """The head and the tail of a child's stderr, where a traceback's last line is."""
    try:
        with Path(path).open("rb") as f:
            data = f.read(head)
            size = f.seek(0, os.SEEK_END)
            if size > head:
                f.seek(max(head, size - tail))
                skipped = max(0, size - tail - head)
                data += (f"\n[... {skipped} bytes left out ...]\n".encode() if skipped else b"") + f.read(tail)
    except OSError:
        return ""
    return data.decode("utf-8", "replace")


ENV_MEMORY: Final = "STCHECK_ADAPTER_MEMORY_MB"
_EXTRA_FRAMES: Final = 1


def _one_line(text: str, limit: int = 300) -> str:
    return " ".join(text.split())[:limit]


def _innermost(exc: BaseException) -> str:
    """`file.py:LINE (function)` of the frame that raised, the crash's cause."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "?"
    last = frames[-1]
    return f"{Path(last.filename).name}:{last.lineno} ({last.name})"


def answer(load: Loader, path: str, rejects: Callable[[BaseException], bool]) -> str:
    """The frame protocol's answer line for one file, under the matrix's rule."""
    try:
        for _ in load(path):
            pass
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - classifying every failure is the point
        module = type(exc).__module__.rsplit(".", 1)[-1].lstrip("_")
        name = type(exc).__name__ if module == "builtins" else f"{module}.{type(exc).__name__}"
        kind = re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "exception"
        if rejects(exc):
            return _one_line(f"reject {type(exc).__name__}: {exc}")
        return _one_line(f"crash {kind} {_innermost(exc)}: {exc}")
    return "accept"


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    data = stream.read(size)
    return data if len(data) == size else None


def persistent(load: Loader, rejects: Callable[[BaseException], bool] = default_rejects) -> int:
    """Serve the frame protocol on stdin/stdout until stdin ends."""
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # the loader's prints, from Python or native code, go to stderr
    sys.stdout = sys.stderr
    memory_mb = int(os.environ.get(ENV_MEMORY) or 0)
    if memory_mb:
        limit_memory(memory_mb, on_top=True)
    # answer() calls the loader one frame deeper than `ADAPTER FILE` does
    # (persistent, answer against run_one).  Python counts frames against the
    # recursion limit, so without this a header nested just below the limit
    # crashed here and not in the replay: the campaign kept, as the shortest
    # reproducer of a RecursionError, a file that a fresh process rejected.
    sys.setrecursionlimit(sys.getrecursionlimit() + _EXTRA_FRAMES)
    inputs = sys.stdin.buffer
    ramdisk = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None  # noqa: S108 - a private folder inside it
    with tempfile.TemporaryDirectory(prefix="stcheck-adapter-", dir=ramdisk) as tmp:
        path = str(Path(tmp) / "input.safetensors")
        while (head := _read_exactly(inputs, 4)) is not None:
            data = _read_exactly(inputs, struct.unpack("<I", head)[0])
            if data is None:
                break
            Path(path).write_bytes(data)
            protocol.write(answer(load, path, rejects) + "\n")
    return ACCEPT


def main(load: Loader, version: Callable[[], str], rejects: Callable[[BaseException], bool] = default_rejects) -> int:
    """Entry point of an adapter script: --probe, --serve, --persistent or FILE."""
    args = sys.argv[1:]
    if args == ["--probe"]:
        sys.stdout.write(json.dumps({"version": version()}) + "\n")
        return ACCEPT
    if args == ["--serve"]:
        return serve(load, rejects)
    if args == ["--persistent"]:
        return persistent(load, rejects)
    if len(args) != 1:
        sys.stderr.write("usage: ADAPTER FILE | --probe | --serve | --persistent\n")
        return CRASH
    return run_one(load, args[0], rejects)


def tensor_bytes(value: object) -> bytes | None:
    """The raw bytes of a numpy array, torch tensor or mlx array, if readable."""
    module = type(value).__module__.split(".")[0]
    try:
        if module == "torch":
            import torch  # noqa: PLC0415 - only for torch tensors

            t = value.detach().contiguous().reshape(-1)  # type: ignore[attr-defined]
            return bytes(t.view(torch.uint8).numpy().tobytes())
        if module == "mlx":
            import mlx.core as mx  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415 - only for mlx arrays
            import numpy as np  # noqa: PLC0415 - numpy is optional

            return bytes(np.array(value.reshape(-1).view(mx.uint8)).tobytes())  # type: ignore[attr-defined]
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        import numpy as np  # noqa: PLC0415 - numpy is optional

        return bytes(np.ascontiguousarray(value).tobytes())
    except (ImportError, TypeError, ValueError, RuntimeError, AttributeError):
        return None


ENV_REJECT: Final = "STCHECK_REJECT"  # "module:Name,..." documented rejection types of an --impl callable


def _named_type(spec: str) -> type[BaseException]:
    module_name, _, attr = spec.partition(":")
    found = getattr(importlib.import_module(module_name), attr)
    if not (isinstance(found, type) and issubclass(found, BaseException)):
        msg = f"{spec} is not an exception type"
        raise TypeError(msg)
    return found


def module_version(module_name: str) -> str:
    """The version of an imported module: its __version__ (or its top package's), else
    the version of the installed distribution that provides it, else "unknown"."""
    top = module_name.split(".", maxsplit=1)[0]
    for name in (module_name, top):
        found = getattr(sys.modules.get(name), "__version__", None)
        if isinstance(found, str) and found:
            return found
    try:
        from importlib.metadata import packages_distributions, version  # noqa: PLC0415 - only when probing

        for dist in packages_distributions().get(top, []):
            return f"{version(dist)} ({dist})" if dist != top else version(dist)
    except Exception:  # noqa: BLE001, S110 - a broken metadata store only costs the version
        pass
    return "unknown"


def load_callable(spec: str) -> Loader:
    """A loader from "module:function", where function(path) returns a mapping
    of names to arrays/tensors (numpy, torch, mlx or bytes)."""
    module_name, _, attr = spec.partition(":")
    func = getattr(importlib.import_module(module_name), attr)

    def load(path: str) -> Iterable[Record]:
        result = func(path)
        items = result.items() if hasattr(result, "items") else result
        for name, value in items:
            shape = getattr(value, "shape", ())
            yield record(str(name), getattr(value, "dtype", "?"), tuple(shape), tensor_bytes(value))

    return load


if __name__ == "__main__":
    # python -m validator.conformance.adapter MODULE:FUNCTION (FILE | --probe | --serve)
    if len(sys.argv) < 3:
        sys.stderr.write("usage: python -m validator.conformance.adapter MODULE:FUNCTION FILE|--probe|--serve\n")
        raise SystemExit(CRASH)
    target = sys.argv.pop(1)
    sys.path.insert(0, str(Path.cwd()))
    try:
        loader = load_callable(target)
        named = tuple(_named_type(n) for n in os.environ.get(ENV_REJECT, "").split(",") if n)
    except Exception as exc:  # noqa: BLE001 - report any import failure as unavailable
        sys.stderr.write(f"cannot import {target}: {type(exc).__name__}: {exc}\n")
        raise SystemExit(UNAVAILABLE) from None
    module = target.partition(":")[0]
    raise SystemExit(main(loader, lambda: module_version(module), lambda exc: is_rejection(exc, named)))
