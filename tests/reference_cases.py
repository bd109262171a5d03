# Strategy: hand-made files, each pinned to the verdict of safetensors 0.8.0
# (None = accepted, else the Rust error class).  They cover every reference
# error class and the serde_json/serde quirks of shared/reference-facts.md.
# test_reference_agreement.py checks them three ways; the fast-path
# differential (test_fast_paths.py) replays them.
from __future__ import annotations

from _stbytes import entry, prefix, st
from _stbytes import one_tensor as _t

F4B = b"\0" * 4
U64 = 2**64 - 1
P63 = 2**63


def _two(a: str, b: str) -> str:
    return '{"a":' + a + ',"b":' + b + "}"


def _nest(depth: int) -> str:
    return "[" * depth + "]" * depth


H = "InvalidHeaderDeserialization"

# id, file bytes, pinned reference verdict
TABLE: list[tuple[str, bytes, str | None]] = [
    # --- length prefix ---
    ("empty-file", b"", "HeaderTooSmall"),
    ("7-byte-file", b"\x02\0\0\0\0\0\0", "HeaderTooSmall"),
    ("n-2^64-1", prefix(U64) + b"{}", "HeaderTooLarge"),
    ("n-100000001-before-length-check", prefix(100_000_001), "HeaderTooLarge"),
    ("n-100000000-short-file", prefix(100_000_000) + b"{}", "InvalidHeaderLength"),
    ("n-past-end", prefix(9) + b"{}      ", "InvalidHeaderLength"),
    ("n-zero", prefix(0), H),
    # --- UTF-8 ---
    ("byte-ff", st(b'{"__metadata__":{"a":"\xff"}}'), "InvalidHeader"),
    ("overlong-slash", st(b'{"__metadata__":{"a":"\xc0\xaf"}}'), "InvalidHeader"),
    ("utf8-surrogate-d800", st(b'{"__metadata__":{"a":"\xed\xa0\x80"}}'), "InvalidHeader"),
    ("truncated-multibyte-at-end", prefix(3) + b"{}\xe2", "InvalidHeader"),
    ("utf8-in-name-ok", st('{"\u00e9":' + entry() + "}", F4B), None),
    # --- whitespace, BOM, trailing bytes ---
    ("empty-object", st("{}"), None),
    ("empty-object-unpadded", prefix(2) + b"{}", None),
    ("leading-whitespace", st(" \n\t\r{}"), None),
    ("trailing-tab-cr-lf", prefix(5) + b"{}\t\r\n", None),
    ("trailing-nul", prefix(3) + b"{}\0", H),
    ("bom", st(b"\xef\xbb\xbf{}"), H),
    ("form-feed-padding", prefix(3) + b"{}\x0c", H),
    ("two-objects", st("{}{}"), H),
    ("only-spaces", st("        "), H),
    # --- JSON syntax and tokens ---
    ("trailing-comma", st('{"__metadata__":{"a":"b",}}'), H),
    ("single-quotes", st("{'a':'b'}"), H),
    ("header-array", st("[]"), H),
    ("header-null", st("null"), H),
    ("comment", st("{/*x*/}"), H),
    ("nan-in-unknown-field", st(_t(',"x":NaN'), F4B), H),
    ("infinity-in-unknown-field", st(_t(',"x":Infinity'), F4B), H),
    ("float-1.5-in-unknown-field", st(_t(',"x":1.5'), F4B), None),
    ("1e400-in-unknown-field", st(_t(',"x":1e400'), F4B), H),
    ("1e-400-in-unknown-field", st(_t(',"x":1e-400'), F4B), None),
    ("300-digit-int-in-unknown-field", st(_t(',"x":' + "9" * 300), F4B), None),
    ("400-digit-int-in-unknown-field", st(_t(',"x":' + "9" * 400), F4B), H),
    ("minus-400-digit-int-in-unknown-field", st(_t(',"x":-' + "9" * 400), F4B), H),
    ("0e999999-in-unknown-field", st(_t(',"x":0e999999'), F4B), None),
    ("leading-zero-number", st(_t(',"x":01'), F4B), H),
    ("plus-sign-number", st(_t(',"x":+1'), F4B), H),
    ("127-nesting-levels", st(_t(',"x":' + _nest(125)), F4B), None),
    ("128-nesting-levels", st(_t(',"x":' + _nest(126)), F4B), H),
    ("200-nesting-levels", st(_t(',"x":' + _nest(198)), F4B), H),
    ("128-objects-nested", st(_t(',"x":' + '{"k":' * 126 + "1" + "}" * 126), F4B), H),
    # --- strings ---
    ("surrogate-pair", st('{"__metadata__":{"a":"\\ud83d\\ude00"}}'), None),
    ("lone-high-surrogate", st('{"__metadata__":{"a":"\\ud800"}}'), H),
    ("lone-low-surrogate", st('{"__metadata__":{"a":"\\udc00"}}'), H),
    ("high-surrogate-then-letter", st('{"__metadata__":{"a":"\\ud800\\u0041"}}'), H),
    ("raw-control-char", st(b'{"__metadata__":{"a":"\x01"}}'), H),
    ("raw-del-accepted", st(b'{"__metadata__":{"a":"\x7f"}}'), None),
    ("invalid-escape", st('{"__metadata__":{"a":"\\x"}}'), H),
    ("escaped-slash", st('{"__metadata__":{"a":"\\/"}}'), None),
    ("escaped-metadata-key", st('{"\\u005f_metadata__":{"a":"b"}}'), None),
    ("escaped-metadata-key-with-number", st('{"\\u005f_metadata__":{"a":1}}'), H),
    ("escaped-dtype", st(_t(dtype='"F\\u0033\\u0032"'), F4B), None),
    # --- metadata ---
    ("metadata-null", st('{"__metadata__":null}'), None),
    ("metadata-number-value", st('{"__metadata__":{"a":1}}'), H),
    ("metadata-array", st('{"__metadata__":["a"]}'), H),
    ("metadata-duplicate-key-last-wins", st('{"__metadata__":{"a":"1","a":"2"}}'), None),
    ("metadata-twice", st('{"__metadata__":{},"__metadata__":{}}'), H),
    ("metadata-twice-one-escaped", st('{"\\u005f_metadata__":{},"__metadata__":{}}'), H),
    ("metadata-empty-key", st('{"__metadata__":{"":""}}'), None),
    ("metadata-null-with-tensor", st('{"__metadata__":null,"t":' + entry() + "}", F4B), None),
    # --- tensor entries ---
    ("entry-array-of-3", st('{"t":["F32",[1],[0,4]]}', F4B), None),
    ("entry-array-of-4", st('{"t":["F32",[1],[0,4],1]}', F4B), H),
    ("entry-array-of-2", st('{"t":["F32",[1]]}', F4B), H),
    ("entry-string", st('{"t":"x"}'), H),
    ("entry-null", st('{"t":null}'), H),
    ("entry-missing-shape", st('{"t":{"dtype":"F32","data_offsets":[0,4]}}', F4B), H),
    ("entry-duplicate-field", st(_t(',"dtype":"F32"'), F4B), H),
    ("entry-unknown-field", st(_t(',"foo":[1,{"a":null}]'), F4B), None),
    ("entry-unknown-field-named-metadata", st(_t(',"__metadata__":1'), F4B), None),
    ("empty-tensor-name", st('{"":' + entry() + "}", F4B), None),
    ("dtype-object-null", st(_t(dtype='{"F32":null}'), F4B), None),
    ("dtype-object-array", st(_t(dtype='{"F32":[]}'), F4B), H),
    ("dtype-object-empty-object", st(_t(dtype='{"F32":{}}'), F4B), H),
    ("dtype-object-two-keys", st(_t(dtype='{"F32":null,"F16":null}'), F4B), H),
    ("dtype-number", st(_t(dtype="0"), F4B), H),
    ("dtype-lowercase", st(_t(dtype='"f32"'), F4B), H),
    ("dtype-unknown", st(_t(dtype='"F33"'), F4B), H),
    ("shape-float", st(_t(shape="[1.0]"), F4B), H),
    ("shape-exponent", st(_t(shape="[1e0]"), F4B), H),
    ("shape-minus-zero", st(_t(shape="[-0]", offsets="[0,0]")), H),
    ("shape-negative", st(_t(shape="[-1]"), F4B), H),
    ("shape-2^64", st(_t(shape="[18446744073709551616]"), F4B), H),
    ("shape-object", st(_t(shape="{}"), F4B), H),
    ("shape-empty-is-scalar", st(_t(shape="[]"), F4B), None),
    ("offsets-three", st(_t(offsets="[0,4,4]"), F4B), H),
    ("offsets-one", st(_t(offsets="[4]"), F4B), H),
    ("offsets-float", st(_t(offsets="[0,4.0]"), F4B), H),
    ("offsets-negative", st(_t(offsets="[-1,3]"), F4B), H),
    ("offsets-2^64", st(_t(offsets="[0,18446744073709551616]"), F4B), H),
    ("offsets-minus-zero", st(_t(offsets="[-0,4]"), F4B), H),
    # --- layout ---
    ("one-f32", st(_t(), F4B), None),
    ("hole-at-start", st(_t(offsets="[4,8]"), F4B * 2), "InvalidOffset"),
    ("reversed", st(_t(offsets="[4,0]"), F4B), "InvalidOffset"),
    ("overlap", st(_two(entry(shape=(2,), offsets=(0, 8)), entry(offsets=(4, 8))), F4B * 2), "InvalidOffset"),
    ("hole-between", st(_two(entry(offsets=(0, 4)), entry(offsets=(8, 12))), F4B * 3), "InvalidOffset"),
    ("same-range-twice", st(_two(entry(), entry()), F4B), "InvalidOffset"),
    ("zero-sized-sharing-offset", st(_two(entry(shape=(0,), offsets=(0, 0)), entry(shape=(0,), offsets=(0, 0)))), None),
    (
        "zero-sized-between-tensors",
        st(
            '{"a":'
            + entry(offsets=(0, 4))
            + ',"z":'
            + entry(shape=(0,), offsets=(4, 4))
            + ',"b":'
            + entry(offsets=(4, 8))
            + "}",
            F4B * 2,
        ),
        None,
    ),
    (
        "zero-sized-inside-another",
        st(_two(entry(shape=(2,), offsets=(0, 8)), entry(shape=(0,), offsets=(4, 4))), F4B * 2),
        "InvalidOffset",
    ),
    ("offset-2^64-1", st(_t(offsets=f"[0,{U64}]"), F4B), "TensorInvalidInfo"),
    ("begin-2^64-1", st(_t(offsets=f"[{U64},{U64}]"), F4B), "InvalidOffset"),
    ("shape-0-2^63-4", st(_t(shape=f"[0,{P63},4]", offsets="[0,0]")), None),
    ("shape-2^63-4-0", st(_t(shape=f"[{P63},4,0]", offsets="[0,0]")), "ValidationOverflow"),
    ("shape-2^32-2^32", st(_t(shape="[4294967296,4294967296]"), F4B), "ValidationOverflow"),
    ("bits-overflow-f64", st(_t(dtype='"F64"', shape="[2305843009213693952]", offsets="[0,0]")), "ValidationOverflow"),
    ("bits-overflow-f4", st(_t(dtype='"F4"', shape="[4611686018427387904]", offsets="[0,0]")), "ValidationOverflow"),
    ("f4-two-elements", st(_t(dtype='"F4"', shape="[2]", offsets="[0,1]"), b"\0"), None),
    ("f4-one-element", st(_t(dtype='"F4"', shape="[1]", offsets="[0,1]"), b"\0"), "MisalignedSlice"),
    ("f6-four-elements", st(_t(dtype='"F6_E2M3"', shape="[4]", offsets="[0,3]"), b"\0" * 3), None),
    ("f6-one-element", st(_t(dtype='"F6_E3M2"', shape="[1]", offsets="[0,1]"), b"\0"), "MisalignedSlice"),
    ("size-mismatch", st(_t(shape="[2]"), F4B), "TensorInvalidInfo"),
    ("c64-size", st(_t(dtype='"C64"', shape="[1]", offsets="[0,8]"), F4B * 2), None),
    ("trailing-data-byte", st(_t(), F4B + b"\0"), "MetadataIncompleteBuffer"),
    ("truncated-data", st(_t(), b"\0" * 3), "MetadataIncompleteBuffer"),
    ("data-after-empty-header", st("{}", b"\0"), "MetadataIncompleteBuffer"),
    (
        "unaligned-f32-accepted",
        st('{"a":' + entry("U8", (1,), (0, 1)) + ',"b":' + entry(offsets=(1, 5)) + "}", b"\0" * 5),
        None,
    ),
    # --- duplicate tensor names: the last definition wins ---
    ("duplicate-name-identical", st(_two(entry(), entry()).replace('"b"', '"a"'), F4B), None),
    ("duplicate-name-other-dtype", st(_two(entry(), entry("I32")).replace('"b"', '"a"'), F4B), None),
    (
        "duplicate-name-leaves-hole",
        st(_two(entry(), entry(offsets=(4, 8))).replace('"b"', '"a"'), F4B * 2),
        "InvalidOffset",
    ),
    ("duplicate-name-first-bad-dtype", st(_two(entry("X"), entry()).replace('"b"', '"a"'), F4B), H),
    # --- first error order: deserialisation before layout, layout before coverage ---
    (
        "bad-dtype-and-hole",
        st('{"a":' + entry(offsets=(4, 8)) + ',"b":' + entry("X", offsets=(8, 12)) + "}", F4B * 3),
        H,
    ),
    ("hole-and-trailing", st(_t(offsets="[4,8]"), F4B * 3), "InvalidOffset"),
    (
        "size-mismatch-then-hole",
        st(_two(entry(shape=(2,), offsets=(0, 4)), entry(offsets=(8, 12))), F4B * 3),
        "TensorInvalidInfo",
    ),
    (
        "overflow-then-misaligned",
        st(_two(entry(shape=(P63, 2), offsets=(0, 0)), entry("F4", (1,), (0, 1))), b"\0"),
        "ValidationOverflow",
    ),
]

IDS = [case[0] for case in TABLE]
