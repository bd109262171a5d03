"""What the tier tests share: small files, and the check that every tier gives the tree path's report."""

from __future__ import annotations

import struct

from validator._rules import Profile
from validator._tiers import Tier
from validator._validate import check_buffer

ENTRY = '"{}":{{"dtype":"F32","shape":[1],"data_offsets":[{},{}]}}'


def _file(header: str | bytes, data: bytes = b"") -> bytes:
    raw = header.encode() if isinstance(header, str) else header
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + data


def _entries_text(count: int, name: str = "t{}") -> str:
    return ",".join(ENTRY.format(name.format(i), 4 * i, 4 * i + 4) for i in range(count))


def _run(blob: bytes, profile: str, tiers: Tier) -> tuple[Tier | None, tuple[object, ...]]:
    answered: list[Tier] = []
    r = check_buffer(blob[:8], lambda n: blob[8 : 8 + n], len(blob), Profile(profile), tiers=tiers, answered=answered)
    tensors = None if r.tensors is None else dict(r.tensors.items())
    metadata = None if r.metadata is None else dict(r.metadata)
    return (answered[0] if answered else None), (r.findings, tensors, metadata, r.valid, r.suppressed)


def _same_everywhere(blob: bytes) -> Tier | None:
    """Assert every tier gives the tree path's report; return the tier that answered by default."""
    tier = None
    for profile in ("strict", "reference"):
        _, oracle = _run(blob, profile, Tier.NONE)
        for tiers in (Tier.SCAN, Tier.CANONICAL, Tier.ALL):
            answered, got = _run(blob, profile, tiers)
            assert got == oracle, (profile, tiers, blob[:200])
            if tiers is Tier.ALL:
                tier = answered
    return tier
