# Strategy: "fuzz your loader".  A user's loader, a Python callable
# `module:function` or a command template, is run on each input and its
# outcome compared with our reference profile and with safetensors 0.8.0.
# Every disagreement is classified into a category (accepts-invalid:<rule>,
# crash:<exception>, rejects-valid, bytes-mismatch, tensor-set-mismatch,
# oracle-disagreement) and the shortest input seen for each category is
# kept in the output directory as a reproducer, and within a class the
# shortest input of each root cause (validator/fuzz/triage.py: the rule,
# the loader's reason, the crash site's stack hash), minimised when the cause
# is first seen.  The target never raises
# for the loader's faults, so one campaign collects every category instead
# of stopping at the first; hangs and memory blow-ups are left to the
# engine's -timeout and -rss_limit_mb, and the runner files them as the
# categories `hang` and `out-of-memory`.
#
# Reject or crash: the one rule of validator/harness/rejection.py, for a callable's
# exception and for a command's exit alike, so a loader gets the same
# verdict here and in `stcheck conformance --impl`, and the same crash
# categories whichever way it is run.  ValueError and its subclasses,
# StcheckError, SafetensorError, SafetensorsParsingError and the types named
# with --reject-exception are rejections; KeyError, IndexError, TypeError,
# struct.error, RecursionError and every other exception are crashes.  A
# command runs through validator/harness/command.py (bounded output, its own
# process group, killed at the timeout).  A --persistent command is one
# harness process that serves many inputs over the frame protocol of
# validator/fuzz/persistent.py; a harness that dies is a crash, one that
# does not answer in time a hang, and the next input starts a new one.
# ruff: noqa: PTH103, PTH105, PTH107, PTH112, PTH118, PTH119, PTH123, PTH208
# Paths: os.path and open(), like the rest of the package.
from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import re
import shlex
import stat
import sys
import tempfile
import time
import traceback
from typing import TYPE_CHECKING, Any, Final

from validator._display import escape_line
from validator._rules import Profile
from validator._validate import validate
from validator.fuzz import persistent as _persistent
from validator.fuzz import triage
from validator.fuzz.targets import numpy_representable, reference_load, tensor_bytes, tie_classes
from validator.harness import command as _command
from validator.harness.rejection import REJECT_EXIT, is_rejection, judge_exit

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from validator._findings import Report

__all__ = [
    "CMD_TIMEOUT_S",
    "DESCRIPTIONS",
    "LoaderUnderTest",
    "Outcome",
    "add_counts",
    "category_file",
    "cause_of",
    "cause_path",
    "classify",
    "count_findings",
    "examine",
    "make_target",
    "read_findings",
    "read_note",
    "record",
    "reproducer_path",
    "shrink",
]

CMD_TIMEOUT_S: Final = 5.0  # below the engine's default -timeout of 10 s
_TRACE_LINES: Final = (20, 60)  # a long traceback keeps its first and last lines
_FLUSH_S: Final = 2.0  # how often a campaign writes the counts of causes seen again
_NUMBER: Final = re.compile(r"\d+")

