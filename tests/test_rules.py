# Strategy: one byte-level case per defect, at least one per rule of the
# catalogue.  Each case is a hand-made file holding exactly one defect; the
# test asserts the exact slug, absolute byte offset and tensor name of the
# first finding of that rule under the strict profile, and for rules the
# reference profile applies, that the reference profile reports the same slug
# first and maps it to the rule's safetensors error class.  A meta-test keeps
# the table complete: a rule added to the catalogue without a case fails it.
from __future__ import annotations

from dataclasses import dataclass

import pytest
from _stbytes import at, data_start, entry, padded, prefix, st

import validator
from validator import RULES, Profile, Severity

F32_1 = b"\0" * 4
MAX = 100_000_000


@dataclass(frozen=True)
class Case:
    id: str
    blob: bytes
    slug: str
    offset: int | None
    tensor: str | None = None
    # Strict-only errors that the strict profile reports before this one.
    after: tuple[str, ...] = ()


def _case(
    id_: str, blob: bytes, slug: str, offset: int | None, tensor: str | None = None, *, after: tuple[str, ...] = ()
) -> Case:
    return Case(id_, blob, slug, offset, tensor, after)


def _t(extra: str = "", *, dtype: str = '"F32"', shape: str = "[1]", offsets: str = "[0,4]", name: str = "t") -> str:
    return '{"' + name + '":{"dtype":' + dtype + ',"shape":' + shape + ',"data_offsets":' + offsets + extra + "}}"


