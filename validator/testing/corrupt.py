# Strategy: one corruption strategy per error rule of the catalogue.  Each
# draws a spec-valid Draft (see _strategies_files.py) and breaks exactly one
# thing in it, so that the strict profile's error findings all carry the one
# rule.  Where breaking a rule unavoidably breaks another too, the case says
# so in `implies` and the reason is written in IMPLIED below; nothing else
# may be implied.  mutated_files() is the structure-blind counterpart: byte
# mutations of valid files with no promise about what they break.
#
# The serde_json cases (safetensors 0.8.0 reads the header with serde_json):
# `-0`, `1e0`, `1.0` and integers above 2^64-1 are floats, so they are
# rejected where an integer is expected (shape-invalid, offsets-invalid);
# NaN/Infinity tokens and floats beyond f64 are not numbers (json-number);
# lone surrogate escapes and raw control characters are rejected
# (json-string); the 128th nested container is refused (json-depth); a field
# written twice in one tensor entry is rejected (duplicate-field).
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from validator._dtypes import DTYPE_BITS, DTYPES
from validator._rules import RULES, Severity
from validator._rules import rule as lookup_rule
from validator.testing.files import (
    FIELDS,
    METADATA,
    U64_MAX,
    Draft,
    EntryDraft,
    _default_tensor_dicts,
    _fill_unit,
    drafts,
    metadata_dicts,
    tensor_dicts,
    tensor_names,
    tensors,
    valid_files,
)

if TYPE_CHECKING:
    from collections.abc import Callable

MAX_HEADER: Final = 100_000_000
MAX_DEPTH: Final = 127  # serde_json refuses the 128th nested container


@dataclass(frozen=True)
class CorruptedFile:
    """A file that breaks one rule of the catalogue.

    ``data`` is the whole file.  ``rule`` is the slug of the broken rule (see
    ``validator.RULES``); ``implies`` names the other rules the same defect
    cannot help breaking (usually empty); ``case`` says how the file was
    broken, for example ``"shape element -0"``.
    """

    data: bytes
    rule: str
    case: str
    implies: frozenset[str] = frozenset()

    @property
    def reference_error(self) -> str | None:
        """The class safetensors 0.8.0 rejects the file with; None if it accepts it."""
        return lookup_rule(self.rule).reference_error


# Defects that break two rules at once, and why no single-rule file exists
# for them.  Property tests accept exactly these extra error slugs.
IMPLIED: Final = {
    "zero-sized tensor at offset near 2^64": (
        frozenset({"buffer-truncated"}),
        "a tensor that starts near 2^64 leaves a hole before it, and the file cannot reach its offset",
    ),
    "reversed offsets beginning near 2^64": (
        frozenset({"buffer-truncated"}),
        "the walk's cursor moves to the begin offset, which no real file reaches",
    ),
    "tensor entry is an array of the wrong length": (
        frozenset({"tensor-entry-array"}),
        "the array form is itself a strict-only finding; its length makes the entry unreadable",
    ),
}


def _case(draw: st.DrawFn, options: list[str]) -> str:
    return draw(st.sampled_from(options))


_METADATA_OR_NONE: Final = st.one_of(st.none(), metadata_dicts())
_DRAFTS: Final = {
    0: drafts(_default_tensor_dicts(), _METADATA_OR_NONE),
    1: drafts(tensor_dicts(min_size=1, max_size=6), _METADATA_OR_NONE),
}


def _base(draw: st.DrawFn, *, min_tensors: int = 0) -> Draft:
    """A spec-valid draft to break; with ``min_tensors=1`` it has a tensor."""
    return draw(_DRAFTS[min_tensors])


def _pick(draw: st.DrawFn, draft: Draft, pred: Callable[[EntryDraft], bool] = lambda _: True) -> EntryDraft:
    candidates = [e for e in draft.entries if pred(e)]
    if not candidates:
        draw(st.nothing())
    return draw(st.sampled_from(candidates))


def _fresh_name(draw: st.DrawFn, draft: Draft) -> str:
    taken = {e.name for e in draft.entries}
    return draw(tensor_names().filter(lambda s: s not in taken))


