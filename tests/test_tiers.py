# Strategy: the tiers of validator._tiers against the tree path, the oracle
# (the whole header through the token-by-token parser, read_table over the
# tree).  For every input the canonical tier, the one-pass reader (SCAN)
# and both together must give the Report the tree path gives, under both
# profiles; the tier that answered is recorded, and each tier must answer
# for some inputs.  Inputs: small versions of the hostile shapes of
# tests/benchmarks/bench_hostile.py, mutated at random; generated and
# corpus files; and every code point the suspicious-name rule flags.
from __future__ import annotations

import random
import re
import struct
from collections import Counter
from pathlib import Path

import pytest
from tier_cases import ENTRY, _entries_text, _file, _run, _same_everywhere

import validator
from validator import _entries, _header, _table, _tiers
from validator._rules import Profile
from validator._tiers import Tier

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


# Small versions of the hostile benchmark shapes, each a valid or invalid file.
HOSTILE = {
    "numbers_in_unknown_field": _file(
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":[' + "1,-2.5e3,0," * 50 + "7]}}", b"\0"
    ),
    "nested_arrays_in_unknown_field": _file(
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":[' + ("[" * 100 + "1" + "]" * 100 + ",") * 5 + "1]}}",
        b"\0",
    ),
    "nesting_128_repeated": _file('{"x":[' + ("[" * 128 + "]" * 128 + ",") * 3 + "1]}"),
    "nesting_126_in_metadata": _file('{"__metadata__":{"k":' + "[" * 126 + "]" * 126 + "}}"),
    "unknown_dtype_in_middle": _file("{" + _entries_text(40).replace('"F32"', '"f32"', 1) + "}", b"\0" * 160),
    "stray_bytes_after_last": _file("{" + _entries_text(40) + "}", b"\0" * 162),
    "hole_in_middle": _file("{" + _entries_text(40).replace("[80,84]", "[80,88]") + "}", b"\0" * 160),
    "names_minus_zero_surrogates": _file("{" + _entries_text(40, "layer-0.\\ud83d\\ude00.{}") + "}", b"\0" * 160),
    "lone_surrogate_name": _file("{" + _entries_text(3, "x\\ud83d{}") + "}", b"\0" * 12),
    "metadata_escaped_string": _file(
        '{"__metadata__":{"k":"' + "\\u00e9" * 3000 + '"},' + _entries_text(1) + "}", b"\0" * 4
    ),
    "duplicate_metadata_keys": _file(
        '{"__metadata__":{' + '"k":"v",' * 3000 + '"k":"w"},' + _entries_text(1) + "}", b"\0" * 4
    ),
    "duplicate_tensor_names": _file("{" + ",".join([ENTRY.format("a", 0, 4)] * 3000) + "}", b"\0" * 4),
    "unknown_fields_in_one_entry": _file(
        '{"a":{' + '"k":1,' * 3000 + '"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\0"
    ),
    "escaped_field_name": _file(
        '{"a":{' + '"k":1,' * 10 + '"\\u0064type":"U8","shape":[1],"data_offsets":[0,1]}}', b"\0"
    ),
    "escaped_metadata_key": _file('{"\\u005f_metadata__":{"k":"v"},' + _entries_text(1) + "}", b"\0" * 4),
    "shape_of_ones": _file('{"a":{"dtype":"U8","shape":[' + ",".join(["1"] * 5000) + '],"data_offsets":[0,1]}}', b"\0"),
    "shape_of_twos": _file('{"a":{"dtype":"U8","shape":[' + ",".join(["2"] * 70) + '],"data_offsets":[0,1]}}', b"\0"),
    "empty_arrays_in_unknown_field": _file(
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":[' + "[]," * 3000 + "{}]}}", b"\0"
    ),
    "sorted_keys": _file('{"a":{"data_offsets":[0,4],"dtype":"F32","shape":[1]}}', b"\0" * 4),
    "spaced": _file(
        "{"
        + ", ".join(
            f'"t{i}": {{"dtype": "F32", "shape": [1], "data_offsets": [{4 * i}, {4 * i + 4}]}}' for i in range(40)
        )
        + "}",
        b"\0" * 160,
    ),
    "float_near_max": _file('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"j":1.7976931348623158e308}}', b"\0"),
    "root_array": _file("[" + "1," * 100 + "2]"),
    "metadata_number_values": _file(
        '{"__metadata__":{' + '"k":1,' * 20 + '"z":"v"},' + _entries_text(1) + "}", b"\0" * 4
    ),
}

