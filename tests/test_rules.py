# Strategy: one byte-level case per defect, at least one per rule of the
# catalogue.  Each case is a hand-made file holding exactly one defect; the
# test asserts the exact slug, absolute byte offset and tensor name of the
# first finding of that rule under the strict profile, and for rules the
# reference profile applies, that the reference profile reports the same slug
# first and maps it to the rule's safetensors error class.  A meta-test keeps
# the table complete: a rule added to the catalogue without a case fails it.
from __future__ import annotations

import pytest
from _stbytes import at, data_start, entry, padded, prefix, st
from rule_cases import CASES, F32_1, MAX, Case

import validator
from validator import RULES, Profile, Severity


def _first(report: validator.Report, slug: str) -> validator.Finding:
    hits = [f for f in report.findings if f.slug == slug]
    assert hits, f"no {slug} finding in {[f.format() for f in report.findings]}"
    return hits[0]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule_strict(case: Case) -> None:
    report = validator.validate(case.blob)
    found = _first(report, case.slug)
    assert (found.slug, found.offset, found.tensor) == (case.slug, case.offset, case.tensor)
    if found.severity is Severity.ERROR:
        # Each case holds one defect: its finding is the first error (after
        # any strict-only error the same bytes also break).
        assert [f.slug for f in report.errors[: len(case.after)]] == list(case.after)
        assert report.errors[len(case.after)] == found
        assert not report.valid
    else:
        assert report.valid, [f.format() for f in report.errors]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule_reference_profile(case: Case) -> None:
    rule = validator.rule(case.slug)
    report = validator.validate(case.blob, profile="reference")
    if not rule.applies_to(Profile.REFERENCE):
        assert all(f.slug != case.slug for f in report.findings)
        assert report.valid, [f.format() for f in report.errors]
        return
    found = _first(report, case.slug)
    assert (found.offset, found.tensor) == (case.offset, case.tensor)
    if rule.severity is Severity.ERROR:
        assert report.first_error == found
        assert report.reference_error == rule.reference_error
        assert rule.reference_error is not None
    else:
        assert report.reference_error is None


# The regions validator.validate() checks.  Rules of the other regions
# (deep, integrity, policy: `stcheck scan`) are tested with their scanner.
VALIDATE_REGIONS = frozenset({"prefix", "header", "entries", "layout"})


def test_every_rule_has_a_case() -> None:
    covered = {c.slug for c in CASES}
    rules = [r for r in RULES if r.region in VALIDATE_REGIONS]
    assert len(rules) >= 34
    missing = [r.slug for r in rules if r.slug not in covered]
    assert not missing, f"rules without a byte-level test case: {missing}"
    assert covered <= {r.slug for r in rules}


def test_case_ids_are_unique() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


# --- several findings in one file ---------------------------------------


def test_layout_problems_in_several_tensors_are_all_reported() -> None:
    header = (
        '{"a":'
        + entry("F32", (2,), (0, 4))  # byte-length-mismatch
        + ',"b":'
        + entry("F4", (3,), (4, 6))  # subbyte-misaligned
        + ',"c":'
        + entry("F32", (1,), (8, 12))  # hole of 2 bytes before it
        + ',"d":'
        + entry("F32", (4294967296, 4294967296), (12, 16))  # size-overflow
        + "}"
    )
    blob = st(header, b"\0" * 16 + b"\0\0")  # 2 trailing bytes
    ds = data_start(blob)
    report = validator.validate(blob)
    got = [(f.slug, f.offset, f.tensor) for f in report.findings]
    assert got == [
        ("byte-length-mismatch", ds + 0, "a"),
        ("subbyte-misaligned", ds + 4, "b"),
        ("offsets-not-contiguous", ds + 6, "c"),
        ("size-overflow", ds + 12, "d"),
        ("buffer-trailing-bytes", ds + 16, None),
    ]
    assert validator.validate(blob, profile="reference").reference_error == "TensorInvalidInfo"


def test_missing_offsets_stop_only_coverage_checks() -> None:
    # "b" has no data_offsets: contiguity and coverage cannot be decided, but
    # the per-tensor size checks of "a" and "c" still run.
    header = (
        '{"a":'
        + entry("F32", (2,), (0, 4))
        + ',"b":{"dtype":"F32","shape":[1]}'
        + ',"c":'
        + entry("F4", (1,), (100, 101))
        + "}"
    )
    blob = st(header, b"\0" * 7)
    ds = data_start(blob)
    report = validator.validate(blob)
    got = [(f.slug, f.offset, f.tensor) for f in report.findings]
    assert got == [
        ("tensor-field-missing", at(blob, '{"dtype":"F32","shape":[1]}'), "b"),
        ("byte-length-mismatch", ds + 0, "a"),
        ("subbyte-misaligned", ds + 100, "c"),
    ]
    assert report.tensors is not None
    assert set(report.tensors) == {"a", "c"}


def test_entry_problems_in_several_tensors_are_all_reported() -> None:
    header = (
        '{"a":{"dtype":"X","shape":[1],"data_offsets":[0,4]}'
        ',"b":{"dtype":"F32","shape":[1.5],"data_offsets":[4,8]}'
        ',"c":{"dtype":"F32","shape":[1],"data_offsets":[8]}'
        "}"
    )
    blob = st(header, b"\0" * 12)
    got = [(f.slug, f.offset, f.tensor) for f in validator.validate(blob).findings]
    assert got == [
        ("dtype-unknown", at(blob, '"X"'), "a"),
        ("shape-invalid", at(blob, "1.5"), "b"),
        ("offsets-invalid", at(blob, "[8]"), "c"),
    ]