# What each category means, for the report.
DESCRIPTIONS: Final = {
    "accepts-invalid": "accepts a file that safetensors 0.8.0 rejects",
    "rejects-valid": "rejects a file that safetensors 0.8.0 accepts",
    "crash": "raises or exits with something other than a clean rejection",
    "bytes-mismatch": "returns tensor bytes that differ from the file's declared range",
    "tensor-set-mismatch": "returns other tensor names than the header declares",
    "hang": "runs past the time limit",
    "out-of-memory": "exceeds the memory limit",
    "oracle-disagreement": "our reference profile and safetensors 0.8.0 disagree (a stcheck bug: please report it)",
}


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What the loader did with one input."""

    accepted: bool
    crashed: bool = False
    detail: str = ""
    tensors: Mapping[str, Any] | None = None
    kind: str = ""  # for a crash: the exception class, signal-NAME, exit-N, a sanitizer, or hang
    trace: str = ""  # the loader's traceback (a callable) or its stderr (a command), for --replay


@dataclasses.dataclass
class LoaderUnderTest:
    """A user's loader: a callable or a command template with ``{path}``."""

    function: Callable[[Any], Any] | None = None
    command: str | None = None
    pass_bytes: bool = False
    clean: tuple[type[BaseException], ...] = ()  # documented rejection types beyond the default ones
    timeout_s: float = CMD_TIMEOUT_S
    reject_exit: int = REJECT_EXIT  # a command's exit code for "rejected"
    reject_names: tuple[str, ...] = ()  # MODULE:NAME rejection types, matched in a command's traceback
    persistent: bool = False  # the command is a harness serving the frame protocol
    _session: _persistent.Session | None = dataclasses.field(default=None, repr=False)
    _started: bytes | None = dataclasses.field(default=None, repr=False)

    def start(self, data: bytes) -> None:
        """Hand ``data`` to a persistent harness now, so that it works while
        the caller judges the same input; run(data) then reads its answer.
        Nothing for the other kinds of loader."""
        if self.persistent:
            self.session().send(data)
            self._started = data

    def run(self, data: bytes) -> Outcome:
        if self.persistent:
            return self._ask(data)
        with tempfile.TemporaryDirectory(prefix="stcheck-loader-") as tmp:
            path = os.path.join(tmp, "input.safetensors")
            if self.command is not None or not self.pass_bytes:
                with open(path, "wb") as f:
                    f.write(data)
            if self.command is not None:
                return self._run_command(path)
            return self._call(data if self.pass_bytes else path)

    def _run_command(self, path: str) -> Outcome:
        """One run of the command, judged by the protocol of validator/harness/rejection.py."""
        argv = shlex.split(self.command.replace("{path}", shlex.quote(path)))  # type: ignore[union-attr]
        done = _command.run(argv, timeout=self.timeout_s)
        trace = (done.error or done.stderr).strip()
        if done.timed_out:
            return Outcome(
                accepted=False, crashed=True, detail=f"no exit within {self.timeout_s:g}s", kind="hang", trace=trace
            )
        verdict = judge_exit(
            done.rc, done.signal, done.error or done.stderr, reject_exit=self.reject_exit, documented=self.reject_names
        )
        if verdict.outcome == "crash":
            return Outcome(accepted=False, crashed=True, detail=verdict.detail, kind=verdict.kind, trace=trace)
        return Outcome(accepted=verdict.outcome == "accepted", detail=verdict.detail, trace=trace)

    def session(self) -> _persistent.Session:
        """The persistent harness (started at its first input)."""
        if self._session is None:
            assert self.command is not None
            self._session = _persistent.Session(shlex.split(self.command), self.timeout_s)
        return self._session

    def close(self) -> None:
        """End a persistent harness; nothing to do for the other kinds."""
        if self._session is not None:
            self._session.close()
            self._session = None

    def _ask(self, data: bytes) -> Outcome:
        """One input through the persistent harness (its answer, if start() sent it)."""
        started, self._started = self._started is data, None
        try:
            answer = self.session().answer() if started else self.session().ask(data)
        except _persistent.ProtocolError as exc:
            return Outcome(accepted=False, crashed=True, detail=str(exc), kind="protocol")
        if answer.verdict in ("crash", "hang"):
            return Outcome(accepted=False, crashed=True, detail=answer.detail, kind=answer.kind, trace=answer.trace)
        return Outcome(accepted=answer.verdict == "accept", detail=answer.detail)

    def _call(self, arg: object) -> Outcome:
        assert self.function is not None
        try:
            value = self.function(arg)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - classifying the loader's failures is the point
            trace = _their_traceback(exc)
            if is_rejection(exc, self.clean):
                return Outcome(accepted=False, detail=f"{_type_name(exc)}: {str(exc)[:200]}", trace=trace)
            name = _type_name(exc)
            return Outcome(accepted=False, crashed=True, detail=f"{name}: {str(exc)[:200]}", kind=name, trace=trace)
        tensors = value if hasattr(value, "keys") and hasattr(value, "__getitem__") else None
        return Outcome(accepted=True, tensors=tensors)


