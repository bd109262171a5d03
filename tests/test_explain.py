# Strategy: `stcheck rules CODE|SLUG` explains every rule of the catalogue,
# and each bad example that is a file really breaks its rule (the command
# prints what the validator says on it, so a drifting example would show a
# wrong finding).
from __future__ import annotations

import json

import pytest

import validator
from validator import RULES, Profile
from validator.cli.main import main


@pytest.mark.parametrize("rule", [r for r in RULES if r.example and r.example.file()], ids=lambda r: r.slug)
def test_file_examples_break_their_rule(rule: validator.Rule) -> None:
    assert rule.example is not None
    data = rule.example.file()
    assert data is not None
    profile = "strict" if Profile.STRICT in rule.profiles else "reference"
    assert rule.slug in {f.slug for f in validator.validate(data, profile=profile).findings}


@pytest.mark.parametrize("key", ["ST401", "offsets-not-contiguous", "st401"])
def test_rules_code_explains(key: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", key]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ST401 offsets-not-contiguous: tensor leaves a hole or overlaps another tensor\n")
    # An installed user has no spec/ folder: the text says where the section is.
    spec = "Spec: the section #offsets-not-contiguous of SPEC.md, in stcheck's source tree"
    for part in ("Bad example:", "stcheck says:", "Fix:", spec):
        assert part in out
    assert "example.safetensors:" in out
    assert "ST401 offsets-not-contiguous 1 unindexed bytes" in out


def test_rules_code_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "file-is-git-lfs-pointer", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["code"], doc["slug"]) == ("ST115", "file-is-git-lfs-pointer")
    assert any("ST115 file-is-git-lfs-pointer" in line for line in doc["stcheck_says"])
    assert "git lfs pull" in doc["fix"]


def test_rules_unknown_code_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "ST999"]) == 2
    assert "unknown rule 'ST999'" in capsys.readouterr().err


def test_rules_for_a_scan_rule_describes_its_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "ST606"]) == 0
    out = capsys.readouterr().out
    assert "Bad example:\n    sha256 of the file differs" in out
    assert "stcheck says:" not in out


def test_spec_links_only_where_the_spec_is_hosted(monkeypatch) -> None:
    # stcheck has no fixed public address: no made-up URL in SARIF or `rules`.
    from validator.report import format_common, sarif

    monkeypatch.delenv("STCHECK_SPEC_URL", raising=False)
    assert all("helpUri" not in r for r in sarif.rules())
    assert format_common.spec_link("json-syntax") is None
    monkeypatch.setenv("STCHECK_SPEC_URL", "https://mirror.example/stcheck/spec/SPEC.md")
    (json_syntax,) = [r for r in sarif.rules() if r["name"] == "json-syntax"]
    assert json_syntax["helpUri"] == "https://mirror.example/stcheck/spec/SPEC.md#json-syntax"