def _ensure_nonempty(draw: st.DrawFn, d: Draft, *, force: bool = False) -> EntryDraft:
    """A tensor of 2 bytes or more, appended at the end of the data if none exists."""
    big = [e for e in d.entries if e.end - e.begin >= 2]
    if big and not force:
        return draw(st.sampled_from(big))
    t = draw(tensors(dtypes="U8", shape=st.integers(2, 16).map(lambda n: (n,))))
    start = max((e.end for e in d.entries), default=0)
    entry = EntryDraft(_fresh_name(draw, d), t.dtype, t.shape, start, start + len(t.data), t.data)
    d.entries.insert(draw(st.integers(0, len(d.entries))), entry)
    d.fill_data()
    return entry


def _shift_after(draft: Draft, pivot: EntryDraft, delta: int) -> None:
    """Move every tensor that follows ``pivot`` in data order by ``delta`` bytes."""
    order = draft.data_order()
    for e in order[order.index(pivot) + 1 :]:
        e.begin += delta
        e.end += delta


# --- safe JSON values (for unknown fields and decoys) ------------------------

_SAFE_SCALARS: Final = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(1 << 63), U64_MAX),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
_SAFE_JSON: Final = st.recursive(
    _SAFE_SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=8,
)


def _nest(depth: int, draw: st.DrawFn) -> str:
    """``depth`` nested containers, arrays or single-key objects, closed properly."""
    kinds = draw(st.lists(st.booleans(), min_size=depth, max_size=depth))
    opening = "".join('{"k":' if k else "[" for k in kinds[:-1])
    closing = "".join("}" if k else "]" for k in reversed(kinds[:-1]))
    return opening + ("{}" if kinds[-1] else "[]") + closing


# --- the length prefix -------------------------------------------------------


@st.composite
def _file_too_small(draw: st.DrawFn) -> tuple[bytes, str]:
    source = draw(st.sampled_from(["random", "prefix of a valid file"]))
    if source == "random":
        return draw(st.binary(max_size=7)), "fewer than 8 random bytes"
    f = draw(valid_files())
    return f.data[: draw(st.integers(0, 7))], "valid file cut inside its length prefix"


@st.composite
def _header_too_large(draw: st.DrawFn) -> tuple[bytes, str]:
    n = draw(st.one_of(st.just(MAX_HEADER + 1), st.just(U64_MAX), st.integers(MAX_HEADER + 1, U64_MAX)))
    rest = draw(st.one_of(st.binary(max_size=32), valid_files().map(lambda f: f.data[8:])))
    return n.to_bytes(8, "little") + rest, f"N = {n}"


@st.composite
def _header_length_exceeds_file(draw: st.DrawFn) -> tuple[bytes, str]:
    f = draw(valid_files())
    case = _case(draw, ["N past EOF", "N at the limit", "file cut inside the header"])
    if case == "file cut inside the header":
        cut = draw(st.integers(8, f.data_start - 1))
        return f.data[:cut], case
    if case == "N at the limit":
        return MAX_HEADER.to_bytes(8, "little") + f.data[8:], case
    n = draw(st.integers(len(f.data) - 7, min(MAX_HEADER, len(f.data) + 64)))
    return n.to_bytes(8, "little") + f.data[8:], case


# --- header bytes and JSON text -----------------------------------------------

# A byte that never occurs, a lone continuation, an overlong NUL, cut
# sequences, an encoded surrogate, a code point above U+10FFFF, a 5-byte form.
_BAD_UTF8: Final = (
    b"\xff",
    b"\xfe",
    b"\x80",
    b"\xc0\x80",
    b"\xc3",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xf8\x88\x80\x80\x80",
)


@st.composite
def _header_not_utf8(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw)
    text = d.header().decode("utf-8")
    at = draw(st.integers(0, len(text)))
    bad = draw(st.sampled_from(_BAD_UTF8))
    header = text[:at].encode() + bad + text[at:].encode()
    return len(header).to_bytes(8, "little") + header + d.data, f"{bad!r} at header character {at}"


