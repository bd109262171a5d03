"""Native fuzzing: the persistent frame protocol, the AFL++ engine, export.

The protocol tests drive small Python harnesses that misbehave in one way
each; every one must end within its bound in a clear error or a recorded
crash or hang.  The AFL++ tests skip, with the reason, where afl-fuzz or
afl-cc is not installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests._scripts import load_script
from validator.fuzz import aflpp
from validator.fuzz import loader_under_test as lut
from validator.fuzz.aflpp import afl_argv, judge_command
from validator.fuzz.config import CampaignConfig, LoaderSpec
from validator.fuzz.export import export
from validator.fuzz.persistent import Answer, ProtocolError, Session, frame, parse_answer
from validator.fuzz.seeds import dictionary_text, seed_files

ROOT = Path(__file__).resolve().parent.parent
HARNESS_DIR = ROOT / "fuzz" / "harness"
NO_AFL = shutil.which("afl-fuzz") is None or shutil.which("afl-cc") is None
AFL_REASON = "AFL++ is not installed (afl-fuzz, afl-cc: apt-get install afl++; .ci/run installs it)"
ONE_F32 = seed_files()["y_one_f32.safetensors"]


def _script(tmp_path: Path, body: str) -> list[str]:
    """A Python harness whose loop body is ``body`` (``data`` is the frame, ``out`` the protocol stream)."""
    path = tmp_path / "harness.py"
    path.write_text(
        textwrap.dedent(
            """\
            import os, struct, sys, time
            out = sys.stdout.buffer
            while True:
                prefix = sys.stdin.buffer.read(4)
                if len(prefix) < 4:
                    break
                data = sys.stdin.buffer.read(struct.unpack("<I", prefix)[0])
            """
        )
        + textwrap.indent(textwrap.dedent(body), "    ")
    )
    return [sys.executable, str(path)]


def test_frame_is_u32_little_endian_length_then_bytes() -> None:
    assert frame(b"abc") == b"\x03\x00\x00\x00abc"
    assert frame(b"") == b"\x00\x00\x00\x00"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b"accept", Answer("accept")),
        (b"reject", Answer("reject", "")),
        (b"reject header too long", Answer("reject", "header too long")),
        (b"crash KeyError 'dtype'", Answer("crash", "'dtype'", kind="KeyError")),
    ],
    ids=["accept", "reject-bare", "reject-reason", "crash"],
)
def test_parse_answer(line: bytes, expected: Answer) -> None:
    assert parse_answer(line) == expected


@pytest.mark.parametrize("line", [b"ok", b"accepted", b"accept now", b"", b"crash"], ids=repr)
def test_parse_answer_refuses_what_is_not_an_answer(line: bytes) -> None:
    with pytest.raises(ProtocolError, match="the protocol allows 'accept', 'reject <reason>'"):
        parse_answer(line)


def test_one_harness_serves_many_inputs(tmp_path: Path) -> None:
    argv = _script(tmp_path, 'out.write(b"accept\\n" if data[:1] == b"{" else b"reject not an object\\n"); out.flush()')
    with Session(argv, timeout_s=10) as session:
        answers = [session.ask(b"{}" if i % 2 else b"x") for i in range(50)]
        assert session.starts == 1
    assert answers[0] == Answer("reject", "not an object")
    assert answers[1] == Answer("accept")


def test_send_then_answer_lets_the_caller_work_meanwhile(tmp_path: Path) -> None:
    argv = _script(
        tmp_path, 'time.sleep(0.2); out.write(b"accept\\n" if data == b"{}" else b"reject no\\n"); out.flush()'
    )
    with Session(argv, timeout_s=10) as session:
        session.send(b"{}")
        start = time.monotonic()
        assert session.answer() == Answer("accept")
        assert time.monotonic() - start < 5
        with pytest.raises(RuntimeError, match="without a frame sent"):
            session.answer()
        session.send(b"{}")
        session.send(b"x")  # the first frame's answer is taken and dropped
        assert session.answer() == Answer("reject", "no")
        assert session.starts == 1


def test_loader_started_early_answers_for_its_input_only(tmp_path: Path) -> None:
    argv = _script(tmp_path, 'out.write(b"accept\\n" if data == b"{}" else b"reject no\\n"); out.flush()')
    loader = lut.LoaderUnderTest(command=" ".join(argv), persistent=True, timeout_s=10)
    try:
        first, second = b"{}", b"x"
        loader.start(first)
        assert loader.run(first).accepted
        loader.start(first)
        assert not loader.run(second).accepted  # a run of another input asks for it
        assert loader.run(first).accepted
    finally:
        loader.close()


def test_truncated_answer_then_exit_is_a_crash_and_the_harness_restarts(tmp_path: Path) -> None:
    argv = _script(
        tmp_path,
        """\
        if data == b"die":
            out.write(b"acc"); out.flush(); sys.exit(3)
        out.write(b"accept\\n"); out.flush()
        """,
    )
    with Session(argv, timeout_s=10) as session:
        start = time.monotonic()
        answer = session.ask(b"die")
        assert time.monotonic() - start < 5
        assert answer.verdict == "crash"
        assert answer.kind == "exit-3"
        assert "after 3 bytes of an answer" in answer.detail
        assert session.ask(b"fine") == Answer("accept")
        assert session.starts == 2


def test_harness_killed_by_a_signal_mid_protocol(tmp_path: Path) -> None:
    argv = _script(tmp_path, 'os.abort() if data == b"boom" else (out.write(b"accept\\n"), out.flush())')
    with Session(argv, timeout_s=10) as session:
        answer = session.ask(b"boom")
    assert (answer.verdict, answer.kind) == ("crash", "signal-SIGABRT")


def test_python_harness_exiting_on_an_exception_is_a_crash_of_that_class(tmp_path: Path) -> None:
    argv = _script(tmp_path, 'raise KeyError("data_offsets")')
    with Session(argv, timeout_s=10) as session:
        answer = session.ask(ONE_F32)
    assert (answer.verdict, answer.kind) == ("crash", "KeyError")
    assert "KeyError: 'data_offsets'" in answer.trace


def test_harness_that_never_answers_is_a_hang_within_the_deadline(tmp_path: Path) -> None:
    argv = _script(tmp_path, "time.sleep(3600)")
    with Session(argv, timeout_s=1) as session:
        start = time.monotonic()
        answer = session.ask(b"x")
        took = time.monotonic() - start
    assert answer == Answer("hang", "no answer within 1s", kind="hang")
    assert took < 5


def test_harness_that_does_not_read_its_input_is_a_hang(tmp_path: Path) -> None:
    script = tmp_path / "sleeper.py"
    script.write_text("import time\ntime.sleep(3600)\n")
    with Session([sys.executable, str(script)], timeout_s=1) as session:
        start = time.monotonic()
        answer = session.ask(bytes(1 << 20))  # more than a pipe holds
        took = time.monotonic() - start
    assert answer.verdict == "hang"
    assert took < 5


def test_garbage_verdict_line_is_a_protocol_error(tmp_path: Path) -> None:
    argv = _script(tmp_path, 'out.write(b"OK\\n"); out.flush()')
    with Session(argv, timeout_s=10) as session, pytest.raises(ProtocolError, match=r"answered 'OK'"):
        session.ask(b"x")


def test_two_lines_for_one_frame_is_a_protocol_error(tmp_path: Path) -> None:
    argv = _script(tmp_path, 'out.write(b"accept\\naccept\\n"); out.flush()')
    with Session(argv, timeout_s=10) as session, pytest.raises(ProtocolError, match="more than one line"):
        session.ask(b"x")


def test_loader_under_test_records_a_protocol_violation_as_a_crash(tmp_path: Path) -> None:
    argv = _script(tmp_path, 'out.write(b"maybe\\n"); out.flush()')
    loader = lut.LoaderUnderTest(command=" ".join(argv), persistent=True, timeout_s=10)
    try:
        found = lut.classify(loader, ONE_F32)
    finally:
        loader.close()
    assert [c for c, _ in found] == ["crash:protocol"]


def test_python_reference_harness_on_the_naive_loader() -> None:
    argv = [sys.executable, str(HARNESS_DIR / "loader_harness.py"), "fuzz.examples.naive_loader:load"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with Session(argv, timeout_s=20, env=env, cwd=str(ROOT)) as session:
        assert session.ask(ONE_F32) == Answer("accept")
        rejected = session.ask(b"\x02\x00\x00\x00\x00\x00\x00\x00{]")
        assert rejected.verdict == "reject"
        assert rejected.detail.startswith("JSONDecodeError: ")
        crashed = session.ask(b"abc")
        assert (crashed.verdict, crashed.kind) == ("crash", "struct.error")
        assert session.ask(ONE_F32) == Answer("accept")
        assert session.starts == 2


def test_python_harness_keeps_its_input_file_in_memory_unless_tmpdir_says(monkeypatch: pytest.MonkeyPatch) -> None:
    harness = load_script(HARNESS_DIR / "loader_harness.py", "loader_harness_under_test")
    monkeypatch.setenv("TMPDIR", "/somewhere/else")
    assert harness.input_dir() is None  # mkstemp then honours TMPDIR
    monkeypatch.delenv("TMPDIR")
    writable = Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK)
    assert harness.input_dir() == ("/dev/shm" if writable else None)


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "validator", "fuzz", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=str(ROOT),
    )


def test_persistent_cli_stops_on_a_garbage_harness_with_one_line(tmp_path: Path) -> None:
    argv = _script(tmp_path, 'out.write(b"hello\\n"); out.flush()')
    done = _cli("loader-under-test", "--persistent", "--loader-cmd", " ".join(argv), "--out", str(tmp_path / "o"))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        "stcheck fuzz: --persistent: on the seed y_empty_header.safetensors: the harness answered"
    )


def test_persistent_cli_stops_on_a_command_that_exits_without_answering(tmp_path: Path) -> None:
    usage = tmp_path / "file_only.py"
    usage.write_text("import sys\nprint('usage: file_only FILE', file=sys.stderr)\nsys.exit(2)\n")
    done = _cli(
        "loader-under-test", "--persistent", "--loader-cmd", f"{sys.executable} {usage}",
        "--seconds", "5", "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        (
            "stcheck fuzz: --persistent: the harness exited (exit-2) on each of the first 3 seeds without an answer "
            "(it said: usage: file_only FILE); does it serve the frame protocol?"
        )
    ]
    assert not (tmp_path / "out").exists()


def test_engine_aflpp_without_afl_fuzz_is_a_usage_error(tmp_path: Path) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": str(bare)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "validator",
            "fuzz",
            "loader-under-test",
            "--engine",
            "aflpp",
            "--loader-cmd",
            f"{sys.executable} @@",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        (
            "stcheck fuzz: --engine aflpp: afl-fuzz is not on PATH; install AFL++ "
            "(Debian/Ubuntu: apt-get install afl++; elsewhere: https://github.com/AFLplusplus/AFLplusplus)"
        )
    ]


def test_replay_with_engine_aflpp_needs_no_afl_fuzz(tmp_path: Path) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    accept_all = tmp_path / "accept_all.py"
    accept_all.write_text("import sys\nopen(sys.argv[1], 'rb').read()\n")
    bad = tmp_path / "trailing.safetensors"
    bad.write_bytes(ONE_F32 + b"\x00")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": str(bare)}
    argv = [sys.executable, "-m", "validator", "fuzz", "loader-under-test", "--engine", "aflpp"]
    argv += ["--loader-cmd", f"{sys.executable} {accept_all} @@", "--replay", str(bad)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1, done.stderr
    assert f"{bad}: accepts-invalid:buffer-trailing-bytes: " in done.stdout


def test_afl_command_forms() -> None:
    assert afl_argv("./bin {path}") == ["./bin", "@@"]
    assert afl_argv("./bin --x @@") == ["./bin", "--x", "@@"]
    assert judge_command("'./my bin' @@") == "'./my bin' {path}"


def test_export_writes_seeds_dictionary_and_readme(tmp_path: Path) -> None:
    out = tmp_path / "kit"
    done = _cli("export", str(out))
    assert done.returncode == 0, done.stderr
    seeds = seed_files()
    assert done.stdout.strip() == f"wrote {len(seeds) + 2} files to {out} (seeds/, safetensors.dict, README.md)"
    assert sorted(p.name for p in (out / "seeds").iterdir()) == sorted(seeds)
    assert all((out / "seeds" / name).read_bytes() == data for name, data in seeds.items())
    assert (out / "safetensors.dict").read_text() == dictionary_text()
    readme = (out / "README.md").read_text()
    for line in ("./fuzz_load -dict=safetensors.dict", "cargo fuzz run load", "afl-fuzz -i seeds -o afl-out -x"):
        assert line in readme
    assert sorted(export(str(tmp_path / "again"))) == sorted(
        [str(tmp_path / "again" / "seeds" / n) for n in seeds]
        + [str(tmp_path / "again" / "safetensors.dict"), str(tmp_path / "again" / "README.md")]
    )


def test_export_needs_a_folder() -> None:
    done = _cli("export")
    assert (done.returncode, done.stderr.strip()) == (2, "stcheck fuzz: export needs a folder: stcheck fuzz export DIR")


# --- C harness and AFL++ -------------------------------------------------------


def _make(out: Path, *targets: str) -> None:
    subprocess.run(
        ["make", "-s", "-C", str(HARNESS_DIR), f"OUT={out}", *(str(out / t) for t in targets)],
        check=True,
        capture_output=True,
        timeout=120,
    )


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None, reason="no C compiler or make")
def test_c_harness_speaks_both_protocols(tmp_path: Path) -> None:
    _make(tmp_path, "harness", "planted")
    with Session([str(tmp_path / "harness"), "--persistent"], timeout_s=10) as session:
        assert session.ask(ONE_F32) == Answer("accept")
        assert session.ask(b"abc") == Answer("reject", "shorter than 8 bytes")
    planted = ONE_F32.replace(b'"F32","shape":[1]', b'"F16","shape":[3,2]')
    header = planted[8:].split(b"\x00")[0]
    assert b'"dtype":"F16","shape":[3,2]' in header
    with Session([str(tmp_path / "planted"), "--persistent"], timeout_s=10) as session:
        answer = session.ask(planted)
        assert (answer.verdict, answer.kind) == ("crash", "signal-SIGABRT")
        assert session.ask(ONE_F32) == Answer("accept")
    (tmp_path / "in.st").write_bytes(b"abc")
    rc = subprocess.run([str(tmp_path / "harness"), str(tmp_path / "in.st")], check=False, timeout=10).returncode
    assert rc == 1


def _campaign(tmp_path: Path, name: str, *args: str, seconds: int) -> tuple[subprocess.Popen[str], Path]:
    out = tmp_path / name
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "validator", "fuzz", "loader-under-test", *args]
    argv += ["--seconds", str(seconds), "--out", str(out), "--workdir", str(tmp_path / f"work-{name}")]
    argv += ["--interval", "5", "--seeds", str(tmp_path / "no-extra-seeds")]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), out


@pytest.mark.slow
@pytest.mark.skipif(NO_AFL, reason=AFL_REASON)
def test_aflpp_finds_the_planted_layout_that_the_atheris_engine_does_not(tmp_path: Path) -> None:
    """40 s each, side by side: AFL++ (the loader's coverage) crashes on F16 [3,2]; atheris does not."""
    pytest.importorskip("atheris", reason="the comparison needs today's engine (atheris)")
    _make(tmp_path, "planted-afl", "planted-cmplog", "planted")
    afl, afl_out = _campaign(
        tmp_path,
        "afl",
        "--engine",
        "aflpp",
        "--loader-cmd",
        f"{tmp_path / 'planted-afl'} @@",
        "--cmplog",
        str(tmp_path / "planted-cmplog"),
        seconds=40,
    )
    today, today_out = _campaign(tmp_path, "today", "--loader-cmd", f"{tmp_path / 'planted'} {{path}}", seconds=40)
    afl_log, _ = afl.communicate(timeout=85)
    today_log, _ = today.communicate(timeout=85)
    assert afl.returncode == 1, afl_log
    assert (afl_out / "crash_signal-SIGABRT.safetensors").exists(), afl_log
    assert "the loader's own coverage:" in afl_log
    assert not (today_out / "crash_signal-SIGABRT.safetensors").exists(), today_log
    replay = _cli(
        "loader-under-test", "--engine", "aflpp", "--loader-cmd", f"{tmp_path / 'planted-afl'} @@",
        "--replay", str(afl_out / "crash_signal-SIGABRT.safetensors"),
    )  # fmt: skip
    assert replay.returncode == 1
    assert ": crash:signal-SIGABRT: killed by signal 6 (SIGABRT)" in replay.stdout


def test_afl_environment_binds_a_core_and_uses_a_ramdisk(tmp_path: Path) -> None:
    config = CampaignConfig(
        "loader-under-test", seconds=1, engine="aflpp", workdir=str(tmp_path), loader=LoaderSpec(command="bin @@")
    )
    env = aflpp._env(config, "/dev/shm/x")
    assert env["AFL_TMPDIR"] == "/dev/shm/x"
    assert env["AFL_TRY_AFFINITY"] == "1"
    assert "AFL_NO_AFFINITY" not in env
    assert "AFL_TRY_AFFINITY" not in aflpp._env(config, base={**os.environ, "AFL_NO_AFFINITY": "1"})
    folder = aflpp._ramdisk_folder()
    if folder is not None:  # a machine with a writable /dev/shm
        assert folder.startswith("/dev/shm/stcheck-afl-")
        Path(folder).rmdir()


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="no /proc")
def test_reap_kills_the_loaders_afl_fuzz_left_behind(tmp_path: Path) -> None:
    marker = str(tmp_path / "default" / ".cur_input")
    left = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker], start_new_session=True)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker + "-not-it"])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and marker.encode() not in Path(f"/proc/{left.pid}/cmdline").read_bytes():
            time.sleep(0.05)
        assert aflpp._reap([marker]) == 1
        assert left.wait(timeout=10) == -9
        assert other.poll() is None
    finally:
        for proc in (left, other):
            proc.kill()
            proc.wait()


