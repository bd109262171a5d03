# `stcheck conformance --impl` tried as a newcomer would (issues 20 and 24):
# the scorecard ends with an explicit verdict and says that i_ results are
# implementation-defined; a module:function loader prints its real version;
# a misspelt program, a loader that hangs in a grandchild, one that prints
# garbage, an empty --files glob and Ctrl-C all end the way they should.
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from validator.cli.main import main
from validator.conformance.harness import Raw, classify, load_cases
from validator.harness import command as _command

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
SMALL = ("y_dtype_f32*", "n_buffer_trailing_1_byte*", "i_padding_tab*")


def _script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return f"{sys.executable} {path} {{path}}"


def _run(capsys, spec: str, files=SMALL, *extra: str) -> tuple[int, str, str]:
    argv = ["conformance", "--corpus", str(CORPUS), "--impl", spec, "--quiet"]
    for glob in files:
        argv += ["--files", glob]
    code = main([*argv, *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


CAREFUL = """
    import sys
    import validator
    sys.exit(0 if validator.is_valid(sys.argv[1], profile="strict") else 1)
"""


def test_a_passing_run_ends_with_an_explicit_verdict(tmp_path, capsys):
    code, out, _ = _run(capsys, _script(tmp_path, "careful.py", CAREFUL))
    assert code == 0, out
    last = out.strip().splitlines()[-1]
    assert last == (
        "passed: all 3 verdicts as expected (2 y_/n_ files as the corpus requires, "
        "1 implementation-defined i_ files: 0 accepted, 1 rejected)"
    )
    assert "i-rejected                1  i_ files rejected: implementation-defined, not a failure" in out
    assert "fails the gate" not in out


def test_a_failing_run_says_which_statuses_fail(tmp_path, capsys):
    code, out, _ = _run(capsys, _script(tmp_path, "accept_all.py", "import sys\nsys.exit(0)\n"))
    assert code == 1
    assert "should-have-rejected      1  n_ files accepted  (fails the gate)" in out
    assert out.strip().splitlines()[-1] == (
        "FAILED: 1 of 3 files did not get the verdict the corpus requires (should-have-rejected 1)"
    )


@pytest.mark.parametrize(("source", "version"), [("__version__ = '1.2.3'\n", "1.2.3"), ("", "unknown")])
def test_a_function_loader_prints_its_version_not_its_spec(tmp_path, capsys, monkeypatch, source, version):
    (tmp_path / "versioned_loader.py").write_text(
        source + "import validator\ndef load(path):\n    validator.ensure_valid(path)\n    return {}\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    code = main(["conformance", "--corpus", str(CORPUS), "--impl", "versioned_loader:load", "--files", "n_prefix_7*"])
    out = capsys.readouterr()
    assert code == 0, out
    assert f"loader versioned_loader:load, version {version}" in out.err
    assert "version versioned_loader:load" not in out.err + out.out
    assert out.out.startswith(f"conformance scorecard for versioned_loader:load, version {version}\n")


def test_a_misspelt_program_is_a_usage_error(capsys):
    code, out, err = _run(capsys, "pyhton my_loader.py {path}")
    assert code == 2
    assert err == "stcheck: --impl: pyhton: command not found\n"
    assert out == ""


def test_a_misspelt_module_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(
        ["conformance", "--corpus", str(CORPUS), "--impl", "no_such_loader_xyz:load", "--files", "y_dtype_f32*"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines() == [
        (
            "stcheck: cannot run no_such_loader_xyz:load: unavailable (cannot import no_such_loader_xyz:load: "
            "ModuleNotFoundError: No module named 'no_such_loader_xyz')"
        )
    ]


def test_an_empty_files_glob_is_a_usage_error(tmp_path, capsys):
    code, out, err = _run(capsys, _script(tmp_path, "careful.py", CAREFUL), ("zz_nothing*",))
    assert code == 2
    assert err == "stcheck: no corpus file matches zz_nothing*\n"
    assert "passed" not in out


def test_a_loader_that_crashes_on_every_file_gets_a_hint(tmp_path, capsys):
    code, out, _ = _run(capsys, f"{sys.executable} {tmp_path / 'missing.py'} {{path}}")
    assert code == 1
    assert "note: every file crashed the same way (exit code 2: " in out
    assert "is the command right?" in out


def test_reject_exit_chooses_the_code_for_rejected(tmp_path, capsys):
    # A runtime that exits 1 on any uncaught error (Java, Node.js) rejects with another code.
    spec = _script(
        tmp_path,
        "code3.py",
        """
        import sys
        import validator
        if not validator.is_valid(sys.argv[1], profile="strict"):
            sys.stderr.write("rejected: invalid\\n")
            sys.exit(3)
        """,
    )
    code, out, _ = _run(capsys, spec, SMALL, "--reject-exit", "3")
    assert code == 0, out
    code, out, _ = _run(capsys, spec, SMALL)  # without it, exit 3 is a crash
    assert code == 1
    assert "FAIL crash: n_buffer_trailing_1_byte.safetensors: exit code 3: rejected: invalid" in out
    one = _script(tmp_path, "exit1.py", "import sys\nsys.stderr.write('Exception in thread main\\n')\nsys.exit(1)\n")
    code, out, _ = _run(capsys, one, ("n_buffer_trailing_1_byte*",), "--reject-exit", "3")
    assert code == 1
    assert "FAIL crash: n_buffer_trailing_1_byte.safetensors: exit code 1: Exception in thread main" in out


def test_reject_exception_names_a_commands_traceback_class(tmp_path, capsys):
    spec = _script(tmp_path, "header_error.py", "class HeaderError(Exception):\n    pass\nraise HeaderError('bad')\n")
    code, out, _ = _run(capsys, spec, ("n_buffer_trailing_1_byte*",))
    assert code == 1
    assert "FAIL crash: n_buffer_trailing_1_byte.safetensors: HeaderError: bad" in out
    code, out, _ = _run(capsys, spec, ("n_buffer_trailing_1_byte*",), "--reject-exception", "header_error:HeaderError")
    assert code == 0, out


def test_a_hang_in_a_grandchild_is_a_timeout_and_the_grandchild_is_killed(tmp_path, capsys):
    # A wrapper (sh -c, cargo run, npm) whose child hangs: the whole process group goes.
    pid_file = tmp_path / "grandchild"
    spec = f"sh -c 'sleep 60 & echo $! > {pid_file}; wait' loader {{path}}"
    start = time.monotonic()
    code, out, _ = _run(capsys, spec, ("y_dtype_f32*",), "--timeout", "1")
    assert time.monotonic() - start < 20
    assert code == 1
    assert "FAIL timeout: y_dtype_f32.safetensors" in out
    assert _ends(int(pid_file.read_text())), "the hanging grandchild outlived its timeout"


def test_garbage_output_is_bounded(tmp_path):
    script = tmp_path / "flood.py"
    script.write_text(
        "import os, sys\nfor _ in range(800):\n    sys.stdout.buffer.write(os.urandom(65536))\n"
        "    sys.stderr.buffer.write(b'noise ' * 10000)\nsys.stderr.write('\\nKeyError: last\\n')\n",
        encoding="utf-8",
    )
    done = _command.run([sys.executable, str(script)], timeout=60)
    assert done.rc == 0
    assert len(done.stdout) <= _command.STDOUT_LIMIT
    assert len(done.stderr) < _command.STDERR_HEAD + _command.STDERR_TAIL + 100
    assert done.stderr.rstrip().endswith("KeyError: last")
    assert "bytes left out" in done.stderr


@pytest.mark.parametrize(
    "line",
    ['{"tensors": 5}', '{"tensors": [1, "x", null]}', '{"tensors": {"a": 1}}', "[1, 2]", "\x1b[2J garbage", "[" * 5000],
)
def test_garbage_on_stdout_of_an_accept_does_not_break_the_harness(line):
    case = next(c for c in load_cases(CORPUS) if c.file == "y_dtype_f32.safetensors")
    result = classify("x", case, Raw(0, None, line + "\n", "", 0.1))
    assert result.status == "expected"
    assert result.detail == "accepted"


def test_an_interrupted_run_writes_no_scorecard_and_leaves_no_loader_running(tmp_path):
    marker = tmp_path / "pids"
    spec = _script(
        tmp_path,
        "slow.py",
        f"""
        import os, sys, time
        with open({str(marker)!r}, "a") as f:
            f.write(f"{{os.getpid()}}\\n")
        time.sleep(30)
        """,
    )
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "validator", "conformance", "--corpus", str(CORPUS), "--impl", spec]
    proc = subprocess.Popen(
        [*argv, "--out", str(out), "--files", "y_dtype_f*"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509 - restore Ctrl-C
    )
    deadline = time.monotonic() + 60
    while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "stcheck: interrupted" in stderr
    assert "passed" not in stdout
    assert "scorecard" not in stdout
    assert not out.exists()
    for pid in map(int, marker.read_text().split()):
        assert _ends(pid), f"loader process {pid} still runs after the interrupt"


def _ends(pid: int, within: float = 10.0) -> bool:
    """Whether the process is gone (or a zombie waiting to be reaped) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.1)
    return False


def test_a_loader_dies_with_a_harness_that_is_killed(tmp_path):
    # A killed fuzz engine or harness runs no atexit: the loader must not outlive it.
    pid_file = tmp_path / "loader"
    harness = (
        "import sys\nfrom validator.harness import command as _command\n"
        f"_command.run(['sh', '-c', 'echo $$ > {pid_file}; exec sleep 60'], timeout=100)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", harness], env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    loader = int(pid_file.read_text())
    proc.kill()
    proc.wait(timeout=30)
    assert _ends(loader), "the loader outlived its killed harness"


@pytest.mark.parametrize("bad", ["KeyError", "mylib.HeaderError", ":Name", "mod:"])
def test_a_reject_exception_must_be_module_colon_name(tmp_path, capsys, bad):
    code, out, err = _run(capsys, _script(tmp_path, "careful.py", CAREFUL), SMALL, "--reject-exception", bad)
    assert code == 2
    assert err == f"stcheck: --reject-exception {bad}: write it MODULE:NAME (builtins:KeyError, mypkg.errors:Bad)\n"
    assert out == ""


def test_the_matrix_run_of_stcheck_ends_with_its_verdict(capsys):
    argv = ["conformance", "--corpus", str(CORPUS), "--only", "stcheck-strict", "--only", "stcheck-reference"]
    for glob in SMALL:
        argv += ["--files", glob]
    assert main([*argv, "--quiet"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == (
        "passed: all 6 verdicts of stcheck-reference, stcheck-strict as expected "
        "(4 as the corpus requires, 2 on implementation-defined i_ files)"
    )


def test_a_wrong_verdict_of_stcheck_fails_the_matrix_run(capsys, monkeypatch):
    from validator.conformance import runner

    real = runner.run_all

    def one_wrong(*args, **kwargs):
        results = real(*args, **kwargs)
        wrong = next(r for r in results if r.status == "expected")
        return [r if r is not wrong else type(r)(**{**vars(r), "status": "should-have-rejected"}) for r in results]

    monkeypatch.setattr("validator.cli.conformance.run_all", one_wrong)
    argv = ["conformance", "--corpus", str(CORPUS), "--only", "stcheck-strict", "--files", SMALL[0], "--quiet"]
    assert main(argv) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "FAILED: 1 of stcheck's 1 verdict: not the ones the corpus requires"
    )
