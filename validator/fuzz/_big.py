# Strategy: the "big and deep" mutation family.  The structure-aware
# mutator keeps inputs small and nests at most a few thousand levels; the
# bugs that need size (a recursive walk that overflows its stack at 100,000
# levels, a quadratic scan, a length kept in 16 bits) are never reached that
# way.  This family builds one large construct and puts it into the input's
# header, written straight as bytes (a 100,000-level tree is never built as
# Python objects):
#   deep    nesting around serde_json's limit of 128 and far past it (up to
#           a million levels), arrays, objects or both, now and then left
#           unclosed;
#   string  one long string (a name, a dtype, a metadata value, a key);
#   many    thousands of tensor entries or metadata keys, laid out validly;
#   size    the header padded to a size tier, up to the 100 MB limit and one
#           byte past it.
# Budget: every output is at most min(max_size, budget) bytes, where budget
# is the campaign's big_max_bytes (--big-max-bytes, default 16 MiB), and a
# construct that would not fit is shrunk to fit before any bytes are built,
# so one input never allocates more than a few times the budget and takes
# milliseconds.  The family is picked for the campaign's big_rate of the
# mutations (--big-rate, a fraction, default 0.03; 0 turns it off).  Both
# come from the one configuration the campaign passes its children: the
# child's entry (inprocess.fuzz, afl_mutator.init) hands them to configure()
# through validator/fuzz/config.py's configure_big(); this module reads no
# environment and imports nothing of stcheck's.
from __future__ import annotations

import dataclasses
import json
import random
import struct
from typing import Final

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_RATE",
    "HEADER_LIMIT",
    "Plan",
    "big",
    "budget",
    "chosen",
    "configure",
    "plan",
    "rate",
]

DEFAULT_RATE: Final = 0.03
DEFAULT_BUDGET: Final = 16 << 20
HEADER_LIMIT: Final = 100_000_000  # the reference's largest header
SERDE_DEPTH: Final = 128  # serde_json's recursion limit

# Depths: both sides of serde_json's limit, then far past it.
_DEPTHS: Final = (127, 128, 129, 130, 255, 256, 257, 1_000, 10_000, 50_000, 100_000, 200_000, 1_000_000)
_STRING_LENGTHS: Final = (256, 4_096, 65_535, 65_536, 65_537, 1 << 20, 1 << 24)
_COUNTS: Final = (256, 1_000, 10_000, 65_536, 100_000)
_SIZES: Final = (1 << 16, 1 << 20, 1 << 24, HEADER_LIMIT, HEADER_LIMIT + 1)
_PLACEHOLDER: Final = "\x00stcheck-big\x00"
_MINIMAL: Final = {"t": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}
_RATE_SCALE: Final = 10_000
_MIX_ADD: Final = 0x5BD1E995  # a multiplicative hash: spreads consecutive seeds
_MIX_MUL: Final = 0x9E3779B1


# The campaign's settings, set once by configure(): the mutator runs thousands of times a second.
_SETTINGS: Final = {"rate": DEFAULT_RATE, "budget": DEFAULT_BUDGET}


def configure(rate: float, budget: int) -> None:
    """Use the campaign's rate (clamped to [0, 1]) and budget (at least 64 bytes) from now on."""
    _SETTINGS.update(rate=min(max(float(rate), 0.0), 1.0), budget=max(int(budget), 64))


def rate() -> float:
    """The fraction of mutations this family takes."""
    return _SETTINGS["rate"]


def budget() -> int:
    """The largest input this family builds, in bytes."""
    return int(_SETTINGS["budget"])


