# Strategy: the parent side of the persistent loader protocol (fuzz/README.md,
# "The persistent protocol").  One harness process serves many inputs: for
# each, stcheck writes a frame (u32 little-endian length, then the bytes) to
# the harness's stdin and reads one answer line from its stdout:
#
#     accept
#     reject <reason>
#     crash <kind> <detail>      (a harness that caught its loader's crash itself)
#
# Every read and write has the per-input deadline, through select() on
# non-blocking pipes, so no harness can hang stcheck.  What goes wrong is
# one of three things, each with its own outcome:
#   - the harness exits or closes stdout before a whole line: a crash of that
#     input, judged from its exit status and stderr (signal, sanitizer,
#     Python traceback, exit code); the next input starts a new harness;
#   - no whole line by the deadline: a hang; the harness's process group is
#     killed and the next input starts a new one;
#   - a line that is not an answer, or more than one line for one frame: a
#     ProtocolError, whose message is one line.  The caller decides: the CLI
#     checks the harness on a few seeds before a campaign and stops with that
#     line; inside a campaign the input is recorded as `crash:protocol`.
# The harness's stderr goes to a file of its own (append mode, cut back when
# it grows), read only when the harness dies.

# ruff: noqa: PTH108, PTH123
# Paths: os.path and open(), like the rest of the package.
from __future__ import annotations

import contextlib
import dataclasses
import os
import select
import signal
import struct
import subprocess
import tempfile
import time
from typing import IO, TYPE_CHECKING, Final, Literal, Self

from validator._display import escape_line
from validator.harness.rejection import judge_exit

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["Answer", "ProtocolError", "Session", "frame", "parse_answer"]

MAX_FRAME: Final = 2**32 - 1
_MAX_LINE: Final = 4096  # an answer longer than this is not one
_STDERR_KEEP: Final = 1 << 20  # the stderr file is cut back past this size
_STDERR_TAIL: Final = 1 << 16  # what a crash report reads of it
_EXIT_GRACE_S: Final = 2.0  # how long a harness that closed stdout may take to exit


class ProtocolError(Exception):
    """The harness answered something that is not an answer (one line, for people)."""


@dataclasses.dataclass(frozen=True)
class Answer:
    """The harness's verdict on one input."""

    verdict: Literal["accept", "reject", "crash", "hang"]
    detail: str = ""
    kind: str = ""  # crash: the signal, sanitizer, exception class or exit-N; hang: "hang"
    trace: str = ""  # the harness's stderr, when it died


def frame(data: bytes) -> bytes:
    """One input as the protocol frames it."""
    if len(data) > MAX_FRAME:
        msg = f"an input of {len(data)} bytes does not fit a frame (at most {MAX_FRAME})"
        raise ValueError(msg)
    return struct.pack("<I", len(data)) + data


def parse_answer(line: bytes) -> Answer:
    """An answer line (without its newline); ProtocolError for anything else."""
    text = line.decode("utf-8", "replace").rstrip("\r")
    word, _, rest = text.partition(" ")
    if word == "accept" and not rest:
        return Answer("accept")
    if word == "reject":
        return Answer("reject", escape_line(rest.strip()))
    if word == "crash" and rest.strip():
        kind, _, detail = rest.strip().partition(" ")
        return Answer("crash", escape_line(detail.strip() or kind), kind=escape_line(kind))
    shown = escape_line(text[:80]) + ("..." if len(text) > 80 else "")
    msg = f"the harness answered {shown!r}; the protocol allows 'accept', 'reject <reason>' or 'crash <kind> <detail>'"
    raise ProtocolError(msg)


