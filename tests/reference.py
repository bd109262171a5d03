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
