# Strategy: pathological headers and the small valid file that the
# truncation and mutation tests start from.  Each PATHOLOGICAL case is
# (id, file bytes, first error slug, where: file bytes -> absolute offset).
# test_bad_input.py checks them; the fast-path differential
# (test_fast_paths.py) replays them.
from __future__ import annotations

from _stbytes import at, data_start, entry, prefix, st

MAX = 100_000_000
U64 = 2**64 - 1
F4B = b"\0" * 4

VALID = st(
    '{"__metadata__":{"k":"v"},"a":' + entry("F16", (2,), (0, 4)) + ',"b":' + entry("U8", (3,), (4, 7)) + "}", b"\1" * 7
)


_T = '{"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]'


def _case(header: str | bytes, data: bytes = F4B) -> bytes:
    return st(header, data)


PATHOLOGICAL = [
    (
        "arrays-nested-10^6-in-unknown-field",
        _case(_T + ',"x":' + "[" * 10**6 + "]" * 10**6 + "}}"),
        "json-depth",
        lambda b: at(b, "[[") + 127 - 2,
    ),
    ("objects-nested-10^6-unclosed", _case('{"a":' * 10**6), "json-depth", lambda b: 8 + 127 * 5),
    ("arrays-nested-10^6-at-root", _case("[" * 10**6), "json-depth", lambda b: 8 + 127),
    (
        "5000-digit-integer-in-shape",
        _case('{"t":{"dtype":"F32","shape":[' + "7" * 5000 + '],"data_offsets":[0,4]}}'),
        "json-number",
        lambda b: at(b, "777"),
    ),
    (
        "100000-digit-integer-in-shape",
        _case('{"t":{"dtype":"F32","shape":[' + "7" * 100_000 + '],"data_offsets":[0,4]}}'),
        "json-number",
        lambda b: at(b, "777"),
    ),
    (
        "5000-digit-integer-in-unknown-field",
        _case(_T + ',"x":' + "7" * 5000 + "}}"),
        "json-number",
        lambda b: at(b, "777"),
    ),
    (
        "100000-digit-integer-in-unknown-field",
        _case(_T + ',"x":' + "7" * 100_000 + "}}"),
        "json-number",
        lambda b: at(b, "777"),
    ),
    (
        "100000-digit-negative-integer",
        _case(_T + ',"x":-' + "7" * 100_000 + "}}"),
        "json-number",
        lambda b: at(b, "-777"),
    ),
    (
        "100000-digit-fraction-accepted-then-unknown",
        _case(_T + ',"x":0.' + "7" * 100_000 + "}}"),
        "tensor-field-unknown",
        lambda b: at(b, '"x"'),
    ),
    ("exponent-of-100000-digits", _case(_T + ',"x":1e' + "7" * 100_000 + "}}"), "json-number", lambda b: at(b, "1e7")),
    (
        "offsets-end-2^64",
        _case('{"t":' + entry(offsets=(U64 - 3, U64 + 1)) + "}"),
        "offsets-invalid",
        lambda b: at(b, str(U64 + 1)),
    ),
    ("offsets-at-2^64-1", _case('{"t":' + entry(offsets=(U64 - 4, U64)) + "}"), "offsets-not-contiguous", data_start),
    (
        "offsets-wrapping-past-2^64",
        _case('{"t":' + entry(offsets=(U64, 3)) + "}"),
        "offsets-reversed",
        lambda b: data_start(b) + U64,
    ),
    (
        "offsets-negative",
        _case('{"t":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}}'),
        "offsets-invalid",
        lambda b: at(b, "-4"),
    ),
    (
        "offsets-negative-2^63",
        _case('{"t":{"dtype":"F32","shape":[1],"data_offsets":[0,-9223372036854775808]}}'),
        "offsets-invalid",
        lambda b: at(b, "-9"),
    ),
    ("shape-2^64-1-times-2", _case('{"t":' + entry(shape=(U64, 2), offsets=(0, 4)) + "}"), "size-overflow", data_start),
    ("n-2^64-1", prefix(U64) + b"{}", "header-too-large", lambda b: 0),
    ("n-100000000-with-short-file", prefix(MAX) + b"{}" + b" " * 1000, "header-length-exceeds-file", lambda b: 0),
    ("n-zero", prefix(0) + F4B, "json-syntax", lambda b: 8),
]
