# Strategy: the differential campaign of tests/signature_differential.py,
# run briefly and seeded: model_signing 1.1.1's own verify is the oracle,
# and stcheck must never say "verified" for a tree the reference refuses.
# The long run is `python -m tests.signature_differential --seconds 1800`.
from __future__ import annotations

import pytest

pytest.importorskip("model_signing")

from tests.signature_differential import BASES, MUTATIONS, run


def _check(trials: int, seed: int) -> None:
    tally = run(60.0, seed, max_trials=trials)
    assert tally.trials == trials
    assert tally.stcheck_only == []  # stcheck verified a tree model_signing refuses
    assert tally.both > 0  # the bases and the harmless mutations verify on both sides
    assert tally.neither > 0  # and the harmful ones are refused by both


def test_stcheck_never_verifies_what_model_signing_refuses():
    _check(40, seed=38)


@pytest.mark.slow
def test_stcheck_never_verifies_what_model_signing_refuses_longer():
    tally = run(60.0, 3838, max_trials=600)
    assert tally.stcheck_only == []
    assert set(tally.bases) == {base.name for base in BASES}
    assert set(tally.mutations) == set(MUTATIONS)
