"""atheris entry point for the differential pickle campaign against the real loaders.

    python fuzz/fuzz_pickle_loaders.py -max_total_time=600 -timeout=60 \\
        fuzz/out/pickle_loaders corpus/pickles/differential

Each input is a file name and its bytes (``encode``/``decode``: ``NAME:``,
the name, a NUL, the bytes); any other input, such as a seed file, is taken
whole as the bytes of ``model.pkl``.  stcheck
judges the file as a folder member and through ``read_pickle_bytes``; the
real loaders run on it in the oracle's throwaway process
(``validator.formats.oracle``); a disagreement raises, and libFuzzer saves
the input.  The custom mutator is ``validator.fuzz.pickle_mutator``'s.  The
oracle's own campaign (``python -m validator.formats.oracle campaign``)
runs the same check without libFuzzer.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from validator.formats.oracle import Disagreement, Oracle

DEFAULT_NAME = "model.pkl"
PREFIX = b"NAME:"


def encode(name: str, data: bytes) -> bytes:
    """One fuzzer input for the file ``name`` holding ``data``."""
    return PREFIX + Path(name).name.encode("utf-8", "replace").replace(b"\0", b"_") + b"\0" + data


def decode(raw: bytes) -> tuple[str, bytes]:
    """The file name and bytes an input stands for."""
    if not raw.startswith(PREFIX):
        return DEFAULT_NAME, raw
    head, sep, data = raw[len(PREFIX) :].partition(b"\0")
    name = head.decode("utf-8", "replace")
    if not sep or len(head) > 80 or not name.strip(". ") or "/" in name:
        return DEFAULT_NAME, raw
    return name, data


def check_input(raw: bytes, oracle: Oracle, out: str | None = None) -> list[Disagreement]:
    """Every disagreement between stcheck and the real loaders on one input (reproducers under ``out``)."""
    from validator.formats.oracle import check

    name, data = decode(raw)
    with tempfile.TemporaryDirectory(prefix="stcheck-fuzz-") as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        return check(path, oracle, out)


def mutate(raw: bytes, max_size: int, seed: int) -> bytes:
    """libFuzzer's custom mutator: the structure-aware mutation of the file an input stands for."""
    from validator.fuzz.pickle_mutator import mutate_named

    name, data = decode(raw)
    new_name, new_data = mutate_named(name, data, random.Random(seed))
    out = encode(new_name, new_data)
    return out if len(out) <= max_size else raw[:max_size]


class Harness:
    """The one oracle the fuzzer's inputs share, started in main(), never at import."""

    def __init__(self, oracle: Oracle, out: str | None) -> None:
        self.oracle = oracle
        self.out = out

    def test_one_input(self, raw: bytes) -> None:
        found = check_input(raw, self.oracle, self.out)
        if found:
            raise AssertionError("; ".join(f"{d.what} {d.loader}: {d.detail}" for d in found))


def main() -> None:
    import atheris  # type: ignore[import-untyped]  # no stubs published

    # stcheck's readers and dispatch are what coverage should steer; the
    # oracle's own parent side is not.
    readers = ["validator.pickles", "validator.sources", "validator.formats"]
    with atheris.instrument_imports(include=readers, exclude=["validator.formats.oracle"]):
        import validator.pickles
        import validator.sources.kinds  # noqa: F401
    from validator.formats.oracle import Oracle

    oracle = Oracle(timeout=10.0)
    harness = Harness(oracle, os.environ.get("STCHECK_ORACLE_FINDINGS"))
    try:
        atheris.Setup(sys.argv, harness.test_one_input, custom_mutator=mutate)
        atheris.Fuzz()
    finally:
        oracle.close()


if __name__ == "__main__":
    main()
