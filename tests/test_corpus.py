# Strategy: the corpus is data, so test it as data.  Regenerating it must give
# the committed bytes; the manifest must satisfy its schema; together the files
# must cover every rule and every dtype; and each file's expectations must
# hold for this validator (verdicts under both profiles, and exactly the
# listed rule slugs under strict) and, for y_ and n_ files, for the reference
# parser safetensors 0.8.0 itself.
from __future__ import annotations

import json
from pathlib import Path

import pytest

import validator
from tests._scripts import load_script
from validator._rules import RULES, Profile

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
ENTRIES = MANIFEST["files"]
SMALL = [e for e in ENTRIES if not e.get("large")]
BY_NAME = {e["file"]: e for e in ENTRIES}


def _generate_module():
    return load_script(CORPUS / "generate.py", "stcheck_corpus_generate")


def test_regenerating_gives_byte_identical_files(tmp_path):
    _generate_module().generate(tmp_path)
    fresh = sorted(p.name for p in tmp_path.iterdir())
    committed = sorted(p.name for p in CORPUS.iterdir() if p.suffix == ".safetensors" or p.name == "manifest.json")
    assert fresh == committed, "the corpus directory and the recipes disagree on which files exist"
    for name in fresh:
        assert (tmp_path / name).read_bytes() == (CORPUS / name).read_bytes(), (
            f"{name} differs from its recipe; run python corpus/generate.py"
        )


def test_manifest_matches_its_schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((CORPUS / "manifest.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(MANIFEST)


def test_schema_rejects_a_broken_manifest():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((CORPUS / "manifest.schema.json").read_text(encoding="utf-8"))
    bad = json.loads(json.dumps(MANIFEST))
    n_file = next(e for e in bad["files"] if e["file"].startswith("n_"))
    n_file["expect"]["reference"] = "accept"  # an n_ file must be rejected by both profiles
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(bad)


def test_corpus_size_and_naming():
    assert len(ENTRIES) >= 150
    kinds = {e["file"][0] for e in ENTRIES}
    assert kinds == {"y", "n", "i"}
    total = sum((CORPUS / e["file"]).stat().st_size for e in SMALL)
    assert total < 10_000_000
    for e in ENTRIES:
        if e.get("large"):
            assert not (CORPUS / e["file"]).exists(), f"{e['file']} is large and must not be committed"
        if e["file"].startswith("n_"):
            assert e["rules"], f"{e['file']} must name the rule it breaks"


# Rules of `stcheck scan` (deep contents, integrity, policy) judge a file
# against options (--deep, digests, a policy), not the format; their fixtures
# are built in tests/test_deep.py, test_scan.py and test_policy.py.
SCAN_REGIONS = frozenset({"deep", "integrity", "policy"})
# Sharded-checkpoint rules (ST5xx) judge an index file against the shards
# beside it, not one file; their fixtures are built in tests/test_index.py.
# Folder rules (ST7xx) judge a walked folder's other files and links; their
# fixtures are built in tests/test_walk.py and test_walk_links.py.  Signed-
# model rules (ST8xx) judge a folder against its signature; their fixtures
# are signed by tests/test_signature.py itself.
NOT_SINGLE_FILE = SCAN_REGIONS | {"index", "folder", "signature"}


def test_every_rule_has_a_corpus_file():
    covered = {slug for e in ENTRIES for slug in e["rules"]}
    missing = sorted(r.slug for r in RULES if r.slug not in covered and r.region not in NOT_SINGLE_FILE)
    assert not missing, f"rules without a corpus file: {missing}"
    unknown = sorted(covered - {r.slug for r in RULES})
    assert not unknown, f"manifest names rules the catalogue lacks: {unknown}"


def test_every_dtype_appears_in_a_y_file():
    seen = set()
    for e in SMALL:
        if e["file"].startswith("y_"):
            report = validator.validate(CORPUS / e["file"], profile="strict")
            seen.update(t.dtype for t in (report.tensors or {}).values())
    assert seen == set(validator.DTYPES)


def test_edge_cases_are_present():
    names = set(BY_NAME)
    for expected in (
        "y_scalar_f32.safetensors",
        "y_zero_size_two_share_offset.safetensors",
        "y_header_size_100000.safetensors",
        "y_header_size_100000000.safetensors",
        "n_prefix_length_100000001_short_file.safetensors",
        "n_padding_nul.safetensors",
        "y_name_emoji.safetensors",
        "n_layout_alias_same_range.safetensors",
        "n_offsets_wrap_to_header.safetensors",
    ):
        assert expected in names
    paddings = {f"y_padding_{k}_spaces.safetensors" for k in range(8)}
    assert paddings <= names


def _verdict(report):
    return "accept" if report.valid else "reject"


@pytest.mark.parametrize("entry", SMALL, ids=[e["file"].removesuffix(".safetensors") for e in SMALL])
def test_validator_matches_manifest(entry):
    path = CORPUS / entry["file"]
    strict = validator.validate(path, profile="strict")
    reference = validator.validate(path, profile="reference")
    assert _verdict(strict) == entry["expect"]["strict"], [f.format() for f in strict.findings]
    assert _verdict(reference) == entry["expect"]["reference"], [f.format() for f in reference.findings]
    # Exactly the listed rules under strict; under reference the listed rules
    # that apply to both profiles.
    assert sorted({f.slug for f in strict.findings}) == entry["rules"]
    both = [s for s in entry["rules"] if validator.rule(s).applies_to(Profile.REFERENCE)]
    assert sorted({f.slug for f in reference.findings}) == both


REFERENCE_CASES = [e for e in SMALL if e["file"][0] in "yn"]


@pytest.mark.parametrize(
    "entry", REFERENCE_CASES, ids=[e["file"].removesuffix(".safetensors") for e in REFERENCE_CASES]
)
def test_reference_parser_agrees(entry):
    safetensors = pytest.importorskip("safetensors")
    if safetensors.__version__ != "0.8.0":
        pytest.skip(f"the reference is safetensors 0.8.0, found {safetensors.__version__}")
    blob = (CORPUS / entry["file"]).read_bytes()
    try:
        safetensors.deserialize(blob)
        verdict = "accept"
    except safetensors.SafetensorError:
        verdict = "reject"
    assert verdict == entry["expect"]["reference"]


I_CASES = [e for e in SMALL if e["file"].startswith("i_")]


@pytest.mark.parametrize("entry", I_CASES, ids=[e["file"].removesuffix(".safetensors") for e in I_CASES])
def test_reference_parser_on_implementation_defined(entry):
    # i_ files are where the written spec and the reference disagree: the
    # manifest records what the reference does, and it must be true.
    safetensors = pytest.importorskip("safetensors")
    if safetensors.__version__ != "0.8.0":
        pytest.skip(f"the reference is safetensors 0.8.0, found {safetensors.__version__}")
    blob = (CORPUS / entry["file"]).read_bytes()
    try:
        safetensors.deserialize(blob)
        verdict = "accept"
    except safetensors.SafetensorError:
        verdict = "reject"
    assert verdict == entry["expect"]["reference"]


def test_large_recipes_build_lazily():
    gen = _generate_module()
    large = [r for r in gen.RECIPES if r.get("large")]
    assert {r["name"] for r in large} == {"y_header_size_100000000", "n_header_size_100000008"}
    for recipe in large:
        # The prefix alone says how big the file will be; build() is only run
        # on demand (stcheck conformance --large), since it writes ~100 MB.
        assert recipe["header_size"] >= 100_000_000
