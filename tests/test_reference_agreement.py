# Strategy: a table of hand-made files (reference_cases.py), each pinned to
# the verdict of safetensors 0.8.0 (None = accepted, else the Rust error
# class).  Every case is checked three ways: the installed reference gives the pinned class, our
# `reference` profile gives the same verdict and class, and the `strict`
# profile never accepts a file the reference rejects.  The table covers every
# reference error class and the serde_json/serde quirks of
# shared/reference-facts.md, plus the ones found while writing it.
from __future__ import annotations

import pytest
from reference import reference_class
from reference_cases import IDS, TABLE

import validator
from validator import REFERENCE_ERRORS


def test_table_is_large_and_named_uniquely() -> None:
    assert len(TABLE) >= 70
    assert len(set(IDS)) == len(IDS)


def test_table_covers_every_reference_error_class() -> None:
    covered = {verdict for _, _, verdict in TABLE}
    assert set(REFERENCE_ERRORS) <= covered
    assert None in covered


@pytest.mark.parametrize(("blob", "verdict"), [c[1:] for c in TABLE], ids=IDS)
def test_reference_library_gives_pinned_verdict(blob: bytes, verdict: str | None) -> None:
    assert reference_class(blob) == verdict


@pytest.mark.parametrize(("blob", "verdict"), [c[1:] for c in TABLE], ids=IDS)
def test_reference_profile_agrees(blob: bytes, verdict: str | None) -> None:
    report = validator.validate(blob, profile="reference")
    assert report.valid is (verdict is None), [f.format() for f in report.errors]
    assert report.reference_error == verdict


@pytest.mark.parametrize(
    "blob", [c[1] for c in TABLE if c[2] is not None], ids=[c[0] for c in TABLE if c[2] is not None]
)
def test_strict_rejects_what_reference_rejects(blob: bytes) -> None:
    assert reference_class(blob) is not None
    report = validator.validate(blob, profile="strict")
    assert not report.valid
    # The strict profile's first reference-class error is the same class.
    classes = [f.rule.reference_error for f in report.errors if f.rule.reference_error is not None]
    assert classes[0] == reference_class(blob)


@pytest.mark.parametrize(("blob", "verdict"), [c[1:] for c in TABLE], ids=IDS)
def test_accepted_files_expose_the_reference_tensor_table(blob: bytes, verdict: str | None) -> None:
    if verdict is not None:
        return
    safetensors = pytest.importorskip("safetensors")
    loaded = safetensors.deserialize(blob)
    report = validator.validate(blob, profile="reference")
    assert report.tensors is not None
    ours = {name: (info.dtype, list(info.shape)) for name, info in report.tensors.items()}
    theirs = {name: (str(t["dtype"]).upper(), list(t["shape"])) for name, t in loaded}
    assert ours == theirs
