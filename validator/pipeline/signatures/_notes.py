# Strategy: the one line per verified signature that a run writes on
# stderr after its report: what was compared, what was left out or not
# covered, and how many findings stand against it.
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from validator.pipeline.signatures._model import SignedModel

__all__ = ["notes"]


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def notes(models: Sequence[SignedModel]) -> list[str]:
    """One line per verified signature: what was checked."""
    lines = []
    for m in models:
        if m.status not in {"verified", "mismatch"} or m.manifest is None:
            continue
        files = f"{m.matched} signed file{'s match' if m.matched != 1 else ' matches'}"
        left = [] if m.outcome is None else m.outcome.ignored
        if left:
            files += f"; {len(left)} left out ({_listed(left)})"
        uncovered = m.not_covered()
        if uncovered:
            files += f"; {len(uncovered)} not covered ({_listed(uncovered)})"
        bad = len(m.findings)
        tail = f"; {bad} finding{'s' if bad != 1 else ''} against it above" if bad else ""
        commit = m.commit or m.snapshot_commit()
        at = f" at commit {commit}" if commit else ""
        lines.append(f"{m.where}: signature {m.detail}{at} ({m.manifest.spec.label}); {files}{tail}")
    return lines
