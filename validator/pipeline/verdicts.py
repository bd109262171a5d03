# Strategy: the walker's verdicts in a run's results.  The folder walk
# (validator.sources.walk) judges every file that is not a safetensors file
# or an index by its name and its first bytes (validator.sources.kinds), and
# flags the links it followed out of the root or cut as loops.  In a scan
# those other files are still read (so that --checksums and --hf-cache
# verify their digests), by the engine without validation; their kind and
# the walker's findings are taken into their results here, after the read
# and after any results cache, so they are recomputed on every run and never
# stored.  A link's finding goes on the result of the file it names, within
# the one target that names both: one path, one entry.
from __future__ import annotations

from typing import TYPE_CHECKING

from validator.pipeline.judge import unjudged
from validator.report.results import FileResult

if TYPE_CHECKING:
    from collections.abc import Mapping

    from validator._findings import Finding
    from validator.sources.kinds import Other

__all__ = ["link_result", "other_result", "take_verdicts"]


def link_result(path: str, finding: Finding, profile: str, model: str | None = None) -> FileResult:
    """A link the walk flagged (link-leaves-root, link-loop) that names no
    file read on its own, as a result of its own."""
    return FileResult(
        path=path,
        model=model,
        kind="link",
        file_size=0,  # the link itself holds no bytes to judge
        items=unjudged([finding]),
        profile=profile,
    )


def other_result(other: Other, profile: str) -> FileResult:
    """An other file that is not read as a scan job (check, inspect, the checksum list itself)."""
    return FileResult(
        path=other.path,
        kind="other",
        file_size=other.size,
        items=unjudged(other.findings),
        profile=profile,
        file_kind=other.kind,
        pickle=other.pickle,
    )


def take_verdicts(
    results: list[FileResult], verdicts: Mapping[str, Other], via: Mapping[str, Finding]
) -> list[FileResult]:
    """One target's results, each other file's with its kind and the
    walker's findings, and each file reached through a flagged link with
    the link's finding first.

    A hub-cache blob stays ``kind: "blob"`` (it was verified against its
    name); a file of a folder becomes ``kind: "other"``."""
    if not verdicts and not via:
        return results
    for result in results:
        other = verdicts.get(result.path)
        if other is not None:
            result.file_kind = other.kind
            result.pickle = other.pickle
            if result.kind != "blob" or result.model is None:
                result.kind = "other"
            result.items = [*unjudged(other.findings), *result.items]
        link = via.get(result.path)
        if link is not None:
            result.items = [*unjudged([link]), *result.items]
    return results
