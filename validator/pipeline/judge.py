# Strategy: the judge, the last stage of every run (check, inspect, scan and
# the library's vet()).  Every stage before it (the plan, the read, the
# walk's verdicts, the signatures) records raw findings: a result's items as
# the read made them, unjudged, plus its `pending` findings added after the
# read.  Here the policy is applied to them, once, in one place: the
# severity it sets, the rules it ignores (validator.config.policy).
from __future__ import annotations

from typing import TYPE_CHECKING

from validator.config.policy import ScanItem, apply_policy

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from validator._findings import Finding
    from validator.config.policy import Policy
    from validator.report.results import FileResult

__all__ = ["judge", "unjudged"]


def unjudged(findings: Iterable[Finding]) -> list[ScanItem]:
    """Findings as items before the judge: each at its rule's own severity."""
    return [ScanItem(finding, finding.severity) for finding in findings]


def judge(results: Sequence[FileResult], policy: Policy | None) -> None:
    """Apply the policy to each result's findings and its pending ones."""
    source = None if policy is None else policy.source
    for result in results:
        result.items = apply_policy([*(i.finding for i in result.items), *result.pending], policy)
        result.pending = []
        result.policy = source
