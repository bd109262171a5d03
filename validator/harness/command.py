# Strategy: run one loader command (`CMD {path}`) the way both harnesses
# need it: `stcheck conformance --impl CMD` and `stcheck fuzz
# loader-under-test --loader-cmd CMD`.  The command is the code under test,
# so nothing it does may take the harness down with it:
#
# - its output is read as it comes and kept bounded (stdout up to a limit,
#   stderr as its head and its tail, where a traceback's exception line and
#   a sanitizer's summary are), so a loader that prints garbage for the whole
#   timeout costs CPU, not memory;
# - it runs in its own session, and a timeout kills the whole process group,
#   so a `sh -c`, `cargo run` or `npm` wrapper cannot leave a grandchild
#   holding the pipes open; every group still running when the harness is
#   interrupted or exits is killed (stop_all, also at exit), and on Linux the
#   command is killed by the kernel when the harness dies without running
#   its exit handlers (a fuzz engine stopped by a signal).
# What the exit means is decided elsewhere (validator/harness/rejection.py).
from __future__ import annotations

import atexit
import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = ["STDERR_HEAD", "STDERR_TAIL", "STDOUT_LIMIT", "Completed", "run", "stop_all"]

STDOUT_LIMIT: Final = 1 << 22
STDERR_HEAD: Final = 8 << 10
STDERR_TAIL: Final = 24 << 10
_CHUNK: Final = 1 << 16
_PR_SET_PDEATHSIG: Final = 1
_LIVE: set[int] = set()  # process groups of running commands
_LIVE_LOCK: Final = threading.Lock()
_STOPPING = threading.Event()  # set once the harness is interrupted or exits: start nothing more


@dataclass(frozen=True)
class Completed:
    """What one run of a command left: exit code or signal, its bounded output."""

    rc: int | None
    signal: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    error: str | None = None  # the command could not be started


class _Tail:
    """The first ``head`` and the last ``tail`` bytes of a stream."""

    def __init__(self, head: int, tail: int) -> None:
        self.head_limit, self.tail_limit = head, tail
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        excess = len(self.tail) - self.tail_limit
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def text(self) -> str:
        middle = f"\n[... {self.dropped} bytes left out ...]\n".encode() if self.dropped else b""
        return bytes(self.head + middle + self.tail).decode("utf-8", "replace")


def stop_all() -> None:
    """Kill every command still running and start no more (an interrupted or exiting harness).

    A worker thread that is still looping over files then gets "not started"
    for each of them, so no loader outlives the harness.
    """
    with _LIVE_LOCK:
        _STOPPING.set()
        groups = list(_LIVE)
    for group in groups:
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)


atexit.register(stop_all)


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    preexec: Callable[[], None] | None = None,
    stdout_limit: int = STDOUT_LIMIT,
) -> Completed:
    """Run ``argv`` to its end or to ``timeout`` seconds, whichever comes first."""
    start = time.monotonic()
    preexec = _with_parent_death(preexec)
    with _LIVE_LOCK:  # started and registered at once, so that stop_all misses none
        if _STOPPING.is_set():
            return Completed(None, None, "", "", 0.0, error="not started: the harness is stopping")
        try:
            proc = subprocess.Popen(  # noqa: S603 - the command is the loader under test
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                preexec_fn=preexec,  # noqa: PLW1509 - only setrlimit, before exec
                start_new_session=True,
            )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            error = f"cannot start {argv[0]}: {exc}"
            return Completed(None, None, "", "", time.monotonic() - start, error=error)
        _LIVE.add(proc.pid)
    try:
        out, err, timed_out = _collect(proc, start + timeout, stdout_limit)
        if timed_out:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
        rc = proc.wait()
    finally:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)  # what the command left behind in its group
        with _LIVE_LOCK:
            _LIVE.discard(proc.pid)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    seconds = time.monotonic() - start
    if timed_out:
        return Completed(None, None, out, err, seconds, timed_out=True)
    return Completed(rc if rc >= 0 else None, -rc if rc < 0 else None, out, err, seconds)


def _with_parent_death(preexec: Callable[[], None] | None) -> Callable[[], None] | None:
    """``preexec``, plus PR_SET_PDEATHSIG on Linux: the command gets SIGKILL when the
    thread that started it dies (each run waits for its command, so only when the
    harness itself dies)."""
    if not sys.platform.startswith("linux"):
        return preexec
    try:
        import ctypes  # noqa: PLC0415 - only where a command is run

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return preexec

    def apply() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if preexec is not None:
            preexec()

    return apply


def _collect(proc: subprocess.Popen[bytes], deadline: float, stdout_limit: int) -> tuple[str, str, bool]:
    """Read both pipes to their ends, or until the deadline: (stdout, stderr, timed out)."""
    assert proc.stdout is not None
    assert proc.stderr is not None
    out = bytearray()
    err = _Tail(STDERR_HEAD, STDERR_TAIL)
    fds = {proc.stdout.fileno(): "out", proc.stderr.fileno(): "err"}
    timed_out = False
    while fds:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select(list(fds), [], [], left)
        for fd in ready:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                del fds[fd]
            elif fds[fd] == "out":
                out += chunk[: max(0, stdout_limit - len(out))]
            else:
                err.add(chunk)
    if not timed_out:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    return bytes(out).decode("utf-8", "replace"), err.text(), timed_out