@st.composite
def _header_leading_bytes(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw)
    d.lead = draw(st.text(alphabet=" \t\n\r", min_size=1, max_size=6)).encode()
    return d.render(), f"{d.lead!r} before '{{'"


@st.composite
def _header_padding(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw)
    before = draw(st.text(alphabet=" \t\n\r", max_size=4))
    odd = draw(st.sampled_from(["\t", "\n", "\r"]))
    after = draw(st.text(alphabet=" \t\n\r", max_size=4))
    d.pad = (before + odd + after).encode()
    return d.render(), f"padding {d.pad!r}"


@st.composite
def _header_trailing_bytes(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw)
    bad = draw(st.sampled_from([b"\x00", b"\x00" * 7, b"x", b"}", b"{}", b",", b"0", b'"', b"\xc3\xa9"]))
    spaces = draw(st.integers(0, 3))
    d.pad = b" " * spaces + bad + b" " * draw(st.integers(0, 3))
    return d.render(), f"{bad!r} after the JSON object"


@st.composite
def _json_syntax(draw: st.DrawFn) -> tuple[bytes, str]:
    case = _case(
        draw,
        [
            "empty header",
            "whitespace-only header",
            "closing brace missing",
            "trailing comma",
            "unquoted key",
            "missing colon",
            "single-quoted string",
            "missing comma in shape",
            "comment",
            "bare word",
            "unterminated string",
        ],
    )
    if case in ("empty header", "whitespace-only header"):
        body = b"" if case == "empty header" else b" " * draw(st.integers(1, 16))
        return len(body).to_bytes(8, "little") + body, case
    needs_entry = case not in ("closing brace missing", "trailing comma", "comment", "unterminated string")
    d = _base(draw, min_tensors=1 if needs_entry else 0)
    if case == "closing brace missing":
        text = d.json_text()
        d.root_raw = text[:-1]
    elif case == "trailing comma":
        text = d.json_text()
        d.root_raw = text[:-1] + ",}"
    elif case == "comment":
        text = d.json_text()
        d.root_raw = "{/* c */" + text[1:]
    else:
        e = _pick(draw, d)
        if case == "unquoted key":
            e.key = "t" + str(draw(st.integers(0, 99)))
        elif case == "missing colon":
            key = e.key if e.key is not None else d.style.string(e.name)
            d.root_raw = d.json_text().replace(key + d.style.key_sep, key + " ", 1)
        elif case == "single-quoted string":
            e.overrides["dtype"] = f"'{e.dtype}'"
        elif case == "missing comma in shape":
            dims = (*e.shape, 1) if e.shape else (1, 1)  # two numbers at least
            e.overrides["shape"] = "[" + " ".join(map(str, dims)) + "]"
        elif case == "bare word":
            words = ["tru", "nul", "fals", "undefined", "F32", "+1", ".5", "[1,]"]
            e.overrides[draw(st.sampled_from(FIELDS))] = draw(st.sampled_from(words))
        else:  # unterminated string
            opened = d.json_text()[:-1].rstrip()
            tail = draw(st.text(alphabet="abc ", max_size=4))
            d.root_raw = opened + ("," if len(opened) > 1 else "") + '"' + tail
    return d.render(), case


@st.composite
def _json_depth(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw)
    where = _case(draw, ["top-level item", "metadata value", "unknown tensor field", "shape"])
    if where in ("unknown tensor field", "shape") and not d.entries:
        where = "top-level item"
    # Levels already open where the value sits: the header object is level 1.
    opened = 1 if where == "top-level item" else 2
    extra = draw(st.one_of(st.just(0), st.integers(0, 3), st.integers(0, 300)))
    depth = MAX_DEPTH + 1 - opened + extra
    nest = _nest(depth, draw)
    if where == "top-level item":
        d.extra.append((draw(st.integers(0, len(d.entries))), json.dumps(draw(tensor_names())), nest))
    elif where == "metadata value":
        d.metadata_raw = "{" + json.dumps(draw(st.text(max_size=4))) + ":" + nest + "}"
    else:
        e = _pick(draw, d)
        if where == "shape":
            e.overrides["shape"] = nest
        else:
            e.extra.append((draw(st.integers(0, 3)), '"x"', nest))
    return d.render(), f"{MAX_DEPTH + 1 + extra} levels in {where}"


