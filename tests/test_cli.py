# Strategy: the `stcheck` command line, driven in-process through
# validator.cli.main.main (fast) and, where the process matters (python -m,
# imports at start-up), in a subprocess.  Files are written to tmp_path from
# hand-made bytes.
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _stbytes import data_start, entry, st

from validator.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
VALID = st('{"__metadata__":{"format":"pt"},"w":' + entry("F32", (2,), (0, 8)) + "}", b"\0" * 8)
HOLE = st('{"w":' + entry("F32", (1,), (4, 8)) + "}", b"\0" * 8)
LEADING_SPACE = st(' {"w":' + entry("F32", (1,), (0, 4)) + "}", b"\0" * 4)  # strict-only error
UNALIGNED = st("{}", pad=False)  # warning only
LINE = re.compile(r"^(?P<path>.+):(?P<offset>\d*): (?P<code>ST\d{3}) (?P<slug>[a-z0-9-]+) (?P<message>.+)$")
SUMMARY = re.compile(
    r"^\d+ files? checked \((strict|reference)\): \d+ valid, \d+ invalid; \d+ errors?, \d+ warnings?"
    r"(; \d+ more findings? not listed \(1000 per rule and file kept\))?(; \d+ unreadable)?$"
)


def _write(tmp_path: Path, name: str, blob: bytes) -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(blob)
    return str(path)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


# --- exit codes ------------------------------------------------------------


def test_valid_file_exits_0(tmp_path, capsys) -> None:
    code, out, _ = _run(capsys, "check", _write(tmp_path, "ok.safetensors", VALID))
    assert code == 0
    assert out.splitlines() == ["1 file checked (strict): 1 valid, 0 invalid; 0 errors, 0 warnings"]


def test_invalid_file_exits_1(tmp_path, capsys) -> None:
    path = _write(tmp_path, "hole.safetensors", HOLE)
    code, out, _ = _run(capsys, "check", path)
    assert code == 1
    lines = out.splitlines()
    m = LINE.match(lines[0])
    assert m is not None
    assert m["path"] == path
    assert (m["code"], m["slug"]) == ("ST401", "offsets-not-contiguous")
    assert int(m["offset"]) == data_start(HOLE)
    assert SUMMARY.match(lines[-1])
    assert lines[-1].endswith("0 valid, 1 invalid; 1 error, 0 warnings")


def test_missing_file_exits_2(tmp_path, capsys) -> None:
    code, _, err = _run(capsys, "check", str(tmp_path / "nope.safetensors"))
    assert code == 2
    assert "nope.safetensors" in err
    assert err.startswith("stcheck: ")


def test_path_under_missing_directory_exits_2(tmp_path, capsys) -> None:
    code, _, err = _run(capsys, "check", str(tmp_path / "no" / "such" / "dir" / "x.safetensors"))
    assert code == 2
    assert "no such file" in err


def test_missing_file_wins_over_valid_file(tmp_path, capsys) -> None:
    ok = _write(tmp_path, "ok.safetensors", VALID)
    code, out, _ = _run(capsys, "check", ok, str(tmp_path / "missing.safetensors"))
    assert code == 2
    assert out.splitlines()[-1].endswith("; 1 unreadable")


def test_directory_given_to_inspect_exits_2(tmp_path, capsys) -> None:
    code, _, err = _run(capsys, "inspect", str(tmp_path))
    assert code == 2
    assert "not a regular file" in err


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_exits_2(tmp_path, capsys) -> None:
    path = _write(tmp_path, "locked.safetensors", VALID)
    Path(path).chmod(0)
    try:
        code, _, err = _run(capsys, "check", path)
    finally:
        Path(path).chmod(0o600)
    assert code == 2
    assert "locked.safetensors" in err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["check"],
        ["check", "--profile", "lenient", "x"],
        ["check", "--format", "xml", "x"],
        ["frobnicate"],
        ["check", "--bogus", "x"],
    ],
    ids=["no-command", "check-without-path", "unknown-profile", "unknown-format", "unknown-command", "unknown-option"],
)
def test_usage_errors_exit_2(argv, capsys) -> None:
    code, _, err = _run(capsys, *argv)
    assert code == 2
    assert err


def test_version_exits_0(capsys) -> None:
    code, out, _ = _run(capsys, "--version")
    assert code == 0
    assert out.startswith("stcheck ")


# --- profiles and warnings ----------------------------------------------


def test_profile_changes_verdict(tmp_path, capsys) -> None:
    path = _write(tmp_path, "lead.safetensors", LEADING_SPACE)
    code, out, _ = _run(capsys, "check", path)
    assert code == 1
    assert "ST202 header-leading-bytes" in out
    code, out, _ = _run(capsys, "check", "--profile", "reference", path)
    assert code == 0
    assert "ST202" not in out
    assert "(reference)" in out.splitlines()[-1]


