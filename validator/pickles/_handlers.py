# Strategy: what each opcode does to the symbolic machine of _ops, as one
# table from opcode name to handler.  A handler takes the stream and the
# opcode's decoded argument.  Handlers only move values; the decisions
# (imports, calls, mutations, frames) are the stream's methods.
from __future__ import annotations

from typing import TYPE_CHECKING, Final, Protocol

from validator.pickles._values import OPAQUE, Dict, ReadError, Ref, Seq

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["HANDLERS", "HIGHEST_PROTOCOL"]


class _Stream(Protocol):
    """What a handler uses of _ops._Stream (named here so the two modules do not import each other)."""

    at: int
    proto: int
    stack: list[object]
    marks: list[int]
    memo: dict[int, object]

    def push(self, value: object) -> None: ...
    def pop(self) -> object: ...
    def top(self) -> object: ...
    def mark(self) -> None: ...
    def pop_mark(self) -> list[object]: ...
    def memo_set(self, key: object, value: object) -> None: ...
    def ref(self, module: str, name: str, reason: str | None = None) -> Ref: ...
    def call(self, func: object, args: object) -> None: ...
    def build(self, state: object) -> None: ...
    def fill(self, items: list[object], *, op: str) -> None: ...
    def frame(self, n: object) -> None: ...
    def persistent(self, pid: object) -> None: ...


if TYPE_CHECKING:
    Handler = Callable[[_Stream, object], None]

HIGHEST_PROTOCOL: Final = 5


def _op_push(value: object) -> Handler:
    def push(s: _Stream, _: object) -> None:
        s.push(value)

    return push


def _op_new(make: Callable[[], object]) -> Handler:
    def push(s: _Stream, _: object) -> None:
        s.push(make())

    return push


def _pushes_arg(s: _Stream, arg: object) -> None:
    s.push(arg)


def _pushes_opaque(s: _Stream, _: object) -> None:
    s.push(OPAQUE)


def _get(s: _Stream, key: object) -> None:
    if key not in s.memo:
        raise ReadError(f"memo key {key} is not set", s.at)
    s.push(s.memo[key])


def _put(s: _Stream, key: object) -> None:
    s.memo_set(key, s.top())


def _memoize(s: _Stream, _: object) -> None:
    s.memo_set(len(s.memo), s.top())


def _mark(s: _Stream, _: object) -> None:
    s.mark()


def _pop(s: _Stream, _: object) -> None:
    if len(s.stack) > (s.marks[-1] if s.marks else 0):
        s.stack.pop()
    else:
        s.pop_mark()  # pickle's POP of an empty frame pops its MARK


def _tuple_n(n: int) -> Handler:
    def build(s: _Stream, _: object) -> None:
        items = [s.pop() for _ in range(n)]
        s.push(tuple(reversed(items)))

    return build


def _tuple(s: _Stream, _: object) -> None:
    s.push(tuple(s.pop_mark()))


# One value per kind: a Seq keeps no items, so lists need no identity of their own.
_LIST: Final = Seq("list")
_SET: Final = Seq("set")
_FROZENSET: Final = Seq("frozenset")


def _seq_from_mark(seq: Seq) -> Handler:
    def build(s: _Stream, _: object) -> None:
        s.pop_mark()
        s.push(seq)

    return build


def _dict(s: _Stream, _: object) -> None:
    items = s.pop_mark()
    s.push(Dict())
    s.fill(items, op="SETITEMS")


def _setitem(s: _Stream, _: object) -> None:
    value = s.pop()
    key = s.pop()
    s.fill([key, value], op="SETITEMS")


def _setitems(s: _Stream, _: object) -> None:
    s.fill(s.pop_mark(), op="SETITEMS")


def _append(s: _Stream, _: object) -> None:
    s.fill([s.pop()], op="APPEND")


def _appends(s: _Stream, _: object) -> None:
    s.fill(s.pop_mark(), op="APPENDS")


def _additems(s: _Stream, _: object) -> None:
    s.fill(s.pop_mark(), op="ADDITEMS")


def _pop_mark(s: _Stream, _: object) -> None:
    s.pop_mark()


def _dup(s: _Stream, _: object) -> None:
    s.push(s.top())


def _top_only(s: _Stream, _: object) -> None:
    s.top()


def _persid_stack(s: _Stream, _: object) -> None:
    s.persistent(s.pop())
    s.push(OPAQUE)


