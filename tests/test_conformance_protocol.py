# The command protocol of a loader under test (issue 20): how an exit code,
# a signal and what the loader wrote on stderr become accepted, rejected or
# a crash.  One rule (validator/harness/rejection.py) serves `stcheck conformance
# --impl CMD` and `stcheck fuzz loader-under-test --loader-cmd CMD`, and it
# is the rule a function loader's exception gets, judged by class name.
# Unit tests of the rule first, then real child processes (a traceback, a
# segfault, an abort, a Rust-style exit 101, a sanitizer report), then the
# acceptance test: the naive loader gets the same crashes as a command as
# it does as a function.
from __future__ import annotations

import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from validator.cli.main import main
from validator.conformance.harness import load_cases, probe, run_all, user_impl
from validator.fuzz import loader_under_test as yours
from validator.fuzz.seeds import seed_files
from validator.harness.rejection import REJECT_EXIT, judge_exit, traceback_exception

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
NAIVE = ROOT / "fuzz" / "examples" / "naive_loader.py"


def _tb(exc_line: str, *, chained: bool = False) -> str:
    frames = textwrap.dedent(
        """\
        Traceback (most recent call last):
          File "/home/u/my_loader.py", line 9, in <module>
            load(sys.argv[1])
          File "/home/u/my_loader.py", line 5, in load
            begin, end = info["data_offsets"]
                         ~~~~^^^^^^^^^^^^^^^^
        """
    )
    if chained:
        frames = frames + "ValueError: first\n\nDuring handling of the above exception, another exception occurred:\n\n"
        frames += 'Traceback (most recent call last):\n  File "x.py", line 2, in <module>\n'
    return frames + exc_line + "\n"


# --- the rule, on made-up outcomes -------------------------------------------------


def test_traceback_with_keyerror_is_a_crash_showing_the_exception_line():
    v = judge_exit(1, None, _tb("KeyError: 'F4'"))
    assert (v.outcome, v.kind) == ("crash", "KeyError")
    assert v.detail.startswith("KeyError: 'F4'")
    assert "Traceback (most recent call last)" not in v.detail


def test_traceback_with_valueerror_is_a_rejection():
    v = judge_exit(1, None, _tb("ValueError: header is not valid JSON"))
    assert v.outcome == "rejected"
    assert v.detail == "ValueError: header is not valid JSON"


@pytest.mark.parametrize(
    ("line", "outcome"),
    [
        ("json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)", "rejected"),
        ("UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0", "rejected"),
        ("safetensors_rust.SafetensorError: Error while deserializing header", "rejected"),
        ("validator._errors.StcheckError: bad", "rejected"),
        ("struct.error: unpack requires a buffer of 8 bytes", "crash"),
        ("TypeError: 'NoneType' object is not subscriptable", "crash"),
        ("RecursionError: maximum recursion depth exceeded while decoding a JSON array", "crash"),
        ("MemoryError", "crash"),
        ("ValueError: Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits", "crash"),
        ("pyo3_runtime.PanicException: range end index 4000 out of range", "crash"),
        ("mylib.errors.HeaderError: bad header", "crash"),  # unknown class: named with --reject-exception below
    ],
)
def test_traceback_classes_follow_the_function_rule(line, outcome):
    assert judge_exit(1, None, _tb(line)).outcome == outcome


def test_reject_exception_names_count_for_commands_too():
    tb = _tb("mylib.errors.HeaderError: bad header")
    assert judge_exit(1, None, tb, documented=("mylib.errors:HeaderError",)).outcome == "rejected"
    assert judge_exit(1, None, tb, documented=("otherlib:HeaderError",)).outcome == "crash"
    # A class of a script run as __main__ (or a builtin) prints without its module.
    bare = _tb("HeaderError: bad header")
    assert judge_exit(1, None, bare, documented=("my_loader:HeaderError",)).outcome == "rejected"
    assert judge_exit(1, None, _tb("KeyError: 'x'"), documented=("builtins:KeyError",)).outcome == "rejected"


def test_the_last_traceback_of_a_chain_decides():
    v = judge_exit(1, None, _tb("KeyError: 'dtype'", chained=True))
    assert (v.outcome, v.kind) == ("crash", "KeyError")
    assert traceback_exception(_tb("KeyError: 'dtype'", chained=True)) == ("KeyError", "KeyError: 'dtype'")


