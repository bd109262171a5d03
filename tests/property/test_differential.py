# Strategy: properties 3 and 4.  On every input drawn from valid_files(),
# corrupted_files() and mutated_files(), the reference profile's verdict and
# first error class equal those of safetensors.deserialize (0.8.0), and
# whatever the strict profile accepts, the reference profile accepts too.
# Corrupted files are drawn rule by rule, so that every rule is exercised in
# every run.  Inputs worth keeping are pinned in regressions.py.
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import reference_verdict
from regressions import REGRESSIONS

import validator
from validator.strategies import corrupted_files, corruptible_rules, mutated_files, valid_files


def agrees_with_reference(data: bytes) -> None:
    """Property 3 for one input."""
    report = validator.validate(data, profile="reference")
    ours = (report.valid, report.reference_error)
    assert ours == reference_verdict(data), [f.format() for f in report.errors]


def strict_implies_reference(data: bytes) -> None:
    """Property 4 for one input."""
    if validator.validate(data).valid:
        assert validator.validate(data, profile="reference").valid


SOURCES = ["valid", "mutated", *(f"corrupted:{slug}" for slug in corruptible_rules())]


def source(name: str) -> tuple[st.SearchStrategy[bytes], int]:
    """The inputs of one source and its share of the profile's max_examples."""
    budget = settings().max_examples
    if name == "valid":
        return valid_files().map(lambda f: f.data), budget
    if name == "mutated":
        return mutated_files(), 8 * budget
    rule = name.split(":", 1)[1]
    return corrupted_files(rule=rule).map(lambda c: c.data), max(5, budget // 3)


@pytest.mark.parametrize("name", SOURCES)
def test_reference_profile_agrees_with_safetensors(name: str) -> None:
    inputs, examples = source(name)

    @settings(max_examples=examples)
    @given(inputs)
    def check(data: bytes) -> None:
        agrees_with_reference(data)

    check()


@pytest.mark.parametrize("name", SOURCES)
def test_strict_acceptance_implies_reference_acceptance(name: str) -> None:
    inputs, examples = source(name)

    @settings(max_examples=examples)
    @given(inputs)
    def check(data: bytes) -> None:
        strict_implies_reference(data)

    check()


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression(name: str) -> None:
    data, expected = REGRESSIONS[name]
    assert {f.slug for f in validator.validate(data).errors} == expected
    agrees_with_reference(data)
    strict_implies_reference(data)
