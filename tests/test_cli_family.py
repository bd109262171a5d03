# Strategy: `stcheck check` and `stcheck scan` are one family (issue 24): the
# same formats and report copies, the same policy handling (--policy, the
# working directory's pyproject [tool.stcheck], --no-config, never a file
# inside what is checked), the same summary line and the same exit codes.
# Each test runs both commands on the same input and compares.
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

import pytest
from scan_fixtures import build, clean_file, f32, write

from validator.cli.main import main

if TYPE_CHECKING:
    from pathlib import Path

SCAN = ("scan", "--progress", "never", "-j", "1")
COMMANDS = {"check": ("check",), "scan": SCAN}
F64 = build([("w", "F32", [1], f32(1.0)), ("d", "F64", [1], bytes(8))], {"format": "pt"})


def run(capsys: pytest.CaptureFixture[str], command: str, *argv: str) -> tuple[int, str, str]:
    code = main([*COMMANDS[command], *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "models" / "ok.safetensors", clean_file())
    write(tmp_path / "models" / "trailing.safetensors", clean_file() + b"\0")
    write(tmp_path / "models" / "f64.safetensors", F64)
    return tmp_path


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "junit"])
def test_check_has_every_format_of_scan(folder: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    outputs = {}
    for command in COMMANDS:
        code, out, err = run(capsys, command, "--no-config", "--format", fmt, "models")
        assert (code, err) == (1, "")
        outputs[command] = out
    if fmt == "json":
        docs = {c: json.loads(o) for c, o in outputs.items()}
        assert {c: d["command"] for c, d in docs.items()} == {"check": "check", "scan": "scan"}
        for doc in docs.values():
            doc.pop("command")
            doc["summary"].pop("seconds")
            for entry in doc["files"]:
                entry.pop("tensors")  # check's tables; a scan reports tensor_count
        assert docs["check"] == docs["scan"]
    elif fmt == "sarif":
        runs = {c: json.loads(o)["runs"][0] for c, o in outputs.items()}
        assert runs["check"]["results"] == runs["scan"]["results"]
        assert runs["check"]["tool"] == runs["scan"]["tool"]
    elif fmt == "junit":
        cases = {
            c: [(t.get("name"), [e.tag for e in t]) for t in ET.fromstring(o).iter("testcase")]
            for c, o in outputs.items()
        }
        assert cases["check"] == cases["scan"]
    else:
        assert outputs["check"] == outputs["scan"]  # the same lines and the same summary line


def test_check_writes_the_report_copies(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "check",
        "--no-config",
        "-o",
        "r.json",
        "--format",
        "json",
        "--sarif",
        "r.sarif",
        "--junit",
        "r.xml",
        "models",
    )
    assert (code, out) == (1, "")
    assert json.loads((folder / "r.json").read_text())["command"] == "check"
    assert json.loads((folder / "r.sarif").read_text())["version"] == "2.1.0"
    assert ET.parse(folder / "r.xml").getroot().tag == "testsuites"


def _pyproject(where: Path) -> None:
    write(where / "pyproject.toml", b'[tool.stcheck]\nforbidden_dtypes = ["F64"]\n')


@pytest.mark.parametrize("command", COMMANDS)
def test_the_working_directorys_pyproject_applies(
    folder: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    _pyproject(folder)
    code, out, _ = run(capsys, command, "--format", "json", "models/f64.safetensors")
    assert code == 1
    doc = json.loads(out)
    assert doc["policies"] == [f"{folder / 'pyproject.toml'} [tool.stcheck]"]
    assert "policy-dtype-forbidden" in [f["rule"] for f in doc["files"][0]["findings"]]
    code, out, _ = run(capsys, command, "--no-config", "--format", "json", "models/f64.safetensors")
    assert (code, json.loads(out)["policies"]) == (0, [])


@pytest.mark.parametrize("command", COMMANDS)
def test_a_policy_file_applies(folder: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    write(folder / "p.toml", b'required_metadata = ["license"]\n')
    code, out, _ = run(capsys, command, "--policy", "p.toml", "models/ok.safetensors")
    assert code == 1
    lines = out.splitlines()
    assert (
        lines[0]
        == "models/ok.safetensors: ST612 policy-metadata-missing metadata key 'license' is required by the policy but absent"
    )
    assert lines[-1].endswith("; 1 error, 0 warnings; policy p.toml")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_pyproject_inside_what_is_checked_is_never_read(
    folder: Path, capsys: pytest.CaptureFixture[str], command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A download's own pyproject.toml must not configure the check of that download.
    write(
        folder / "models" / "pyproject.toml",
        b"[tool.stcheck]\n[tool.stcheck.rules.buffer-trailing-bytes]\n"
        b'severity = "warning"\nreason = "the download says so"\n',
    )
    monkeypatch.chdir(folder / "models")
    code, out, err = run(capsys, command, "--format", "json", ".")
    assert code == 1  # buffer-trailing-bytes stays an error
    assert json.loads(out)["policies"] == []
    assert "not reading" in err
    assert "configuration comes from the user, never from what is vetted" in err


@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_policy_is_exit_2(folder: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    write(folder / "p.toml", b"max_tensors = -1\n")
    code, out, err = run(capsys, command, "--policy", "p.toml", "models")
    assert (code, out) == (2, "")
    assert err == f"stcheck {command}: p.toml: max_tensors: expected a non-negative integer\n"


def test_the_same_exit_codes(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(folder / "warn" / "w.safetensors", b"\x02\x00\x00\x00\x00\x00\x00\x00{}")  # ST104, a warning only
    cases = [
        ((), "models/ok.safetensors", 0),
        ((), "models/trailing.safetensors", 1),
        (("--fail-on", "never"), "models/trailing.safetensors", 0),
        ((), "warn", 0),
        (("--fail-on", "warning"), "warn", 1),
        ((), "missing.safetensors", 2),
        ((), "empty-dir", 2),
    ]
    (folder / "empty-dir").mkdir()
    for extra, path, expected in cases:
        got = {c: run(capsys, c, "--no-config", *extra, path)[0] for c in COMMANDS}
        assert got == {"check": expected, "scan": expected}, (extra, path)