def _their_traceback(exc: BaseException) -> str:
    """The loader's traceback: its own frames, without this module's call into it."""
    tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
    lines = "".join(traceback.format_exception(type(exc), exc, tb)).rstrip().splitlines()
    head, tail = _TRACE_LINES
    if len(lines) > head + tail:
        lines = [*lines[:head], f"  [... {len(lines) - head - tail} lines left out ...]", *lines[-tail:]]
    return "\n".join(lines)


def _type_name(exc: BaseException) -> str:
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _subkind(slug: str, message: str) -> str:
    if slug == "offsets-not-contiguous":
        return "offsets-not-contiguous(hole)" if "unindexed" in message else "offsets-not-contiguous(overlap)"
    return slug


def _representable(report: Report) -> bool:
    """False for a file whose zero-element tensor numpy cannot shape: refusing it is fine."""
    return all(numpy_representable(t.shape, t.bits) for t in (report.tensors or {}).values())


def examine(
    loader: LoaderUnderTest, data: bytes, where: Callable[[str], str] | None = None
) -> tuple[list[tuple[str, str]], Outcome]:
    """The (category, detail) pairs for one input, and the loader's outcome.

    ``where`` names the file a finding's line points at, per category (the
    reproducer's path); without it the line says ``<bytes>``.
    """
    loader.start(data)  # a persistent harness works on it while the oracle does
    ref = validate(data, profile=Profile.REFERENCE)
    theirs, _ = reference_load(data)
    found: list[tuple[str, str]] = []
    if theirs != ref.reference_error and not {theirs, ref.reference_error} <= tie_classes(ref):
        found.append(("oracle-disagreement", f"reference profile {ref.reference_error}, safetensors {theirs}"))
    outcome = loader.run(data)
    first = ref.first_error
    if outcome.crashed:
        found.append(("hang" if outcome.kind == "hang" else f"crash:{outcome.kind}", outcome.detail))
    elif outcome.accepted and first is not None:
        category = f"accepts-invalid:{_subkind(first.slug, first.message)}"
        found.append((category, first.format(where(category)) if where else first.format()))
    elif not outcome.accepted and ref.valid and _representable(ref):
        reason = f": {outcome.detail}" if outcome.detail else ""
        found.append(("rejects-valid", f"the loader refuses a file safetensors accepts{reason}"))
    elif outcome.accepted and outcome.tensors is not None and ref.tensors is not None and ref.data_start is not None:
        if sorted(outcome.tensors) != sorted(ref.tensors):
            found.append(
                ("tensor-set-mismatch", f"loader {sorted(outcome.tensors)[:5]}, header {sorted(ref.tensors)[:5]}")
            )
        else:
            for name, info in ref.tensors.items():
                got = tensor_bytes(outcome.tensors[name])
                want = data[ref.data_start + info.begin : ref.data_start + info.end]
                if got != want:
                    found.append(
                        ("bytes-mismatch", f"tensor {name!r}: {len(got)} bytes returned, {len(want)} declared")
                    )
                    break
    return [(category, escape_line(detail)) for category, detail in found], outcome


def classify(loader: LoaderUnderTest, data: bytes, where: Callable[[str], str] | None = None) -> list[tuple[str, str]]:
    """The (category, detail) pairs for one input; empty when the loader behaves."""
    return examine(loader, data, where)[0]


