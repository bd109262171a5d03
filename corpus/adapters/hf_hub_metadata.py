# Strategy: huggingface_hub's `parse_local_safetensors_file_metadata`, a
# header-only parser (no tensor bytes, so no data check).  Only its documented
# SafetensorsParsingError is a rejection.
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator


import huggingface_hub
from huggingface_hub import parse_local_safetensors_file_metadata

from validator.conformance.adapter import main, record


def load(path: str) -> Iterator[dict[str, object]]:
    meta = parse_local_safetensors_file_metadata(path)
    for name, info in meta.tensors.items():
        yield record(name, info.dtype, info.shape, None)


if __name__ == "__main__":
    raise SystemExit(
        main(load, lambda: huggingface_hub.__version__, lambda exc: type(exc).__name__ == "SafetensorsParsingError")
    )
