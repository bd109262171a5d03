# Strategy: read a pickle stream without running it.  The opcodes and their
# argument kinds come from the standard library's own description of the
# format (pickletools.opcodes, which is data here: nothing of the stream is
# ever unpickled).  A small symbolic machine mirrors pickle's stack, mark
# stack and memo, but holds only what a decision needs: strings (for
# STACK_GLOBAL and numpy dtype codes), small ints and tuples (shapes), dicts
# with plain keys (joblib's wrapper state), references to imported globals
# and the results of calls.  Everything else is one opaque value.
#
# It records every import (GLOBAL, STACK_GLOBAL, INST, EXT1/2/4) and marks
# it called when the stream calls it (REDUCE, NEWOBJ, NEWOBJ_EX, INST, OBJ,
# or BUILD on the global itself).  A stream is read to its STOP or it is
# refused (ReadError): truncated, an unknown opcode, a bad argument, stack
# underflow, or past a bound below.  Imports found before the refusal are
# kept: pickle runs them before it meets the bad byte.
#
# Deviations from pickle, each toward refusing: lines (protocol 0
# arguments) longer than MAX_LINE, strings longer than MAX_TEXT (kept
# opaque, so a STACK_GLOBAL of one cannot be resolved), and more than the
# bounds on opcodes, stack, memo and marks.  Python 2 names are mapped as
# pickle maps them for protocols below 3 (_compat_pickle, fix_imports).
from __future__ import annotations

import _compat_pickle
import codecs
import pickletools
import struct
from typing import TYPE_CHECKING, Final

from validator.pickles._allow import CODECS_ENCODE, JOBLIB_WRAPPER, LOAD_FROM_BYTES, NUMPY_DTYPE

if TYPE_CHECKING:
    import mmap
    from collections.abc import Callable

    Buffer = bytes | mmap.mmap

# Bounds on one file's read, all streams together for MAX_OPS.
MAX_OPS: Final = 10_000_000
MAX_STACK: Final = 1_000_000
MAX_MEMO: Final = 1_000_000
MAX_MARKS: Final = 100_000
MAX_IMPORTS: Final = 100_000  # each is kept for the verdict: a bound on memory, not only time
MAX_DICT_KEYS: Final = 64  # keys a dict value keeps (joblib's wrapper state has six); the rest are dropped
MAX_LINE: Final = 1 << 20
MAX_TEXT: Final = 16 << 20
MAX_LONG: Final = 4096  # LONG1/LONG4 bytes decoded to an int; longer ones are opaque
MAX_NESTED: Final = 4  # pickles inside pickles: _load_from_bytes, joblib object arrays
HIGHEST_PROTOCOL: Final = 5

# torch.save's legacy format: five pickles, then raw storage bytes
# (torch/serialization.py _legacy_save: MAGIC_NUMBER, PROTOCOL_VERSION).
MAGIC: Final = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL: Final = 1001

_OPCODES: Final = {
    op.code.encode("latin-1")[0]: (op.name, op.arg.name if op.arg else None) for op in pickletools.opcodes
}
_FIXED: Final = {
    "uint1": struct.Struct("<B"),
    "uint2": struct.Struct("<H"),
    "int4": struct.Struct("<i"),
    "uint4": struct.Struct("<I"),
    "uint8": struct.Struct("<Q"),
    "float8": struct.Struct(">d"),
}
# Length-prefixed arguments: (prefix struct, what the bytes are).
_SIZED: Final = {
    "string1": (_FIXED["uint1"], "str8"),
    "string4": (_FIXED["int4"], "str8"),
    "bytes1": (_FIXED["uint1"], "bytes"),
    "bytes4": (_FIXED["uint4"], "bytes"),
    "bytes8": (_FIXED["uint8"], "bytes"),
    "bytearray8": (_FIXED["uint8"], "bytes"),
    "unicodestring1": (_FIXED["uint1"], "utf8"),
    "unicodestring4": (_FIXED["uint4"], "utf8"),
    "unicodestring8": (_FIXED["uint8"], "utf8"),
    "long1": (_FIXED["uint1"], "long"),
    "long4": (_FIXED["int4"], "long"),
}


