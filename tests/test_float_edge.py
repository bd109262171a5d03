# Strategy: the float edge, differentially.  safetensors 0.8.0 reads numbers
# with serde_json 1.x without `float_roundtrip`: a u64 significand times (or
# divided by) a power of ten, which is not correctly rounded, and "number
# out of range" when that product is infinite.  Numbers just below f64::MAX
# can round up to infinity there although Python (correctly rounded) keeps
# them finite.  Numbers are generated near f64::MAX (both sides of it and of
# the halfway point to 2^1024, in many spellings: more or fewer digits than
# a significand holds, the integer spelled out, the point shifted) and near
# the smallest subnormals, put in an unknown tensor field (which the
# reference accepts whatever the value, if it parses), and the reference
# profile's verdict and error class must equal `safetensors.deserialize`'s.
#
# pytest runs a CI-sized sample; the full search is a script option:
#
#     python tests/test_float_edge.py --count 40000
from __future__ import annotations

import argparse
import random
import struct
import sys
from decimal import Decimal, localcontext

import pytest
from hypothesis import given, settings

import validator
from validator._numbers import number
from validator.testing.numbers import edge_numbers

MAX = sys.float_info.max
ULP_AT_MAX = 2.0**971
TINY = 5e-324  # the smallest subnormal


def _spell(value: Decimal, digits: int, style: int, rng: random.Random) -> str:
    """``value`` rounded or cut to ``digits`` significant digits, in one of several spellings."""
    with localcontext() as ctx:
        ctx.prec = digits
        ctx.rounding = rng.choice(["ROUND_HALF_EVEN", "ROUND_DOWN", "ROUND_UP"])
        v = +value
    sign, coeff, exp = v.as_tuple()
    text = "".join(map(str, coeff)).rstrip("0") or "0"
    exp10 = exp + len(coeff) - len(text)  # value = text * 10^exp10
    if style == 0:  # d.ddd e N
        out = f"{text[0]}.{text[1:] or '0'}e{exp10 + len(text) - 1}"
    elif style == 1:  # the integer spelled out, or the fraction spelled out
        if exp10 >= 0:
            out = text + "0" * exp10
        else:
            point = len(text) + exp10
            out = text[:point] + "." + text[point:] if point > 0 else "0." + "0" * -point + text
    elif style == 2:  # digits then an exponent, no point
        out = f"{text}e{exp10}"
    else:  # 0.ddd e N+1, with extra trailing zeros
        out = f"0.{text}{'0' * rng.randrange(0, 4)}E{exp10 + len(text):+d}"
    return ("-" if sign or rng.random() < 0.2 else "") + out


def numbers(count: int, seed: int = 11) -> list[str]:
    """``count`` number tokens, about half near f64::MAX and half near the smallest subnormals."""
    rng = random.Random(seed)
    out = []
    with localcontext() as ctx:
        ctx.prec = 400
        for i in range(count):
            if i % 2 == 0:
                steps = rng.choice([0, 0, 0.5, 0.5, 0.25, 0.75, -1, -0.5, 1, -2, 2, rng.uniform(-3, 3)])
                value = Decimal(MAX) + Decimal(steps) * Decimal(ULP_AT_MAX)
                value += Decimal(rng.choice([0, 1, -1])) * Decimal(10) ** rng.randrange(270, 292)
            else:
                steps = rng.choice([0.5, 1, 1.5, 2, 0.25, 0.75, rng.uniform(0, 8), rng.uniform(0, 1e6)])
                value = Decimal(steps) * Decimal(TINY)
            digits = rng.choice([1, 2, 15, 16, 17, 17, 18, 19, 20, 21, 22, 25, 40, 100])
            out.append(_spell(value, digits, rng.randrange(4), rng))
    return out


def _blob(token: str) -> bytes:
    raw = ('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"j":' + token + "}}").encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"\0"


