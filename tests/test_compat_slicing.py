# Strategy: numpy get_slice indexing against safetensors 0.8.0 as the oracle,
# on a fixed table of the cases that define its rules (negative ints,
# unsigned slice bounds, steps, `...`, lists, empty dimensions, the order of
# bounds checks) and on Hypothesis-drawn indexes.  Outcome = the array (shape
# and values) or the exception (type and message).  The one deliberate
# difference, a stop before its start (the reference fails with SystemError
# or ValueError from its internals), selects nothing here.
from __future__ import annotations

import numpy as np
import pytest
import safetensors
import safetensors.numpy
from hypothesis import given
from hypothesis import strategies as st

from validator.compat import SafetensorError, safe_open

TENSORS = {
    "a": np.arange(50, dtype=np.float32).reshape(10, 5),
    "z": np.zeros((0, 3), np.float32),
    "s": np.array(3.0, np.float32),
    "e3": np.zeros((2, 0, 3), np.float32),
}
CASES = [
    ("a", (slice(2, None), -6)),
    ("a", -1),
    ("a", -11),
    ("a", slice(-1, None)),
    ("a", slice(None, None, 2)),
    ("a", slice(5, 5)),
    ("a", slice(10, None)),
    ("a", Ellipsis),
    ("a", None),
    ("a", (1, 2, 3)),
    ("a", True),
    ("a", 2**40),
    ("a", np.int64(1)),
    ("a", 1.0),
    ("a", [0]),
    ("a", ()),
    ("a", (slice(None),)),
    ("a", [slice(0, 2)]),
    ("a", (slice(None), slice(1, 1))),
    ("a", slice(1, 8, 3)),
    ("a", slice(None, None, -1)),
    ("a", slice(None, None, 0)),
    ("a", slice(1.5, None)),
    ("a", slice(2**70, None)),
    ("a", (Ellipsis, 1)),
    ("a", (1, Ellipsis)),
    ("a", (Ellipsis, Ellipsis)),
    ("a", (Ellipsis, 1, 1)),
    ("a", (Ellipsis, 1, 1, 1)),
    ("a", (slice(None), slice(None), Ellipsis)),
    ("a", 2**31),
    ("a", -(2**31)),
    ("a", slice(1, 20, 3)),
    ("a", slice(20, None, 2)),
    ("a", (1, None)),
    ("a", (None, Ellipsis, Ellipsis)),
    ("a", (slice(None), [0])),
    ("a", [[]]),
    ("a", (slice(5, 5), slice(5, 5))),
    ("a", (slice(None), slice(4, 5))),
    ("a", slice(None, 0)),
    ("a", slice(None, None, 2**70)),
    ("a", (20, 20)),
    ("a", (slice(None, 11), 7)),
    ("a", np.array(1)),
    ("a", (Ellipsis, -6)),
    ("a", []),
    ("a", slice(7, None, 5)),
    # items convert in order: the first bad item names the error
    ("a", (-11, slice(None, None, 0))),
    ("a", (slice(None, None, 0), -11)),
    ("a", (-11, slice(-1, None))),
    ("a", (slice(-1, None), -11)),
    ("z", Ellipsis),
    ("z", (Ellipsis, 1)),
    ("z", ()),
    ("z", []),
    ("z", 0),
    ("z", slice(None)),
    ("s", Ellipsis),
    ("s", ()),
    ("s", 0),
    ("s", []),
    ("e3", 0),
    ("e3", (Ellipsis, 0)),
    ("e3", slice(1, 2)),
    ("e3", (slice(None), slice(0, 0))),
]


def outcome(sl, index):
    try:
        out = sl[index]
    except Exception as exc:  # noqa: BLE001 - the oracle's outcome, whatever it is
        kind = (
            "SafetensorError" if isinstance(exc, (SafetensorError, safetensors.SafetensorError)) else type(exc).__name__
        )
        return ("raises", kind, str(exc))
    assert out.flags.c_contiguous
    assert out.flags.writeable
    return ("array", out.dtype.str, out.shape, out.tolist())


@pytest.fixture(scope="module")
def handles(tmp_path_factory):
    path = tmp_path_factory.mktemp("slicing") / "t.safetensors"
    safetensors.numpy.save_file(TENSORS, path)
    with safe_open(path, "np") as ours, safetensors.safe_open(path, "np") as theirs:
        yield ours, theirs


@pytest.mark.parametrize(("name", "index"), CASES, ids=[f"{n}[{i!r}]" for n, i in CASES])
def test_numpy_slicing_matches_the_reference(handles, name, index):
    ours, theirs = handles
    assert outcome(ours.get_slice(name), index) == outcome(theirs.get_slice(name), index)


def test_a_stop_before_its_start_selects_nothing(handles):
    ours, theirs = handles
    for index in (slice(3, 1), (slice(None), slice(3, 1)), slice(2, 1, 2)):
        with pytest.raises((SystemError, ValueError)):
            theirs.get_slice("a")[index]
        np.testing.assert_array_equal(ours.get_slice("a")[index], TENSORS["a"][index])


bounds = st.none() | st.integers(-3, 12)
items = st.one_of(
    st.integers(-12, 12),
    st.builds(slice, bounds, bounds, st.none() | st.integers(-1, 3)),
    st.just(Ellipsis),
)
indexes = items | st.tuples(items) | st.tuples(items, items) | st.tuples(items, items, items) | st.just([])


def backwards(index: object) -> bool:
    """Whether ``index`` holds a slice whose stop is before its start (both given, not negative)."""
    items = index if isinstance(index, tuple) else (index,)
    return any(
        isinstance(i, slice) and i.start is not None and i.stop is not None and 0 <= i.stop < i.start for i in items
    )


@given(index=indexes)
def test_drawn_indexes_match_the_reference(handles, index):
    ours, theirs = handles
    if backwards(index):
        return  # the deliberate difference above (the reference may even panic here)
    assert outcome(ours.get_slice("a"), index) == outcome(theirs.get_slice("a"), index)
