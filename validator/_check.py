# Strategy: the one place findings are created.  Check code calls
# ``Checker.add(slug, message, offset, ...)``; the checker looks the rule up in
# the catalogue, so no check repeats a code or a severity.  In "fast" mode
# (used while trying the C json fast path) any finding aborts the attempt, so
# that positions are computed only by the exact parser.
from __future__ import annotations

from validator._findings import Finding
from validator._rules import BY_SLUG


class Retry(Exception):  # noqa: N818 - a control-flow signal, not an error
    """The fast path met something it cannot locate exactly."""


class Checker:
    """Collects findings in check order."""

    __slots__ = ("fast", "findings")

    def __init__(self, *, fast: bool = False) -> None:
        self.findings: list[Finding] = []
        self.fast = fast

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
        self.findings.append(Finding(BY_SLUG[slug], message, offset, tensor, json_path))