# Tokens a mutation splices in: the JSON grammar's edges and this format's.
TOKENS = [b"[", b"]", b"{", b"}", b",", b":", b'"', b"\\", b"-0", b"1e999", b"1.7976931348623158e308", b"\\ud800",
          b'"dtype"', b'"shape"', b'"data_offsets"', b'"__metadata__"', b"null", b"[]", b" ", b"\t", b"\x00", b"01"]  # fmt: skip


def _mutate(rng: random.Random, blob: bytes) -> bytes:
    n = struct.unpack("<Q", blob[:8])[0]
    header, data = bytearray(blob[8 : 8 + n]), blob[8 + n :]
    for _ in range(rng.randrange(1, 3)):
        i = rng.randrange(len(header) + 1)
        op = rng.randrange(3)
        if op == 0:
            header[i:i] = rng.choice(TOKENS)
        elif op == 1:
            del header[i : i + rng.randrange(1, 4)]
        else:
            header[i : i + 1] = rng.choice(TOKENS)
    if rng.random() < 0.5:
        header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + bytes(header) + data


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_shapes_agree_across_tiers(name: str) -> None:
    _same_everywhere(HOSTILE[name])


def test_mutated_hostile_shapes_agree_across_tiers() -> None:
    rng = random.Random(5)
    tiers: Counter[Tier | None] = Counter()
    for i in range(700):
        blob = _mutate(rng, HOSTILE[list(HOSTILE)[i % len(HOSTILE)]])
        tiers[_same_everywhere(blob)] += 1
    assert tiers[Tier.SCAN] > 300


def test_corpus_files_agree_across_tiers() -> None:
    seen: Counter[Tier | None] = Counter()
    for path in sorted(CORPUS.glob("*.safetensors")):
        seen[_same_everywhere(path.read_bytes())] += 1
    assert seen[Tier.CANONICAL], seen
    assert seen[Tier.SCAN], seen


@pytest.mark.parametrize(
    ("blob", "tier", "valid"),
    [
        (_file("{" + _entries_text(3) + "}", b"\0" * 12), Tier.CANONICAL, True),
        # A layout-only finding is answered from the canonical tier's columns.
        (_file("{" + _entries_text(3) + "}", b"\0" * 14), Tier.CANONICAL, False),
        (HOSTILE["spaced"], Tier.SCAN, True),
        # An unknown dtype too: the canonical tier locates it from its columns.
        (HOSTILE["unknown_dtype_in_middle"], Tier.CANONICAL, False),
        (HOSTILE["duplicate_tensor_names"], Tier.SCAN, False),
        (b"\x01\x00\x00\x00\x00\x00\x00", None, False),
    ],
)
def test_the_answering_tier_is_recorded(blob: bytes, tier: Tier | None, valid: bool) -> None:
    answered, report = _run(blob, "strict", Tier.ALL)
    assert answered is tier
    assert report[3] is valid
    assert _run(blob, "strict", Tier.NONE)[0] is (None if tier is None else Tier.NONE)
    assert _run(blob, "strict", Tier.SCAN)[0] is (None if tier is None else Tier.SCAN)


def test_layout_only_finding_is_not_reparsed(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_: object, **__: object) -> None:
        pytest.fail("the header was parsed again")

    monkeypatch.setattr("validator._validate.check_header", fail)
    report = validator.validate(_file("{" + _entries_text(3) + "}", b"\0" * 14))
    assert [f.slug for f in report.errors] == ["buffer-trailing-bytes"]


def _suspicious_chars() -> list[str]:
    chars = []
    for code in range(0x110000):
        c = chr(code)
        if 0xD800 <= code <= 0xDFFF:
            continue
        if _entries.SUSPICIOUS.match(c):
            chars.append(c)
    return chars