def test_warnings_do_not_fail_and_can_be_hidden(tmp_path, capsys) -> None:
    path = _write(tmp_path, "unaligned.safetensors", UNALIGNED)
    code, out, _ = _run(capsys, "check", path)
    assert code == 0
    assert (
        out.splitlines()[0]
        == f"{path}:0: ST104 header-unaligned " + out.splitlines()[0].split(" header-unaligned ", 1)[1]
    )
    assert out.splitlines()[-1].endswith("1 valid, 0 invalid; 0 errors, 1 warning")
    code, out, _ = _run(capsys, "check", "--no-warnings", path)
    assert code == 0
    assert len(out.splitlines()) == 1


# --- JSON output ----------------------------------------------------------


def test_json_output(tmp_path, capsys) -> None:
    ok = _write(tmp_path, "a.safetensors", VALID)
    bad = _write(tmp_path, "b.safetensors", HOLE)
    code, out, _ = _run(capsys, "check", "--format", "json", ok, bad)
    assert code == 1
    doc = json.loads(out)
    # The document `stcheck scan --format json` writes (one writer), with "command": "check".
    assert set(doc) == {"tool", "version", "command", "profile", "policy", "policies", "files", "summary"}
    assert (doc["tool"], doc["command"], doc["policy"], doc["policies"]) == ("stcheck", "check", None, [])
    assert doc["profile"] == "strict"
    summary = doc["summary"]
    assert {k: summary[k] for k in ("files", "valid", "invalid", "reference_loads", "errors", "warnings")} == {
        "files": 2,
        "valid": 1,
        "invalid": 1,
        "reference_loads": 0,
        "errors": 1,
        "warnings": 0,
    }
    assert (summary["suppressed"], summary["not_listed"], summary["unreadable"]) == (0, 0, [])
    assert summary["bytes_scanned"] == 0  # check reads headers only
    assert summary["findings_by_rule"] == {"ST401 offsets-not-contiguous": 1}
    first, second = doc["files"]
    assert {
        "path",
        "valid",
        "profile",
        "file_size",
        "header_size",
        "findings",
        "tensors",
        "metadata",
        "suppressed",
        "reference_valid",
    } <= set(first)
    assert (first["kind"], first["tensor_count"], first["sha256"]) == ("safetensors", 1, None)
    assert (first["path"], first["valid"], first["findings"]) == (ok, True, [])
    assert (first["reference_valid"], second["reference_valid"]) == (True, False)
    assert first["tensors"] == {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
    assert first["metadata"] == {"format": "pt"}
    assert first["file_size"] == len(VALID)
    assert second["valid"] is False
    (finding,) = second["findings"]
    assert finding == {
        "rule": "offsets-not-contiguous",
        "code": "ST401",
        "severity": "error",
        "offset": data_start(HOLE),
        "tensor": "w",
        "json_path": "/w/data_offsets",
        "message": finding["message"],
    }


def test_json_output_lists_unreadable_paths(tmp_path, capsys) -> None:
    code, out, _ = _run(capsys, "check", "--format", "json", str(tmp_path / "gone.safetensors"))
    assert code == 2
    doc = json.loads(out)
    assert doc["files"] == []
    assert len(doc["summary"]["unreadable"]) == 1


# --- directories ------------------------------------------------------------


def test_directory_recursion_finds_safetensors_only(tmp_path, capsys) -> None:
    a = _write(tmp_path, "m/a.safetensors", VALID)
    b = _write(tmp_path, "m/sub/deeper/b.safetensors", HOLE)
    _write(tmp_path, "m/sub/notes.txt", b"not a model")
    _write(tmp_path, "m/sub/c.safetensors.bak", HOLE)
    code, out, _ = _run(capsys, "check", "--format", "json", str(tmp_path / "m"))
    assert code == 1
    doc = json.loads(out)
    assert [f["path"] for f in doc["files"] if f["kind"] == "safetensors"] == [a, b]
    assert [Path(f["path"]).name for f in doc["files"] if f["kind"] == "other"] == ["c.safetensors.bak", "notes.txt"]


def test_empty_directory_is_an_error_not_a_pass(tmp_path, capsys) -> None:
    # Issue 12: a check that found nothing to check used to exit 0 with
    # "0 files checked"; a CI gate on a mistyped directory then passed.
    code, out, err = _run(capsys, "check", str(tmp_path))
    assert code == 2
    assert err == f"stcheck: {tmp_path}: no *.safetensors file in this directory or below it\n"
    assert out.splitlines() == ["0 files checked (strict): 0 valid, 0 invalid; 0 errors, 0 warnings; 1 unreadable"]


# --- inspect and rules --------------------------------------------------------


def test_inspect_text(tmp_path, capsys) -> None:
    path = _write(tmp_path, "ok.safetensors", VALID)
    code, out, _ = _run(capsys, "inspect", path)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"{path}: {len(VALID)} bytes, header {len(VALID) - 16} bytes"
    assert lines[1].split() == ["name", "dtype", "shape", "begin", "end", "bytes"]
    assert lines[3].split() == ["w", "F32", "[2]", "0", "8", "8"]
    assert "1 tensor, 8 data bytes" in lines
    assert "  format: pt" in lines
    assert lines[-1] == "valid"


def test_inspect_invalid_json(tmp_path, capsys) -> None:
    path = _write(tmp_path, "hole.safetensors", HOLE)
    code, out, _ = _run(capsys, "inspect", "--format", "json", path)
    assert code == 1
    doc = json.loads(out)
    assert doc["findings"][0]["rule"] == "offsets-not-contiguous"


def test_rules_lists_every_rule(capsys) -> None:
    from validator import RULES

    code, out, _ = _run(capsys, "rules", "--format", "json")
    assert code == 0
    assert [r["slug"] for r in json.loads(out)] == [r.slug for r in RULES]


# --- process-level behaviour ----------------------------------------------------


def test_python_dash_m_validator(tmp_path) -> None:
    path = _write(tmp_path, "hole.safetensors", HOLE)
    proc = subprocess.run(
        [sys.executable, "-m", "validator", "check", path],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1
    assert "ST401 offsets-not-contiguous" in proc.stdout


_NO_HEAVY_IMPORTS = """
import sys
{body}
heavy = sorted(m for m in ("numpy", "torch", "ml_dtypes", "safetensors") if m in sys.modules)
print(heavy)
"""


@pytest.mark.parametrize(
    "body",
    [
        "import validator\nvalidator.validate(b'\\x02\\0\\0\\0\\0\\0\\0\\0{}')",
        "from validator.cli.main import main\nrc = main(['check', sys.argv[1]])\nassert rc == 0, rc",
        "from validator.cli.main import main\nrc = main(['inspect', sys.argv[1]])\nassert rc == 0, rc",
    ],
    ids=["import-validator", "stcheck-check", "stcheck-inspect"],
)
def test_no_numpy_or_torch_at_startup(tmp_path, body: str) -> None:
    path = _write(tmp_path, "ok.safetensors", VALID)
    proc = subprocess.run(
        [sys.executable, "-c", _NO_HEAVY_IMPORTS.format(body=body), path],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_suppressed_findings_are_counted_in_both_formats(tmp_path, capsys) -> None:
    # 1,500 duplicate tensor names with invalid entries: 1,500 findings of
    # tensor-entry-invalid and 1,499 of duplicate-key; 1000 of each are kept.
    body = "{" + ",".join(['"a":0'] * 1500) + "}"
    path = _write(tmp_path, "dups.safetensors", st(body))
    code, out, _ = _run(capsys, "check", path)
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 2001
    assert SUMMARY.match(lines[-1])
    assert lines[-1].endswith("2000 errors, 0 warnings; 999 more findings not listed (1000 per rule and file kept)")
    code, out, _ = _run(capsys, "check", "--format", "json", path)
    doc = json.loads(out)
    assert doc["summary"]["not_listed"] == 999  # "suppressed" counts what a policy suppressed, as in scan
    assert doc["files"][0]["suppressed"] == 999


# --- special files: never hang (issue 12) --------------------------------------

_NO_HANG_S = 30  # a blocked open would wait forever; a subprocess bounds the test


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "validator", *argv],
        capture_output=True,
        text=True,
        timeout=_NO_HANG_S,
        env=_env(),
        check=False,
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
@pytest.mark.parametrize("command", ["check", "inspect"])
def test_fifo_is_refused_without_blocking(tmp_path, command) -> None:
    fifo = tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    proc = _cli(command, str(fifo))
    assert proc.returncode == 2
    assert proc.stderr == f"stcheck: {fifo}: not a regular file\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
def test_directory_holding_a_fifo_checks_the_rest(tmp_path) -> None:
    os.mkfifo(tmp_path / "a.safetensors")
    ok = _write(tmp_path, "b.safetensors", VALID)
    proc = _cli("check", str(tmp_path))
    assert proc.returncode == 2
    assert f"{tmp_path / 'a.safetensors'}: not a regular file" in proc.stderr
    assert proc.stdout.splitlines()[-1] == (
        "1 file checked (strict): 1 valid, 0 invalid; 0 errors, 0 warnings; 1 unreadable"
    )
    assert ok not in proc.stderr


def test_mistyped_path_among_good_ones_exits_2(tmp_path, capsys) -> None:
    ok = _write(tmp_path, "ok.safetensors", VALID)
    code, _, err = _run(capsys, "check", ok, str(tmp_path / "typo"))
    assert code == 2
    assert "typo: no such file or directory" in err


# --- output form (issue 12) -------------------------------------------------------


def test_str_of_a_finding_is_the_one_line_form() -> None:
    import validator

    (finding,) = validator.validate(b"\x01\x02").findings
    assert str(finding) == "<bytes>:0: ST101 file-too-small file is 2 bytes; the 8-byte length prefix alone needs 8"
    no_offset = validator.Finding(validator.rule("json-syntax"), "m", None)
    assert str(no_offset) == "<bytes>: ST205 json-syntax m"  # no "path::"


def test_inspect_of_a_file_without_a_header(tmp_path, capsys) -> None:
    path = _write(tmp_path, "short.safetensors", b"\x01\x02")
    code, out, _ = _run(capsys, "inspect", path)
    assert code == 1
    assert "None" not in out
    assert out.splitlines()[0] == f"{path}: 2 bytes; no header could be read"
    assert "name  dtype" not in out  # no empty tensor table for a file without one


def test_repeated_tensor_warnings_are_grouped(tmp_path, capsys) -> None:
    # 20 F32 tensors after an unaligned header: one grouped tensor-unaligned
    # warning, not 20 (plus the header's own warning).
    header = "{" + ",".join(f'"t{i:02}":' + entry("F32", (1,), (4 * i, 4 * i + 4)) for i in range(20)) + "}"
    header += " " * (-len(header) % 8 + 2)  # N = 2 (mod 8): every F32 tensor starts 2 bytes off
    path = _write(tmp_path, "unaligned.safetensors", st(header, b"\0" * 80, pad=False))
    code, out, _ = _run(capsys, "check", path)
    assert code == 0
    lines = out.splitlines()
    assert [line.split()[1] for line in lines[:-1]] == ["ST104", "ST408"], lines
    assert "20 tensors ('t00', 't01', 't02' and 17 more)" in lines[1]
    # The summary counts the findings listed, as JSON lists them and scan counts them.
    assert lines[-1].endswith("0 errors, 2 warnings")
    code, out, _ = _run(capsys, "check", "--format", "json", path)
    findings = json.loads(out)["files"][0]["findings"]
    assert [f["code"] for f in findings] == ["ST104", "ST408"]


def test_every_subcommand_and_option_has_help() -> None:
    import argparse

    from validator.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        assert command.description, f"{name} has no description"
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"


# --- hostile file names (issue 15, section 5) ---------------------------------------

HOSTILE = [
    os.fsdecode(b"bad\xff.safetensors"),
    "ctl\x01\x1b[31m.safetensors",
    "nl\n1 file checked (strict): 1 valid, 0 invalid; 0 errors, 0 warnings\n.safetensors",
    "bidi\u202egpj.safetensors",
]


@pytest.mark.parametrize("name", HOSTILE, ids=["non-utf8", "control", "newline", "bidi"])
def test_hostile_names_in_check_output(tmp_path, name) -> None:
    path = tmp_path / name
    path.write_bytes(HOLE)
    env = {**_env(), "PYTHONIOENCODING": "utf-8"}
    for fmt in ("text", "json"):
        proc = subprocess.run(
            [sys.executable, "-m", "validator", "check", "--format", fmt, os.fsencode(path)],
            capture_output=True,
            timeout=_NO_HANG_S,
            env=env,
            check=False,
        )
        assert proc.returncode == 1, proc.stderr
        out = proc.stdout.decode("utf-8")  # strict: the output is valid UTF-8
        if fmt == "text":
            lines = out.splitlines()
            assert len(lines) == 2, lines  # one finding and the summary: no forged line
            assert all(c.isprintable() for c in out.replace("\n", ""))
            assert lines[-1] == "1 file checked (strict): 0 valid, 1 invalid; 1 error, 0 warnings"
        else:
            doc = json.loads(out)
            (entry_,) = doc["files"]
            # Exact when the name is Unicode; escaped like `ls -b` when it holds undecodable bytes.
            assert entry_["path"] == (str(path) if "\udcff" not in name else str(tmp_path) + "/bad\\xff.safetensors")


def test_names_the_terminal_cannot_encode_are_escaped(tmp_path) -> None:
    path = _write(tmp_path, "é.safetensors", st('{"poids_é":' + entry("F32", (1,), (0, 4)) + "}", b"\0" * 4))
    env = {**_env(), "PYTHONIOENCODING": "ascii"}
    proc = subprocess.run(
        [sys.executable, "-m", "validator", "inspect", path],
        capture_output=True,
        text=True,
        timeout=_NO_HANG_S,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "poids_\\xe9" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_help_uses_binary_units_only() -> None:
    # Issue 12: MB and MiB were mixed; sizes shown to users are KiB/MiB/GiB.
    import argparse

    from validator.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        text = command.format_help()
        assert re.search(r"\b[KMGT]B\b", text) is None, (name, re.findall(r".{30}\b[KMGT]B\b", text))
