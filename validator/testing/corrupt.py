# Strategy: one corruption strategy per error rule of the catalogue.  Each
# draws a spec-valid Draft (see files.py) and breaks exactly one
# thing in it, so that the strict profile's error findings all carry the one
# rule.  Where breaking a rule unavoidably breaks another too, the case says
# so in `implies` and the reason is written in IMPLIED below; nothing else
# may be implied.  mutated_files() is the structure-blind counterpart: byte
# mutations of valid files with no promise about what they break.  The
# strategies themselves live by region: corrupt_text.py (prefix, header
# bytes, JSON) and corrupt_entries.py (header object, entries, layout), over
# the shared draws of corrupt_base.py.
#
# The serde_json cases (safetensors 0.8.0 reads the header with serde_json):
# `-0`, `1e0`, `1.0` and integers above 2^64-1 are floats, so they are
# rejected where an integer is expected (shape-invalid, offsets-invalid);
# NaN/Infinity tokens and floats beyond f64 are not numbers (json-number);
# lone surrogate escapes and raw control characters are rejected
# (json-string); the 128th nested container is refused (json-depth); a field
# written twice in one tensor entry is rejected (duplicate-field).
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from validator._rules import RULES, Severity
from validator._rules import rule as lookup_rule
from validator.testing.corrupt_base import MAX_HEADER
from validator.testing.corrupt_entries import ENTRY_CORRUPTIONS
from validator.testing.corrupt_text import TEXT_CORRUPTIONS
from validator.testing.files import U64_MAX, tensor_dicts, valid_files

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "CORRUPTIONS",
    "FILE_REGIONS",
    "IMPLIED",
    "OTHER_REGIONS",
    "CorruptedFile",
    "corrupted_files",
    "corruptible_rules",
    "mutated_files",
]


@dataclass(frozen=True)
class CorruptedFile:
    """A file that breaks one rule of the catalogue.

    ``data`` is the whole file.  ``rule`` is the slug of the broken rule (see
    ``validator.RULES``); ``implies`` names the other rules the same defect
    cannot help breaking (usually empty); ``case`` says how the file was
    broken, for example ``"shape element -0"``.
    """

    data: bytes
    rule: str
    case: str
    implies: frozenset[str] = frozenset()

    @property
    def reference_error(self) -> str | None:
        """The class safetensors 0.8.0 rejects the file with; None if it accepts it."""
        return lookup_rule(self.rule).reference_error


# Defects that break two rules at once, and why no single-rule file exists
# for them.  Property tests accept exactly these extra error slugs.
IMPLIED: Final = {
    "zero-sized tensor at offset near 2^64": (
        frozenset({"buffer-truncated"}),
        "a tensor that starts near 2^64 leaves a hole before it, and the file cannot reach its offset",
    ),
    "reversed offsets beginning near 2^64": (
        frozenset({"buffer-truncated"}),
        "the walk's cursor moves to the begin offset, which no real file reaches",
    ),
    "tensor entry is an array of the wrong length": (
        frozenset({"tensor-entry-array"}),
        "the array form is itself a strict-only finding; its length makes the entry unreadable",
    ),
}


# slug -> strategy of (bytes, case).  A meta-test checks that every error
# rule of the catalogue appears here.
CORRUPTIONS: Final[dict[str, Callable[[], st.SearchStrategy[tuple[bytes, str]]]]] = {
    **TEXT_CORRUPTIONS,
    **ENTRY_CORRUPTIONS,
}

# The catalogue's regions whose rules validate() checks on one file's bytes;
# every error rule in them has a corruption strategy above.
FILE_REGIONS: Final = frozenset({"prefix", "header", "entries", "layout"})
# Regions whose error rules no single file can break, and why.
OTHER_REGIONS: Final = {
    "index": "checked on a model.safetensors.index.json and the shards it names, not on one file",
    "integrity": "needs an expected digest from outside the file",
    "policy": "needs a user's policy; the default validation has none",
    "format": "the file is another format altogether, not a safetensors file with one defect",
    "folder": "about the other files and links of a folder that is walked, not about one file's bytes",
    "signature": "needs a model signature over a folder and a key to verify it with, not one file's bytes",
}


def corruptible_rules() -> tuple[str, ...]:
    """The slugs :func:`corrupted_files` can break: every error rule of a file's bytes.

    These are the error rules of the regions prefix, header, entries and
    layout, in catalogue order.
    """
    return tuple(r.slug for r in RULES if r.slug in CORRUPTIONS)


def _one(slug: str) -> st.SearchStrategy[CorruptedFile]:
    def wrap(pair: tuple[bytes, str]) -> CorruptedFile:
        implied = IMPLIED.get(pair[1], (frozenset(), ""))[0]
        return CorruptedFile(pair[0], slug, pair[1], implied)

    return CORRUPTIONS[slug]().map(wrap)