_BAD_NUMBERS: Final = ("NaN", "Infinity", "-Infinity", "nan", "inf", "01", "1.", "-", "1e", "1e400", "-1e400", "1E+999")


@st.composite
def _json_number(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw, min_tensors=1)
    token = draw(st.sampled_from(_BAD_NUMBERS))
    e = _pick(draw, d)
    where = _case(draw, ["shape", "data_offsets", "unknown field"])
    if where == "shape":
        e.overrides["shape"] = "[" + ", ".join([*map(str, e.shape), token]) + "]"
    elif where == "data_offsets":
        e.overrides["data_offsets"] = f"[{e.begin}, {token}]" if draw(st.booleans()) else f"[{token}, {e.end}]"
    else:
        e.extra.append((draw(st.integers(0, 3)), '"x"', token))
    return d.render(), f"{token} in {where}"


_BAD_STRINGS: Final = (
    "\\ud800",
    "\\udfff",
    "\\ud83d",
    "\\ud800\\u0041",
    "\\udc00\\ud800",
    "\\x41",
    "\\u12G4",
    "\\'",
    "\\U0041",
    "\\a",
)


@st.composite
def _json_string(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw)
    bad = draw(st.one_of(st.sampled_from(_BAD_STRINGS), st.integers(0, 0x1F).map(chr)))
    prefix = draw(st.text(alphabet="abc", max_size=3))
    text = '"' + prefix + bad + "x" + '"'
    where = _case(draw, ["tensor name", "metadata key", "metadata value", "dtype"])
    if where in ("tensor name", "dtype") and d.entries:
        e = _pick(draw, d)
        if where == "tensor name":
            e.key = text
        else:
            e.overrides["dtype"] = text
    elif where == "metadata key":
        d.metadata_raw = "{" + text + ':"v"}'
    else:
        where = "metadata value"
        d.metadata_raw = '{"k":' + text + "}"
    return d.render(), f"{bad!r} in {where}"


@st.composite
def _duplicate_field(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw)
    where = _case(draw, ["tensor field", "__metadata__"])
    if where == "__metadata__" or not d.entries:
        first = json.dumps(draw(metadata_dicts()))
        second = json.dumps(draw(metadata_dicts()))
        d.metadata = None
        d.extra.append((draw(st.integers(0, len(d.entries))), json.dumps(METADATA), first))
        d.extra.append((draw(st.integers(0, len(d.entries))), json.dumps(METADATA), second))
        return d.render(), "__metadata__ twice"
    e = _pick(draw, d)
    name = draw(st.sampled_from(FIELDS))
    value = draw(st.one_of(st.just(e.field_text(name)), _SAFE_JSON.map(json.dumps)))
    # After the real field: serde and the validator read the first one.
    e.extra.append((draw(st.integers(e.order.index(name) + 1, 3)), json.dumps(name), value))
    return d.render(), f"{name!r} twice in one entry"


