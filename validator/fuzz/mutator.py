# Strategy: a structure-aware mutator for libFuzzer's custom-mutator hook.
# It decodes an input into (N, header tree, data region), applies one to
# three field mutations (dtype names, shape entries, offsets, duplicated or
# removed keys, nesting, metadata), often repairs the layout so the result
# is close to valid, then re-encodes with a randomly chosen spelling
# (whitespace, padding, number forms, escapes, N).  Inputs that do not decode,
# and a share of those that do, get byte mutations instead (libFuzzer's own
# via atheris.Mutate inside the engine, a small Python one elsewhere).
#
# The header tree keeps duplicates and order: an object is an `Obj` (a list
# of [key, value] pairs), an array a plain list.  Output never exceeds
# max_size bytes, and the mutator never raises.  A few percent of the
# mutations (validator/fuzz/_big.py: the campaign's big_rate) build big and
# deep headers instead: nesting far past serde_json's limit, long strings,
# many tensors, sizes up to the 100 MB header limit, within max_size.
# ruff: noqa: PLC0415
# Lazy imports: atheris, numpy, hypothesis and safetensors load, only where used.
from __future__ import annotations

import json
import random
import struct
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from validator._dtypes import DTYPE_BITS
from validator.fuzz import _big

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["HEADER_BYTES", "STRUCTURED", "ByteMutator", "Node", "Obj", "byte_mutate", "mutate", "reductions"]

# A JSON tree that mutations deliberately make ill-typed (a shape that is a
# string, an entry that is an array): the tree is Any on purpose.
Node: TypeAlias = Any
ByteMutator: TypeAlias = "Callable[[bytes, int], bytes]"

_DTYPES: Final = tuple(DTYPE_BITS)
_INTERESTING: Final = (
    0,
    1,
    2,
    3,
    4,
    7,
    8,
    15,
    16,
    255,
    256,
    1023,
    4096,
    65535,
    2**31 - 1,
    2**31,
    2**32 - 1,
    2**32,
    2**53,
    2**62,
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    -1,
    100_000_000,
)
_NEST_DEPTHS: Final = (1, 2, 64, 126, 127, 128, 129, 200, 1000, 1100, 3000)
_BAD_DTYPES: Final = ("f32", "FLOAT32", "", "F", "F33", "F8", "Q4", "F32 ", "BOOL\u0000", "F6")
_NAMES: Final = ("", "a", "__metadata__", "\u202eevil", "\x01", "a/b", "\ud7ff", "x" * 300, "é", "__metadata_")
_WS_CHARS: Final = (" ", "\t", "\n", "\r")
_MAX_DATA: Final = 1 << 16  # the repaired data region stays small


class Obj(list[Any]):
    """A JSON object as a list of [key, value] pairs (duplicates kept)."""


def _decode(data: bytes) -> tuple[Node, bytes] | None:
    if len(data) < 8:
        return None
    n = int.from_bytes(data[:8], "little")
    if 8 + n > len(data):
        return None
    try:
        tree: Node = json.loads(data[8 : 8 + n].decode("utf-8"), object_pairs_hook=lambda p: Obj([k, v] for k, v in p))
    except (ValueError, RecursionError):
        return None
    return tree, data[8 + n :]


# --- field mutations ------------------------------------------------------


def _is_array(node: Node) -> bool:
    return isinstance(node, list) and not isinstance(node, Obj)


def _tensors(root: Obj) -> list[list[Node]]:
    return [pair for pair in root if pair[0] != "__metadata__" and isinstance(pair[1], Obj)]


def _field(entry: Obj, key: str) -> list[Node] | None:
    return next((pair for pair in entry if pair[0] == key), None)


def _number(rng: random.Random, old: int | None = None) -> int:
    if old is not None and rng.random() < 0.5:
        return max(0, old + rng.choice((-8, -4, -2, -1, 1, 2, 4, 8)))
    return rng.choice(_INTERESTING)


