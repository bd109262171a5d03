# Strategy: the dtype table, the one place every fact about a dtype is
# written.  The names, their order and their bit widths are those of the
# `Dtype` enum of safetensors 0.8.0; names are case-sensitive.  The numpy
# and torch maps (io/dtypes_np.py, io/dtypes_torch.py) and the deep scan's
# NaN/Inf classes (read/deep.py) are derived from it.
from __future__ import annotations

from types import MappingProxyType
from typing import Final, Literal, NamedTuple

__all__ = ["BY_NAME", "DTYPES", "DTYPE_BITS", "SUBBYTE", "TABLE", "Dtype", "element_bytes"]


class Dtype(NamedTuple):
    """One safetensors dtype and what other libraries call it."""

    name: str
    bits: int
    kind: Literal["bool", "uint", "int", "float", "complex"]
    numpy: str
    """The numpy or ml_dtypes type, as ``module.attribute``; for a sub-byte
    dtype, the one-byte type an unpacked element takes."""
    torch: str | None
    """The torch dtype's attribute name; for a sub-byte dtype, torch's packed
    type (F4: ``float4_e2m1fn_x2``, two elements a byte), or None."""
    specials: tuple[str, int, int] | None
    """How NaN and Inf are encoded, on the unsigned-integer view of one
    element (of one part, for complex): (class, magnitude mask, first
    special pattern).  "ieee": a magnitude equal to the pattern is Inf, above
    it NaN.  "nan-from": a magnitude at or above the pattern is NaN, there is
    no Inf.  "nan-eq": the pattern itself is the only NaN, there is no Inf.
    None: no NaN or Inf encodings (integers, F4, F6_*)."""


_IEEE16: Final = ("ieee", 0x7FFF, 0x7C00)
_IEEE32: Final = ("ieee", 0x7FFF_FFFF, 0x7F80_0000)

# In the order the reference declares them.  The float8 encodings are those
# of ml_dtypes; safetensors F8_E4M3 is the finite-only "fn" variant.
TABLE: Final = (
    Dtype("BOOL", 8, "bool", "numpy.bool_", "bool", None),
    Dtype("F4", 4, "float", "ml_dtypes.float4_e2m1fn", "float4_e2m1fn_x2", None),
    Dtype("F6_E2M3", 6, "float", "ml_dtypes.float6_e2m3fn", None, None),
    Dtype("F6_E3M2", 6, "float", "ml_dtypes.float6_e3m2fn", None, None),
    Dtype("U8", 8, "uint", "numpy.uint8", "uint8", None),
    Dtype("I8", 8, "int", "numpy.int8", "int8", None),
    Dtype("F8_E5M2", 8, "float", "ml_dtypes.float8_e5m2", "float8_e5m2", ("ieee", 0x7F, 0x7C)),
    Dtype("F8_E4M3", 8, "float", "ml_dtypes.float8_e4m3fn", "float8_e4m3fn", ("nan-from", 0x7F, 0x7F)),
    Dtype("F8_E8M0", 8, "float", "ml_dtypes.float8_e8m0fnu", "float8_e8m0fnu", ("nan-from", 0xFF, 0xFF)),
    Dtype("F8_E4M3FNUZ", 8, "float", "ml_dtypes.float8_e4m3fnuz", "float8_e4m3fnuz", ("nan-eq", 0xFF, 0x80)),
    Dtype("F8_E5M2FNUZ", 8, "float", "ml_dtypes.float8_e5m2fnuz", "float8_e5m2fnuz", ("nan-eq", 0xFF, 0x80)),
    Dtype("I16", 16, "int", "numpy.int16", "int16", None),
    Dtype("U16", 16, "uint", "numpy.uint16", "uint16", None),
    Dtype("F16", 16, "float", "numpy.float16", "float16", _IEEE16),
    Dtype("BF16", 16, "float", "ml_dtypes.bfloat16", "bfloat16", ("ieee", 0x7FFF, 0x7F80)),
    Dtype("I32", 32, "int", "numpy.int32", "int32", None),
    Dtype("U32", 32, "uint", "numpy.uint32", "uint32", None),
    Dtype("F32", 32, "float", "numpy.float32", "float32", _IEEE32),
    Dtype("C64", 64, "complex", "numpy.complex64", "complex64", _IEEE32),
    Dtype("F64", 64, "float", "numpy.float64", "float64", ("ieee", 0x7FFF_FFFF_FFFF_FFFF, 0x7FF0_0000_0000_0000)),
    Dtype("I64", 64, "int", "numpy.int64", "int64", None),
    Dtype("U64", 64, "uint", "numpy.uint64", "uint64", None),
)
BY_NAME: Final = MappingProxyType({d.name: d for d in TABLE})
# name -> bits per element, in the order the reference declares them.
DTYPE_BITS: Final = MappingProxyType({d.name: d.bits for d in TABLE})
DTYPES: Final = tuple(DTYPE_BITS)
# F4, F6_E2M3 and F6_E3M2: elements that do not fill a byte each.
SUBBYTE: Final = frozenset(d.name for d in TABLE if d.bits % 8)


def element_bytes(dtype: str) -> int | None:
    """Bytes per element, or None for the sub-byte dtypes (F4, F6_*)."""
    bits = DTYPE_BITS[dtype]
    return bits // 8 if bits % 8 == 0 else None