@st.composite
def _duplicate_key(draw: st.DrawFn) -> tuple[bytes, str]:
    case = _case(draw, ["identical tensor twice", "decoy definition first", "metadata key twice"])
    if case == "metadata key twice":
        d = _base(draw)
        meta = draw(metadata_dicts())
        key = draw(st.text(max_size=6))
        items = [(k, v) for k, v in meta.items() if k != key]
        items.insert(draw(st.integers(0, len(items))), (key, draw(st.text(max_size=6))))
        items.insert(draw(st.integers(0, len(items))), (key, draw(st.text(max_size=6))))
        d.metadata = None
        d.metadata_raw = "{" + ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in items) + "}"
        d.metadata_at = draw(st.integers(0, len(d.entries)))
        return d.render(), case
    d = _base(draw, min_tensors=1)
    e = _pick(draw, d)
    at = d.entries.index(e)
    if case == "identical tensor twice":
        d.extra.append((draw(st.integers(0, len(d.entries))), d.style.string(e.name), e.value_text(d.style)))
        return d.render(), case
    # The reference keeps the last definition; the first may say anything
    # well-typed, and only the strict profile notices it.
    decoy = draw(tensors(max_bytes=16))
    begin = draw(st.integers(0, U64_MAX))
    end = draw(st.integers(0, U64_MAX))
    text = json.dumps({"dtype": decoy.dtype, "shape": list(decoy.shape), "data_offsets": [begin, end]})
    d.extra.append((draw(st.integers(0, at)), d.style.string(e.name), text))
    return d.render(), case


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
def _metadata_null(draw: st.DrawFn) -> tuple[bytes, str]:
    d = _base(draw)
    d.metadata_raw = "null"
    d.metadata_at = draw(st.integers(0, len(d.entries)))
    return d.render(), "__metadata__: null"


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


