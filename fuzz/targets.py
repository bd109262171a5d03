"""The fuzz targets as plain functions, one per invariant (Pillow's `fuzzers.py` layout).

The logic lives in the installed package (`validator.fuzz.targets`) so that
`stcheck fuzz` works without this repository; this module names it for the
`fuzz_*.py` entry points and for readers.  Each function takes the bytes of
a would-be file and raises on a broken invariant:

- validate(data): any bytes give a consistent report, in bounded time.
- differential(data): the reference profile agrees with safetensors 0.8.0.
- loader(data): the loader accepts exactly what validation accepts, with the
  declared bytes.
- roundtrip(data): parse, re-serialise, parse again gives the same table.
"""

from validator.fuzz.targets import TARGETS, InvariantError
from validator.fuzz.targets import target_differential as differential
from validator.fuzz.targets import target_loader as loader
from validator.fuzz.targets import target_roundtrip as roundtrip
from validator.fuzz.targets import target_validate as validate

__all__ = ["TARGETS", "InvariantError", "differential", "loader", "roundtrip", "validate"]
