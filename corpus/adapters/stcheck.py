# Strategy: this validator as a conformance implementation.  The profile comes
# from STCHECK_PROFILE (strict or reference); on accept the tensor bytes are
# read from the declared ranges, exactly as a loader built on it would.
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import validator
from validator.conformance.adapter import main, record

if TYPE_CHECKING:
    from collections.abc import Iterator


class RejectedError(Exception):
    pass


PROFILE = os.environ.get("STCHECK_PROFILE", "strict")


def load(path: str) -> Iterator[dict[str, object]]:
    report = validator.validate(path, profile=PROFILE)
    if not report.valid:
        first = report.first_error
        raise RejectedError(first.format(path) if first else "invalid")
    start = report.data_start or 0
    with Path(path).open("rb") as f:
        for name, info in (report.tensors or {}).items():
            f.seek(start + info.begin)
            yield record(name, info.dtype, info.shape, f.read(info.nbytes))


if __name__ == "__main__":
    raise SystemExit(
        main(load, lambda: f"{validator.__version__} ({PROFILE})", lambda exc: isinstance(exc, RejectedError))
    )
