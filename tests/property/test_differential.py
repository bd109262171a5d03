# Strategy: properties 3 and 4.  On every input drawn from valid_files(),
# corrupted_files() and mutated_files(), the reference profile's verdict and
# first error class equal those of safetensors.deserialize (0.8.0), and
# whatever the strict profile accepts, the reference profile accepts too.
# Shrunk inputs worth keeping are pinned below with @example.
from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st
from reference import reference_verdict

import validator
from validator.strategies import CorruptedFile, GeneratedFile, corrupted_files, mutated_files, valid_files

from regressions import REGRESSIONS


def agrees_with_reference(data: bytes) -> None:
    """Property 3 for one input."""
    report = validator.validate(data, profile="reference")
    ours = (report.valid, report.reference_error)
    assert ours == reference_verdict(data), [f.format() for f in report.errors]


def strict_implies_reference(data: bytes) -> None:
    """Property 4 for one input."""
    if validator.validate(data).valid:
        assert validator.validate(data, profile="reference").valid


@given(valid_files())
def test_reference_agrees_on_valid_files(f: GeneratedFile) -> None:
    agrees_with_reference(f.data)


@given(corrupted_files())
def test_reference_agrees_on_corrupted_files(case: CorruptedFile) -> None:
    agrees_with_reference(case.data)


def _more(factor: int) -> settings:
    return settings(max_examples=settings().max_examples * factor)


@_more(4)
@given(mutated_files())
def test_reference_agrees_on_mutated_files(data: bytes) -> None:
    agrees_with_reference(data)


_ANY = st.one_of(valid_files().map(lambda f: f.data), corrupted_files().map(lambda c: c.data), mutated_files())


@_more(2)
@given(_ANY)
def test_strict_acceptance_implies_reference_acceptance(data: bytes) -> None:
    strict_implies_reference(data)


def test_regressions_agree_with_reference() -> None:
    for name, data in REGRESSIONS.items():
        try:
            agrees_with_reference(data)
            strict_implies_reference(data)
        except AssertionError as exc:
            raise AssertionError(name) from exc