def chosen(seed: int, share: float | None = None) -> bool:
    """Whether the mutation with this seed belongs to the family.

    Decided by a hash of the seed's digits above the two the mutator's roll
    uses, so the family cuts across the structure-aware and byte-level
    shares alike, and small seeds are not all picked.
    """
    threshold = _SETTINGS["rate"] if share is None else share
    mixed = (((seed // 100) + _MIX_ADD) * _MIX_MUL) & 0xFFFFFFFF
    return (mixed >> 16) % _RATE_SCALE < threshold * _RATE_SCALE


@dataclasses.dataclass(frozen=True)
class Plan:
    """What one mutation of the family builds, before it is fitted to the budget."""

    family: str  # deep, string, many or size
    amount: int  # levels, characters, entries or header bytes


# Deep nesting twice as often as the others: the stack overflows it finds
# are the bugs nothing else reaches.
_FAMILIES: Final = (
    ("deep", _DEPTHS),
    ("deep", _DEPTHS),
    ("string", _STRING_LENGTHS),
    ("many", _COUNTS),
    ("size", _SIZES),
)


def _plan(rng: random.Random) -> Plan:
    family, amounts = rng.choice(_FAMILIES)
    return Plan(family, rng.choice(amounts))


def plan(seed: int) -> Plan:
    """The construct ``big(..., seed)`` builds (shrunk there to fit the budget)."""
    return _plan(random.Random(seed))  # noqa: S311 - fuzzing, not cryptography


def _header_of(data: bytes) -> tuple[object, bytes]:
    """The input's header as plain JSON values and its data region; a minimal one when it does not decode."""
    if len(data) >= 8:
        n = int.from_bytes(data[:8], "little")
        if 8 + n <= len(data):
            try:
                tree = json.loads(data[8 : 8 + n])
            except (ValueError, RecursionError):
                pass
            else:
                if isinstance(tree, dict):
                    return tree, data[8 + n :]
    return dict(_MINIMAL), b"\x00"


def _deep(rng: random.Random, depth: int, room: int) -> bytes:
    kind = rng.randrange(3)
    opening, closing = [(b"[", b"]"), (b'{"a":', b"}"), (b'[{"a":', b"}]")][kind]
    per_level = len(opening) + len(closing)
    if kind == 2:
        depth //= 2
    depth = max(1, min(depth, (room - 8) // per_level))
    inner = rng.choice((b"0", b"[]", b"{}", b'"x"', b"null"))
    tail = closing * depth if rng.random() < 0.9 else closing * rng.randrange(depth)  # sometimes left unclosed
    return opening * depth + inner + tail


def _string(rng: random.Random, length: int, room: int) -> bytes:
    length = min(length, max(room - 16, 1))
    unit = rng.choice((b"a", b"\\u0041", "\u00e9".encode(), b"\\\\", b"\xf0\x9f\x98\x80"))
    count = max(1, length // len(unit))
    return b'"' + unit * count + b'"'


def _encode(tree: object) -> bytes:
    return json.dumps(tree, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def _place(rng: random.Random, tree: dict[str, object], value: bytes) -> bytes:
    """``tree``'s header with ``value`` (encoded JSON) put in one place: a metadata
    value, a new key, a tensor's field, or (for deep values) the whole header."""
    tensors = [k for k, v in tree.items() if k != "__metadata__" and isinstance(v, dict)]
    where = rng.randrange(5)
    if where == 0:
        return value
    if where == 1 or not tensors:
        tree["__metadata__"] = {"k": _PLACEHOLDER}
    elif where == 2:
        tree[f"big{rng.randrange(99)}"] = _PLACEHOLDER
    else:
        name = rng.choice(tensors)
        entry = dict(tree[name])  # type: ignore[call-overload]
        entry[rng.choice(("shape", "dtype", "x", "data_offsets"))] = _PLACEHOLDER
        tree[name] = entry
    return _encode(tree).replace(_encode(_PLACEHOLDER), value, 1)


def _many(rng: random.Random, count: int, room: int) -> tuple[bytes, bytes]:
    """Thousands of valid tensor entries (one byte each, or empty) or metadata keys, and their data."""
    per_entry = 72  # the longest entry written below, and its byte of data
    count = max(1, min(count, room // per_entry))
    if rng.random() < 0.3:
        meta = ",".join(f'"k{i}":"v"' for i in range(count))
        return ('{"__metadata__":{' + meta + '},"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}').encode(), b"\0"
    empty = rng.random() < 0.5
    if empty:
        parts = [f'"t{i}":{{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}' for i in range(count)]
        return ("{" + ",".join(parts) + "}").encode(), b""
    parts = [f'"t{i}":{{"dtype":"U8","shape":[1],"data_offsets":[{i},{i + 1}]}}' for i in range(count)]
    return ("{" + ",".join(parts) + "}").encode(), bytes(count)


def big(data: bytes, max_size: int, seed: int, *, limit: int | None = None) -> bytes | None:
    """One big or deep mutation of ``data``, at most min(max_size, budget) bytes; None when nothing fits."""
    cap = min(max_size, int(_SETTINGS["budget"]) if limit is None else limit)
    if cap < 64:
        return None
    rng = random.Random(seed)  # noqa: S311 - fuzzing, not cryptography
    construct = _plan(rng)
    tree, tail = _header_of(data)
    if len(tail) > cap // 2:
        tail = tail[: cap // 2]
    room = cap - 8 - len(tail) - len(_encode(tree)) - 64
    if room < 64:
        tree, tail = dict(_MINIMAL), b"\x00"
        room = cap - 8 - 1 - 128
    if construct.family == "deep":
        header = _place(rng, tree, _deep(rng, construct.amount, room))  # type: ignore[arg-type]
    elif construct.family == "string":
        header = _place(rng, tree, _string(rng, construct.amount, room))  # type: ignore[arg-type]
    elif construct.family == "many":
        header, tail = _many(rng, construct.amount, cap - 8)
        tail = tail[: max(0, cap - 8 - len(header))]
    else:
        header = _encode(tree)
        target = min(construct.amount, cap - 8 - len(tail))
        if target <= len(header):
            return None
        header += rng.choice((b" ", b"\t", b"\n")) * (target - len(header))
    if 8 + len(header) + len(tail) > cap:
        return None
    return struct.pack("<Q", len(header)) + header + tail