def disagreements(tokens: list[str]) -> list[tuple[str, object, object]]:
    """Tokens on which the reference profile and safetensors.deserialize differ."""
    from reference import reference_verdict

    bad = []
    for token in tokens:
        blob = _blob(token)
        ref = reference_verdict(blob)
        report = validator.validate(blob, profile="reference")
        ours = (report.valid, report.reference_error)
        if ours != ref:
            bad.append((token, ours, ref))
    return bad


@pytest.mark.parametrize(
    "token",
    ["1.7976931348623158e308", "17976931348623157" + "0" * 292, "1.797693134862315807e308"],
)
def test_numbers_serde_rounds_to_infinity_are_refused(token: str) -> None:
    # Python rounds these to f64::MAX; serde_json's significand-times-power
    # product overflows, so the reference says "number out of range".
    report = validator.validate(_blob(token), profile="reference")
    assert [f.slug for f in report.errors] == ["json-number"]
    assert report.errors[0].offset == 8 + len(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"j":')


@pytest.mark.parametrize(
    ("token", "value"),
    [
        ("1.7976931348623157e308", MAX),
        ("18446744073709551615", 2**64 - 1),
        ("-9223372036854775808", -(2**63)),
        ("-0", -0.0),
        ("18446744073709551616.0", 1.8446744073709552e19),  # the fraction digit refills the significand
        ("1e-400", 0.0),
        ("0e999999999999", 0.0),
        ("1e-99999999999", 0.0),
        ("4.9e-324", TINY),
    ],
)
def test_number_values_follow_serde(token: str, value: float) -> None:
    got = number(token.encode())
    assert got == value
    assert type(got) is type(value)


@pytest.mark.parametrize("token", ["1e309", "1e99999999999", "-1e400", "1" + "0" * 309])
def test_numbers_out_of_range(token: str) -> None:
    assert number(token.encode()) is None


def test_float_edge_sample_agrees_with_reference() -> None:
    pytest.importorskip("safetensors")
    tokens = numbers(1500)
    assert disagreements(tokens) == []
    # The sample must hold numbers on both sides of the verdict.
    refused = sum(number(t.encode()) is None for t in tokens)
    assert 50 < refused < len(tokens) - 500


def main() -> None:
    parser = argparse.ArgumentParser(description="float edge search against safetensors.deserialize")
    parser.add_argument("--count", type=int, default=40_000)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    tokens = numbers(args.count, args.seed)
    bad = disagreements(tokens)
    refused = sum(number(t.encode()) is None for t in tokens)
    print(f"{len(tokens)} numbers, {refused} refused by the reference model, {len(bad)} disagreements")
    for row in bad[:20]:
        print(row)


if __name__ == "__main__":
    main()


@given(token=edge_numbers())
@settings(max_examples=300, deadline=None)
def test_edge_numbers_strategy_agrees_with_reference(token: str) -> None:
    pytest.importorskip("safetensors")
    assert disagreements([token]) == []


@pytest.mark.parametrize("body", [b"\\u\r\n46", b"\\u 123", b"\\u+123", b"\\u1_23", b"\\x", b"a\x01"])
def test_string_checks_do_not_lean_on_the_scanner(monkeypatch: pytest.MonkeyPatch, body: bytes) -> None:
    # json's pure-Python scanstring (used where the C accelerator is missing,
    # as in the fuzz engine) reads \uXXXX with int(x, 16), which skips
    # whitespace and takes '+' and '_'.  Found by the differential campaign.
    import json.decoder

    monkeypatch.setattr("validator._json.scanstring", json.decoder.py_scanstring)
    monkeypatch.setattr("validator._json.STRICT_SCANNER", None)
    raw = b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"j":"' + body + b'"}}'
    raw += b" " * (-len(raw) % 8)
    report = validator.validate(struct.pack("<Q", len(raw)) + raw + b"\0", profile="reference")
    assert [f.slug for f in report.errors] == ["json-string"]