def test_every_flagged_character_is_flagged_by_every_tier() -> None:
    # The tiers import the rule's regex; if one kept a copy and the copy
    # drifted, a character would be flagged by one path and not another.
    assert _tiers.SUSPICIOUS is _entries.SUSPICIOUS
    assert _header.SUSPICIOUS is _entries.SUSPICIOUS
    chars = _suspicious_chars()
    assert len(chars) > 40
    for c in chars:
        name = c if ord(c) >= 0x20 else f"\\u{ord(c):04x}"
        blob = _file('{"a' + name + '":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', b"\0" * 4)
        for tiers in (Tier.ALL, Tier.CANONICAL, Tier.SCAN, Tier.NONE):
            findings = _run(blob, "strict", tiers)[1][0]
            assert [f.slug for f in findings] == ["tensor-name-suspicious"], (hex(ord(c)), tiers)  # type: ignore[attr-defined]


def test_neighbours_of_flagged_ranges_are_not_flagged() -> None:
    chars = {ord(c) for c in _suspicious_chars()}
    near = {c + d for c in chars for d in (-1, 1)} - chars - {0x22, 0x5C} - set(range(0xD800, 0xE000))
    near = sorted(c for c in near if 0x20 <= c < 0x110000)
    for code in near:
        blob = _file('{"a' + chr(code) + '":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', b"\0" * 4)
        for tiers in (Tier.ALL, Tier.SCAN):
            assert _run(blob, "strict", tiers)[1][0] == (), hex(code)


def test_size_arithmetic_has_one_source() -> None:
    # Both tiers size tensors through validator._layout.size_of.
    for module in (_tiers, _table):
        source = Path(module.__file__).read_text()  # type: ignore[arg-type]
        assert "size_of(" in source
        assert re.search(r"count \*= dim|\* bits\b", source) is None, module.__name__


@pytest.mark.parametrize(
    "shape", ["", "1", "1,1,1", "11", "1,11", "11,1", "1,0", "0", "10,1", "1,1,2", "2", "1,111,1", "1" * 30]
)
@pytest.mark.parametrize("dtype", ["F32", "BOOL", "F4", "F8_E4M3", "C64"])
def test_kind_size_of_ones_shortcut_equals_the_product(dtype: str, shape: str) -> None:
    # kind_size skips shapes of only ones in C; every other shape is multiplied out.
    dims = tuple(int(d) for d in shape.split(",")) if shape else ()
    assert _tiers.kind_size(dtype + _tiers._KIND_CUT + shape) == _tiers.size_of(dtype, dims)


def test_plain_metadata_pairs_split_at_quotes_agree_with_the_tree_path() -> None:
    # _header reads runs of plain pairs ('"k":"v",' with optional spaces) by
    # splitting at the quotes; duplicates within a run, across runs, past the
    # per-rule cap, mixed spacing, non-ASCII and empty strings included.
    rng = random.Random(11)
    for trial in range(60):
        count = rng.choice([1, 3, 50, 2100, 4500])
        keys = [rng.choice(["k", "é", "", "key-0", f"k{rng.randrange(40)}", f"u{trial}-{i}"]) for i in range(count)]
        parts = []
        for key in keys:
            colon = rng.choice([":", ": "])
            comma = rng.choice([",", ", "])
            parts.append(f'"{key}"{colon}"{rng.choice(["v", "", "ü", key])}"{comma}')
        text = '{"__metadata__":{' + "".join(parts) + '"last":"x"},' + _entries_text(1) + "}"
        _same_everywhere(_file(text, b"\0" * 4))


def test_long_header_let_go_and_put_back_when_the_canonical_tier_declines() -> None:
    # Above _HOLD_ONCE the canonical tier drops the header bytes while it
    # works on the text; when it then declines (here: a suspicious name,
    # found after decoding), the bytes are put back for the exact reader.
    value = "a" * (_tiers._HOLD_ONCE + 1024)
    name = "w\u202eb"
    text = '{"__metadata__":{"k":"' + value + '"},' + ENTRY.format(name, 0, 4) + "}"
    blob = _file(text, b"\0" * 4)
    assert _same_everywhere(blob) is Tier.SCAN
    answered, (findings, tensors, metadata, valid, _) = _run(blob, "strict", Tier.ALL)
    assert answered is Tier.SCAN
    assert valid  # the suspicious name is a warning
    assert [f.slug for f in findings] == ["tensor-name-suspicious"]
    assert metadata == {"k": value}
    assert tensors is not None
    assert list(tensors) == [name]