class ReadError(Exception):
    """A stream that cannot be read to its STOP; the public API reports it as a problem."""

    def __init__(self, what: str, offset: int) -> None:
        super().__init__(f"{what} at byte {offset}")
        self.what = what
        self.offset = offset


class Import:
    """One import, mutable while the stream is read (the verdict freezes it)."""

    __slots__ = ("called", "member", "module", "name", "offset", "reason")

    def __init__(self, module: str, name: str, offset: int, member: str | None, reason: str | None = None) -> None:
        self.module = module
        self.name = name
        self.offset = offset
        self.member = member
        self.reason = reason
        self.called = False


class _Ref:
    __slots__ = ("rec",)

    def __init__(self, rec: Import) -> None:
        self.rec = rec


class _Call:
    __slots__ = ("args", "func", "state")

    def __init__(self, func: Import | None, args: object) -> None:
        self.func = func
        self.args = args
        self.state: object = None


class _Bytes:
    __slots__ = ("buf", "end", "start")

    def __init__(self, buf: Buffer, start: int, end: int) -> None:
        self.buf = buf
        self.start = start
        self.end = end


class _Dict:
    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: dict[object, object] = {}


_OPAQUE: Final = object()


class Reader:
    """The imports and the opcode budget of one file's read, over all its streams."""

    def __init__(self) -> None:
        self.imports: list[Import] = []
        self.ops_left = MAX_OPS
        self.member: str | None = None
        self.joblib = False

    def stream(self, buf: Buffer, start: int, end: int, depth: int = 0) -> tuple[object, int]:
        """Read the pickle at ``buf[start:end]`` to its STOP: (its value, the offset after STOP)."""
        return _Stream(self, buf, start, end, depth).run()

    def legacy(self, buf: Buffer, start: int, end: int, depth: int = 0) -> int:
        """Read a legacy torch.save stream's five pickles; return where the raw storage bytes begin."""
        magic, pos = self.stream(buf, start, end, depth)
        if type(magic) is not int or magic != MAGIC:
            raise ReadError("not a legacy torch.save stream: the first pickle is not its magic number", start)
        version, after = self.stream(buf, pos, end, depth)
        if type(version) is not int or version != LEGACY_PROTOCOL:
            raise ReadError("legacy torch.save protocol version is not 1001", pos)
        for _ in range(3):  # sys_info, the object, the storage keys
            _, after = self.stream(buf, after, end, depth)
        return after


