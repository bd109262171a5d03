# Strategy: stcheck's structure-aware mutator (validator/fuzz/mutator.py)
# as an AFL++ Python custom mutator (AFL_PYTHON_MODULE=validator.fuzz.afl_mutator;
# AFL++'s docs/custom_mutators.md).  AFL++ calls init(seed) once, then
# fuzz(buf, add_buf, max_size) for the inputs of its custom-mutator stage,
# next to its own havoc and splicing, which do the byte mutations; so every
# call here takes the structure-aware path (decode, mutate fields, repair
# the layout, re-encode), and an input that does not decode gets the byte
# mutations of the header with N rewritten to fit.  The seed's upper digits
# pick the big and deep family (validator/fuzz/_big.py) at the campaign's rate, as under
# atheris; AFL++ passes max_size up to its file limit (1 MB unless -G), so
# deep nesting past 100,000 levels fits.  Nothing here may raise:
# an exception in a custom mutator stops afl-fuzz, and so does an empty
# result.  (No describe(): AFL++ 4.04c's Python glue wants bytes from it
# and leaves the failed call's exception set, which breaks the next fuzz().)
from __future__ import annotations

import random
from typing import Final

from validator.fuzz.config import configure_big
from validator.fuzz.mutator import STRUCTURED, byte_mutate, mutate

__all__ = ["deinit", "fuzz", "fuzz_count", "init"]

_RNG: Final = random.Random()  # noqa: S311 - fuzzing, not cryptography


def init(seed: int) -> None:
    """Seed the mutator with the seed afl-fuzz passes; take the campaign's settings."""
    _RNG.seed(seed)
    configure_big()


def fuzz(buf: bytearray, add_buf: bytearray | None, max_size: int) -> bytearray:  # noqa: ARG001 - AFL++'s signature
    """One structure-aware mutation of ``buf``, at most ``max_size`` bytes."""
    # A seed below STRUCTURED (mod 100) selects mutate()'s structure-aware path.
    seed = _RNG.getrandbits(31) // 100 * 100 + _RNG.randrange(STRUCTURED)
    data = bytes(buf)
    try:
        out = mutate(data, max_size, seed)
    except Exception:  # noqa: BLE001 - an exception here would stop afl-fuzz; fall back to bytes
        out = byte_mutate(data, max_size, _RNG)
    if not out:  # afl-fuzz stops on an empty mutation ("Size returned: 0")
        out = byte_mutate(data or b"{", max_size, _RNG) or b"{"
    return bytearray(out[:max_size])


FUZZ_COUNT: Final = 64  # structure-aware mutations per queue entry and cycle, beside AFL++'s havoc


def fuzz_count(buf: bytearray) -> int:  # noqa: ARG001 - AFL++'s signature
    """How many times AFL++ calls fuzz() on one queue entry per cycle.

    The structure-aware mutation costs about twenty of AFL++'s own, so it
    gets a fixed share instead of the havoc stage's count.
    """
    return FUZZ_COUNT


def deinit() -> None:
    """Nothing to release."""
