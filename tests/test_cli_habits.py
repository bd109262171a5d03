# Strategy: what a ruff or pip-audit user expects of a command line (issue
# 24), each habit checked on the command as a new user types it: the
# subcommand's own usage on a mistake, -o for a report file and -d for a
# download folder, --quiet, --color (NO_COLOR, FORCE_COLOR), --select and
# --ignore with the policy's semantics, `-` for standard input (never a
# wait on a terminal), --network-timeout, a default in every option's help,
# `stcheck rules` with a header, a "did you mean" and text an installed user
# can reach, singular counts, binary units, and a one-line exit on Ctrl-C.
from __future__ import annotations

import argparse
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from _stbytes import entry, st
from scan_fixtures import build, clean_file, f32, pickle_payload, write

from validator.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
BOTH = {"check": ["check", "--no-config"], "scan": ["scan", "--no-config", "--progress", "never", "-j", "1"]}
UNALIGNED = b"\x02\x00\x00\x00\x00\x00\x00\x00{}"  # ST104 header-unaligned, a warning only


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "ok.safetensors", clean_file())
    write(tmp_path / "trailing.safetensors", clean_file() + b"\0")
    write(tmp_path / "warn.safetensors", UNALIGNED)
    return tmp_path


# --- usage ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "usage", "message"),
    [
        (["inspect", "a", "b"], "usage: stcheck inspect ", "unrecognized arguments: b"),
        (["check", "--bogus", "x"], "usage: stcheck check ", "unrecognized arguments: --bogus"),
        (["check", "--fromat", "json", "x"], "usage: stcheck check ", "(did you mean --format?)"),
        (["scan", "--no-confg", "x"], "usage: stcheck scan ", "(did you mean --no-config?)"),
        (["check"], "usage: stcheck check ", "the following arguments are required: PATH"),
    ],
)
def test_a_mistake_prints_the_subcommands_usage(capsys: pytest.CaptureFixture[str], argv, usage, message) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith(usage)
    assert message in err
    assert "COMMAND ..." not in err  # not the top-level usage


def test_every_options_help_names_its_default() -> None:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    missing = []
    for name, command in sub.choices.items():
        for action in command._actions:
            if not action.option_strings or action.help == argparse.SUPPRESS:
                continue
            if action.default in (None, False, []) or isinstance(action, argparse._HelpAction):
                continue
            if "default" not in (action.help or "").lower():
                missing.append(f"{name} {action.option_strings[0]}")
    assert missing == []
    fail_on = next(a for a in sub.choices["scan"]._actions if "--fail-on" in a.option_strings)
    assert "(default error)" in fail_on.help


# --- -o FILE, -d DIR ------------------------------------------------------------------


