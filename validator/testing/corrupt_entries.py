# Strategy: corruptions of the header object, the metadata, the tensor
# entries and the layout of the data region (the entries and layout regions
# of the catalogue).  Each strategy draws (file bytes, case) breaking exactly
# its rule; see corrupt.py.
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final

from hypothesis import strategies as st

from validator._dtypes import DTYPE_BITS, DTYPES
from validator.testing.corrupt_base import (
    _SAFE_JSON,
    MAX_DEPTH,
    _base,
    _case,
    _ensure_nonempty,
    _fresh_name,
    _nest,
    _pick,
    _shift_after,
)
from validator.testing.files import FIELDS, U64_MAX, EntryDraft, _fill_unit, metadata_dicts, tensors

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["ENTRY_CORRUPTIONS"]


# --- the header object, metadata and entries ---------------------------------


@st.composite
def _header_not_object(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw)
    entries = d.json_text()
    d.root_raw = draw(st.sampled_from(["[]", "[1, 2]", '"header"', "1", "0", "true", "false", "null", f"[{entries}]"]))
    return d.render(), f"header is {d.root_raw[:16]}"


@st.composite
def _metadata_invalid(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw)
    bad_value = draw(st.sampled_from(["1", "-1", "1.5", "true", "false", "null", "[]", '["a"]', "{}", '{"a":"b"}']))
    whole = draw(st.sampled_from(["[]", '["a", "b"]', '"meta"', "1", "true", "false", "[{}]"]))
    if draw(st.booleans()):
        good = draw(metadata_dicts())
        items = [f"{json.dumps(k)}:{json.dumps(v)}" for k, v in good.items()]
        key = draw(st.text(max_size=4).filter(lambda k: k not in good))
        items.insert(draw(st.integers(0, len(items))), f"{json.dumps(key)}:{bad_value}")
        d.metadata_raw = "{" + ",".join(items) + "}"
        return d.render(), f"metadata value {bad_value}"
    d.metadata_raw = whole
    return d.render(), f"__metadata__ is {whole}"


@st.composite
def _tensor_entry_invalid(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw, min_tensors=1)
    e = _pick(draw, d)
    if draw(st.integers(0, 4)) == 0:
        items = [e.field_text(f) for f in FIELDS]
        n = draw(st.sampled_from([0, 1, 2, 4]))
        e.raw = "[" + ",".join([*items, "0"][:n]) + "]"
        return d.render(), "tensor entry is an array of the wrong length"
    e.raw = draw(st.sampled_from(["null", "true", "false", "0", "4", "1.5", '"F32"', json.dumps(e.dtype)]))
    return d.render(), f"tensor entry is {e.raw}"


@st.composite
def _tensor_entry_array(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw, min_tensors=1)
    e = _pick(draw, d)
    e.raw = "[" + d.style.item_sep.join(e.field_text(f) for f in FIELDS) + "]"
    return d.render(), "tensor entry is [dtype, shape, data_offsets]"


@st.composite
def _tensor_field_missing(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw, min_tensors=1)
    e = _pick(draw, d)
    e.drop = frozenset(draw(st.sets(st.sampled_from(FIELDS), min_size=1)))
    return d.render(), f"entry lacks {', '.join(sorted(e.drop))}"


@st.composite
def _tensor_field_unknown(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw, min_tensors=1)
    e = _pick(draw, d)
    names = draw(st.lists(st.text(max_size=8).filter(lambda s: s not in FIELDS), min_size=1, max_size=3, unique=True))
    for name in names:
        if draw(st.integers(0, 5)) == 0:
            # As deep as serde allows: the entry object is level 2.
            value = _nest(MAX_DEPTH - 2, draw)
        else:
            value = json.dumps(draw(_SAFE_JSON), ensure_ascii=draw(st.booleans()))
        e.extra.append((draw(st.integers(0, 3)), json.dumps(name), value))
    return d.render(), f"unknown fields {names!r}"


_DTYPE_UNKNOWN: Final = st.one_of(
    st.sampled_from(["f32", "bf16", "Bool", "F8", "Q4_0", "", "FLOAT32", "F32 ", " F32", "F6", "F8_E4M3FN", "c64"]),
    st.text(max_size=6).filter(lambda s: s not in DTYPE_BITS),
)


