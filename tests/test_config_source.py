# Strategy: configuration comes from the user, never from what is vetted.
# The attack of issue 21: a download ships a pyproject.toml that ignores
# checksum-mismatch (ST606) and duplicate-key (ST210) for its own files.
# Each test builds that download (a file with a duplicate tensor name, a
# checksum list with a wrong digest for it, the hostile pyproject.toml beside
# it) and runs `stcheck scan` from the places a user runs it: above the
# download, inside it, and from a project of their own.
from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from _stbytes import st
from scan_fixtures import clean_file, write

from validator.cli.main import main

if TYPE_CHECKING:
    from pathlib import Path

DUPLICATE = st(
    '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
    b"\x01",
)
HOSTILE = (
    b'[tool.stcheck.rules.checksum-mismatch]\nignore = true\nreason = "trust me"\n'
    b'[tool.stcheck.rules.duplicate-key]\nignore = true\nreason = "trust me"\n'
)


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    dl = tmp_path / "dl"
    write(dl / "model.safetensors", DUPLICATE)
    write(dl / "pyproject.toml", HOSTILE)
    write(tmp_path / "SUMS", b"0" * 64 + b"  dl/model.safetensors\n")
    return tmp_path


def _scan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:
    rc = main(["scan", "--progress", "never", "--format", "json", *argv])
    out = capsys.readouterr()
    return rc, json.loads(out.out), out.err


def _rules(doc: dict) -> list[tuple[str, bool]]:
    return sorted((x["rule"], "suppression" in x) for f in doc["files"] for x in f["findings"])


def test_a_download_cannot_configure_its_own_vetting(hostile, capsys, monkeypatch):
    monkeypatch.chdir(hostile)
    rc, doc, err = _scan(capsys, "--checksums", "SUMS", "dl/")
    assert rc == 1
    assert doc["policy"] is None
    # Both findings count; the pyproject.toml itself is judged as a text file of the download.
    assert _rules(doc) == [("checksum-mismatch", False), ("checksum-missing", False), ("duplicate-key", False)]
    assert err == ""  # found from the working directory up: the download's file was never a candidate


def test_not_even_from_inside_the_download(hostile, capsys, monkeypatch):
    monkeypatch.chdir(hostile / "dl")  # the working directory is inside the scanned path
    rc, doc, err = _scan(capsys, "--checksums", "../SUMS", ".")
    assert rc == 1
    assert doc["policy"] is None
    assert ("duplicate-key", False) in _rules(doc)
    assert err.splitlines() == [
        (
            f"stcheck scan: not reading {hostile / 'dl' / 'pyproject.toml'}: it lies inside a scanned path and "
            "is not at the root of a checkout of your own (a .git or .hg beside it), and configuration comes "
            "from the user, never from what is vetted (give it as the policy to use it)"
        )
    ]


def test_a_broken_pyproject_inside_the_download_is_never_parsed(tmp_path, capsys, monkeypatch):
    write(tmp_path / "dl" / "model.safetensors", clean_file())
    write(tmp_path / "dl" / "pyproject.toml", b"[tool.stcheck]\nmax_tensors = 'not toml")
    monkeypatch.chdir(tmp_path)
    rc, doc, _ = _scan(capsys, "dl")
    assert rc == 0  # not a usage error: the file was not read as configuration
    assert doc["policy"] is None


def test_the_users_project_configures_the_scan(hostile, capsys, monkeypatch):
    project = hostile / "project"
    write(project / "pyproject.toml", b'[tool.stcheck]\nrequired_metadata = ["format"]\n')
    monkeypatch.chdir(project)
    rc, doc, err = _scan(capsys, str(hostile / "dl" / "model.safetensors"))
    assert rc == 1
    assert doc["policy"] == f"{project / 'pyproject.toml'} [tool.stcheck]"
    assert "policy-metadata-missing" in [x["rule"] for f in doc["files"] for x in f["findings"]]
    assert err == ""
    rc, doc, _ = _scan(capsys, "--no-config", str(hostile / "dl" / "model.safetensors"))
    assert doc["policy"] is None
    assert "policy-metadata-missing" not in [x["rule"] for f in doc["files"] for x in f["findings"]]


def test_the_nearest_user_pyproject_wins_over_one_inside_the_scan(hostile, capsys, monkeypatch):
    write(hostile / "pyproject.toml", b'[tool.stcheck]\nforbidden_dtypes = ["U8"]\n')
    monkeypatch.chdir(hostile / "dl")
    rc, doc, err = _scan(capsys, ".")
    assert rc == 1
    assert doc["policy"] == f"{hostile / 'pyproject.toml'} [tool.stcheck]"
    assert "policy-dtype-forbidden" in [x["rule"] for f in doc["files"] for x in f["findings"]]
    assert "not reading" in err


def test_policy_given_by_the_user_is_used_wherever_it_lies(hostile, capsys, monkeypatch):
    monkeypatch.chdir(hostile)
    rc, doc, _ = _scan(capsys, "--policy", "dl/pyproject.toml", "--checksums", "SUMS", "dl/")
    assert rc == 0  # the user chose it: both findings suppressed, with the reason
    assert ("duplicate-key", True) in _rules(doc)
    assert doc["policy"] == "dl/pyproject.toml [tool.stcheck]"


def test_hub_cache_is_a_scanned_path(tmp_path, capsys, monkeypatch):
    from scan_fixtures import fake_hf_cache

    fake_hf_cache(tmp_path / "hub", corrupt=False)
    write(tmp_path / "hub" / "pyproject.toml", HOSTILE)
    monkeypatch.chdir(tmp_path / "hub")
    _, doc, err = _scan(capsys, "--hf-cache", str(tmp_path / "hub"))
    assert doc["policy"] is None
    assert "not reading" in err


def test_discovery_alone(tmp_path):
    from validator.config.policy import discover_policy, find_pyproject_policy

    write(tmp_path / "pyproject.toml", b"[tool.stcheck]\nmax_tensors = 3\n")
    write(tmp_path / "dl" / "pyproject.toml", b"[tool.stcheck]\nmax_tensors = 1\n")
    write(tmp_path / "dl" / "sub" / "pyproject.toml", b'[project]\nname = "x"\n')  # no stcheck: not named
    found = discover_policy([str(tmp_path / "dl")], str(tmp_path / "dl" / "sub"))
    assert found.policy is not None
    assert found.policy.max_tensors == 3
    assert found.passed_over == (str(tmp_path / "dl" / "pyproject.toml"),)
    assert find_pyproject_policy(str(tmp_path / "dl")) is not None  # nothing scanned: the nearest one
    assert find_pyproject_policy(str(tmp_path / "dl")).max_tensors == 1  # type: ignore[union-attr]
    # A scanned file does not make its folder a scanned path.
    found = discover_policy([str(tmp_path / "dl" / "m.safetensors")], str(tmp_path / "dl"))
    assert found.policy is not None
    assert found.policy.max_tensors == 1
