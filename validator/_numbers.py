# Strategy: the value serde_json 1.x (as safetensors 0.8.0 builds it,
# without `float_roundtrip`) gives a JSON number token.  An integer with no
# fraction or exponent is a u64 when positive and an i64 when negative;
# minus zero, integers below -2^63 and integers above 2^64-1 become floats; a
# float is a u64 significand times or divided by a power of ten, computed in
# f64 steps (not correctly rounded), and one that comes out infinite is "out
# of range" (None here), which the reader reports as an error.
from __future__ import annotations

from typing import Final

__all__ = ["I64_MIN", "U64_MAX", "number"]

U64_MAX: Final = (1 << 64) - 1
I64_MIN: Final = -(1 << 63)
_POW10: Final = tuple(float(f"1e{i}") for i in range(309))
_I32_MAX: Final = (1 << 31) - 1
_I32_MIN: Final = -(1 << 31)


def _accumulate(significand: int, digits: bytes) -> tuple[int, int]:
    """Append digits to a u64 significand until the next would overflow.

    serde_json: `if overflow!(significand * 10 + digit, u64::MAX)` stops the
    loop.  Returns the significand and how many digits it took.
    """
    taken = 0
    if significand == 0:  # zeros leave it 0: take them in one step
        rest = digits.lstrip(b"0")
        taken = len(digits) - len(rest)
        digits = rest
    for c in digits:
        grown = significand * 10 + (c - 0x30)
        if grown > U64_MAX:
            break
        significand = grown
        taken += 1
    return significand, taken


def _from_parts(significand: int, exponent: int) -> float | None:
    """serde_json's f64_from_parts (no float_roundtrip); None when out of range."""
    f = float(significand)  # u64 as f64: round to nearest, ties to even
    while True:
        if abs(exponent) < len(_POW10):
            if exponent >= 0:
                f *= _POW10[exponent]
                if f == float("inf"):
                    return None
            else:
                f /= _POW10[-exponent]
            return f
        if f == 0.0:
            return f
        if exponent >= 0:
            return None
        f /= 1e308
        exponent += 308


def number(text: bytes) -> int | float | None:
    """The value serde_json gives a number token; None for "out of range".

    ``text`` is a complete token matched by the JSON number grammar.
    """
    negative = text[:1] == b"-"
    body = text[1:] if negative else text
    exp_at = max(body.find(b"e"), body.find(b"E"))
    mantissa, exp_text = (body[:exp_at], body[exp_at + 1 :]) if exp_at >= 0 else (body, b"")
    dot = mantissa.find(b".")
    whole, fraction = (mantissa[:dot], mantissa[dot + 1 :]) if dot >= 0 else (mantissa, b"")
    significand, taken = _accumulate(0, whole)
    exponent = len(whole) - taken  # parse_long_integer: each dropped digit is a power of ten
    if dot < 0 and exp_at < 0 and exponent == 0:
        if not negative:
            return significand
        # `(significand as i64).wrapping_neg()`: -0 and anything below
        # -2^63 become floats.
        return -significand if 0 < significand <= 1 << 63 else -float(significand)
    if dot >= 0:
        significand, taken = _accumulate(significand, fraction)
        exponent -= taken  # digits after an overflow are dropped
    if exp_at >= 0:
        positive_exp = exp_text[:1] != b"-"
        digits = exp_text.lstrip(b"+-").lstrip(b"0")
        if len(digits) > 10 or int(digits or b"0") > _I32_MAX:
            # parse_exponent_overflow: an error instead of infinity.
            if significand != 0 and positive_exp:
                return None
            return -0.0 if negative else 0.0
        value = int(digits or b"0")
        exponent = exponent + value if positive_exp else exponent - value
        exponent = min(max(exponent, _I32_MIN), _I32_MAX)  # saturating
    f = _from_parts(significand, exponent)
    if f is None:
        return None
    return -f if negative else f