def test_exit_1_without_a_traceback_is_a_rejection_with_its_reason():
    v = judge_exit(1, None, "my_loader: header too large\n")
    assert v.outcome == "rejected"
    assert v.detail == "my_loader: header too large"
    assert judge_exit(1, None, "").outcome == "rejected"


def test_exit_0_accepts():
    assert judge_exit(0, None, "").outcome == "accepted"


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGABRT, signal.SIGKILL, signal.SIGBUS])
def test_a_signal_is_a_crash_named_by_the_signal(sig):
    v = judge_exit(None, int(sig), "")
    assert (v.outcome, v.kind) == ("crash", f"signal-{sig.name}")
    assert sig.name in v.detail


def test_exit_101_a_rust_panic_is_a_crash():
    v = judge_exit(101, None, "thread 'main' panicked at src/lib.rs:40:9:\nrange end index 4000 out of range\n")
    assert (v.outcome, v.kind) == ("crash", "exit-101")
    assert "Rust panic" in v.detail
    assert "panicked at src/lib.rs:40:9" in v.detail


@pytest.mark.parametrize("rc", [2, 3, 127, 134, 139, 255])
def test_any_other_exit_code_is_a_crash(rc):
    v = judge_exit(rc, None, "")
    assert (v.outcome, v.kind) == ("crash", f"exit-{rc}")


def test_a_sanitizer_report_is_a_crash_whatever_the_exit_code():
    asan = (
        "=================================================================\n"
        "==4242==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000018\n"
        "READ of size 8 at 0x602000000018 thread T0\n"
        "SUMMARY: AddressSanitizer: heap-buffer-overflow loader.c:12 in parse\n"
    )
    for rc in (1, 0, 23):  # ASan exits 1 by default, which used to read as a rejection
        v = judge_exit(rc, None, asan)
        assert (v.outcome, v.kind) == ("crash", "AddressSanitizer"), rc
        assert "heap-buffer-overflow" in v.detail
    ubsan = "loader.c:30:12: runtime error: signed integer overflow: 2147483647 + 1 cannot be represented\n"
    assert judge_exit(0, None, ubsan).kind == "UndefinedBehaviorSanitizer"


def test_a_chosen_reject_code_makes_exit_1_without_a_traceback_a_crash():
    # For runtimes that exit 1 on an uncaught error (Java, Node.js): --reject-exit 3.
    assert judge_exit(3, None, "bad header", reject_exit=3).outcome == "rejected"
    node = "/app/load.js:3\n  throw new TypeError('x')\n  ^\n\nTypeError: x\n    at Object.<anonymous> (/app/load.js:3:9)\n"
    assert judge_exit(1, None, node, reject_exit=3).outcome == "crash"
    # Python's own uncaught exceptions are still judged by class, whatever the chosen code.
    assert judge_exit(1, None, _tb("ValueError: bad"), reject_exit=3).outcome == "rejected"
    assert judge_exit(1, None, _tb("KeyError: 'x'"), reject_exit=3).outcome == "crash"
    assert REJECT_EXIT == 1


def test_garbage_on_stderr_is_escaped_in_the_detail():
    v = judge_exit(1, None, "\x1b[2J\x1b[31mcleared your screen\x07\n")
    assert v.outcome == "rejected"
    assert "\x1b" not in v.detail
    assert "\x07" not in v.detail
    assert "\\x1b[2J" in v.detail


# --- real child processes ------------------------------------------------------------


def _script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return f"{sys.executable} {path} {{path}}"


def _conformance(spec: str, files: tuple[str, ...]):
    impl = user_impl(spec, memory_mb=0, timeout_s=20)
    cases = [c for c in load_cases(CORPUS) if c.file in files]
    return {r.file: r for r in run_all([impl], cases, jobs=1)}


CHILDREN = {
    "traceback_keyerror.py": ("import sys\nraise KeyError('F4')\n", "crash", "KeyError: 'F4'"),
    "traceback_valueerror.py": ("raise ValueError('bad header')\n", "expected", "ValueError: bad header"),
    "exit1_reason.py": ("import sys\nsys.stderr.write('too short\\n')\nsys.exit(1)\n", "expected", "too short"),
    "segfault.py": ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n", "crash", "SIGSEGV"),
    "abort.py": ("import os\nos.abort()\n", "crash", "SIGABRT"),
    "panic.py": (
        "import sys\nsys.stderr.write(\"thread 'main' panicked at src/lib.rs:1:1:\\n\")\nsys.exit(101)\n",
        "crash",
        "Rust panic",
    ),
}