class Session:
    """One harness process at a time, started on demand and restarted after a crash or a hang."""

    def __init__(
        self, argv: Sequence[str], timeout_s: float, env: Mapping[str, str] | None = None, cwd: str | None = None
    ) -> None:
        self.argv = list(argv)
        self.timeout_s = timeout_s
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.starts = 0  # harness processes started so far
        self._proc: subprocess.Popen[bytes] | None = None
        self._err: IO[bytes] | None = None
        self._partial = b""  # what the harness wrote of an answer before it closed stdout
        # The frame out: its process, and the deadline its write missed (None: it went).
        self._pending: tuple[subprocess.Popen[bytes], float | None] | None = None

    # --- process management ------------------------------------------------

    def _start(self) -> subprocess.Popen[bytes]:
        if self._err is None:
            fd, path = tempfile.mkstemp(prefix="stcheck-harness-", suffix=".stderr")
            os.close(fd)
            self._err = open(path, "a+b")  # noqa: SIM115 - lives as long as the session
            os.unlink(path)
        self._err.truncate(0)
        proc = subprocess.Popen(  # noqa: S603 - the user's own harness, as they wrote it
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            env=self.env,
            cwd=self.cwd,
            start_new_session=True,  # its own process group, killed as one
            bufsize=0,
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        os.set_blocking(proc.stdin.fileno(), False)
        os.set_blocking(proc.stdout.fileno(), False)
        self._proc = proc
        self.starts += 1
        return proc

    def _kill(self, proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=_EXIT_GRACE_S)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if self._proc is proc:
            self._proc = None

    def close(self) -> None:
        """End the session: close the harness's stdin (its end of session), then make sure it is gone."""
        proc = self._proc
        if proc is not None:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=_EXIT_GRACE_S)
            self._kill(proc)
        if self._err is not None:
            self._err.close()
            self._err = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _stderr_tail(self) -> str:
        if self._err is None:
            return ""
        self._err.flush()
        size = self._err.seek(0, os.SEEK_END)
        self._err.seek(max(0, size - _STDERR_TAIL))
        return self._err.read().decode("utf-8", "replace")

    # --- one input ------------------------------------------------------------

    def ask(self, data: bytes) -> Answer:
        """The harness's answer for ``data``, within the deadline; ProtocolError for a non-answer."""
        self.send(data)
        return self.answer()

    def send(self, data: bytes) -> None:
        """Write ``data``'s frame and return at once; answer() reads its verdict.

        The harness works on the frame while the caller does something else
        (the fuzzer runs its oracle meanwhile).  One frame is out at a time:
        a frame sent while another is unanswered first takes that answer and
        drops it.
        """
        if self._pending is not None:
            with contextlib.suppress(ProtocolError):
                self.answer()
        proc = self._proc if self._proc is not None and self._proc.poll() is None else self._start()
        deadline = time.monotonic() + self.timeout_s
        sent = self._send(proc, frame(data), deadline)
        self._pending = (proc, None if sent else deadline)

    def answer(self) -> Answer:
        """The answer to the frame send() wrote: the deadline runs again from now."""
        if self._pending is None:
            msg = "answer() without a frame sent"
            raise RuntimeError(msg)
        (proc, failed_at), self._pending = self._pending, None
        if failed_at is not None:
            return self._ended(proc, failed_at)
        deadline = time.monotonic() + self.timeout_s
        line = self._receive(proc, deadline)
        if line is None:
            return self._ended(proc, deadline)
        if self._err is not None and self._err.tell() > _STDERR_KEEP:
            self._err.truncate(0)  # append mode: the harness's next write lands at the new end
        return parse_answer(line)

    def _send(self, proc: subprocess.Popen[bytes], payload: bytes, deadline: float) -> bool:
        """Write the frame; False when the harness stopped reading (it died, or the deadline passed)."""
        assert proc.stdin is not None
        fd = proc.stdin.fileno()
        view = memoryview(payload)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            _, ready, _ = select.select([], [fd], [], left)
            if not ready:
                return False
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                continue
            except (BrokenPipeError, OSError):
                return False
            view = view[written:]
        return True

    def _receive(self, proc: subprocess.Popen[bytes], deadline: float) -> bytes | None:
        """One whole line, or None when stdout closed or the deadline passed first."""
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        buf = b""
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                self._partial = buf
                return None
            buf += chunk
            if len(buf) > _MAX_LINE and b"\n" not in buf:
                msg = f"the harness wrote {len(buf)} bytes without a line break; an answer is one short line"
                self._kill(proc)
                raise ProtocolError(msg)
        line, _, rest = buf.partition(b"\n")
        if rest:
            self._kill(proc)  # its next answers would belong to the wrong inputs
            shown = escape_line(rest[:60].decode("utf-8", "replace"))
            msg = f"the harness answered more than one line for one input (then {shown!r})"
            raise ProtocolError(msg)
        return line

    def _ended(self, proc: subprocess.Popen[bytes], deadline: float) -> Answer:
        """The harness closed its end, died, or passed the deadline: a crash or a hang."""
        if time.monotonic() >= deadline and proc.poll() is None:
            self._kill(proc)
            trace = self._stderr_tail().strip()
            return Answer("hang", f"no answer within {self.timeout_s:g}s", kind="hang", trace=trace)
        try:
            proc.wait(timeout=max(0.1, min(_EXIT_GRACE_S, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            # It closed stdout but lives on: no answer can come, so it hangs.
            self._kill(proc)
            trace = self._stderr_tail().strip()
            return Answer("hang", "closed its stdout without an answer and did not exit", kind="hang", trace=trace)
        partial, self._partial = self._partial, b""
        self._kill(proc)  # reap and close the pipes
        rc = proc.returncode
        stderr = self._stderr_tail()
        sig = -rc if rc is not None and rc < 0 else None
        verdict = judge_exit(None if sig else rc, sig, stderr)
        # Dying is a crash whatever the status: exit 0 or 1 mid-protocol is no verdict.
        kind = verdict.kind if verdict.outcome == "crash" and verdict.kind != "no-exit" else f"exit-{rc}"
        cut = f" after {len(partial)} bytes of an answer" if partial else ""
        detail = f"the harness exited mid-protocol{cut} ({verdict.detail or f'exit code {rc}'})"
        return Answer("crash", escape_line(detail), kind=kind, trace=stderr.strip())
