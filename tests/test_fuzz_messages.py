"""The messages of the classes a fuzz campaign reports: each gives the reference's real reason."""

from __future__ import annotations

import struct

import pytest

from validator._rules import Profile
from validator._validate import validate
from validator.fuzz.targets import reference_load


def _file(number: bytes) -> bytes:
    header = b'{"__metadata__":{"n":"x"},"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":' + number + b"}}"
    return struct.pack("<Q", len(header)) + header + b"\0"


@pytest.mark.parametrize(
    ("number", "message"),
    [
        (
            b"1.7976931348623158e308",
            (
                "number 1.7976931348623158e308 fits an f64, but serde_json's float parser (without "
                "float_roundtrip, as safetensors 0.8.0 builds it) overflows to infinity on it and rejects it as "
                "out of range"
            ),
        ),
        (b"1.8e308", "number 1.8e308 is out of range for f64"),
    ],
    ids=["f64-max", "beyond-f64"],
)
def test_json_number_out_of_range_says_why_the_reference_rejects_it(number: bytes, message: str) -> None:
    data = _file(number)
    error, _ = reference_load(data)
    assert error is not None  # safetensors 0.8.0 rejects both
    report = validate(data, profile=Profile.REFERENCE)
    assert report.first_error is not None
    assert report.first_error.slug == "json-number"
    assert report.first_error.message == message
