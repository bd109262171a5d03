# Strategy: torch.distributed.checkpoint's Hugging Face header parser,
# `_hf_utils._get_safetensors_file_metadata`: struct plus json.loads, header
# only (no tensor bytes).  The adapter reads its result without raising, so a
# rejection can only come from torch's own code.
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator


import torch
from torch.distributed.checkpoint import _hf_utils

from validator.conformance.adapter import main, record


def _field(info: object, key: str) -> object:
    return info.get(key) if isinstance(info, dict) else None


def load(path: str) -> Iterator[dict[str, object]]:
    with Path(path).open("rb") as f:
        header, _data_start = _hf_utils._get_safetensors_file_metadata(f)  # noqa: SLF001 - the parser under test
    items = header.items() if isinstance(header, dict) else []
    for name, info in items:
        if name == "__metadata__":
            continue
        shape = _field(info, "shape")
        dims = [d for d in shape if isinstance(d, int)] if isinstance(shape, list) else []
        yield record(str(name), _field(info, "dtype"), dims, None)


if __name__ == "__main__":
    raise SystemExit(main(load, lambda: str(torch.__version__)))
