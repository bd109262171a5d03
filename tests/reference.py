# Strategy: the reference oracle in one place.  `safetensors.deserialize`
# (safetensors==0.8.0) is run on the bytes, and the error class of the Rust
# `SafeTensorError` it raised is read from the message's Display text: the
# Python binding raises one exception type for every class, and messages
# drift between releases, so only the stable phrases of
# validator._rules.REFERENCE_MESSAGES are matched.  A test that asks the
# oracle is skipped, with the reason, where safetensors is not installed;
# importing this module does not need it.
from __future__ import annotations

from typing import Final

import pytest

from validator._rules import REFERENCE_MESSAGES

# The torch dtype name of each safetensors dtype, as safetensors.serialize
# and safetensors.torch spell them (F6 has no name there): written out here,
# not imported from validator, so the tests check the package's own table.
TORCH_NAMES: Final = {
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
    "F4": "float4_e2m1fn_x2",
}

_PREFIX: Final = "Error while deserializing: "


def error_class(message: str) -> str:
    """The reference error class named by a SafetensorError message."""
    text = message.removeprefix(_PREFIX)
    for phrase, name in REFERENCE_MESSAGES:
        if phrase in text:
            return name
    msg = f"unmapped safetensors message: {message!r}"
    raise AssertionError(msg)


def reference_verdict(data: bytes) -> tuple[bool, str | None]:
    """(accepted, error class or None) from ``safetensors.deserialize(data)``.

    A panic or any other exception type is reported as the class ``"panic:<type>"``
    so that a differential test fails loudly instead of mapping it silently.
    """
    safetensors = pytest.importorskip("safetensors", reason="the reference oracle needs safetensors==0.8.0")
    try:
        safetensors.deserialize(bytes(data))
    except safetensors.SafetensorError as exc:
        return False, error_class(str(exc))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - pyo3 panics are BaseException
        return False, f"panic:{type(exc).__name__}"
    return True, None


def reference_class(data: bytes) -> str | None:
    """Run safetensors.deserialize; None when it accepts, else the class."""
    accepted, cls = reference_verdict(data)
    return None if accepted else cls
