# Strategy: the loader people write in five minutes, struct plus json.loads,
# slicing the data region by data_offsets without any check.  A baseline: it
# shows what a file gets past when nothing is validated.
from __future__ import annotations

import json
import platform
import struct
from pathlib import Path
from typing import TYPE_CHECKING

from validator.conformance.adapter import main, record

if TYPE_CHECKING:
    from collections.abc import Iterator


def load(path: str) -> Iterator[dict[str, object]]:
    with Path(path).open("rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    data = blob[8 + n :]
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        yield record(name, info["dtype"], info["shape"], data[begin:end])


if __name__ == "__main__":
    raise SystemExit(main(load, lambda: f"python {platform.python_version()}"))