class _Stream:
    __slots__ = ("at", "base", "buf", "depth", "end", "marks", "memo", "pos", "proto", "reader", "stack")

    def __init__(self, reader: Reader, buf: Buffer, start: int, end: int, depth: int) -> None:
        self.reader = reader
        self.buf = buf
        self.base = start if depth else 0
        self.pos = start
        self.at = start
        self.end = end
        self.depth = depth
        self.stack: list[object] = []
        self.marks: list[int] = []
        self.memo: dict[int, object] = {}
        self.proto = 0

    # -- the loop --------------------------------------------------------------
    def run(self) -> tuple[object, int]:
        buf, end, reader = self.buf, self.end, self.reader
        while True:
            pos = self.pos
            if pos >= end:
                raise ReadError("truncated: the stream ends before its STOP", pos)
            entry = _OPCODES.get(buf[pos])
            if entry is None:
                raise ReadError(f"unknown opcode 0x{buf[pos]:02x}", pos)
            reader.ops_left -= 1
            if reader.ops_left < 0:
                raise ReadError(f"more than {MAX_OPS:,} opcodes", pos)
            name, argkind = entry
            self.at = pos
            self.pos = pos + 1
            arg = None if argkind is None else self._arg(argkind)
            if name == "STOP":
                return self._pop(), self.pos
            _HANDLERS[name](self, arg)

    # -- arguments -------------------------------------------------------------
    def _take(self, n: int) -> int:
        start = self.pos
        if n < 0:
            raise ReadError("negative length", self.at)
        if n > self.end - start:
            raise ReadError("truncated argument", self.at)
        self.pos = start + n
        return start

    def _line(self) -> bytes:
        start = self.pos
        nl = self.buf.find(b"\n", start, min(self.end, start + MAX_LINE + 1))
        if nl < 0:
            too_long = self.end - start > MAX_LINE
            raise ReadError("line argument longer than 1 MiB" if too_long else "truncated line", self.at)
        self.pos = nl + 1
        return bytes(self.buf[start:nl])

    def _arg(self, kind: str) -> object:  # noqa: C901 - one branch per argument kind of pickletools
        fixed = _FIXED.get(kind)
        if fixed is not None:
            at = self._take(fixed.size)
            return fixed.unpack_from(self.buf, at)[0]
        sized = _SIZED.get(kind)
        if sized is not None:
            prefix, what = sized
            n = prefix.unpack_from(self.buf, self._take(prefix.size))[0]
            start = self._take(n)
            return self._sized(what, start, n)
        line = self._line()
        try:
            if kind == "decimalnl_short":
                return int(line)  # INT's "00"/"01" (False/True) read as 0/1: the same for every decision here
            if kind == "decimalnl_long":
                return int(line[:-1] if line.endswith(b"L") else line, 0)
            if kind == "floatnl":
                return float(line)
            if kind == "stringnl":
                if len(line) < 2 or line[0] != line[-1] or line[:1] not in {b"'", b'"'}:
                    raise ReadError("STRING argument is not quoted", self.at)
                return codecs.escape_decode(line[1:-1])[0].decode("latin-1")
            if kind == "unicodestringnl":
                return line.decode("raw-unicode-escape")
            if kind == "stringnl_noescape":
                return line.decode("ascii")
            if kind == "stringnl_noescape_pair":
                return line.decode("utf-8"), self._line().decode("utf-8")
        except (ValueError, OverflowError) as exc:
            raise ReadError(f"bad argument ({type(exc).__name__})", self.at) from None
        raise ReadError(f"argument kind {kind} is not known", self.at)

    def _sized(self, what: str, start: int, n: int) -> object:
        if what == "bytes":
            return _Bytes(self.buf, start, start + n)
        if what == "long":
            return int.from_bytes(self.buf[start : start + n], "little", signed=True) if n <= MAX_LONG else _OPAQUE
        if n > MAX_TEXT:
            return _OPAQUE
        raw = self.buf[start : start + n]
        if what == "str8":
            return raw.decode("latin-1")
        try:
            return raw.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            raise ReadError("string argument is not UTF-8", self.at) from None

    # -- the stack ---------------------------------------------------------------
    def _push(self, value: object) -> None:
        if len(self.stack) >= MAX_STACK:
            raise ReadError(f"stack deeper than {MAX_STACK:,}", self.at)
        self.stack.append(value)

    def _pop(self) -> object:
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            raise ReadError("stack underflow", self.at)
        return self.stack.pop()

    def _top(self) -> object:
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            raise ReadError("stack underflow", self.at)
        return self.stack[-1]

    def _pop_mark(self) -> list[object]:
        if not self.marks:
            raise ReadError("no MARK to pop to", self.at)
        at = self.marks.pop()
        items = self.stack[at:]
        del self.stack[at:]
        return items

    def _memo_set(self, key: object, value: object) -> None:
        if type(key) is not int or key < 0:
            raise ReadError("negative or non-integer memo key", self.at)
        if key not in self.memo and len(self.memo) >= MAX_MEMO:
            raise ReadError(f"more than {MAX_MEMO:,} memo entries", self.at)
        self.memo[key] = value

    # -- imports and calls -------------------------------------------------------
    def _import(self, module: str, name: str, reason: str | None = None) -> Import:
        if self.proto < 3 and reason is None:
            # pickle's fix_imports: Python 2 names, for protocols 0 to 2
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[module, name]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
        if len(self.reader.imports) >= MAX_IMPORTS:
            raise ReadError(f"more than {MAX_IMPORTS:,} imports", self.at)
        rec = Import(module, name, self.at - self.base, self.reader.member, reason)
        self.reader.imports.append(rec)
        if (module, name) == JOBLIB_WRAPPER:
            self.reader.joblib = True
        return rec

    def _call(self, func: object, args: object) -> None:
        if not isinstance(func, _Ref):
            # A call of something that is not an imported global: refused
            # whatever it is (no allowed global returns a callable).
            rec = self._import("?", "?", "calls a value computed while loading")
            rec.called = True
            self._push(_Call(None, args))
            return
        rec = func.rec
        rec.called = True
        key = (rec.module, rec.name)
        result = _Call(rec, args)
        if key == NUMPY_DTYPE:
            _check_dtype(rec, args)
        elif key == CODECS_ENCODE:
            self._push(_encode(args) or result)
            return
        elif key == LOAD_FROM_BYTES:
            self._load_from_bytes(rec, args)
        self._push(result)

    def _load_from_bytes(self, rec: Import, args: object) -> None:
        # torch.storage._load_from_bytes(b) is torch.load(b, weights_only=False):
        # allowed only when b is literal bytes holding an allowed legacy stream.
        data = args[0] if isinstance(args, tuple) and len(args) == 1 else None
        if not isinstance(data, _Bytes):
            rec.reason = "its argument is not literal bytes: torch.load(weights_only=False) of a computed value"
            return
        if self.depth >= MAX_NESTED:
            rec.reason = f"pickles nested more than {MAX_NESTED} deep"
            return
        outer = self.reader.member
        self.reader.member = f"{outer or 'stream'}: bytes at {data.start - self.base}"
        try:
            self.reader.legacy(data.buf, data.start, data.end, self.depth + 1)
        except ReadError as exc:
            rec.reason = f"its bytes do not read as a torch.save stream: {exc}"
        finally:
            self.reader.member = outer

    def _build(self, state: object) -> None:
        target = self._top()
        if isinstance(target, _Ref):
            target.rec.called = True  # BUILD on a global sets attributes of a class or function
        elif isinstance(target, _Call):
            target.state = state
            if target.func is not None and (target.func.module, target.func.name) == JOBLIB_WRAPPER:
                self._skip_joblib_array(state)

    def _skip_joblib_array(self, state: object) -> None:
        # joblib.load reads the wrapped array's bytes right after this BUILD
        # (numpy_pickle.NumpyArrayWrapper.read_array): a nested pickle for an
        # object dtype, else an optional padding byte and padding, then
        # prod(shape) * itemsize bytes.
        shape = state.items.get("shape") if isinstance(state, _Dict) else None
        dtype = state.items.get("dtype") if isinstance(state, _Dict) else None
        size = _itemsize(dtype)
        if not isinstance(state, _Dict) or not isinstance(shape, tuple) or size is None:
            raise ReadError("joblib array wrapper whose shape or dtype cannot be read statically", self.at)
        if size == 0:  # object dtype: a pickle of its own follows
            if self.depth >= MAX_NESTED:
                raise ReadError(f"pickles nested more than {MAX_NESTED} deep", self.at)
            _, self.pos = self.reader.stream(self.buf, self.pos, self.end, self.depth + 1)
            return
        count = 1
        for n in shape:
            if type(n) is not int or n < 0:
                raise ReadError("joblib array shape is not a tuple of sizes", self.at)
            count *= n
        if state.items.get("numpy_array_alignment_bytes") is not None:
            self._take(self.buf[self._take(1)])
        self._take(count * size)