def category_file(category: str) -> str:
    """A file-name-safe form of a category."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", category).strip("_")


def reproducer_path(out_dir: str, category: str) -> str:
    """Where the reproducer of ``category`` is kept in ``out_dir``."""
    return os.path.join(out_dir, category_file(category)) + ".safetensors"


def cause_of(category: str, detail: str, outcome: Outcome) -> str:
    """What tells apart the inputs of one class: its root cause, as far as it shows.

    The oracle's rule for accepts-invalid (the class itself); for a crash the
    crash site that validator/fuzz/triage.py reads from the loader's stderr or
    traceback (a stack hash of a sanitizer's, glibc's or Rust's frames, a UBSan
    site, an uncaught C++ exception, a sanitizer's summary, the innermost
    Python frame), else the signal or exit; for the rest the loader's own
    reason, its numbers written N so that one cause does not split by the
    sizes in its message.
    """
    if category.startswith("accepts-invalid:") or category == "hang":
        return category.rsplit(":", 1)[-1]
    if category.startswith("crash:"):
        site = triage.crash_cause(outcome.trace)
        if site is not None:
            return site
    reason = outcome.detail if category == "rejects-valid" and outcome.detail else detail  # the loader's own
    return _NUMBER.sub("N", escape_line(reason))[:160]


def shrink(
    loader: LoaderUnderTest,
    data: bytes,
    category: str,
    cause: str,
    *,
    attempts: int = triage.MINIMISE_ATTEMPTS,
    seconds: float = triage.MINIMISE_S,
) -> bytes:
    """``data`` minimised (validator/fuzz/triage.py) while the loader still shows ``category`` for ``cause``.

    Hangs and memory blow-ups are kept as they are: each try would cost the whole time limit.
    """
    if category in ("hang", "out-of-memory") or category.startswith("oracle-disagreement"):
        return data

    def keeps(candidate: bytes) -> bool:
        if category.startswith("crash:"):  # the loader alone decides a crash: no oracle to run
            outcome = loader.run(candidate)
            detail = escape_line(outcome.detail)
            return (
                outcome.crashed and f"crash:{outcome.kind}" == category and cause_of(category, detail, outcome) == cause
            )
        found, outcome = examine(loader, candidate)
        return any(c == category and cause_of(c, d, outcome) == cause for c, d in found)

    return triage.minimise(data, keeps, attempts=attempts, seconds=seconds).data


def cause_path(out_dir: str, category: str, cause: str) -> str:
    """Where the reproducer of one cause of ``category`` is kept."""
    tag = hashlib.sha1(cause.encode(), usedforsecurity=False).hexdigest()[:8]
    return os.path.join(out_dir, f"{category_file(category)}@{tag}.safetensors")


def record(out_dir: str, category: str, detail: str, data: bytes, *, cause: str | None = None, count: int = 1) -> None:
    """Keep ``data`` as the reproducer for ``category`` if it is the shortest so far,
    and for its ``cause`` within the class (counted ``count`` more times).

    Every file is written to a fresh temporary file and renamed over the
    name: a link planted there (by the loader under test, which can write to
    ``out_dir``) is replaced, never written through.
    """
    os.makedirs(out_dir, exist_ok=True)
    base = reproducer_path(out_dir, category).removesuffix(".safetensors")
    note = _note(base + ".json")
    causes: dict[str, dict[str, Any]] = dict(note.get("causes", {})) if note is not None else {}
    changed = False
    if cause is not None:
        entry = dict(causes.get(cause) or {"size": len(data) + 1, "count": 0})
        entry["count"] += count
        if len(data) < entry["size"]:
            path = cause_path(out_dir, category, cause)
            _replace(out_dir, path, data)
            entry.update(size=len(data), file=os.path.basename(path))
        causes[cause] = entry
        changed = True
    shorter = note is None or len(data) < note["size"] or not stat.S_ISREG(_lmode(base + ".safetensors"))
    if shorter:
        digest = hashlib.sha1(data, usedforsecurity=False).hexdigest()
        note = {"category": category, "detail": detail, "size": len(data), "sha1": digest}
        _replace(out_dir, base + ".safetensors", data)
    if shorter or changed:
        assert note is not None
        _replace(out_dir, base + ".json", json.dumps({**note, "causes": causes}).encode())


def add_counts(out_dir: str, category: str, counts: Mapping[str, int]) -> None:
    """Add to the counts of causes already recorded for ``category`` (no reproducer changes)."""
    base = reproducer_path(out_dir, category).removesuffix(".safetensors")
    note = _note(base + ".json")
    if note is None:
        return
    causes = dict(note.get("causes", {}))
    for cause, count in counts.items():
        if cause in causes:
            causes[cause] = {**causes[cause], "count": causes[cause]["count"] + count}
    _replace(out_dir, base + ".json", json.dumps({**note, "causes": causes}).encode())


def _replace(folder: str, path: str, data: bytes) -> None:
    """Write ``path`` as a new file (temporary name, then rename), whatever is at ``path`` now."""
    fd, tmp = tempfile.mkstemp(prefix=".stcheck-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def make_target(loader: LoaderUnderTest, out_dir: str) -> Callable[[bytes], None]:
    """The fuzz target: classify and record, never raise for the loader's faults."""

    # The shortest reproducer kept so far per class and per cause, as this
    # process knows it: most inputs repeat a known cause and are longer than
    # its reproducer, and then nothing touches the disk but a count, written
    # every few seconds.  record() still checks the files, which another job
    # may have shortened meanwhile.
    shortest: dict[tuple[str, str], int] = {}
    pending: dict[str, dict[str, int]] = {}
    flushed = [time.monotonic()]

    @functools.cache
    def where(category: str) -> str:
        return reproducer_path(out_dir, category)

    def target(data: bytes) -> None:
        found, outcome = examine(loader, data, where)
        for category, detail in found:
            cause = cause_of(category, detail, outcome)
            key = (category, cause)
            kept = data
            if key not in shortest:  # a cause new to this process: its reproducer, minimised
                kept = shrink(loader, data, category, cause)
            if len(kept) < shortest.get(key, sys.maxsize):
                record(out_dir, category, detail, kept, cause=cause, count=1 + pending.get(category, {}).pop(cause, 0))
                shortest[key] = len(kept)
            else:
                counts = pending.setdefault(category, {})
                counts[cause] = counts.get(cause, 0) + 1
        if pending and time.monotonic() - flushed[0] >= _FLUSH_S:
            flush()

    def flush() -> None:
        for category, counts in pending.items():
            add_counts(out_dir, category, counts)
        pending.clear()
        flushed[0] = time.monotonic()

    atexit.register(flush)  # the counts since the last flush, where the engine exits through Python
    return target