@st.composite
def _dtype_unknown(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw, min_tensors=1)
    e = _pick(draw, d)
    if draw(st.booleans()):
        e.overrides["dtype"] = json.dumps(draw(_DTYPE_UNKNOWN))
    else:
        options = ["1", "null", "true", "[]", json.dumps([e.dtype]), "{}", json.dumps({e.dtype: 1})]
        other = "U8" if e.dtype != "U8" else "I8"  # two keys, never one
        options += [json.dumps({e.dtype: ""}), '{"NOPE": null}', json.dumps({e.dtype: None, other: None})]
        e.overrides["dtype"] = draw(st.sampled_from(options))
    return d.render(), f"dtype {e.overrides['dtype']}"


@st.composite
def _dtype_not_string(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw, min_tensors=1)
    e = _pick(draw, d)
    e.overrides["dtype"] = "{" + json.dumps(e.dtype) + d.style.key_sep + "null}"
    return d.render(), f"dtype {{{e.dtype!r}: null}}"


_BAD_INTEGERS: Final = (
    "-1",
    "-0",
    "1.0",
    "1e0",
    "0.5",
    "2E1",
    "18446744073709551616",
    "18446744073709551617",
    "100000000000000000000000",
    "-9223372036854775809",
    '"1"',
    "null",
    "true",
    "[1]",
    "{}",
)
_NOT_ARRAYS: Final = ('"[1]"', "1", "null", "true", "{}", '{"0": 1}')


@st.composite
def _shape_invalid(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw, min_tensors=1)
    e = _pick(draw, d)
    if draw(st.integers(0, 3)) == 0:
        e.overrides["shape"] = draw(st.sampled_from(_NOT_ARRAYS))
    else:
        dims = [str(x) for x in e.shape]
        token = draw(st.sampled_from(_BAD_INTEGERS))
        dims.insert(draw(st.integers(0, len(dims))), token)
        e.overrides["shape"] = "[" + ",".join(dims) + "]"
    return d.render(), f"shape {e.overrides['shape'][:40]}"


@st.composite
def _offsets_invalid(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw, min_tensors=1)
    e = _pick(draw, d)
    case = _case(draw, ["not an array", "wrong length", "bad element"])
    if case == "not an array":
        e.overrides["data_offsets"] = draw(st.sampled_from(_NOT_ARRAYS))
    elif case == "wrong length":
        e.overrides["data_offsets"] = draw(
            st.sampled_from(["[]", f"[{e.begin}]", f"[{e.begin},{e.end},{e.end}]", f"[{e.begin},{e.end},0,0]"])
        )
    else:
        token = draw(st.sampled_from(_BAD_INTEGERS))
        e.overrides["data_offsets"] = f"[{token},{e.end}]" if draw(st.booleans()) else f"[{e.begin},{token}]"
    return d.render(), f"data_offsets {e.overrides['data_offsets'][:40]}"


# --- layout of the data region ---------------------------------------------


@st.composite
def _offsets_not_contiguous(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw, min_tensors=1)
    case = _case(
        draw,
        [
            "hole",
            "hole at the start",
            "overlap",
            "zero-sized tensor inside another",
            "zero-sized tensor at offset near 2^64",
        ],
    )
    if case in ("hole", "hole at the start"):
        order = d.data_order()
        pivot = order[0] if case == "hole at the start" else _pick(draw, d)
        gap = draw(st.integers(1, 64))
        for e in order[order.index(pivot) :]:
            e.begin += gap
            e.end += gap
        d.fill_data()
        return d.render(), f"{case} of {gap} bytes"
    if case == "overlap":
        # Pull a non-empty tensor, and all after it, back into earlier data.
        if not any(x.end > x.begin and x.begin > 0 for x in d.entries):
            first = _ensure_nonempty(draw, d)
            if first.begin == 0:
                _ensure_nonempty(draw, d, force=True)
        e = _pick(draw, d, lambda e: e.end > e.begin and e.begin > 0)
        back = draw(st.integers(1, e.begin))
        order = d.data_order()
        for x in order[order.index(e) :]:
            x.begin -= back
            x.end -= back
        d.fill_data()
        return d.render(), f"overlap of {back} bytes"
    if case == "zero-sized tensor inside another":
        host = _ensure_nonempty(draw, d)
        at = draw(st.integers(host.begin + 1, host.end - 1))
        t = draw(tensors(shape=st.sampled_from([(0,), (3, 0), (0, 5, 7)])))
        zero = EntryDraft(_fresh_name(draw, d), t.dtype, t.shape, at, at)
        d.entries.insert(draw(st.integers(0, len(d.entries))), zero)
        return d.render(), case
    at = draw(st.integers(U64_MAX - 64, U64_MAX))
    t = draw(tensors(shape=st.just((0,))))
    far = EntryDraft(_fresh_name(draw, d), t.dtype, t.shape, at, at)
    d.entries.insert(draw(st.integers(0, len(d.entries))), far)
    return d.render(), case


