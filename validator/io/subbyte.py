# Strategy: the bit order of the sub-byte dtypes (F4, F6_E2M3, F6_E3M2), in
# one place for the loader (unpack) and the writer (pack).  The spec gives
# these dtypes a bit width but no bit order; stcheck reads element i from
# bits [w*i, w*(i+1)) of the tensor's bytes taken as one little-endian bit
# stream (for F4: element 0 in the low nibble, torch's float4_e2m1fn_x2 and
# the OCP MX packing).  Both directions work through fixed-size chunks, so
# their temporaries stay small: the peak is the output plus a few chunks,
# not the 8x of a bit-per-byte expansion.
from __future__ import annotations

from typing import Any, Final

from validator._dtypes import DTYPE_BITS

__all__ = ["CHUNK", "pack_subbyte", "unpack_subbyte"]

# Elements (pack) or packed bytes (unpack) handled per step.
CHUNK: Final = 3 << 18


def unpack_subbyte(raw: Any, dtype: str, numel: int) -> Any:  # noqa: ANN401 - numpy arrays
    """Sub-byte elements of ``raw`` (uint8) as one ml_dtypes element per byte."""
    import numpy as np  # noqa: PLC0415 - numpy loads only when used

    from validator.io.dtypes_np import unpacked_dtype  # noqa: PLC0415 - numpy loads only when used

    out = np.empty(numel, np.uint8)
    if DTYPE_BITS[dtype] == 4:
        pairs = out.reshape(-1, 2)
        for i in range(0, len(raw), CHUNK):
            chunk = raw[i : i + CHUNK]
            np.bitwise_and(chunk, 0x0F, out=pairs[i : i + len(chunk), 0])
            np.right_shift(chunk, 4, out=pairs[i : i + len(chunk), 1])
    else:  # 6 bits: every 3 bytes hold 4 elements
        quads = out.reshape(-1, 4)
        triples = raw.reshape(-1, 3)
        step = CHUNK // 3
        for i in range(0, len(triples), step):
            b0, b1, b2 = (triples[i : i + step, k] for k in range(3))
            q = quads[i : i + step]
            np.bitwise_and(b0, 0x3F, out=q[:, 0])
            q[:, 1] = (b0 >> 6) | ((b1 & 0x0F) << 2)
            q[:, 2] = (b1 >> 4) | ((b2 & 0x03) << 4)
            np.right_shift(b2, 2, out=q[:, 3])
    return out.view(unpacked_dtype(dtype))


def pack_subbyte(values: Any, dtype: str) -> Any:  # noqa: ANN401 - numpy arrays
    """Pack one-byte sub-byte elements (ml_dtypes) into the bit stream ``unpack_subbyte`` reads."""
    import numpy as np  # noqa: PLC0415 - numpy loads only when used

    codes = np.ascontiguousarray(values).reshape(-1).view(np.uint8)
    if DTYPE_BITS[dtype] == 4:
        pairs = codes.reshape(-1, 2)
        out = np.empty(len(pairs), np.uint8)
        for i in range(0, len(pairs), CHUNK):
            p = pairs[i : i + CHUNK]
            out[i : i + len(p)] = (p[:, 0] & 0x0F) | (p[:, 1] << 4)
        return out
    quads = codes.reshape(-1, 4)
    packed = np.empty((len(quads), 3), np.uint8)
    for i in range(0, len(quads), CHUNK):
        c0, c1, c2, c3 = ((quads[i : i + CHUNK, k] & 0x3F) for k in range(4))
        out3 = packed[i : i + CHUNK]
        out3[:, 0] = c0 | (c1 << 6)
        out3[:, 1] = (c1 >> 2) | (c2 << 4)
        out3[:, 2] = (c2 >> 4) | (c3 << 2)
    return packed.reshape(-1)
