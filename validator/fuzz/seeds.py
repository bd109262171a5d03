# Strategy: the fuzzers' starting points and vocabulary, built from code so
# that an installed `stcheck fuzz` has them without the repository.  Seeds
# are tiny files, one per construct the targets care about: valid layouts of
# every dtype, the reference/spec disagreements (leading whitespace, tab
# padding, entries written as arrays, duplicates), and one file per layout
# and JSON defect.  `fuzz/seeds/` and `fuzz/safetensors.dict` are these
# values written out (tests check that they match).
# ruff: noqa: PLC0415, PTH103, PTH118, PTH123
# Lazy imports: atheris, numpy, hypothesis and safetensors load, only where used.
# Paths: os.path and open(), like the rest of the package.
from __future__ import annotations

import json
import struct
from typing import Final

from validator._dtypes import DTYPE_BITS

__all__ = ["build", "dictionary_text", "dictionary_tokens", "seed_files", "write"]

_PAD_TO: Final = 8


def build(
    header: bytes | str | dict[str, object], data: bytes = b"", *, pad: bytes = b" ", n: int | None = None
) -> bytes:
    """A file from a header (object or raw text), padded with ``pad`` to 8 bytes."""
    if isinstance(header, dict):
        header = json.dumps(header, separators=(",", ":"))
    raw = header.encode() if isinstance(header, str) else header
    if pad:
        while len(raw) % _PAD_TO:
            raw += pad
    size = len(raw) if n is None else n
    return struct.pack("<Q", size) + raw + data


def _entry(dtype: str, shape: list[int], begin: int, end: int) -> dict[str, object]:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def _all_dtypes() -> bytes:
    header: dict[str, object] = {}
    cursor = 0
    for dtype, bits in DTYPE_BITS.items():
        count = 8 if bits % 8 else 2  # 8 sub-byte elements fill whole bytes
        size = count * bits // 8
        header[dtype.lower()] = _entry(dtype, [count], cursor, cursor + size)
        cursor += size
    return build(header, bytes(range(cursor % 256)) + bytes(max(0, cursor - 256)))


def _deep(levels: int) -> bytes:
    nested = "[" * levels + "]" * levels
    return build('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":' + nested + "}}", b"\x01")


