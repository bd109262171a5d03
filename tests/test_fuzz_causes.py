"""Triage by root cause: within a problem class, one reproducer and a count per distinct cause."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from validator.fuzz import loader_under_test as lut
from validator.fuzz import triage
from validator.fuzz.config import CampaignConfig, LoaderSpec
from validator.fuzz.report import loader_report
from validator.fuzz.seeds import seed_files

ONE_F32 = seed_files()["y_one_f32.safetensors"]
ROOT = Path(__file__).resolve().parent.parent


def _two_keyerrors(path: str) -> dict[str, bytes]:
    """A loader with one class (crash:KeyError) and two causes: a short file, and any other."""
    data = Path(path).read_bytes()
    if len(data) < 8:
        raise KeyError("short")  # the first cause
    raise KeyError("other")  # the second cause, two lines down


def test_two_causes_in_one_class_each_keep_a_reproducer_and_a_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lut, "_FLUSH_S", 0.0)  # the counts of repeats are written at once, not every 2 s
    out = tmp_path / "out"
    target = lut.make_target(lut.LoaderUnderTest(function=_two_keyerrors), str(out))
    for data in (b"abc", b"abcd", ONE_F32, ONE_F32 + b"x", b"ab"):
        target(data)
    [entry] = lut.read_findings(str(out))
    assert entry["category"] == "crash:KeyError"
    assert entry["size"] == 2  # the class keeps its shortest input
    causes = {c["cause"]: (c["count"], Path(c["path"]).read_bytes()) for c in entry["causes"]}
    line = _two_keyerrors.__code__.co_firstlineno
    assert causes == {
        f"test_fuzz_causes.py:{line + 4} (_two_keyerrors)": (3, b"ab"),
        f"test_fuzz_causes.py:{line + 5} (_two_keyerrors)": (2, bytes(8)),  # ONE_F32, minimised
    }
    config = CampaignConfig("loader-under-test", loader=LoaderSpec(function="mine:load", out_dir=str(out)))
    lines, classes = loader_report(config)
    assert classes == 1
    report = "\n".join(lines) + "\n"
    assert "      2 causes, most seen first:\n" in report
    assert f"     3x  test_fuzz_causes.py:{line + 4} (_two_keyerrors)  " in report
    assert f"     2x  test_fuzz_causes.py:{line + 5} (_two_keyerrors)  " in report


@pytest.mark.parametrize(
    ("category", "detail", "trace", "cause"),
    [
        ("accepts-invalid:json-depth", "ST206 ...", "", "json-depth"),
        (
            "rejects-valid",
            "the loader refuses it: ValueError: bad size 12 at 40",
            "",
            "the loader refuses it: ValueError: bad size N at N",
        ),
        (
            "crash:signal-SIGSEGV",
            "signal SIGSEGV",
            "==1==ERROR\nSUMMARY: AddressSanitizer: SEGV /x/l.c:12:3 in f\n",
            "AddressSanitizer: SEGV /x/l.c:12:3 in f",
        ),
        (
            "crash:KeyError",
            "KeyError: 'a'",
            "Traceback\n  File \"/p/mine.py\", line 7, in load\nKeyError: 'a'",
            "mine.py:7 (load)",
        ),
    ],
    ids=["rule", "reason", "sanitizer", "frame"],
)
def test_the_cause_of_each_kind_of_finding(category: str, detail: str, trace: str, cause: str) -> None:
    assert lut.cause_of(category, detail, lut.Outcome(accepted=False, trace=trace)) == cause


@pytest.mark.slow  # importing jsonschema takes seconds
def test_the_note_with_its_causes_follows_the_shipped_schema(tmp_path: Path) -> None:
    import json

    from jsonschema import Draft202012Validator

    schema = Path(lut.__file__).parent.parent / "schemas" / "loader-finding.schema.json"

    lut.record(str(tmp_path), "crash:KeyError", "KeyError: 'a'", b"abc", cause="mine.py:7 (load)")
    lut.record(str(tmp_path), "crash:KeyError", "KeyError: 'b'", b"ab", cause="mine.py:9 (load)")
    note = json.loads((tmp_path / "crash_KeyError.json").read_text(encoding="utf-8"))
    assert sorted(note["causes"]) == ["mine.py:7 (load)", "mine.py:9 (load)"]
    Draft202012Validator(json.loads(schema.read_text(encoding="utf-8"))).validate(note)


def _segfaulting_loader(folder: Path) -> Path:
    """A Python loader that segfaults (through ctypes) on any input over 100 bytes, and rejects the rest."""
    path = folder / "segloader.py"
    path.write_text(
        "import ctypes\n\n\ndef load(path):\n    with open(path, 'rb') as f:\n        data = f.read()\n"
        "    if len(data) > 100:\n        ctypes.string_at(0)\n    raise ValueError('short')\n"
    )
    return path


def test_a_python_stack_dumped_at_a_fatal_signal_names_the_crash_site(tmp_path: Path) -> None:
    """faulthandler's stack (innermost first, no comma before 'in'), as a real process prints it."""
    _segfaulting_loader(tmp_path)
    (tmp_path / "big").write_bytes(bytes(200))
    code = "import faulthandler, segloader; faulthandler.enable(); segloader.load('big')"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == -signal.SIGSEGV
    cause = triage.crash_cause(done.stderr)
    assert cause is not None
    assert re.fullmatch(r"__init__\.py:\d+ \(string_at\)", cause), cause  # ctypes' frame, where it died


@pytest.mark.slow  # a real atheris campaign, some 10 s
def test_a_crash_libfuzzer_stops_on_is_recorded_with_its_crash_site(tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    _segfaulting_loader(tmp_path)
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "validator", "fuzz", "loader-under-test", "--loader", "segloader:load"]
    argv += ["--seconds", "8", "--out", str(out), "--workdir", str(tmp_path / "work"), "--seeds", str(tmp_path / "x")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    [entry] = [e for e in lut.read_findings(str(out)) if e["category"] == "crash:crash"]
    [cause] = entry["causes"]
    assert re.fullmatch(r"__init__\.py:\d+ \(string_at\)", cause["cause"]), cause  # not "crash"
