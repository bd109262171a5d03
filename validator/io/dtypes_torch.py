# Strategy: the torch side of the dtype table.  Every byte-sized safetensors
# dtype maps to one torch dtype (float8 included, and uint16/32/64, which
# torch has since 2.3).  Sub-byte dtypes follow the loader's policy: packed
# uint8 bytes.  torch is imported here, lazily, and nowhere else except the
# loader's torch path and the device checks.
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import torch

_TORCH_NAMES: Final = {
    "BOOL": "bool",
    "U8": "uint8",
    "I8": "int8",
    "U16": "uint16",
    "I16": "int16",
    "F16": "float16",
    "BF16": "bfloat16",
    "U32": "uint32",
    "I32": "int32",
    "F32": "float32",
    "U64": "uint64",
    "I64": "int64",
    "F64": "float64",
    "C64": "complex64",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "F8_E8M0": "float8_e8m0fnu",
    "F8_E4M3FNUZ": "float8_e4m3fnuz",
    "F8_E5M2FNUZ": "float8_e5m2fnuz",
}


def torch_dtype(dtype: str) -> torch.dtype | None:
    """The torch dtype of a byte-sized safetensors dtype; None if this torch lacks it."""
    import torch  # noqa: PLC0415 - torch loads only when used

    found = getattr(torch, _TORCH_NAMES[dtype], None)
    return found if isinstance(found, torch.dtype) else None


@functools.cache
def _reverse() -> dict[torch.dtype, str]:
    import torch  # noqa: PLC0415 - torch loads only when used

    table = {getattr(torch, n): s for s, n in _TORCH_NAMES.items() if hasattr(torch, n)}
    if hasattr(torch, "float4_e2m1fn_x2"):
        table[torch.float4_e2m1fn_x2] = "F4"
    return table


def safetensors_dtype(dtype: torch.dtype) -> str | None:
    """The safetensors name of a torch dtype, or None."""
    return _reverse().get(dtype)


def parse_cast_target(target: str) -> torch.dtype:
    """A cast target given as a safetensors name ("F32") or a torch name ("float32")."""
    import torch  # noqa: PLC0415 - torch loads only when used

    name = _TORCH_NAMES.get(target, target)
    found = getattr(torch, name, None)
    if not isinstance(found, torch.dtype):
        msg = f"unknown cast target {target!r}"
        raise ValueError(msg)  # noqa: TRY004 - an unknown name, not an argument of the wrong type
    return found
