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
# Frames (protocol 4+): pickle.loads, and pickle.load of a buffered file
# (it peeks ahead), ignore their boundaries; pickle.load of a stream that
# cannot peek (a BytesIO, as torch.load reads a zip member) drops what is
# left of a frame when an argument runs past it and reads on after it
# (CPython _pickle.c, _Unpickler_ReadImpl); the Python _Unframer, which
# joblib's unpickler uses, raises.  So a stream whose opcode boundaries and
# frame boundaries disagree is refused (RefusedError), as is a STOP or a
# raw joblib array inside a frame that has bytes left: every loader then
# reads the same bytes as this reader.  Mutating opcodes (SETITEM(S),
# APPEND(S), ADDITEMS, BUILD) are accepted only on the values pickle fills
# without calling code the stream chose (see _args).
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

from validator.pickles import _args
from validator.pickles._allow import (
    CODECS_ENCODE,
    DICT_TYPES,
    JOBLIB_OLD_WRAPPERS,
    JOBLIB_WRAPPER,
    LIST_TYPES,
    LOAD_FROM_BYTES,
    NDARRAY_TYPES,
    OBJECT_ARRAY,
    data_tier,
)
from validator.pickles._dtypes import NUMPY_DTYPE, facts
from validator.pickles._handlers import HANDLERS as _HANDLERS
from validator.pickles._handlers import HIGHEST_PROTOCOL
from validator.pickles._values import (
    MAX_DICT_KEYS,
    OPAQUE,
    Bytes,
    Call,
    Dict,
    Import,
    ReadError,
    Ref,
    RefusedError,
    Seq,
)

if TYPE_CHECKING:
    from validator.pickles._values import Buffer

__all__ = ["HIGHEST_PROTOCOL", "MAGIC", "MAX_MARKS", "MAX_OPS", "Import", "ReadError", "Reader", "RefusedError"]

# Bounds on one file's read, all streams together for MAX_OPS.
MAX_OPS: Final = 10_000_000
MAX_STACK: Final = 1_000_000
MAX_MEMO: Final = 1_000_000
MAX_MARKS: Final = 100_000
MAX_IMPORTS: Final = 100_000  # each is kept for the verdict: a bound on memory, not only time
MAX_LINE: Final = 1 << 20
MAX_TEXT: Final = 16 << 20
MAX_LONG: Final = 4096  # LONG1/LONG4 bytes decoded to an int; longer ones are opaque
MAX_NESTED: Final = 4  # pickles inside pickles: _load_from_bytes, joblib object arrays

# torch.save's legacy format: five pickles, then raw storage bytes
# (torch/serialization.py _legacy_save: MAGIC_NUMBER, PROTOCOL_VERSION).
MAGIC: Final = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL: Final = 1001

_OPCODES: Final = {
    op.code.encode("latin-1")[0]: (op.name, op.arg.name if op.arg else None) for op in pickletools.opcodes
}
# opcode byte -> (argument kind, handler; None for STOP), or None for a byte that is no opcode
_DISPATCH: Final = [
    None if code not in _OPCODES else (_OPCODES[code][1], _HANDLERS.get(_OPCODES[code][0])) for code in range(256)
]
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
    "bytearray8": (_FIXED["uint8"], "bytearray"),
    "unicodestring1": (_FIXED["uint1"], "utf8"),
    "unicodestring4": (_FIXED["uint4"], "utf8"),
    "unicodestring8": (_FIXED["uint8"], "utf8"),
    "long1": (_FIXED["uint1"], "long"),
    "long4": (_FIXED["int4"], "long"),
}


