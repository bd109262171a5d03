# Strategy: which dtypes each device kind can hold, written as data, plus one
# pure function that answers "can this device hold this dtype, given these
# platform facts?".  The platform facts (the macOS version) are passed in, so
# the table logic is tested on every machine; only `platform_facts()` and
# `ensure_available()` look at the running system, and they import torch
# lazily.
#
# Sources of the table (torch 2.x): MPS has no float64 ("the MPS framework
# doesn't support float64", pytorch#122602), no float8 types (pytorch raises
# "Trying to convert Float8_e4m3fn to the MPS backend"), and no uint16/32/64
# (pytorch#159076, still so in 2.9); bfloat16 and complex64 need macOS 14.
# CUDA and CPU hold every dtype torch has.  Sub-byte dtypes load as packed
# uint8 (or unpack on the CPU first), so every device holds them.
# FRAMEWORK_CAPABILITIES does the same for the frameworks validator.compat
# serves through numpy (JAX, MLX, paddle), keyed "framework:device".
from __future__ import annotations

import platform
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal

from validator._errors import DeviceError
from validator.io._extras import needs_extra

__all__ = [
    "CAPABILITIES",
    "FRAMEWORK_CAPABILITIES",
    "Capability",
    "ensure_available",
    "framework_unsupported",
    "parse_device",
    "platform_facts",
    "unsupported_reason",
]


@dataclass(frozen=True)
class Capability:
    """What one device kind can hold.

    ``never`` lists dtypes the device cannot hold at all, each with the reason;
    ``min_os`` lists dtypes that need at least this OS version, as a tuple;
    ``narrows`` lists dtypes the framework converts to a narrower type on
    load (safetensors' own loaders do the same), each with the reason.
    """

    kind: Literal["cpu", "cuda", "mps", "jax:cpu", "mlx:cpu", "mlx:gpu", "paddle:cpu"]
    never: MappingProxyType[str, str]
    min_os: MappingProxyType[str, tuple[int, ...]]
    narrows: MappingProxyType[str, str] = field(default_factory=lambda: MappingProxyType({}))


