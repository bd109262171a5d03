# Strategy: Hypothesis strategies for tensors and spec-valid files, modelled
# on hypothesis.extra.numpy (keyword-only options, a plain value or a
# strategy for each, InvalidArgument on bad options).  A file is drawn as a
# mutable Draft -- tensors placed in a data order, a JSON order, a metadata
# position, a writing style, a padding choice -- and rendered to bytes last,
# so that corrupt.py and its siblings can break one thing in a Draft and nothing
# else.  Only this module and its siblings import hypothesis.
#
# Spec: "8 bytes: N, an unsigned little-endian 64-bit integer, containing the
# size of the header"; "N bytes: a JSON UTF-8 string representing the header
# ... MAY be trailing padded with whitespace (0x20)"; "data_offsets point to
# the tensor data relative to the beginning of the byte buffer ... [BEGIN,
# END)"; "The byte buffer needs to be entirely indexed, and cannot contain
# holes."  Sub-byte dtypes (F4, F6_*) must fill whole bytes (the reference's
# MisalignedSlice), so drawn shapes of those dtypes are rounded up to an
# element count that does.
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeVar

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from validator._dtypes import DTYPE_BITS, DTYPES
from validator._rules import PREFIX_LEN

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping, Sequence

__all__ = [
    "FIELDS",
    "METADATA",
    "U64_MAX",
    "Draft",
    "EntryDraft",
    "GeneratedFile",
    "Style",
    "T",
    "Tensor",
    "drafts",
    "metadata_dicts",
    "nbytes",
    "tensor_dicts",
    "tensor_names",
    "tensors",
    "valid_files",
]

T = TypeVar("T")

FIELDS = ("dtype", "shape", "data_offsets")
METADATA = "__metadata__"
U64_MAX = (1 << 64) - 1


class Tensor(NamedTuple):
    """One tensor: its dtype name, its shape and its raw little-endian bytes.

    ``len(data)`` is always ``numel * bits / 8``: every drawn sub-byte tensor
    fills whole bytes.
    """

    dtype: str
    shape: tuple[int, ...]
    data: bytes


@dataclass(frozen=True)
class GeneratedFile:
    """A generated spec-valid file and what it is meant to contain.

    ``data`` is the whole file.  ``header`` is the parsed header the writer
    intended, keys in the JSON order of the file: ``"__metadata__"`` (when
    present) maps to a dict of strings, and every tensor name maps to
    ``{"dtype": str, "shape": list[int], "data_offsets": [begin, end]}``.
    ``tensors`` maps each name to its :class:`Tensor`, whose ``data`` sits at
    ``data[data_start + begin : data_start + end]``.
    """

    data: bytes
    header: dict[str, Any]
    tensors: dict[str, Tensor]

    @property
    def header_size(self) -> int:
        """N, the header length declared by the first 8 bytes."""
        return int.from_bytes(self.data[:8], "little")

    @property
    def data_start(self) -> int:
        """Absolute offset where the data region begins (8 + N)."""
        return PREFIX_LEN + self.header_size

    @property
    def metadata(self) -> dict[str, str] | None:
        """The ``__metadata__`` map, or None when the file has none."""
        meta = self.header.get(METADATA)
        return None if meta is None else dict(meta)


# --- argument checking ---------------------------------------------------


def _as_strategy(value: T | st.SearchStrategy[T], check: Callable[[T], None] | None = None) -> st.SearchStrategy[T]:
    if isinstance(value, st.SearchStrategy):
        return value
    if check is not None:
        check(value)
    return st.just(value)