def _new_entry(rng: random.Random) -> Obj:
    dtype = rng.choice(_DTYPES)
    shape = [rng.choice((0, 1, 2, 3, 4, 8)) for _ in range(rng.randrange(4))]
    return Obj([["dtype", dtype], ["shape", shape], ["data_offsets", [0, 0]]])


def _nest(rng: random.Random, value: Node) -> Node:
    depth = rng.choice(_NEST_DEPTHS)
    for _ in range(depth):
        value = [value] if rng.random() < 0.8 else Obj([["k", value]])
    return value


def _mutate_entry(rng: random.Random, entry: Obj) -> None:  # noqa: C901, PLR0912 - one branch per mutation
    op = rng.randrange(12)
    dtype, shape, offsets = _field(entry, "dtype"), _field(entry, "shape"), _field(entry, "data_offsets")
    if op == 0 and dtype is not None:
        dtype[1] = rng.choice(_DTYPES)
    elif op == 1 and dtype is not None:
        dtype[1] = rng.choice((*_BAD_DTYPES, Obj([[rng.choice(_DTYPES), None]]), 32, None, [rng.choice(_DTYPES)]))
    elif op == 2 and shape is not None and _is_array(shape[1]):
        dims = shape[1]
        choice = rng.randrange(3)
        if choice == 0 or not dims:
            dims.insert(rng.randrange(len(dims) + 1), _number(rng))
        elif choice == 1:
            dims.pop(rng.randrange(len(dims)))
        else:
            i = rng.randrange(len(dims))
            dims[i] = _number(rng, dims[i] if type(dims[i]) is int else None)
    elif op == 3 and offsets is not None and _is_array(offsets[1]) and offsets[1]:
        i = rng.randrange(len(offsets[1]))
        old = offsets[1][i]
        offsets[1][i] = _number(rng, old if type(old) is int else None)
    elif op == 4 and offsets is not None and _is_array(offsets[1]):
        offsets[1] = rng.choice(([], [0], [0, 0, 0], list(reversed(offsets[1])), [1.0, 2], "0,1", None))
    elif op == 5 and entry:
        entry.pop(rng.randrange(len(entry)))  # drop a field
    elif op == 6 and entry:
        entry.insert(rng.randrange(len(entry) + 1), list(rng.choice(entry)))  # duplicate a field
    elif op == 7:
        entry.append([rng.choice(("x", "offsets", "Dtype", "data_offsets ")), _nest(rng, 1)])
    elif op == 8 and shape is not None:
        shape[1] = rng.choice((None, 3, "3", Obj(), [[1]], [True]))
    elif op == 9:
        rng.shuffle(entry)
    elif op == 10 and shape is not None and _is_array(shape[1]):
        shape[1] = [rng.choice((2**32, 2**63, 2**64 - 1, 0, 1)) for _ in range(rng.randrange(1, 4))]
    elif dtype is not None:
        dtype[1] = rng.choice(("F4", "F6_E2M3", "F6_E3M2"))


def _mutate_root(rng: random.Random, root: Obj) -> None:
    tensors = _tensors(root)
    op = rng.randrange(10)
    if op <= 3 and tensors:
        _mutate_entry(rng, rng.choice(tensors)[1])
    elif op == 4 and root:
        root.pop(rng.randrange(len(root)))  # remove a key
    elif op == 5 and root:
        pair = rng.choice(root)
        root.insert(rng.randrange(len(root) + 1), [pair[0], pair[1]])  # shares the value: fine for encoding
    elif op == 6:
        root.insert(rng.randrange(len(root) + 1), [rng.choice((*_NAMES, f"t{rng.randrange(99)}")), _new_entry(rng)])
    elif op == 7 and tensors:
        pair = rng.choice(tensors)
        choice = rng.randrange(3)
        if choice == 0:
            pair[0] = rng.choice(_NAMES)
        elif choice == 1:  # the entry written as an array
            entry = pair[1]
            pair[1] = [v for k, v in entry if k in ("dtype", "shape", "data_offsets")]
        else:
            pair[1] = _nest(rng, pair[1])
    elif op == 8:
        _mutate_metadata(rng, root)
    elif tensors:
        pair = rng.choice(tensors)
        pair[1].append(["x", _nest(rng, rng.choice((0, "s", None)))])


