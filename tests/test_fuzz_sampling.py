"""The fuzz harnesses' sampled checks (issue 22): what the engine checks on a
sample of inputs is checked on every replay, and what it no longer checks on
every input is checked by another harness; the mutator's cheap paths.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import validator
from validator._rules import Profile
from validator.fuzz import inprocess as _fuzz_main
from validator.fuzz import mutator
from validator.fuzz import targets as _fuzz_targets
from validator.fuzz.mutator import mutate
from validator.fuzz.seeds import seed_files
from validator.fuzz.targets import TARGETS, InvariantError

CORPUS = Path(__file__).resolve().parent.parent / "corpus"


def _differs(monkeypatch: pytest.MonkeyPatch, *, stream: bool) -> None:
    """Make validate() report one finding fewer (from a stream only, or from any source)."""
    real = _fuzz_targets.validate

    def fake(source: object, *, profile: object = "strict") -> object:
        report = real(source, profile=profile)  # type: ignore[arg-type]
        if not stream or not isinstance(source, bytes):
            return dataclasses.replace(report, findings=report.findings[1:])
        return report

    monkeypatch.setattr(_fuzz_targets, "validate", fake)


@pytest.mark.parametrize(("stream", "message"), [(True, "bytes and stream"), (False, "alone differs")])
def test_the_separate_validations_run_on_every_replay_and_on_a_sample_under_the_engine(monkeypatch, stream, message):
    inputs = [seed_files()["n_layout_hole.safetensors"] + bytes([i]) for i in range(64)]
    sampled = [data for data in inputs if _fuzz_targets._sampled(data)]
    assert 0 < len(sampled) < len(inputs) // 4
    _differs(monkeypatch, stream=stream)
    for data in inputs:
        with pytest.raises(InvariantError, match=message):
            _fuzz_targets.target_validate(data)
        if data in sampled:
            with pytest.raises(InvariantError, match=message):
                _fuzz_targets.fuzz_validate(data)
        else:
            _fuzz_targets.fuzz_validate(data)


def test_strict_accepting_more_than_the_reference_is_caught_on_every_input(monkeypatch):
    # The differential harness checks strict-accept => reference-accept on a
    # sample under the engine; the validate harness checks on every input
    # that the reference findings are the strict findings they share.
    data = seed_files()["n_layout_hole.safetensors"]
    real_validate, real_both = _fuzz_targets.validate, _fuzz_targets.both_profiles

    def lax_strict(source: object, *, profile: object = "strict") -> object:
        report = real_validate(source, profile=profile)  # type: ignore[arg-type]
        return dataclasses.replace(report, findings=()) if profile is Profile.STRICT else report

    def lax_both(source: bytes) -> object:
        strict, ref = real_both(source)
        return dataclasses.replace(strict, findings=()), ref

    monkeypatch.setattr(_fuzz_targets, "validate", lax_strict)
    monkeypatch.setattr(_fuzz_targets, "both_profiles", lax_both)
    with pytest.raises(InvariantError, match="strict accepts"):
        _fuzz_targets.target_differential(data)
    with pytest.raises(InvariantError):  # by the tiling check, or by the shared-findings check
        _fuzz_targets.fuzz_validate(data)


def test_both_profiles_from_one_check_equal_two_validations():
    for data in [*seed_files().values(), *(p.read_bytes() for p in sorted(CORPUS.glob("*.safetensors")))]:
        strict, ref = validator._validate.both_profiles(data)
        assert strict == validator.validate(data)
        assert ref == validator.validate(data, profile="reference")


def test_the_engine_runs_the_sampled_targets_and_replays_run_every_check():
    assert _fuzz_main.resolve("validate", engine=True)[0] is _fuzz_targets.fuzz_validate
    assert _fuzz_main.resolve("differential", engine=True)[0] is _fuzz_targets.fuzz_differential
    assert _fuzz_main.resolve("validate")[0] is _fuzz_targets.target_validate
    assert _fuzz_main.resolve("differential")[0] is _fuzz_targets.target_differential
    for name in ("loader", "roundtrip"):
        assert _fuzz_main.resolve(name, engine=True)[0] is TARGETS[name]


def test_mutator_shares_between_its_paths():
    # Most inputs take the cheap byte paths; some the structure-aware one.
    seeds = list(seed_files().values())
    structured = sum(
        _decodes(mutate(seeds[i % len(seeds)], 4096, i)) for i in range(400) if i % 100 < mutator.STRUCTURED
    )
    assert structured > 60  # decodable seeds come out decodable and re-spelled
    assert mutator.STRUCTURED + mutator.HEADER_BYTES < 100


def _decodes(data: bytes) -> bool:
    return mutator._decode(data) is not None
