# Strategy: the one place findings are created.  Check code calls
# ``Checker.add(slug, message, offset, ...)``; the checker looks the rule up in
# the catalogue, so no check repeats a code or a severity.  In "fast" mode
# (used while trying the C json fast path) any finding aborts the attempt, so
# that positions are computed only by the exact parser.
#
# A hostile header can repeat one defect millions of times (16 million
# duplicate keys fit in 100 MB).  The checker keeps the first
# MAX_PER_RULE findings of each rule and only counts the rest, so memory and
# time stay proportional to the header, with a small constant.
from __future__ import annotations

from typing import Final

from validator._findings import Finding
from validator._rules import BY_SLUG

MAX_PER_RULE: Final = 1000


class Retry(Exception):  # noqa: N818 - a control-flow signal, not an error
    """The fast path met something it cannot locate exactly."""


class Checker:
    """Collects findings in check order."""

    __slots__ = ("counts", "dropped", "fast", "findings")

    def __init__(self, *, fast: bool = False) -> None:
        self.findings: list[Finding] = []
        self.fast = fast
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
        seen = self.counts.get(slug, 0)
        self.counts[slug] = seen + 1
        if seen >= MAX_PER_RULE:
            self.dropped[slug] = self.dropped.get(slug, 0) + 1
            return
        self.findings.append(Finding(BY_SLUG[slug], message, offset, tensor, json_path))
