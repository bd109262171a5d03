# Strategy: what every corruption strategy starts from and reaches for: a
# spec-valid Draft to break (see files.py), a tensor of it to break, a fresh
# name, room in the data region, and JSON values that are safe to add.
from __future__ import annotations

from typing import TYPE_CHECKING, Final

from hypothesis import strategies as st

from validator.testing.files import (
    U64_MAX,
    Draft,
    EntryDraft,
    _default_tensor_dicts,
    drafts,
    metadata_dicts,
    tensor_dicts,
    tensor_names,
    tensors,
)

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["MAX_DEPTH", "MAX_HEADER"]

MAX_HEADER: Final = 100_000_000
MAX_DEPTH: Final = 127  # serde_json refuses the 128th nested container


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
