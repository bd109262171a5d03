# Strategy: the header object, its __metadata__ and its tensor entries, read
# from the parsed JSON tree the way safetensors 0.8.0 deserialises them
# (serde derive into `HashMetadata { __metadata__: Option<HashMap<String,
# String>>, #[serde(flatten)] tensors: HashMap<String, TensorInfo> }`), with
# the strict profile's extra findings where the reference is looser than the
# written spec.  Findings that only the strict profile reports are still
# emitted here; the caller filters by profile.
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from validator._dtypes import DTYPE_BITS
from validator._numbers import U64_MAX

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from validator._check import Checker
    from validator._json import Json

__all__ = [
    "FIELDS",
    "SUSPICIOUS",
    "Entry",
    "Locator",
    "Table",
    "check_name",
    "duplicate_field",
    "duplicate_metadata",
    "finish_entry",
    "kind",
    "metadata_duplicate",
    "metadata_not_object",
    "metadata_not_string",
    "metadata_null",
    "pointer",
    "read_dtype",
    "read_entry",
    "read_table",
    "suspicious",
    "unknown_field",
]

FIELDS: Final = ("dtype", "shape", "data_offsets")
_METADATA: Final = "__metadata__"
# C0 and C1 controls, DEL, and the bidirectional embedding, override and
# isolate controls that let a name display as something it is not.
SUSPICIOUS: Final = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


# The ASCII characters SUSPICIOUS flags (C0 controls and DEL), for a long
# ASCII name: one C pass over its bytes instead of a regex over its text.
_ASCII_FLAGGED: Final = bytes(c for c in range(0x80) if SUSPICIOUS.match(chr(c)))
_LONG_NAME: Final = 4096


def suspicious(name: str) -> bool:
    """Whether the name holds a character tensor-name-suspicious flags."""
    if len(name) > _LONG_NAME and name.isascii():
        raw = name.encode("ascii")
        return len(raw.translate(None, _ASCII_FLAGGED)) != len(raw)
    return SUSPICIOUS.search(name) is not None


@dataclass
class Entry:
    """A tensor entry as far as it could be read; None marks a bad field."""

    name: str
    offset: int | None
    dtype: str | None = None
    shape: tuple[int, ...] | None = None
    offsets: tuple[int, int] | None = None
    ok: bool = True


@dataclass
class Table:
    """What the header object yielded."""

    entries: dict[str, Entry]
    metadata: dict[str, str] | None


class Locator:
    """Byte offsets of keys and values, from the exact parser's side table.

    Without a side table (the fast path) every offset is None; the fast
    path's checker aborts before a None offset could reach a finding.
    """

    __slots__ = ("positions",)

    def __init__(self, positions: Mapping[int, Sequence[int]] | None) -> None:
        self.positions = positions

    def key(self, obj: Json, i: int) -> int | None:
        if self.positions is None:
            return None
        return self.positions[id(obj)][2 * i]

    def value(self, obj: Json, i: int) -> int | None:
        if self.positions is None:
            return None
        return self.positions[id(obj)][2 * i + 1]

    def item(self, arr: Json, i: int) -> int | None:
        if self.positions is None:
            return None
        return self.positions[id(arr)][i]


def kind(value: Json) -> str:
    """The JSON type name of a parsed value."""
    if value is None:
        return "null"
    if type(value) is bool:
        return "boolean"
    if type(value) is tuple:
        return "object"
    if type(value) is list:
        return "array"
    if type(value) is str:
        return "string"
    return "number"


def pointer(*parts: str | int) -> str:
    """A JSON Pointer (RFC 6901) from path parts."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _u64_problem(value: Json) -> str | None:
    """Why ``value`` is not what serde reads as usize, or None if it is."""
    if type(value) is int:
        if value < 0:
            return f"{value} is negative"
        if value > U64_MAX:
            return f"{value} exceeds 2^64-1"
        return None
    if type(value) is float:
        if value == 0 and str(value).startswith("-"):
            return "-0 is read as a float, not an integer"
        return f"{value!r} is a float; write an integer without a fraction or exponent"
    return f"found {kind(value)}"


def read_table(root: Json, root_offset: int | None, loc: Locator, out: Checker) -> Table | None:
    """Read the header object; None when the header is not an object."""
    if type(root) is not tuple:
        out.add("header-not-object", f"header is a JSON {kind(root)}; it must be an object", root_offset)
        return None
    entries: dict[str, Entry] = {}
    metadata: dict[str, str] | None = None
    seen_metadata = False
    for i, (name, value) in enumerate(root):
        if name == _METADATA:
            if seen_metadata:
                duplicate_metadata(loc.key(root, i), out)
            seen_metadata = True
            metadata = _read_metadata(value, loc.value(root, i), loc, out)
            continue
        check_name(name, loc.key(root, i), name in entries, out)
        entries[name] = read_entry(name, value, loc.value(root, i), loc, out)
    return Table(entries, metadata)


def check_name(name: str, at: int | None, seen: bool, out: Checker) -> None:  # noqa: FBT001
    """The findings about a tensor's name, at the offset of its key."""
    if seen:
        # Spec: duplicate keys are disallowed.  Reference: the last one wins.
        out.add(
            "duplicate-key",
            f"tensor {name!r} is defined more than once; the reference silently keeps the last definition",
            at,
            tensor=name,
            json_path=pointer(name),
        )
    if not name or suspicious(name):
        what = "is empty" if not name else "holds control or bidirectional-override characters"
        out.add("tensor-name-suspicious", f"tensor name {name!r} {what}", at, tensor=name, json_path=pointer(name))