def test_syntax_error_stops_entry_and_layout_checks() -> None:
    # The bad dtype and the hole come before the syntax error, but nothing
    # after a syntax error can be trusted: only json-syntax is reported.
    blob = st('{"t":{"dtype":"X","shape":[1],"data_offsets":[4,8]},}', b"\0" * 8)
    got = [(f.slug, f.offset) for f in validator.validate(blob).findings]
    assert got == [("json-syntax", at(blob, ",}") + 1)]


def test_prefix_failure_stops_everything() -> None:
    blob = prefix(MAX + 1) + b"\xff" * 20
    report = validator.validate(blob)
    assert [f.slug for f in report.findings] == ["header-too-large"]
    assert report.tensors is None
    assert report.header_size is None


def test_strict_only_findings_accumulate_with_reference_ones() -> None:
    blob = st(b' {"t":["F32",[1],[0,4]],"u":{"dtype":"F32","shape":[1],"data_offsets":[4,8],"x":0}}\t', F32_1)
    strict = [f.slug for f in validator.validate(blob).findings]
    assert strict == [
        "header-leading-bytes",
        "tensor-entry-array",
        "tensor-field-unknown",
        "header-padding",
        "buffer-truncated",
    ]
    reference = validator.validate(blob, profile="reference")
    assert [f.slug for f in reference.findings] == ["buffer-truncated"]
    assert reference.reference_error == "MetadataIncompleteBuffer"


# --- warnings ------------------------------------------------------------


def test_clean_file_has_no_findings() -> None:
    blob = st(
        '{"__metadata__":{"format":"pt"},"a":'
        + entry("F16", (2, 2), (0, 8))
        + ',"b":'
        + entry("U8", (3,), (8, 11))
        + "}",
        b"\0" * 11,
    )
    report = validator.validate(blob)
    assert report.findings == ()
    assert report.valid
    assert report.metadata == {"format": "pt"}


@pytest.mark.parametrize(
    ("name", "json_name"),
    [
        ("", '""'),
        ("\x00", '"\\u0000"'),
        ("a\tb", '"a\\tb"'),
        ("a\x7fb", '"a\x7fb"'),
        ("a\x85b", '"a\\u0085b"'),
        ("a\u200fb", '"a\u200fb"'),
        ("a\u202db", '"a\\u202db"'),
        ("a\u2069b", '"a\u2069b"'),
    ],
    ids=["empty", "nul", "tab", "del", "c1-next-line", "rtl-mark", "lro-override", "pop-isolate"],
)
def test_suspicious_tensor_names_warn_but_stay_valid(name: str, json_name: str) -> None:
    blob = st("{" + json_name + ":" + entry() + "}", F32_1)
    for profile in ("strict", "reference"):
        report = validator.validate(blob, profile=profile)
        assert report.valid
        assert [(f.slug, f.offset, f.tensor) for f in report.findings] == [("tensor-name-suspicious", 8 + 1, name)]
        assert report.warnings[0].severity is Severity.WARNING


@pytest.mark.parametrize(
    "name",
    ["model.layers.0.self_attn.q_proj.weight", "a b", "\u00e9t\u00e9", "\U0001f600"],
    ids=["dotted", "space", "accents", "emoji"],
)
def test_ordinary_tensor_names_do_not_warn(name: str) -> None:
    import json

    blob = st("{" + json.dumps(name) + ":" + entry() + "}", F32_1)
    assert validator.validate(blob).findings == ()


def test_header_unaligned_warning_only() -> None:
    blob = st('{"t":' + entry("U8", (1,), (0, 1)) + "}", b"\0", pad=False)
    assert len(blob) % 8 != 0
    report = validator.validate(blob)
    assert report.valid
    assert [(f.slug, f.offset) for f in report.findings] == [("header-unaligned", 0)]


def test_tensor_unaligned_not_reported_for_bytes_or_empty_tensors() -> None:
    header = (
        '{"a":'
        + entry("U8", (1,), (0, 1))
        + ',"b":'
        + entry("I16", (0,), (1, 1))
        + ',"c":'
        + entry("BOOL", (1,), (1, 2))
        + "}"
    )
    blob = st(header, b"\0\0")
    assert validator.validate(blob).findings == ()


def test_tensor_unaligned_for_each_wide_dtype() -> None:
    header = (
        '{"a":'
        + entry("U8", (2,), (0, 2))
        + ',"b":'
        + entry("I32", (1,), (2, 6))
        + ',"c":'
        + entry("F64", (1,), (6, 14))
        + "}"
    )
    blob = st(header, b"\0" * 14)
    ds = data_start(blob)
    got = [(f.slug, f.offset, f.tensor) for f in validator.validate(blob).findings]
    assert got == [("tensor-unaligned", ds + 2, "b"), ("tensor-unaligned", ds + 6, "c")]


def test_padded_helper_pads_to_8() -> None:
    assert len(padded("{}")) == 8
    assert padded("12345678") == b"12345678"
