"""Every fuzzing command of the docs, run end to end as a user runs it.

Each command runs as a subprocess (`python -m validator fuzz ...`, which is
what the `stcheck` entry point calls) from the checkout's root or from a
user's own folder, with the real engine: no fake campaign.  The commands are
written once, in COMMANDS, and a guard checks that every `stcheck fuzz` line
in a code block of README.md and fuzz/README.md has a command here of the
same kind with at least its options.  The slow ones fuzz for a few seconds
each; the AFL++ ones skip, with the reason, where AFL++ is not installed.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HARNESS_DIR = ROOT / "fuzz" / "harness"
DOCS = (ROOT / "README.md", ROOT / "fuzz" / "README.md")
NO_AFL = shutil.which("afl-fuzz") is None or shutil.which("afl-cc") is None
AFL_REASON = "AFL++ is not installed (afl-fuzz, afl-cc: apt-get install afl++; .ci/run installs it)"
NO_CC = shutil.which("cc") is None or shutil.which("make") is None
OWN_TARGETS = frozenset({"validate", "differential", "loader", "roundtrip", "hypothesis"})

# The commands the tests run, after `stcheck fuzz`.  {H} is the folder of
# the built harnesses, {OUT} a fresh --out, {KIT} an export folder.
NAIVE = "fuzz.examples.naive_loader:load"
COMMANDS: dict[str, str] = {
    "python-loader": f"loader-under-test --loader {NAIVE} --seconds 12 --interval 5",
    "python-replay": f"loader-under-test --loader {NAIVE} --replay {{OUT}}",
    "python-replay-one": f"loader-under-test --loader {NAIVE} --replay {{OUT}}/crash_struct.error.safetensors",
    "own-package": "loader-under-test --loader fuzz.mine:load_bytes --loader-input bytes --seconds 6",
    "own-package-persistent": (
        f"loader-under-test --persistent --loader-cmd '{sys.executable} {HARNESS_DIR}/loader_harness.py "
        "fuzz.mine:load_bytes --bytes' --seconds 6"
    ),
    "command": "loader-under-test --loader-cmd '{H}/naive_loader {path}' --seconds 6",
    "persistent-c": "loader-under-test --persistent --loader-cmd '{H}/harness --persistent' --seconds 6",
    "persistent-python": (
        f"loader-under-test --persistent --loader-cmd '{sys.executable} fuzz/harness/loader_harness.py {NAIVE}' "
        "--seconds 6"
    ),
    "planted-cause": "loader-under-test --persistent --loader-cmd '{H}/planted-empty --persistent' --seconds 5",
    "aflpp": (
        "loader-under-test --engine aflpp --loader-cmd '{H}/planted-afl @@' --cmplog {H}/planted-cmplog --seconds 8"
    ),
    "aflpp-jobs": "loader-under-test --engine aflpp --jobs 2 --loader-cmd '{H}/harness-afl @@' --seconds 8",
    "aflpp-replay": "loader-under-test --engine aflpp --loader-cmd '{H}/planted-afl @@' --replay {OUT}",
    "own-target": "validate --seconds 2 --interval 1",
    "all-targets": "all --seconds 2 --jobs 2 --interval 2",
    "own-replay": "validate --replay corpus/regressions/validate/",
    "own-replay-file": "differential --replay corpus/regressions/differential/crash-tie-order-nondeterministic.bin",
    "export": "export {KIT}",
}


def _kind(argv: list[str]) -> str:
    target = argv[0] if argv else ""
    return "own" if target in OWN_TARGETS else target


def _options(argv: list[str]) -> frozenset[str]:
    return frozenset(word for word in argv if word.startswith("--"))


def _doc_commands() -> list[tuple[str, list[str]]]:
    """(where, argv after `stcheck fuzz`) for each command line in the docs' code blocks."""
    found = []
    for doc in DOCS:
        inside = False
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("```"):
                inside = not inside
                continue
            text = line.strip().removeprefix("$ ")
            if inside and text.startswith("stcheck fuzz "):
                words = shlex.split(text.split("#", 1)[0] if " # " in text else text)
                found.append((f"{doc.name}:{number}", words[2:]))
    return found


def test_every_documented_fuzz_command_is_run_by_a_test() -> None:
    documented = _doc_commands()
    assert len(documented) >= 15, documented  # the guard reads the docs at all
    ours = [shlex.split(command) for command in COMMANDS.values()]
    missing = [
        f"{where}: stcheck fuzz {shlex.join(argv)}"
        for where, argv in documented
        if not any(_kind(mine) == _kind(argv) and _options(argv) <= _options(mine) for mine in ours)
    ]
    assert not missing, "documented but not run by tests/test_fuzz_commands.py:\n" + "\n".join(missing)