def seed_files() -> dict[str, bytes]:
    """Seed inputs by name (``<verdict>_<construct>.safetensors``)."""
    a4 = _entry("F32", [1], 0, 4)
    return {
        "y_empty_header.safetensors": build("{}"),
        "y_one_f32.safetensors": build({"a": a4}, b"\x00\x00\x80\x3f"),
        "y_two_tensors_metadata.safetensors": build(
            {"__metadata__": {"format": "pt"}, "w": _entry("F16", [2, 2], 0, 8), "b": _entry("BF16", [2], 8, 12)},
            bytes(range(12)),
        ),
        "y_all_dtypes.safetensors": _all_dtypes(),
        "y_zero_sized.safetensors": build(
            {"e": _entry("F32", [0, 3], 0, 0), "f": _entry("I8", [0], 0, 0), "g": _entry("U8", [2], 0, 2)}, b"ab"
        ),
        "y_scalar.safetensors": build({"s": _entry("I64", [], 0, 8)}, bytes(8)),
        "y_zero_elements_dim_2_63.safetensors": build({"a": _entry("F32", [0, 2**63], 0, 0)}),
        "i_leading_whitespace.safetensors": build(' \n{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"z"),
        "i_tab_padding.safetensors": build({"a": _entry("U8", [1], 0, 1)}, b"z", pad=b"\t"),
        "i_entry_array.safetensors": build('{"a":["U8",[1],[0,1]]}', b"z"),
        "i_duplicate_tensor.safetensors": build(
            '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"I8","shape":[1],"data_offsets":[0,1]}}',
            b"z",
        ),
        "i_unknown_field.safetensors": build('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":[[1]]}}', b"z"),
        "i_metadata_null.safetensors": build(
            '{"__metadata__":null,"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"z"
        ),
        "i_dtype_object.safetensors": build('{"a":{"dtype":{"U8":null},"shape":[1],"data_offsets":[0,1]}}', b"z"),
        "i_deep_120.safetensors": _deep(120),
        "n_deep_200.safetensors": _deep(200),
        "n_deep_3000.safetensors": _deep(3000),
        "n_layout_hole.safetensors": build({"a": _entry("U8", [1], 0, 1), "b": _entry("U8", [1], 2, 3)}, b"xyz"),
        "n_layout_overlap.safetensors": build({"a": _entry("U8", [2], 0, 2), "b": _entry("U8", [2], 1, 3)}, b"xyz"),
        "n_layout_trailing_bytes.safetensors": build({"a": a4}, b"\x00\x00\x80\x3f!!"),
        "n_layout_truncated.safetensors": build({"a": a4}, b"\x00\x00"),
        "n_layout_tie_mixed_errors.safetensors": build(
            {"a": _entry("U8", [1], 0, 1), "b": _entry("F4", [1], 0, 1)}, b"z"
        ),
        "n_layout_reversed.safetensors": build({"a": _entry("U8", [0], 4, 0)}),
        "n_size_overflow.safetensors": build({"a": _entry("F32", [2**62, 8], 0, 0)}),
        "n_subbyte_misaligned.safetensors": build({"a": _entry("F4", [3], 0, 1)}, b"z"),
        "n_length_mismatch.safetensors": build({"a": _entry("F32", [2], 0, 4)}, b"abcd"),
        "n_number_float.safetensors": build('{"a":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}', b"z"),
        "n_number_minus_zero.safetensors": build('{"a":{"dtype":"U8","shape":[1],"data_offsets":[-0,1]}}', b"z"),
        "n_number_2_64.safetensors": build(
            '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,18446744073709551616]}}', b"z"
        ),
        "n_nan_token.safetensors": build(
            '{"__metadata__":{"k":"v"},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":NaN}}', b"z"
        ),
        "n_lone_surrogate.safetensors": build('{"\\ud800":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"z"),
        "n_dtype_lowercase.safetensors": build({"a": _entry("f32", [1], 0, 4)}, b"abcd"),
        "n_nul_padding.safetensors": build({"a": _entry("U8", [1], 0, 1)}, b"z", pad=b"\x00"),
        "n_bom.safetensors": build(b'\xef\xbb\xbf{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"z"),
        "n_not_utf8.safetensors": build(b'{"\xff":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"z"),
        "n_metadata_not_string.safetensors": build({"__metadata__": {"k": 1}}),
        "n_duplicate_field.safetensors": build(
            '{"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"z"
        ),
        "n_missing_field.safetensors": build('{"a":{"dtype":"U8","shape":[1]}}', b"z"),
        "n_header_too_large.safetensors": build("{}", n=100_000_001),
        "n_header_length_exceeds_file.safetensors": build("{}", n=64),
        "n_too_small.safetensors": b"\x02\x00\x00",
    }


def dictionary_tokens() -> list[bytes]:
    """libFuzzer dictionary entries: the format's keys, dtypes, numbers and punctuation."""
    words = [b'"dtype"', b'"shape"', b'"data_offsets"', b'"__metadata__"', b'"format"', b'"pt"']
    words += [b'"' + d.encode() + b'"' for d in DTYPE_BITS]
    words += [b'{"' + d.encode() + b'":null}' for d in ("F32", "BF16", "F4")]
    words += [
        b"{",
        b"}",
        b"[",
        b"]",
        b":",
        b",",
        b'""',
        b"null",
        b"true",
        b"false",
        b"NaN",
        b"Infinity",
        b"-0",
        b"1.0",
        b"1e0",
        b"0",
        b"1",
        b"8",
        b"255",
        b"4294967296",
        b"9223372036854775808",
        b"18446744073709551615",
        b"18446744073709551616",
        b"100000000",
        b"100000001",
        # The float edge: serde_json's non-roundtrip parser rounds some of
        # these to infinity ("number out of range"); f64::MAX itself is finite.
        b"1.7976931348623157e308",
        b"1.7976931348623158e308",
        b"17976931348623157" + b"0" * 292,
        b"4.9e-324",
        b"2.4703282292062327e-324",
        b"1e-400",
        b"e308",
        b"e-324",
        b"\\u0000",
        b"\\ud800",
        b"\\ud83d\\ude00",
        b"\xef\xbb\xbf",
        b"\t",
        b"\r\n",
        b"\x00",
        b"        ",
        b"[[[[[[[[",
        b"]]]]]]]]",
        b"\xe2\x80\xae",
    ]
    words += [struct.pack("<Q", v) for v in (0, 2, 8, 100_000_000, 100_000_001, 2**63, 2**64 - 1)]
    return words


def dictionary_text() -> str:
    """The dictionary in libFuzzer's ``name="value"`` format."""
    lines = ["# safetensors tokens for libFuzzer (-dict=); generated by validator.fuzz.seeds.dictionary_text()"]
    for i, word in enumerate(dictionary_tokens()):
        escaped = "".join(chr(b) if 0x20 <= b < 0x7F and b not in b'"\\' else f"\\x{b:02x}" for b in word)
        lines.append(f'kw{i}="{escaped}"')
    return "\n".join(lines) + "\n"


def write(seed_dir: str, dict_path: str) -> None:
    """Write the seeds and the dictionary (what `fuzz/seeds/` and `fuzz/safetensors.dict` hold)."""
    import os

    os.makedirs(seed_dir, exist_ok=True)
    for name, data in seed_files().items():
        with open(os.path.join(seed_dir, name), "wb") as f:
            f.write(data)
    with open(dict_path, "w", encoding="utf-8") as f:
        f.write(dictionary_text())


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 3:
        sys.exit("usage: python -m validator.fuzz.seeds SEED_DIR DICT_PATH")
    write(sys.argv[1], sys.argv[2])