def _check_dtype(rec: Import, args: object) -> None:
    code = args[0] if isinstance(args, tuple) and args else None
    if not isinstance(code, str):
        rec.reason = "its argument is not a plain dtype code"
    elif code.lstrip("<>|=").startswith("O"):
        rec.reason = "an object dtype: the array's elements are arbitrary pickled objects"


def _encode(args: object) -> _Bytes | None:
    # _codecs.encode(text, "latin1") is how protocols 0-2 write bytes.
    if isinstance(args, tuple) and len(args) == 2 and isinstance(args[0], str) and args[1] in {"latin1", "latin-1"}:
        try:
            data = args[0].encode("latin-1")
        except UnicodeEncodeError:
            return None
        return _Bytes(data, 0, len(data))
    return None


def _itemsize(dtype: object) -> int | None:
    """A numpy.dtype call's item size in bytes, 0 for the object kind, None when unknown."""
    if not isinstance(dtype, _Call) or dtype.func is None or not isinstance(dtype.args, tuple) or not dtype.args:
        return None
    code = dtype.args[0]
    if not isinstance(code, str):
        return None
    code = code.lstrip("<>|=")
    if code.startswith("O"):
        return 0
    state = dtype.state
    # numpy's dtype state: (version, byteorder, subarray, names, fields, elsize, alignment, flags)
    if isinstance(state, tuple) and len(state) >= 8 and type(state[5]) is int and state[5] > 0:
        return state[5]
    digits = code[1:]
    return int(digits) if digits.isdigit() and int(digits) > 0 else None


