# Strategy: property 5.  A generated header is valid under
# spec/header.schema.json exactly when the strict profile reports no
# schema-level finding.  Headers come from valid_files() and from the
# corruptions that keep the header well-formed JSON without duplicate keys
# (JSON Schema sees a parsed value, so it cannot express duplicates,
# contiguity or sizes).  Numbers are loaded with serde_json's model: a token
# with a fraction or an exponent, and `-0`, are not integers.
from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import validator
from validator.strategies import corrupted_files, valid_files

SCHEMA_PATH = Path(__file__).parents[2] / "spec" / "header.schema.json"

SCHEMA_RULES = frozenset(
    {
        "header-not-object",
        "metadata-invalid",
        "tensor-entry-invalid",
        "tensor-entry-array",
        "tensor-field-missing",
        "tensor-field-unknown",
        "dtype-unknown",
        "dtype-not-string",
        "shape-invalid",
        "offsets-invalid",
    }
)
# Corruptions whose header is still one JSON value without duplicate keys.
PARSEABLE_RULES = sorted(
    SCHEMA_RULES
    | {
        "header-leading-bytes",
        "header-padding",
        "offsets-not-contiguous",
        "offsets-reversed",
        "size-overflow",
        "subbyte-misaligned",
        "byte-length-mismatch",
        "buffer-trailing-bytes",
        "buffer-truncated",
    }
)


def _int(token: str) -> int | Decimal:
    # serde_json reads `-0` as the float -0.0.
    return Decimal(token) if token.lstrip("-") == "0" and token.startswith("-") else int(token)


def load_header(data: bytes) -> Any:
    n = int.from_bytes(data[:8], "little")
    return json.loads(data[8 : 8 + n].decode("utf-8"), parse_float=Decimal, parse_int=_int)


@pytest.fixture(scope="module")
def schema_validator() -> Any:
    if not SCHEMA_PATH.exists():
        pytest.skip(f"{SCHEMA_PATH} is missing (written on the spec branch)")
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _headers(source: str) -> st.SearchStrategy[bytes]:
    if source == "valid":
        return valid_files().map(lambda f: f.data)
    return corrupted_files(rule=source).map(lambda c: c.data)


@pytest.mark.parametrize("source", ["valid", *PARSEABLE_RULES])
def test_schema_valid_exactly_when_no_schema_finding(schema_validator: Any, source: str) -> None:
    @settings(max_examples=max(5, settings().max_examples // 3))
    @given(_headers(source))
    def check(blob: bytes) -> None:
        header = load_header(blob)
        errors = sorted(e.message for e in schema_validator.iter_errors(header))
        findings = sorted(f.slug for f in validator.validate(blob).errors if f.slug in SCHEMA_RULES)
        assert (not errors) == (not findings), (errors[:3], findings)
        if source in SCHEMA_RULES:
            assert errors, "a schema-level corruption must be schema-invalid"

    check()
