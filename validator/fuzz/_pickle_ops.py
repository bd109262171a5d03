# Strategy: the pickle opcode table and its codec (validator/fuzz/pickle_mutator.py):
# one row per opcode of protocols 0 to 5 saying how its argument is laid out,
# a disassembler that stops at what it cannot read, an assembler with or
# without FRAMEs, and small builders of ops, globals, calls and streams.
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "LENGTHS",
    "MAX_INNER",
    "OPCODES",
    "Op",
    "assemble",
    "bytes_op",
    "call_ops",
    "disassemble",
    "global_ops",
    "int_op",
    "op",
    "stream",
    "text_op",
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
LENGTHS: Final = {"n1": ("<B", 1), "n4": ("<I", 4), "n8": ("<Q", 8)}
# A decoded stream: at most this many opcodes (the rest is kept as a tail).
_MAX_OPS: Final = 20_000
# Decompressed or member sizes the mutator works on.
MAX_INNER: Final = 4 << 20


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
    fmt, size = LENGTHS[layout]
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
