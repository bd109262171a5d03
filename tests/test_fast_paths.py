# Strategy: a differential test of the tiers against the tree path, the
# oracle (validator._tiers): the canonical tier, the one-pass exact reader
# (SCAN) and both together must give the whole Report the tree path gives
# (token-by-token parser, read_table over the tree), under both profiles.
# Random headers in the form the reference serializer writes, in spaced and
# indented variants, are generated and then mutated in small ways, and
# every hand-made test file is run in plain and spaced form.  The test also
# counts how often the canonical tier answered, so that it cannot pass by
# never taking it; tests/test_tiers.py covers hostile shapes and records
# the answering tier for each.
from __future__ import annotations

import json
import random
import struct

import pytest
from bad_input_cases import PATHOLOGICAL, VALID
from reference_cases import TABLE
from rule_cases import CASES

import validator
from validator._rules import Profile
from validator._tiers import Tier
from validator._validate import check_buffer

DTYPES = ["F32", "F16", "BF16", "U8", "I64", "F64", "F4", "F6_E2M3", "BOOL", "C64", "F8_E4M3", "X9"]
NAMES = [
    "w",
    "model.layers.0.mlp.up_proj.weight",
    "",
    "__metadata__",
    "a b",
    "\u00e9",
    "\u202e",
    "\x7f",
    "lm_head.weight",
]


def _shape(rng: random.Random) -> list[int]:
    pick = rng.random()
    if pick < 0.05:
        return [rng.choice([0, 2**63, 2**64 - 1, 10**19, 4294967296]) for _ in range(rng.randrange(1, 4))]
    return [rng.randrange(0, 5) if rng.random() < 0.1 else rng.randrange(1, 5) for _ in range(rng.randrange(0, 4))]


def _canonical_file(rng: random.Random) -> bytes:
    header: dict[str, object] = {}
    if rng.random() < 0.5:
        header["__metadata__"] = {
            rng.choice(["format", "a", ""]): rng.choice(["pt", "", "x,y", "\u00e9"]) for _ in range(rng.randrange(0, 3))
        }
    offset = 0
    dtypes = [rng.choice(DTYPES) if rng.random() < 0.3 else rng.choice(DTYPES[:6]) for _ in range(rng.randrange(1, 7))]
    if rng.random() < 0.8:  # the reference serializer's order: widest dtype first
        dtypes.sort(key=lambda d: -validator.DTYPE_BITS.get(d, 0))
    for i, dtype in enumerate(dtypes):
        shape = _shape(rng)
        bits = validator.DTYPE_BITS.get(dtype, 32)
        count = 1
        for d in shape:
            count *= d
        size = count * bits // 8 if count * bits < 2**64 else 4
        name = rng.choice(NAMES) if rng.random() < 0.2 else f"t{i}"
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    style = rng.random()
    separators = (",", ":") if style < 0.6 else (", ", ": ")
    indent = 1 if style > 0.9 else None
    raw = json.dumps(header, separators=separators, indent=indent, ensure_ascii=rng.random() < 0.5).encode()
    if rng.random() < 0.8:
        raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"\0" * min(offset, 4096)


