# Strategy: what every fuzzing engine shares, and the one interface they
# present to the campaign (validator/fuzz/campaign.py).  An engine is a
# module with two functions:
#
#     problem(config) -> str | None      why it cannot run this campaign (one line), checked first
#     run(config, out) -> Summary        the campaign itself, progress lines through ``out``
#
# The engines (supervisor: atheris/libFuzzer; persistent: atheris over a
# harness serving the frame protocol; aflpp: AFL++ over a loader binary)
# import this module and the campaign's configuration, never each other's
# internals.  The summary, the saved finding and the walk over inputs to
# replay live here for that reason.
# ruff: noqa: PTH112, PTH118
# Paths: os.path, like the rest of the package.
from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Final, Protocol, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Callable

    from validator.fuzz.config import CampaignConfig

__all__ = [
    "Engine",
    "EngineError",
    "Finding",
    "Missing",
    "Problem",
    "Summary",
    "children_cpu",
    "last_lines",
    "replay_paths",
]

SIDE_FILES: Final = (".cmd", ".log", ".xfail", ".md", ".json", ".txt")


@dataclasses.dataclass(frozen=True)
class Missing:
    """A tool the engine needs that is not installed; the command line adds how to install ``extra``."""

    message: str
    extra: str | None = None  # the package extra that installs it, or None when ``message`` says how

    def __str__(self) -> str:
        return self.message


class EngineError(Exception):
    """The engine could not run the campaign (one line, for people)."""


Problem: TypeAlias = str | Missing  # why an engine cannot run a campaign


class Engine(Protocol):
    """A fuzzing engine, as the campaign drives it (a module satisfies this)."""

    def problem(self, config: CampaignConfig) -> Problem | None:
        """Why this engine cannot run ``config`` (one line, for people), or None."""

    def run(self, config: CampaignConfig, out: Callable[[str], None]) -> Summary:
        """Run the campaign; print progress through ``out``; return its summary."""


@dataclasses.dataclass
class Finding:
    """One saved failing input."""

    kind: str  # crash, timeout, oom, ...
    signature: str
    path: str
    size: int
    reproduce: str
    repeats: int = 1


@dataclasses.dataclass
class Summary:
    """What a campaign did."""

    target: str
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    execs: int = 0
    coverage: int = 0
    coverage_label: str = "coverage"  # what `coverage` counts: "oracle coverage" or "loader edges"
    features: int = 0
    corpus: int = 0
    findings: list[Finding] = dataclasses.field(default_factory=list)
    found: int = 0  # findings, or for loader-under-test the problem classes recorded in its --out
    engine_said: str = ""  # the last lines of the last engine process, shown when it never ran an input
    instances: int = 1  # engine processes that ran side by side (--jobs)

    @property
    def execs_per_s(self) -> float:
        """Executions per wall-clock second, all jobs together."""
        return self.execs / self.seconds if self.seconds else 0.0

    @property
    def execs_per_cpu_s(self) -> float:
        """Executions per CPU second of the engine processes: the one-core rate, whatever the load."""
        return self.execs / self.cpu_seconds if self.cpu_seconds else 0.0


def replay_paths(paths: list[str]) -> list[str]:
    """Files under ``paths`` that are inputs (side files such as .cmd and .log skipped)."""
    found: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs.sort()
                found.extend(os.path.join(root, f) for f in sorted(files) if not f.endswith(SIDE_FILES))
        else:
            found.append(path)
    return found


def last_lines(output: str, count: int = 12) -> str:
    """What an engine process said last, without libFuzzer's progress and INFO lines."""
    lines = [line for line in output.splitlines() if line.strip() and not line.startswith(("#", "INFO:"))]
    return "\n".join(lines[-count:])


def children_cpu() -> float:
    """CPU seconds used by finished child processes (engines, loaders and minimisers)."""
    import resource  # noqa: PLC0415 - POSIX only, and only where a campaign runs

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
