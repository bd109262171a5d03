# Strategy: JSON number tokens at the edges of f64, where serde_json (in
# safetensors 0.8.0, without float_roundtrip) and a correctly rounding
# parser disagree: near f64::MAX and near the smallest subnormal.  Used by
# the float-edge differential tests and the fuzz dictionary's seeds.
from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["edge_numbers"]


def edge_numbers() -> st.SearchStrategy[str]:
    """JSON number tokens at the edges of f64: near f64::MAX and near the smallest subnormal.

    safetensors 0.8.0 (serde_json without float_roundtrip) refuses some of
    those just below f64::MAX as out of range; a file that holds one in an
    unknown field is accepted or refused on that alone.  Spellings vary: more
    or fewer digits than a u64 significand holds, the integer written out,
    the point moved, an exponent with a sign.

    >>> edge_numbers().example()  # doctest: +SKIP
    '1.7976931348623158e308'
    """
    digits = st.text(alphabet="0123456789", min_size=0, max_size=25)
    near_max = st.builds(
        lambda lead, tail, shift: _shifted(
            "17976931348623157" + lead + tail, 308 - 16 + shift - len(lead + tail), shift
        ),
        st.sampled_from(["", "0", "08", "081", "1", "09", "9", "58", "5807937"]),
        digits,
        st.integers(-3, 3),
    )
    near_tiny = st.builds(
        lambda lead, tail: f"{lead}{'.' + tail if tail else ''}e-324",
        st.sampled_from(["2", "2.4703282292062327", "4.9", "5", "1", "0"]).map(lambda t: t.split(".")[0]),
        digits,
    )
    signed = st.one_of(near_max, near_tiny, st.sampled_from(["1e308", "1e309", "2e308", "1e-400", "0e999"]))
    return st.tuples(st.booleans(), signed).map(lambda pair: ("-" if pair[0] else "") + pair[1])


def _shifted(mantissa: str, exponent: int, style: int) -> str:
    """``mantissa`` x 10^``exponent`` spelled one of several ways."""
    if style % 3 == 0:
        return f"{mantissa}e{exponent}"
    if style % 3 == 1:
        return f"{mantissa[0]}.{mantissa[1:] or '0'}e{exponent + len(mantissa) - 1:+d}"
    if exponent >= 0:
        return mantissa + "0" * exponent
    return f"{mantissa}E{exponent}"