def _cases() -> list[Case]:
    c: list[Case] = []
    add = c.append

    # --- length prefix -------------------------------------------------
    add(_case("file-of-3-bytes", b"\x01\x00\x00", "file-too-small", 0))
    add(_case("empty-file", b"", "file-too-small", 0))
    add(_case("header-length-100000001", prefix(MAX + 1) + b"{}      ", "header-too-large", 0))
    add(_case("header-length-2^64-1", prefix(2**64 - 1), "header-too-large", 0))
    add(_case("header-length-100-in-16-byte-file", prefix(100) + b"{}      ", "header-length-exceeds-file", 0))
    add(_case("header-length-100000000-short-file", prefix(MAX) + b"{}", "header-length-exceeds-file", 0))
    add(_case("header-of-2-bytes", st("{}", pad=False), "header-unaligned", 0))

    # --- header bytes ----------------------------------------------------
    b = st(b'{"__metadata__":{"a":"\xff"}}')
    add(_case("metadata-value-byte-ff", b, "header-not-utf8", at(b, b"\xff")))
    b = st(b'{"__metadata__":{"a":"\xed\xa0\x80"}}')
    add(_case("utf8-encoded-surrogate", b, "header-not-utf8", at(b, b"\xed")))
    b = st(b'{"__metadata__":{"a":"\xc0\xaf"}}')
    add(_case("overlong-utf8", b, "header-not-utf8", at(b, b"\xc0")))
    b = st(" {}")
    add(_case("space-before-brace", b, "header-leading-bytes", 8))
    b = st("\n{}")
    add(_case("newline-before-brace", b, "header-leading-bytes", 8))
    b = st("{}\t     ", pad=False)
    add(_case("tab-padding", b, "header-padding", 10))
    b = st("{}  \n    ", pad=False)
    add(_case("newline-after-spaces-padding", b, "header-padding", 12))
    b = st(b"{}\x00\x00\x00\x00\x00\x00", pad=False)
    add(_case("nul-padding", b, "header-trailing-bytes", 10))
    b = st("{} x")
    add(_case("letter-after-object", b, "header-trailing-bytes", 11))
    b = st("{}{}")
    add(_case("second-object", b, "header-trailing-bytes", 10))

    # --- JSON text -------------------------------------------------------
    b = st('{"a" 1}')
    add(_case("missing-colon", b, "json-syntax", at(b, "1")))
    b = st('{"__metadata__":{"a":"b",}}')
    add(_case("trailing-comma", b, "json-syntax", at(b, "}")))
    b = st(b"\xef\xbb\xbf{}")
    add(_case("byte-order-mark", b, "json-syntax", 8))
    b = prefix(8) + b'{"a":   '
    add(_case("unterminated-object", b, "json-syntax", 16))
    b = st("")
    add(_case("empty-header", b, "json-syntax", 8))
    b = st('{"__metadata__":{"a":"b}}')
    add(_case("unterminated-string", b, "json-syntax", len(b)))
    b = st("{'a':1}")
    add(_case("single-quoted-key", b, "json-syntax", 9))
    nest = _t(',"x":' + "[" * 126 + "]" * 126)
    b = st(nest, F32_1)
    add(_case("128-nesting-levels", b, "json-depth", at(b, '"x":[') + 4 + 125))
    b = st("[" * 200 + "]" * 200)
    add(_case("200-nested-arrays-at-root", b, "json-depth", 8 + 127))
    b = st(_t(',"x":1e400'), F32_1)
    add(_case("float-1e400", b, "json-number", at(b, "1e400")))
    b = st(_t(',"x":' + "9" * 400), F32_1)
    add(_case("400-digit-integer", b, "json-number", at(b, "9999")))
    b = st(_t(offsets="[00,4]"), F32_1)
    add(_case("leading-zero", b, "json-number", at(b, "00")))
    b = st(_t(',"x":NaN'), F32_1)
    add(_case("nan-token", b, "json-number", at(b, "NaN")))
    b = st(_t(',"x":-Infinity'), F32_1)
    add(_case("minus-infinity-token", b, "json-number", at(b, "-Inf")))
    b = st(_t(',"x":1.'), F32_1)
    add(_case("fraction-without-digits", b, "json-number", at(b, "1.")))
    b = st(_t(',"x":-'), F32_1)
    add(_case("lone-minus", b, "json-number", at(b, "-")))
    b = st(b'{"__metadata__":{"a":"x\x01"}}')
    add(_case("raw-control-char-in-string", b, "json-string", at(b, b"\x01")))
    b = st('{"__metadata__":{"a":"x\\q"}}')
    add(_case("invalid-escape", b, "json-string", at(b, "\\q")))
    b = st('{"__metadata__":{"a":"x\\u12"}}')
    add(_case("short-unicode-escape", b, "json-string", at(b, "\\u12")))
    b = st('{"__metadata__":{"a":"x\\ud800y"}}')
    add(_case("lone-high-surrogate", b, "json-string", at(b, "\\ud800")))
    b = st('{"__metadata__":{"a":"\\ud83d\\ude00\\udc00"}}')
    add(_case("lone-low-surrogate-after-pair", b, "json-string", at(b, "\\udc00")))
    b = st('{"__metadata__":{"a":"\\ud800\\ud800\\udc00"}}')
    add(_case("high-surrogate-then-pair", b, "json-string", at(b, "\\ud800")))
    b = st('{"\\ud800":' + entry() + "}", F32_1)
    add(_case("lone-surrogate-in-key", b, "json-string", at(b, "\\ud800")))
    b = st(_t(',"dtype":"F32"'), F32_1)
    add(_case("dtype-twice", b, "duplicate-field", at(b, '"dtype"', 1), "t"))
    b = st('{"__metadata__":{},"__metadata__":{}}')
    add(_case("metadata-twice", b, "duplicate-field", at(b, '"__metadata__"', 1)))
    b = st('{"\\u005f_metadata__":{},"__metadata__":{}}')
    add(_case("metadata-twice-one-escaped", b, "duplicate-field", at(b, '"__metadata__"')))
    b = st('{"t":' + entry() + ',"t":' + entry() + "}", F32_1)
    add(_case("tensor-name-twice", b, "duplicate-key", at(b, '"t"', 1), "t"))
    b = st('{"__metadata__":{"k":"1","k":"2"}}')
    add(_case("metadata-key-twice", b, "duplicate-key", at(b, '"k"', 1)))

    # --- header object and entries -------------------------------------
    b = st("[]")
    add(_case("header-is-array", b, "header-not-object", 8))
    b = st('"x"')
    add(_case("header-is-string", b, "header-not-object", 8))
    b = st('{"__metadata__":{"a":1}}')
    add(_case("metadata-value-number", b, "metadata-invalid", at(b, "1}")))
    b = st('{"__metadata__":["a"]}')
    add(_case("metadata-is-array", b, "metadata-invalid", at(b, "[")))
    b = st('{"__metadata__":{"a":null}}')
    add(_case("metadata-value-null", b, "metadata-invalid", at(b, "null")))
    b = st('{"__metadata__":null}')
    add(_case("metadata-is-null", b, "metadata-null", at(b, "null")))
    b = st('{"t":1}')
    add(_case("entry-is-number", b, "tensor-entry-invalid", at(b, "1"), "t"))
    b = st('{"t":null}')
    add(_case("entry-is-null", b, "tensor-entry-invalid", at(b, "null"), "t"))
    b = st('{"t":["F32",[1],[0,4],1]}', F32_1)
    add(_case("entry-is-array-of-4", b, "tensor-entry-invalid", at(b, '["F32"'), "t", after=("tensor-entry-array",)))
    b = st('{"t":["F32",[1],[0,4]]}', F32_1)
    add(_case("entry-is-array-of-3", b, "tensor-entry-array", at(b, '["F32"'), "t"))
    b = st('{"t":{"dtype":"F32","data_offsets":[0,4]}}', F32_1)
    add(_case("entry-without-shape", b, "tensor-field-missing", at(b, "{", 1), "t"))
    b = st('{"t":{}}')
    add(_case("entry-empty-object", b, "tensor-field-missing", at(b, "{}"), "t"))
    b = st(_t(',"foo":1'), F32_1)
    add(_case("entry-field-foo", b, "tensor-field-unknown", at(b, '"foo"'), "t"))
    b = st(_t(',"Dtype":"F32"'), F32_1)
    add(_case("entry-field-capitalised", b, "tensor-field-unknown", at(b, '"Dtype"'), "t"))
    b = st(_t(dtype='"F33"'), F32_1)
    add(_case("dtype-F33", b, "dtype-unknown", at(b, '"F33"'), "t"))
    b = st(_t(dtype='"f32"'), F32_1)
    add(_case("dtype-lowercase", b, "dtype-unknown", at(b, '"f32"'), "t"))
    b = st(_t(dtype="0"), F32_1)
    add(_case("dtype-number", b, "dtype-unknown", at(b, ":0") + 1, "t"))
    b = st(_t(dtype='{"F32":[]}'), F32_1)
    add(_case("dtype-object-with-array", b, "dtype-unknown", at(b, '{"F32"'), "t"))
    b = st(_t(dtype='{"F32":{}}'), F32_1)
    add(_case("dtype-object-with-empty-object", b, "dtype-unknown", at(b, '{"F32"'), "t"))
    b = st(_t(dtype='{"F32":null}'), F32_1)
    add(_case("dtype-object-with-null", b, "dtype-not-string", at(b, '{"F32"'), "t"))
    b = st(_t(shape="[1.0]"), F32_1)
    add(_case("shape-float", b, "shape-invalid", at(b, "1.0"), "t"))
    b = st(_t(shape="[-0]", offsets="[0,0]"))
    add(_case("shape-minus-zero", b, "shape-invalid", at(b, "-0"), "t"))
    b = st(_t(shape="[2,-1]"), F32_1)
    add(_case("shape-negative", b, "shape-invalid", at(b, "-1"), "t"))
    b = st(_t(shape="[18446744073709551616]"), F32_1)
    add(_case("shape-2^64", b, "shape-invalid", at(b, "18446744073709551616"), "t"))
    b = st(_t(shape='"1"'), F32_1)
    add(_case("shape-string", b, "shape-invalid", at(b, '"1"'), "t"))
    b = st(_t(offsets="[0,4.0]"), F32_1)
    add(_case("offsets-float", b, "offsets-invalid", at(b, "4.0"), "t"))
    b = st(_t(offsets="[0,4e0]"), F32_1)
    add(_case("offsets-exponent", b, "offsets-invalid", at(b, "4e0"), "t"))
    b = st(_t(offsets="[-4,0]"), F32_1)
    add(_case("offsets-negative", b, "offsets-invalid", at(b, "-4"), "t"))
    b = st(_t(offsets="[0,4,4]"), F32_1)
    add(_case("offsets-three-items", b, "offsets-invalid", at(b, "[0,4,4]"), "t"))
    b = st(_t(offsets="[0,18446744073709551616]"), F32_1)
    add(_case("offsets-2^64", b, "offsets-invalid", at(b, "18446744073709551616"), "t"))
    b = st(_t(offsets="null"), F32_1)
    add(_case("offsets-null", b, "offsets-invalid", at(b, "null"), "t"))
    b = st('{"":' + entry() + "}", F32_1)
    add(_case("empty-tensor-name", b, "tensor-name-suspicious", at(b, '""'), ""))
    b = st('{"a\\u0007b":' + entry() + "}", F32_1)
    add(_case("bell-in-tensor-name", b, "tensor-name-suspicious", at(b, '"a\\u0007b"'), "a\x07b"))
    b = st('{"a\u202eb":' + entry() + "}", F32_1)
    add(_case("bidi-override-in-tensor-name", b, "tensor-name-suspicious", at(b, '"a\u202eb"'.encode()), "a\u202eb"))
    b = st('{"a\u2066b":' + entry() + "}", F32_1)
    add(_case("bidi-isolate-in-tensor-name", b, "tensor-name-suspicious", at(b, '"a\u2066b"'.encode()), "a\u2066b"))

    # --- layout ----------------------------------------------------------
    b = st(_t(offsets="[4,8]"), F32_1 * 2)
    add(_case("hole-at-start", b, "offsets-not-contiguous", data_start(b), "t"))
    b = st('{"a":' + entry(offsets=(0, 4)) + ',"b":' + entry(offsets=(8, 12)) + "}", F32_1 * 3)
    add(_case("hole-between-tensors", b, "offsets-not-contiguous", data_start(b) + 4, "b"))
    b = st('{"a":' + entry(shape=(2,), offsets=(0, 8)) + ',"b":' + entry(offsets=(4, 8)) + "}", F32_1 * 2)
    add(_case("overlapping-tensors", b, "offsets-not-contiguous", data_start(b) + 4, "b"))
    b = st('{"a":' + entry(shape=(2,), offsets=(0, 8)) + ',"b":' + entry(shape=(0,), offsets=(4, 4)) + "}", F32_1 * 2)
    add(_case("zero-size-tensor-inside-another", b, "offsets-not-contiguous", data_start(b) + 4, "b"))
    b = st(_t(offsets="[4,0]"), F32_1)
    add(_case("reversed-offsets", b, "offsets-reversed", data_start(b) + 4, "t"))
    b = st(_t(shape="[4294967296,4294967296]"), F32_1)
    add(_case("element-count-overflow", b, "size-overflow", data_start(b), "t"))
    b = st(_t(dtype='"F64"', shape="[2305843009213693952]", offsets="[0,0]"))
    add(_case("bit-count-overflow", b, "size-overflow", data_start(b), "t"))
    b = st(_t(shape="[9223372036854775808,4,0]", offsets="[0,0]"))
    add(_case("overflow-before-zero-dim", b, "size-overflow", data_start(b), "t"))
    b = st(_t(dtype='"F4"', shape="[1]", offsets="[0,1]"), b"\0")
    add(_case("one-f4-element", b, "subbyte-misaligned", data_start(b), "t"))
    b = st(_t(dtype='"F6_E3M2"', shape="[3]", offsets="[0,3]"), b"\0" * 3)
    add(_case("three-f6-elements", b, "subbyte-misaligned", data_start(b), "t"))
    b = st(_t(shape="[2]"), F32_1)
    add(_case("shape-needs-8-bytes-offsets-span-4", b, "byte-length-mismatch", data_start(b), "t"))
    b = st(_t(offsets="[0,0]"))
    add(_case("nonempty-tensor-with-empty-range", b, "byte-length-mismatch", data_start(b), "t"))
    b = st(_t(), F32_1 + b"\0")
    add(_case("one-trailing-byte", b, "buffer-trailing-bytes", data_start(b) + 4))
    b = st("{}", b"\0")
    add(_case("data-after-empty-header", b, "buffer-trailing-bytes", 16))
    b = st(_t(), b"\0" * 3)
    add(_case("last-tensor-1-byte-short", b, "buffer-truncated", len(b), "t"))
    b = st('{"a":' + entry("U8", (1,), (0, 1)) + ',"b":' + entry(offsets=(1, 5)) + "}", b"\0" * 5)
    add(_case("f32-after-one-byte", b, "tensor-unaligned", data_start(b) + 1, "b"))
    return c


CASES = _cases()


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
