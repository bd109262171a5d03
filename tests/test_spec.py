# Strategy: spec/ is checked against the code it documents.  The header
# schema must accept real writer output and every hand-built valid header,
# and reject a table of headers each named after its one defect; the strict
# validator must agree with it wherever a schema can decide.  SPEC.md must
# hold one anchor per catalogue rule (and no stray rule anchors), with the
# code, severity, profiles and reference class the catalogue gives.  The
# CLI's JSON output must validate against report.schema.json.
from __future__ import annotations

import io
import json
import random
import re
import struct
from contextlib import redirect_stdout
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from _stbytes import st
from jsonschema import Draft202012Validator

import validator
from validator._dtypes import DTYPE_BITS, DTYPES
from validator._rules import RULES, Profile
from validator.cli.main import main

SPEC_DIR = Path(__file__).resolve().parent.parent / "spec"
# The schemas as an installed user has them: package data (spec/ holds
# copies, checked byte for byte by tests/test_output_schemas.py).
SCHEMAS = Path(str(resources.files("validator") / "schemas"))
U64_MAX = (1 << 64) - 1

# Facts about the upstream docs/safetensors.schema.json (safetensors repo):
# its dtype pattern, which carries no ^/$ anchors, and its data_offsets,
# which has two prefixItems but no minItems/maxItems.
UPSTREAM_DTYPE_PATTERN = "([UIF])(8|16|32|64|128|256)"


@pytest.fixture(scope="module")
def spec_path() -> Path:
    return SPEC_DIR