def _mutate(rng: random.Random, blob: bytes) -> bytes:
    n = struct.unpack("<Q", blob[:8])[0]
    choice = rng.randrange(9)
    if choice == 0:
        return blob
    if choice == 1:  # one byte of the header
        i = rng.randrange(8, 8 + n) if n else 8
        return blob[:i] + bytes([rng.choice(b'0189,:[]{}" \\eE-.\x00\x7f')]) + blob[i + 1 :]
    if choice == 2:  # one more or one fewer data byte
        return blob + b"\0" if rng.random() < 0.5 else blob[:-1]
    if choice == 3:  # nudge a digit
        digits = [i for i in range(8, 8 + n) if 0x30 <= blob[i] <= 0x39]
        if not digits:
            return blob
        i = rng.choice(digits)
        return blob[:i] + bytes([0x30 + (blob[i] - 0x30 + rng.choice([1, 9])) % 10]) + blob[i + 1 :]
    if choice == 4:  # reorder the entries
        header = json.loads(blob[8 : 8 + n], object_pairs_hook=list)
        rng.shuffle(header)
        raw = json.dumps(dict(header), separators=(",", ":")).encode()
        raw += b" " * (-len(raw) % 8)
        return struct.pack("<Q", len(raw)) + raw + blob[8 + n :]
    if choice == 5:  # padding with another whitespace byte
        i = blob.rfind(b" ", 8, 8 + n)
        return blob if i < 0 else blob[:i] + rng.choice([b"\t", b"\n", b"\0"]) + blob[i + 1 :]
    if choice == 6:  # duplicate the first entry's name
        header = json.loads(blob[8 : 8 + n], object_pairs_hook=list)
        names = [k for k, _ in header if k != "__metadata__"]
        if len(names) < 2:
            return blob
        text = blob[8 : 8 + n].replace(json.dumps(names[1]).encode() + b":", json.dumps(names[0]).encode() + b":", 1)
        return struct.pack("<Q", len(text)) + text + blob[8 + n :]
    if choice == 8:  # leading whitespace, then padding to 8 again
        raw = rng.choice([b" ", b"\n", b"\t ", b"\r\n"]) + blob[8 : 8 + n].rstrip(b" ")
        raw += rng.choice([b" ", b"\t", b"\n"]) * (-len(raw) % 8)
        return struct.pack("<Q", len(raw)) + raw + blob[8 + n :]
    # unpadded header
    raw = blob[8 : 8 + n].rstrip(b" ")
    return struct.pack("<Q", len(raw)) + raw + blob[8 + n :]


def _run(blob: bytes, profile: str, tiers: Tier, answered: list[Tier] | None = None) -> validator.Report:
    return check_buffer(
        blob[:8], lambda n: blob[8 : 8 + n], len(blob), Profile(profile), tiers=tiers, answered=answered
    )


def _report(blob: bytes, profile: str, tiers: Tier) -> tuple[object, ...]:
    r = _run(blob, profile, tiers)
    tensors = None if r.tensors is None else dict(r.tensors.items())
    metadata = None if r.metadata is None else dict(r.metadata)
    return (r.findings, tensors, metadata, r.header_size, r.file_size, r.valid, r.suppressed)


def _spaced(blob: bytes) -> bytes:
    """The same file with ", " and ": " separators (the JSON path's input)."""
    if len(blob) < 8:
        return blob
    n = struct.unpack("<Q", blob[:8])[0]
    if n > len(blob) - 8:
        return blob
    header = blob[8 : 8 + n].replace(b'":', b'": ').replace(b',"', b', "')
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header + blob[8 + n :]


def _answered(blob: bytes, tiers: Tier = Tier.ALL) -> Tier | None:
    """The tier that answered for ``blob`` (None: the prefix alone decided)."""
    answered: list[Tier] = []
    _run(blob, "strict", tiers, answered)
    return answered[0] if answered else None


def _took_fast_path(blob: bytes) -> bool:
    return _answered(blob) is Tier.CANONICAL


def _assert_same(blob: bytes) -> None:
    for profile in ("strict", "reference"):
        exact = _report(blob, profile, Tier.NONE)
        for tiers in (Tier.SCAN, Tier.CANONICAL, Tier.ALL):
            assert _report(blob, profile, tiers) == exact, (tiers, blob)
        assert validator.validate(blob, profile=profile).findings == exact[0]


@pytest.mark.slow
def test_random_canonical_files_and_mutations_agree() -> None:
    rng = random.Random(7)
    fast = slow = 0
    for _ in range(4000):
        blob = _mutate(rng, _canonical_file(rng))
        _assert_same(blob)
        if _took_fast_path(blob):
            fast += 1
        else:
            slow += 1
    # Both paths must be exercised substantially.
    assert fast > 250, fast
    assert slow > 500, slow


HAND_MADE = [c.blob for c in CASES] + [c[1] for c in TABLE] + [c[1] for c in PATHOLOGICAL[:3]] + [VALID]


@pytest.mark.parametrize("blob", HAND_MADE)
def test_hand_made_files_agree(blob: bytes) -> None:
    _assert_same(blob)


@pytest.mark.parametrize("blob", [_spaced(b) for b in HAND_MADE])
def test_hand_made_files_with_spaced_separators_agree(blob: bytes) -> None:
    _assert_same(blob)