def count_findings(out_dir: str) -> int:
    """How many problem classes ``out_dir`` holds (cheap: one listing)."""
    try:
        return sum(1 for name in os.listdir(out_dir) if name.endswith(".json"))
    except OSError:
        return 0


def read_findings(out_dir: str, foreign: list[str] | None = None) -> list[dict[str, Any]]:
    """The recorded categories with their reproducer paths, sorted.

    A ``.json`` file that is not one of ours (a link, not a regular file, not
    our note, no reproducer beside it) is skipped, and its path added to
    ``foreign`` when given.
    """
    found: list[dict[str, Any]] = []
    if not os.path.isdir(out_dir):
        return found
    for name in sorted(os.listdir(out_dir)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(out_dir, name)
        entry = _note(path)
        reproducer = path[:-5] + ".safetensors"
        if entry is None or not stat.S_ISREG(_lmode(reproducer)):
            if foreign is not None:
                foreign.append(path)
            continue
        entry["path"] = reproducer
        entry["causes"] = _causes(out_dir, entry.get("causes"))
        found.append(entry)
    return found


def _causes(out_dir: str, causes: object) -> list[dict[str, Any]]:
    """A note's causes, most seen first, each with its reproducer's path (malformed ones left out)."""
    kept = []
    for cause, entry in (causes if isinstance(causes, dict) else {}).items():
        if isinstance(entry, dict) and isinstance(entry.get("count"), int) and isinstance(entry.get("file"), str):
            path = os.path.join(out_dir, os.path.basename(entry["file"]))
            kept.append({"cause": str(cause), "count": entry["count"], "size": entry.get("size"), "path": path})
    return sorted(kept, key=lambda c: (-c["count"], c["cause"]))


def read_note(reproducer: str) -> dict[str, Any] | None:
    """The note of a reproducer's class (its category, detail and size), or None."""
    base = reproducer.removesuffix(".safetensors")
    head, tail = os.path.split(base)
    return _note(os.path.join(head, tail.split("@", 1)[0]) + ".json")


def _lmode(path: str) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def _note(path: str) -> dict[str, Any] | None:
    """One of our ``.json`` notes, or None for anything else."""
    if not stat.S_ISREG(_lmode(path)):
        return None
    try:
        with open(path, "rb") as f:
            entry = json.loads(f.read(1 << 20))
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in ("category", "detail")):
        return None
    if not isinstance(entry.get("size"), int):
        return None
    return entry
