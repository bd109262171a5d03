# Strategy: the conformance harness's data: the status table, the corpus
# case, the implementation, the raw outcome and the classified result, and
# results.jsonl.  Each result gets one status:
#
#   expected              did what the corpus expects
#   should-have-rejected  accepted an n_ file (an unsafe accept)
#   should-have-accepted  rejected a y_ file (fails the gate too: a loader
#                         that loads nothing must not pass)
#   i-accepted/i-rejected an accept or reject of an i_ file
#   wrong-data            accepted, but returned bytes that are not the bytes
#                         of the declared range
#   crash                 an uncaught exception, a signal, a sanitizer report,
#                         or an exit other than 0 and the reject code (the
#                         command protocol: validator/harness/rejection.py)
#   timeout               killed by the per-file alarm
#   skipped               the implementation could not run
from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from validator._errors import StcheckError
from validator.harness.command import Completed
from validator.harness.rejection import REJECT_EXIT

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from pathlib import Path

__all__ = [
    "DEFAULT_MEMORY_MB",
    "DEFAULT_TIMEOUT_S",
    "FAILING",
    "SEVERITY",
    "STATUSES",
    "STATUS_TABLE",
    "Case",
    "ConformanceError",
    "Impl",
    "Raw",
    "Result",
    "Status",
    "impl_json",
    "read_jsonl",
    "totals",
    "worst",
    "write_jsonl",
]


class Status(NamedTuple):
    """One status and how it is judged and drawn."""

    name: str
    severity: int  # for "the most serious finding": higher is worse
    failing: bool  # fails `stcheck conformance --impl` as a CI gate
    colour: str  # the screenshot test looks for these exact RGB values
    label: str  # the legend
    short: str  # a cell


# name, severity, failing, colour, label, short
STATUS_TABLE: Final = tuple(
    Status(*row)
    for row in (
        ("expected", 0, False, "#3cb44b", "expected", "ok"),
        ("should-have-rejected", 3, True, "#ff7f00", "accepted an n_ file", "bad accept"),
        ("should-have-accepted", 2, True, "#ffd92f", "rejected a y_ file", "bad reject"),
        ("i-accepted", 1, False, "#9ecae1", "i_ accepted", "i acc."),
        ("i-rejected", 1, False, "#3182bd", "i_ rejected", "i rej."),
        ("wrong-data", 6, True, "#b000d8", "wrong data returned", "wrong data"),
        ("crash", 5, True, "#e41a1c", "crash", "crash"),
        ("timeout", 4, True, "#202020", "timeout", "timeout"),
        ("skipped", 0, False, "#d0d0e6", "not run", "not run"),
    )
)
STATUSES: Final = tuple(s.name for s in STATUS_TABLE)
SEVERITY: Final = MappingProxyType({s.name: s.severity for s in STATUS_TABLE})
FAILING: Final = frozenset(s.name for s in STATUS_TABLE if s.failing)
DEFAULT_MEMORY_MB: Final = 2048
DEFAULT_TIMEOUT_S: Final = 20.0


class ConformanceError(StcheckError):
    """A usage problem: missing corpus, bad implementations file."""


@dataclass(frozen=True)
class Case:
    """One corpus file and what the corpus expects of it."""

    file: str
    path: Path
    kind: str  # "y", "n" or "i"
    strict: str
    reference: str
    rules: tuple[str, ...]
    description: str
    source: dict[str, str]
    large: bool = False


@dataclass
class Impl:
    """One implementation: how to run it and whether it can run."""

    name: str
    argv: tuple[str, ...]  # per-file command; "{path}" is replaced
    serve_argv: tuple[str, ...] | None = None  # fork-server command, when the adapter has one
    probe_argv: tuple[str, ...] | None = None
    env: dict[str, str] = field(default_factory=dict)
    memory_mb: int = DEFAULT_MEMORY_MB
    timeout_s: float = DEFAULT_TIMEOUT_S
    version: str | None = None
    expect_version: str | None = None
    install: str = ""
    notes: str = ""
    skip_reason: str | None = None
    cwd: str | None = None  # run the adapter here and pass paths relative to it
    reject_exit: int = REJECT_EXIT  # the exit code that means "rejected" (validator/harness/rejection.py)
    reject_names: tuple[str, ...] = ()  # MODULE:NAME types a command's traceback may name as rejections
    fuzz_argv: tuple[str, ...] | None = None  # the frame-protocol harness a fuzz campaign drives, if any


@dataclass
class Result:
    """One implementation's raw outcome on one file, and its status."""

    impl: str
    file: str
    status: str
    rc: int | None = None
    signal: int | None = None
    seconds: float = 0.0
    detail: str = ""
    tensors: list[dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "result",
            "implementation": self.impl,
            "file": self.file,
            "status": self.status,
            "rc": self.rc,
            "signal": self.signal,
            "seconds": round(self.seconds, 3),
            "detail": self.detail,
        }


# What one run of a loader left (exit code or signal, bounded output): the
# command runner's own record, so the two cannot drift apart.
Raw = Completed


def totals(results: Iterable[Result]) -> dict[str, dict[str, int]]:
    """Per implementation: count of each status."""
    out: dict[str, dict[str, int]] = {}
    for r in results:
        row = out.setdefault(r.impl, dict.fromkeys(STATUSES, 0))
        row[r.status] += 1
    return out


def worst(results: Iterable[Result]) -> dict[str, Result]:
    """Per implementation: its most serious result (first file among equals)."""
    best: dict[str, Result] = {}
    for r in results:
        cur = best.get(r.impl)
        if cur is None or SEVERITY[r.status] > SEVERITY[cur.status]:
            best[r.impl] = r
    return best


def impl_json(impl: Impl) -> dict[str, Any]:
    return {
        "type": "implementation",
        "implementation": impl.name,
        "version": impl.version,
        "skipped": impl.skip_reason,
        "notes": impl.notes,
        "memory_mb": impl.memory_mb,
        "timeout_s": impl.timeout_s,
    }


def write_jsonl(
    path: Path, impls: Sequence[Impl], results: Sequence[Result], extra: Sequence[dict[str, Any]] = ()
) -> None:
    """results.jsonl: the implementations, their results, then `extra` lines (the fuzz campaigns)."""
    with path.open("w", encoding="utf-8") as f:
        for impl in impls:
            f.write(json.dumps(impl_json(impl), ensure_ascii=False) + "\n")
        for r in results:
            f.write(json.dumps(r.to_json(), ensure_ascii=False) + "\n")
        for doc in extra:
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")


def read_jsonl(path: Path) -> tuple[list[Impl], list[Result]]:
    """Implementations and results back from a results.jsonl file."""
    impls: list[Impl] = []
    results: list[Result] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        doc = json.loads(line)
        if doc.get("type") == "implementation":
            impls.append(
                Impl(
                    name=doc["implementation"],
                    argv=(),
                    version=doc.get("version"),
                    skip_reason=doc.get("skipped"),
                    notes=doc.get("notes") or "",
                    memory_mb=int(doc.get("memory_mb") or DEFAULT_MEMORY_MB),
                    timeout_s=float(doc.get("timeout_s") or DEFAULT_TIMEOUT_S),
                )
            )
        elif doc.get("type") == "result":
            results.append(
                Result(
                    impl=doc["implementation"],
                    file=doc["file"],
                    status=doc["status"],
                    rc=doc.get("rc"),
                    signal=doc.get("signal"),
                    seconds=float(doc.get("seconds") or 0),
                    detail=doc.get("detail") or "",
                )
            )
    return impls, results