_F8: Final = ("F8_E4M3", "F8_E5M2", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ")
_NONE: Final[MappingProxyType[str, str]] = MappingProxyType({})
_NO_OS: Final[MappingProxyType[str, tuple[int, ...]]] = MappingProxyType({})

CAPABILITIES: Final = MappingProxyType(
    {
        "cpu": Capability("cpu", _NONE, _NO_OS),
        "cuda": Capability("cuda", _NONE, _NO_OS),
        "mps": Capability(
            "mps",
            MappingProxyType(
                {
                    "F64": "MPS has no float64",
                    **dict.fromkeys(_F8, "MPS has no float8 types"),
                    "U16": "MPS has no uint16",
                    "U32": "MPS has no uint32",
                    "U64": "MPS has no uint64",
                },
            ),
            MappingProxyType({"BF16": (14, 0), "C64": (14, 0)}),
        ),
    },
)

# The frameworks validator.compat serves through numpy, by "framework:device".
# Observed on CPU wheels (jax/jaxlib 0.10.2, mlx 0.32.4, paddlepaddle 3.3.1)
# by converting an array of every dtype and reading the bytes back; "mlx:gpu"
# adds MLX's documented rule that float64 runs on the CPU only.
_F6: Final = ("F6_E2M3", "F6_E3M2")
_JAX_NARROWS: Final = dict.fromkeys(("F64", "I64", "U64"), "JAX makes 64-bit types 32-bit unless jax_enable_x64 is set")
_MLX_NEVER: Final = {
    "F4": "MLX has no float4 type",
    **dict.fromkeys(_F6, "MLX has no float6 types"),
    **dict.fromkeys(_F8, "MLX has no float8 types"),
}
_PADDLE_NEVER: Final = {
    "U16": "paddle reads uint16 arrays as bfloat16",
    "U32": "paddle has no uint32",
    "U64": "paddle has no uint64",
    "F8_E8M0": "paddle has no float8_e8m0fnu",
    "F8_E4M3FNUZ": "paddle has no float8_e4m3fnuz",
    "F8_E5M2FNUZ": "paddle has no float8_e5m2fnuz",
    "F4": "paddle has no float4 type",
    **dict.fromkeys(_F6, "paddle has no float6 types"),
}
FRAMEWORK_CAPABILITIES: Final = MappingProxyType(
    {
        "jax:cpu": Capability(
            "jax:cpu",
            MappingProxyType(dict.fromkeys(_F6, "XLA has no float6 types")),
            _NO_OS,
            MappingProxyType(_JAX_NARROWS),
        ),
        "mlx:cpu": Capability(
            "mlx:cpu",
            MappingProxyType(_MLX_NEVER),
            _NO_OS,
            MappingProxyType({"F64": "MLX makes float64 arrays float32"}),
        ),
        "mlx:gpu": Capability(
            "mlx:gpu",
            MappingProxyType({**_MLX_NEVER, "F64": "MLX runs float64 on the CPU only"}),
            _NO_OS,
        ),
        "paddle:cpu": Capability("paddle:cpu", MappingProxyType(_PADDLE_NEVER), _NO_OS),
    },
)


def framework_unsupported(key: str, dtype: str) -> str | None:
    """Why framework:device ``key`` (e.g. ``"paddle:cpu"``) cannot hold ``dtype``, or None."""
    cap = FRAMEWORK_CAPABILITIES.get(key)
    return None if cap is None else cap.never.get(dtype)


_DEVICE: Final = re.compile(r"(cpu|mps|cuda)(?::(\d+))?\Z")


def parse_device(device: str) -> tuple[str, int | None]:
    """Split ``"cuda:1"`` into ``("cuda", 1)``; refuse anything unknown."""
    match = _DEVICE.match(device) if isinstance(device, str) else None
    if match is None:
        msg = f"unknown device {device!r}; use 'cpu', 'mps', 'cuda' or 'cuda:N'"
        raise DeviceError(msg)
    kind, index = match.group(1), match.group(2)
    if index is not None and kind != "cuda":
        msg = f"device {device!r}: only CUDA devices take an index"
        raise DeviceError(msg)
    return kind, None if index is None else int(index)


def unsupported_reason(kind: str, dtype: str, os_version: tuple[int, ...] | None) -> str | None:
    """Why device kind ``kind`` cannot hold ``dtype``, or None when it can.

    ``os_version`` is the macOS version for MPS (None when unknown, which
    counts as too old).
    """
    cap = CAPABILITIES[kind]
    reason = cap.never.get(dtype)
    if reason is not None:
        return reason
    need = cap.min_os.get(dtype)
    if need is not None and (os_version is None or os_version < need):
        have = "an unknown version" if os_version is None else ".".join(map(str, os_version))
        return f"{dtype} on {kind.upper()} needs macOS {'.'.join(map(str, need))} or later, this is {have}"
    return None


def platform_facts(kind: str) -> tuple[int, ...] | None:
    """The OS version the table consults for ``kind`` (macOS for MPS)."""
    if kind != "mps":
        return None
    release = platform.mac_ver()[0]
    if not release:
        return None
    return tuple(int(p) for p in release.split(".") if p.isdigit())


def ensure_available(device: str) -> str:
    """Check that torch can use ``device``; return it normalised."""
    with needs_extra("torch tensors (framework='torch')"):
        import torch  # noqa: PLC0415 - torch loads only when a device is checked

    kind, index = parse_device(device)
    if kind == "cuda":
        if not torch.cuda.is_available():
            msg = f"device {device!r}: CUDA is not available"
            raise DeviceError(msg)
        if index is not None and index >= torch.cuda.device_count():
            msg = f"device {device!r}: only {torch.cuda.device_count()} CUDA device(s)"
            raise DeviceError(msg)
    if kind == "mps" and not torch.backends.mps.is_available():
        msg = f"device {device!r}: MPS is not available"
        raise DeviceError(msg)
    return kind if index is None else f"{kind}:{index}"
