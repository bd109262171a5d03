# Strategy: the one place findings are created.  Check code calls
# ``Checker.add(slug, message, offset, ...)``; the checker looks the rule up in
# the catalogue, so no check repeats a code or a severity.  In "fast" mode
# (used while trying the C json fast path) any finding aborts the attempt, so
# that positions are computed only by the exact parser.
#
# A hostile header can repeat one defect millions of times (16 million
# duplicate keys fit in 100 MB).  Given a limit (validate() passes
# MAX_PER_RULE), the checker keeps the first findings of each rule up to it
# and only counts the rest, so memory stays proportional to the header with
# a small constant.  Without one (the scanner's default) it keeps them all.
from __future__ import annotations

from typing import Final

from validator._findings import Finding
from validator._rules import BY_SLUG

__all__ = ["MAX_PER_RULE", "Checker", "Retry", "make_finding"]

MAX_PER_RULE: Final = 1000


def make_finding(slug: str, message: str, offset: int | None = None, *, tensor: str | None = None) -> Finding:
    """One finding of the rule ``slug``, outside any check (a walk's link, a signature)."""
    return Finding(BY_SLUG[slug], message, offset, tensor, None)


class Retry(Exception):  # noqa: N818 - a control-flow signal, not an error
    """The fast path met something it cannot locate exactly."""


class Checker:
    """Collects findings in check order."""

    __slots__ = ("counts", "dropped", "fast", "findings", "limit")

    def __init__(self, *, fast: bool = False, limit: int | None = None) -> None:
        self.findings: list[Finding] = []
        self.fast = fast
        self.limit = limit
        self.counts: dict[str, int] = {}
        self.dropped: dict[str, int] = {}

    def add(
        self,
        slug: str,
        message: str,
        offset: int | None,
        *,
        tensor: str | None = None,
        json_path: str | None = None,
    ) -> None:
        if self.fast:
            raise Retry
        if self.limit is not None:
            seen = self.counts.get(slug, 0)
            self.counts[slug] = seen + 1
            if seen >= self.limit:
                self.dropped[slug] = self.dropped.get(slug, 0) + 1
                return
        self.findings.append(Finding(BY_SLUG[slug], message, offset, tensor, json_path))

    def merge(self, other: Checker) -> None:
        """Add another checker's findings and counts after this one's."""
        for finding in other.findings:
            slug = finding.rule.slug
            seen = self.counts.get(slug, 0)
            self.counts[slug] = seen + 1
            if self.limit is not None and seen >= self.limit:
                self.dropped[slug] = self.dropped.get(slug, 0) + 1
            else:
                self.findings.append(finding)
        for slug, count in other.dropped.items():
            self.counts[slug] = self.counts.get(slug, 0) + count
            self.dropped[slug] = self.dropped.get(slug, 0) + count
