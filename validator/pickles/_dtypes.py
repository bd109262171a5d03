# Strategy: size a pickled numpy dtype exactly as numpy does, or refuse.
# joblib.load reads an array's bytes straight from the file after its
# wrapper (count * dtype.itemsize, or a nested pickle when
# dtype.hasobject), so a reader that sizes a dtype differently resumes at
# a different byte than the loader: a call it reads as data.  Guessing is
# never allowed here; a code or state this module does not know is an
# error string, which the reader turns into a refusal.
#
# A pickled dtype is numpy.dtype(code, align, copy), then BUILD with the
# state (version, byteorder, subarray, names, fields, elsize, alignment,
# flags[, metadata]) (numpy/_core/src/multiarray/descriptor.c,
# arraydescr_reduce and arraydescr_setstate).  What setstate does, checked
# against numpy 2.4:
# - elsize replaces the size of the flexible kinds (S, a, U, V) only: a
#   "U1" whose state says 8 is 8 bytes; for any other kind it is ignored.
# - flags replaces hasobject (bit 0x01, NPY_ITEM_HASOBJECT) for every kind:
#   an "i4" whose state sets it is an object dtype to joblib.
# Without a state, "U<n>" is n characters of 4 bytes (UCS-4) and "S<n>",
# "a<n>", "V<n>" are n bytes.  The C-long, long-double and pointer-sized
# single-letter codes (l, L, g, G, p, P, n, N) differ between platforms and
# are refused.
from __future__ import annotations

import re
from typing import Final

from validator.pickles._values import Call

__all__ = ["NUMPY_DTYPE", "code_of", "facts", "parse_code"]

NUMPY_DTYPE: Final = ("numpy", "dtype")

# numpy.dtype's string form: an optional byte order, a kind, a size, and a datetime unit.
_CODE: Final = re.compile(r"[<>|=]?([?a-zA-Z])(\d{0,9})(\[[0-9a-zA-Z]{1,8}\])?")
# single letters with a fixed size on every platform
_LETTERS: Final = {"?": 1, "b": 1, "B": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "Q": 8}
_LETTERS_FLOAT: Final = {"e": 2, "f": 4, "d": 8, "F": 8, "D": 16, "O": 8, "M": 8, "m": 8}
# kind with a size in bytes -> the sizes numpy accepts
_SIZED: Final = {
    "b": frozenset({1}),
    "i": frozenset({1, 2, 4, 8}),
    "u": frozenset({1, 2, 4, 8}),
    "f": frozenset({2, 4, 8, 16}),
    "c": frozenset({8, 16, 32}),
    "M": frozenset({8}),
    "m": frozenset({8}),
    "O": frozenset({8}),
}
_FLEXIBLE: Final = {"S": 1, "a": 1, "V": 1, "U": 4}  # bytes per declared unit
_HASOBJECT: Final = 0x01


def parse_code(code: str) -> tuple[str, int] | None:
    """(kind letter, item size) of a dtype code string as numpy reads it, or None when unknown.

    The size is 0 for an unsized flexible code ("S", "U", "V").
    """
    m = _CODE.fullmatch(code)
    if m is None:
        return None
    kind, digits, unit = m.group(1), m.group(2), m.group(3)
    if unit is not None and kind not in {"M", "m"}:
        return None
    size: int | None
    if kind in _FLEXIBLE:
        size = int(digits or "0") * _FLEXIBLE[kind]
    elif not digits:
        size = _LETTERS.get(kind, _LETTERS_FLOAT.get(kind))
    else:
        n = int(digits)
        size = n if n in _SIZED.get(kind, ()) else None
    return None if size is None else (kind, size)


def code_of(dtype: object) -> str | None:
    """The code string of a numpy.dtype(code, ...) call value, or None."""
    if not isinstance(dtype, Call) or dtype.func is None or dtype.func.key != NUMPY_DTYPE:
        return None
    args = dtype.args
    if not isinstance(args, tuple) or not args or not isinstance(args[0], str):
        return None
    return args[0]


def facts(dtype: object) -> tuple[int, bool] | str:
    """(itemsize, hasobject) of a pickled numpy.dtype value, or why it cannot be sized exactly."""
    code = code_of(dtype)
    if code is None:
        return "the dtype is not a numpy.dtype call with a code string"
    parsed = parse_code(code)
    if parsed is None:
        return f"numpy dtype code {code[:40]!r} is not one this reader can size"
    kind, size = parsed
    hasobject = kind == "O"
    state = dtype.state if isinstance(dtype, Call) else None
    if isinstance(dtype, Call) and dtype.built:
        if not isinstance(state, tuple) or (len(state), state[0]) not in {(8, 3), (9, 4)}:
            return "a numpy dtype state this reader does not know"
        elsize, flags = state[5], state[7]
        if type(elsize) is not int or type(flags) is not int:
            return "a numpy dtype state whose size or flags are not integers"
        if kind in _FLEXIBLE:
            size = elsize
        hasobject = bool(flags & _HASOBJECT)
    if kind == "O" and not hasobject:
        return "an object dtype whose state says it holds no objects"
    if size <= 0:
        return "a numpy dtype of no size"
    return size, hasobject
