# Strategy: mutations of one pickle stream (validator/fuzz/pickle_mutator.py):
# the stream as a list of opcodes, mutated by a table of list edits (insert,
# delete, duplicate, swap, renamed and respelt globals, memo spellings,
# FRAMEs, lying lengths, nested streams, EXT codes), then assembled again;
# bytes that do not decode are kept as a tail.  Payloads are harmless
# callables off the allowlists.
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Final

from validator.fuzz._pickle_ops import (
    LENGTHS,
    OPCODES,
    Op,
    assemble,
    bytes_op,
    call_ops,
    disassemble,
    global_ops,
    int_op,
    op,
    stream,
    text_op,
)

if TYPE_CHECKING:
    import random
    from collections.abc import Sequence

__all__ = ["ALLOWED_NAMES", "HARMLESS_NAMES", "bytes_mutation", "mutate_stream", "nested", "payload"]

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
    if layout in LENGTHS:
        payload = rng.choice((b"", b"x", b"weight", b"\x80\x02N.", bytes(300)))
        if name in {"LONG1", "LONG4"}:
            payload = rng.choice((b"", b"\x01", b"\xff" * 9))
        fmt, _ = LENGTHS[layout]
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
    at = [i for i, o in enumerate(ops) if OPCODES.get(o.code, ("", ""))[1] in LENGTHS]
    if not at:
        return
    i = rng.choice(at)
    layout = OPCODES[ops[i].code][1]
    fmt, size = LENGTHS[layout]
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
        ops[i] = bytes_op(o.arg[LENGTHS[layout][1] :], how=rng.choice(("B", "C", "\x8e", "\x96")))
    elif o.name == "PROTO":
        ops[i] = op("PROTO", bytes([rng.choice((0, 1, 2, 3, 4, 5, 6, 255))]))
    else:
        ops[i:i] = _random_op(rng)


def payload(rng: random.Random) -> list[Op]:
    """A call of a harmless global off the allowlists, in one of the calling spellings, its result popped."""
    module, name = rng.choice(HARMLESS_NAMES)
    how = rng.choice(("R", "i", "o", "\x81", "\x93"))
    return [*call_ops(module, name, [text_op("x")], how), op("POP")]


def nested(rng: random.Random, inner: bytes | None = None) -> list[Op]:
    """torch.storage._load_from_bytes on a nested stream, directly or under _rebuild_from_type_v2."""
    body = inner if inner is not None else stream([*payload(rng), op("NONE")], rng.choice((2, 4)))
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
        return bytes_mutation(data, rng)
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
            ops[where:where] = payload(rng)
        elif choice == 11:
            ops[where:where] = nested(rng, mutate_stream(data, rng) if rng.random() < 0.3 else None)
        elif choice == 12:
            ops[where:where] = [*_ext(rng), op("POP")]
        elif choice == 13:
            tail = rng.choice((stream([*payload(rng), op("NONE")]), b"\n", b"\x00" * 3, b"N.")) + tail
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


def bytes_mutation(data: bytes, rng: random.Random) -> bytes:
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