class Reader:
    """The imports, the opcode budget and the per-file facts of one file's read, over all its streams."""

    def __init__(self) -> None:
        self.imports: list[Import] = []
        self.ops_left = MAX_OPS
        self.member: str | None = None
        self.joblib = False
        # Opcodes seen (by byte) and frames met: what torch's weights-only unpickler decides on.
        self.seen = bytearray(256)
        self.frames = 0
        # Why torch.load(weights_only=True) refuses the file's layout, set by the container's reader.
        self.torch_refusal: str | None = None

    def opcodes(self) -> frozenset[str]:
        """The names of the opcodes every stream read so far used."""
        return frozenset(_OPCODES[code][0] for code in range(256) if self.seen[code])

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
    __slots__ = (
        "at",
        "base",
        "buf",
        "depth",
        "end",
        "frame_end",
        "marks",
        "memo",
        "pos",
        "proto",
        "reader",
        "stack",
    )

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
        self.frame_end = -1  # where the current frame ends; -1 outside frames

    # -- the loop --------------------------------------------------------------
    def run(self) -> tuple[object, int]:
        buf, end, reader, seen = self.buf, self.end, self.reader, self.reader.seen
        while True:
            pos = self.pos
            if pos >= end:
                raise ReadError("truncated: the stream ends before its STOP", pos)
            code = buf[pos]
            entry = _DISPATCH[code]
            if entry is None:
                raise ReadError(f"unknown opcode 0x{code:02x}", pos)
            reader.ops_left -= 1
            if reader.ops_left < 0:
                raise ReadError(f"more than {MAX_OPS:,} opcodes", pos)
            seen[code] = 1
            argkind, handler = entry
            self.at = pos
            self.pos = pos + 1
            arg = None if argkind is None else self._arg(argkind)
            frame_end = self.frame_end
            if frame_end >= 0 and (pos == frame_end or self.pos > frame_end):
                self._in_frame(pos)
            if handler is None:  # STOP
                self._frame_done("STOP")
                return self.pop(), self.pos
            handler(self, arg)

    # -- frames ------------------------------------------------------------------
    def _in_frame(self, pos: int) -> None:
        if pos == self.frame_end:  # the frame was used up exactly: this opcode is read from the file
            self.frame_end = -1
        elif self.pos > self.frame_end:
            what = "an opcode and its argument run past the end of their FRAME"
            raise RefusedError(f"{what}: pickle.load on a file and pickle.loads read different bytes", self.at)

    def _frame_done(self, what: str) -> None:
        # pickle.load(file) has read the whole frame from the file: what comes
        # after this point, for the loader, is the byte after the frame.
        if self.frame_end >= 0 and self.pos < self.frame_end:
            raise RefusedError(f"{what} inside a FRAME with bytes left: the loader resumes after the frame", self.at)
        self.frame_end = -1

    def persistent(self, pid: object) -> None:
        """A BINPERSID's id: torch.load(weights_only=True) takes a storage's only.

        ("storage", type, key, location, numel), one more item in the legacy
        form (torch/_weights_only_unpickler.py BINPERSID, then _load's and
        _legacy_load's persistent_load).  Anything else withdraws the promise.
        """
        storage = type(pid) is tuple and len(pid) in {5, 6} and pid[0] in {"storage", b"storage"}
        if not storage and self.reader.torch_refusal is None:
            self.reader.torch_refusal = "a persistent id that is not a storage's"

    def frame(self, n: object) -> None:
        """FRAME: the next ``n`` bytes are one frame."""
        if type(n) is not int or n > self.end - self.pos:
            raise ReadError("FRAME runs past the end of the stream", self.at)
        self._frame_done("a FRAME")
        self.reader.frames += 1
        self.frame_end = self.pos + n

    # -- arguments -------------------------------------------------------------
    def take(self, n: int) -> int:
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
            at = self.take(fixed.size)
            return fixed.unpack_from(self.buf, at)[0]
        sized = _SIZED.get(kind)
        if sized is not None:
            prefix, what = sized
            n = prefix.unpack_from(self.buf, self.take(prefix.size))[0]
            start = self.take(n)
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
            return Bytes(self.buf, start, start + n)
        if what == "bytearray":
            return Bytes(self.buf, start, start + n, mutable=True)
        if what == "long":
            return int.from_bytes(self.buf[start : start + n], "little", signed=True) if n <= MAX_LONG else OPAQUE
        if n > MAX_TEXT:
            return OPAQUE
        raw = self.buf[start : start + n]
        if what == "str8":
            return raw.decode("latin-1")
        try:
            return raw.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            raise ReadError("string argument is not UTF-8", self.at) from None

    # -- the stack ---------------------------------------------------------------
    def push(self, value: object) -> None:
        if len(self.stack) >= MAX_STACK:
            raise ReadError(f"stack deeper than {MAX_STACK:,}", self.at)
        self.stack.append(value)

    def pop(self) -> object:
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            raise ReadError("stack underflow", self.at)
        return self.stack.pop()

    def top(self) -> object:
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            raise ReadError("stack underflow", self.at)
        return self.stack[-1]

    def mark(self) -> None:
        if len(self.marks) >= MAX_MARKS:
            raise ReadError(f"MARKs nested more than {MAX_MARKS:,} deep", self.at)
        self.marks.append(len(self.stack))

    def pop_mark(self) -> list[object]:
        if not self.marks:
            raise ReadError("no MARK to pop to", self.at)
        at = self.marks.pop()
        items = self.stack[at:]
        del self.stack[at:]
        return items

    def memo_set(self, key: object, value: object) -> None:
        if type(key) is not int or key < 0:
            raise ReadError("negative or non-integer memo key", self.at)
        if key not in self.memo and len(self.memo) >= MAX_MEMO:
            raise ReadError(f"more than {MAX_MEMO:,} memo entries", self.at)
        self.memo[key] = value

    # -- imports and calls -------------------------------------------------------
    def _import(self, module: str, name: str, reason: str | None = None) -> Import:
        renamed = False
        if self.proto < 3 and reason is None:
            # pickle's fix_imports: Python 2 names, for protocols 0 to 2
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[module, name]
                renamed = True
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
                renamed = True
        if len(self.reader.imports) >= MAX_IMPORTS:
            raise ReadError(f"more than {MAX_IMPORTS:,} imports", self.at)
        rec = Import(module, name, self.at - self.base, self.reader.member, reason)
        rec.renamed = renamed
        rec.data = data_tier(module, name)
        self.reader.imports.append(rec)
        if (module, name) == JOBLIB_WRAPPER or (module, name) in JOBLIB_OLD_WRAPPERS:
            self.reader.joblib = True
        return rec

    def ref(self, module: str, name: str, reason: str | None = None) -> Ref:
        """Push nothing; import ``module.name`` and return the value that refers to it."""
        return Ref(self._import(module, name, reason))

    def call(self, func: object, args: object) -> None:
        """REDUCE, NEWOBJ, NEWOBJ_EX, INST, OBJ: push the result of calling ``func``."""
        if not isinstance(func, Ref):
            # A call of something that is not an imported global: refused
            # whatever it is (no allowed global returns a callable).
            rec = self._import("?", "?", "calls a value computed while loading")
            rec.called = True
            self.push(Call(None, args))
            return
        rec = func.rec
        rec.called = True
        key = rec.key
        result = Call(rec, args)
        if rec.reason is None:
            rec.reason = _args.check(key, args)
        if key == NUMPY_DTYPE and rec.reason is None and _args.object_dtype(args):
            rec.data = OBJECT_ARRAY
        elif key == CODECS_ENCODE:
            self.push(_encode(args) or result)
            return
        elif key == LOAD_FROM_BYTES:
            self._load_from_bytes(rec, args)
        self.push(result)

    def _load_from_bytes(self, rec: Import, args: object) -> None:
        # torch.storage._load_from_bytes(b) is torch.load(b, weights_only=False):
        # allowed only when b is literal, immutable bytes holding an allowed legacy stream.
        data = args[0] if isinstance(args, tuple) and len(args) == 1 else None
        if not isinstance(data, Bytes) or not _args.literal_bytes(data):
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

    # -- mutations -----------------------------------------------------------------
    def build(self, state: object) -> None:
        """BUILD: pickle calls the target's __setstate__, or updates its __dict__ and sets its slots."""
        target = self.top()
        if isinstance(target, Ref):
            # a class or function whose attributes the stream would set
            target.rec.called = True
            target.rec.reason = target.rec.reason or "BUILD on the global itself: sets a class's attributes"
            return
        if not isinstance(target, Call):
            raise RefusedError("BUILD on a value that no allowed constructor made", self.at)
        if not _args.plain_state(state) and (isinstance(state, (Dict, Call)) or _pair_of_dicts(state)):
            # setattr or __dict__ of a dunder name: __class__, __setstate__, __reduce__ ...
            raise RefusedError("BUILD with a state whose keys are not plain attribute names", self.at)
        target.state = state
        target.built = True
        func = target.func
        if func is not None and func.key == JOBLIB_WRAPPER:
            self._skip_joblib_array(state)
        elif func is not None and func.key in JOBLIB_OLD_WRAPPERS:
            _old_joblib_wrapper(func, state)

    def fill(self, items: list[object], *, op: str) -> None:
        """SETITEM(S), APPEND(S), ADDITEMS: ``items`` go into the value on top of the stack."""
        target = self.top()
        if op == "SETITEMS":
            if len(items) % 2:
                raise ReadError("odd number of items for a dict", self.at)
            if isinstance(target, Dict):
                _set_items(target, items)
                return
            if isinstance(target, Call) and target.func is not None and target.func.key in DICT_TYPES:
                target.filled = True
                target.plain = target.plain and all(_plain_key(k) for k in items[::2])
                return
            raise RefusedError("SETITEMS on a value that is not a dict: pickle would call its __setitem__", self.at)
        kind = "set" if op == "ADDITEMS" else "list"
        if isinstance(target, Seq) and target.kind == kind:
            return
        if kind == "list" and isinstance(target, Call) and target.func is not None and target.func.key in LIST_TYPES:
            target.filled = True
            return
        raise RefusedError(f"{op} on a value that is not a {kind}: pickle would call its own method", self.at)

    def _skip_joblib_array(self, state: object) -> None:
        # joblib.load reads the wrapped array's bytes right after this BUILD,
        # from the file, past the unpickler (NumpyArrayWrapper.read_array): a
        # nested pickle when dtype.hasobject, else an optional padding byte
        # and padding, then prod(shape) * itemsize bytes.
        self._frame_done("a joblib array")
        if not isinstance(state, Dict) or not state.complete:
            raise RefusedError("joblib array wrapper whose state cannot be read statically", self.at)
        shape = state.items.get("shape")
        sized = facts(state.items.get("dtype"))
        if isinstance(sized, str):
            raise RefusedError(f"joblib array wrapper whose dtype cannot be sized exactly: {sized}", self.at)
        subclass = state.items.get("subclass")
        if not isinstance(subclass, Ref) or subclass.rec.key not in NDARRAY_TYPES:
            raise RefusedError("joblib array wrapper whose subclass is not numpy.ndarray or numpy.matrix", self.at)
        if not isinstance(shape, tuple):
            raise RefusedError("joblib array shape is not a tuple of sizes", self.at)
        size, hasobject = sized
        if hasobject:  # a pickle of its own follows
            if self.depth >= MAX_NESTED:
                raise ReadError(f"pickles nested more than {MAX_NESTED} deep", self.at)
            _, self.pos = self.reader.stream(self.buf, self.pos, self.end, self.depth + 1)
            return
        count = 1
        for n in shape:
            if type(n) is not int or n < 0:
                raise RefusedError("joblib array shape is not a tuple of sizes", self.at)
            count *= n
        if state.items.get("numpy_array_alignment_bytes") is not None:
            self.take(self.buf[self.take(1)])
        self.take(count * size)


