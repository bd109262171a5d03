# Strategy: issue 28, "one rule, one row".  A rule is one row of the
# catalogue (validator._rules), its fix and its bad example included, so a
# new rule cannot lack them.  The canonical tier (validator._tiers) proves
# headers clean with checks of its own, so it declares for every rule of the
# regions it reads whether it proves the rule (PROVES) or refuses every
# header that could break it (REFUSES).  This file holds that declaration
# to the catalogue (a rule in neither, or a name that is no rule, fails)
# and to what the tier does: each proved rule has a canonical header that
# breaks it, whose final report has the exact finding in every tier, and
# each byte-level case of a refused rule is declined by the tier.
from __future__ import annotations

import pytest
from rule_cases import CASES, Case
from tier_cases import CANONICAL_BREAKS, Break, _run, _same_everywhere

from validator._rules import BY_SLUG, RULES, Profile, Rule, Severity
from validator._tiers import PROVES, REFUSES, Tier, fast_table

# The regions the canonical tier reads: the prefix is checked before any
# tier runs, and the other regions are not the header's.
TIER_REGIONS = frozenset({"header", "entries", "layout"})


def undeclared(rules: list[Rule]) -> list[str]:
    """The rules of the tier's regions that the tier neither proves nor refuses."""
    return [r.slug for r in rules if r.region in TIER_REGIONS and r.slug not in PROVES and r.slug not in REFUSES]


def test_every_row_has_a_fix_and_an_example() -> None:
    for rule in RULES:
        assert rule.fix, rule.slug
        assert rule.example is not None, rule.slug
        # A file's bytes, or words where one file cannot show the rule.
        assert (rule.example.file() is None) == (rule.example.text is not None), rule.slug


def test_every_rule_the_tier_reads_is_proved_or_refused() -> None:
    assert undeclared(list(RULES)) == []
    assert not PROVES.keys() & REFUSES.keys()


def test_the_declaration_names_rules_of_the_tier_regions() -> None:
    for slug, reason in (*PROVES.items(), *REFUSES.items()):
        assert slug in BY_SLUG, f"the canonical tier's declaration names {slug!r}, which is no rule"
        assert BY_SLUG[slug].region in TIER_REGIONS, slug
        assert len(reason) > 20, slug


def test_meta_a_new_header_rule_is_undeclared() -> None:
    # The completeness check above can fail: a catalogue with one more rule
    # of a region the tier reads is caught, one of another region is not.
    for region, caught in (("header", True), ("entries", True), ("layout", True), ("index", False)):
        extra = Rule("ST999", "made-up", "a rule nobody declared", Severity.ERROR, frozenset(Profile), None, region)
        assert ("made-up" in undeclared([*RULES, extra])) is caught, region


def test_every_proved_rule_has_a_canonical_header_that_breaks_it() -> None:
    assert {b.slug for b in CANONICAL_BREAKS} == set(PROVES)
    ids = [b.id for b in CANONICAL_BREAKS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("case", CANONICAL_BREAKS, ids=[b.id for b in CANONICAL_BREAKS])
def test_a_proved_rule_is_not_called_clean(case: Break) -> None:
    # The twin, the header with its defect mended, is canonical and clean.
    answered, (findings, _, _, valid, _) = _run(case.twin, "strict", Tier.ALL)
    assert (answered, tuple(findings), valid) == (Tier.CANONICAL, (), True)
    # The case: every tier gives the tree path's report, in both profiles...
    _same_everywhere(case.blob)
    # ...and its first finding is the rule's, where the exact path puts it.
    for tiers in (Tier.CANONICAL, Tier.ALL):
        _, (findings, *_) = _run(case.blob, "strict", tiers)
        assert findings, case.id
        first = findings[0]
        assert (first.slug, first.offset, first.tensor) == (case.slug, case.offset, case.tensor)


REFUSED_CASES = [c for c in CASES if c.slug in REFUSES]


def test_every_refused_rule_has_byte_level_cases() -> None:
    assert {c.slug for c in REFUSED_CASES} == set(REFUSES)


@pytest.mark.parametrize("case", REFUSED_CASES, ids=[c.id for c in REFUSED_CASES])
def test_a_refused_rule_is_declined_by_the_canonical_tier(case: Case) -> None:
    n = int.from_bytes(case.blob[:8], "little")
    assert fast_table([case.blob[8 : 8 + n]], n, len(case.blob)) is None
    _same_everywhere(case.blob)