# --- the small-file fast paths (issue 22) --------------------------------------

FIELDS_IN_ANY_ORDER = [
    '{"a":{"shape":[2],"dtype":"F32","data_offsets":[0,8]}}',
    '{"a":{"data_offsets":[0,8],"shape":[2],"dtype":"F32"}}',
    '{"a":{"data_offsets" : [ 0 , 8 ] ,\n "shape":[ 2 ],"dtype" :"F32"}}',
    '{"a":{"shape":[],"data_offsets":[0,4],"dtype":"F32"}}',
    '{"a":{"shape":[2],"shape":[2],"dtype":"F32","data_offsets":[0,8]}}',  # duplicate field
    '{"a":{"shape":[2],"dtype":"F32","dtype":"F16","data_offsets":[0,8]}}',
    '{"a":{"shape":[2],"dtype":"f32","data_offsets":[0,8]}}',  # unknown dtype
    '{"a":{"shape":[2],"dtype":"F\u00e9","data_offsets":[0,8]}}',
    '{"a":{"shape":[2],"dtype":"F32","data_offsets":[0,8,9]}}',
    '{"a":{"shape":[2],"dtype":"F32","data_offsets":[0]}}',
    '{"a":{"shape":[2],"dtype":"F32","data_offsets":[]}}',
    '{"a":{"shape":[2],"dtype":"F32","data_offsets":[18446744073709551615,8]}}',  # 2^64-1: a u64
    '{"a":{"shape":[2],"dtype":"F32","data_offsets":[18446744073709551616,8]}}',  # 2^64: not one
    '{"a":{"shape":[99999999999999999999],"dtype":"F32","data_offsets":[0,8]}}',
    '{"a":{"shape":[123456789012345678901],"dtype":"F32","data_offsets":[0,8]}}',  # 21 digits
    '{"a":{"shape":[01],"dtype":"F32","data_offsets":[0,8]}}',
    '{"a":{"shape":[2.0],"dtype":"F32","data_offsets":[0,8]}}',
    '{"a":{"shape":[2e0],"dtype":"F32","data_offsets":[0,8]}}',
    '{"a":{"shape":[-0],"dtype":"F32","data_offsets":[0,8]}}',
    '{"a":{"shape":[2,],"dtype":"F32","data_offsets":[0,8]}}',
    '{"a":{"shape":[2]"dtype":"F32","data_offsets":[0,8]}}',
    '{"a":{"shape":[2],"dtype":"F32","data_offsets":[0,8]',
    '{"a":{"shape":[2],"dtype":"F32","data_offsets":[0,8]]}',
    '{"a":{"shape":[2],"dtype":"F32","data_offsets":[0,8],"x":1}}',
    '{"a":{"shape":[2],"\\u0064type":"F32","data_offsets":[0,8]}}',
    '{"a":{"shape":[2],"dtype":"F\\u0033\\u0032","data_offsets":[0,8]}}',
    '{"a":{"shape":[2],"dtype":["F32"],"data_offsets":[0,8]}}',
    '{"a":{"shape":[2],"dtype":"F32","data_offsets":[8,0]}}',
]


@pytest.mark.parametrize("header", FIELDS_IN_ANY_ORDER)
def test_known_fields_in_any_order_agree_with_the_tree_path(header: str) -> None:
    # _header.entry_object takes dtype, shape and data_offsets of a usual
    # spelling by one regex; anything else goes through the exact parser.
    assert _same_everywhere(_file(header, b"\0" * 8)) in {Tier.SCAN, None}


