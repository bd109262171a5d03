# Strategy: gguf-py's `gguf.utility.SafetensorsLocal`, the reader llama.cpp's
# converters use, then `mmap_bytes()` for each tensor.  Its deliberate errors
# are ValueError.
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gguf.utility import SafetensorsLocal

from validator.conformance.adapter import main, record

if TYPE_CHECKING:
    from collections.abc import Iterator


def load(path: str) -> Iterator[dict[str, object]]:
    with SafetensorsLocal(Path(path)) as tensors:
        for name, t in tensors.items():
            yield record(name, t.dtype, t.shape, bytes(t.mmap_bytes().tobytes()))


def _version() -> str:
    from importlib.metadata import version

    return version("gguf")


if __name__ == "__main__":
    raise SystemExit(main(load, _version))