@pytest.mark.parametrize("name", sorted(CHILDREN))
def test_real_children_in_conformance_and_fuzz(tmp_path, name):
    body, status, detail = CHILDREN[name]
    spec = _script(tmp_path, name, body)
    [result] = _conformance(spec, ("n_prefix_7_bytes.safetensors",)).values()
    assert result.status == status, result.detail
    assert detail in result.detail
    found = yours.classify(yours.LoaderUnderTest(command=spec), seed_files()["n_too_small.safetensors"])
    crashed = [c for c, _ in found if c.startswith("crash:")]
    assert bool(crashed) is (status == "crash"), found
    if crashed:
        assert detail in dict(found)[crashed[0]]


def test_fuzz_command_crash_categories_match_the_function_ones(tmp_path):
    body = f"import sys\nsys.path.insert(0, {str(NAIVE.parent)!r})\nfrom naive_loader import load\nload(sys.argv[1])\n"
    spec = _script(tmp_path, "naive_cmd.py", body)
    sys.path.insert(0, str(NAIVE.parent))
    try:
        from naive_loader import load  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(NAIVE.parent))
    by_function = yours.LoaderUnderTest(function=load)
    by_command = yours.LoaderUnderTest(command=spec)
    for name, data in seed_files().items():
        want = sorted(c for c, _ in yours.classify(by_function, data) if c.startswith("crash:"))
        got = sorted(c for c, _ in yours.classify(by_command, data) if c.startswith("crash:"))
        assert got == want, name


# --- acceptance: the same crash count as a command and as a function --------------------

# One file per crash class of the naive loader, and two rejections it must keep.
CRASH_SAMPLE = (
    "n_entry_empty_object.safetensors",  # KeyError
    "n_entry_is_null.safetensors",  # TypeError
    "n_header_not_object_array.safetensors",  # AttributeError
    "n_json_depth_5000_arrays.safetensors",  # RecursionError
    "n_json_number_digits_5000.safetensors",  # ValueError of the int-digit limit
    "n_prefix_7_bytes.safetensors",  # struct.error
    "n_json_comment.safetensors",  # JSONDecodeError: a rejection
    "n_utf8_invalid_byte_ff.safetensors",  # UnicodeDecodeError: a rejection
)


def _naive_both_ways(tmp_path, files):
    spec = _script(tmp_path, "my_loader.py", "import sys\nfrom naive_loader import load\nload(sys.argv[1])\n")
    env = {"PYTHONPATH": os.pathsep.join([str(NAIVE.parent), str(ROOT)])}
    command = user_impl(spec, memory_mb=0, timeout_s=30)
    command.env.update(env)
    function = user_impl("naive_loader:load", memory_mb=0, timeout_s=30)
    function.env.update(env)
    probe(function)
    assert function.skip_reason is None, function.skip_reason
    cases = [c for c in load_cases(CORPUS) if files is None or c.file in files]
    results = run_all([command, function], cases, jobs=2)

    def crashes(impl):
        return sorted(r.file for r in results if r.impl == impl.name and r.status == "crash")

    return crashes(command), crashes(function), results


def test_naive_loader_crashes_alike_as_a_command_and_as_a_function(tmp_path):
    by_command, by_function, results = _naive_both_ways(tmp_path, CRASH_SAMPLE)
    assert by_command == by_function
    assert len(by_function) == 6
    details = {r.file: r.detail for r in results if r.status == "crash" and "my_loader" in r.impl}
    assert details["n_entry_empty_object.safetensors"].startswith("KeyError: 'data_offsets'")


@pytest.mark.slow
def test_naive_loader_crashes_alike_over_the_whole_corpus(tmp_path):
    by_command, by_function, _ = _naive_both_ways(tmp_path, None)
    assert len(by_function) == 23
    assert by_command == by_function


def test_scorecard_shows_the_exception_line_for_a_command(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(NAIVE.parent), str(ROOT)]))
    spec = _script(tmp_path, "my_loader.py", "import sys\nfrom naive_loader import load\nload(sys.argv[1])\n")
    argv = ["conformance", "--corpus", str(CORPUS), "--impl", spec, "--quiet", "--files", "n_entry_empty_object*"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "FAIL crash: n_entry_empty_object.safetensors: KeyError: 'data_offsets'" in out
    assert "Traceback (most recent call last)" not in out