@pytest.mark.parametrize("command", BOTH)
def test_o_is_a_report_file_in_check_and_scan(files: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, out, _ = run(capsys, *BOTH[command], "--format", "json", "-o", "report.json", "ok.safetensors")
    assert (code, out) == (0, "")
    assert json.loads((files / "report.json").read_text())["command"] == command


def test_download_names_its_folder_with_d_and_keeps_o_with_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser("download")
    args = parser.parse_args(["download", "hf://org/m", "-d", "out"])
    assert (args.dest, args.old_output) == ("out", None)
    help_text = " ".join(parser._subparsers._group_actions[0].choices["download"].format_help().split())  # type: ignore[union-attr]
    assert "-d DIR, --dest DIR" in help_text
    assert "-o" not in help_text.replace("-o FILE", "")  # the old spelling works, but is not offered
    from validator.cli.download import _destination

    assert _destination(SimpleNamespace(dest=None, old_output="out")) == "out"
    assert (
        capsys.readouterr().err == "stcheck download: -o/--output DIR is now -d/--dest DIR; the old name still works\n"
    )
    assert _destination(SimpleNamespace(dest=None, old_output=None)) is None
    assert "name the folder to download into: -d/--dest DIR" in capsys.readouterr().err


def test_download_without_a_folder_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("urllib3")
    code, out, err = run(capsys, "download", "https://127.0.0.1:9/m.safetensors")
    assert (code, out) == (2, "")
    assert err == "stcheck download: name the folder to download into: -d/--dest DIR\n"


# --- --quiet ----------------------------------------------------------------------------


@pytest.mark.parametrize("command", BOTH)
def test_quiet_prints_nothing_on_success_and_only_the_findings_otherwise(
    files: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    assert run(capsys, *BOTH[command], "-q", "ok.safetensors") == (0, "", "")
    code, out, _ = run(capsys, *BOTH[command], "--quiet", "ok.safetensors", "trailing.safetensors")
    assert code == 1
    assert out.splitlines() == [
        "trailing.safetensors:112: ST406 buffer-trailing-bytes 1 byte follows the end of the last tensor at 112"
    ]
    assert run(capsys, *BOTH[command], "-qq", "trailing.safetensors") == (1, "", "")
    code, out, err = run(capsys, *BOTH[command], "-qq", "missing.safetensors")
    assert (code, out) == (2, "")
    assert err == "stcheck: missing.safetensors: no such file or directory\n"  # errors still say why


# --- --color ----------------------------------------------------------------------------


@pytest.mark.parametrize("command", BOTH)
def test_color(files: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    argv = [*BOTH[command], "trailing.safetensors", "warn.safetensors"]
    _, plain, _ = run(capsys, *argv)
    assert "\x1b[" not in plain  # auto: stdout is no terminal here
    _, painted, _ = run(capsys, *argv, "--color", "always")
    assert "\x1b[1mtrailing.safetensors:112\x1b[0m: \x1b[31;1mST406 buffer-trailing-bytes\x1b[0m" in painted
    assert "\x1b[33;1mST104 header-unaligned\x1b[0m" in painted
    assert re.sub(r"\x1b\[[0-9;]*m", "", painted) == plain  # colour only wraps what was escaped
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in run(capsys, *argv)[1]
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in run(capsys, *argv)[1]  # NO_COLOR wins over FORCE_COLOR
    assert "\x1b[" in run(capsys, *argv, "--color", "always")[1]  # an explicit flag wins over both
    assert "\x1b[" not in run(capsys, *argv, "--format", "json", "--color", "always")[1]


def test_color_never_paints_a_hostile_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    name = "x\x1b[2J.safetensors"
    write(tmp_path / name, clean_file() + b"\0")
    _, out, _ = run(capsys, "check", "--no-config", "--color", "always", name)
    assert "\x1b[2J" not in out
    assert "x\\x1b[2J.safetensors:112" in out


# --- --select / --ignore ---------------------------------------------------------------


@pytest.mark.parametrize("command", BOTH)
def test_ignore_suppresses_as_a_policy_does(files: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    for token in ("ST104", "header-unaligned", "st104"):
        code, out, _ = run(capsys, *BOTH[command], "--ignore", token, "--fail-on", "warning", "warn.safetensors")
        assert code == 0, token
        assert out.splitlines()[:-1] == []  # no finding line
        assert out.splitlines()[-1].endswith(f"0 warnings; 1 suppressed by policy; policy --ignore {token}")
    code, out, _ = run(capsys, *BOTH[command], "--ignore", "ST104", "--format", "json", "warn.safetensors")
    (finding,) = json.loads(out)["files"][0]["findings"]
    assert finding["suppression"] == {"reason": "--ignore ST104"}
    assert json.loads(out)["policies"] == ["--ignore ST104"]


@pytest.mark.parametrize("command", BOTH)
def test_a_rule_the_reference_rejects_cannot_be_ignored(
    files: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    for token in ("ST406", "buffer-trailing-bytes", "ST4", "ALL"):
        code, out, err = run(capsys, *BOTH[command], "--ignore", token, "trailing.safetensors")
        assert (code, out) == (2, ""), token
        assert "it cannot be ignored" in err
        assert "safetensors 0.8.0 rejects every file that breaks" in err


@pytest.mark.parametrize("command", BOTH)
def test_select_reports_only_those_rules_but_never_passes_a_rejected_file(
    files: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    code, out, _ = run(capsys, *BOTH[command], "--select", "ST6", "--fail-on", "warning", "warn.safetensors")
    assert code == 0
    assert "ST104" not in out
    code, out, _ = run(
        capsys, *BOTH[command], "--select", "ST6,header-unaligned", "warn.safetensors", "trailing.safetensors"
    )
    assert code == 1
    assert "ST104 header-unaligned" in out
    assert "ST406 buffer-trailing-bytes" in out  # safetensors 0.8.0 rejects it: always on
    code, out, err = run(capsys, *BOTH[command], "--ignore", "ST10", "warn.safetensors")
    assert (code, out) == (2, "")  # a prefix that covers ST101-ST103 cannot be ignored either
    assert "--ignore ST10: safetensors 0.8.0 rejects every file that breaks ST101 file-too-small" in err


@pytest.mark.parametrize("command", BOTH)
def test_an_unknown_rule_gets_a_guess(files: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, out, err = run(capsys, *BOTH[command], "--ignore", "header-unalligned", "ok.safetensors")
    assert (code, out) == (2, "")
    assert err == (
        f"stcheck {command}: --ignore header-unalligned: no rule has this code, slug or code prefix; "
        "did you mean header-unaligned?\n"
    )


def test_ignore_on_top_of_a_policy(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(files / "pyproject.toml", b'[tool.stcheck]\nrequired_metadata = ["license"]\n')
    code, out, _ = run(capsys, "check", "--ignore", "ST612", "--format", "json", "ok.safetensors")
    assert code == 0
    doc = json.loads(out)
    assert doc["policies"] == [f"{files / 'pyproject.toml'} [tool.stcheck]", "--ignore ST612"]
    assert doc["files"][0]["findings"][0]["suppression"] == {"reason": "--ignore ST612"}


# --- standard input ---------------------------------------------------------------------


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))


@pytest.mark.parametrize("command", BOTH)
def test_dash_reads_standard_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    _stdin(monkeypatch, clean_file() + b"\0")
    code, out, _ = run(capsys, *BOTH[command], "-")
    assert code == 1
    assert (
        out.splitlines()[0]
        == "<stdin>:112: ST406 buffer-trailing-bytes 1 byte follows the end of the last tensor at 112"
    )
    _stdin(monkeypatch, pickle_payload())  # a pickle: judged as a folder's file is (issue 35), naming the call
    code, out, _ = run(capsys, *BOTH[command], "-")
    assert (code, out.split()[1]) == (1, "ST701")


def test_dash_keeps_only_the_header_in_memory(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    size = 64 << 20
    big = io.BytesIO(st('{"w":' + entry("U8", (size,), (0, size)) + "}") + bytes(size))
    reads: list[int] = []

    class Counting(io.BufferedReader):
        def read(self, n: int | None = -1) -> bytes:
            chunk = super().read(n)
            reads.append(len(chunk))
            return chunk

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(Counting(big)))  # type: ignore[arg-type]
    code, out, _ = run(capsys, "check", "--no-config", "-")
    assert code == 0, out
    assert max(reads) <= 1 << 20  # read in bounded chunks, never all at once


def test_dash_with_a_terminal_says_so_and_exits_2() -> None:
    import pty

    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "validator", "check", "--no-config", "-"],
            stdin=follower,
            capture_output=True,
            text=True,
            timeout=30,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
        )
    finally:
        os.close(leader)
        os.close(follower)
    assert proc.returncode == 2
    assert (
        proc.stderr
        == "stcheck: -: standard input is a terminal; pipe a file in (stcheck check - < model.safetensors)\n"
    )


def test_scan_of_dash_is_header_only(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _stdin(monkeypatch, clean_file())
    code, out, err = run(capsys, *BOTH["scan"], "--deep", "-")
    assert (code, out) == (2, "")
    assert (
        err
        == "stcheck scan: - (standard input, once) is checked from its header only: --deep and digests need a file\n"
    )


def test_ctrl_c_is_one_line_and_exit_130(tmp_path: Path) -> None:
    # `stcheck check -` waiting on a pipe that never closes, then Ctrl-C.
    proc = subprocess.Popen(
        [sys.executable, "-m", "validator", "check", "--no-config", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdin is not None
    proc.stdin.write(b"\x08" + bytes(7))
    proc.stdin.flush()
    # Wait until it blocks reading the pipe (not still importing), then Ctrl-C.
    deadline = time.monotonic() + 30
    wchan = Path(f"/proc/{proc.pid}/wchan")
    while time.monotonic() < deadline and "pipe" not in (wchan.read_text() if wchan.exists() else "pipe"):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err == b"stcheck: interrupted\n"
    assert out == b""


# --- --network-timeout ----------------------------------------------------------------


@pytest.mark.parametrize("command", ["check", "scan", "inspect", "download"])
def test_network_timeout_keeps_timeout_as_its_old_name(command: str) -> None:
    parser = build_parser(command)
    rest = ["hf://org/m", "-d", "out"] if command == "download" else ["x"]
    assert parser.parse_args([command, "--network-timeout", "5", *rest]).timeout == 5.0
    assert parser.parse_args([command, "--timeout", "7", *rest]).timeout == 7.0
    assert parser.parse_args([command, *rest]).timeout == 30.0
    text = build_parser(command)._subparsers._group_actions[0].choices[command].format_help()  # type: ignore[union-attr]
    assert "--network-timeout S" in text
    assert "--timeout " not in text


# --- stcheck rules -----------------------------------------------------------------------


def test_rules_has_a_header_row_and_says_where_the_text_is(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STCHECK_SPEC_URL", raising=False)
    code, out, _ = run(capsys, "rules")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["code", "slug", "severity", "profiles"]
    assert lines[1].startswith("ST101  file-too-small ")
    assert "stcheck rules CODE" in out
    assert "spec/SPEC.md" not in out  # an installed user has no spec/ folder
    code, out, _ = run(capsys, "rules", "ST401")
    assert "spec/SPEC.md" not in out
    monkeypatch.setenv("STCHECK_SPEC_URL", "https://mirror.example/SPEC.md")
    assert "(https://mirror.example/SPEC.md)" in run(capsys, "rules")[1]
    assert "Spec: https://mirror.example/SPEC.md#offsets-not-contiguous" in run(capsys, "rules", "ST401")[1]


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("header-too-big", "header-too-large"), ("ST4O1", "ST401"), ("offsets-not-contigous", "offsets-not-contiguous")],
)
def test_rules_did_you_mean(capsys: pytest.CaptureFixture[str], typed: str, meant: str) -> None:
    code, out, err = run(capsys, "rules", typed)
    assert (code, out) == (2, "")
    assert err == f"stcheck rules: unknown rule {typed!r}; did you mean {meant}? (`stcheck rules` lists them)\n"


# --- counts and units ---------------------------------------------------------------------


def test_singular_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    shard = "model-00001-of-00001.safetensors"
    write(tmp_path / "c" / shard, build([("w", "F32", [1], f32(1.0))]) + b"\0")
    (tmp_path / "c" / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 4}, "weight_map": {"w": shard}})
    )
    code, out, _ = run(capsys, "check", "--no-config", "c")
    assert code == 1
    assert out.splitlines() == [
        "checkpoint c/model.safetensors.index.json: 1 shard, 1 tensor, 1 parameters: invalid (1 error in the index)",
        out.splitlines()[1],
        f"c/{shard}:68: ST406 buffer-trailing-bytes 1 byte follows the end of the last tensor at 68",
        "1 file checked (strict): 0 valid, 1 invalid; 2 errors, 0 warnings; 1 checkpoint, 1 invalid",
    ]
    assert "ST504 index-shard-invalid" in out.splitlines()[1]
    code, out, _ = run(capsys, "inspect", "c")
    assert "1 tensor, 1 parameters, 4 data bytes in 1 shard" in out
    assert "  F32: 1 tensor, 1 parameters" in out
    code, out, _ = run(capsys, "inspect", f"c/{shard}")
    assert out.splitlines()[-1] == "invalid: 1 error"
    assert "1 tensor, 4 data bytes" in out


def test_no_count_is_written_without_the_plural_helper() -> None:
    # An f-string count followed by a plural noun, in the output modules.
    pattern = re.compile(r"\{[^{}]*\} (errors|warnings|files|tensors|checkpoints|shards|findings|bytes follow)\b")
    sources = [
        *ROOT.glob("validator/cli/*.py"),
        *ROOT.glob("validator/scan/format*.py"),
        ROOT / "validator/report/sarif.py",
        ROOT / "validator/report/junit.py",
    ]
    found = [f"{p.name}: {m.group(0)}" for p in sources for m in pattern.finditer(p.read_text(encoding="utf-8"))]
    assert found == []


def test_inspect_of_a_folder_never_prints_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "short.safetensors", b"\x01\x02")
    write(tmp_path / "ok.safetensors", clean_file())
    code, out, _ = run(capsys, "inspect", str(tmp_path))
    assert code == 1
    assert "None" not in out
    assert f"{tmp_path / 'short.safetensors'}: 2 bytes; no header could be read, 0 tensors" in out.splitlines()


def test_the_progress_bar_counts_bytes_and_speed_in_the_same_units() -> None:
    pytest.importorskip("rich")
    from rich.progress import DownloadColumn, TransferSpeedColumn

    from validator.report.progress import rich_progress

    progress = rich_progress("scanning")
    columns = progress.columns
    assert not any(isinstance(c, TransferSpeedColumn) for c in columns)  # rich's speed is in kB/s
    assert any(isinstance(c, DownloadColumn) and c.binary_units for c in columns)
    (speed,) = [c for c in columns if type(c).__name__ == "BinarySpeedColumn"]
    task = SimpleNamespace(finished_speed=None, speed=3 * 2**20)
    assert str(speed.render(task)) == "3.0 MiB/s"


def test_findings_count_in_the_singular_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import validator
    from validator._check import Checker
    from validator.config.policy import Policy, check_policy

    (finding,) = validator.validate(b"\x01").findings
    assert finding.message == "file is 1 byte; the 8-byte length prefix alone needs 8"
    (finding,) = [f for f in validator.validate(clean_file()[:-1]).findings if f.slug == "buffer-truncated"]
    assert finding.message.endswith(": 1 byte missing")
    out = Checker()
    check_policy(validator.validate(clean_file()), Policy(max_tensors=0), out)
    assert out.findings[0].message == "file has 1 tensor; the policy allows 0"
