# Strategy: the numpy side of the dtype table.  Every safetensors dtype maps
# to one little-endian numpy dtype; the ones numpy lacks come from ml_dtypes.
# numpy and ml_dtypes are imported here and nowhere else in the loader and
# writer, and only when a numpy feature is first used, so `import validator`
# stays free of them.
#
# Sub-byte dtypes (F4, F6_E2M3, F6_E3M2).  The spec gives them a bit width
# but no bit order; we read element i from bits [w*i, w*(i+1)) of the
# tensor's bytes taken as one little-endian bit stream.  For F4 that puts
# element 0 in the low nibble of byte 0, the order of torch's
# float4_e2m1fn_x2 and of the OCP MX packing.  The loader's default policy is
# "packed": a 1-D uint8 view of the raw bytes, which needs no bit order.
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Final

from validator._dtypes import DTYPE_BITS, SUBBYTE, TABLE
from validator.io._extras import needs_extra

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["SUBBYTE", "numpy_dtype", "pack", "safetensors_dtype", "unpack", "unpacked_dtype"]

# safetensors dtype -> "numpy.<type>" or "ml_dtypes.<type>", from the dtype table.
_NP_NAMES: Final = {d.name: d.numpy for d in TABLE if d.name not in SUBBYTE}
# Sub-byte dtypes -> the ml_dtypes type an unpacked element takes (one byte each).
_SUBBYTE_NAMES: Final = {d.name: d.numpy for d in TABLE if d.name in SUBBYTE}


def _resolve(name: str) -> Any:  # noqa: ANN401 - a numpy scalar type
    module, _, attribute = name.partition(".")
    if module == "ml_dtypes":
        with needs_extra("numpy's bfloat16, float8, float6 and float4 types"):
            import ml_dtypes  # noqa: PLC0415 - numpy/ml_dtypes load only when used

        return getattr(ml_dtypes, attribute)
    import numpy as np  # noqa: PLC0415 - numpy/ml_dtypes load only when used

    return getattr(np, attribute)


@functools.cache
def numpy_dtype(dtype: str) -> np.dtype[Any]:
    """The little-endian numpy dtype of a byte-sized safetensors dtype."""
    import numpy as np  # noqa: PLC0415 - numpy/ml_dtypes load only when used

    found: np.dtype[Any] = np.dtype(_resolve(_NP_NAMES[dtype]))
    return found.newbyteorder("<") if found.byteorder not in "|<" and found.kind in "biufc" else found


@functools.cache
def unpacked_dtype(dtype: str) -> np.dtype[Any]:
    """The ml_dtypes dtype one unpacked sub-byte element takes."""
    import numpy as np  # noqa: PLC0415 - numpy/ml_dtypes load only when used

    found: np.dtype[Any] = np.dtype(_resolve(_SUBBYTE_NAMES[dtype]))
    return found


@functools.cache
def _reverse() -> dict[Any, str]:
    import numpy as np  # noqa: PLC0415 - numpy/ml_dtypes load only when used

    table: dict[Any, str] = {}
    for name, np_name in _NP_NAMES.items():
        table[np.dtype(_resolve(np_name)).newbyteorder("=")] = name
    for name in _SUBBYTE_NAMES:
        table[unpacked_dtype(name)] = name
    return table


def safetensors_dtype(dtype: np.dtype[Any]) -> str | None:
    """The safetensors name of a numpy dtype (any byte order), or None."""
    table = _reverse()
    found = table.get(dtype)
    if found is not None:
        return found
    try:
        return table.get(dtype.newbyteorder("="))
    except (TypeError, ValueError):
        return None


def unpack(raw: npt.NDArray[Any], dtype: str, numel: int) -> npt.NDArray[Any]:
    """Unpack sub-byte elements from ``raw`` (uint8) into one byte each."""
    import numpy as np  # noqa: PLC0415 - numpy/ml_dtypes load only when used

    width = DTYPE_BITS[dtype]
    bits = np.unpackbits(raw, bitorder="little")[: numel * width].reshape(numel, width)
    weights = (1 << np.arange(width, dtype=np.uint8)).astype(np.uint8)
    codes = (bits * weights).sum(axis=1, dtype=np.uint8)
    out: npt.NDArray[Any] = codes.view(unpacked_dtype(dtype))
    return out


def pack(values: npt.NDArray[Any], dtype: str) -> npt.NDArray[Any]:
    """Pack one-byte sub-byte elements (ml_dtypes) into the stream ``unpack`` reads."""
    import numpy as np  # noqa: PLC0415 - numpy/ml_dtypes load only when used

    width = DTYPE_BITS[dtype]
    codes = np.ascontiguousarray(values).reshape(-1).view(np.uint8)
    bits = np.unpackbits(codes[:, None], axis=1, bitorder="little")[:, :width]
    return np.packbits(bits.reshape(-1), bitorder="little")
