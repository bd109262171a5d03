# Strategy: an .npy header read as numpy.load reads it (numpy/lib/format.py
# read_magic, _check_version, _read_array_header, descr_to_dtype), to
# answer one question: does numpy.load(allow_pickle=True) unpickle the data,
# and from which byte.  Layout: "\x93NUMPY", major, minor (1.0, 2.0 or
# 3.0), the header length (<H in 1.0, <I after), the header (latin-1, or
# UTF-8 in 3.0): a Python literal dict with exactly the keys descr,
# fortran_order and shape.  The data is a pickle when the dtype has objects
# anywhere (dtype.hasobject): "O", "object", "|O", a structured dtype with an
# object field, a subarray of objects...  The common spellings are settled
# here (every leaf a number, string or date: none; an "O" or "object" leaf:
# objects); any other, numpy itself builds the dtype when it is installed
# (the literal holds no code, and np.dtype runs none), else it counts as
# objects.  Any doubt is an object array (its data is then read as a
# pickle) or an ArchiveError, never a clean verdict.  The pickle is one pickle.load: bytes after its STOP are
# never read by numpy.
from __future__ import annotations

import ast
import io
import re
import struct
import tokenize
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from validator.formats._errors import ArchiveError

if TYPE_CHECKING:
    import mmap

    Buffer = bytes | mmap.mmap

__all__ = ["MAGIC", "MAX_HEADER", "Header", "has_objects", "header"]

MAGIC: Final = b"\x93NUMPY"
MAX_HEADER: Final = 1 << 20  # numpy.load(allow_pickle=True) has no bound; a longer one is refused
_LENGTH: Final = {
    (1, 0): (struct.Struct("<H"), "latin-1"),
    (2, 0): (struct.Struct("<I"), "latin-1"),
    (3, 0): (struct.Struct("<I"), "utf-8"),
}
_KEYS: Final = frozenset({"descr", "fortran_order", "shape"})
_OBJECT: Final = re.compile(r"[<>|=]?(?:O\d*|object_?)")
# Leaves numpy reads as numbers, booleans, strings, bytes, void or dates.
_PLAIN: Final = re.compile(
    r"[<>|=]?(?:[?bBhHiIlLqQpPnNefdgFDGSUVa]|[biufcSUVa]\d+|[mM]8(?:\[\w+\])?|"
    r"(?:bool|int|float|complex|bytes|str)(?:\d+)?_?)"
)


@dataclass(frozen=True, slots=True)
class Header:
    """What numpy.load makes of an .npy header."""

    data: int  # the first byte after the header
    objects: bool  # the data is a pickle


def header(buf: Buffer, start: int, end: int) -> Header:
    """The header of the .npy at ``buf[start:end]``; raises ArchiveError where numpy.load would fail."""
    head = bytes(buf[start : min(end, start + 8)])
    if len(head) < 8 or not head.startswith(MAGIC):
        raise ArchiveError("bad .npy: no \\x93NUMPY magic")
    version = (head[6], head[7])
    if version not in _LENGTH:
        raise ArchiveError(f"bad .npy: format version {version[0]}.{version[1]} is not 1.0, 2.0 or 3.0")
    length, encoding = _LENGTH[version]
    at = start + 8 + length.size
    if at > end:
        raise ArchiveError("bad .npy: the header length is cut off")
    (n,) = length.unpack_from(bytes(buf[start + 8 : at]))
    if n > MAX_HEADER or at + n > end:
        raise ArchiveError("bad .npy: the header runs past the end of the file or over 1 MiB")
    try:
        text = bytes(buf[at : at + n]).decode(encoding)
    except UnicodeDecodeError:
        raise ArchiveError("bad .npy: the header is not UTF-8") from None
    d = _literal(text, python2=version < (3, 0))
    if not isinstance(d, dict) or d.keys() != _KEYS:
        raise ArchiveError("bad .npy: the header is not a dict with exactly descr, fortran_order and shape")
    shape = d["shape"]
    if not isinstance(shape, tuple) or not all(isinstance(x, int) for x in shape):
        raise ArchiveError("bad .npy: the shape is not a tuple of ints")
    if not isinstance(d["fortran_order"], bool):
        raise ArchiveError("bad .npy: fortran_order is not a bool")
    return Header(at + n, has_objects(d["descr"]))


def _literal(text: str, *, python2: bool) -> object:
    try:
        return ast.literal_eval(text)
    except SyntaxError:
        if not python2:
            raise ArchiveError("bad .npy: the header is not a Python literal") from None
    except (ValueError, TypeError, MemoryError, RecursionError):
        raise ArchiveError("bad .npy: the header is not a Python literal") from None
    try:  # numpy's second try for headers Python 2 wrote: "3L" read as 3
        return ast.literal_eval(_drop_long_suffix(text))
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError, tokenize.TokenError):
        raise ArchiveError("bad .npy: the header is not a Python literal") from None


def _drop_long_suffix(text: str) -> str:
    kept = []
    after_number = False
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if not (after_number and token.type == tokenize.NAME and token.string == "L"):
            kept.append(token)
        after_number = token.type == tokenize.NUMBER
    return tokenize.untokenize(kept)


def has_objects(descr: object) -> bool:
    """Whether numpy's dtype for ``descr`` holds objects (True when in doubt)."""
    known = _static(descr, 0)
    if known is not None:
        return known
    try:
        from numpy.lib.format import descr_to_dtype  # noqa: PLC0415 - numpy is optional, and needed only here
    except ImportError:
        return True
    try:
        return bool(descr_to_dtype(descr).hasobject)  # type: ignore[arg-type]  # any literal: numpy checks it
    except Exception:  # noqa: BLE001 - any refusal by numpy: not proven free of objects
        raise ArchiveError(f"bad .npy: numpy does not read the dtype {str(descr)[:80]!r}") from None


def _static(descr: object, depth: int) -> bool | None:
    """True or False where the spelling settles it, None where only numpy can."""
    if depth > 32:
        return None
    if isinstance(descr, str):
        if _OBJECT.fullmatch(descr):
            return True
        return False if _PLAIN.fullmatch(descr) else None
    if isinstance(descr, tuple) and len(descr) == 2:  # (base, shape): a subarray
        return _static(descr[0], depth + 1)
    if isinstance(descr, list):  # [(name, descr), (name, descr, shape), ...]
        leaves = [_static(f[1], depth + 1) if isinstance(f, tuple) and len(f) in {2, 3} else None for f in descr]
        if any(leaf is True for leaf in leaves):
            return True
        return False if all(leaf is False for leaf in leaves) else None
    return None