def metadata_null(at: int | None, out: Checker) -> None:
    """__metadata__ is null."""
    # Reference: Option<...> reads null as absent.  Spec: the value is a map.
    out.add(
        "metadata-null", "__metadata__ is null; omit it or give an object of strings", at, json_path=pointer(_METADATA)
    )


def metadata_not_object(what: str, at: int | None, out: Checker) -> None:
    """__metadata__ is neither null nor an object, but a JSON ``what``."""
    out.add(
        "metadata-invalid",
        f"__metadata__ is a JSON {what}; it must be an object of strings",
        at,
        json_path=pointer(_METADATA),
    )


def metadata_duplicate(key: str, at: int | None, out: Checker) -> None:
    """A metadata key seen before."""
    out.add(
        "duplicate-key",
        f"metadata key {key!r} appears more than once; the reference keeps the last value",
        at,
        json_path=pointer(_METADATA, key),
    )


def metadata_not_string(key: str, what: str, at: int | None, out: Checker) -> None:
    """A metadata value that is not a string but a JSON ``what``."""
    out.add(
        "metadata-invalid",
        f"metadata value for {key!r} is a JSON {what}; metadata values must be strings",
        at,
        json_path=pointer(_METADATA, key),
    )


def duplicate_metadata(at: int | None, out: Checker) -> None:
    """__metadata__ given twice."""
    # serde: "duplicate field `__metadata__`".
    out.add("duplicate-field", "__metadata__ appears more than once", at, json_path=pointer(_METADATA))


def duplicate_field(name: str, field: str, at: int | None, out: Checker) -> None:
    """A tensor field given twice."""
    out.add(
        "duplicate-field",
        f"field {field!r} appears more than once in tensor {name!r}",
        at,
        tensor=name,
        json_path=pointer(name, field),
    )


def unknown_field(name: str, field: str, at: int | None, out: Checker) -> None:
    """A tensor field the spec does not define."""
    # Reference: unknown fields are ignored.  Spec: the entry has exactly
    # these three fields.
    out.add(
        "tensor-field-unknown",
        f"tensor {name!r} has unknown field {field!r}",
        at,
        tensor=name,
        json_path=pointer(name, field),
    )


def _read_metadata(value: Json, at: int | None, loc: Locator, out: Checker) -> dict[str, str] | None:
    if value is None:
        metadata_null(at, out)
        return None
    if type(value) is not tuple:
        metadata_not_object(kind(value), at, out)
        return None
    result: dict[str, str] = {}
    for i, (key, item) in enumerate(value):
        if key in result:
            metadata_duplicate(key, loc.key(value, i), out)
        if type(item) is not str:
            metadata_not_string(key, kind(item), loc.value(value, i), out)
            continue
        result[key] = item
    return result


def read_entry(name: str, value: Json, at: int | None, loc: Locator, out: Checker) -> Entry:
    """Read one tensor entry from its parsed value."""
    entry = Entry(name, at)
    fields: dict[str, tuple[Json, int | None]] = {}
    if type(value) is tuple:
        for i, (field, item) in enumerate(value):
            if field in FIELDS:
                if field in fields:
                    duplicate_field(name, field, loc.key(value, i), out)
                    entry.ok = False
                    continue
                fields[field] = (item, loc.value(value, i))
            else:
                unknown_field(name, field, loc.key(value, i), out)
        return finish_entry(entry, fields, loc, out)
    if type(value) is list:
        # Reference: serde reads a struct from a sequence of its fields in
        # order, and refuses a sequence of any other length.  The strict
        # finding comes first for any array; the corpus manifest lists both.
        out.add(
            "tensor-entry-array",
            f"tensor {name!r} is written as an array; write an object with dtype, shape and data_offsets",
            at,
            tensor=name,
            json_path=pointer(name),
        )
        if len(value) != len(FIELDS):
            out.add(
                "tensor-entry-invalid",
                f"tensor {name!r} is an array of {len(value)} items; an array entry needs exactly 3",
                at,
                tensor=name,
                json_path=pointer(name),
            )
            entry.ok = False
            return entry
        for i, field in enumerate(FIELDS):
            fields[field] = (value[i], loc.item(value, i))
        return finish_entry(entry, fields, loc, out, check_missing=False)
    out.add(
        "tensor-entry-invalid",
        f"tensor {name!r} is a JSON {kind(value)}; it must be an object",
        at,
        tensor=name,
        json_path=pointer(name),
    )
    entry.ok = False
    return entry