DEEP_CLOSERS = [
    '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":' + "[" * 120 + "]" * 120 + "}}",
    '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":' + "[" * 125 + "]" * 125 + "}}",  # depth 127
    '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":' + "[" * 126 + "]" * 126 + "}}",  # depth 128
    '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":' + "[{" * 40 + '"k":1' + "}]" * 40 + "}}",
    '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":' + "[" * 50 + "]" * 49 + "}}}",  # mismatch
    '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":' + "[" * 50 + "]" * 51 + "}}",  # one too many
    '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":' + "[" * 50 + "] " * 50 + "}}",  # spaced
    '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":' + "[" * 50 + "]" * 50 + " }}",
    '{"__metadata__":{"k":' + "[" * 100 + "]" * 100 + "}," + ENTRY.format("a", 0, 4) + "}",
]


@pytest.mark.parametrize("header", DEEP_CLOSERS)
def test_closing_runs_past_the_skipped_value_agree_with_the_tree_path(header: str) -> None:
    # _json.skip ends a value whose closing run goes on into the containers
    # around it in one step instead of one bracket at a time.
    _same_everywhere(_file(header, b"\0" * 4))


@pytest.mark.parametrize(
    "offsets",
    [
        "[0,4],[4,8]",
        "[0,4],[4,9]",
        "[0,04],[4,8]",  # a leading zero: not JSON
        "[00,4],[4,8]",
        "[0,4],[4,8]]",
        "[0,4],[5,9]",
        "[4,8],[0,4]",
        "[0,4],[4,18446744073709551615]",
        "[0,4],[4,18446744073709551616]",
    ],
)
def test_canonical_offsets_spelling_agrees_with_the_tree_path(offsets: str) -> None:
    # The canonical tier compares the offsets text with str() of the running
    # sums, once for the whole table.
    first, second = offsets.split("],[")
    text = "{" + ENTRY.format("a", 0, 4).replace("[0,4]", first + "]") + ","
    text += ENTRY.format("b", 4, 8).replace("[4,8]", "[" + second) + "}"
    _same_everywhere(_file(text, b"\0" * 8))


def test_long_shapes_take_the_ones_shortcut_and_agree() -> None:
    for dims in (["1"] * 40, ["1"] * 30 + ["2"], ["2"] * 40, ["1", "11"] * 20, ["0"] + ["1"] * 40):
        shape = ",".join(dims)
        assert len(shape) > _tiers._SHORT_SHAPE or dims == ["1"] * 30 + ["2"]
        expected = _tiers.size_of("F32", tuple(map(int, dims)))
        assert _tiers.kind_size("F32" + _tiers._KIND_CUT + shape) == expected, shape


def test_a_finding_free_report_equals_the_dataclass_construction() -> None:
    from validator._findings import Report, TensorTable, report_of

    table = TensorTable.of({"a": validator.TensorInfo("F32", (1,), (0, 4))})
    for findings in ((), validator.validate(_file('{"a":1}')).findings):
        for verdict in ((True, None), (False, "InvalidOffset"), (None, None)):
            args = (Profile.REFERENCE, findings, 12, 8, table, {"k": "v"}, "p", 3, *verdict)
            fast, slow = report_of(*args), Report(*args)
            assert fast == slow
            assert vars(fast) == vars(slow)
            assert type(fast) is Report
            assert fast.reference_error == slow.reference_error
            assert all(f.path == "p" for f in fast.findings)  # named by the report's path, as __post_init__ does
        fast, slow = report_of(*args), Report(*args)
        assert fast == slow
        assert vars(fast) == vars(slow)
        assert type(fast) is Report


def _canonical(rows: list[tuple[str, str, str, str]], data: int, extra: int = 0) -> bytes:
    """A canonical header of (name, dtype, shape, "begin,end") rows and ``data`` + ``extra`` data bytes."""
    entries = [f'"{n}":{{"dtype":"{d}","shape":[{s}],"data_offsets":[{o}]}}' for n, d, s, o in rows]
    return _file("{" + ",".join(entries) + "}", b"\0" * (data + extra))


