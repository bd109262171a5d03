"""`stcheck inspect` gives the policy's verdict, as check does: the policy
found from the working directory (or --policy), its line, its exit code."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from tests.scan_fixtures import clean_file
from validator.cli.main import main

if TYPE_CHECKING:
    from pathlib import Path

POLICY = '[project]\nname = "x"\n\n[tool.stcheck]\nforbidden_dtypes = ["F32"]\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose policy forbids the F32 tensor of its one model file."""
    (tmp_path / "pyproject.toml").write_text(POLICY)
    models = tmp_path / "models"
    models.mkdir()
    (models / "model.safetensors").write_bytes(clean_file())
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("target", ["models/model.safetensors", "models"], ids=["file", "folder"])
def test_inspect_fails_where_the_policy_fails_as_check_does(project, capsys, target):
    assert main(["check", target]) == 1
    capsys.readouterr()
    assert main(["inspect", target]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == f"invalid: 1 error (policy: {project / 'pyproject.toml'} [tool.stcheck])"


def test_inspect_without_the_policy_passes(project, capsys):
    assert main(["inspect", "--no-config", "models/model.safetensors"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "valid"


def test_inspect_json_exits_with_the_policy_verdict(project, capsys):
    assert main(["inspect", "--format", "json", "models"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["policies"] == [f"{project / 'pyproject.toml'} [tool.stcheck]"]
    (entry,) = doc["files"]
    assert [f["rule"] for f in entry["findings"]] == ["policy-dtype-forbidden"]


def test_inspect_fail_on_never(project, capsys):
    assert main(["inspect", "--fail-on", "never", "models/model.safetensors"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == f"invalid: 1 error (policy: {project / 'pyproject.toml'} [tool.stcheck])"


def test_inspect_of_a_pickle_on_standard_input_lists_it_without_a_traceback(capsys, monkeypatch):
    import io
    import pickle
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(pickle.dumps({"step": 1}))))
    assert main(["inspect", "--no-config", "-"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"<stdin>: {len(pickle.dumps({'step': 1}))} bytes, pickle"
    assert out[1].startswith("<stdin>: ST705 pickle-weights-only this is a Python pickle")
    assert out[-2:] == ["1 other file: 1 pickle", "valid"]