def corrupted_files(*, rule: str | st.SearchStrategy[str] | None = None) -> st.SearchStrategy[CorruptedFile]:
    """A strategy for files that break one rule, as :class:`CorruptedFile`.

    ``rule`` is a slug or code of an error rule of a file's bytes (see
    :func:`corruptible_rules`; for example ``"offsets-not-contiguous"`` or
    ``"ST401"``), a strategy of slugs, or None to draw from all of them.  Each file breaks that rule
    and, unless ``implies`` names more, no other error rule: the strict
    profile's error findings on it all carry the slug ``rule`` (warnings such
    as an unaligned header may come too).  For a rule that both profiles
    check, ``safetensors==0.8.0`` rejects the file with the rule's
    ``reference_error``; for a strict-only rule it accepts it.

    >>> from validator.strategies import corrupted_files
    >>> case = corrupted_files(rule="json-depth").example()
    >>> case.rule, case.data[:8] != b""
    ('json-depth', True)
    """
    if rule is None:
        return st.sampled_from(corruptible_rules()).flatmap(_one)
    if isinstance(rule, st.SearchStrategy):
        return rule.map(_resolve).flatmap(_one)
    return _one(_resolve(rule))


def _resolve(key: str) -> str:
    try:
        found = lookup_rule(key)
    except KeyError:
        raise InvalidArgument(f"rule={key!r} is not a rule of the catalogue") from None
    if found.slug not in CORRUPTIONS:
        kind = "a warning" if found.severity is Severity.WARNING else f"a rule of the {found.region} region"
        raise InvalidArgument(f"rule={key!r} is {kind}; corrupted_files draws error rules of a file's bytes only")
    return found.slug


# --- structure-blind mutations -----------------------------------------------

_LENGTHS: Final = (0, 1, 2, 7, 8, MAX_HEADER, MAX_HEADER + 1, U64_MAX, 1 << 63)


@st.composite
def _mutate(draw: st.DrawFn, data: bytes, donor: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["flip", "truncate", "splice", "prefix", "insert", "delete", "byte"]))
        n = len(buf)
        # Bias positions towards the prefix and header, where the structure is.
        header_end = min(n, 8 + int.from_bytes(bytes(buf[:8]).ljust(8, b"\0"), "little"))
        pos_st = st.one_of(st.integers(0, max(0, header_end)), st.integers(0, n)) if n else st.just(0)
        if op == "flip" and n:
            at = min(draw(pos_st), n - 1)
            buf[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "byte" and n:
            at = min(draw(pos_st), n - 1)
            buf[at] = draw(st.sampled_from(b' \t\n\r\x00"{}[],:0-9eE.\\u\xff\x80'))
        elif op == "truncate":
            del buf[draw(st.integers(0, n)) :]
        elif op == "splice" and donor:
            start = draw(st.integers(0, len(donor) - 1))
            chunk = donor[start : start + draw(st.integers(1, 32))]
            at = draw(pos_st)
            buf[at : at + (len(chunk) if draw(st.booleans()) else 0)] = chunk
        elif op == "prefix":
            old = int.from_bytes(bytes(buf[:8]).ljust(8, b"\0"), "little")
            new = draw(st.one_of(st.sampled_from(_LENGTHS), st.integers(max(0, old - 16), min(U64_MAX, old + 16))))
            buf[:8] = new.to_bytes(8, "little")
        elif op == "insert":
            at = draw(pos_st)
            buf[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete" and n:
            at = min(draw(pos_st), n - 1)
            del buf[at : at + draw(st.integers(1, 8))]
    return bytes(buf)


def mutated_files(*, files: st.SearchStrategy[bytes] | None = None) -> st.SearchStrategy[bytes]:
    """A strategy for structure-blind byte mutations of valid files.

    One to three mutations -- bit flips, byte edits, truncations, splices of
    another file's bytes, insertions and deletions (biased towards the
    prefix and header), edits of the length prefix to nearby and boundary
    values -- are applied to a file drawn from ``files`` (default: the bytes
    of :func:`valid_files` with up to 5 tensors; spliced bytes come from a
    second, smaller valid file).  The result may be valid or invalid: use it for
    differential tests, where two readers must agree.

    >>> from validator.strategies import mutated_files
    >>> isinstance(mutated_files().example(), bytes)
    True
    """
    source = _MUTATION_SOURCES if files is None else files
    if not isinstance(source, st.SearchStrategy):
        raise InvalidArgument(f"files={files!r} must be a strategy of bytes")
    return st.tuples(source, _DONORS).flatmap(lambda pair: _mutate(pair[0], pair[1]))


# Small files mutate as well as big ones and are much cheaper to draw.
_MUTATION_SOURCES: Final = valid_files(tensors=tensor_dicts(max_size=5)).map(lambda f: f.data)
_DONORS: Final = valid_files(tensors=tensor_dicts(max_size=2), metadata=None).map(lambda f: f.data)
