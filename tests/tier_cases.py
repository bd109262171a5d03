"""What the tier tests share: small files, and the check that every tier gives the tree path's report."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from _stbytes import at, data_start

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


# --- canonical headers that break one rule ---------------------------------
# One case per way a header of canonical shape (validator._tiers: what the
# canonical tier's patterns take) breaks a rule the tier declares it proves
# (PROVES), beside its twin: the same header with the defect mended, which
# the tier answers as clean, so the case is canonical but for its defect.
# offset and tensor are the exact first finding under the strict profile.


@dataclass(frozen=True)
class Break:
    id: str
    slug: str
    blob: bytes
    twin: bytes
    offset: int
    tensor: str | None


def _e(name: str, dtype: str = "F32", shape: str = "1", offsets: str = "0,4") -> str:
    """One canonical entry, its shape and offsets written as given."""
    return f'"{name}":{{"dtype":"{dtype}","shape":[{shape}],"data_offsets":[{offsets}]}}'


def _break(
    id_: str,
    slug: str,
    header: str | bytes,
    twin: str,
    data: bytes = b"\0" * 4,
    *,
    at_text: str | bytes = "",
    nth: int = 0,
    at_data: int | None = None,
    tensor: str | None = None,
    twin_data: bytes | None = None,
) -> Break:
    """The finding is at the ``nth`` ``at_text`` of the file, or ``at_data`` bytes into the data region."""
    blob = _file(header, data)
    offset = at(blob, at_text, nth) if at_data is None else data_start(blob) + at_data
    return Break(id_, slug, blob, _file(twin, data if twin_data is None else twin_data), offset, tensor)


def _one(entry: str) -> str:
    return "{" + entry + "}"


_T = _one(_e("t"))
_META = '{"__metadata__":'

CANONICAL_BREAKS: Final = (
    # Header bytes and JSON text.
    _break("name-byte-ff", "header-not-utf8", _one(_e("a\xff")).encode("latin-1"), _one(_e("ab")), at_text=b"\xff"),
    _break("shape-trailing-comma", "json-syntax", _one(_e("t", shape="1,")), _T, at_text="],"),
    _break(
        "metadata-128-levels",  # the header object, the metadata map and 126 arrays
        "json-depth",
        _META + '{"a":' + "[" * 126 + "]" * 126 + "}," + _e("t") + "}",
        _META + '{"a":"b"},' + _e("t") + "}",
        at_text="[]",
    ),
    _break("offset-leading-zero", "json-number", _one(_e("t", offsets="00,4")), _T, at_text="00"),
    _break("shape-leading-zero", "json-number", _one(_e("t", shape="01")), _T, at_text="01"),
    _break(
        "tensor-named-metadata-after-metadata",
        "duplicate-field",
        _META + '{"k":"v"},' + _e("__metadata__") + "}",
        _META + '{"k":"v"},' + _e("t") + "}",
        at_text='"__metadata__"',
        nth=1,
    ),
    _break(
        "tensor-name-twice",
        "duplicate-key",
        "{" + _e("t") + "," + _e("t", offsets="4,8") + "}",
        "{" + _e("t") + "," + _e("u", offsets="4,8") + "}",
        b"\0" * 8,
        at_text='"t"',
        nth=1,
        tensor="t",
    ),
    _break(
        "metadata-key-twice",
        "duplicate-key",
        _META + '{"k":"1","k":"2"},' + _e("t") + "}",
        _META + '{"k":"1","l":"2"},' + _e("t") + "}",
        at_text='"k"',
        nth=1,
    ),
    # Header object, metadata and tensor entries.
    _break(
        "metadata-value-number",
        "metadata-invalid",
        _META + '{"k":1},' + _e("t") + "}",
        _META + '{"k":"1"},' + _e("t") + "}",
        at_text="1}",
    ),
    _break(
        "metadata-null", "metadata-null", _META + "null," + _e("t") + "}", _META + "{}," + _e("t") + "}", at_text="null"
    ),
    _break("dtype-F33", "dtype-unknown", _one(_e("t", dtype="F33")), _T, at_text='"F33"', tensor="t"),
    _break("shape-2^64", "shape-invalid", _one(_e("t", shape=str(2**64))), _T, at_text=str(2**64), tensor="t"),
    _break("offset-2^64", "offsets-invalid", _one(_e("t", offsets=f"0,{2**64}")), _T, at_text=str(2**64), tensor="t"),
    _break(
        "bidi-name", "tensor-name-suspicious", _one(_e("a\u202eb")), _one(_e("ab")), at_text='"a', tensor="a\u202eb"
    ),
    _break("empty-name", "tensor-name-suspicious", _one(_e("")), _one(_e("a")), at_text='""', tensor=""),
    # Layout of the data region.
    _break(
        "hole-between-tensors",
        "offsets-not-contiguous",
        "{" + _e("a") + "," + _e("b", offsets="8,12") + "}",
        "{" + _e("a") + "," + _e("b", offsets="4,8") + "}",
        b"\0" * 12,
        at_data=4,
        tensor="b",
        twin_data=b"\0" * 8,
    ),
    _break("reversed-offsets", "offsets-reversed", _one(_e("t", offsets="4,0")), _T, at_data=4, tensor="t"),
    _break(
        "element-count-overflow",
        "size-overflow",
        _one(_e("t", shape="4294967296,4294967296")),
        _T,
        at_data=0,
        tensor="t",
    ),
    _break(
        "one-f4-element",
        "subbyte-misaligned",
        _one(_e("t", "F4", "1", "0,1")),
        _one(_e("t", "F4", "2", "0,1")),
        b"\0",
        at_data=0,
        tensor="t",
    ),
    _break("shape-needs-8-bytes", "byte-length-mismatch", _one(_e("t", shape="2")), _T, at_data=0, tensor="t"),
    _break("one-trailing-byte", "buffer-trailing-bytes", _T, _T, b"\0" * 5, at_data=4, twin_data=b"\0" * 4),
    _break("one-byte-short", "buffer-truncated", _T, _T, b"\0" * 3, at_data=3, tensor="t", twin_data=b"\0" * 4),
    _break(
        "f32-after-one-byte",
        "tensor-unaligned",
        "{" + _e("a", "U8", "1", "0,1") + "," + _e("b", offsets="1,5") + "}",
        "{" + _e("a", "U8", "4", "0,4") + "," + _e("b", offsets="4,8") + "}",
        b"\0" * 5,
        at_data=1,
        tensor="b",
        twin_data=b"\0" * 8,
    ),
)