@pytest.mark.slow
@pytest.mark.skipif(NO_AFL, reason=AFL_REASON)
def test_aflpp_finds_the_naive_loaders_classes_and_replay_confirms_each(tmp_path: Path) -> None:
    """20 s of AFL++ on the naive C loader: its classes, each reproducer confirmed by --replay."""
    _make(tmp_path, "harness-afl")
    command = f"{tmp_path / 'harness-afl'} @@"
    afl, out = _campaign(tmp_path, "afl", "--engine", "aflpp", "--loader-cmd", command, seconds=20)
    log, _ = afl.communicate(timeout=80)
    assert afl.returncode == 1, log
    found = {entry["category"]: entry["path"] for entry in lut.read_findings(str(out))}
    assert "rejects-valid" in found, log
    assert len([name for name in found if name.startswith("accepts-invalid:")]) >= 12, sorted(found)
    afl_log = (tmp_path / "work-afl" / "aflpp" / "afl-fuzz.log").read_text(errors="replace")
    assert "SHARED MEMORY FUZZING" in afl_log  # the harness takes its input in shared memory
    replay = _cli("loader-under-test", "--engine", "aflpp", "--loader-cmd", command, "--replay", str(out))
    assert replay.returncode == 1
    for category, path in found.items():
        assert f"{path}: {category}: " in replay.stdout, (category, replay.stdout)


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None, reason="no C compiler or make")
def test_aflpp_judge_minimises_a_crash_whose_cause_is_new_and_keeps_the_cause(tmp_path: Path) -> None:
    """The judge of --engine aflpp (run on a plain cc build: no afl-fuzz needed) on a crash AFL++ saved."""
    _make(tmp_path, "planted_loader")
    out = tmp_path / "out"
    spec = LoaderSpec(command=f"{tmp_path / 'planted_loader'} @@", out_dir=str(out))
    judge = aflpp._Judge(CampaignConfig("loader-under-test", engine="aflpp", loader=spec))
    crashing = ONE_F32.replace(b'"F32","shape":[1]', b'"F16","shape":[3,2]')
    n = int.from_bytes(crashing[:8], "little")
    header = crashing[8 : 8 + n].replace(b"{", b'{"__metadata__":{"pad":"' + b"x" * 300 + b'"},', 1)
    crashing = len(header).to_bytes(8, "little") + header + crashing[8 + n :] + bytes(200)
    [(category, _)] = judge.judge(crashing, "crash")
    assert category == "crash:signal-SIGABRT"
    [entry] = lut.read_findings(str(out))
    [cause] = entry["causes"]
    kept = Path(cause["path"]).read_bytes()
    assert len(kept) < len(crashing) - 300  # the padding went
    assert Path(entry["path"]).read_bytes() == kept
    found, outcome = lut.examine(judge.loader, kept)
    assert [c for c, _ in found] == [category]
    assert lut.cause_of(category, found[0][1], outcome) == cause["cause"]
