# Strategy: one finding per rule for defects repeated tensor after tensor.
# A file whose 20 tensors all start unaligned, or a scan that finds 1.45
# million all-zero tensors, should read as one finding that counts them and
# names the first few, not as thousands of lines.  Grouping is presentation:
# validate() keeps its per-tensor findings; the command line and the scan
# reports group them.  The grouped finding keeps the rule (so the severity,
# the code and any policy setting are unchanged), the offset of the first
# occurrence, and the first occurrence's own message.  Every command
# (check, inspect, scan, download) groups with group_per_tensor and its
# default, `groupable`, so that one file reads the same in each.
from __future__ import annotations

from typing import TYPE_CHECKING, Final

from validator._findings import Finding
from validator._rules import Severity

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

__all__ = ["GROUPED_REGIONS", "NAMED", "group_per_tensor", "groupable"]

NAMED: Final = 3  # tensors named in a grouped message; up to this many stay separate findings
# Regions whose findings are grouped whatever their severity (a policy may
# raise tensor-all-zero or a dtype rule to an error, tensor after tensor).
GROUPED_REGIONS: Final = frozenset({"deep", "policy"})


def groupable(finding: Finding) -> bool:
    """What every command groups: warnings (an error's every place matters
    to an editor), and the deep and policy rules at any severity."""
    return finding.severity is Severity.WARNING or finding.rule.region in GROUPED_REGIONS


def group_per_tensor(
    findings: Iterable[Finding],
    *,
    not_kept: Mapping[str, int] | None = None,
    groupable: Callable[[Finding], bool] = groupable,
) -> list[Finding]:
    """Merge the findings of one rule that each name a tensor, when there are more than NAMED.

    Only findings for which ``groupable`` is true are merged (by default,
    warnings and the deep and policy rules).
    ``not_kept`` counts, per slug, findings a per-rule cap dropped before
    they got here; they are included in the group's count.  The order of
    the findings is kept: a group stands where its first member stood.
    """
    items = list(findings)
    extra = dict(not_kept or {})
    by_slug: dict[str, list[Finding]] = {}
    for f in items:
        if f.tensor is not None and groupable(f):
            by_slug.setdefault(f.slug, []).append(f)
    grouped = {slug for slug, fs in by_slug.items() if len(fs) + extra.get(slug, 0) > NAMED}
    if not grouped:
        return items
    out: list[Finding] = []
    for f in items:
        if f.tensor is None or f.slug not in grouped or not groupable(f):
            out.append(f)
        elif f is by_slug[f.slug][0]:
            out.append(_group(by_slug[f.slug], extra.get(f.slug, 0)))
    return out


def _group(members: list[Finding], dropped: int) -> Finding:
    first = members[0]
    total = len(members) + dropped
    names = [repr(f.tensor) for f in members[:NAMED]]
    more = total - len(names)
    listed = ", ".join(names) + (f" and {more} more" if more else "")
    message = f"{total} tensors ({listed}): {first.rule.title}; the first: {first.message}"
    return Finding(first.rule, message, first.offset, None, None, first.path)
