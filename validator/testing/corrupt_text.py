# Strategy: corruptions of the length prefix, the header bytes and the JSON
# text (the prefix and header regions of the catalogue).  Each strategy draws
# (file bytes, case) breaking exactly its rule; see corrupt.py.
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final

from hypothesis import strategies as st

from validator.testing.corrupt_base import _SAFE_JSON, MAX_DEPTH, MAX_HEADER, _base, _case, _nest, _pick
from validator.testing.files import FIELDS, METADATA, U64_MAX, metadata_dicts, tensor_names, tensors, valid_files

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["TEXT_CORRUPTIONS"]


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


TEXT_CORRUPTIONS: Final[dict[str, Callable[[], st.SearchStrategy[tuple[bytes, str]]]]] = {
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
}
