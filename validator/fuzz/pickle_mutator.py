# Strategy: a structure-aware mutator for pickle-bearing files, for the
# differential campaign against the real loaders (validator.formats.oracle).
# Two layers, each a small codec plus a table of mutations:
#
# - streams: a pickle is decoded into opcodes (one table row per opcode of
#   protocols 0 to 5: how its argument is laid out), mutated as a list
#   (insert any opcode with a fitting argument, delete, duplicate, swap,
#   rename a global, GLOBAL <-> STACK_GLOBAL <-> INST, memo puts and gets in
#   every spelling, MEMOIZE, EXT codes, FRAME with right and wrong lengths,
#   protocol changes, lengths that disagree with their payload, a nested
#   _load_from_bytes stream, a second stream after STOP, a leading N0) and
#   encoded again.  Bytes that do not decode are kept as a tail.
# - containers: a file is split into its container and its streams (torch
#   zip, tar with and without the ustar magic, the legacy stream of
#   pickles, .npy with its header dict, .npz, joblib and the compressed
#   forms), one stream or one container field is mutated, and the file is
#   put back together, sometimes in another container or under another name.
#
# Payloads are harmless callables (builtins.len, os.getcwd...): the oracle
# stops a loader at the import of any global off the allowlists, and were it
# ever not to, nothing here would do harm.  Nothing in this module unpickles.
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import random
import struct
import tarfile
import warnings
import zipfile
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = [
    "OPCODES",
    "Op",
    "assemble",
    "disassemble",
    "magic",
    "mutate_named",
    "mutate_stream",
    "seed_files",
]

# -- the opcode table ----------------------------------------------------------------------
# argument layouts: "" none; "1" "2" "4" "8" fixed bytes; "line" one text line;
# "lines" two; "n1" "n4" "n8" a little-endian length then that many bytes.
OPCODES: Final[dict[int, tuple[str, str]]] = {
    ord(c): (name, arg)
    for c, name, arg in (
        ("(", "MARK", ""),
        (".", "STOP", ""),
        ("0", "POP", ""),
        ("1", "POP_MARK", ""),
        ("2", "DUP", ""),
        ("F", "FLOAT", "line"),
        ("I", "INT", "line"),
        ("J", "BININT", "4"),
        ("K", "BININT1", "1"),
        ("L", "LONG", "line"),
        ("M", "BININT2", "2"),
        ("N", "NONE", ""),
        ("P", "PERSID", "line"),
        ("Q", "BINPERSID", ""),
        ("R", "REDUCE", ""),
        ("S", "STRING", "line"),
        ("T", "BINSTRING", "n4"),
        ("U", "SHORT_BINSTRING", "n1"),
        ("V", "UNICODE", "line"),
        ("X", "BINUNICODE", "n4"),
        ("a", "APPEND", ""),
        ("b", "BUILD", ""),
        ("c", "GLOBAL", "lines"),
        ("d", "DICT", ""),
        ("}", "EMPTY_DICT", ""),
        ("e", "APPENDS", ""),
        ("g", "GET", "line"),
        ("h", "BINGET", "1"),
        ("i", "INST", "lines"),
        ("j", "LONG_BINGET", "4"),
        ("l", "LIST", ""),
        ("]", "EMPTY_LIST", ""),
        ("o", "OBJ", ""),
        ("p", "PUT", "line"),
        ("q", "BINPUT", "1"),
        ("r", "LONG_BINPUT", "4"),
        ("s", "SETITEM", ""),
        ("t", "TUPLE", ""),
        (")", "EMPTY_TUPLE", ""),
        ("u", "SETITEMS", ""),
        ("G", "BINFLOAT", "8"),
        ("\x80", "PROTO", "1"),
        ("\x81", "NEWOBJ", ""),
        ("\x82", "EXT1", "1"),
        ("\x83", "EXT2", "2"),
        ("\x84", "EXT4", "4"),
        ("\x85", "TUPLE1", ""),
        ("\x86", "TUPLE2", ""),
        ("\x87", "TUPLE3", ""),
        ("\x88", "NEWTRUE", ""),
        ("\x89", "NEWFALSE", ""),
        ("\x8a", "LONG1", "n1"),
        ("\x8b", "LONG4", "n4"),
        ("B", "BINBYTES", "n4"),
        ("C", "SHORT_BINBYTES", "n1"),
        ("\x8c", "SHORT_BINUNICODE", "n1"),
        ("\x8d", "BINUNICODE8", "n8"),
        ("\x8e", "BINBYTES8", "n8"),
        ("\x8f", "EMPTY_SET", ""),
        ("\x90", "ADDITEMS", ""),
        ("\x91", "FROZENSET", ""),
        ("\x92", "NEWOBJ_EX", ""),
        ("\x93", "STACK_GLOBAL", ""),
        ("\x94", "MEMOIZE", ""),
        ("\x95", "FRAME", "8"),
        ("\x96", "BYTEARRAY8", "n8"),
        ("\x97", "NEXT_BUFFER", ""),
        ("\x98", "READONLY_BUFFER", ""),
    )
}
_BY_NAME: Final = {name: code for code, (name, _) in OPCODES.items()}
_LEN: Final = {"n1": ("<B", 1), "n4": ("<I", 4), "n8": ("<Q", 8)}
# A decoded stream: at most this many opcodes (the rest is kept as a tail).
_MAX_OPS: Final = 20_000
# Decompressed or member sizes the mutator works on.
_MAX_INNER: Final = 4 << 20


@dataclass(frozen=True)
class Op:
    """One opcode and its raw argument bytes (length prefix and newlines included)."""

    code: int
    arg: bytes = b""

    @property
    def name(self) -> str:
        """The opcode's name, or "?" for a byte that is not an opcode."""
        return OPCODES.get(self.code, ("?", ""))[0]

    def encode(self) -> bytes:
        """The op as it is written in a stream."""
        return bytes([self.code]) + self.arg


def disassemble(data: bytes, start: int = 0) -> tuple[list[Op], int]:
    """The opcodes of the stream at ``data[start:]`` up to its STOP, and the offset after them.

    Decoding stops (without error) at an unknown opcode, a short argument
    or a STOP; the returned offset is where the next byte would be read.
    """
    ops: list[Op] = []
    at = start
    while at < len(data) and len(ops) < _MAX_OPS:
        code = data[at]
        row = OPCODES.get(code)
        if row is None:
            break
        arg_end = _arg_end(data, at + 1, row[1])
        if arg_end is None:
            break
        ops.append(Op(code, data[at + 1 : arg_end]))
        at = arg_end
        if code == ord("."):
            break
    return ops, at


