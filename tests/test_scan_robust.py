# `stcheck scan` never passes work it did not do, names the policy in force,
# keeps memory bounded whatever the number of findings, and writes hostile
# file names safely in every format (issues 12 and 15).  Each test here was
# seen failing on the code before its fix.
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import unquote_to_bytes

import jsonschema
import pytest
from scan_fixtures import build, clean_file, f64_file, fake_hf_cache, sha256, write

from validator.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "spec" / "report.schema.json").read_text())


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["scan", "--progress", "never", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def scan_json(capsys, *argv: str) -> tuple[int, dict, str]:
    rc, out, err = run(capsys, "--format", "json", *argv)
    doc = json.loads(out)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    return rc, doc, err


# --- nothing to scan is not a pass ----------------------------------------------------


def test_empty_directory_exits_2(tmp_path, capsys):
    rc, out, err = run(capsys, "--no-config", str(tmp_path))
    assert rc == 2
    assert f"{tmp_path}: no *.safetensors file in this directory or below it" in err
    assert out.splitlines()[-1].endswith("; 1 unreadable")


def test_mistyped_path_exits_2(tmp_path, capsys):
    rc, _, err = run(capsys, "--no-config", str(tmp_path / "modles"))
    assert rc == 2
    assert "modles: no such file or directory" in err


def test_hf_cache_without_repositories_exits_2(tmp_path, capsys):
    rc, _, err = run(capsys, "--no-config", "--hf-cache", str(tmp_path))
    assert rc == 2
    assert "not a Hugging Face hub cache" in err


def test_hf_cache_accepts_one_repository_folder(tmp_path, capsys):
    fake_hf_cache(tmp_path)
    rc, doc, _ = scan_json(capsys, "--no-config", "--hf-cache", str(tmp_path / "models--acme--tiny"))
    assert rc == 1  # the corrupted blob
    assert doc["summary"]["files"] == 3
    assert doc["summary"]["models"] == {"acme/tiny": {"files": 4, "invalid": 1}}


def test_incomplete_hub_download_is_a_finding(tmp_path, capsys):
    fake_hf_cache(tmp_path, corrupt=False)
    partial = tmp_path / "models--acme--tiny" / "blobs" / (sha256(b"x") + ".incomplete")
    partial.write_bytes(b"\x00" * 1000)
    rc, doc, _ = scan_json(capsys, "--no-config", "--hf-cache", str(tmp_path))
    assert rc == 1
    (entry,) = [f for f in doc["files"] if f["path"].endswith(".incomplete")]
    assert entry["path"] == str(partial)  # a path anyone can open, not "acme/tiny/blobs/..."
    assert entry["model"] == "acme/tiny"
    assert [(x["code"], x["rule"]) for x in entry["findings"]] == [("ST614", "download-incomplete")]
    assert "interrupted download (1000 bytes so far)" in entry["findings"][0]["message"]


def test_listed_checksum_file_that_is_missing_fails(tmp_path, capsys):
    present = write(tmp_path / "a.safetensors", clean_file())
    sums = tmp_path / "SHA256SUMS"
    sums.write_text(f"{sha256(clean_file())}  a.safetensors\n{'0' * 64}  b.safetensors\n")
    rc, doc, _ = scan_json(capsys, "--no-config", "--checksums", str(sums), str(present))
    assert rc == 1
    missing = [f for f in doc["files"] if f["kind"] == "missing"]
    assert [f["path"] for f in missing] == [str(tmp_path / "b.safetensors")]
    assert missing[0]["findings"][0]["rule"] == "checksum-file-missing"
    assert missing[0]["findings"][0]["message"] == f"{sums}:2 lists this file, but it is not on disk"
    assert doc["summary"]["missing"] == 1


def test_header_only_scan_prints_no_zero_byte_count(tmp_path, capsys):
    path = write(tmp_path / "a.safetensors", clean_file())
    rc, out, _ = run(capsys, "--no-config", str(path))
    assert rc == 0
    assert out.splitlines() == ["1 file checked (strict): 1 valid, 0 invalid; 0 errors, 0 warnings"]
    rc, out, _ = run(capsys, "--no-config", "--deep", str(path))
    assert out.splitlines()[-1].startswith(f"  read {len(clean_file())} B in ")


# --- policy: found from the scanned paths, named in every format --------------------


def _project(root: Path, dtype_ban: str) -> Path:
    write(root / "pyproject.toml", f'[tool.stcheck]\nforbidden_dtypes = ["{dtype_ban}"]\n'.encode())
    return write(root / "models" / "m.safetensors", f64_file())


def test_policy_is_found_from_the_working_directory_not_the_scanned_path(tmp_path, capsys, monkeypatch):
    path = _project(tmp_path / "proj", "F64")
    monkeypatch.chdir("/")
    rc, doc, _ = scan_json(capsys, str(path))
    assert rc == 0  # the project's pyproject.toml is not the working directory's
    assert doc["policy"] is None
    monkeypatch.chdir(tmp_path / "proj" / "models")  # below the project: found upward
    rc, doc, _ = scan_json(capsys, str(path))
    assert rc == 1
    assert doc["policy"] == f"{tmp_path / 'proj' / 'pyproject.toml'} [tool.stcheck]"
    assert [f["rule"] for f in doc["files"][0]["findings"]] == ["policy-dtype-forbidden"]


def test_one_policy_for_every_path(tmp_path, capsys, monkeypatch):
    strict = _project(tmp_path / "a", "F64")
    lenient = _project(tmp_path / "b", "F16")
    monkeypatch.chdir(tmp_path / "a")
    rc, doc, _ = scan_json(capsys, str(strict), str(lenient))
    assert rc == 1
    assert [len(f["findings"]) for f in doc["files"]] == [1, 1]
    assert [f["policy"] for f in doc["files"]] == [f"{tmp_path / 'a' / 'pyproject.toml'} [tool.stcheck]"] * 2
    assert len(doc["policies"]) == 1


def test_every_format_names_the_policy_in_force(tmp_path, capsys, monkeypatch):
    path = _project(tmp_path, "F64")
    source = f"{tmp_path / 'pyproject.toml'} [tool.stcheck]"
    monkeypatch.chdir(tmp_path)
    _, out, _ = run(capsys, "--format", "text", str(path))
    assert out.splitlines()[-1].endswith(f"; policy {source}")
    _, out, _ = run(capsys, "--format", "json", str(path))
    assert json.loads(out)["policies"] == [source]
    _, out, _ = run(capsys, "--format", "sarif", str(path))
    assert json.loads(out)["runs"][0]["properties"]["policies"] == [source]
    _, out, _ = run(capsys, "--format", "junit", str(path))
    props = ET.fromstring(out).find("testsuite/properties")
    assert props is not None
    assert [(p.get("name"), p.get("value")) for p in props] == [("policy", source)]
    # No policy: the text says nothing about one (issue 24: a long "policy none (...)" line).
    _, out, _ = run(capsys, "--no-config", "--format", "text", str(path))
    assert "policy" not in out.splitlines()[-1]


# --- progress in a CI log ------------------------------------------------------------


def test_progress_always_writes_lines_when_stderr_is_not_a_terminal(tmp_path):
    for i in range(3):
        write(tmp_path / f"{i}.safetensors", clean_file())
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "validator",
            "scan",
            "--no-config",
            "--progress",
            "always",
            "--progress-interval",
            "0.05",
            "-j",
            "1",
            "--deep",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines, "no progress line"
    assert all(line.startswith("stcheck scan: ") for line in lines)
    assert lines[-1].startswith("stcheck scan: 3/3 files, ")
    assert "(100%)" in lines[-1]
    assert "\r" not in proc.stderr
    assert "\x1b[" not in proc.stderr


# --- bounded findings (issue 15, section 4) ---------------------------------------------


def _many_zero_tensors(n: int) -> bytes:
    # Zeroed 64 x 64 matrices: the smallest tensors tensor-all-zero reports.
    return build([(f"t{i}", "U8", [64, 64], bytes(4096)) for i in range(n)])


@pytest.mark.parametrize("fmt", ["json", "sarif", "junit", "text"])
def test_per_tensor_findings_are_capped_and_grouped(tmp_path, capsys, fmt):
    n = 3000
    path = write(tmp_path / "zeros.safetensors", _many_zero_tensors(n))
    policy = write(tmp_path / "p.toml", b'forbidden_dtypes = ["U8"]\n')
    rc, out, _ = run(capsys, "--deep", "--policy", str(policy), "--format", fmt, str(path))
    assert rc == 1
    # One grouped finding per rule instead of 3000 of each (about 4 MB of SARIF before);
    # SARIF's rule catalogue (with each rule's help) is the same whatever was found.
    found = json.dumps(json.loads(out)["runs"][0]["results"]) if fmt == "sarif" else out
    assert len(found) < 100_000, len(found)
    assert f"{n} tensors ('t0', 't1', 't2' and {n - 3} more)" in out
    if fmt == "sarif":
        assert len(json.loads(out)["runs"][0]["results"]) == 3  # all-zero, zero tail, forbidden dtype
    if fmt == "json":
        doc = json.loads(out)
        rules = [f["rule"] for f in doc["files"][0]["findings"]]
        assert rules.count("tensor-all-zero") == 1
        assert rules.count("policy-dtype-forbidden") == 1
        assert doc["files"][0]["suppressed"] == 2 * (n - 1000)
        assert doc["summary"]["not_listed"] == 2 * (n - 1000)


# --- hostile file names in every format (issue 15, section 5) -------------------------------------

HOSTILE = {
    "non-utf8": b"bad\xff.safetensors",
    "control": b"ctl\x01.safetensors",
    "newline": b"nl\nstcheck: forged\n.safetensors",
    "bidi": "bidi\u202egpj.safetensors".encode(),
}


@pytest.mark.parametrize("raw", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_names_in_every_format_parse_back(tmp_path, raw):
    folder = tmp_path / "m"
    folder.mkdir()
    target = os.fsencode(folder) + b"/" + raw
    with open(target, "wb") as f:  # noqa: PTH123 - a bytes path
        f.write(clean_file() + b"\x00")  # trailing byte: one error finding
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8"}
    sarif, junit = tmp_path / "r.sarif", tmp_path / "r.xml"

    def scan(fmt: str) -> bytes:
        proc = subprocess.run(
            [
                *(sys.executable, "-m", "validator", "scan", "--no-config", "--progress", "never", "--format", fmt),
                *("--sarif", str(sarif), "--junit", str(junit), str(folder)),
            ],
            capture_output=True,
            timeout=120,
            env=env,
            cwd=tmp_path,
            check=False,
        )
        assert proc.returncode == 1, proc.stderr
        assert b"Traceback" not in proc.stderr
        return proc.stdout

    text = scan("text").decode("utf-8")
    body = text.splitlines()[:-1]  # the last line is the summary
    assert len(body) == 1, body  # one finding line: a newline in the name cannot forge another
    assert body[0].isprintable()
    assert "ST406 buffer-trailing-bytes" in body[0]

    doc = json.loads(scan("json").decode("utf-8"))
    (entry,) = doc["files"]
    if raw == HOSTILE["non-utf8"]:
        assert entry["path"].endswith("bad\\xff.safetensors")
    else:
        assert os.fsencode(entry["path"]) == target

    for blob in (scan("sarif"), sarif.read_bytes()):
        log = json.loads(blob.decode("utf-8"))
        (result,) = log["runs"][0]["results"]
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert unquote_to_bytes(uri) == b"m/" + raw  # the raw bytes, percent-encoded

    for blob in (scan("junit"), junit.read_bytes()):
        root = ET.fromstring(blob)  # well-formed XML whatever the name holds
        (case,) = root.iter("testcase")
        assert case.get("name", "").isprintable()
        assert case.find("failure") is not None


def test_sarif_uri_of_a_non_utf8_name_outside_the_working_directory(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "in"
    folder.mkdir()
    target = os.fsencode(folder) + b"/x\xfe.safetensors"
    with open(target, "wb") as f:  # noqa: PTH123 - a bytes path
        f.write(clean_file() + b"\x00")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    rc, out, _ = run(capsys, "--no-config", "--format", "sarif", str(folder))
    assert rc == 1
    uri = json.loads(out)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri.startswith("file:///")
    assert unquote_to_bytes(uri.removeprefix("file://")) == target


def test_scan_many_tiny_files_still_reports_each(tmp_path, capsys):
    # Grouping is per file: separate files keep separate findings.
    for i in range(5):
        write(tmp_path / f"{i}.safetensors", build([("w", "U8", [64, 64], bytes(4096))]))
    rc, doc, _ = scan_json(capsys, "--no-config", "--deep", str(tmp_path))
    assert rc == 0
    assert [len(f["findings"]) for f in doc["files"]] == [2] * 5
