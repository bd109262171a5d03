# Strategy: the walker's verdicts in a scan's results.  The folder walk
# (validator.sources.walk) judges every file that is not a safetensors file or an
# index by its name and its first bytes (validator.sources.kinds), and reports the
# links it followed out of the root or cut as loops.  Those files are still
# scan jobs (so that --checksums and --hf-cache verify their digests), read
# by the engine without validation; their kind and the walker's findings
# are attached here, after the scan and after any results cache, so they
# are recomputed on every run and never stored.
from __future__ import annotations

from typing import TYPE_CHECKING

from validator.config.policy import apply_policy
from validator.report.results import FileResult

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from validator._findings import Finding
    from validator.config.policy import Policy
    from validator.sources.kinds import Other


def link_result(
    path: str, finding: Finding, profile: str, policy: Policy | None, model: str | None = None
) -> FileResult:
    """A link the walk flagged (link-leaves-root, link-loop), as a result of its own."""
    return FileResult(
        path=path,
        model=model,
        kind="link",
        file_size=0,  # the link itself holds no bytes to judge
        items=apply_policy([finding], policy),
        profile=profile,
        policy=None if policy is None else policy.source,
    )


def other_result(other: Other, profile: str, policy: Policy | None) -> FileResult:
    """An other file that is not read as a scan job (the checksum list itself)."""
    return FileResult(
        path=other.path,
        kind="other",
        file_size=other.size,
        items=apply_policy(other.findings, policy),
        profile=profile,
        policy=None if policy is None else policy.source,
        file_kind=other.kind,
        pickle=other.pickle,
    )


def attach(results: Sequence[FileResult], others: Mapping[str, Other], policy: Policy | None) -> None:
    """Give each other file's result its kind and the walker's findings.

    A hub-cache blob stays ``kind: "blob"`` (it was verified against its
    name); a file of a folder becomes ``kind: "other"``."""
    if not others:
        return
    for result in results:
        # A link's own result keeps its kind: one_entry_per_path folds it
        # into the file it names, which gets the verdict here.
        other = None if result.kind == "link" else others.get(result.path)
        if other is None:
            continue
        result.file_kind = other.kind
        result.pickle = other.pickle
        if result.kind != "blob" or result.model is None:
            result.kind = "other"
        result.items = [*apply_policy(other.findings, policy), *result.items]


def one_entry_per_path(results: Sequence[FileResult]) -> list[FileResult]:
    """Every finding belongs to one target, and each path has one entry: a
    link finding (a link that leaves the root, a loop) joins the result of
    the file the link names, when that file was read too; the file keeps its
    place, and the link's findings come first."""
    read = {r.path: r for r in results if r.kind != "link"}
    out = []
    for result in results:
        target = read.get(result.path) if result.kind == "link" else None
        if target is None:
            out.append(result)
            continue
        target.items = [*result.items, *target.items]
        target.not_listed += result.not_listed
    return out
