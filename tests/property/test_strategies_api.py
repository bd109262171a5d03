# Strategy: the public API of validator.strategies: bad options raise
# InvalidArgument, given values are honoured, the docstring examples run, the
# drawn files cover what the docs promise, and `import validator` stays free
# of hypothesis.
from __future__ import annotations

import doctest
import math
import subprocess
import sys
import warnings

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument, NonInteractiveExampleWarning

import validator
from validator import DTYPE_BITS, strategies
from validator.strategies import GeneratedFile, Tensor, tensor_dicts, tensors, valid_files
from validator.testing.corrupt import CORRUPTIONS


def test_all_is_explicit_and_complete() -> None:
    public = {n for n in dir(strategies) if not n.startswith("_") and n != "annotations"}
    assert set(strategies.__all__) == public


@pytest.mark.parametrize(
    "make",
    [
        lambda: tensors(dtypes="F33"),
        lambda: tensors(dtypes=[]),
        lambda: tensors(max_rank=-1),
        lambda: tensors(max_bytes="8"),
        lambda: tensors(shape=(-1,)),
        lambda: tensors(zero_sized=1),
        lambda: tensor_dicts(min_size=3, max_size=2),
        lambda: tensor_dicts(names="abc"),
        lambda: tensor_dicts(names=[]),
        lambda: tensor_dicts(tensors=Tensor("U8", (2,), b"x")),
        lambda: valid_files(aligned=1),
        lambda: valid_files(metadata={"k": 1}),
        lambda: valid_files(tensors={"__metadata__": Tensor("U8", (1,), b"x")}),
        lambda: valid_files(tensors={"t": Tensor("F4", (3,), b"xx")}),
        lambda: valid_files(tensors={"t": Tensor("U8", (3,), b"xx")}),
        lambda: strategies.mutated_files(files=b"x"),
    ],
)
def test_bad_options_raise_invalid_argument(make) -> None:
    with pytest.raises(InvalidArgument):
        make().example()


def test_docstring_examples_run() -> None:
    modules = (sys.modules["validator.testing.files"], sys.modules["validator.testing.corrupt"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonInteractiveExampleWarning)
        for module in modules:
            result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
            assert result.failed == 0, module.__name__
            assert result.attempted >= 1, module.__name__


@given(tensors())
def test_tensor_data_fills_whole_bytes(t: Tensor) -> None:
    bits = DTYPE_BITS[t.dtype]
    assert (math.prod(t.shape) * bits) % 8 == 0
    assert len(t.data) == math.prod(t.shape) * bits // 8


@given(tensors(dtypes=["F4", "F6_E2M3", "F6_E3M2"]))
def test_subbyte_tensors_are_drawn(t: Tensor) -> None:
    assert t.dtype in {"F4", "F6_E2M3", "F6_E3M2"}
    assert (math.prod(t.shape) * DTYPE_BITS[t.dtype]) % 8 == 0


@given(tensors(dtypes=st.just("I16"), shape=st.just((3, 0))))
def test_strategies_are_accepted_for_options(t: Tensor) -> None:
    assert t == Tensor("I16", (3, 0), b"")


def features(f: GeneratedFile) -> set[str]:
    seen: set[str] = set()
    names = [k for k in f.header if k != "__metadata__"]
    offsets = sorted(names, key=lambda n: f.header[n]["data_offsets"])
    seen.add("empty" if not names else "tensors")
    seen.add("metadata" if f.metadata is not None else "no-metadata")
    seen.add("aligned" if f.data_start % 8 == 0 else "unaligned")
    if len(names) >= 2 and names != offsets:
        seen.add("json-order-differs")
    if len(names) >= 24:
        seen.add("many")
    for t in f.tensors.values():
        if t.shape == ():
            seen.add("scalar")
        if 0 in t.shape:
            seen.add("zero-sized")
        if DTYPE_BITS[t.dtype] % 8:
            seen.add("subbyte")
        if len(t.shape) > 4:
            seen.add("large-rank")
    if any(not n.isascii() for n in names) or any(not k.isascii() for k in f.metadata or {}):
        seen.add("unicode")
    if b"\\u" in f.data[8 : f.data_start]:
        seen.add("escaped")
    return seen


def test_valid_files_cover_what_the_docs_promise() -> None:
    # Every variation of valid_files() turns up in 150 draws (generation
    # only, derandomized: this checks the generator, not a property).
    seen: set[str] = set()

    @settings(max_examples=150, derandomize=True, database=None, phases=[Phase.generate])
    @given(valid_files())
    def collect(f: GeneratedFile) -> None:
        seen.update(features(f))

    collect()
    assert sorted(EXPECTED - seen) == []


EXPECTED = {
    "empty",
    "tensors",
    "metadata",
    "no-metadata",
    "aligned",
    "unaligned",
    "json-order-differs",
    "many",
    "scalar",
    "zero-sized",
    "subbyte",
    "large-rank",
    "unicode",
    "escaped",
}


def test_import_validator_does_not_import_hypothesis() -> None:
    code = "import sys, validator; validator.validate(b'\\x02' + bytes(7) + b'{}'); print('hypothesis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_corruptions_are_keyed_by_catalogue_slugs() -> None:
    assert set(CORRUPTIONS) <= {r.slug for r in validator.RULES}


@given(tensor_dicts(tensors=Tensor("U8", (1,), b"x"), names=["a", "b"], min_size=1, max_size=2))
def test_tensor_dicts_accept_values(d: dict[str, Tensor]) -> None:
    assert set(d) <= {"a", "b"}
    assert all(t == Tensor("U8", (1,), b"x") for t in d.values())


@given(strategies.corrupted_files(rule=st.sampled_from(["tensor-entry-array", "json-depth"])))
def test_corrupted_file_names_its_reference_error(case: strategies.CorruptedFile) -> None:
    expected = {"tensor-entry-array": None, "json-depth": "InvalidHeaderDeserialization"}
    assert case.reference_error == expected[case.rule]


@given(strategies.mutated_files(files=st.just(((1 << 64) - 1).to_bytes(8, "little") + b"{}")))
def test_mutating_a_maximal_length_prefix_stays_in_u64(data: bytes) -> None:
    # Found by a long run: a prefix edit of old + 16 overflowed 8 bytes.
    assert isinstance(data, bytes)
    validator.validate(data)  # no traceback on the mutated bytes either
