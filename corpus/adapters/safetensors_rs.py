# Strategy: the safetensors Python binding (any release) through
# `deserialize(bytes)`, which runs the Rust read_metadata and returns each
# tensor's bytes.  Only SafetensorError is a rejection (before 0.3 the binding
# raised a plain Exception "Error while deserializing ..."); a Rust panic
# surfaces as a BaseException (PanicException) and counts as a crash.
from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

import safetensors

from validator.conformance.adapter import main, record

_deserialize = getattr(safetensors, "deserialize", None)
if _deserialize is None:  # releases before 0.4 expose it on the Rust module only
    _deserialize = importlib.import_module("safetensors.safetensors_rust").deserialize

if TYPE_CHECKING:
    from collections.abc import Iterator


def load(path: str) -> Iterator[dict[str, object]]:
    with Path(path).open("rb") as f:
        blob = f.read()
    for name, info in _deserialize(blob):
        yield record(name, info["dtype"], info["shape"], bytes(info["data"]))


def rejects(exc: BaseException) -> bool:
    if type(exc).__name__ == "SafetensorError":
        return True
    return type(exc) is Exception and str(exc).startswith("Error while deserializing")


if __name__ == "__main__":
    raise SystemExit(main(load, lambda: str(getattr(safetensors, "__version__", "?")), rejects))
