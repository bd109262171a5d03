# Strategy: properties 2 and 6.  Every file corrupted_files(rule=R) draws
# breaks R and nothing else under the strict profile (the only extra error
# slugs allowed are the ones the case declares in `implies`, each explained in
# IMPLIED).  For a rule both profiles check, the reference profile and
# safetensors 0.8.0 reject the file with R's reference error class; for a
# strict-only rule -- exactly the deviations -- both accept it.  A meta-test
# fails when an error rule of a file's bytes has no corruption strategy, or
# when a rule of a new region is neither covered nor exempted with a reason.
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from reference import reference_verdict

import validator
from validator import RULES, Profile, Severity
from validator.strategies import CorruptedFile, corrupted_files, corruptible_rules
from validator.testing.corrupt import CORRUPTIONS, FILE_REGIONS, IMPLIED, OTHER_REGIONS

if TYPE_CHECKING:
    from collections.abc import Mapping

FILE_ERROR_RULES = [r for r in RULES if r.severity is Severity.ERROR and r.region in FILE_REGIONS]


def check_breaks_exactly(case: CorruptedFile) -> None:
    """Property 2 for one generated file."""
    rule = validator.rule(case.rule)
    strict = validator.validate(case.data)
    slugs = {f.slug for f in strict.errors}
    assert slugs == {rule.slug} | case.implies, (case.case, [f.format() for f in strict.errors])
    reference = validator.validate(case.data, profile="reference")
    verdict = reference_verdict(case.data)
    if rule.applies_to(Profile.REFERENCE):
        assert reference.reference_error == rule.reference_error, (case.case, [f.format() for f in reference.errors])
        assert verdict == (False, rule.reference_error), case.case
    else:
        # A strict-only rule is a deviation: the reference accepts the file.
        assert reference.valid, (case.case, [f.format() for f in reference.errors])
        assert verdict == (True, None), case.case


@pytest.mark.parametrize("slug", corruptible_rules())
def test_corruption_breaks_exactly_its_rule(slug: str) -> None:
    @settings(max_examples=max(10, settings().max_examples // 2))
    @given(corrupted_files(rule=slug))
    def check(case: CorruptedFile) -> None:
        assert case.rule == slug
        check_breaks_exactly(case)

    check()


def uncovered(rules: list[validator.Rule], corruptions: Mapping[str, object]) -> list[str]:
    """Error rules that no corruption strategy breaks and no exemption explains.

    An error rule of a file region (prefix, header, entries, layout) needs a
    strategy; one of another region needs that region listed, with its
    reason, in OTHER_REGIONS.
    """
    return [
        r.slug
        for r in rules
        if r.severity is Severity.ERROR
        and r.slug not in corruptions
        and (r.region in FILE_REGIONS or r.region not in OTHER_REGIONS)
    ]


def test_every_error_rule_has_a_corruption_strategy() -> None:
    # Property 6: adding an error rule to the catalogue without a corruption
    # strategy (or a new region without a stated reason) fails here.
    assert uncovered(list(RULES), CORRUPTIONS) == []
    assert set(corruptible_rules()) == {r.slug for r in FILE_ERROR_RULES}


def test_meta_test_notices_a_rule_without_strategy() -> None:
    # The meta-test above can fail: a catalogue with one more error rule is caught.
    for region in ("layout", "a-new-region"):
        extra = validator.Rule(
            "ST999", "made-up", "a rule with no strategy", Severity.ERROR, frozenset(Profile), None, region
        )
        assert "made-up" in uncovered([*RULES, extra], CORRUPTIONS), region


def test_implied_rules_are_explained_and_real() -> None:
    known = {r.slug for r in RULES}
    for case, (slugs, reason) in IMPLIED.items():
        assert slugs <= known, case
        assert len(reason) > 20, case


def test_unknown_or_warning_rule_is_refused() -> None:
    from hypothesis.errors import InvalidArgument

    with pytest.raises(InvalidArgument):
        corrupted_files(rule="no-such-rule")
    with pytest.raises(InvalidArgument):
        corrupted_files(rule="header-unaligned")
    with pytest.raises(InvalidArgument):
        corrupted_files(rule="index-invalid")  # a rule of index files, not of one file


@given(corrupted_files(rule="ST401"))
def test_rule_may_be_given_by_code(case: CorruptedFile) -> None:
    assert case.rule == "offsets-not-contiguous"