def _check_int(value: object, name: str, low: int, high: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArgument(f"{name}={value!r} must be an integer")
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise InvalidArgument(f"{name}={value!r} must be {bound}")
    return value


def _check_dtype(value: object) -> None:
    if not isinstance(value, str) or value not in DTYPE_BITS:
        raise InvalidArgument(f"dtype {value!r} is not one of {', '.join(DTYPES)}")


def _check_shape(value: object) -> None:
    if not isinstance(value, tuple) or not all(
        isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= U64_MAX for d in value
    ):
        raise InvalidArgument(f"shape={value!r} must be a tuple of integers in [0, 2**64-1]")


def _dtype_strategy(dtypes: str | Collection[str] | st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    if isinstance(dtypes, st.SearchStrategy):
        return dtypes
    if isinstance(dtypes, str):
        _check_dtype(dtypes)
        return st.just(dtypes)
    names = list(dtypes)
    if not names:
        raise InvalidArgument("dtypes must not be empty")
    for name in names:
        _check_dtype(name)
    return st.sampled_from(names)


# --- shapes and tensors ----------------------------------------------------


def _fill_unit(bits: int) -> int:
    """The element count a tensor of ``bits``-bit elements must be a multiple of."""
    return 8 // math.gcd(bits, 8)


def _clamp(dims: list[int], limit: int) -> tuple[int, ...]:
    """Shrink dims left to right so that every running product stays <= limit.

    Dimensions after a 0 are left alone: the running product is 0 from there.
    """
    out: list[int] = []
    product = 1
    for dim in dims:
        d = dim
        if product and d > limit // product:
            d = max(1, limit // product)
        out.append(d)
        product *= d
    return tuple(out)


@st.composite
def _shapes(draw: st.DrawFn, max_rank: int, max_side: int, max_elements: int, zero_sized: bool) -> tuple[int, ...]:  # noqa: FBT001
    small = st.integers(0, min(4, max_rank))
    rank = draw(st.one_of(small, small, small, small, st.integers(0, max_rank)))
    if zero_sized and rank and draw(st.integers(0, 7)) == 0:
        # A zero-sized tensor: one dimension is 0, the others may be huge, as
        # long as every running product stays far from 2**64.
        side = st.one_of(st.integers(0, max_side), st.integers(0, 1 << 31))
        dims = draw(st.lists(side, min_size=rank, max_size=rank))
        dims[draw(st.integers(0, rank - 1))] = 0
        return _clamp(dims, 1 << 56)
    dims = draw(st.lists(st.integers(1, max_side), min_size=rank, max_size=rank))
    return _clamp(dims, max_elements)


def _fit_subbyte(shape: tuple[int, ...], bits: int) -> tuple[int, ...]:
    """Round the element count up so that a sub-byte tensor fills whole bytes."""
    unit = _fill_unit(bits)
    numel = math.prod(shape)
    if numel % unit == 0:
        return shape
    if not shape:
        return (unit,)
    return (*shape[:-1], shape[-1] * unit)


def nbytes(dtype: str, shape: Sequence[int]) -> int:
    """Bytes taken by a tensor whose element count fills whole bytes."""
    return math.prod(shape) * DTYPE_BITS[dtype] // 8


def tensors(
    *,
    dtypes: str | Collection[str] | st.SearchStrategy[str] = DTYPES,
    shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]] | None = None,
    max_rank: int = 32,
    max_side: int = 6,
    max_bytes: int = 64,
    zero_sized: bool = True,
) -> st.SearchStrategy[Tensor]:
    """A strategy for single tensors: ``Tensor(dtype, shape, data)``.

    ``dtypes`` is one dtype name, a collection of names or a strategy of
    names (default: every dtype of the spec, F4 and F6 included).  ``shape``
    is a fixed shape tuple or a strategy of shapes; by default shapes of rank
    0 (scalars) to ``max_rank`` are drawn, mostly of rank 4 or less, each
    side at most ``max_side``, about ``max_bytes`` bytes at most, and
    sometimes (when ``zero_sized``) with a dimension of 0 and huge others.
    Shapes of sub-byte dtypes are rounded up to fill whole bytes; a given
    shape that cannot hold a sub-byte dtype rejects the draw.  ``data`` is
    random bytes of exactly the tensor's size.

    >>> from validator.strategies import tensors
    >>> t = tensors(dtypes="F4", shape=(2, 3)).example()
    >>> t.dtype, t.shape, len(t.data)
    ('F4', (2, 3), 3)
    """
    dtype_st = _dtype_strategy(dtypes)
    _check_int(max_rank, "max_rank", 0)
    _check_int(max_side, "max_side", 1)
    _check_int(max_bytes, "max_bytes", 0)
    if not isinstance(zero_sized, bool):
        raise InvalidArgument(f"zero_sized={zero_sized!r} must be a bool")
    shape_st = None if shape is None else _as_strategy(shape, _check_shape)
    # One default shape strategy per bit width, built once.
    default_shapes = {
        bits: _shapes(max_rank, max_side, max(1, max_bytes * 8 // bits), zero_sized)
        for bits in set(DTYPE_BITS.values())
    }

    @st.composite
    def draw_tensor(draw: st.DrawFn) -> Tensor:
        dtype = draw(dtype_st)
        _check_dtype(dtype)
        bits = DTYPE_BITS[dtype]
        if shape_st is None:
            dims = _fit_subbyte(draw(default_shapes[bits]), bits)
        else:
            dims = tuple(draw(shape_st))
            _check_shape(dims)
            numel = math.prod(dims)
            if (numel * bits) % 8:
                draw(st.nothing())  # this dtype cannot hold this shape
            if numel * bits > 8 * (1 << 24):
                raise InvalidArgument(f"shape {dims} of {dtype} is over 16 MiB; draw smaller shapes")
        size = nbytes(dtype, dims)
        data = draw(st.binary(min_size=size, max_size=size))
        return Tensor(dtype, dims, data)

    return draw_tensor()


_tensors = tensors  # tensor_dicts() has an argument of this name


def tensor_names() -> st.SearchStrategy[str]:
    """Tensor names: dotted identifiers, and any Unicode text (empty included).

    ``"__metadata__"`` is never drawn.
    """
    dotted = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._", min_size=1, max_size=24)
    return st.one_of(dotted, st.text(max_size=12)).filter(lambda s: s != METADATA)


def tensor_dicts(
    *,
    tensors: Tensor | st.SearchStrategy[Tensor] | None = None,
    names: Collection[str] | st.SearchStrategy[str] | None = None,
    min_size: int = 0,
    max_size: int = 8,
) -> st.SearchStrategy[dict[str, Tensor]]:
    """A strategy for ``{name: Tensor}`` dicts, as a file's tensor table.

    ``tensors`` is a strategy of :class:`Tensor` or one Tensor, by default
    :func:`tensors` with its defaults.  ``names`` is a strategy of names or
    a collection to choose from, by default :func:`tensor_names` (Unicode,
    the empty name included).  ``"__metadata__"`` never names a tensor.

    >>> from validator.strategies import tensor_dicts
    >>> d = tensor_dicts(min_size=2, max_size=2).example()
    >>> len(d)
    2
    """
    _check_int(min_size, "min_size", 0)
    _check_int(max_size, "max_size", min_size)
    name_st: st.SearchStrategy[str]
    if names is None:
        name_st = tensor_names()
    elif isinstance(names, st.SearchStrategy):
        name_st = names
    elif isinstance(names, str) or not all(isinstance(n, str) for n in names) or not names:
        raise InvalidArgument(f"names={names!r} must be a strategy of strings or a non-empty collection of them")
    else:
        name_st = st.sampled_from(sorted(names))
    tensor_st: st.SearchStrategy[Tensor]
    if tensors is None:
        tensor_st = _tensors()
    elif isinstance(tensors, Tensor):
        tensor_st = _table_strategy({"t": tensors}).map(lambda d: d["t"])
    elif isinstance(tensors, st.SearchStrategy):
        tensor_st = tensors
    else:
        raise InvalidArgument(f"tensors={tensors!r} must be a Tensor or a strategy of Tensor")
    return st.dictionaries(name_st.filter(lambda s: s != METADATA), tensor_st, min_size=min_size, max_size=max_size)


def metadata_dicts(*, max_size: int = 4) -> st.SearchStrategy[dict[str, str]]:
    """``__metadata__`` maps: Unicode keys to Unicode string values."""
    _check_int(max_size, "max_size", 0)
    return st.dictionaries(st.text(max_size=10), st.text(max_size=40), max_size=max_size)


# --- drafts: a file before it is rendered ---------------------------------


@dataclass
class Style:
    """How a writer spells its JSON."""

    ensure_ascii: bool = False
    item_sep: str = ","
    key_sep: str = ":"
    newline: bool = False

    def string(self, text: str) -> str:
        return json.dumps(text, ensure_ascii=self.ensure_ascii)


@dataclass(eq=False)  # entries are found in lists by identity
class EntryDraft:
    """One tensor entry; ``overrides`` and ``raw`` hold raw JSON text."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int
    data: bytes = b""
    order: tuple[str, ...] = FIELDS
    overrides: dict[str, str] = field(default_factory=dict)
    extra: list[tuple[int, str, str]] = field(default_factory=list)  # (position, raw key, raw value)
    drop: frozenset[str] = frozenset()
    raw: str | None = None
    key: str | None = None

    def field_text(self, name: str) -> str:
        if name in self.overrides:
            return self.overrides[name]
        if name == "dtype":
            return json.dumps(self.dtype)
        if name == "shape":
            return json.dumps(list(self.shape))
        return json.dumps([self.begin, self.end])

    def value_text(self, style: Style) -> str:
        if self.raw is not None:
            return self.raw
        items = [(json.dumps(f), self.field_text(f)) for f in self.order if f not in self.drop]
        for at, key, value in sorted(self.extra, key=lambda x: x[0]):
            items.insert(min(at, len(items)), (key, value))
        sep = style.item_sep if style.item_sep == "," else ", "
        return "{" + sep.join(f"{k}{style.key_sep}{v}" for k, v in items) + "}"


@dataclass
class Draft:
    """A file before rendering: every part a corruption may replace."""

    entries: list[EntryDraft]  # in JSON order
    data: bytes
    metadata: dict[str, str] | None = None
    metadata_at: int = 0
    metadata_raw: str | None = None
    extra: list[tuple[int, str, str]] = field(default_factory=list)  # top-level raw items
    style: Style = field(default_factory=Style)
    lead: bytes = b""
    pad: bytes | None = None  # None: spaces per pad_mode
    pad_mode: tuple[str, int] = ("align", 0)
    root_raw: str | None = None

    def data_order(self) -> list[EntryDraft]:
        """Entries sorted as the reference walks them, by (begin, end)."""
        return sorted(self.entries, key=lambda e: (e.begin, e.end))

    def json_text(self) -> str:
        if self.root_raw is not None:
            return self.root_raw
        style = self.style
        items = [(e.key if e.key is not None else style.string(e.name), e.value_text(style)) for e in self.entries]
        if self.metadata is not None or self.metadata_raw is not None:
            if self.metadata_raw is not None:
                meta = self.metadata_raw
            else:
                assert self.metadata is not None
                sep = ", " if style.item_sep != "," else ","
                meta = (
                    "{"
                    + sep.join(f"{style.string(k)}{style.key_sep}{style.string(v)}" for k, v in self.metadata.items())
                    + "}"
                )
            items.insert(min(self.metadata_at, len(items)), (json.dumps(METADATA), meta))
        for at, key, value in sorted(self.extra, key=lambda x: x[0]):
            items.insert(min(at, len(items)), (key, value))
        if style.newline and items:
            body = ",\n  ".join(f"{k}{style.key_sep}{v}" for k, v in items)
            return "{\n  " + body + "\n}"
        return "{" + style.item_sep.join(f"{k}{style.key_sep}{v}" for k, v in items) + "}"

    def header(self) -> bytes:
        text = self.lead + self.json_text().encode("utf-8")
        if self.pad is not None:
            return text + self.pad
        mode, extra = self.pad_mode
        # Aligned: 8 + N is a multiple of 8; free: any count of spaces.
        count = (-len(text)) % 8 + 8 * extra if mode == "align" else extra
        return text + b" " * count

    def render(self) -> bytes:
        header = self.header()
        return len(header).to_bytes(8, "little") + header + self.data

    def intended_header(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        items: list[tuple[str, Any]] = [
            (e.name, {"dtype": e.dtype, "shape": list(e.shape), "data_offsets": [e.begin, e.end]}) for e in self.entries
        ]
        if self.metadata is not None:
            items.insert(min(self.metadata_at, len(items)), (METADATA, dict(self.metadata)))
        out.update(items)
        return out

    def generated(self) -> GeneratedFile:
        """The rendered file with its intended header and tensors."""
        return GeneratedFile(
            self.render(), self.intended_header(), {e.name: Tensor(e.dtype, e.shape, e.data) for e in self.entries}
        )

    def fill_data(self, length: int | None = None) -> None:
        """Rebuild the data region from the entries' offsets and bytes."""
        ends = [e.end for e in self.entries if e.end >= e.begin]
        size = max(ends, default=0) if length is None else length
        buf = bytearray(b"\xa5" * size)
        for e in self.entries:
            if e.end - e.begin == len(e.data) and e.end <= size:
                buf[e.begin : e.end] = e.data
        self.data = bytes(buf)


@st.composite
def _styles(draw: st.DrawFn) -> Style:
    compact = draw(st.booleans())
    return Style(
        ensure_ascii=draw(st.booleans()),
        item_sep="," if compact else ", ",
        key_sep=":" if compact else ": ",
        newline=draw(st.booleans()) and not compact,
    )


@st.composite
def _pad_modes(draw: st.DrawFn, aligned: bool | None) -> tuple[str, int]:  # noqa: FBT001
    mode = draw(st.sampled_from(["align", "free"])) if aligned is None else ("align" if aligned else "free")
    if mode == "align":
        return ("align", draw(st.integers(0, 3)))
    return ("free", draw(st.integers(0, 23)))


_DEFAULT: Any = object()


@st.composite
def drafts(
    draw: st.DrawFn,
    tensor_st: st.SearchStrategy[dict[str, Tensor]],
    metadata_st: st.SearchStrategy[dict[str, str] | None],
    aligned: bool | None = None,  # noqa: FBT001
) -> Draft:
    """Draw a spec-valid Draft (internal: the corruption strategies edit it)."""
    table = draw(tensor_st)
    names = list(table)
    data_order = draw(st.permutations(names))
    json_order = draw(st.permutations(names))
    placed: dict[str, EntryDraft] = {}
    cursor = 0
    chunks = []
    for name in data_order:
        t = table[name]
        placed[name] = EntryDraft(name, t.dtype, t.shape, cursor, cursor + len(t.data), t.data)
        chunks.append(t.data)
        cursor += len(t.data)
    orders = draw(st.lists(st.permutations(FIELDS), min_size=len(names), max_size=len(names)))
    entries = []
    for name, order in zip(json_order, orders, strict=True):
        entry = placed[name]
        entry.order = tuple(order)
        entries.append(entry)
    metadata = draw(metadata_st)
    return Draft(
        entries=entries,
        data=b"".join(chunks),
        metadata=None if metadata is None else dict(metadata),
        metadata_at=draw(st.integers(0, len(names))),
        style=draw(_styles()),
        pad_mode=draw(_pad_modes(aligned)),
    )


def _default_tensor_dicts() -> st.SearchStrategy[dict[str, Tensor]]:
    return _DEFAULT_TABLES


_DEFAULT_TABLES: Final = st.one_of(
    *[tensor_dicts()] * 5, tensor_dicts(tensors=tensors(max_rank=2, max_bytes=8), min_size=24, max_size=80)
)


def _table_strategy(
    value: Mapping[str, Tensor] | st.SearchStrategy[dict[str, Tensor]] | None,
) -> st.SearchStrategy[dict[str, Tensor]]:
    if value is None:
        return _default_tensor_dicts()
    if isinstance(value, st.SearchStrategy):
        return value
    if not all(isinstance(k, str) and isinstance(v, Tensor) for k, v in value.items()):
        raise InvalidArgument("tensors must map names to Tensor values")
    if METADATA in value:
        raise InvalidArgument("'__metadata__' cannot name a tensor")
    for t in value.values():
        _check_dtype(t.dtype)
        _check_shape(t.shape)
        if (math.prod(t.shape) * DTYPE_BITS[t.dtype]) % 8 or len(t.data) != nbytes(t.dtype, t.shape):
            raise InvalidArgument(f"tensor data of {len(t.data)} bytes does not fit {t.dtype} {t.shape}")
    return st.just(dict(value))


def _metadata_strategy(value: object) -> st.SearchStrategy[dict[str, str] | None]:
    if value is _DEFAULT:
        return st.one_of(st.none(), metadata_dicts())
    if value is None:
        return st.none()
    if isinstance(value, st.SearchStrategy):
        return value
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise InvalidArgument(f"metadata={value!r} must be a dict of str to str, None, or a strategy")
    return st.just(dict(value))


def valid_files(
    *,
    tensors: Mapping[str, Tensor] | st.SearchStrategy[dict[str, Tensor]] | None = None,
    metadata: Mapping[str, str] | st.SearchStrategy[dict[str, str] | None] | None = _DEFAULT,
    aligned: bool | None = None,
) -> st.SearchStrategy[GeneratedFile]:
    """A strategy for spec-valid safetensors files, as :class:`GeneratedFile`.

    Everything a real writer varies is drawn: the order of tensors in the
    JSON and, independently, in the data region; the order of the three
    fields in each entry; the position of ``__metadata__`` among the
    entries; compact or spaced separators, ``\\uXXXX`` escapes or raw UTF-8,
    one line or several; and the padding of the header with spaces.

    ``tensors`` is a ``{name: Tensor}`` dict or a strategy of them (default:
    mostly :func:`tensor_dicts`, sometimes 24 to 96 small tensors; ``{}`` is
    drawn too).  ``metadata`` is a dict, ``None`` for no ``__metadata__``, or
    a strategy; by default it is sometimes absent.  ``aligned=True`` pads the
    header so the data region starts on a multiple of 8, ``False`` pads by
    0 to 23 spaces whatever that gives, ``None`` draws either.

    Every output is accepted by ``validator.validate`` under both profiles
    and by ``safetensors==0.8.0``; warnings (an unaligned header or tensor, an
    empty or odd tensor name) may be reported.

    >>> from validator.strategies import Tensor, valid_files
    >>> f = valid_files(tensors={"w": Tensor("U8", (2,), b"ab")}, metadata=None, aligned=True).example()
    >>> f.header["w"], f.data_start % 8, f.data[-2:]
    ({'dtype': 'U8', 'shape': [2], 'data_offsets': [0, 2]}, 0, b'ab')
    """
    if aligned is not None and not isinstance(aligned, bool):
        raise InvalidArgument(f"aligned={aligned!r} must be True, False or None")
    table_st = _table_strategy(tensors)
    meta_st = _metadata_strategy(metadata)
    return drafts(table_st, meta_st, aligned).map(Draft.generated)