def _arg_end(data: bytes, at: int, layout: str) -> int | None:
    if layout == "":
        return at
    if layout.isdigit():
        fixed = at + int(layout)
        return fixed if fixed <= len(data) else None
    if layout in {"line", "lines"}:
        for _ in range(2 if layout == "lines" else 1):
            nl = data.find(b"\n", at)
            if nl < 0:
                return None
            at = nl + 1
        return at
    fmt, size = _LEN[layout]
    if at + size > len(data):
        return None
    (length,) = struct.unpack_from(fmt, data, at)
    end: int = at + size + length
    return end if end <= len(data) else None


def assemble(ops: Sequence[Op], *, frames: bool = False) -> bytes:
    """The stream of ``ops``; with ``frames``, each FRAME's length is set to the bytes up to the next FRAME, or to
    the STOP included."""
    if not frames:
        return b"".join(op.encode() for op in ops)
    out = bytearray()
    frame_at = None
    for op in ops:
        if op.code == _BY_NAME["FRAME"]:
            _close(out, frame_at)
            frame_at = len(out)
        out += op.encode()
        if op.code == _BY_NAME["STOP"]:  # pickle's last frame holds the STOP
            _close(out, frame_at)
            frame_at = None
    _close(out, frame_at)
    return bytes(out)


def _close(out: bytearray, frame_at: int | None) -> None:
    if frame_at is not None:
        struct.pack_into("<Q", out, frame_at + 1, len(out) - frame_at - 9)


# -- building blocks -----------------------------------------------------------------------
def op(name: str, arg: bytes = b"") -> Op:
    """The op named ``name`` with raw argument ``arg``."""
    return Op(_BY_NAME[name], arg)


def text_op(s: str | bytes, *, how: str = "X") -> Op:
    """A string push: BINUNICODE ("X"), SHORT_BINUNICODE, BINUNICODE8, or the protocol-0 and bytes forms."""
    data = s.encode("utf-8", "surrogatepass") if isinstance(s, str) else s
    if how == "X":
        return op("BINUNICODE", struct.pack("<I", len(data)) + data)
    if how == "\x8c" and len(data) < 256:
        return op("SHORT_BINUNICODE", bytes([len(data)]) + data)
    if how == "\x8d":
        return op("BINUNICODE8", struct.pack("<Q", len(data)) + data)
    if how == "U" and len(data) < 256:
        return op("SHORT_BINSTRING", bytes([len(data)]) + data)
    if how == "V" and b"\n" not in data:
        return op("UNICODE", data + b"\n")
    if how == "S" and b"\n" not in data:
        return op("STRING", repr(data.decode("latin-1")).encode("latin-1") + b"\n")
    return op("BINUNICODE", struct.pack("<I", len(data)) + data)


def bytes_op(data: bytes, *, how: str = "B") -> Op:
    """A bytes push: BINBYTES, SHORT_BINBYTES, BINBYTES8 or BYTEARRAY8."""
    if how == "C" and len(data) < 256:
        return op("SHORT_BINBYTES", bytes([len(data)]) + data)
    if how == "\x8e":
        return op("BINBYTES8", struct.pack("<Q", len(data)) + data)
    if how == "\x96":
        return op("BYTEARRAY8", struct.pack("<Q", len(data)) + data)
    return op("BINBYTES", struct.pack("<I", len(data)) + data)