def _mutate_metadata(rng: random.Random, root: Obj) -> None:
    meta = _field(root, "__metadata__")
    if meta is None:
        root.insert(0, ["__metadata__", Obj([["format", "pt"]])])
        return
    value = meta[1]
    op = rng.randrange(5)
    if op == 0 or not isinstance(value, Obj):
        meta[1] = rng.choice((None, Obj(), "pt", [], Obj([["k", "v"], ["k", "w"]])))
    elif op == 1:
        value.append([rng.choice(("k", "format", "")), rng.choice((1, None, "v", Obj(), "\u0000", "x" * 100))])
    elif op == 2 and value:
        value.pop(rng.randrange(len(value)))
    elif op == 3:
        root.append(["__metadata__", Obj()])  # a duplicate top-level __metadata__
    else:
        value.append(["k", _nest(rng, "v")])


def _repair(root: Obj, data: bytes, rng: random.Random) -> bytes:
    """Lay the well-formed entries out contiguously and size the data region to match."""
    cursor = 0
    for _, entry in _tensors(root):
        dtype, shape, offsets = _field(entry, "dtype"), _field(entry, "shape"), _field(entry, "data_offsets")
        if dtype is None or shape is None or offsets is None or not isinstance(dtype[1], str):
            continue
        if dtype[1] not in DTYPE_BITS:
            continue
        dims = shape[1]
        if not _is_array(dims) or not all(type(d) is int and 0 <= d < 2**64 for d in dims):
            continue
        numel = 1
        for d in dims:
            numel *= d
        nbits = numel * DTYPE_BITS[dtype[1]]
        size = -(-nbits // 8)
        if size > _MAX_DATA or cursor + size > _MAX_DATA:
            continue
        offsets[1] = [cursor, cursor + size]
        cursor += size
    if len(data) >= cursor:
        return data[:cursor]
    return (
        data
        + bytes(rng.randrange(256) for _ in range(min(cursor - len(data), 64)))
        + bytes(max(0, cursor - len(data) - 64))
    )


# --- encoding -------------------------------------------------------------


# json.dumps with keyword arguments builds an encoder per call; these are built once.
_STRING: Final = json.JSONEncoder(ensure_ascii=False).encode
_JSON: Final = json.JSONEncoder().encode
_CONSTANT: Final = {None: "null", True: "true", False: "false"}


class _Style:
    """How one encoding spells whitespace, numbers and strings."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.ws = rng.choice(("", "", "", " ", "\t", "\n", "mixed"))
        self.odd_numbers = rng.random() < 0.15
        self.escape = rng.random() < 0.1

    def space(self) -> str:
        if self.ws == "mixed":
            return "".join(self.rng.choice(_WS_CHARS) for _ in range(self.rng.randrange(3)))
        return self.ws

    def number(self, value: float) -> str:
        if type(value) is int and self.odd_numbers and self.rng.random() < 0.3:
            return self.rng.choice(
                (f"{value}.0", f"{value}e0", f"0{value}", f"+{value}", f"{value}E+0", "-0", f"{value}.")
            )
        return str(value) if type(value) is int else _JSON(value)

    def string(self, value: str) -> str:
        if self.escape and self.rng.random() < 0.5:
            return '"' + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else c for c in value) + '"'
        return _STRING(value)


def _chain(item: Node, style: _Style) -> tuple[str, str, Node]:
    """A chain of one-member arrays and objects (_nest makes them thousands
    deep) as one opening and one closing string, spelt as _encode spells
    each level, and the value inside it."""
    opening: list[str] = []
    closing: list[str] = []
    while isinstance(item, list) and len(item) == 1:
        if isinstance(item, Obj):
            key, item = item[0]
            opening.append("{" + style.space() + style.string(key) + style.space() + ":" + style.space())
            closing.append("}")
        else:
            opening.append("[")
            closing.append("]")
            item = item[0]
    return "".join(opening), "".join(reversed(closing)), item


def _encode(node: Node, style: _Style, out: list[str]) -> None:  # noqa: C901 - one branch per JSON value kind
    # Iterative over an explicit stack: trees may be thousands of levels deep.
    stack: list[Node | tuple[str]] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            out.append(item[0])
        elif isinstance(item, list) and len(item) == 1:
            opening, closing, inner = _chain(item, style)
            out.append(opening)
            stack.append((closing,))
            stack.append(inner)
        elif isinstance(item, Obj):
            out.append("{")
            stack.append(("}",))
            for i, (key, value) in reversed(list(enumerate(item))):
                stack.append(value)
                stack.append((style.space() + style.string(key) + style.space() + ":" + style.space(),))
                if i:
                    stack.append((",",))
        elif isinstance(item, list):
            out.append("[")
            stack.append(("]",))
            for i, value in reversed(list(enumerate(item))):
                stack.append(value)
                if i:
                    stack.append(("," + style.space(),))
        elif isinstance(item, str):
            out.append(style.string(item))
        elif item is None or isinstance(item, bool):
            out.append(_CONSTANT[item])
        else:
            out.append(style.number(item))


def _encode_file(root: Node, data: bytes, rng: random.Random) -> bytes:
    style = _Style(rng)
    parts: list[str] = []
    if rng.random() < 0.05:
        parts.append(rng.choice((" ", "\n", "\t ", "\ufeff")))
    _encode(root, style, parts)
    header = "".join(parts).encode("utf-8", "surrogatepass")
    pad = rng.choice((b" ", b" ", b" ", b"", b"\t", b"\n", b"\r", b"\x00"))
    if pad:
        header += pad * (-len(header) % 8) if rng.random() < 0.8 else pad * rng.randrange(1, 9)
    n = len(header)
    roll = rng.random()
    if roll < 0.05:
        n += rng.choice((-1, 1, 8, -8, len(data), len(data) + 1))
    elif roll < 0.07:
        n = rng.choice((100_000_000, 100_000_001, 2**63, 2**64 - 1))
    n = min(max(n, 0), 2**64 - 1)
    tail = data
    roll = rng.random()
    if roll < 0.05:
        tail = data + bytes(rng.randrange(1, 9))
    elif roll < 0.1 and data:
        tail = data[: rng.randrange(len(data))]
    return struct.pack("<Q", n) + header + tail


def reductions(data: bytes) -> list[bytes]:
    """Smaller variants of a decodable input, for minimising: each top-level
    member removed, then the whole header re-encoded compactly (same tail)."""
    decoded = _decode(data)
    if decoded is None or not isinstance(decoded[0], Obj):
        return []
    root, tail = decoded
    plain = _Style(random.Random(0))  # noqa: S311 - not cryptography
    plain.ws, plain.odd_numbers, plain.escape = "", False, False
    out = []
    for tree in [Obj(root[:i] + root[i + 1 :]) for i in range(len(root))] + [root]:
        parts: list[str] = []
        _encode(tree, plain, parts)
        header = "".join(parts).encode("utf-8", "surrogatepass")
        out.append(struct.pack("<Q", len(header)) + header + tail)
    return out


# --- byte mutations -------------------------------------------------------


def byte_mutate(data: bytes, max_size: int, rng: random.Random | None = None) -> bytes:
    """A small byte-level mutator (used where libFuzzer's is not available)."""
    rng = rng or random.Random(len(data))  # noqa: S311 - fuzzing, not cryptography
    buf = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        op = rng.randrange(6)
        if op == 0 and buf:
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        elif op == 1:
            buf.insert(rng.randrange(len(buf) + 1), rng.randrange(256))
        elif op == 2 and buf:
            i = rng.randrange(len(buf))
            del buf[i : i + rng.randrange(1, 9)]
        elif op == 3 and buf:
            i = rng.randrange(len(buf))
            buf[i:i] = buf[i : i + rng.randrange(1, 17)]
        elif op == 4:
            from validator.fuzz.seeds import dictionary_tokens

            i = rng.randrange(len(buf) + 1)
            buf[i:i] = rng.choice(dictionary_tokens())
        elif len(buf) >= 8:
            buf[:8] = struct.pack("<Q", min(max(0, len(buf) - 8 + rng.choice((-1, 0, 1))), 2**64 - 1))
    return bytes(buf[:max_size])


# How each input is mutated, by the seed libFuzzer passes (percent): the
# structure-aware mutator below (decode, mutate fields, repair, re-encode:
# about 20 times the cost of the others), libFuzzer's byte mutations on the
# header alone with N rewritten to fit (cheap, and the header still reaches
# the JSON reader), or on the whole input (N and the data region too).
STRUCTURED: Final = 30
HEADER_BYTES: Final = 55


def mutate(data: bytes, max_size: int, seed: int, byte_mutator: ByteMutator | None = None) -> bytes:
    """Mutate one input: big and deep (validator/fuzz/_big.py), structure-aware,
    the header's bytes, or the whole input's bytes."""
    if _big.chosen(seed):
        out = _big.big(data, max_size, seed)
        if out is not None:
            return out
    roll = seed % 100
    if roll >= STRUCTURED:
        if roll < STRUCTURED + HEADER_BYTES:
            out = _header_bytes(data, max_size, seed, byte_mutator)
            if out is not None:
                return out
        return _whole_bytes(data, max_size, seed, byte_mutator)
    rng = random.Random(seed)  # noqa: S311 - fuzzing, not cryptography
    decoded = _decode(data)
    if decoded is None or not isinstance(decoded[0], Obj):
        out = _header_bytes(data, max_size, seed, byte_mutator)
        return out if out is not None else _whole_bytes(data, max_size, seed, byte_mutator)
    root, tail = decoded
    for _ in range(rng.randrange(1, 4)):
        _mutate_root(rng, root)
    if rng.random() < 0.6:
        tail = _repair(root, tail, rng)
    out = _encode_file(root, tail, rng)
    if len(out) > max_size:
        return byte_mutate(data, max_size, rng) if len(data) <= max_size else data[:max_size]
    return out


def _whole_bytes(data: bytes, max_size: int, seed: int, byte_mutator: ByteMutator | None) -> bytes:
    if byte_mutator is not None:
        return bytes(byte_mutator(data, max_size))[:max_size]
    return byte_mutate(data, max_size, random.Random(seed))  # noqa: S311 - fuzzing, not cryptography


def _header_bytes(data: bytes, max_size: int, seed: int, byte_mutator: ByteMutator | None) -> bytes | None:
    """Byte mutations of the header alone, N rewritten to its new length; None without 8 bytes.

    When N does not fit the input, half the time the rest of the input is
    taken for the header (so that inputs whose prefix broke return to the
    JSON reader), and otherwise None.
    """
    if len(data) < 8:
        return None
    n = int.from_bytes(data[:8], "little")
    if 8 + n > len(data):
        if seed & 0x100:
            return None
        n = len(data) - 8
    tail = data[8 + n :]
    room = max_size - 8 - len(tail)
    if room <= 0:
        return None
    header = data[8 : 8 + n]
    if byte_mutator is not None:
        header = bytes(byte_mutator(header, room))[:room]
    else:
        header = byte_mutate(header, room, random.Random(seed))  # noqa: S311 - fuzzing, not cryptography
    return struct.pack("<Q", len(header)) + header + tail
