# Strategy: the indexing rules of safetensors 0.8.0's slice objects for the
# frameworks it serves by copying (numpy, JAX, MLX, paddle, TensorFlow).
# torch slices are torch views and follow torch's own rules instead.
#
# Observed on 0.8.0 (each rule has a test in tests/test_compat_slicing.py):
# - an index is an int, a slice, `...`, a tuple of those, or a list; an empty
#   list selects nothing of the first dimension, a non-empty one is refused;
# - ints fit in 32 bits; a negative int counts from the end of its dimension;
# - slice bounds are unsigned: a negative bound is an OverflowError, and the
#   step must be positive;
# - `...` stands for every dimension not indexed (at most one `...`);
# - items are converted in order (a slice's bounds and step, an int's
#   sign), after every item's type has been checked;
# - bounds are checked from the last dimension to the first: a start at or
#   past the end, or a stop past the end, is an error naming the dimension.
#   A dimension of size 0 can therefore only be left unindexed.
# Deviation, on purpose: a slice whose stop is before its start selects
# nothing (the reference raises SystemError or ValueError from its internals).
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Final

from validator.compat._errors import CompatLoadError, as_u64

__all__ = ["parse", "select"]

_I32: Final = 1 << 31
_UNSUPPORTED: Final = "Unsupported slice index at position {}: expected slice, int, or ellipsis"


@dataclass(frozen=True)
class _Select:
    index: int

    def __str__(self) -> str:
        return str(self.index)


@dataclass(frozen=True)
class _Narrow:
    start: int | None
    stop: int | None
    step: int = 1

    def __str__(self) -> str:
        text = f"{'' if self.start is None else self.start}:{'' if self.stop is None else self.stop}"
        return text if self.step == 1 else f"{text}:{self.step}"


_Indexer = _Select | _Narrow
_ELLIPSIS: Final = object()


def _bound(value: object) -> int | None:
    if value is None:
        return None
    number = operator.index(value)  # type: ignore[arg-type]  # TypeError for a float, as the reference's
    return as_u64(number)


def _step(value: object) -> int:
    if value is None:
        return 1
    number = operator.index(value)  # type: ignore[arg-type]  # TypeError for a float
    if not -(1 << 63) <= number < 1 << 63:
        msg = "Python int too large to convert to C long"
        raise OverflowError(msg)
    if number <= 0:
        msg = f"Slice step must be a positive integer, got {number}"
        raise CompatLoadError(msg)
    return number


def _one(item: object, position: int) -> _Select | slice | object:
    # The type check for every item comes first (the reference extracts the
    # whole index before converting any item); bounds and steps are
    # converted later, item by item, in order.
    if item is Ellipsis:
        return _ELLIPSIS
    if isinstance(item, slice):
        return item
    try:
        number = operator.index(item)  # type: ignore[arg-type]  # any object with __index__
    except TypeError:
        number = None
    if number is None or not -_I32 <= number < _I32:
        raise CompatLoadError(_UNSUPPORTED.format(position))
    return _Select(number)


def parse(index: object, shape: tuple[int, ...]) -> list[_Indexer]:
    """The reference's indexers for ``index`` over ``shape``, or its error."""
    if isinstance(index, list):
        if index:
            msg = "Non empty lists are not implemented"
            raise CompatLoadError(msg)
        items: tuple[object, ...] = (slice(0, 0),)
    else:
        items = index if isinstance(index, tuple) else (index,)
    if sum(1 for item in items if item is Ellipsis) > 1:
        msg = "Only one ellipsis (...) is allowed in slice index"
        raise CompatLoadError(msg)
    parsed = [_one(item, i) for i, item in enumerate(items)]
    if _ELLIPSIS in parsed:
        at = parsed.index(_ELLIPSIS)
        fill = max(len(shape) - (len(parsed) - 1), 0)
        parsed[at : at + 1] = [slice(None)] * fill
    indexers: list[_Indexer] = []
    for dim, item in enumerate(parsed):
        if isinstance(item, slice):
            item = _Narrow(_bound(item.start), _bound(item.stop), _step(item.step))  # noqa: PLW2901 - converted in order
        elif isinstance(item, _Select) and item.index < 0:
            size = shape[dim] if dim < len(shape) else 0
            if item.index + size < 0:
                msg = f"Invalid index {item.index} for dimension {dim} of size {size}"
                raise CompatLoadError(msg)
            item = _Select(item.index + size)  # noqa: PLW2901 - normalised in place
        indexers.append(item)  # type: ignore[arg-type]  # the ellipsis is gone
    return indexers


def select(indexers: list[_Indexer], shape: tuple[int, ...]) -> tuple[object, ...]:
    """A numpy/torch basic index for ``indexers``, after the reference's bounds checks."""
    shown = "[" + ", ".join(map(str, indexers)) + "]"
    if len(indexers) > len(shape):
        msg = f"Error during slicing {shown} with shape {list(shape)}: more slicing indexes than dimensions in tensor"
        raise CompatLoadError(msg)
    out: list[object] = []
    for dim in range(len(indexers) - 1, -1, -1):
        item, size = indexers[dim], shape[dim]
        if isinstance(item, _Select):
            start, stop = item.index, item.index + 1
        else:
            start = 0 if item.start is None else item.start
            stop = size if item.stop is None else item.stop
        if start >= size or stop > size:
            asked = start if start >= size else stop - 1
            msg = (
                f"Error during slicing {shown} with shape {list(shape)}: "
                f"index {asked} out of bounds for tensor dimension #{dim} of size {size}"
            )
            raise CompatLoadError(msg)
        out.append(item.index if isinstance(item, _Select) else slice(start, max(start, stop), item.step))
    return tuple(reversed(out))