def int_op(n: int) -> Op:
    """The shortest binary push of ``n``."""
    if 0 <= n < 256:
        return op("BININT1", bytes([n]))
    if 0 <= n < 65536:
        return op("BININT2", struct.pack("<H", n))
    if -(2**31) <= n < 2**31:
        return op("BININT", struct.pack("<i", n))
    raw = n.to_bytes((n.bit_length() + 8) // 8, "little", signed=True)
    return op("LONG1", bytes([len(raw)]) + raw)


def global_ops(module: str, name: str, how: str = "c") -> list[Op]:
    """A global push: GLOBAL ("c"), or STACK_GLOBAL of two strings ("\\x93")."""
    if how == "\x93":
        return [text_op(module, how="\x8c"), text_op(name, how="\x8c"), op("STACK_GLOBAL")]
    return [op("GLOBAL", module.encode("utf-8", "replace") + b"\n" + name.encode("utf-8", "replace") + b"\n")]


def call_ops(module: str, name: str, args: Sequence[Op], how: str = "R") -> list[Op]:
    """module.name(*args) by REDUCE ("R"), INST ("i"), OBJ ("o"), NEWOBJ ("\\x81") or STACK_GLOBAL + REDUCE."""
    if how == "i":
        line = module.encode("utf-8", "replace") + b"\n" + name.encode("utf-8", "replace") + b"\n"
        return [op("MARK"), *args, op("INST", line)]
    if how == "o":
        return [op("MARK"), *global_ops(module, name), *args, op("OBJ")]
    if how == "\x81":
        return [*global_ops(module, name), op("MARK"), *args, op("TUPLE"), op("NEWOBJ")]
    glob = global_ops(module, name, "\x93" if how == "\x93" else "c")
    return [*glob, op("MARK"), *args, op("TUPLE"), op("REDUCE")]


def stream(body: Sequence[Op], protocol: int = 2) -> bytes:
    """A whole stream: PROTO (for protocol 2 and up), ``body``, STOP."""
    head = [op("PROTO", bytes([protocol]))] if protocol >= 2 else []
    return assemble([*head, *body, op("STOP")])


# Globals the mutator names: allowed ones (so that mutants stay near "clean"),
# near-misses of them, and harmless callables off the allowlists.
ALLOWED_NAMES: Final = (
    ("collections", "OrderedDict"),
    ("torch._utils", "_rebuild_tensor_v2"),
    ("torch._utils", "_rebuild_parameter"),
    ("torch._tensor", "_rebuild_from_type_v2"),
    ("torch.storage", "_load_from_bytes"),
    ("torch", "FloatStorage"),
    ("torch", "Tensor"),
    ("torch", "Size"),
    ("torch", "float32"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "bytearray"),
    ("builtins", "complex"),
    ("builtins", "slice"),
    ("builtins", "range"),
    ("_codecs", "encode"),
    ("joblib.numpy_pickle", "NumpyArrayWrapper"),
    ("numpy", "matrix"),
    ("builtins", "dict"),
    ("collections", "deque"),
    ("__builtin__", "set"),
    ("copy_reg", "_reconstructor"),
)
HARMLESS_NAMES: Final = (
    ("builtins", "len"),
    ("builtins", "getattr"),
    ("builtins", "print"),
    ("os", "getcwd"),
    ("posix", "getcwd"),
    ("operator", "attrgetter"),
    ("__builtin__", "len"),
    ("torch.serialization", "_get_layout"),
    ("torch._utils", "_rebuild_tensor_v2.__globals__"),
    ("collections", "OrderedDict.fromkeys"),
    ("numpy", "load"),
    ("torch", "load"),
    ("joblib", "load"),
    ("Builtins", "len"),
    ("builtins ", "len"),
)
_STRINGS: Final = (
    "",
    "weight",
    "storage",
    "cpu",
    "0",
    "little_endian",
    "<f4",
    "|O",
    "O",
    "object",
    "<U1",
    "latin1",
    "\x00",
    "archive/data.pkl",
    "ü",
)
_INTS: Final = (0, 1, 2, 3, 4, 5, 7, 8, 127, 128, 255, 256, 1000, 1001, 65535, 65536, 2**31 - 1, -1, 2**63, -(2**31))


# -- stream mutations ----------------------------------------------------------------------
def _random_op(rng: random.Random) -> list[Op]:  # noqa: C901, PLR0912 - one branch per argument layout
    code = rng.choice(list(OPCODES))
    name, layout = OPCODES[code]
    if name in {"GLOBAL", "INST"}:
        module, attr = rng.choice(ALLOWED_NAMES + HARMLESS_NAMES)
        return [Op(code, module.encode() + b"\n" + attr.encode() + b"\n")]
    if name in {"BINGET", "BINPUT", "EXT1", "PROTO", "BININT1"}:
        return [Op(code, bytes([rng.choice((0, 1, 2, 3, 5, 255, rng.randrange(256)))]))]
    if name in {"LONG_BINGET", "LONG_BINPUT", "EXT4", "BININT"}:
        return [Op(code, struct.pack("<I", rng.choice((0, 1, 2, 2**31, 2**32 - 1, rng.randrange(64)))))]
    if name in {"EXT2", "BININT2"}:
        return [Op(code, struct.pack("<H", rng.choice((0, 1, 255, 65535, rng.randrange(64)))))]
    if name in {"GET", "PUT"}:
        return [Op(code, str(rng.choice((0, 1, 2, 99, -1))).encode() + b"\n")]
    if name in {"INT", "LONG"}:
        return [Op(code, str(rng.choice(_INTS)).encode() + (b"L" if name == "LONG" else b"") + b"\n")]
    if name == "FLOAT":
        return [Op(code, rng.choice((b"1.5", b"nan", b"-0", b"1e308", b"x")) + b"\n")]
    if name == "BINFLOAT":
        return [Op(code, struct.pack(">d", rng.choice((0.0, 1.5, float("inf")))))]
    if name == "FRAME":
        return [Op(code, struct.pack("<Q", rng.choice((0, 1, 2, 9, 64, 2**16, 2**63))))]
    if name == "PERSID":
        return [Op(code, b"0\n")]
    if layout == "line":
        return [Op(code, rng.choice((b"'a'", b"abc", b"'\\x00'", b"")) + b"\n")]
    if layout in _LEN:
        payload = rng.choice((b"", b"x", b"weight", b"\x80\x02N.", bytes(300)))
        if name in {"LONG1", "LONG4"}:
            payload = rng.choice((b"", b"\x01", b"\xff" * 9))
        fmt, _ = _LEN[layout]
        if layout == "n1" and len(payload) > 255:
            payload = payload[:255]
        return [Op(code, struct.pack(fmt, len(payload)) + payload)]
    return [Op(code)]


def _rename_global(ops: list[Op], rng: random.Random) -> None:
    at = [i for i, o in enumerate(ops) if o.name in {"GLOBAL", "INST"}]
    if not at:
        return
    i = rng.choice(at)
    module, name = rng.choice(ALLOWED_NAMES + HARMLESS_NAMES)
    ops[i] = Op(ops[i].code, module.encode() + b"\n" + name.encode() + b"\n")


def _respell_global(ops: list[Op], rng: random.Random) -> None:
    """GLOBAL -> STACK_GLOBAL of strings, pushed directly, through the memo, or the other way round."""
    at = [i for i, o in enumerate(ops) if o.name == "GLOBAL"]
    if not at:
        return
    i = rng.choice(at)
    parts = ops[i].arg.split(b"\n")
    module, name = parts[0].decode("utf-8", "replace"), parts[1].decode("utf-8", "replace")
    way = rng.randrange(3)
    if way == 0:
        ops[i : i + 1] = global_ops(module, name, "\x93")
    elif way == 1:  # the module string through the memo (put, pop, get), and a MARK/POP_MARK of noise
        slot = bytes([rng.randrange(200, 250)])
        ops[i : i + 1] = [
            text_op(module, how="X"),
            op("BINPUT", slot),
            op("POP"),
            op("BINGET", slot),
            text_op(name, how="\x8c"),
            op("MARK"),
            op("POP_MARK"),
            op("STACK_GLOBAL"),
        ]
    else:
        ops[i : i + 1] = [text_op(module.upper() if rng.random() < 0.5 else module), text_op(name), op("STACK_GLOBAL")]


def _memo_respell(ops: list[Op], rng: random.Random) -> None:
    """A memo put or get in another spelling (PUT/BINPUT/LONG_BINPUT/MEMOIZE, GET/BINGET/LONG_BINGET)."""
    at = [i for i, o in enumerate(ops) if o.name in {"PUT", "BINPUT", "LONG_BINPUT", "GET", "BINGET", "LONG_BINGET"}]
    if not at:
        memoizable = [i for i, o in enumerate(ops) if o.name not in {"PROTO", "FRAME", "STOP", "MARK"}]
        if memoizable:
            ops.insert(rng.choice(memoizable) + 1, op("MEMOIZE"))
        return
    i = rng.choice(at)
    old = ops[i]
    index = _memo_index(old)
    if rng.random() < 0.2:
        index = rng.choice((0, 1, 255, 256, 2**31, index + 1))
    if old.name.endswith("PUT"):
        choices = [
            op("PUT", str(index).encode() + b"\n"),
            op("LONG_BINPUT", struct.pack("<I", index & 0xFFFFFFFF)),
            op("MEMOIZE"),
        ]
        if 0 <= index < 256:
            choices.append(op("BINPUT", bytes([index])))
    else:
        choices = [op("GET", str(index).encode() + b"\n"), op("LONG_BINGET", struct.pack("<I", index & 0xFFFFFFFF))]
        if 0 <= index < 256:
            choices.append(op("BINGET", bytes([index])))
    ops[i] = rng.choice(choices)


def _memo_index(o: Op) -> int:
    if o.name in {"PUT", "GET"}:
        try:
            return int(o.arg.strip() or b"0")
        except ValueError:
            return 0
    if o.name in {"BINPUT", "BINGET"}:
        return o.arg[0] if o.arg else 0
    return int(struct.unpack("<I", o.arg)[0]) if len(o.arg) == 4 else 0


def _frame(ops: list[Op], rng: random.Random) -> bool:
    """Add, drop or split FRAMEs; the caller fixes their lengths half the time (True)."""
    frames = [i for i, o in enumerate(ops) if o.name == "FRAME"]
    choice = rng.randrange(4)
    if frames and choice == 0:
        del ops[rng.choice(frames)]
    elif choice == 1 and len(ops) > 2:
        ops.insert(rng.randrange(1, len(ops)), op("FRAME", struct.pack("<Q", 0)))
    elif choice == 2 and frames:
        i = rng.choice(frames)
        ops[i] = op("FRAME", struct.pack("<Q", rng.choice((0, 1, 2, 8, 2**20, 2**64 - 1))))
        return False
    else:
        start = 1 if ops and ops[0].name == "PROTO" else 0
        ops.insert(start, op("FRAME", struct.pack("<Q", 0)))
    return rng.random() < 0.5


def _length_lie(ops: list[Op], rng: random.Random) -> None:
    """A length prefix that disagrees with its payload: the reader and the loader then lose step."""
    at = [i for i, o in enumerate(ops) if OPCODES.get(o.code, ("", ""))[1] in _LEN]
    if not at:
        return
    i = rng.choice(at)
    layout = OPCODES[ops[i].code][1]
    fmt, size = _LEN[layout]
    (length,) = struct.unpack_from(fmt, ops[i].arg)
    new = max(0, length + rng.choice((-9, -2, -1, 1, 2, 9, 256)))
    if layout == "n1":
        new = min(new, 255)
    ops[i] = Op(ops[i].code, struct.pack(fmt, new) + ops[i].arg[size:])


def _change_arg(ops: list[Op], rng: random.Random) -> None:
    at = [i for i, o in enumerate(ops) if o.arg and o.name not in {"GLOBAL", "INST", "FRAME"}]
    if not at:
        return
    i = rng.choice(at)
    o = ops[i]
    layout = OPCODES.get(o.code, ("", ""))[1]
    if o.name in {"BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "SHORT_BINSTRING", "BINSTRING"}:
        new = text_op(rng.choice(_STRINGS), how=rng.choice(("X", "\x8c", "\x8d", "U", "V", "S")))
        ops[i] = new
    elif o.name in {"BININT1", "BININT2", "BININT", "LONG1", "INT", "LONG"}:
        ops[i] = int_op(rng.choice(_INTS))
    elif o.name in {"BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8"}:
        ops[i] = bytes_op(o.arg[_LEN[layout][1] :], how=rng.choice(("B", "C", "\x8e", "\x96")))
    elif o.name == "PROTO":
        ops[i] = op("PROTO", bytes([rng.choice((0, 1, 2, 3, 4, 5, 6, 255))]))
    else:
        ops[i:i] = _random_op(rng)


def _payload(rng: random.Random) -> list[Op]:
    """A call of a harmless global off the allowlists, in one of the calling spellings, its result popped."""
    module, name = rng.choice(HARMLESS_NAMES)
    how = rng.choice(("R", "i", "o", "\x81", "\x93"))
    return [*call_ops(module, name, [text_op("x")], how), op("POP")]


def _nested(rng: random.Random, inner: bytes | None = None) -> list[Op]:
    """torch.storage._load_from_bytes on a nested stream, directly or under _rebuild_from_type_v2."""
    body = inner if inner is not None else stream([*_payload(rng), op("NONE")], rng.choice((2, 4)))
    arg = bytes_op(body, how=rng.choice(("B", "C", "\x8e", "\x96")))
    if rng.random() < 0.5:
        return [*call_ops("torch.storage", "_load_from_bytes", [arg]), op("POP")]
    return [
        *global_ops("torch._tensor", "_rebuild_from_type_v2"),
        op("MARK"),
        *global_ops("torch.storage", "_load_from_bytes"),
        *global_ops("torch", "Tensor"),
        op("MARK"),
        arg,
        op("TUPLE"),
        op("NONE"),
        op("TUPLE"),
        op("REDUCE"),
        op("POP"),
    ]


def mutate_stream(data: bytes, rng: random.Random, splice: Sequence[bytes] = ()) -> bytes:  # noqa: C901, PLR0912
    """One to three structural mutations of the pickle stream ``data`` (bytes after its STOP are kept)."""
    ops, end = disassemble(data)
    tail = data[end:]
    if not ops:
        return _bytes_mutation(data, rng)
    fix_frames = False
    for _ in range(rng.choice((1, 1, 2, 3))):
        choice = rng.randrange(17)
        body_end = len(ops) - 1 if ops[-1].name == "STOP" else len(ops)
        where = rng.randrange(body_end + 1)
        if choice == 0 and len(ops) > 1:
            del ops[rng.randrange(len(ops))]
        elif choice == 1:
            i = rng.randrange(len(ops))
            ops.insert(i, ops[i])
        elif choice == 2 and len(ops) > 2:
            i = rng.randrange(len(ops) - 1)
            ops[i], ops[i + 1] = ops[i + 1], ops[i]
        elif choice == 3:
            ops[where:where] = _random_op(rng)
        elif choice == 4:
            _rename_global(ops, rng)
        elif choice == 5:
            _respell_global(ops, rng)
        elif choice == 6:
            _memo_respell(ops, rng)
        elif choice == 7:
            fix_frames = _frame(ops, rng)
        elif choice == 8:
            _length_lie(ops, rng)
        elif choice == 9:
            _change_arg(ops, rng)
        elif choice == 10:
            ops[where:where] = _payload(rng)
        elif choice == 11:
            ops[where:where] = _nested(rng, mutate_stream(data, rng) if rng.random() < 0.3 else None)
        elif choice == 12:
            ops[where:where] = [*_ext(rng), op("POP")]
        elif choice == 13:
            tail = rng.choice((stream([*_payload(rng), op("NONE")]), b"\n", b"\x00" * 3, b"N.")) + tail
        elif choice == 14:
            ops[0:0] = [op("NONE"), op("POP")] * rng.randrange(1, 5)
        elif choice == 15 and splice:
            other, _ = disassemble(rng.choice(splice))
            if other:
                a = rng.randrange(len(other))
                ops[where:where] = [o for o in other[a : a + rng.randrange(1, 12)] if o.name != "STOP"]
        else:
            ops = ops[: rng.randrange(1, len(ops) + 1)]
    return assemble(ops, frames=fix_frames) + tail


def _ext(rng: random.Random) -> list[Op]:
    code = rng.choice((1, 2, 255, 256, 65535, 65536, 2**31 - 1))
    if code < 256:
        return [op("EXT1", bytes([code]))]
    if code < 65536:
        return [op("EXT2", struct.pack("<H", code))]
    return [op("EXT4", struct.pack("<i", code))]


def _bytes_mutation(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data or b".")
    for _ in range(rng.randrange(1, 4)):
        i = rng.randrange(len(buf))
        what = rng.randrange(4)
        if what == 0:
            buf[i] ^= 1 << rng.randrange(8)
        elif what == 1:
            buf[i] = rng.choice(list(OPCODES))
        elif what == 2 and len(buf) > 1:
            del buf[i]
        else:
            buf.insert(i, rng.randrange(256))
    return bytes(buf)


# -- containers ----------------------------------------------------------------------------
_EPOCH: Final = (1980, 1, 1, 0, 0, 0)
_COMPRESSORS: Final[dict[str, tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]]] = {
    "gzip": (lambda b: gzip.compress(b, mtime=0), gzip.decompress),
    "bz2": (bz2.compress, bz2.decompress),
    "xz": (lzma.compress, lzma.decompress),
    "lzma": (lambda b: lzma.compress(b, format=lzma.FORMAT_ALONE), lzma.decompress),
    "zlib": (zlib.compress, zlib.decompress),
    # joblib's old format (numpy_pickle_compat): "ZF", the length in hex padded to 19, zlib.
    "joblib-zf": (
        lambda b: b"ZF" + f"{len(b):#x}".ljust(19).encode() + zlib.compress(b),
        lambda b: zlib.decompress(b[21:]),
    ),
}
_NAMES: Final = (
    "model.pkl",
    "pytorch_model.bin",
    "model.pt",
    "model.pth",
    "model.ckpt",
    "model.joblib",
    "arr.npy",
    "arrs.npz",
    "data.dat",
    "notes.txt",
    "weights.PT",
    "blob",
    "image.png",
    "model.pkl.gz",
    "model.tar",
)


def magic(data: bytes) -> str:
    """The container ``data`` starts with, by its magic.

    One of zip, npy, gzip, bz2, xz, lzma, joblib-zf, zlib, tar or pickle.
    """
    if data.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if data.startswith(b"\x93NUMPY"):
        return "npy"
    if data.startswith(b"\x1f\x8b"):
        return "gzip"
    if data.startswith(b"BZh"):
        return "bz2"
    if data.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if data.startswith(b"\x5d\x00\x00"):
        return "lzma"
    if data.startswith(b"ZF0x"):
        return "joblib-zf"  # joblib's old zlib format
    if data.startswith(b"x") and len(data) > 2 and (data[0] * 256 + data[1]) % 31 == 0:
        return "zlib"
    if len(data) >= 512 and _tar_checksum_ok(data):
        return "tar"
    return "pickle"


def _tar_checksum_ok(data: bytes) -> bool:
    header = data[:512]
    try:
        stored = int(header[148:156].split(b"\0")[0].strip() or b"-1", 8)
    except ValueError:
        return False
    return stored == sum(header[:148]) + 256 + sum(header[156:512])


def _streams(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each consecutive pickle stream at the front of ``data`` (a legacy torch file has five)."""
    spans: list[tuple[int, int]] = []
    at = 0
    while at < len(data) and len(spans) < 8:
        ops, end = disassemble(data, at)
        if not ops or ops[-1].name != "STOP":
            if ops:
                spans.append((at, end))
            break
        spans.append((at, end))
        at = end
    return spans


def _mutate_pickleish(data: bytes, rng: random.Random, splice: Sequence[bytes]) -> bytes:
    spans = _streams(data)
    if not spans:
        return _bytes_mutation(data, rng)
    start, end = rng.choice(spans)
    return data[:start] + mutate_stream(data[start:end], rng, splice) + data[end:]


def _zip_members(data: bytes) -> list[tuple[zipfile.ZipInfo, bytes]] | None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()[:64]
            if sum(i.file_size for i in infos) > _MAX_INNER:
                return None
            return [(i, archive.read(i)) for i in infos]
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError, zlib.error):
        return None
    except (lzma.LZMAError, KeyError, IndexError, struct.error, UnicodeDecodeError, OverflowError):
        return None


def _zip(members: Sequence[tuple[str, bytes, int]]) -> bytes:
    out = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(out, "w") as archive:
        warnings.simplefilter("ignore")  # a duplicate member name is a mutation, not a mistake
        for name, data, method in members:
            info = zipfile.ZipInfo(name, _EPOCH)
            info.compress_type = method
            archive.writestr(info, data)
    return out.getvalue()


_METHODS: Final = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)


def _mutate_zip(data: bytes, rng: random.Random, splice: Sequence[bytes]) -> bytes:  # noqa: C901
    read = _zip_members(data)
    if read is None:
        return _bytes_mutation(data, rng)
    members = [(i.filename, body, i.compress_type) for i, body in read]
    if not members:
        return _zip([("archive/data.pkl", stream([op("NONE")]), zipfile.ZIP_STORED)])
    choice = rng.randrange(9)
    i = rng.randrange(len(members))
    name, body, method = members[i]
    if choice <= 2:  # a member's stream (pickles first)
        picks = [j for j, m in enumerate(members) if m[0].lower().endswith((".pkl", ".npy"))] or [i]
        i = rng.choice(picks)
        name, body, method = members[i]
        if name.lower().endswith(".npy"):
            members[i] = (name, _mutate_npy(body, rng, splice), method)
        else:
            members[i] = (name, _mutate_pickleish(body, rng, splice), method)
    elif choice == 3:  # the name's case, or a name torch or numpy still finds
        new = rng.choice((name.upper(), name.lower(), name.removesuffix(".npy"), name + ".npy", "../" + name))
        members[i] = (new, body, method)
    elif choice == 4:
        rng.shuffle(members)
    elif choice == 5:
        members[i] = (name, body, rng.choice(_METHODS))
    elif choice == 6:  # a second pickle member beside the first
        extra = stream([*_payload(rng), op("NONE")])
        where = name.rsplit("/", 1)[0] + "/" if "/" in name else ""
        members.insert(rng.randrange(len(members) + 1), (where + rng.choice(("DATA.PKL", "other.pkl", "x")), extra, 0))
    elif choice == 7:  # an object .npy member under some name
        obj = _npy_bytes("|O", "(1,)", stream([*_payload(rng), op("NONE")]))
        members.append((rng.choice(("obj.npy", "obj", "OBJ.NPY")), obj, rng.choice(_METHODS)))
    else:
        del members[i]
    packed = _zip(members)
    if rng.random() < 0.1:  # a flag bit set in the first local header (encryption, 0x20, 0x40)
        flags = rng.choice((1, 0x20, 0x40))
        packed = packed[:6] + struct.pack("<H", flags) + packed[8:]
    return packed


def _npy_bytes(descr: str, shape: str, body: bytes, version: int = 1) -> bytes:
    header = f"{{'descr': {descr!r}, 'fortran_order': False, 'shape': {shape}, }}".encode()
    size = 4 if version >= 2 else 2
    header += b" " * (63 - (8 + size + len(header)) % 64) + b"\n"
    fmt = "<I" if version >= 2 else "<H"
    return b"\x93NUMPY" + bytes([version, 0]) + struct.pack(fmt, len(header)) + header + body


_DESCRS: Final = ("|O", "O", "object", "<O", "|O8", "<f4", "<U1", "|b1", "[('a', '|O')]", "[('a', '<f4'), ('b', 'O')]")


def _mutate_npy(data: bytes, rng: random.Random, splice: Sequence[bytes]) -> bytes:
    if len(data) < 10:
        return _bytes_mutation(data, rng)
    version = data[6]
    size = 4 if version >= 2 else 2
    (length,) = struct.unpack_from("<I" if size == 4 else "<H", data, 8)
    start = 8 + size
    header, body = data[start : start + length], data[start + length :]
    choice = rng.randrange(5)
    if choice == 0:
        descr = rng.choice(_DESCRS)
        shape = rng.choice(("(1,)", "(2,)", "()", "(0,)"))
        if descr.startswith("["):  # a structured dtype: written as a list literal, not a string
            text = f"{{'descr': {descr}, 'fortran_order': False, 'shape': {shape}, }}".encode()
            text += b" " * (63 - (8 + size + len(text)) % 64) + b"\n"
            fmt = "<I" if size == 4 else "<H"
            return data[:6] + bytes([version, 0]) + struct.pack(fmt, len(text)) + text + body
        return _npy_bytes(descr, shape, body, version if version in {1, 2, 3} else 1)
    if choice == 1:
        new_version = rng.choice((1, 2, 3))
        return _npy_bytes("|O", "(1,)", body, new_version)
    if choice == 2:
        return data[:start] + header + _mutate_pickleish(body, rng, splice)
    if choice == 3:
        return data[:start] + header + body + rng.choice((b"\n", b"\x00", stream(_payload(rng))))
    return _bytes_mutation(data, rng)


def _tar_members(data: bytes) -> list[tuple[str, bytes]] | None:
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            out = []
            for info in archive.getmembers()[:32]:
                f = archive.extractfile(info) if info.isfile() and info.size <= _MAX_INNER else None
                out.append((info.name, f.read() if f is not None else b""))
            return out
    except (tarfile.TarError, OSError, ValueError, EOFError, UnicodeDecodeError, OverflowError):
        return None


def _tar(members: Sequence[tuple[str, bytes]], *, ustar: bool = True) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT if ustar else tarfile.USTAR_FORMAT) as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            archive.addfile(info, io.BytesIO(data))
    raw = bytearray(out.getvalue())
    if not ustar:  # old-style headers: no magic, the checksum still right
        at = 0
        while at + 512 <= len(raw) and any(raw[at : at + 512]):
            header = raw[at : at + 512]
            size = int(header[124:136].split(b"\0")[0].strip() or b"0", 8)
            raw[at + 257 : at + 265] = bytes(8)
            raw[at + 148 : at + 156] = b" " * 8
            checksum = sum(raw[at : at + 512])
            raw[at + 148 : at + 156] = f"{checksum:06o}\0 ".encode()
            at += 512 + (size + 511) // 512 * 512
    return bytes(raw)


def _mutate_tar(data: bytes, rng: random.Random, splice: Sequence[bytes]) -> bytes:
    members = _tar_members(data)
    if not members:
        return _bytes_mutation(data, rng)
    choice = rng.randrange(4)
    i = rng.randrange(len(members))
    name, body = members[i]
    if choice <= 1:
        members[i] = (name, _mutate_pickleish(body, rng, splice))
    elif choice == 2:
        members.insert(0, ("storages", stream([*_payload(rng), op("NONE")])))
    else:
        rng.shuffle(members)
    return _tar(members, ustar=rng.random() < 0.5)


def mutate_named(
    name: str, data: bytes, rng: random.Random, corpus: Sequence[tuple[str, bytes]] = ()
) -> tuple[str, bytes]:
    """A mutant of the file ``name`` holding ``data``: its container or one of its streams, sometimes its name.

    ``corpus`` provides streams to splice from and files to wrap.  Never
    raises on any bytes.
    """
    splice = [d for _, d in rng.sample(list(corpus), min(4, len(corpus)))] if corpus else []
    roll = rng.random()
    if roll < 0.08:
        return rng.choice(_NAMES), data
    if roll < 0.16:
        return _wrap(name, data, rng)
    return name, _mutate_inner(data, rng, splice, 0)


def _mutate_inner(data: bytes, rng: random.Random, splice: Sequence[bytes], depth: int) -> bytes:
    kind = magic(data)
    if kind == "zip":
        return _mutate_zip(data, rng, splice)
    if kind == "npy":
        return _mutate_npy(data, rng, splice)
    if kind == "tar":
        return _mutate_tar(data, rng, splice)
    if kind in _COMPRESSORS and depth < 2:
        compress, decompress = _COMPRESSORS[kind]
        try:
            inner = decompress(data)
        except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error):
            return _bytes_mutation(data, rng)
        if len(inner) > _MAX_INNER:
            return _bytes_mutation(data, rng)
        mutated = _mutate_inner(inner, rng, splice, depth + 1)
        if rng.random() < 0.2:
            compress = _COMPRESSORS[rng.choice(list(_COMPRESSORS))][0]
        return compress(mutated)
    return _mutate_pickleish(data, rng, splice)


def _wrap(name: str, data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """``data`` (taken as a pickle) put into another container."""
    choice = rng.randrange(6)
    if choice == 0:
        return "pytorch_model.bin", _zip([("archive/data.pkl", data, 0), ("archive/version", b"3\n", 0)])
    if choice == 1:
        return "arr.npy", _npy_bytes(rng.choice(("|O", "object", "O")), "(1,)", data)
    if choice == 2:
        method = rng.choice(("gzip", "bz2", "xz", "lzma", "zlib", "joblib-zf"))
        ext = {"gzip": ".gz", "bz2": ".bz2", "xz": ".xz", "lzma": ".lzma"}.get(method, ".joblib")
        return name + ext, _COMPRESSORS[method][0](data)
    if choice == 3:
        return "model.tar", _tar(
            [("storages", data), ("tensors", stream([op("EMPTY_LIST")]))], ustar=rng.random() < 0.5
        )
    if choice == 4:
        return "arrs.npz", _zip([("a.npy", _npy_bytes("|O", "(1,)", data), rng.choice(_METHODS))])
    return "pytorch_model.bin", b"\x80\x02" + b"N0" * rng.randrange(1, 5) + data


# -- seeds ---------------------------------------------------------------------------------
def _state_dict(protocol: int, tensor_global: tuple[str, str] = ("torch._utils", "_rebuild_tensor_v2")) -> bytes:
    """An OrderedDict of one float tensor by persistent id, as torch.save writes it."""
    storage = [
        op("MARK"),
        text_op("storage"),
        *global_ops("torch", "FloatStorage"),
        text_op("0"),
        text_op("cpu"),
        int_op(4),
        op("TUPLE"),
        op("BINPERSID"),
    ]
    body = [*call_ops("collections", "OrderedDict", []), op("MARK"), text_op("weight")]
    tensor_ops = call_ops(
        *tensor_global,
        [
            *storage,
            int_op(0),
            int_op(4),
            op("TUPLE1"),
            int_op(1),
            op("TUPLE1"),
            op("NEWFALSE"),
            *call_ops("collections", "OrderedDict", []),
        ],
    )
    body += [*tensor_ops, op("SETITEMS")]
    head = [op("PROTO", bytes([protocol]))]
    if protocol >= 4:
        head.append(op("FRAME", struct.pack("<Q", 0)))
    return assemble([*head, *body, op("STOP")], frames=protocol >= 4)


def _hostile_seeds() -> dict[str, bytes]:
    """Assembled files whose loading calls a harmless global off the allowlists (os.getcwd, builtins.len)."""
    cwd = [*call_ops("os", "getcwd", []), op("POP")]
    length = [*call_ops("builtins", "len", [text_op("x")]), op("POP")]
    state = _state_dict(2)
    fixed = random.Random(1)  # noqa: S311 - a fixed seed: the same file on every run
    return {
        "n_call_reduce_p2.pkl": stream([*cwd, op("NONE")]),
        "n_call_inst_p0.pkl": stream([*call_ops("os", "getcwd", [], "i"), op("POP"), op("NONE")], 0),
        "n_call_obj_p1.pkl": stream(
            [*call_ops("builtins", "len", [text_op("x", how="U")], "o"), op("POP"), op("NONE")], 1
        ),
        "n_call_newobj_p2.pkl": stream([*call_ops("builtins", "len", [text_op("x")], "\x81"), op("POP"), op("NONE")]),
        "n_call_stack_global_p4.pkl": stream(
            [*call_ops("builtins", "len", [text_op("x")], "\x93"), op("POP"), op("NONE")], 4
        ),
        "n_call_stack_global_memo_p5.pkl": assemble(
            [
                op("PROTO", b"\x05"),
                text_op("builtins", how="\x8c"),
                op("MEMOIZE"),
                op("POP"),
                op("BINGET", b"\x00"),
                text_op("len", how="\x8c"),
                op("STACK_GLOBAL"),
                text_op("x"),
                op("TUPLE1"),
                op("REDUCE"),
                op("STOP"),
            ]
        ),
        "n_call_build_setstate_p2.pkl": stream(
            [*global_ops("builtins", "len"), op("EMPTY_DICT"), op("BUILD"), op("POP"), op("NONE")]
        ),
        "n_leading_push_pop.pkl": b"N0" + stream([*length, op("NONE")], 0),
        "n_leading_push_pop.txt": b"N0" + stream([*length, op("NONE")], 0),
        "n_proto2_push_pop_then_call.bin": b"\x80\x02" + b"N0" * 4 + stream([*length, op("NONE")], 0),
        "n_protocol0_call_then_junk.pkl": stream([*call_ops("os", "getcwd", [], "i")], 0)[:-1] + b"0\xff\xff",
        "y_frame_ends_inside_binbytes_length.pkl": _frame_desync(),
        "n_state_dict_then_call_after_stop.pt": state + stream([*cwd, op("NONE")]),
        "n_load_from_bytes_nested.pkl": stream([*_nested(fixed), op("NONE")]),
        "n_rebuild_from_type_v2_load_from_bytes.pkl": stream([*_nested(fixed, stream([*cwd, op("NONE")])), op("NONE")]),
        "n_ext_code_1.pkl": stream([op("EXT1", b"\x01"), op("POP"), op("NONE")]),
        "n_zip_upper_data_pkl.pt": _zip(
            [
                ("archive/DATA.PKL", stream([*cwd, op("NONE")]), 0),
                ("archive/other.pkl", state, 0),
                ("archive/version", b"3\n", 0),
            ]
        ),
        "n_zip_call.pt": _zip([("archive/data.pkl", stream([*cwd, op("NONE")]), 0), ("archive/version", b"3\n", 0)]),
        "n_npy_descr_object_word.npy": _npy_bytes("object", "(1,)", stream([*cwd, op("NONE")])),
        "n_npy_structured_object_field.npy": _npy_struct_object(stream([*cwd, op("NONE")])),
        "n_npz_member_without_npy.npz": _zip([("a", _npy_bytes("|O", "(1,)", stream([*cwd, op("NONE")])), 0)]),
        "n_npz_member_bzip2.npz": _zip(
            [("a.npy", _npy_bytes("|O", "(1,)", stream([*cwd, op("NONE")])), zipfile.ZIP_BZIP2)]
        ),
        "n_tar_no_ustar_storages.tar": _tar(
            [("storages", stream([*cwd, op("EMPTY_LIST")])), ("tensors", stream([op("EMPTY_LIST")]))], ustar=False
        ),
        "n_gzip_call.pkl.gz": gzip.compress(stream([*cwd, op("NONE")]), mtime=0),
        "n_bz2_call.pkl.bz2": bz2.compress(stream([*cwd, op("NONE")])),
        "n_xz_call.pkl.xz": lzma.compress(stream([*cwd, op("NONE")])),
        "n_lzma_call.joblib": lzma.compress(stream([*cwd, op("NONE")]), format=lzma.FORMAT_ALONE),
        "n_joblib_zf_call.joblib": _COMPRESSORS["joblib-zf"][0](stream([*cwd, op("NONE")])),
        "n_joblib_zlib_call.joblib": zlib.compress(stream([*cwd, op("NONE")])),
        "n_joblib_zf_call_named.bin": _COMPRESSORS["joblib-zf"][0](stream([*cwd, op("NONE")])),
    }


def _frame_desync() -> bytes:
    """A FRAME of 2 bytes that ends inside a BINBYTES length.

    pickle.load on a file drops what is left of a frame when a read runs
    past it, so it reads a zero length from the 4 bytes after the frame,
    then the call.  Read as one stream, the length is 1 + the call's size:
    the call is data.
    """
    hidden = assemble([*call_ops("builtins", "len", [text_op("x")]), op("POP")])
    frame = b"B" + bytes([1 + len(hidden)])
    return b"\x80\x04" + op("FRAME", struct.pack("<Q", len(frame))).encode() + frame + bytes(4) + hidden + b"N."


def _npy_struct_object(body: bytes) -> bytes:
    text = b"{'descr': [('a', '|O')], 'fortran_order': False, 'shape': (1,), }"
    text += b" " * (63 - (10 + len(text)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text + body


def _clean_seeds() -> dict[str, bytes]:
    """Assembled files that load without calling anything off the allowlists."""
    state2, state4 = _state_dict(2), _state_dict(4)
    return {
        "y_state_dict_p2.pkl": state2,
        "y_state_dict_p4_frame.pkl": state4,
        "y_builtins_p0.pkl": stream(
            [op("MARK"), int_op(1), text_op("a", how="V"), op("LIST"), op("NONE"), op("POP")], 0
        ),
        "y_set_frozenset_p4.pkl": stream(
            [op("EMPTY_SET"), op("MARK"), int_op(1), op("ADDITEMS"), op("POP"), op("MARK"), int_op(2), op("FROZENSET")],
            4,
        ),
        "y_bytearray8_p5.pkl": stream([bytes_op(b"abc", how="\x96")], 5),
        "y_memo_put_get.pkl": stream([text_op("a"), op("BINPUT", b"\x01"), op("BINGET", b"\x01"), op("TUPLE2")]),
        "y_zip_state_dict.pt": _zip(
            [
                ("archive/data.pkl", state2, 0),
                ("archive/byteorder", b"little", 0),
                ("archive/data/0", bytes(16), 0),
                ("archive/version", b"3\n", 0),
            ]
        ),
        "y_zip_state_dict_p4.pt": _zip(
            [("archive/data.pkl", state4, 0), ("archive/data/0", bytes(16), 0), ("archive/version", b"3\n", 0)]
        ),
        "y_npy_float.npy": _npy_bytes("<f4", "(2,)", bytes(8)),
        "y_npz_float_deflate.npz": _zip([("a.npy", _npy_bytes("<f4", "(2,)", bytes(8)), zipfile.ZIP_DEFLATED)]),
        "y_gzip_builtins.pkl.gz": gzip.compress(stream([op("EMPTY_DICT")]), mtime=0),
    }


def _writer_seeds() -> dict[str, bytes]:
    """Files the real writers make (torch.save, pickle, numpy, joblib), for whichever are installed."""
    import pickle  # noqa: PLC0415 - pickle.dumps of plain values only

    out: dict[str, bytes] = {}
    value = {"a": [1, 2.5, "x", b"y", None, True], "s": {1, 2}, "f": frozenset({3}), "c": 1j, "b": bytearray(b"z")}
    for protocol in range(6):
        out[f"y_pickle_dumps_builtins_p{protocol}.pkl"] = pickle.dumps(value, protocol=protocol)
    try:
        import numpy as np  # noqa: PLC0415
    except ImportError:
        return out
    buf = io.BytesIO()
    np.save(buf, np.arange(4, dtype=np.float32))
    out["y_np_save_float.npy"] = buf.getvalue()
    buf = io.BytesIO()
    np.save(buf, np.array([1, "abc", {"a": 1}], dtype=object), allow_pickle=True)
    out["d_np_save_object_builtins.npy"] = buf.getvalue()
    buf = io.BytesIO()
    np.savez_compressed(buf, a=np.arange(3), b=np.ones(2, dtype=np.float16))
    out["y_np_savez_compressed.npz"] = _rezip_fixed(buf.getvalue())
    out["y_pickle_numpy_array_p2.pkl"] = pickle.dumps(np.arange(3, dtype=np.int32), protocol=2)
    out["y_pickle_numpy_array_p5.pkl"] = pickle.dumps(np.arange(3, dtype=np.int32), protocol=5)
    try:
        import joblib  # type: ignore[import-untyped]  # noqa: PLC0415 - no stubs published
    except ImportError:
        joblib = None
    if joblib is not None:
        for compress in (0, "zlib", "gzip", "bz2", "xz", "lzma"):
            buf = io.BytesIO()
            joblib.dump({"coef": np.arange(4, dtype=np.float64)}, buf, compress=(compress, 3) if compress else 0)
            out[f"y_joblib_dump_{compress or 'plain'}.joblib"] = buf.getvalue()
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return out
    state = {"w": torch.arange(4, dtype=torch.float32), "b": torch.zeros(2, dtype=torch.bfloat16)}
    for protocol in (2, 3, 4):
        buf = io.BytesIO()
        torch.save(state, buf, pickle_protocol=protocol)
        out[f"y_torch_save_zip_p{protocol}.pt"] = buf.getvalue()
        buf = io.BytesIO()
        torch.save(state, buf, pickle_protocol=protocol, _use_new_zipfile_serialization=False)
        out[f"y_torch_save_legacy_p{protocol}.bin"] = buf.getvalue()
    out["y_pickle_dumps_tensor_p2.pkl"] = pickle.dumps(torch.arange(3, dtype=torch.float32), protocol=2)
    return out


def _rezip_fixed(data: bytes) -> bytes:
    """The same members with fixed timestamps, so the file is the same on every run."""
    read = _zip_members(data) or []
    return _zip([(i.filename, body, i.compress_type) for i, body in read])


def seed_files() -> dict[str, bytes]:
    """The campaign's seeds by file name: ``n_`` a loader calls a global off the allowlists,
    ``y_`` none does, ``d_`` only data-tier constructors (numpy object arrays of builtins).

    Hostile and assembled files are the same bytes on every run; files from
    torch.save (a serialization id, storage keys), numpy and joblib depend on
    those libraries' versions.
    """
    return {**_clean_seeds(), **_hostile_seeds(), **_writer_seeds()}