UNKNOWN_DTYPE_LAYOUTS = {
    "middle": [("a", "F32", "2", "0,8"), ("b", "X9", "2", "8,16"), ("c", "F32", "1", "16,20")],
    "first": [("a", "X9", "3", "0,5"), ("b", "U8", "1", "5,6")],
    "last": [("a", "U8", "1", "0,1"), ("b", "f32", "", "1,9")],
    "two_of_one_kind": [("a", "X9", "2", "0,3"), ("b", "U8", "1", "3,4"), ("c", "X9", "2", "4,40")],
    "empty_span": [("a", "U8", "1", "0,1"), ("b", "X9", "7", "1,1"), ("c", "U8", "1", "1,2")],
    "reversed_span": [("a", "U8", "1", "0,1"), ("b", "X9", "1", "5,1"), ("c", "U8", "1", "1,2")],
    "hole_after": [("a", "U8", "1", "0,1"), ("b", "X9", "1", "1,3"), ("c", "U8", "1", "4,5")],
    "overlap": [("a", "U8", "4", "0,4"), ("b", "X9", "1", "2,3"), ("c", "U8", "1", "3,4")],
    "misaligned_after": [("a", "X9", "1", "0,3"), ("b", "F32", "1", "3,7")],
    "leading_zero": [("a", "U8", "1", "0,1"), ("b", "X9", "1", "01,2")],
    "past_u64": [("a", "U8", "1", "0,1"), ("b", "X9", "1", "1,18446744073709551616")],
    "u64_max": [("a", "U8", "1", "0,1"), ("b", "X9", "1", "1,18446744073709551615")],
    "wrong_size_elsewhere": [("a", "U8", "2", "0,1"), ("b", "X9", "1", "1,2")],
}


@pytest.mark.parametrize("name", list(UNKNOWN_DTYPE_LAYOUTS))
@pytest.mark.parametrize("extra", [0, 3])
def test_unknown_dtype_rows_on_the_running_sums_agree_with_the_tree_path(name: str, extra: int) -> None:
    # The canonical tier takes an unknown dtype's declared span as its size
    # in the running-sum check; every other layout goes to validator._layout.
    rows = UNKNOWN_DTYPE_LAYOUTS[name]
    end = max(int(o.split(",")[1]) for *_, o in rows)
    blob = _canonical(rows, min(end, 64), extra)
    assert _same_everywhere(blob) is Tier.CANONICAL or name in {"leading_zero", "past_u64", "u64_max"}


def test_the_unknown_dtype_row_does_not_send_the_layout_to_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_: object, **__: object) -> None:
        pytest.fail("the layout was walked")

    monkeypatch.setattr("validator._validate.check_layout", fail)
    report = validator.validate(_canonical(UNKNOWN_DTYPE_LAYOUTS["middle"], 20))
    assert [(f.slug, f.tensor) for f in report.findings] == [("dtype-unknown", "b")]
    assert list(report.tensors or {}) == ["a", "c"]


def test_offsets_summing_past_u64_are_offsets_invalid_in_every_tier() -> None:
    # Nine tensors of 2^61-1 bytes each: every size is a u64, their running
    # sum is not.  The canonical tier once took the text for running sums and
    # reported buffer-truncated (MetadataIncompleteBuffer); safetensors and
    # the exact path read 2^64+ as a float: offsets-invalid.
    size = 2**61 - 1
    rows = [(f"t{i}", "U8", str(size), f"{i * size},{(i + 1) * size}") for i in range(9)]
    blob = _canonical(rows, 0)
    _same_everywhere(blob)
    report = validator.validate(blob, profile="reference")
    assert report.first_error is not None
    assert (report.first_error.slug, report.first_error.tensor) == ("offsets-invalid", "t8")
    assert report.reference_error == "InvalidHeaderDeserialization"


@pytest.mark.parametrize("char", ["\x00", "\x01", "\t", "\n", "\x1f"])
@pytest.mark.parametrize("where", ["dtype", "name"])
def test_a_raw_control_character_in_a_canonical_string_is_json_string(char: str, where: str) -> None:
    # The canonical tier's dtype class once took raw control characters, and
    # reported dtype-unknown where the exact path (and safetensors) refuse
    # the JSON string.
    name, dtype = ("a", f"F{char}32") if where == "dtype" else (f"a{char}", "F32")
    blob = _file(f'{{"{name}":{{"dtype":"{dtype}","shape":[1],"data_offsets":[0,4]}}}}', b"\0" * 4)
    _same_everywhere(blob)
    [finding] = validator.validate(blob).findings
    assert finding.slug == "json-string"
    assert finding.offset == 8 + blob[8:].index(char.encode())