# slug -> strategy of (bytes, case).  A meta-test checks that every error
# rule of the catalogue appears here.
CORRUPTIONS: Final[dict[str, Callable[[], st.SearchStrategy[tuple[bytes, str]]]]] = {
    "file-too-small": _file_too_small,
    "header-too-large": _header_too_large,
    "header-length-exceeds-file": _header_length_exceeds_file,
    "header-not-utf8": _header_not_utf8,
    "header-leading-bytes": _header_leading_bytes,
    "header-padding": _header_padding,
    "header-trailing-bytes": _header_trailing_bytes,
    "json-syntax": _json_syntax,
    "json-depth": _json_depth,
    "json-number": _json_number,
    "json-string": _json_string,
    "duplicate-field": _duplicate_field,
    "duplicate-key": _duplicate_key,
    "header-not-object": _header_not_object,
    "metadata-invalid": _metadata_invalid,
    "metadata-null": _metadata_null,
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


# The catalogue's regions whose rules validate() checks on one file's bytes;
# every error rule in them has a corruption strategy above.
FILE_REGIONS: Final = frozenset({"prefix", "header", "entries", "layout"})
# Regions whose error rules no single file can break, and why.
OTHER_REGIONS: Final = {
    "index": "checked on a model.safetensors.index.json and the shards it names, not on one file",
    "integrity": "needs an expected digest from outside the file",
    "policy": "needs a user's policy; the default validation has none",
}


def corruptible_rules() -> tuple[str, ...]:
    """The slugs :func:`corrupted_files` can break: every error rule of a file's bytes.

    These are the error rules of the regions prefix, header, entries and
    layout, in catalogue order.
    """
    return tuple(r.slug for r in RULES if r.slug in CORRUPTIONS)


def _one(slug: str) -> st.SearchStrategy[CorruptedFile]:
    def wrap(pair: tuple[bytes, str]) -> CorruptedFile:
        implied = IMPLIED.get(pair[1], (frozenset(), ""))[0]
        return CorruptedFile(pair[0], slug, pair[1], implied)

    return CORRUPTIONS[slug]().map(wrap)


def corrupted_files(*, rule: str | st.SearchStrategy[str] | None = None) -> st.SearchStrategy[CorruptedFile]:
    """A strategy for files that break one rule, as :class:`CorruptedFile`.

    ``rule`` is a slug or code of an error rule of a file's bytes (see
    :func:`corruptible_rules`; for example ``"offsets-not-contiguous"`` or
    ``"ST401"``), a strategy of slugs, or None to draw from all of them.  Each file breaks that rule
    and, unless ``implies`` names more, no other error rule: the strict
    profile's error findings on it all carry the slug ``rule`` (warnings such
    as an unaligned header may come too).  For a rule that both profiles
    check, ``safetensors==0.8.0`` rejects the file with the rule's
    ``reference_error``; for a strict-only rule it accepts it.

    >>> from validator.strategies import corrupted_files
    >>> case = corrupted_files(rule="json-depth").example()
    >>> case.rule, case.data[:8] != b""
    ('json-depth', True)
    """
    if rule is None:
        return st.sampled_from(corruptible_rules()).flatmap(_one)
    if isinstance(rule, st.SearchStrategy):
        return rule.map(_resolve).flatmap(_one)
    return _one(_resolve(rule))


def _resolve(key: str) -> str:
    try:
        found = lookup_rule(key)
    except KeyError:
        raise InvalidArgument(f"rule={key!r} is not a rule of the catalogue") from None
    if found.slug not in CORRUPTIONS:
        kind = "a warning" if found.severity is Severity.WARNING else f"a rule of the {found.region} region"
        raise InvalidArgument(f"rule={key!r} is {kind}; corrupted_files draws error rules of a file's bytes only")
    return found.slug


# --- structure-blind mutations -----------------------------------------------

_LENGTHS: Final = (0, 1, 2, 7, 8, MAX_HEADER, MAX_HEADER + 1, U64_MAX, 1 << 63)


@st.composite
def _mutate(draw: st.DrawFn, data: bytes, donor: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["flip", "truncate", "splice", "prefix", "insert", "delete", "byte"]))
        n = len(buf)
        # Bias positions towards the prefix and header, where the structure is.
        header_end = min(n, 8 + int.from_bytes(bytes(buf[:8]).ljust(8, b"\0"), "little"))
        pos_st = st.one_of(st.integers(0, max(0, header_end)), st.integers(0, n)) if n else st.just(0)
        if op == "flip" and n:
            at = min(draw(pos_st), n - 1)
            buf[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "byte" and n:
            at = min(draw(pos_st), n - 1)
            buf[at] = draw(st.sampled_from(b' \t\n\r\x00"{}[],:0-9eE.\\u\xff\x80'))
        elif op == "truncate":
            del buf[draw(st.integers(0, n)) :]
        elif op == "splice" and donor:
            start = draw(st.integers(0, len(donor) - 1))
            chunk = donor[start : start + draw(st.integers(1, 32))]
            at = draw(pos_st)
            buf[at : at + (len(chunk) if draw(st.booleans()) else 0)] = chunk
        elif op == "prefix":
            old = int.from_bytes(bytes(buf[:8]).ljust(8, b"\0"), "little")
            new = draw(st.one_of(st.sampled_from(_LENGTHS), st.integers(max(0, old - 16), min(U64_MAX, old + 16))))
            buf[:8] = new.to_bytes(8, "little")
        elif op == "insert":
            at = draw(pos_st)
            buf[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete" and n:
            at = min(draw(pos_st), n - 1)
            del buf[at : at + draw(st.integers(1, 8))]
    return bytes(buf)


def mutated_files(*, files: st.SearchStrategy[bytes] | None = None) -> st.SearchStrategy[bytes]:
    """A strategy for structure-blind byte mutations of valid files.

    One to three mutations -- bit flips, byte edits, truncations, splices of
    another file's bytes, insertions and deletions (biased towards the
    prefix and header), edits of the length prefix to nearby and boundary
    values -- are applied to a file drawn from ``files`` (default: the bytes
    of :func:`valid_files` with up to 5 tensors; spliced bytes come from a
    second, smaller valid file).  The result may be valid or invalid: use it for
    differential tests, where two readers must agree.

    >>> from validator.strategies import mutated_files
    >>> isinstance(mutated_files().example(), bytes)
    True
    """
    source = _MUTATION_SOURCES if files is None else files
    if not isinstance(source, st.SearchStrategy):
        raise InvalidArgument(f"files={files!r} must be a strategy of bytes")
    return st.tuples(source, _DONORS).flatmap(lambda pair: _mutate(pair[0], pair[1]))


# Small files mutate as well as big ones and are much cheaper to draw.
_MUTATION_SOURCES: Final = valid_files(tensors=tensor_dicts(max_size=5)).map(lambda f: f.data)
_DONORS: Final = valid_files(tensors=tensor_dicts(max_size=2), metadata=None).map(lambda f: f.data)
