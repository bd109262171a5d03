# Strategy: Report.reference_valid is what safetensors 0.8.0 does (issue 20:
# "My file loads fine, so why does stcheck fail it?").  On every input drawn
# from valid_files(), corrupted_files() (rule by rule) and mutated_files(),
# under both profiles, reference_valid equals whether safetensors.deserialize
# (0.8.0) accepts the bytes, and reference_error equals the class it raises;
# a file the strict profile accepts is always reference-valid.
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import reference_verdict
from regressions import REGRESSIONS

import validator
from validator.strategies import corrupted_files, corruptible_rules, mutated_files, valid_files


def reference_valid_is_exact(data: bytes) -> None:
    accepted, cls = reference_verdict(data)
    for profile in ("strict", "reference"):
        report = validator.validate(data, profile=profile)
        assert report.reference_valid is accepted, (profile, [f.format() for f in report.findings])
        assert report.reference_error == cls, (profile, [f.format() for f in report.findings])
        if report.valid:
            assert accepted, profile


SOURCES = ["valid", "mutated", *(f"corrupted:{slug}" for slug in corruptible_rules())]


def _inputs(name: str) -> tuple[st.SearchStrategy[bytes], int]:
    budget = settings().max_examples
    if name == "valid":
        return valid_files().map(lambda f: f.data), max(10, budget // 2)
    if name == "mutated":
        return mutated_files(), 4 * budget
    return corrupted_files(rule=name.split(":", 1)[1]).map(lambda c: c.data), max(5, budget // 4)


@pytest.mark.parametrize("name", SOURCES)
def test_reference_valid_equals_safetensors(name: str) -> None:
    inputs, examples = _inputs(name)

    @settings(max_examples=examples)
    @given(inputs)
    def check(data: bytes) -> None:
        reference_valid_is_exact(data)

    check()


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_reference_valid_on_regressions(name: str) -> None:
    reference_valid_is_exact(REGRESSIONS[name][0])