def _op_push(value: object) -> Callable[[_Stream, object], None]:
    def push(s: _Stream, _: object) -> None:
        s._push(value)  # noqa: SLF001 - the handler table is part of the class

    return push


def _pushes_arg(s: _Stream, arg: object) -> None:
    s._push(arg)  # noqa: SLF001


def _pushes_opaque(s: _Stream, _: object) -> None:
    s._push(_OPAQUE)  # noqa: SLF001


def _get(s: _Stream, key: object) -> None:
    if key not in s.memo:
        raise ReadError(f"memo key {key} is not set", s.at)
    s._push(s.memo[key])  # noqa: SLF001


def _put(s: _Stream, key: object) -> None:
    s._memo_set(key, s._top())  # noqa: SLF001


def _memoize(s: _Stream, _: object) -> None:
    s._memo_set(len(s.memo), s._top())  # noqa: SLF001


def _mark(s: _Stream, _: object) -> None:
    if len(s.marks) >= MAX_MARKS:
        raise ReadError(f"MARKs nested more than {MAX_MARKS:,} deep", s.at)
    s.marks.append(len(s.stack))


def _pop(s: _Stream, _: object) -> None:
    if len(s.stack) > (s.marks[-1] if s.marks else 0):
        s.stack.pop()
    else:
        s._pop_mark()  # noqa: SLF001 - pickle's POP of an empty frame pops its MARK


def _tuple_n(n: int) -> Callable[[_Stream, object], None]:
    def build(s: _Stream, _: object) -> None:
        items = [s._pop() for _ in range(n)]  # noqa: SLF001
        s._push(tuple(reversed(items)))  # noqa: SLF001

    return build


def _tuple(s: _Stream, _: object) -> None:
    s._push(tuple(s._pop_mark()))  # noqa: SLF001


def _from_mark(s: _Stream, _: object) -> None:
    s._pop_mark()  # noqa: SLF001
    s._push(_OPAQUE)  # noqa: SLF001


def _dict(s: _Stream, _: object) -> None:
    items = s._pop_mark()  # noqa: SLF001
    d = _Dict()
    _set_items(s, d, items)
    s._push(d)  # noqa: SLF001


def _set_items(s: _Stream, target: object, items: list[object]) -> None:
    if len(items) % 2:
        raise ReadError("odd number of items for a dict", s.at)
    if isinstance(target, _Dict):
        for k, v in zip(items[::2], items[1::2], strict=True):
            if isinstance(k, (str, int)) and (k in target.items or len(target.items) < MAX_DICT_KEYS):
                target.items[k] = v


def _setitem(s: _Stream, _: object) -> None:
    value = s._pop()  # noqa: SLF001
    key = s._pop()  # noqa: SLF001
    _set_items(s, s._top(), [key, value])  # noqa: SLF001


def _setitems(s: _Stream, _: object) -> None:
    items = s._pop_mark()  # noqa: SLF001
    _set_items(s, s._top(), items)  # noqa: SLF001


def _append(s: _Stream, _: object) -> None:
    s._pop()  # noqa: SLF001
    s._top()  # noqa: SLF001


def _appends(s: _Stream, _: object) -> None:
    s._pop_mark()  # noqa: SLF001
    s._top()  # noqa: SLF001


def _pop_mark(s: _Stream, _: object) -> None:
    s._pop_mark()  # noqa: SLF001


def _dup(s: _Stream, _: object) -> None:
    s._push(s._top())  # noqa: SLF001


def _top_only(s: _Stream, _: object) -> None:
    s._top()  # noqa: SLF001


def _persid_stack(s: _Stream, _: object) -> None:
    s._pop()  # noqa: SLF001
    s._push(_OPAQUE)  # noqa: SLF001


