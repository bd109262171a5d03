# Strategy: the torch side of the dtype table.  Every byte-sized safetensors
# dtype maps to one torch dtype (float8 included, and uint16/32/64, which
# torch has since 2.3).  Sub-byte dtypes follow the loader's policy: packed
# uint8 bytes.  torch is imported here, lazily, and nowhere else except the
# loader's torch path and the device checks.
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Final

from validator._dtypes import TABLE

if TYPE_CHECKING:
    import torch

__all__ = ["parse_cast_target", "safetensors_dtype", "torch_dtype"]

# Byte-sized safetensors dtype -> torch attribute, from the dtype table.
_TORCH_NAMES: Final = {d.name: d.torch for d in TABLE if d.torch is not None and d.bits % 8 == 0}
# Every torch attribute the table names -> safetensors dtype, packed sub-byte
# types (F4's float4_e2m1fn_x2) included, for reading a tensor's dtype back.
_FROM_TORCH: Final = {d.torch: d.name for d in TABLE if d.torch is not None}


def torch_dtype(dtype: str) -> torch.dtype | None:
    """The torch dtype of a byte-sized safetensors dtype; None if this torch lacks it."""
    import torch  # noqa: PLC0415 - torch loads only when used

    found = getattr(torch, _TORCH_NAMES[dtype], None)
    return found if isinstance(found, torch.dtype) else None


@functools.cache
def _reverse() -> dict[torch.dtype, str]:
    import torch  # noqa: PLC0415 - torch loads only when used

    return {getattr(torch, n): s for n, s in _FROM_TORCH.items() if isinstance(getattr(torch, n, None), torch.dtype)}


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
