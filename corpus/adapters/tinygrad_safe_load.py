# Strategy: tinygrad's `nn.state.safe_load` on the CPU device (DEV=CPU).  It
# has no error class of its own, so the default rule applies: a ValueError
# rejects, and its KeyError on a dtype it lacks is a crash.
from __future__ import annotations

import os
from typing import TYPE_CHECKING

os.environ.setdefault("DEV", "CPU")

import tinygrad
from tinygrad import dtypes
from tinygrad.nn.state import safe_load

from validator.conformance.adapter import main, record

if TYPE_CHECKING:
    from collections.abc import Iterator


def _bytes(t: tinygrad.Tensor) -> bytes | None:
    try:
        return bytes(t.flatten().bitcast(dtypes.uint8).numpy().tobytes())
    except Exception:  # noqa: BLE001 - a dtype tinygrad cannot bitcast: no bytes to compare
        return None


def load(path: str) -> Iterator[dict[str, object]]:
    for name, t in safe_load(path).items():
        yield record(name, t.dtype, t.shape, _bytes(t))


def _version() -> str:
    from importlib.metadata import version

    return version("tinygrad")


if __name__ == "__main__":
    raise SystemExit(main(load, _version))
