# Strategy: the dtype table.  The names and their bit widths are those of the
# `Dtype` enum of safetensors 0.8.0; names are case-sensitive.
from __future__ import annotations

from types import MappingProxyType
from typing import Final

# name -> bits per element, in the order the reference declares them.
DTYPE_BITS: Final = MappingProxyType(
    {
        "BOOL": 8,
        "F4": 4,
        "F6_E2M3": 6,
        "F6_E3M2": 6,
        "U8": 8,
        "I8": 8,
        "F8_E5M2": 8,
        "F8_E4M3": 8,
        "F8_E8M0": 8,
        "F8_E4M3FNUZ": 8,
        "F8_E5M2FNUZ": 8,
        "I16": 16,
        "U16": 16,
        "F16": 16,
        "BF16": 16,
        "I32": 32,
        "U32": 32,
        "F32": 32,
        "C64": 64,
        "F64": 64,
        "I64": 64,
        "U64": 64,
    },
)
DTYPES: Final = tuple(DTYPE_BITS)


def element_bytes(dtype: str) -> int | None:
    """Bytes per element, or None for the sub-byte dtypes (F4, F6_*)."""
    bits = DTYPE_BITS[dtype]
    return bits // 8 if bits % 8 == 0 else None
