# Strategy: triage of a loader's findings by root cause, and minimisation.
#
# Cause.  A class (crash:signal-SIGSEGV, rejects-valid, ...) can hold many
# bugs.  For a crash the cause is where it happened, read from what the
# loader printed on its way down, most precise first:
#   1. a stack: AddressSanitizer/UBSan frames (`#0 0x55.. in f file.c:3:1`),
#      glibc's backtrace_symbols (`./bin(f+0x1c)[0x55..]`) or a Rust panic's
#      backtrace (`  3: crate::f`).  The function names of the top three
#      frames that are the loader's own (the sanitizer's, libc's and the
#      runtime's frames skipped) make the site; addresses, offsets, file
#      lines and columns are left out, so one crash site is one cause
#      whatever the build's layout or ASLR, and a short hash of the site
#      names its reproducer;
#   2. UBSan without a stack: the first `file:line: runtime error: kind`;
#   3. C++'s terminate handler: the type of the uncaught exception;
#   4. a sanitizer's SUMMARY line, addresses written 0x?;
#   5. the innermost frame of a Python traceback (file:line (function)), or
#      of the stack faulthandler prints when Python dies of a signal (most
#      recent call first).
# Nothing matches: the caller falls back to the signal or exit.
#
# Minimisation.  A bounded delta-debugging pass over one reproducer: header
# members dropped and the header re-encoded compactly (mutator.reductions),
# nesting peeled in matched pairs of brackets, then byte chunks of halving
# size deleted with N kept consistent.  A candidate is kept only when the
# caller's predicate says it still shows the same class and cause; the pass
# stops at its attempt or time budget, whichever comes first.
# ruff: noqa: PTH119
# Paths: os.path, like the rest of the package.
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import time
from typing import TYPE_CHECKING, Final

from validator.fuzz.mutator import reductions

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["MINIMISE_ATTEMPTS", "MINIMISE_S", "Minimised", "crash_cause", "minimise", "stack_frames"]

MINIMISE_ATTEMPTS: Final = 200
MINIMISE_S: Final = 3.0
_TOP: Final = 3  # frames that make a crash site
_ASAN_FRAME: Final = re.compile(r"^\s*#(\d+)\s+0x[0-9a-fA-F]+\s+in\s+(.+?)\s*$", re.MULTILINE)
_GLIBC_FRAME: Final = re.compile(r"^\S*\(([^()+\s]+)\+0x[0-9a-fA-F]+\)\s*\[0x[0-9a-fA-F]+\]\s*$", re.MULTILINE)
_RUST_FRAME: Final = re.compile(r"^\s+(\d+):\s+(?:0x[0-9a-fA-F]+\s+-\s+)?(\S.*?)\s*$", re.MULTILINE)
_LOCATION: Final = re.compile(r"\s+(?:\(\S*\+0x[0-9a-fA-F]+\)|\S*[/\\]\S*|\S+\.\w+:\d+(?::\d+)?)$")
_UBSAN: Final = re.compile(r"^(\S+?):(\d+)(?::\d+)?: runtime error: ([^:\n]+)", re.MULTILINE)
_TERMINATE: Final = re.compile(r"terminate called after throwing an instance of '([^'\n]+)'")
_SANITIZER: Final = re.compile(r"SUMMARY: (\w*Sanitizer: [^\n]*)")
_ERROR_KIND: Final = re.compile(r"(\w*Sanitizer): ([\w-]+)")
_SIGNAL: Final = re.compile(r"\b(SIG[A-Z]+)\b")
_PY_FRAME: Final = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_FAULT_FRAME: Final = re.compile(r'^\s+File "([^"]+)", line (\d+) in (\S+)', re.MULTILINE)
_FAULT_STACK: Final = re.compile(
    r"^(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):$", re.MULTILINE
)
_ADDRESS: Final = re.compile(r"0x[0-9a-fA-F]+")
_UNSYMBOLISED: Final = re.compile(r"^\(\S*\+0x[0-9a-fA-F]+\)$|^<unknown")
_HASH_SUFFIX: Final = re.compile(r"\.(?:isra|constprop|part|cold|lto_priv)\.\d+")
# Frames that are not the loader's: the sanitizer's runtime, libc's signal
# and abort path, the C++ and Rust runtimes' unwinding and panicking.
_NOT_THEIRS: Final = re.compile(
    r"^(?:__asan|__interceptor|__sanitizer|__ubsan|__lsan|__msan|__tsan|___interceptor|__interception"
    r"|__libc_|__GI_|_start$|start_thread$|clone3?$|raise$|abort$|gsignal$|__pthread_kill|pthread_kill"
    r"|__assert_fail|__restore_rt|__cxa_|__cxxabiv1|__gnu_cxx::__verbose_terminate|std::terminate"
    r"|std::__terminate|_Unwind_|__rust_|rust_begin_unwind|rust_panic|std::panicking|core::panicking"
    r"|std::rt::|std::sys|std::backtrace|core::ops::function|<alloc::boxed::Box|__scrt_|_dl_|__fortify)"
)


def _function(raw: str) -> str:
    """A frame's function name without its location, address or compiler suffix ("" for none)."""
    if _UNSYMBOLISED.match(raw.strip()):
        return ""
    name = _LOCATION.sub("", raw.strip())
    name = _ADDRESS.sub("", name).strip()
    return _HASH_SUFFIX.sub("", name)


def _frames(pattern: re.Pattern[str], trace: str, *, numbered: bool) -> list[str]:
    names: list[str] = []
    for m in pattern.finditer(trace):
        if numbered and m.group(1) == "0" and names:
            break  # a second stack (an allocation site, a second thread): the first is the crash's
        names.append(_function(m.group(2) if numbered else m.group(1)))
    return [n for n in names if n and not _NOT_THEIRS.match(n)]


