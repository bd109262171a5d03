# Strategy: long runs and long strings (issue 21 item 15, issue 22), and
# the canonical tier's gate on long headers, against the tree path (the
# oracle, tests/tier_cases.py) and, where the tree path shares the code
# under test (the string reader), against safetensors 0.8.0; memory under an
# address-space cap.
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from tier_cases import ENTRY, _entries_text, _file, _run, _same_everywhere

import validator
from validator import _entries, _tiers
from validator._tiers import Tier
from validator.fuzz.targets import reference_load

ROOT = Path(__file__).resolve().parents[1]


def _padded(header: str, run: bytes, data: int = 4, *, align: bool = False) -> bytes:
    raw = header.encode() + run
    if align:  # a data region aligned to 8, as the canonical tier wants
        raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"\0" * data


LONG_PADDING = {
    "spaces": ("{" + _entries_text(1) + "}", b" " * 5000),
    "spaces_unaligned": ("{" + _entries_text(1) + "}", b" " * 5001),
    "tab_at_the_end": ("{" + _entries_text(1) + "}", b" " * 5000 + b"\t"),
    "tab_in_the_middle": ("{" + _entries_text(1) + "}", b" " * 2500 + b"\t" + b" " * 2500),
    "nul_at_the_end": ("{" + _entries_text(1) + "}", b" " * 5000 + b"\0"),
    "text_after": ("{" + _entries_text(1) + "}", b" " * 5000 + b"x"),
    "brace_after": ("{" + _entries_text(1) + "}", b" " * 5000 + b"}"),
    "empty_object": ("{}", b" " * 5000),
    "newlines": ("{" + _entries_text(1) + "}", b"\n" * 5000),
    "brace_in_a_name": ('{"a}":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', b" " * 5000),
    "metadata_first": ('{"__metadata__":{"k":"v"},' + _entries_text(1) + "}", b" " * 5000),
    "no_closing_brace": ("{" + _entries_text(1), b" " * 5000),
}


# What the tree path reports for each, unaligned (the run as given) and aligned.
LONG_PADDING_FINDINGS = {
    "tab_at_the_end": ["header-padding"],
    "tab_in_the_middle": ["header-padding"],
    "nul_at_the_end": ["header-trailing-bytes"],
    "text_after": ["header-trailing-bytes"],
    "brace_after": ["header-trailing-bytes"],
    "newlines": ["header-padding"],
    "no_closing_brace": ["json-syntax"],
    "empty_object": ["buffer-trailing-bytes"],
}


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("name", list(LONG_PADDING))
def test_long_padding_runs_agree_with_the_tree_path(name: str, align: bool) -> None:
    # A run of more than _LONG_PADDING spaces after the last '}' is checked
    # by one count and left out of the canonical tier's split; the exact
    # path checks space-only padding by one count too.
    header, run = LONG_PADDING[name]
    blob = _padded(header, run, align=align)
    tier = _same_everywhere(blob)
    if align and name in {"spaces", "brace_in_a_name", "metadata_first"}:
        assert tier is Tier.CANONICAL
    slugs = [f.slug for f in validator.validate(blob).findings if not f.slug.endswith("-unaligned")]
    assert slugs == LONG_PADDING_FINDINGS.get(name, [])


def test_long_padding_put_back_when_the_canonical_tier_declines() -> None:
    # Above _HOLD_ONCE the tier drops the bytes; it decodes only what comes
    # before the run, so the bytes it puts back must bring the run back: the
    # exact path reports the unclosed object at the end of the whole header.
    run = b" " * (_tiers._HOLD_ONCE + 64)
    blob = _padded('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}', run, align=True)
    answered, (findings, *_) = _run(blob, "strict", Tier.ALL)
    assert answered is Tier.SCAN
    assert [(f.slug, f.offset) for f in findings] == [("json-syntax", len(blob) - 4)]  # type: ignore[attr-defined]


LONG = "x" * 5000  # past _json._LONG_STRING: read by one C pass, not a regex
LONG_BODIES = {
    "plain": LONG,
    "control_in_the_middle": LONG[:2500] + "\x01" + LONG[:2500],
    "control_at_the_end": LONG + "\x1f",
    "tab_raw": LONG + "\t",
    "escapes": LONG + "\\n\\u00e9" + LONG,
    "surrogate_pair": LONG + "\\ud83d\\ude00",
    "lone_surrogate": LONG + "\\ud83d" + LONG,
    "lone_surrogate_upper_case": LONG + "\\n\\uDC00" + LONG,
    "escaped_backslash_then_ud800": LONG + "\\\\ud800" + LONG,
    "bad_escape": LONG + "\\x41",
    "escaped_quote_far": LONG + '\\"' + LONG,
    "escaped_backslash_at_the_end": LONG + "\\\\",
    "del": LONG + "\x7f",
    "escaped_control": LONG + "\\u0001",
    "non_ascii": LONG + "\u00e9\u202e",
}
LONG_PLACES = {
    "tensor_name": '{{"{}":{{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}}}',
    "metadata_value": '{{"__metadata__":{{"k":"{}"}},"a":{{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}}}',
    "metadata_key": '{{"__metadata__":{{"{}":"v"}},"a":{{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}}}',
    "unknown_field_value": '{{"a":{{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":"{}"}}}}',
    "unknown_field_key": '{{"a":{{"dtype":"F32","shape":[1],"data_offsets":[0,4],"{}":1}}}}',
    "dtype": '{{"a":{{"dtype":"{}","shape":[1],"data_offsets":[0,4]}}}}',
    "root": '"{}"',
    "nested_in_unknown_field": '{{"a":{{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":[["{}"]]}}}}',
}


