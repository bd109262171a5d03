"""The reference harness (fuzz/harness/loader_harness.c) as C and as C++.

Each build of fuzz/harness/Makefile, the C example and the C++ example
(fuzz/examples/naive_loader.cpp) under cc, c++ and, where installed,
afl-cc and afl-c++, judges one valid and one short seed in both protocols:
the exit code of `harness FILE` and the frame protocol of `--persistent`.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from validator.fuzz.persistent import Answer, Session
from validator.fuzz.seeds import seed_files

ROOT = Path(__file__).resolve().parent.parent
HARNESS_DIR = ROOT / "fuzz" / "harness"
ONE_F32 = seed_files()["y_one_f32.safetensors"]
NO_MAKE = shutil.which("make") is None or shutil.which("cc") is None
NO_CXX = shutil.which("c++") is None and shutil.which("g++") is None
NO_AFL = shutil.which("afl-cc") is None or shutil.which("afl-c++") is None

# (make target, compiler, loader)
BUILDS = [
    pytest.param("harness", "cc", "C", id="harness"),
    pytest.param("harness-cxx", "c++", "C", id="harness-cxx"),
    pytest.param("harness-cpp", "c++", "C++", id="harness-cpp"),
    # A second C++ build, and AFL++'s compilers, take seconds each: slow.
    pytest.param("harness-cpp-linked", "cc + c++", "C++", id="harness-cpp-linked", marks=pytest.mark.slow),
    pytest.param("harness-afl", "afl-cc", "C", id="harness-afl", marks=pytest.mark.slow),
    pytest.param("harness-cxx-afl", "afl-c++", "C", id="harness-cxx-afl", marks=pytest.mark.slow),
    pytest.param("harness-cpp-afl", "afl-c++", "C++", id="harness-cpp-afl", marks=pytest.mark.slow),
]


def _skip_reason(target: str) -> str | None:
    if NO_MAKE:
        return "no C compiler or make"
    if target != "harness" and NO_CXX:
        return "no C++ compiler (g++): apt-get install g++"
    if target.endswith("-afl") and NO_AFL:
        return "AFL++ is not installed (afl-cc, afl-c++)"
    return None


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("harnesses")


def _make(out: Path, target: str) -> Path:
    """One build (-O0: the test needs the build, not its speed), made once per module."""
    if not (out / target).exists():
        flags = ["CFLAGS=-O0 -Wall -Wextra", "CXXFLAGS=-O0 -Wall -Wextra"]
        done = subprocess.run(
            ["make", "-s", "-C", str(HARNESS_DIR), f"OUT={out}", *flags, str(out / target)],
            capture_output=True,
            text=True,
            check=False,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr[-2000:]
    return out / target


@pytest.mark.parametrize(
    ("target", "compiler", "loader"), BUILDS, ids=lambda v: v if str(v).startswith("harness") else ""
)
def test_harness_builds_and_judges_a_seed(built: Path, target: str, compiler: str, loader: str) -> None:
    reason = _skip_reason(target)
    if reason is not None:
        pytest.skip(reason)
    binary = _make(built, target)
    good, short = built / f"{target}-good.st", built / f"{target}-short.st"
    good.write_bytes(ONE_F32)
    short.write_bytes(b"abc")
    assert subprocess.run([str(binary), str(good)], check=False, timeout=10).returncode == 0, (compiler, loader)
    rejected = subprocess.run([str(binary), str(short)], check=False, capture_output=True, text=True, timeout=10)
    assert rejected.returncode == 1
    assert "rejected: shorter than 8 bytes" in rejected.stderr
    with Session([str(binary), "--persistent"], timeout_s=10) as session:
        assert session.ask(ONE_F32) == Answer("accept")
        assert session.ask(b"abc") == Answer("reject", "shorter than 8 bytes")


@pytest.mark.skipif(NO_MAKE or NO_CXX, reason="no C++ compiler (g++) or make")
def test_the_cpp_loader_turns_its_exceptions_into_reasons(built: Path) -> None:
    binary = _make(built, "harness-cpp")
    truncated = ONE_F32.replace(b'"data_offsets":[0,4]', b'"data_offsets":[0,9]')
    with Session([str(binary), "--persistent"], timeout_s=10) as session:
        assert session.ask(truncated) == Answer("reject", "tensor 'a' ends past the file")
        assert session.ask(ONE_F32[:8] + b"[" + ONE_F32[9:]) == Answer("reject", "expected '{'")


@pytest.mark.skipif(NO_MAKE or NO_CXX, reason="no C++ compiler (g++) or make")
def test_the_harness_has_no_c_only_constructs() -> None:
    """-Werror under g++ -x c++ -pedantic: a cast from malloc left out, or any C-only construct, fails it."""
    cxx = shutil.which("g++") or shutil.which("c++")
    assert cxx is not None
    done = subprocess.run(
        [
            cxx,
            "-x",
            "c++",
            "-std=c++17",
            "-Wall",
            "-Wextra",
            "-pedantic",
            "-Werror",
            "-fsyntax-only",
            "loader_harness.c",
        ],
        cwd=HARNESS_DIR,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