@pytest.mark.parametrize(
    "header",
    [
        '{"t": {"dtype": "F32", "shape": [[1]], "data_offsets": [0, 4]}}',
        '{"t": {"dtype": "F32", "shape": [{"a": 1}], "data_offsets": [0, 4]}}',
        '{"t": {"dtype": "F32", "shape": [0, 1180591620717411303424], "data_offsets": [0, 0]}}',
        '{"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}',
        '{"__metadata__": {"a": "1", "a": "2"}, "t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}',
        '{"__metadata__": {"a": 1}, "t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}',
        '{"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "dtype": "F32"}}',
        '{"t": {"dtype": "F32", "shape": [true], "data_offsets": [0, 4]}}',
        '{"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4.0]}}',
        '{"t": {"dtype": "F32", "shape": [1], "data_offsets": [-0, 4]}}',
        '{"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "__metadata__": null}',
        '{"t": {"shape": [1], "dtype": "F32", "data_offsets": [0, 4]}}',
        '{"b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "a": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}}',
        '{"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "u": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}',
        '{"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]} , "u": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]}}',
        '{"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}, "x": NaN}',
        # A kind equal to an earlier one as a dict key ((1,) == (1.0,) == (True,))
        # must not hide a float or bool dimension (found by the fuzz campaign).
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1.0],"data_offsets":[1,2]}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1e0],"data_offsets":[1,2]}}',
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[true],"data_offsets":[1,2]}}',
        '{"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "u": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}',
        '{"u": {"dtype": "F16", "shape": [2], "data_offsets": [4, 8]}, "t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}',
    ],
)
def test_json_path_hostile_headers_agree(header: str) -> None:
    raw = header.encode()
    raw += b" " * (-len(raw) % 8)
    for data in (b"", b"\0" * 4, b"\0" * 8):
        _assert_same(struct.pack("<Q", len(raw)) + raw + data)


def test_float_dimension_after_an_equal_int_kind_is_shape_invalid() -> None:
    raw = b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1.0],"data_offsets":[1,2]}}'
    raw += b" " * (-len(raw) % 8)
    blob = struct.pack("<Q", len(raw)) + raw + b"xy"
    for profile in ("strict", "reference"):
        report = validator.validate(blob, profile=profile)
        assert [f.slug for f in report.errors] == ["shape-invalid"]
        assert report.errors[0].tensor == "b"


def test_metadata_nested_past_the_c_scanner_limit_is_json_depth() -> None:
    # The canonical path reads __metadata__ with the C scanner, which raises
    # RecursionError past ~1000 levels; that must fall through to the exact
    # parser (found by the fuzz campaign).
    raw = b'{"__metadata__":{"k":' + b"[" * 2000 + b"]" * 2000 + b"}}"
    raw += b" " * (-len(raw) % 8)
    report = validator.validate(struct.pack("<Q", len(raw)) + raw)
    assert [f.slug for f in report.errors] == ["json-depth"]
    # The two objects are levels 1 and 2; the 126th '[' is level 128, the first refused.
    assert report.errors[0].offset == 8 + len(b'{"__metadata__":{"k":') + 125


def test_scan_answers_for_spaced_and_reordered_headers() -> None:
    header = '{"u": {"dtype": "F16", "shape": [2], "data_offsets": [4, 8]}, "t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'
    raw = header.encode() + b" " * (-len(header) % 8)
    blob = struct.pack("<Q", len(raw)) + raw + b"\0" * 8
    assert _answered(blob) is Tier.SCAN
    report = validator.validate(blob)
    assert report.findings == ()
    assert report.tensors is not None
    assert dict(report.tensors) == {
        "u": validator.TensorInfo("F16", (2,), (4, 8)),
        "t": validator.TensorInfo("F32", (1,), (0, 4)),
    }


def test_fast_path_answers_for_the_valid_fixture() -> None:
    assert _took_fast_path(VALID)
    report = validator.validate(VALID)
    assert report.tensors is not None
    assert dict(report.tensors) == {
        "a": validator.TensorInfo("F16", (2,), (0, 4)),
        "b": validator.TensorInfo("U8", (3,), (4, 7)),
    }
    assert "a" in report.tensors
    assert "zz" not in report.tensors
    assert report.metadata == {"k": "v"}
