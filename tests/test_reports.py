# Report formats of `stcheck scan`: JSON against spec/report.schema.json,
# SARIF against the vendored OASIS SARIF 2.1.0 schema, JUnit XML structure.
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from scan_fixtures import all_zero_file, clean_file, f64_file, write, zip_last_tensor_file

from validator._rules import RULES
from validator.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
SARIF_SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text())
REPORT_SCHEMA = Path(str(resources.files("validator") / "schemas" / "report.schema.json"))


@pytest.fixture
def mixed(tmp_path, monkeypatch):
    """Clean, invalid, warning-only, suppressed and unreadable inputs."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "models" / "clean.safetensors", clean_file())
    write(tmp_path / "models" / "trailing.safetensors", clean_file() + b"\x00")
    write(tmp_path / "models" / "zero.safetensors", all_zero_file())
    write(tmp_path / "models" / "zip.safetensors", zip_last_tensor_file())
    write(tmp_path / "models" / "f64.safetensors", f64_file())
    write(
        tmp_path / "policy.toml",
        b'forbidden_dtypes = ["F64"]\n[rules.data-zero-tail]\nignore = true\nreason = "covered by ST602"\n',
    )
    return tmp_path


def scan(capsys, fmt: str, *extra: str) -> tuple[int, str]:
    rc = main(["scan", "--progress", "never", "--deep", "--policy", "policy.toml", "--format", fmt, "models", *extra])
    return rc, capsys.readouterr().out


def test_sarif_validates_against_the_sarif_2_1_0_schema(mixed, capsys):
    rc, out = scan(capsys, "sarif", "missing.safetensors")
    assert rc == 2
    doc = json.loads(out)
    jsonschema.Draft4Validator.check_schema(SARIF_SCHEMA)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(doc)
    run = doc["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [r.code for r in RULES]
    got = [
        (
            r["ruleId"],
            r["level"],
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "suppressions" in r,
        )
        for r in run["results"]
    ]
    assert got == [
        ("ST611", "error", "models/f64.safetensors", False),
        ("ST406", "error", "models/trailing.safetensors", False),
        ("ST602", "warning", "models/zero.safetensors", False),
        ("ST602", "warning", "models/zero.safetensors", False),
        ("ST603", "warning", "models/zero.safetensors", True),
        ("ST604", "warning", "models/zip.safetensors", False),
    ]
    suppressed = run["results"][4]["suppressions"][0]
    assert suppressed == {"kind": "external", "status": "accepted", "justification": "covered by ST602"}
    assert run["invocations"][0]["executionSuccessful"] is False
    assert "missing.safetensors" in run["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"]
    # ruleIndex points at the rule with the same id.
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]


def test_sarif_schema_catches_a_broken_log():
    # The vendored schema is strict enough to matter: a result without a
    # message, or a level outside the enum, is rejected.
    bad = {
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "x"}},
                "results": [{"ruleId": "a", "level": "fatal", "message": {"text": "m"}}],
            }
        ],
    }
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(SARIF_SCHEMA).validate(bad)


def test_sarif_file_written_alongside_text(mixed, capsys):
    rc, out = scan(capsys, "text", "--sarif", "out.sarif", "--junit", "out.xml")
    assert rc == 1
    assert " checked (strict): " in out.splitlines()[-2]  # the summary line, then the bytes read
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(json.loads((mixed / "out.sarif").read_text()))
    assert ET.parse(mixed / "out.xml").getroot().tag == "testsuites"


def test_json_report_validates_against_spec_schema(mixed, capsys):
    rc, out = scan(capsys, "json")
    assert rc == 1
    doc = json.loads(out)
    schema = json.loads(REPORT_SCHEMA.read_text())
    validator_cls = jsonschema.validators.validator_for(schema)
    validator_cls.check_schema(schema)
    validator_cls(schema).validate(doc)
    assert doc["command"] == "scan"
    assert doc["summary"]["suppressed"] == 1
    assert doc["summary"]["findings_by_rule"] == {
        "ST406 buffer-trailing-bytes": 1,
        "ST602 tensor-all-zero": 2,
        "ST604 tensor-embedded-executable": 1,
        "ST611 policy-dtype-forbidden": 1,
    }
    # Suppressed findings stay, with the policy's reason.
    zero = next(f for f in doc["files"] if f["path"].endswith("zero.safetensors"))
    assert zero["findings"][2]["suppression"] == {"reason": "covered by ST602"}
    assert zero["deep"]["all_zero_tensors"] == 2
    assert zero["sha256"] is not None
    # The schema rejects a report whose finding lacks its rule, and a bad suppression.
    broken = json.loads(out)
    del broken["files"][1]["findings"][0]["rule"]
    with pytest.raises(jsonschema.ValidationError):
        validator_cls(schema).validate(broken)
    broken = json.loads(out)
    zero = next(f for f in broken["files"] if f["path"].endswith("zero.safetensors"))
    zero["findings"][2]["suppression"] = {}
    with pytest.raises(jsonschema.ValidationError):
        validator_cls(schema).validate(broken)


def test_junit_report(mixed, capsys):
    rc, out = scan(capsys, "junit", "missing.safetensors")
    assert rc == 2
    root = ET.fromstring(out.split("\n", 1)[1])
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("6", "2", "1")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert sorted(cases) == [
        "missing.safetensors",
        "models/clean.safetensors",
        "models/f64.safetensors",
        "models/trailing.safetensors",
        "models/zero.safetensors",
        "models/zip.safetensors",
    ]
    failure = cases["models/trailing.safetensors"].find("failure")
    assert failure is not None
    assert failure.get("type") == "ST406"
    assert cases["models/clean.safetensors"].find("failure") is None
    zero_out = cases["models/zero.safetensors"].find("system-out")
    assert zero_out is not None
    assert "warning: models/zero.safetensors" in (zero_out.text or "")
    assert "suppressed (covered by ST602)" in (zero_out.text or "")
    assert cases["missing.safetensors"].find("error") is not None


def test_text_report_lines_and_policy_marks(mixed, capsys):
    rc, out = scan(capsys, "text")
    assert rc == 1
    lines = out.splitlines()
    # No "path::" when a finding has no offset (issue 12).
    assert lines[0].startswith("models/f64.safetensors: ST611 policy-dtype-forbidden tensor 'd' is F64")
    assert any(line.startswith("models/trailing.safetensors:112: ST406 buffer-trailing-bytes") for line in lines)
    assert not any("ST603" in line for line in lines)
    rc = main(["scan", "--progress", "never", "--deep", "--policy", "policy.toml", "--no-warnings", "models"])
    quiet = capsys.readouterr().out
    assert "ST602" not in quiet