def _ext(s: _Stream, code: object) -> None:
    if type(code) is not int or code <= 0:
        raise ReadError("EXT code is not positive", s.at)
    reason = "an extension registry code: copyreg resolves it to a global this reader cannot name"
    s._push(_Ref(s._import("copyreg", f"_extension_registry[{code}]", reason)))  # noqa: SLF001


def _global(s: _Stream, arg: object) -> None:
    module, name = _pair(arg)
    s._push(_Ref(s._import(module, name)))  # noqa: SLF001


def _pair(arg: object) -> tuple[str, str]:
    # stringnl_noescape_pair: the argument reader returns two str
    if not isinstance(arg, tuple):
        raise TypeError(arg)
    return arg[0], arg[1]


def _stack_global(s: _Stream, _: object) -> None:
    name = s._pop()  # noqa: SLF001
    module = s._pop()  # noqa: SLF001
    if isinstance(module, str) and isinstance(name, str):
        s._push(_Ref(s._import(module, name)))  # noqa: SLF001
    else:
        reason = "cannot resolve the imported name: STACK_GLOBAL of values that are not plain strings"
        s._push(_Ref(s._import("?", "?", reason)))  # noqa: SLF001


def _inst(s: _Stream, arg: object) -> None:
    module, name = _pair(arg)
    args = tuple(s._pop_mark())  # noqa: SLF001
    s._call(_Ref(s._import(module, name)), args)  # noqa: SLF001


def _obj(s: _Stream, _: object) -> None:
    items = s._pop_mark()  # noqa: SLF001
    if not items:
        raise ReadError("OBJ without a class", s.at)
    s._call(items[0], tuple(items[1:]))  # noqa: SLF001


def _newobj(s: _Stream, _: object) -> None:
    args = s._pop()  # noqa: SLF001
    s._call(s._pop(), args)  # noqa: SLF001


def _newobj_ex(s: _Stream, _: object) -> None:
    s._pop()  # noqa: SLF001 - kwargs
    args = s._pop()  # noqa: SLF001
    s._call(s._pop(), args)  # noqa: SLF001


def _reduce(s: _Stream, _: object) -> None:
    args = s._pop()  # noqa: SLF001
    s._call(s._pop(), args)  # noqa: SLF001


def _build(s: _Stream, _: object) -> None:
    s._build(s._pop())  # noqa: SLF001


def _proto(s: _Stream, n: object) -> None:
    if type(n) is not int or n > HIGHEST_PROTOCOL:
        raise ReadError(f"unsupported pickle protocol {n}", s.at)
    s.proto = n


def _frame(s: _Stream, n: object) -> None:
    if type(n) is not int or n > s.end - s.pos:
        raise ReadError("FRAME runs past the end of the stream", s.at)


# opcode name -> what it does to the symbolic machine
_HANDLERS: Final[dict[str, Callable[[_Stream, object], None]]] = {
    **dict.fromkeys(
        ("INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "STRING", "BINSTRING", "SHORT_BINSTRING"),
        _pushes_arg,
    ),
    **dict.fromkeys(("BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8"), _pushes_arg),
    **dict.fromkeys(("UNICODE", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8"), _pushes_arg),
    **dict.fromkeys(("FLOAT", "BINFLOAT", "EMPTY_LIST", "EMPTY_SET", "NEXT_BUFFER", "PERSID"), _pushes_opaque),
    "NONE": _op_push(None),
    "NEWTRUE": _op_push(True),  # noqa: FBT003 - the value pushed
    "NEWFALSE": _op_push(False),  # noqa: FBT003
    "EMPTY_DICT": lambda s, _: s._push(_Dict()),  # noqa: SLF001
    "EMPTY_TUPLE": _op_push(()),
    "READONLY_BUFFER": _top_only,
    "APPEND": _append,
    "APPENDS": _appends,
    "ADDITEMS": _appends,
    "LIST": _from_mark,
    "FROZENSET": _from_mark,
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
    "REDUCE": _reduce,
    "BUILD": _build,
    "BINPERSID": _persid_stack,
    "PROTO": _proto,
    "FRAME": _frame,
}