@st.composite
def _offsets_reversed(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw, min_tensors=1)
    case = _case(draw, ["begin and end swapped", "reversed offsets beginning near 2^64"])
    if case == "begin and end swapped":
        e = _ensure_nonempty(draw, d)
        e.begin, e.end = e.end, e.begin
        return d.render(), case
    e = _pick(draw, d)
    _shift_after(d, e, e.begin - e.end)  # close the gap it leaves
    e.begin = draw(st.integers(U64_MAX - 64, U64_MAX))
    e.end = draw(st.integers(0, 64))
    d.fill_data()
    return d.render(), case


@st.composite
def _overflowing_shape(draw: st.DrawFn, bits: int) -> tuple[int, ...]:
    case = _case(draw, ["element count", "bit count", "overflow before a zero"])
    if case == "bit count":
        count = draw(st.integers(U64_MAX // bits + 1, U64_MAX))
        dims = [count]
    else:
        a = draw(st.integers(1 << 32, U64_MAX))
        b = draw(st.integers(U64_MAX // a + 1, U64_MAX))
        dims = [a, b]
        if case == "overflow before a zero":
            dims.append(0)
    ones = draw(st.integers(0, 3))
    return (*([1] * ones), *dims)


@st.composite
def _size_overflow(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw, min_tensors=1)
    e = _pick(draw, d)
    e.dtype = draw(st.sampled_from(DTYPES))
    e.shape = draw(_overflowing_shape(DTYPE_BITS[e.dtype]))
    return d.render(), f"shape {list(e.shape)} of {e.dtype}"


@st.composite
def _subbyte_misaligned(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw, min_tensors=1)
    e = _pick(draw, d)
    e.dtype = draw(st.sampled_from([x for x in DTYPES if DTYPE_BITS[x] % 8]))
    unit = _fill_unit(DTYPE_BITS[e.dtype])  # 2 for F4, 4 for F6
    numel = draw(st.integers(1, 64).filter(lambda n: n % unit))
    shapes = [(numel,), (1, numel), (numel, 1)] if numel > 1 else [(), (1,), (1, 1)]
    e.shape = draw(st.sampled_from(shapes))
    if draw(st.booleans()):
        # Give it the span rounded down or up, as a careless writer would.
        span = numel * DTYPE_BITS[e.dtype] // 8 + draw(st.integers(0, 1))
        _shift_after(d, e, span - (e.end - e.begin))
        e.end = e.begin + span
        d.fill_data()
    return d.render(), f"{e.dtype} with {numel} elements"


@st.composite
def _byte_length_mismatch(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw, min_tensors=1)
    e = _pick(draw, d)
    size = e.end - e.begin
    delta = draw(st.integers(-size, 32).filter(lambda x: x != 0))
    _shift_after(d, e, delta)
    e.end += delta
    d.fill_data()
    return d.render(), f"span {size + delta} for {size} bytes"


@st.composite
def _buffer_trailing_bytes(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw)
    extra = draw(st.binary(min_size=1, max_size=64))
    d.data += extra
    return d.render(), f"{len(extra)} trailing bytes"


@st.composite
def _buffer_truncated(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw, min_tensors=1)
    _ensure_nonempty(draw, d)
    cut = draw(st.integers(1, len(d.data)))
    data = d.render()
    return data[:-cut], f"{cut} bytes cut off"


ENTRY_CORRUPTIONS: Final[dict[str, Callable[[], st.SearchStrategy[tuple[bytes, str]]]]] = {
    "header-not-object": _header_not_object,
    "metadata-invalid": _metadata_invalid,
    "tensor-entry-invalid": _tensor_entry_invalid,
    "tensor-entry-array": _tensor_entry_array,
    "tensor-field-missing": _tensor_field_missing,
    "tensor-field-unknown": _tensor_field_unknown,
    "dtype-unknown": _dtype_unknown,
    "dtype-not-string": _dtype_not_string,
    "shape-invalid": _shape_invalid,
    "offsets-invalid": _offsets_invalid,
    "offsets-not-contiguous": _offsets_not_contiguous,
    "offsets-reversed": _offsets_reversed,
    "size-overflow": _size_overflow,
    "subbyte-misaligned": _subbyte_misaligned,
    "byte-length-mismatch": _byte_length_mismatch,
    "buffer-trailing-bytes": _buffer_trailing_bytes,
    "buffer-truncated": _buffer_truncated,
}
