# `stcheck scan`: discovery, the worker pool, integrity (--sha256,
# --checksums, the hub cache), exit codes and the progress bar.
from __future__ import annotations

import json
import os
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from scan_fixtures import all_zero_file, build, clean_file, f32, fake_hf_cache, sha256, write

from validator.cli import scan as _cmd_scan
from validator.cli.main import main
from validator.pipeline import engine as _scan
from validator.pipeline.engine import Job, Options, run_jobs
from validator.pipeline.hubcache import default_hf_cache, hf_cache_jobs


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["scan", "--progress", "never", "--no-config", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def scan_json(capsys, *argv: str) -> tuple[int, dict]:
    rc, out, _ = run(capsys, "--format", "json", *argv)
    return rc, json.loads(out)


def test_directory_is_scanned_recursively_and_in_order(tmp_path, capsys):
    write(tmp_path / "b" / "deep" / "z.safetensors", clean_file())
    write(tmp_path / "a.safetensors", clean_file())
    write(tmp_path / "b" / "notes.txt", b"not a model")
    write(tmp_path / "b" / "bad.safetensors", b"\x01")
    rc, doc = scan_json(capsys, "-j", "2", str(tmp_path))
    assert rc == 1
    paths = [f["path"].removeprefix(str(tmp_path) + "/") for f in doc["files"]]
    # Every file below gets a verdict: the text file is listed by its kind.
    assert paths == ["a.safetensors", "b/bad.safetensors", "b/deep/z.safetensors", "b/notes.txt"]
    assert [f["valid"] for f in doc["files"]] == [True, False, True, True]
    assert [f["kind"] for f in doc["files"]] == ["safetensors", "safetensors", "safetensors", "other"]
    assert doc["files"][3]["file_kind"] == "text"
    assert doc["files"][1]["findings"][0]["rule"] == "file-too-small"
    assert doc["summary"]["files"] == 3
    assert doc["summary"]["other_files"] == {"text": 1}
    assert doc["summary"]["findings_by_rule"] == {"ST101 file-too-small": 1}


def test_parallel_and_serial_results_agree(tmp_path):
    paths = [write(tmp_path / f"{i}.safetensors", all_zero_file() if i % 2 else clean_file()) for i in range(5)]
    jobs = [Job(str(p), ((str(p), None),)) for p in paths]
    options = Options(deep=True)
    serial = run_jobs(jobs, options, workers=1)
    parallel = run_jobs(jobs, options, workers=2)
    assert [r.to_json() for r in serial] == [r.to_json() for r in parallel]
    assert [len(r.items) for r in serial] == [0, 3, 0, 3, 0]


def test_summary_line_and_statistics(tmp_path, capsys):
    write(tmp_path / "zero.safetensors", all_zero_file())
    rc, out, err = run(capsys, "--deep", "--statistics", str(tmp_path))
    assert rc == 0
    assert err == ""
    lines = out.splitlines()
    # The summary line `check` prints too, then what only a scan that read data has.
    summary = next(i for i, line in enumerate(lines) if " checked (strict): " in line)
    assert lines[summary] == "1 file checked (strict): 1 valid, 0 invalid; 0 errors, 3 warnings"
    assert lines[summary + 1].startswith("  read 20.1 KiB in ")
    assert lines[summary + 1].endswith("/s)")
    assert [line.split() for line in lines[summary + 2 :]] == [
        ["2", "ST602", "tensor-all-zero"],
        ["1", "ST603", "data-zero-tail"],
    ]


def test_sha256_match_and_mismatch(tmp_path, capsys):
    data = clean_file()
    path = write(tmp_path / "m.safetensors", data)
    rc, doc = scan_json(capsys, "--sha256", sha256(data).upper(), str(path))
    assert rc == 0
    assert doc["files"][0]["sha256"] == sha256(data)
    assert doc["files"][0]["findings"] == []
    rc, doc = scan_json(capsys, "--sha256", "0" * 64, str(path))
    assert rc == 1
    [finding] = doc["files"][0]["findings"]
    assert (finding["rule"], finding["code"], finding["severity"]) == ("checksum-mismatch", "ST606", "error")
    assert f"sha256 is {sha256(data)} but --sha256 expects {'0' * 64}" == finding["message"]


def test_sha256_is_for_one_file_and_must_be_hex(tmp_path, capsys):
    write(tmp_path / "a.safetensors", clean_file())
    write(tmp_path / "b.safetensors", clean_file())
    assert run(capsys, "--sha256", "0" * 64, str(tmp_path))[0] == 2
    rc, _, err = run(capsys, "--sha256", "xyz", str(tmp_path / "a.safetensors"))
    assert rc == 2
    assert "not a sha256 digest" in err


def test_checksums_file(tmp_path, capsys):
    good = write(tmp_path / "good.safetensors", clean_file())
    bad = write(tmp_path / "bad.safetensors", clean_file())
    write(tmp_path / "unlisted.safetensors", clean_file())
    sums = tmp_path / "SHA256SUMS"
    sums.write_text(f"{sha256(good.read_bytes())}  good.safetensors\n{'ab' * 32} *bad.safetensors\n")
    rc, doc = scan_json(capsys, "--checksums", str(sums), str(tmp_path))
    assert rc == 1
    got = {f["path"].rsplit("/", 1)[1]: [(x["rule"], x["severity"]) for x in f["findings"]] for f in doc["files"]}
    assert got == {
        "bad.safetensors": [("checksum-mismatch", "error")],
        "good.safetensors": [],
        "unlisted.safetensors": [("checksum-missing", "warning")],
        "SHA256SUMS": [],  # the list itself: judged (text), never asked to list its own digest
    }
    assert bad.read_bytes() == clean_file()  # never written to


def test_malformed_checksums_file_is_a_usage_error(tmp_path, capsys):
    sums = write(tmp_path / "SUMS", b"not a checksum line\n")
    rc, _, err = run(capsys, "--checksums", str(sums), str(tmp_path))
    assert rc == 2
    assert "SUMS:1: not a sha256sum line" in err


def test_conflicting_checksum_lines_for_one_file_are_an_error_of_the_list(tmp_path, capsys, monkeypatch):
    # `sha256sum -c` checks every line, so a second line with another digest
    # fails it; the scan must not take the first line and pass.
    good = write(tmp_path / "good.safetensors", clean_file())
    digest = sha256(good.read_bytes())
    sums = tmp_path / "SUMS"
    sums.write_text(f"{digest}  good.safetensors\n{'ab' * 32}  ./good.safetensors\n")
    rc, out, err = run(capsys, "--checksums", str(sums), str(tmp_path))
    assert (rc, out) == (2, "")
    assert err == (
        f"stcheck scan: {sums}:1 and {sums}:2 give different sha256 digests for the same file "
        f"{tmp_path / 'good.safetensors'}\n"
    )
    # Identical lines for one file (the same digest, under two names) are fine.
    sums.write_text(f"{digest}  good.safetensors\n{digest.upper()} *{tmp_path / 'good.safetensors'}\n")
    rc, doc = scan_json(capsys, "--checksums", str(sums), str(tmp_path))
    assert rc == 0
    assert doc["files"][0]["findings"] == []
    # Two lines naming other files that are not on disk do not conflict.
    monkeypatch.chdir(tmp_path)
    sums.write_text(
        f"{digest}  good.safetensors\n{'ab' * 32}  gone/good.safetensors\n{'cd' * 32}  gone/good.safetensors\n"
    )
    rc, out, err = run(capsys, "--checksums", str(sums), str(good))
    assert rc == 1  # the listed file that is missing, ST613 (twice), not a conflict
    assert "different sha256" not in err
    assert out.count(": ST613 checksum-file-missing") == 2


def test_hf_cache_reports_per_model_and_file_and_finds_the_corrupted_blob(tmp_path, capsys):
    files = fake_hf_cache(tmp_path)
    rc, doc = scan_json(capsys, "--hf-cache", str(tmp_path))
    assert rc == 1
    got = [(f["model"], f["revision"], f["path"], f["kind"], [x["rule"] for x in f["findings"]]) for f in doc["files"]]
    # Paths anyone can open (the snapshot's links), with the repository and revision beside them.
    snap = tmp_path / "models--acme--tiny" / "snapshots"
    a, b = "a" * 40, "b" * 40
    assert got == [
        ("acme/tiny", a, str(snap / a / "config.json"), "blob", []),
        ("acme/tiny", a, str(snap / a / "model.safetensors"), "safetensors", []),
        ("acme/tiny", b, str(snap / b / "model.safetensors"), "safetensors", []),
        ("acme/tiny", b, str(snap / b / "sub" / "other.safetensors"), "safetensors", ["checksum-mismatch"]),
    ]
    assert all(Path(f["path"]).is_file() for f in doc["files"])
    message = doc["files"][3]["findings"][0]["message"]
    assert f"hub cache blob name expects {sha256(files['other'])}" in message
    assert doc["summary"]["models"] == {"acme/tiny": {"files": 4, "invalid": 1}}
    schema = json.loads((resources.files("validator") / "schemas" / "report.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    # The blob shared by both snapshots is read once.
    assert doc["summary"]["bytes_scanned"] == len(files["good"]) + len(files["other"]) + len(files["config"])


def test_hf_cache_intact_is_clean(tmp_path, capsys):
    fake_hf_cache(tmp_path, corrupt=False)
    rc, doc = scan_json(capsys, "--hf-cache", str(tmp_path))
    assert rc == 0
    assert doc["summary"]["valid"] == 3


def test_hf_cache_default_location_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert default_hf_cache() == str(tmp_path / "hub")
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert default_hf_cache() == str(tmp_path / "hf" / "hub")


def test_hf_cache_dangling_link_is_an_io_error(tmp_path):
    fake_hf_cache(tmp_path)
    (tmp_path / "models--acme--tiny" / "blobs" / sha256(clean_file())).unlink()
    errors: list[str] = []
    jobs = hf_cache_jobs(str(tmp_path), errors)
    assert len(jobs) == 2
    snap = tmp_path / "models--acme--tiny" / "snapshots"
    assert [e.split(": ")[0] for e in errors] == [
        str(snap / ("a" * 40) / "model.safetensors"),
        str(snap / ("b" * 40) / "model.safetensors"),
    ]


def test_exit_codes(tmp_path, capsys):
    clean = write(tmp_path / "clean.safetensors", clean_file())
    zero = write(tmp_path / "zero.safetensors", all_zero_file())
    invalid = write(tmp_path / "invalid.safetensors", clean_file() + b"\x00")
    assert run(capsys, str(clean))[0] == 0
    assert run(capsys, "--deep", str(zero))[0] == 0  # warnings only
    assert run(capsys, "--deep", "--fail-on", "warning", str(zero))[0] == 1
    assert run(capsys, str(invalid))[0] == 1
    assert run(capsys, "--fail-on", "never", str(invalid))[0] == 0
    assert run(capsys, str(tmp_path / "missing.safetensors"))[0] == 2
    assert run(capsys, str(clean), str(tmp_path / "missing.safetensors"))[0] == 2
    assert run(capsys)[0] == 2  # nothing to scan
    assert main(["scan", "--no-such-option"]) == 2
    capsys.readouterr()


def test_unreadable_file_is_reported_not_raised(tmp_path, capsys):
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    rc, doc = scan_json(capsys, str(fifo))
    assert rc == 2
    assert doc["files"] == []
    [message] = doc["summary"]["unreadable"]
    assert message == f"{fifo}: not a regular file"


def test_progress_bar_stays_off_when_not_a_tty(tmp_path, capsys, monkeypatch):
    write(tmp_path / "a.safetensors", clean_file())
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert _cmd_scan.want_progress("auto") is False
    rc = main(["scan", "--no-config", str(tmp_path)])
    captured = capsys.readouterr()
    assert rc == 0
    assert captured.err == ""
    assert "\x1b[" not in captured.out


def test_progress_bar_on_a_tty_when_rich_is_installed(monkeypatch):
    pytest.importorskip("rich")
    monkeypatch.setattr(_cmd_scan, "stderr_is_tty", lambda: True)
    assert _cmd_scan.want_progress("auto") is True
    assert _cmd_scan.want_progress("never") is False
    monkeypatch.setattr(_cmd_scan, "stderr_is_tty", lambda: False)
    assert _cmd_scan.want_progress("auto") is False
    assert _cmd_scan.want_progress("always") is True


def test_progress_callback_counts_every_byte(tmp_path):
    paths = [write(tmp_path / f"{i}.safetensors", build([("w", "F32", [i + 1], f32(*range(i + 1)))])) for i in range(3)]
    jobs = [Job(str(p), ((str(p), None),)) for p in paths]
    seen: list[int] = []
    run_jobs(jobs, Options(), workers=2, progress=seen.append)
    assert sum(seen) == sum(p.stat().st_size for p in paths)


def test_hf_cache_text_summary_lists_models(tmp_path, capsys):
    fake_hf_cache(tmp_path)
    rc, out, _ = run(capsys, "--hf-cache", str(tmp_path))
    assert rc == 1
    other = tmp_path / "models--acme--tiny" / "snapshots" / ("b" * 40) / "sub" / "other.safetensors"
    assert f"{other}: ST606 checksum-mismatch sha256 is " in out
    assert "  acme/tiny@aaaaaaaaaaaa, acme/tiny@bbbbbbbbbbbb: 4 files, 1 invalid" in out.splitlines()


def test_many_tiny_tensors(tmp_path):
    # Peers give up above 4,096 tensors; 20,000 small tensors stream fine.
    # Every 7th is a zeroed 64 x 64 U8 matrix (tensor-all-zero reports matrices).
    n = 20_000
    tensors = [
        (f"t{i}", "U8", [64, 64], bytes(4096)) if i % 7 == 3 else (f"t{i}", "F32", [1], f32(float(i % 7) - 3.0))
        for i in range(n)
    ]
    path = write(tmp_path / "many.safetensors", build(tensors))
    result = _scan.scan_file(Job(str(path), ((str(path), None),)), Options(deep=True, chunk_size=4096))
    assert result.deep["tensors_scanned"] == n
    assert result.tensor_count == n
    # The 2,857 all-zero tensors are one grouped finding that counts them
    # (issue 15: a scan no longer keeps a finding per tensor).
    (zero,) = [i.finding for i in result.items if i.finding.slug == "tensor-all-zero"]
    assert zero.message.startswith(f"{len(range(3, n, 7))} tensors ('t3', 't10', 't17' and 2854 more): ")
    assert result.deep["all_zero_tensors"] == len(range(3, n, 7))
    assert result.not_listed == len(range(3, n, 7)) - 1000


def test_progress_follows_chunks_of_one_large_file(tmp_path):
    body = b"\x01" * 50_000
    path = write(tmp_path / "big.safetensors", build([("t", "U8", [len(body)], body)]))
    seen: list[int] = []
    run_jobs(
        [Job(str(path), ((str(path), None),))], Options(deep=True, chunk_size=8192), workers=1, progress=seen.append
    )
    assert len(seen) > 5
    assert sum(seen) == path.stat().st_size


def test_deep_without_numpy_is_a_usage_error(tmp_path, capsys, monkeypatch):
    import importlib.util

    path = write(tmp_path / "a.safetensors", clean_file())
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "numpy" else real(name, *a))
    rc, _, err = run(capsys, "--deep", str(path))
    assert rc == 2
    assert "--deep needs numpy" in err
