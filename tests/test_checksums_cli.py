# Strategy: digests as a user sees them (issue 24).  --help says where
# --checksums looks names up; a listed file that is missing is named as
# relatively as every other path; and a run that checked a digest says so,
# per file in text ("sha256 matches") and as a field in JSON, also when the
# verdict comes from the results cache.
from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from scan_fixtures import clean_file, fake_hf_cache, sha256, write

from validator.cli.main import main

if TYPE_CHECKING:
    from pathlib import Path

SCAN = ["scan", "--no-config", "--progress", "never", "-j", "1"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([*SCAN, *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "m" / "a.safetensors", clean_file())
    write(tmp_path / "m" / "b.safetensors", clean_file() + b"\0")
    sums = f"{sha256(clean_file())}  a.safetensors\n{'1' * 64}  b.safetensors\n{'0' * 64}  gone.safetensors\n"
    write(tmp_path / "m" / "SHA256SUMS", sums.encode())
    return tmp_path


def test_help_says_where_checksum_names_are_looked_up(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "a relative name is looked up in FILE's own folder" in text


def test_a_missing_listed_file_is_named_relatively(listed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--checksums", "m/SHA256SUMS", "m")
    assert code == 1
    (line,) = [line for line in out.splitlines() if "ST613" in line]
    assert (
        line == "m/gone.safetensors: ST613 checksum-file-missing m/SHA256SUMS:3 lists this file, but it is not on disk"
    )
    assert all(not line.startswith("/") for line in out.splitlines())


def test_a_checked_digest_says_it_matches(listed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--sha256", sha256(clean_file()), "m/a.safetensors")
    assert code == 0
    assert out.splitlines() == [
        "m/a.safetensors: sha256 matches (--sha256)",
        "1 file checked (strict): 1 valid, 0 invalid; 0 errors, 0 warnings; 1 digest checked: all match",
        out.splitlines()[-1],
    ]
    assert out.splitlines()[-1].startswith("  read ")
    code, out, _ = run(capsys, "--format", "json", "--sha256", sha256(clean_file()), "m/a.safetensors")
    (entry,) = json.loads(out)["files"]
    assert entry["checksum"] == {
        "algorithm": "sha256",
        "expected": sha256(clean_file()),
        "source": "--sha256",
        "matches": True,
    }


def test_checksums_say_which_line_matched_and_which_did_not(listed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--checksums", "m/SHA256SUMS", "m")
    assert code == 1
    lines = out.splitlines()
    assert "m/a.safetensors: sha256 matches (m/SHA256SUMS:1)" in lines
    assert not any("b.safetensors: sha256 matches" in line for line in lines)
    assert "; 2 digests checked: 1 differ" in lines[-2]
    code, out, _ = run(capsys, "--format", "json", "--checksums", "m/SHA256SUMS", "m")
    files = {f["path"]: f for f in json.loads(out)["files"]}
    assert files["m/a.safetensors"]["checksum"]["matches"] is True
    assert files["m/b.safetensors"]["checksum"]["matches"] is False
    assert "checksum" not in files["m/gone.safetensors"]


def test_quiet_leaves_out_the_matches(listed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "-q", "--sha256", sha256(clean_file()), "m/a.safetensors")
    assert (code, out) == (0, "")


def test_a_cached_verdict_still_says_the_digest_matched(listed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for _ in range(2):
        code, out, _ = run(
            capsys, "--cache", "c.db", "--format", "json", "--sha256", sha256(clean_file()), "m/a.safetensors"
        )
        assert code == 0
    (entry,) = json.loads(out)["files"]
    assert entry["cached"] is True
    assert entry["checksum"]["matches"] is True


def test_a_hub_cache_counts_its_blob_checks_without_a_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_hf_cache(tmp_path, corrupt=False)
    code, out, _ = run(capsys, "--hf-cache", str(tmp_path))
    assert code == 0
    assert "matches" not in out.replace("all match", "")
    assert "; 4 digests checked: all match" in out
