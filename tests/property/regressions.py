# Strategy: inputs pinned as named byte strings, each with the error slugs
# the strict profile must report.  They are the shrunk failures the property
# tests found while the strategies and the oracle were written, and the
# boundaries the strategies reach only by chance.  Explicit cases rather than
# a directory database: a database is keyed by test identity and Hypothesis's
# internal encoding, so it silently goes stale when a test or the library
# changes; these stay readable and replay under every profile.
from __future__ import annotations

from _stbytes import st

U64_MAX = (1 << 64) - 1


def _entry(dtype: str, shape: str, offsets: str, extra: str = "") -> str:
    return f'{{"dtype":"{dtype}","shape":{shape},"data_offsets":{offsets}{extra}}}'


def _nest(depth: int) -> str:
    return "[" * depth + "]" * depth


# name -> (file bytes, error slugs under strict)
REGRESSIONS: dict[str, tuple[bytes, frozenset[str]]] = {
    # Found: safetensors words this error "The slice is slicing for subbytes
    # ..."; the oracle first matched message prefixes and missed it.
    "f4_scalar_misaligned": (
        st('{"0": ' + _entry("F4", "[]", "[0, 1]") + "}", b"\x00", pad=False),
        frozenset({"subbyte-misaligned"}),
    ),
    # Found: `+1` and `.5` are syntax errors to both parsers, not number errors.
    "plus_sign_in_shape": (
        st('{"a":' + _entry("U8", "[+1]", "[0,1]") + "}", b"x", pad=False),
        frozenset({"json-syntax"}),
    ),
    # Found: a single-key object whose key is the entry's own dtype is the
    # accepted unit-variant form, not an unknown dtype.
    "dtype_unit_variant": (
        st('{"a":{"dtype":{"F16":null},"shape":[0],"data_offsets":[0,0]}}', pad=False),
        frozenset({"dtype-not-string"}),
    ),
    # Nesting: the header object is level 1; level 127 passes, 128 fails.
    "depth_127_in_unknown_field": (
        st('{"a":' + _entry("U8", "[1]", "[0,1]", ',"x":' + _nest(125)) + "}", b"x", pad=False),
        frozenset({"tensor-field-unknown"}),
    ),
    "depth_128_in_unknown_field": (
        st('{"a":' + _entry("U8", "[1]", "[0,1]", ',"x":' + _nest(126)) + "}", b"x", pad=False),
        frozenset({"json-depth"}),
    ),
    # Ignored values are still parsed in full by the reference.
    "lone_surrogate_in_unknown_field": (
        st('{"a":' + _entry("U8", "[1]", "[0,1]", ',"x":"\\ud800"') + "}", b"x", pad=False),
        frozenset({"json-string"}),
    ),
    "float_out_of_range_in_unknown_field": (
        st('{"a":' + _entry("U8", "[1]", "[0,1]", ',"x":1e400') + "}", b"x", pad=False),
        frozenset({"json-number"}),
    ),
    # N = 10^8 passes the size limit and then runs past the file.
    "n_at_limit_past_eof": (st("{}", n=100_000_000, pad=False), frozenset({"header-length-exceeds-file"})),
    "n_over_limit": (st("{}", n=100_000_001, pad=False), frozenset({"header-too-large"})),
    "n_u64_max": (st("{}", n=U64_MAX, pad=False), frozenset({"header-too-large"})),
    # Offsets near 2^64.
    "zero_sized_tensor_near_u64_max": (
        st('{"a":' + _entry("U8", "[0]", f"[{U64_MAX},{U64_MAX}]") + "}", pad=False),
        frozenset({"offsets-not-contiguous", "buffer-truncated"}),
    ),
    "offsets_2_64_is_a_float": (
        st('{"a":' + _entry("U8", "[0]", f"[0,{U64_MAX + 1}]") + "}", pad=False),
        frozenset({"offsets-invalid"}),
    ),
    # The product overflows before the 0 that would make it 0.
    "overflow_before_zero": (
        st('{"a":' + _entry("F32", f"[{1 << 63},4,0]", "[0,0]") + "}", pad=False),
        frozenset({"size-overflow"}),
    ),
    "zero_sized_inside_another": (
        st('{"a":' + _entry("U8", "[4]", "[0,4]") + ',"z":' + _entry("U8", "[0]", "[2,2]") + "}", b"abcd", pad=False),
        frozenset({"offsets-not-contiguous"}),
    ),
    # The reference keeps the last definition; the first may be any well-typed entry.
    "decoy_definition_first": (
        st(
            '{"a":' + _entry("F64", "[3]", f"[7,{U64_MAX}]") + ',"a":' + _entry("U8", "[1]", "[0,1]") + "}",
            b"x",
            pad=False,
        ),
        frozenset({"duplicate-key"}),
    ),
    "negative_zero_in_shape": (
        st('{"a":' + _entry("U8", "[-0]", "[0,0]") + "}", pad=False),
        frozenset({"shape-invalid"}),
    ),
    "empty_header": (st("", pad=False), frozenset({"json-syntax"})),
}