def _load(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        doc: dict[str, Any] = json.load(fh)
    return doc


@pytest.fixture(scope="module")
def header_schema() -> dict[str, Any]:
    return _load(SCHEMAS / "header.schema.json")


@pytest.fixture(scope="module")
def report_schema() -> dict[str, Any]:
    return _load(SCHEMAS / "report.schema.json")


@pytest.fixture(scope="module")
def header_validator(header_schema: dict[str, Any]) -> Draft202012Validator:
    return Draft202012Validator(header_schema)


@pytest.fixture(scope="module")
def spec_text(spec_path: Path) -> str:
    return (spec_path / "SPEC.md").read_text(encoding="utf-8")


def entry(dtype: str = "U8", shape: Any = (1,), offsets: Any = (0, 1)) -> dict[str, Any]:
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


def data_len(header: dict[str, Any]) -> int:
    ends = [v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"]
    return max(ends, default=0)


# --- the header schema ------------------------------------------------------


def _all_dtypes_header() -> dict[str, Any]:
    header: dict[str, Any] = {}
    at = 0
    for dtype, bits in DTYPE_BITS.items():
        n = 8 if bits % 8 else 2  # 8 sub-byte elements fill whole bytes
        size = n * bits // 8
        header[dtype.lower()] = entry(dtype, (n,), (at, at + size))
        at += size
    return header


VALID_HEADERS: dict[str, dict[str, Any]] = {
    "empty": {},
    "metadata_only": {"__metadata__": {"format": "pt", "": ""}},
    "empty_metadata": {"__metadata__": {}},
    "scalar": {"s": entry("F32", (), (0, 4))},
    "zero_sized_tensors_share_offset": {
        "a": entry("F32", (0, 3), (0, 0)),
        "b": entry("I64", (0,), (0, 0)),
        "c": entry("U8", (2,), (0, 2)),
    },
    "every_dtype": _all_dtypes_header(),
    "metadata_and_tensors": {"__metadata__": {"k": "v"}, "w": entry("BF16", (2, 2), (0, 8))},
    "metadata_null_as_mlx_writes_it": {"__metadata__": None, "w": entry("F32", (2,), (0, 8))},  # a warning, ST303
    "tensor_named_like_a_field": {"dtype": entry("U8", (1,), (0, 1))},
}


@pytest.mark.parametrize("name", VALID_HEADERS)
def test_header_schema_accepts_valid_header(name: str, header_validator: Draft202012Validator) -> None:
    header = VALID_HEADERS[name]
    assert list(header_validator.iter_errors(header)) == []
    # The strict validator agrees: the same header in a well-formed file is valid.
    report = validator.validate(st(header, bytes(data_len(header))))
    assert report.valid, [f.format() for f in report.findings]


NUMPY_DTYPES = (
    "bool",
    "uint8",
    "int8",
    "int16",
    "uint16",
    "float16",
    "int32",
    "uint32",
    "float32",
    "float64",
    "int64",
    "uint64",
    "complex64",
)


def test_header_schema_accepts_reference_writer_output(header_validator: Draft202012Validator) -> None:
    np = pytest.importorskip("numpy")
    from safetensors.numpy import save

    tensors = {f"t_{name}": np.ones((2, 3), dtype=name) for name in NUMPY_DTYPES}
    tensors["scalar"] = np.array(1.5, dtype="float32")
    tensors["empty"] = np.zeros((0, 4), dtype="float16")
    blob = save(tensors, metadata={"format": "np", "note": "written by safetensors 0.8.0"})
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    assert list(header_validator.iter_errors(header)) == []
    seen = {v["dtype"] for k, v in header.items() if k != "__metadata__"}
    assert {"BOOL", "U8", "F16", "F32", "F64", "C64", "U64"} <= seen
    assert validator.validate(blob).valid


def _without(d: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != key}


# Each header holds exactly one defect, named in its id.
INVALID_HEADERS: dict[str, Any] = {
    "header_is_array": [],
    "header_is_string": "F32",
    "dtype_unanchored_xF32x": {"t": entry("xF32x")},
    "dtype_trailing_space": {"t": entry("F32 ")},
    "dtype_lowercase": {"t": entry("f32")},
    "dtype_unknown_F128": {"t": entry("F128")},
    "dtype_as_object": {"t": entry({"F32": None})},
    "dtype_number": {"t": entry(32)},
    "data_offsets_one_item": {"t": entry(offsets=(0,))},
    "data_offsets_three_items": {"t": entry(offsets=(0, 1, 2))},
    "data_offsets_empty": {"t": entry(offsets=())},
    "data_offsets_negative": {"t": entry(offsets=(-1, 0))},
    "data_offsets_float": {"t": entry(offsets=(0, 1.5))},
    "data_offsets_u64_overflow": {"t": entry(offsets=(0, U64_MAX + 1))},
    "data_offsets_string": {"t": {"dtype": "U8", "shape": [1], "data_offsets": "0,1"}},
    "shape_negative": {"t": entry(shape=(-1,))},
    "shape_float": {"t": entry(shape=(1.5,))},
    "shape_u64_overflow": {"t": entry(shape=(U64_MAX + 1,))},
    "shape_string_item": {"t": entry(shape=("1",))},
    "shape_not_array": {"t": {"dtype": "U8", "shape": 1, "data_offsets": [0, 1]}},
    "metadata_not_object": {"__metadata__": ["a"]},
    "metadata_value_number": {"__metadata__": {"a": 1}},
    "metadata_value_null": {"__metadata__": {"a": None}},
    "metadata_value_object": {"__metadata__": {"a": {"b": "c"}}},
    "field_unknown": {"t": {**entry(), "extra": 1}},
    "field_missing_dtype": {"t": _without(entry(), "dtype")},
    "field_missing_shape": {"t": _without(entry(), "shape")},
    "field_missing_data_offsets": {"t": _without(entry(), "data_offsets")},
    "entry_as_array": {"t": ["U8", [1], [0, 1]]},
    "entry_as_string": {"t": "U8"},
    "entry_null": {"t": None},
}


@pytest.mark.parametrize("name", INVALID_HEADERS)
def test_header_schema_rejects_invalid_header(name: str, header_validator: Draft202012Validator) -> None:
    header = INVALID_HEADERS[name]
    assert not header_validator.is_valid(header)
    # The strict validator rejects the same header in an otherwise sound file.
    blob = st(json.dumps(header, separators=(",", ":")), b"\0" * 2)
    assert not validator.validate(blob).valid


# Headers the schema must accept although the file is invalid: what no JSON
# Schema can express (SPEC.md, "Differences from the upstream JSON schema").
SCHEMA_BLIND_SPOTS: dict[str, tuple[str, str]] = {
    "duplicate_tensor_name": (
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
        "ST210",
    ),
    "duplicate_metadata_key": ('{"__metadata__":{"k":"1","k":"2"}}', "ST210"),
    "shape_written_1_0": ('{"a":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}', "ST310"),
    "offsets_written_1e0": ('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1e0]}}', "ST311"),
    "byte_length_mismatch": ('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,1]}}', "ST405"),
    "hole_between_tensors": ('{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', "ST401"),
    "shape_u64_max_overflows_size": (
        '{"a":{"dtype":"U16","shape":[18446744073709551615],"data_offsets":[0,1]}}',
        "ST403",
    ),
}


@pytest.mark.parametrize("name", SCHEMA_BLIND_SPOTS)
def test_header_schema_blind_spots_are_caught_by_the_validator(
    name: str, header_validator: Draft202012Validator
) -> None:
    text, code = SCHEMA_BLIND_SPOTS[name]
    assert header_validator.is_valid(json.loads(text))
    report = validator.validate(st(text, b"\0" * 2))
    assert code in [f.code for f in report.errors]


def test_upstream_schema_gaps_are_fixed(header_validator: Draft202012Validator) -> None:
    def upstream_accepts_dtype(name: str) -> bool:
        return re.search(UPSTREAM_DTYPE_PATTERN, name) is not None

    def ours_accepts_dtype(name: str) -> bool:
        return header_validator.is_valid({"t": entry(name)})

    # Valid names the upstream pattern rejects outright.
    for name in ("BOOL", "C64", "F4", "F6_E2M3", "F6_E3M2"):
        assert not upstream_accepts_dtype(name)
        assert ours_accepts_dtype(name)
    # Valid names upstream matches only because the pattern is unanchored:
    # anchoring that pattern as written would reject them.
    for name in ("BF16", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ"):
        assert upstream_accepts_dtype(name)
        assert not re.fullmatch(UPSTREAM_DTYPE_PATTERN, name)
        assert ours_accepts_dtype(name)
    # Names no reader knows that upstream accepts.
    for name in ("F32x", "xF32x", "F32 ", "F128", "U256", "I128", "F88"):
        assert upstream_accepts_dtype(name)
        assert not ours_accepts_dtype(name)
    # Every name in the dtype table and nothing else.
    assert set(header_validator.schema["$defs"]["dtype"]["enum"]) == set(DTYPES)
    # data_offsets: upstream's two prefixItems alone let other lengths through.
    upstream_offsets = Draft202012Validator(
        {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}]}
    )
    for offsets in ([], [0], [0, 1, 2]):
        assert upstream_offsets.is_valid(offsets)
        assert not header_validator.is_valid({"t": entry(offsets=offsets)})
    # Upstream caps integers at 2^48-1; the reference reads any u64.
    big = (1 << 48) + 1
    assert header_validator.is_valid({"t": entry(shape=(big,)), "u": entry(offsets=(0, U64_MAX))})


@pytest.mark.parametrize("name", ["header.schema.json", "report.schema.json"])
def test_schema_files_are_valid_2020_12_schemas(name: str) -> None:
    schema = _load(SCHEMAS / name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_header_schema_comment_states_its_limits(header_schema: dict[str, Any]) -> None:
    comment = header_schema["$comment"].lower()
    for limit in ("duplicate keys", "contiguity", "byte lengths"):
        assert limit in comment


# --- SPEC.md ------------------------------------------------------------------

_ANCHOR = re.compile(
    r'<a id="([^"]+)"></a>\n### (ST\d{3}) (\S+)\n\nSeverity: (\w+)\. Profiles: ([a-z, ]+)\. Reference error: ([^\n]+)\n'
)
_SLUG_LIKE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)+$")


def test_every_rule_has_an_anchored_section(spec_text: str) -> None:
    anchors = re.findall(r'<a id="([^"]+)"></a>', spec_text)
    assert len(anchors) == len(set(anchors)), "duplicate anchors"
    catalogue = {r.anchor for r in RULES}
    assert catalogue <= set(anchors), sorted(catalogue - set(anchors))
    stray = {a for a in anchors if _SLUG_LIKE.match(a)} - catalogue
    assert not stray, sorted(stray)


def test_rule_sections_match_the_catalogue(spec_text: str) -> None:
    sections = {m.group(1): m for m in _ANCHOR.finditer(spec_text)}
    for r in RULES:
        m = sections.get(r.anchor)
        assert m is not None, f"section of {r.slug} lacks its heading or severity line"
        _, code, slug, severity, profiles, reference = m.groups()
        assert (code, slug, severity) == (r.code, r.slug, r.severity.value)
        assert set(profiles.split(", ")) == {p.value for p in r.profiles}
        if r.reference_error is None:
            assert reference.startswith("none"), (r.slug, reference)
        else:
            assert reference.startswith(f"`{r.reference_error}`"), (r.slug, reference)
        body = spec_text[m.end() : spec_text.find("<a id=", m.end())]
        for part in ("**Requirement.**", "**Bad example.**", "**Reference 0.8.0.**"):
            assert part in body, (r.slug, part)


def test_strict_only_rules_are_in_the_deviations_table(spec_text: str) -> None:
    start = spec_text.index("## Deviations")
    table = spec_text[start : spec_text.index("\n## ", start + 1)]
    for r in RULES:
        if r.profiles == {Profile.STRICT}:
            assert f"(#{r.anchor})" in table, r.slug


def test_spec_dtype_table_matches_the_code(spec_text: str) -> None:
    rows = re.findall(r"^\| `([A-Z0-9_]+)` \| (\d+) \| (\d+|sub-byte) \|", spec_text, re.MULTILINE)
    assert [name for name, _, _ in rows] == list(DTYPES)
    for name, bits, size in rows:
        assert int(bits) == DTYPE_BITS[name]
        assert size == (str(DTYPE_BITS[name] // 8) if DTYPE_BITS[name] % 8 == 0 else "sub-byte")


def test_spec_reserves_later_rule_regions(spec_text: str) -> None:
    assert "## Sharded checkpoints (ST5xx)" in spec_text
    assert "## Deep scan and policy (ST6xx)" in spec_text


# --- report.schema.json against the CLI ---------------------------------------


def _cli_json(*argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(list(argv))
    return rc, json.loads(out.getvalue())


def _file_report_validator(report_schema: dict[str, Any]) -> Draft202012Validator:
    """The schema of one per-file report, ``report.schema.json#/$defs/fileReport``."""
    return Draft202012Validator(
        {"$schema": report_schema["$schema"], "$defs": report_schema["$defs"], "$ref": "#/$defs/fileReport"}
    )


@pytest.fixture
def sample_files(tmp_path: Path) -> dict[str, Path]:
    header = {"__metadata__": {"format": "pt"}, "w": entry("F32", (2,), (0, 8)), "b": entry("U8", (3,), (8, 11))}
    files = {
        "valid_two_tensors": st(header, bytes(11)),
        "valid_empty": st({}),
        "warn_unaligned_header": st({"a": entry("F32", (1,), (0, 4))}, bytes(4), pad=False),
        "invalid_trailing_bytes": st(header, bytes(12)),
        "invalid_json_syntax": st('{"a":}'),
        "invalid_file_too_small": b"\x01\x00",
        "invalid_duplicate_key": st(
            '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
            b"\0",
        ),
        "invalid_suspicious_name_and_hole": st({"": entry(offsets=(1, 2))}, b"\0\0"),
    }
    paths = {}
    for name, blob in files.items():
        path = tmp_path / f"{name}.safetensors"
        path.write_bytes(blob)
        paths[name] = path
    return paths


@pytest.mark.parametrize("profile", ["strict", "reference"])
def test_check_json_output_validates(
    profile: str, sample_files: dict[str, Path], report_schema: dict[str, Any], tmp_path: Path
) -> None:
    missing = tmp_path / "missing.safetensors"
    rc, doc = _cli_json(
        "check", "--format", "json", "--profile", profile, *map(str, sample_files.values()), str(missing)
    )
    Draft202012Validator(report_schema).validate(doc)
    assert rc == 2  # the missing file
    assert doc["profile"] == profile
    assert doc["summary"]["files"] == len(sample_files) == len(doc["files"])
    assert len(doc["summary"]["unreadable"]) == 1
    codes = {c for f in doc["files"] for c in (x["code"] for x in f["findings"])}
    assert {"ST101", "ST104", "ST205", "ST406", "ST312"} <= codes
    # A per-file report's tensors are themselves a valid header (strict sense).
    header_validator = Draft202012Validator(_load(SCHEMAS / "header.schema.json"))
    for report in doc["files"]:
        if report["tensors"] is not None:
            header_validator.validate(report["tensors"])


def test_check_json_output_of_a_directory_validates(
    sample_files: dict[str, Path], report_schema: dict[str, Any]
) -> None:
    directory = next(iter(sample_files.values())).parent
    rc, doc = _cli_json("check", "--format", "json", str(directory))
    Draft202012Validator(report_schema).validate(doc)
    assert rc == 1
    assert doc["summary"]["invalid"] == sum(name.startswith("invalid") for name in sample_files)


@pytest.mark.parametrize(
    "name", ["valid_two_tensors", "invalid_trailing_bytes", "invalid_file_too_small", "invalid_duplicate_key"]
)
def test_inspect_json_output_validates_against_file_report(
    name: str, sample_files: dict[str, Path], report_schema: dict[str, Any]
) -> None:
    rc, doc = _cli_json("inspect", "--format", "json", str(sample_files[name]))
    _file_report_validator(report_schema).validate(doc)
    assert rc == (0 if name.startswith("valid") else 1)
    assert doc["valid"] is name.startswith("valid")


def test_report_schema_rejects_malformed_reports(report_schema: dict[str, Any]) -> None:
    good = validator.validate(st({"a": entry()}, b"\0\0")).to_json()
    check = _file_report_validator(report_schema)
    assert check.is_valid(good)
    assert good["findings"], "the sample must hold a finding"
    finding = good["findings"][0]
    bad_findings = {
        "code_lowercase": {**finding, "code": "st406"},
        "code_letters": {**finding, "code": "STX01"},
        "code_four_digits": {**finding, "code": "ST4060"},
        "slug_not_kebab": {**finding, "rule": "Buffer_Trailing"},
        "severity_unknown": {**finding, "severity": "fatal"},
        "offset_negative": {**finding, "offset": -1},
        "json_path_not_pointer": {**finding, "json_path": "a/b"},
        "message_missing": _without(finding, "message"),
    }
    for name, bad in bad_findings.items():
        assert not check.is_valid({**good, "findings": [bad]}), name
    # A later rule (ST6xx) and a later field validate without schema edits.
    later = {**finding, "code": "ST601", "rule": "tensor-nan", "suppressed": False}
    assert check.is_valid({**good, "findings": [later], "scan": {}})
    assert not check.is_valid({**good, "profile": "lenient"})
    assert not check.is_valid(_without(good, "valid"))
    assert not check.is_valid({**good, "tensors": {"a": {**entry(), "extra": 1}}})


# --- SPEC.md's claims about the reference, checked against safetensors 0.8.0 --

_E = '"dtype":"U8","shape":[1],"data_offsets":[0,1]'

# One file per row of the Deviations table: accepted by the reference,
# valid under the reference profile, and an error of that rule under strict.
DEVIATIONS: dict[str, bytes] = {
    "header-leading-bytes": st("\n{}", pad=False),
    "header-padding": st("{}\t\r\n", pad=False),
    "duplicate-key": st('{"a":{' + _E + '},"a":{' + _E + '},"__metadata__":{"k":"1","k":"2"}}', b"\0"),
    "metadata-null": st('{"__metadata__":null}'),
    "tensor-entry-array": st('{"t":["U8",[1],[0,1]]}', b"\0"),
    "tensor-field-unknown": st('{"t":{' + _E + ',"extra":[1,{"x":null}]}}', b"\0"),
    "dtype-not-string": st('{"t":{"dtype":{"U8":null},"shape":[1],"data_offsets":[0,1]}}', b"\0"),
}


def _reference_error(blob: bytes) -> str | None:
    """None when safetensors 0.8.0 accepts ``blob``, else its error message."""
    from safetensors import deserialize

    try:
        deserialize(blob)
    except Exception as exc:  # noqa: BLE001 - the reference raises SafetensorError and, on some inputs, others
        return str(exc)
    return None


def test_deviations_cover_every_strict_only_rule() -> None:
    assert set(DEVIATIONS) == {r.slug for r in RULES if r.profiles == {Profile.STRICT}}


@pytest.mark.parametrize("slug", DEVIATIONS)
def test_deviation_is_accepted_by_reference_and_rejected_by_strict(slug: str) -> None:
    pytest.importorskip("safetensors")
    blob = DEVIATIONS[slug]
    assert _reference_error(blob) is None
    assert validator.validate(blob, profile="reference").valid
    strict = validator.validate(blob, profile="strict")
    if validator.rule(slug).severity is validator.Severity.WARNING:  # a construct real writers emit: ST303
        assert strict.valid
        assert [f.slug for f in strict.warnings] == [slug]
        return
    assert [f.slug for f in strict.errors] == [slug] * len(strict.errors)
    assert strict.errors


def _nested(levels_inside_entry: int) -> bytes:
    # Top-level object (1) + entry object (2) + arrays in an ignored field.
    deep = "[" * levels_inside_entry + "]" * levels_inside_entry
    return st('{"t":{' + _E + ',"x":' + deep + "}}", b"\0")


# The reference's rejections that SPEC.md documents (JSON limits and the
# number model), with the rule stcheck reports under both profiles.
REFERENCE_REJECTS: dict[str, tuple[bytes, str]] = {
    "depth_128_levels": (_nested(126), "json-depth"),
    "shape_minus_zero": (st('{"t":{"dtype":"U8","shape":[-0],"data_offsets":[0,0]}}'), "shape-invalid"),
    "shape_1_0": (st('{"t":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}', b"\0"), "shape-invalid"),
    "shape_1e0": (st('{"t":{"dtype":"U8","shape":[1e0],"data_offsets":[0,1]}}', b"\0"), "shape-invalid"),
    "shape_2_pow_64": (
        st('{"t":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,1]}}', b"\0"),
        "shape-invalid",
    ),
    "offsets_1_0": (st('{"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1.0]}}', b"\0"), "offsets-invalid"),
    "float_overflow_in_ignored_field": (st('{"t":{' + _E + ',"x":1e400}}', b"\0"), "json-number"),
    "nan_in_ignored_field": (st('{"t":{' + _E + ',"x":NaN}}', b"\0"), "json-number"),
    "lone_surrogate": (st('{"__metadata__":{"a":"\\ud800"}}'), "json-string"),
    "nul_padding": (st(b"{}\0", pad=False), "header-trailing-bytes"),
    "duplicate_field_in_entry": (st('{"t":{"dtype":"U8",' + _E + "}}", b"\0"), "duplicate-field"),
    "duplicate_metadata_field": (st('{"__metadata__":{},"__metadata__":{}}'), "duplicate-field"),
}


@pytest.mark.parametrize("name", REFERENCE_REJECTS)
def test_documented_reference_rejection(name: str) -> None:
    pytest.importorskip("safetensors")
    blob, slug = REFERENCE_REJECTS[name]
    assert _reference_error(blob) is not None
    for profile in ("reference", "strict"):
        first = validator.validate(blob, profile=profile).first_error
        assert first is not None
        assert first.slug == slug


def test_depth_127_levels_is_accepted() -> None:
    pytest.importorskip("safetensors")
    blob = _nested(125)
    assert _reference_error(blob) is None
    assert validator.validate(blob, profile="reference").valid


def test_schema_never_rejects_a_strict_valid_header(header_validator: Draft202012Validator) -> None:
    """Seeded mutations of a sound header: whenever the strict validator
    accepts the file, the header schema accepts the parsed header."""

    base = json.dumps(
        {"__metadata__": {"k": "v"}, "a": entry("F32", (2,), (0, 8)), "c": entry("F4", (4,), (8, 10))}
    ).encode()
    base += b" " * (-len(base) % 8)
    rng = random.Random(20261129)  # reproducible mutations
    # Quotes are never added, removed or overwritten, and no control byte is
    # written: a string that fails to match sends the core's exact parser
    # into exponential regex backtracking (_json._STRING, reported as a bug),
    # which would make this test take a minute instead of a second.
    alphabet = b"{}[],:0123456789-.eE nulFUIB_a"
    accepted = 0
    for _ in range(1500):
        header = bytearray(base)
        for _ in range(rng.randint(1, 2)):
            pos = rng.randrange(len(header))
            while header[pos] == ord('"'):
                pos = rng.randrange(len(header))
            op = rng.random()
            if op < 0.5:
                header[pos] = rng.choice(alphabet)
            elif op < 0.75:
                del header[pos]
            else:
                header.insert(pos, rng.choice(alphabet))
        blob = struct.pack("<Q", len(header)) + bytes(header) + bytes(10)
        if validator.validate(blob).valid:
            accepted += 1
            assert header_validator.is_valid(json.loads(bytes(header))), bytes(header)
    assert accepted > 20  # the mutations must leave some files valid, or the test proves nothing