def _plain_key(key: object) -> bool:
    return type(key) is int or (type(key) is str and not key.startswith("__"))


def _pair_of_dicts(state: object) -> bool:
    return isinstance(state, tuple) and len(state) == 2  # (dict state, slot state)


def _set_items(target: Dict, items: list[object]) -> None:
    kept = target.items
    for k, v in zip(items[::2], items[1::2], strict=True):
        kind = type(k)
        if kind is str:
            if k[:2] == "__":  # type: ignore[index]  # a str, by the test above
                target.plain = False
        elif kind is not int:
            target.plain = target.complete = False
            continue
        if k in kept or len(kept) < MAX_DICT_KEYS:
            kept[k] = v
        else:
            target.complete = False


def _old_joblib_wrapper(func: Import, state: object) -> None:
    # joblib < 0.10: NDArrayWrapper.read joins the unpickler's folder and
    # state["filename"], then numpy.load(..., allow_pickle=True): only a
    # plain sibling .npy name, and an ndarray subclass that is allowed.
    name = state.items.get("filename") if isinstance(state, Dict) and state.complete else None
    subclass = state.items.get("subclass") if isinstance(state, Dict) else None
    if not isinstance(name, str) or not name.endswith(".npy") or "/" in name or "\\" in name or name.startswith("."):
        func.reason = "its file name is not a plain sibling .npy name: numpy.load(allow_pickle=True) of another file"
    elif not isinstance(subclass, Ref) or subclass.rec.key not in NDARRAY_TYPES:
        func.reason = "its subclass is not numpy.ndarray or numpy.matrix"


def _encode(args: object) -> Bytes | None:
    # _codecs.encode(text, "latin1") is how protocols 0-2 write bytes.
    if isinstance(args, tuple) and len(args) == 2 and isinstance(args[0], str) and args[1] in {"latin1", "latin-1"}:
        try:
            data = args[0].encode("latin-1")
        except UnicodeEncodeError:
            return None
        return Bytes(data, 0, len(data))
    return None