def finish_entry(
    entry: Entry,
    fields: dict[str, tuple[Json, int | None]],
    loc: Locator,
    out: Checker,
    *,
    check_missing: bool = True,
) -> Entry:
    """Read the known fields of an entry, in the reference's order."""
    name = entry.name
    at = entry.offset
    if check_missing:
        missing = [f for f in FIELDS if f not in fields]
        if missing:
            out.add(
                "tensor-field-missing",
                f"tensor {name!r} lacks {', '.join(missing)}",
                at,
                tensor=name,
                json_path=pointer(name),
            )
            entry.ok = False
    if "dtype" in fields:
        entry.dtype = read_dtype(name, *fields["dtype"], out)
    if "shape" in fields:
        entry.shape = _read_shape(name, *fields["shape"], loc, out)
    if "data_offsets" in fields:
        entry.offsets = _read_offsets(name, *fields["data_offsets"], loc, out)
    if entry.dtype is None or entry.shape is None or entry.offsets is None:
        entry.ok = False
    return entry


def read_dtype(name: str, value: Json, at: int | None, out: Checker) -> str | None:
    """The dtype of an entry, or None with a finding."""
    if type(value) is str:
        if value in DTYPE_BITS:
            return value
        hint = next((d for d in DTYPE_BITS if d.lower() == value.lower()), None)
        extra = f"; dtype names are case-sensitive, did you mean {hint!r}?" if hint else ""
        out.add(
            "dtype-unknown",
            f"tensor {name!r} has unknown dtype {value!r}{extra}",
            at,
            tensor=name,
            json_path=pointer(name, "dtype"),
        )
        return None
    if type(value) is tuple and len(value) == 1:
        variant, unit = value[0]
        if variant in DTYPE_BITS and unit is None:
            # Reference: serde reads a unit enum variant from {"F32": null}.
            out.add(
                "dtype-not-string",
                f"tensor {name!r} writes its dtype as {{{variant!r}: null}}; write the string {variant!r}",
                at,
                tensor=name,
                json_path=pointer(name, "dtype"),
            )
            return variant
    out.add(
        "dtype-unknown",
        f"tensor {name!r} has a dtype that is a JSON {kind(value)}; it must be a dtype name",
        at,
        tensor=name,
        json_path=pointer(name, "dtype"),
    )
    return None


def _read_shape(name: str, value: Json, at: int | None, loc: Locator, out: Checker) -> tuple[int, ...] | None:
    if type(value) is not list:
        out.add(
            "shape-invalid",
            f"tensor {name!r} has a shape that is a JSON {kind(value)}; it must be an array",
            at,
            tensor=name,
            json_path=pointer(name, "shape"),
        )
        return None
    for i, dim in enumerate(value):
        problem = _u64_problem(dim)
        if problem is not None:
            out.add(
                "shape-invalid",
                f"tensor {name!r} shape[{i}]: {problem}",
                loc.item(value, i),
                tensor=name,
                json_path=pointer(name, "shape", i),
            )
            return None
    return tuple(value)  # type: ignore[arg-type]


def _read_offsets(name: str, value: Json, at: int | None, loc: Locator, out: Checker) -> tuple[int, int] | None:
    if type(value) is not list:
        out.add(
            "offsets-invalid",
            f"tensor {name!r} has data_offsets that is a JSON {kind(value)}; it must be [begin, end]",
            at,
            tensor=name,
            json_path=pointer(name, "data_offsets"),
        )
        return None
    if len(value) != 2:
        out.add(
            "offsets-invalid",
            f"tensor {name!r} has {len(value)} data_offsets; it needs exactly 2, [begin, end]",
            at,
            tensor=name,
            json_path=pointer(name, "data_offsets"),
        )
        return None
    for i, item in enumerate(value):
        problem = _u64_problem(item)
        if problem is not None:
            out.add(
                "offsets-invalid",
                f"tensor {name!r} data_offsets[{i}]: {problem}",
                loc.item(value, i),
                tensor=name,
                json_path=pointer(name, "data_offsets", i),
            )
            return None
    return (value[0], value[1])  # type: ignore[return-value]
