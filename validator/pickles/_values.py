# Strategy: the values of the symbolic machine in _ops.  Each kind of value
# the reader can tell apart is one small slotted class; anything else is the
# one opaque object.  A value records only what a decision needs: which
# global a call used and with what arguments, whether a container was
# filled after it was made (a mutation the loader sees and a literal
# argument does not), and whether a dict's keys are plain names.
from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import mmap

    Buffer = bytes | mmap.mmap

__all__ = ["MAX_DICT_KEYS", "OPAQUE", "Bytes", "Call", "Dict", "Import", "ReadError", "Ref", "RefusedError", "Seq"]


class ReadError(Exception):
    """A stream that cannot be read to its STOP; the public API reports it as a problem."""

    def __init__(self, what: str, offset: int) -> None:
        super().__init__(f"{what} at byte {offset}")
        self.what = what
        self.offset = offset


class RefusedError(ReadError):
    """A stream the reader will not vouch for: what it does depends on bytes or values it cannot pin."""


MAX_DICT_KEYS: Final = 64  # keys a dict value keeps (joblib's wrapper state has six); the rest are dropped


class Import:
    """One import, mutable while the stream is read (the verdict freezes it).

    ``data`` names the library value a data-tier import rebuilds (or the
    object dtype's "numpy object array"), None for a weights-tier one.
    """

    __slots__ = ("called", "data", "member", "module", "name", "offset", "reason", "renamed")

    def __init__(self, module: str, name: str, offset: int, member: str | None, reason: str | None = None) -> None:
        self.module = module
        self.name = name
        self.offset = offset
        self.member = member
        self.reason = reason
        self.called = False
        self.data: str | None = None
        self.renamed = False  # fix_imports mapped a Python 2 name (torch's unpickler does not)

    @property
    def key(self) -> tuple[str, str]:
        return self.module, self.name


class Ref:
    """An imported global, as pushed by GLOBAL, STACK_GLOBAL or EXT."""

    __slots__ = ("rec",)

    def __init__(self, rec: Import) -> None:
        self.rec = rec


class Call:
    """The result of calling a global (or, with ``func`` None, a computed value)."""

    __slots__ = ("args", "built", "filled", "func", "plain", "state")

    def __init__(self, func: Import | None, args: object) -> None:
        self.func = func
        self.args = args
        self.state: object = None
        self.built = False  # a BUILD ran on it
        self.filled = False  # SETITEM(S) or APPEND(S) ran on it
        self.plain = True  # every key SETITEM(S) set on it was a plain name


class Bytes:
    """Literal bytes in the stream: ``buf[start:end]``; ``mutable`` for a bytearray."""

    __slots__ = ("buf", "end", "mutable", "start")

    def __init__(self, buf: Buffer, start: int, end: int, *, mutable: bool = False) -> None:
        self.buf = buf
        self.start = start
        self.end = end
        self.mutable = mutable


class Dict:
    """A dict made by EMPTY_DICT or DICT.

    ``complete`` is False once a key was dropped (not a plain str or int,
    or past MAX_DICT_KEYS); ``plain`` is False once a key that is not a
    plain, non-dunder name was set (setattr of such a key can change what
    an object's methods are).
    """

    __slots__ = ("complete", "items", "plain")

    def __init__(self) -> None:
        self.items: dict[object, object] = {}
        self.complete = True
        self.plain = True


class Seq:
    """A list or set made by EMPTY_LIST/LIST or EMPTY_SET/FROZENSET (their items are not kept)."""

    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind


OPAQUE: Final = object()