def stack_frames(trace: str) -> list[str]:
    """The loader's own frames of the first stack in ``trace``, innermost first (may be empty)."""
    for pattern, numbered in ((_ASAN_FRAME, True), (_GLIBC_FRAME, False), (_RUST_FRAME, True)):
        frames = _frames(pattern, trace, numbered=numbered)
        if frames:
            return frames
    return []


def _what(trace: str) -> str:
    """What went wrong, without addresses: the sanitizer's error kind, else the signal."""
    m = _ERROR_KIND.search(trace)
    if m is not None:
        return f"{m.group(1)}: {m.group(2)}"
    m = _SIGNAL.search(trace)
    return m.group(1) if m is not None else "crash"


def crash_cause(trace: str) -> str | None:
    """The crash site a loader's stderr or traceback names, or None when it names none."""
    frames = stack_frames(trace)
    if frames:
        site = " < ".join(frames[:_TOP])
        tag = hashlib.sha1(site.encode(), usedforsecurity=False).hexdigest()[:8]
        return f"{_what(trace)} in {site}"[:150] + f" [stack {tag}]"
    m = _UBSAN.search(trace)
    if m is not None:
        return f"runtime error: {m.group(3).strip()} at {os.path.basename(m.group(1))}:{m.group(2)}"[:160]
    m = _TERMINATE.search(trace)
    if m is not None:
        return f"uncaught {m.group(1)}"[:160]
    m = _SANITIZER.search(trace)
    if m is not None:
        return _ADDRESS.sub("0x?", m.group(1).strip())[:160]
    py = _PY_FRAME.findall(trace)
    stack = _FAULT_STACK.search(trace)
    if not py and stack is not None:  # faulthandler: the innermost frame comes first
        py = _FAULT_FRAME.findall(trace, stack.end())[:1]
    if py:
        file, line, function = py[-1]
        return f"{os.path.basename(file)}:{line} ({function})"
    return None


@dataclasses.dataclass(frozen=True)
class Minimised:
    """The outcome of one minimisation pass."""

    data: bytes
    before: int  # bytes
    attempts: int  # candidates tried
    seconds: float


class _BudgetSpentError(Exception):
    """The attempt or time budget is used up."""


# Nesting as the big family and hand-written files spell it: one unit per level.
_LEVELS: Final = ((b"[", b"]"), (b'{"a":', b"}"), (b'[{"a":', b"}]"), (b"{", b"}"))


def _peel(data: bytes) -> Iterator[bytes]:
    """``data`` with nesting levels removed in matched pairs: a share of the longest
    run of one opening unit and as many of its closing unit where they run."""
    n = int.from_bytes(data[:8], "little") if len(data) >= 8 else -1
    if n < 0 or 8 + n > len(data):
        return
    header, tail = data[8 : 8 + n], data[8 + n :]
    for opening, closing in _LEVELS:
        runs = list(re.finditer(b"(?:" + re.escape(opening) + b"){2,}", header))
        ends = list(re.finditer(b"(?:" + re.escape(closing) + b"){2,}", header))
        if not runs or not ends:
            continue
        run = max(runs, key=lambda m: m.end() - m.start())
        end = max(ends, key=lambda m: m.end() - m.start())
        if end.start() < run.end():
            continue
        levels = min((run.end() - run.start()) // len(opening), (end.end() - end.start()) // len(closing))
        for share in (2, 4, 8, 16, 64):
            k = levels // share
            if k >= 1:
                cut = (
                    header[: run.start()]
                    + header[run.start() + k * len(opening) : end.start()]
                    + header[end.start() + k * len(closing) :]
                )
                yield len(cut).to_bytes(8, "little") + cut + tail


def _delete(data: bytes, start: int, size: int) -> bytes:
    """``data`` without ``size`` bytes at ``start`` past the prefix, N lowered by those inside the header."""
    n = int.from_bytes(data[:8], "little")
    inside = max(0, min(start + size, n) - start) if 8 + n <= len(data) else 0
    body = data[8:]
    return (n - inside).to_bytes(8, "little") + body[:start] + body[start + size :]


def minimise(
    data: bytes, keeps: Callable[[bytes], bool], *, attempts: int = MINIMISE_ATTEMPTS, seconds: float = MINIMISE_S
) -> Minimised:
    """The smallest input found, within the budget, for which ``keeps`` still holds.

    ``keeps(data)`` is assumed true; the result is ``data`` itself when nothing smaller keeps.
    """
    started = time.monotonic()
    deadline = started + seconds
    best = data
    tried = 0

    def holds(candidate: bytes) -> bool:
        nonlocal tried
        if tried >= attempts or time.monotonic() >= deadline:
            raise _BudgetSpentError
        tried += 1
        return keeps(candidate)

    with contextlib.suppress(_BudgetSpentError):
        # Structure first (members, spelling, nesting), until none helps ...
        shrunk = True
        while shrunk:
            shrunk = False
            for source in (reductions, _peel):
                candidate = next((c for c in source(best) if len(c) < len(best) and holds(c)), None)
                if candidate is not None:
                    best, shrunk = candidate, True
                    break
        # ... then chunks of bytes, halving, from the end (the data region first).
        size = max((len(best) - 8) // 2, 1)
        while len(best) > 8:
            start = len(best) - 8 - size
            while start >= 0:
                candidate = _delete(best, start, size)
                if holds(candidate):
                    best = candidate
                    start = min(start, len(best) - 8 - size)
                else:
                    start -= size
            if size == 1:
                break
            size //= 2
    return Minimised(best, len(data), tried, time.monotonic() - started)