@pytest.mark.parametrize("body", list(LONG_BODIES))
@pytest.mark.parametrize("place", list(LONG_PLACES))
def test_long_strings_agree_with_the_tree_path(place: str, body: str) -> None:
    # The tree path shares the string reader, so safetensors 0.8.0 is the
    # oracle here too.
    blob = _file(LONG_PLACES[place].format(LONG_BODIES[body]), b"\0" * 4)
    _same_everywhere(blob)
    theirs, _ = reference_load(blob)
    assert validator.validate(blob, profile="reference").reference_error == theirs


def test_long_strings_get_their_findings() -> None:
    def slugs(place: str, body: str) -> list[str]:
        blob = _file(LONG_PLACES[place].format(LONG_BODIES[body]), b"\0" * 4)
        return [f.slug for f in validator.validate(blob).findings]

    assert slugs("tensor_name", "plain") == []
    assert slugs("tensor_name", "del") == ["tensor-name-suspicious"]
    assert slugs("tensor_name", "escaped_control") == ["tensor-name-suspicious"]
    assert slugs("tensor_name", "non_ascii") == ["tensor-name-suspicious"]
    assert slugs("unknown_field_value", "control_in_the_middle") == ["json-string"]
    assert slugs("metadata_value", "lone_surrogate") == ["json-string"]
    assert slugs("metadata_value", "escapes") == []
    report = validator.validate(_file(LONG_PLACES["metadata_value"].format(LONG_BODIES["surrogate_pair"]), b"\0" * 4))
    assert report.metadata == {"k": LONG + "\U0001f600"}


def test_the_ascii_shortcut_for_long_names_flags_what_the_rule_flags() -> None:
    for code in range(0x80):
        name = "x" * (_entries._LONG_NAME + 1) + chr(code)
        assert _entries.suspicious(name) is (_entries.SUSPICIOUS.search(name) is not None), hex(code)


_CAPPED = r"""
import json, resource, sys
import validator
def vm(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
path, size = sys.argv[1], int(sys.argv[2])
base = vm("VmSize:")
cap = base + 4 * size + (64 << 20)
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
report = validator.validate(path)
print(json.dumps([f.slug for f in report.findings]))
"""
_BIG = 16_000_000
BIG_CAPPED = {
    "long-name": (b'{"' + b"x" * _BIG + b'":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', []),
    "long-metadata-value": (
        b'{"__metadata__":{"k":"' + b"x" * _BIG + b'"},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
        [],
    ),
    "long-escaped-value": (
        b'{"__metadata__":{"k":"' + b"x\\n" * (_BIG // 3) + b'"},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
        [],
    ),
    "long-unknown-field": (
        b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":"' + b"x" * _BIG + b'"}}',
        ["tensor-field-unknown"],
    ),
    "long-padding": (b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}' + b" " * _BIG, []),
}


@pytest.mark.parametrize("name", list(BIG_CAPPED))
def test_long_strings_and_padding_stay_within_four_times_the_header(name: str, tmp_path: Path) -> None:
    header, slugs = BIG_CAPPED[name]
    header += b" " * (-len(header) % 8)
    path = tmp_path / "big.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-c", _CAPPED, str(path), str(len(header))],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout) == slugs


@pytest.mark.parametrize("count", [9_000, 40_000, 60_001, 100_003])
def test_the_sampled_gate_admits_long_plain_tables(count: int) -> None:
    # Above three times _GATE_SIZE, the gate counts the first and the last
    # _GATE_SIZE bytes only; its ranges cut entries anywhere, which must not
    # refuse a plain table (a refusal only costs time, so only the answering
    # tier shows it).
    for name in ("t{}", "model.layers.{}.self_attn.q_proj.weight", "x-{}-\u00e9"):
        blob = _file("{" + _entries_text(count, name) + "}", b"\0" * (4 * count))
        assert (len(blob) > 3 * _tiers._GATE_SIZE) is (count > 9_000)
        answered, (findings, *_) = _run(blob, "strict", Tier.ALL)
        assert (answered, findings) == (Tier.CANONICAL, ()), name


def test_the_sampled_gate_refuses_what_the_whole_gate_refuses_at_its_ends() -> None:
    plain = _entries_text(30_000)
    nested = ',"z":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":' + "[" * 100 + "]" * 100 + "}"
    for text in ("{" + plain + nested + "}", "{" + ENTRY.format("a", 0, 4) + nested + "," + plain[1:] + "}"):
        blob = _file(text, b"\0" * 4)
        n = len(blob) - 12
        assert not _tiers._gated(blob[8 : 8 + n], n, metadata=False)