# --- running them ------------------------------------------------------------


def _env(tmp_path: Path) -> dict[str, str]:
    """A user's environment: stcheck importable (as after pip install), the cache in tmp_path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    return env


def _argv(name: str, **values: str) -> list[str]:
    command = COMMANDS[name]
    for key, value in values.items():
        command = command.replace("{" + key + "}", value)
    return [sys.executable, "-m", "validator", "fuzz", *shlex.split(command)]


def _stcheck(
    name: str, tmp_path: Path, *, cwd: Path = ROOT, timeout: float = 120, **values: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _argv(name, **values), cwd=cwd, env=_env(tmp_path), capture_output=True, text=True, timeout=timeout, check=False
    )


def _out_dir(stdout: str) -> str:
    m = re.search(r"reproducers in (\S+)\)", stdout)
    assert m is not None, stdout
    return str(ROOT / m.group(1))  # a relative path is shown relative to the working directory


def _classes(stdout: str) -> set[str]:
    return set(re.findall(r"^  (\S+)\s", stdout, flags=re.MULTILINE))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference C harnesses, built as fuzz/README.md says (AFL++ builds where afl-cc exists)."""
    if NO_CC:
        pytest.skip("no C compiler or make")
    # A folder that does not exist yet, as /tmp/h is on a fresh machine: make creates it.
    out = tmp_path_factory.mktemp("built") / "h"
    goals = ["plain"] if NO_AFL else ["plain", "afl"]
    subprocess.run(
        ["make", "-s", "-C", str(HARNESS_DIR), f"OUT={out}", *goals],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


@pytest.mark.slow
def test_readme_python_example_finds_the_naive_loaders_classes_and_replays_them(tmp_path: Path) -> None:
    """The README's example, from the checkout's root: its classes within 30 s (12 here), then its replay lines."""
    done = _stcheck("python-loader", tmp_path, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    classes = _classes(done.stdout)
    assert {"crash:KeyError", "crash:struct.error", "accepts-invalid:buffer-trailing-bytes"} <= classes, done.stdout
    assert not any(name.startswith("crash:ImportError") or "ModuleNotFound" in name for name in classes)
    assert "oracle coverage " in done.stdout  # atheris measures stcheck's branches, not the loader's
    out = _out_dir(done.stdout)
    replay_line = next(line for line in done.stdout.splitlines() if line.startswith("replay them"))
    assert f"--replay {out}" in replay_line or "--replay " in replay_line
    replay = _stcheck("python-replay", tmp_path, OUT=out)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "crash:struct.error: struct.error: unpack requires a buffer of 8 bytes" in replay.stdout
    assert 'naive_loader.py", line ' in replay.stdout  # the loader's own traceback
    one = _stcheck("python-replay-one", tmp_path, OUT=out)
    assert one.returncode == 1, one.stdout + one.stderr
    assert one.stdout.count("crash:struct.error") == 1


@pytest.mark.slow
@pytest.mark.parametrize("name", ["own-package", "own-package-persistent"])
def test_a_loader_named_like_a_stcheck_subpackage_that_imports_json(tmp_path: Path, name: str) -> None:
    """A user's namespace package `fuzz` (as stcheck's validator/fuzz) whose loader imports json,
    fuzzed from the user's folder: in the engine's process, and in a harness process of its own."""
    project = tmp_path / "project"
    (project / "fuzz").mkdir(parents=True)
    (project / "fuzz" / "mine.py").write_text(
        textwrap.dedent(
            """\
            import json, struct

            def load_bytes(data):
                (n,) = struct.unpack("<Q", data[:8])
                header = json.loads(data[8 : 8 + n])
                return {k: data[8 + n + v["data_offsets"][0] : 8 + n + v["data_offsets"][1]]
                        for k, v in header.items() if k != "__metadata__"}
            """
        )
    )
    done = _stcheck(name, tmp_path, cwd=project, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    classes = _classes(done.stdout)
    assert {"crash:KeyError", "crash:struct.error"} <= classes, done.stdout
    assert not any("Import" in name or "NotFound" in name for name in classes), classes


@pytest.mark.slow
def test_loader_cmd_runs_a_command_per_input(tmp_path: Path, built: Path) -> None:
    done = _stcheck("command", tmp_path, H=str(built), timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert any(name.startswith("accepts-invalid:") for name in _classes(done.stdout)), done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", ["persistent-c", "persistent-python"])
def test_persistent_harnesses_as_documented(tmp_path: Path, built: Path, name: str) -> None:
    done = _stcheck(name, tmp_path, H=str(built), timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    classes = _classes(done.stdout)
    assert any(c.startswith("accepts-invalid:") for c in classes), done.stdout
    if name == "persistent-python":
        assert "crash:struct.error" in classes, done.stdout


@pytest.mark.slow
def test_a_planted_second_cause_shows_beside_the_first_in_its_class(tmp_path: Path, built: Path) -> None:
    """The naive C loader built with a backwards empty-tensor rule: rejects-valid has two causes, each with a file."""
    done = _stcheck("planted-cause", tmp_path, H=str(built), timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    m = re.search(r"^  rejects-valid .*?(?=^  \S|^replay)", done.stdout, flags=re.MULTILINE | re.DOTALL)
    assert m is not None, done.stdout
    block = m.group()
    assert "      2 causes, most seen first:\n" in block, block
    assert re.search(r"\d+x  empty tensors are not supported  \S+rejects-valid@\w{8}\.safetensors", block), block
    assert re.search(r"\d+x  the header does not start with '\{'  \S+rejects-valid@\w{8}\.safetensors", block), block


@pytest.mark.slow
@pytest.mark.skipif(NO_AFL, reason=AFL_REASON)
def test_engine_aflpp_with_cmplog_then_its_replay(tmp_path: Path, built: Path) -> None:
    start = time.monotonic()
    done = _stcheck("aflpp", tmp_path, H=str(built), timeout=90)
    took = time.monotonic() - start
    assert took < 8 + 4, f"{took:.1f}s for --seconds 8: seeds, afl-fuzz and the judge's sweeps all within it"
    assert done.returncode == 1, done.stdout + done.stderr
    assert any(c.startswith("accepts-invalid:") for c in _classes(done.stdout)), done.stdout
    assert "loader edges " in done.stdout  # AFL++ measures the loader's own edges
    out = _out_dir(done.stdout)
    replay = _stcheck("aflpp-replay", tmp_path, H=str(built), OUT=out)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert ": accepts-invalid:" in replay.stdout


@pytest.mark.slow
@pytest.mark.skipif(NO_AFL, reason=AFL_REASON)
def test_engine_aflpp_with_two_instances(tmp_path: Path, built: Path) -> None:
    start = time.monotonic()
    done = _stcheck("aflpp-jobs", tmp_path, H=str(built), timeout=90)
    took = time.monotonic() - start
    assert took < 8 + 4, f"{took:.1f}s for --seconds 8"
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 afl-fuzz instances (-M main, -S sec-1..) sharing one queue" in done.stdout
    assert re.search(r"afl-fuzz: \d+ execs at [\d.]+/s over \d+s \(2 instances\)", done.stdout), done.stdout
    assert "accepts-invalid:buffer-trailing-bytes" in _classes(done.stdout), done.stdout


@pytest.mark.slow
def test_own_target_campaigns(tmp_path: Path) -> None:
    for name, label in (("own-target", "[validate] done:"), ("all-targets", "[all] ")):
        done = _stcheck(name, tmp_path, cwd=tmp_path, timeout=90)
        assert done.returncode == 0, done.stdout + done.stderr
        assert label in done.stdout


def test_own_target_replays(tmp_path: Path) -> None:
    for name in ("own-replay", "own-replay-file"):
        done = _stcheck(name, tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "PASS " in done.stdout
        assert ": 0 failures" in done.stdout


def test_export(tmp_path: Path) -> None:
    done = _stcheck("export", tmp_path, KIT=str(tmp_path / "kit"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "kit" / "safetensors.dict").is_file()
    assert any((tmp_path / "kit" / "seeds").iterdir())


def test_children_get_the_folder_above_the_package_never_the_package() -> None:
    from validator.fuzz._child import child_env, package_root

    package = str(ROOT / "validator")
    env = child_env({"X": "1"}, base={"PYTHONPATH": os.pathsep.join([package, "/elsewhere"])})
    assert package_root() == str(ROOT)
    assert env["PYTHONPATH"].split(os.pathsep) == [str(ROOT), "/elsewhere"]
    assert env["X"] == "1"