def _ext(s: _Stream, code: object) -> None:
    if type(code) is not int or code <= 0:
        raise ReadError("EXT code is not positive", s.at)
    reason = "an extension registry code: copyreg resolves it to a global this reader cannot name"
    s.push(s.ref("copyreg", f"_extension_registry[{code}]", reason))


def _pair(arg: object) -> tuple[str, str]:
    # stringnl_noescape_pair: the argument reader returns two str
    if not isinstance(arg, tuple):
        raise TypeError(arg)
    return arg[0], arg[1]


def _global(s: _Stream, arg: object) -> None:
    s.push(s.ref(*_pair(arg)))


def _stack_global(s: _Stream, _: object) -> None:
    name = s.pop()
    module = s.pop()
    if isinstance(module, str) and isinstance(name, str):
        s.push(s.ref(module, name))
    else:
        reason = "cannot resolve the imported name: STACK_GLOBAL of values that are not plain strings"
        s.push(s.ref("?", "?", reason))


def _inst(s: _Stream, arg: object) -> None:
    module, name = _pair(arg)
    args = tuple(s.pop_mark())
    s.call(s.ref(module, name), args)


def _obj(s: _Stream, _: object) -> None:
    items = s.pop_mark()
    if not items:
        raise ReadError("OBJ without a class", s.at)
    s.call(items[0], tuple(items[1:]))


def _newobj(s: _Stream, _: object) -> None:
    args = s.pop()
    s.call(s.pop(), args)


def _newobj_ex(s: _Stream, _: object) -> None:
    s.pop()  # kwargs
    args = s.pop()
    s.call(s.pop(), args)


def _build(s: _Stream, _: object) -> None:
    s.build(s.pop())


def _proto(s: _Stream, n: object) -> None:
    if type(n) is not int or n > HIGHEST_PROTOCOL:
        raise ReadError(f"unsupported pickle protocol {n}", s.at)
    s.proto = n


def _frame(s: _Stream, n: object) -> None:
    s.frame(n)


# opcode name -> what it does to the symbolic machine
HANDLERS: Final[dict[str, Handler]] = {
    **dict.fromkeys(
        ("INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "STRING", "BINSTRING", "SHORT_BINSTRING"),
        _pushes_arg,
    ),
    **dict.fromkeys(("BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8"), _pushes_arg),
    **dict.fromkeys(("UNICODE", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8"), _pushes_arg),
    **dict.fromkeys(("FLOAT", "BINFLOAT", "NEXT_BUFFER", "PERSID"), _pushes_opaque),
    "NONE": _op_push(None),
    "NEWTRUE": _op_push(True),  # noqa: FBT003 - the value pushed
    "NEWFALSE": _op_push(False),  # noqa: FBT003
    "EMPTY_DICT": _op_new(Dict),
    "EMPTY_LIST": _op_push(_LIST),
    "EMPTY_SET": _op_push(_SET),
    "EMPTY_TUPLE": _op_push(()),
    "READONLY_BUFFER": _top_only,
    "APPEND": _append,
    "APPENDS": _appends,
    "ADDITEMS": _additems,
    "LIST": _seq_from_mark(_LIST),
    "FROZENSET": _seq_from_mark(_FROZENSET),
    "DICT": _dict,
    "SETITEM": _setitem,
    "SETITEMS": _setitems,
    "TUPLE": _tuple,
    "TUPLE1": _tuple_n(1),
    "TUPLE2": _tuple_n(2),
    "TUPLE3": _tuple_n(3),
    "POP": _pop,
    "DUP": _dup,
    "MARK": _mark,
    "POP_MARK": _pop_mark,
    "GET": _get,
    "BINGET": _get,
    "LONG_BINGET": _get,
    "PUT": _put,
    "BINPUT": _put,
    "LONG_BINPUT": _put,
    "MEMOIZE": _memoize,
    "EXT1": _ext,
    "EXT2": _ext,
    "EXT4": _ext,
    "GLOBAL": _global,
    "STACK_GLOBAL": _stack_global,
    "INST": _inst,
    "OBJ": _obj,
    "NEWOBJ": _newobj,
    "NEWOBJ_EX": _newobj_ex,
    "REDUCE": _newobj,
    "BUILD": _build,
    "BINPERSID": _persid_stack,
    "PROTO": _proto,
    "FRAME": _frame,
}
