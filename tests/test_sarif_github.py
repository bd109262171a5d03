# Strategy: SARIF as GitHub code scanning uses it (issue 24).  Locations are
# relative to the repository (uriBaseId %SRCROOT%) for every path below the
# working directory, a missing file's included; partialFingerprints are
# stable from run to run, unique within one, and never hold Python's None;
# every rule carries a full description and help text with the fix that
# `stcheck rules CODE` prints, and links only where STCHECK_SPEC_URL names a
# real address.  Every log validates against the vendored SARIF 2.1.0 schema.
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from scan_fixtures import build, clean_file, f32, sha256, write

from validator._rules import RULES
from validator.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
SARIF_SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text())


def sarif(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    main(["scan", "--no-config", "--progress", "never", "-j", "1", "--format", "sarif", *argv])
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(doc)
    return doc


@pytest.fixture
def many(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """50 files with the same findings at the same places: a run where
    fingerprints made of rule, tensor and offset alone collide."""
    monkeypatch.chdir(tmp_path)
    for i in range(25):
        write(tmp_path / "m" / f"trailing{i:02}.safetensors", clean_file() + b"\0")
        write(tmp_path / "m" / f"unlisted{i:02}.safetensors", build([("w", "F32", [1], f32(1.0))]))
    digest = sha256(clean_file() + b"\0")
    lines = "".join(f"{digest}  trailing{i:02}.safetensors\n" for i in range(25))
    write(tmp_path / "m" / "SHA256SUMS", (lines + f"{'0' * 64}  gone.safetensors\n").encode())
    return tmp_path


def test_a_missing_listed_file_has_a_repository_relative_location(
    many: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = sarif(capsys, "--checksums", "m/SHA256SUMS", "m")
    (missing,) = [r for r in doc["runs"][0]["results"] if r["ruleId"] == "ST613"]
    location = missing["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "m/gone.safetensors", "uriBaseId": "%SRCROOT%"}


def test_fingerprints_are_unique_stable_and_never_none(many: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = sarif(capsys, "--checksums", "m/SHA256SUMS", "m")["runs"][0]["results"]
    prints = [r["partialFingerprints"] for r in first]
    assert len(first) >= 50
    assert all(list(p) == ["stcheck/v2"] for p in prints)
    values = [p["stcheck/v2"] for p in prints]
    assert len(set(values)) == len(values), "fingerprints collide"
    assert not any("None" in v for v in values)
    again = sarif(capsys, "--checksums", "m/SHA256SUMS", "m")["runs"][0]["results"]
    assert [r["partialFingerprints"] for r in again] == prints


def test_the_same_finding_in_the_same_place_of_two_files_differs(
    many: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = sarif(capsys, "m")["runs"][0]["results"]
    trailing = [r for r in results if r["ruleId"] == "ST406"]
    assert len(trailing) == 25
    assert len({r["locations"][0]["physicalLocation"]["region"]["byteOffset"] for r in trailing}) == 1
    assert len({r["partialFingerprints"]["stcheck/v2"] for r in trailing}) == 25


def test_rules_carry_a_full_description_and_the_fix(
    many: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STCHECK_SPEC_URL", raising=False)
    driver = sarif(capsys, "m")["runs"][0]["tool"]["driver"]
    assert "informationUri" not in driver  # stcheck has no public address: none is invented
    rules = {r["id"]: r for r in driver["rules"]}
    assert list(rules) == [r.code for r in RULES]
    for rule in RULES:
        entry = rules[rule.code]
        assert entry["fullDescription"]["text"].startswith(rule.title)
        assert rule.fix
        assert rule.fix in entry["help"]["text"]
        assert rule.fix in entry["help"]["markdown"]
        assert f"stcheck rules {rule.code}" in entry["help"]["text"]
        assert "helpUri" not in entry
        assert "http" not in json.dumps(entry)
    assert "InvalidOffset" in rules["ST401"]["fullDescription"]["text"]


def test_links_only_where_the_spec_is_hosted(
    many: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STCHECK_SPEC_URL", "https://mirror.example/stcheck/spec/SPEC.md")
    driver = sarif(capsys, "m")["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == "https://mirror.example/stcheck/spec/SPEC.md"
    (rule,) = [r for r in driver["rules"] if r["id"] == "ST406"]
    assert rule["helpUri"] == "https://mirror.example/stcheck/spec/SPEC.md#buffer-trailing-bytes"
    assert "(https://mirror.example/stcheck/spec/SPEC.md#buffer-trailing-bytes)" in rule["help"]["markdown"]


def test_check_writes_the_same_sarif(many: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "--no-config", "--format", "sarif", "m"])
    doc = json.loads(capsys.readouterr().out)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(doc)
    assert doc["runs"][0]["results"] == sarif(capsys, "m")["runs"][0]["results"]


def test_a_remote_url_stays_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("urllib3")
    from tests.remote_servers import Server, from_bytes

    with Server() as server:
        server.site.resources["/m.safetensors"] = from_bytes(clean_file() + b"\0")
        doc = sarif(capsys, server.url + "/m.safetensors")
    (result,) = doc["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": server.url + "/m.safetensors"}
