"""The reference safetensors crate (Rust, 0.8.0) behind both loader protocols.

fuzz/harness/rust/build.sh builds it from the PyPI sdist of safetensors
0.8.0 with Debian's crate sources, once per module into a temporary folder.
Where a prerequisite is missing (cargo, the Debian crates, the download, the
AFL++ runtime) build.sh exits 3 with one line, and the tests skip with that
line as the reason.

The crate is the Rust core the wheel wraps, so it must agree with the
wheel on every file: the same verdict on every seed and corpus file, and no
problem class from a campaign (a disagreement of the reference with itself
would be a finding about the build, such as its Debian serde_json).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from validator._rules import Profile
from validator._validate import validate
from validator.fuzz.persistent import Answer, Session, frame
from validator.fuzz.seeds import seed_files
from validator.fuzz.targets import reference_load, tie_classes

ROOT = Path(__file__).resolve().parent.parent
BUILD_SH = ROOT / "fuzz" / "harness" / "rust" / "build.sh"
AFL_RUNTIME = Path(os.environ.get("AFL_RUNTIME", "/usr/lib/afl/afl-compiler-rt.o"))
ONE_F32 = seed_files()["y_one_f32.safetensors"]
MISSING = 3  # build.sh: a prerequisite is missing
BASH = shutil.which("bash") or "bash"
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="fuzz/harness/rust/build.sh needs bash")


def _build(out: Path, variant: str) -> None:
    done = subprocess.run(
        [BASH, str(BUILD_SH), str(out), variant], capture_output=True, text=True, timeout=900, check=False
    )
    if done.returncode == MISSING:
        pytest.skip(done.stderr.strip())
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plain build: ``safetensors-harness`` (release, as the wheel's)."""
    out = tmp_path_factory.mktemp("rust-harness")
    _build(out, "plain")
    return out / "safetensors-harness"


@pytest.fixture(scope="module")
def harness_afl(harness: Path) -> Path:
    """The AFL++ build, ``safetensors-harness-afl``, beside the plain one."""
    if shutil.which("afl-fuzz") is None or not AFL_RUNTIME.exists():
        pytest.skip(f"AFL++ is not installed (afl-fuzz, {AFL_RUNTIME}: apt-get install afl++)")
    _build(harness.parent, "afl")
    return harness.parent / "safetensors-harness-afl"


def _inputs() -> dict[str, bytes]:
    """Every file under fuzz/seeds and corpus/ (whatever its kind), and the built-in seeds."""
    found = {f"seed:{name}": data for name, data in seed_files().items()}
    for folder in (ROOT / "fuzz" / "seeds", ROOT / "corpus"):
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                found[str(path.relative_to(ROOT))] = path.read_bytes()
    return found


# --- build.sh without its prerequisites -------------------------------------------


def _build_sh(tmp_path: Path, env: dict[str, str], *variants: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BASH, str(BUILD_SH), str(tmp_path / "out"), *variants],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **env},
    )


def test_build_without_cargo_is_one_line_and_exit_3(tmp_path: Path) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("dirname", "mkdir"):
        found = shutil.which(tool)
        assert found is not None
        (bare / tool).symlink_to(found)
    done = _build_sh(tmp_path, {"PATH": str(bare)})
    assert (done.returncode, done.stderr) == (
        MISSING,
        "build.sh: cargo is not on PATH (install Rust: https://rustup.rs)\n",
    )


def test_build_without_the_debian_crates_names_the_apt_line(tmp_path: Path) -> None:
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not on PATH (the check after it is the one tested)")
    done = _build_sh(tmp_path, {"STCHECK_DEBIAN_REGISTRY": str(tmp_path)}, "plain")
    assert done.returncode == MISSING
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(
        f"build.sh: the Debian crate source serde-1* is not under {tmp_path} (apt-get install "
    )


def test_build_refuses_an_sdist_with_another_digest(tmp_path: Path) -> None:
    if shutil.which("cargo") is None or not list(Path("/usr/share/cargo/registry").glob("tempfile-3*")):
        pytest.skip("cargo or the Debian crates are missing (the checks before the sdist's)")
    fake = tmp_path / "safetensors-0.8.0.tar.gz"
    fake.write_bytes(b"not the sdist")
    done = _build_sh(tmp_path, {"STCHECK_SAFETENSORS_SDIST": str(fake)}, "plain")
    assert done.returncode == 1
    assert done.stderr.startswith(f"build.sh: {fake} is not the safetensors 0.8.0 sdist (sha256 must be ")


# --- the two protocols ----------------------------------------------------------


def test_persistent_harness_answers_one_line_per_frame(harness: Path) -> None:
    with Session([str(harness), "--persistent"], timeout_s=10) as session:
        assert session.ask(ONE_F32) == Answer("accept")
        assert session.ask(b"abc") == Answer("reject", "HeaderTooSmall: header too small")
        assert session.ask(b"\x02\x00\x00\x00\x00\x00\x00\x00{]").detail.startswith(
            "InvalidHeaderDeserialization: invalid JSON in header: "
        )
        assert session.ask(b"") == Answer("reject", "HeaderTooSmall: header too small")
        assert session.ask(ONE_F32) == Answer("accept")
        assert session.starts == 1


def test_persistent_harness_ends_at_the_end_of_stdin(harness: Path) -> None:
    whole = subprocess.run(
        [str(harness), "--persistent"], input=frame(ONE_F32) + frame(b"x"), capture_output=True, timeout=10, check=False
    )
    assert (whole.returncode, whole.stdout) == (0, b"accept\nreject HeaderTooSmall: header too small\n")
    cut = subprocess.run(
        [str(harness), "--persistent"], input=frame(ONE_F32)[:-1], capture_output=True, timeout=10, check=False
    )
    assert (cut.returncode, cut.stdout) == (2, b"")
    assert b"safetensors-harness:" in cut.stderr


def test_exit_protocol(harness: Path, tmp_path: Path) -> None:
    good, bad = tmp_path / "good.safetensors", tmp_path / "bad.safetensors"
    good.write_bytes(ONE_F32)
    bad.write_bytes(b"abc")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(harness), *args], capture_output=True, text=True, timeout=10, check=False)

    assert run(str(good)).returncode == 0
    rejected = run(str(bad))
    assert (rejected.returncode, rejected.stderr) == (1, "rejected: HeaderTooSmall: header too small\n")
    assert run(str(tmp_path / "absent")).returncode == 2
    assert run().returncode == 2


def test_afl_build_replays_with_the_exit_protocol(harness_afl: Path, tmp_path: Path) -> None:
    """Outside afl-fuzz the persistent loop runs once and the exit status is the verdict."""
    assert b"##SIG_AFL_PERSISTENT##" in harness_afl.read_bytes()
    assert b"##SIG_AFL_DEFER_FORKSRV##" in harness_afl.read_bytes()
    good, bad = tmp_path / "good.safetensors", tmp_path / "bad.safetensors"
    good.write_bytes(ONE_F32)
    bad.write_bytes(b"abc")
    assert subprocess.run([str(harness_afl), str(good)], capture_output=True, timeout=10, check=False).returncode == 0
    assert subprocess.run([str(harness_afl), str(bad)], capture_output=True, timeout=10, check=False).returncode == 1
    if shutil.which("afl-showmap"):
        shown = subprocess.run(
            ["afl-showmap", "-q", "-o", str(tmp_path / "map"), "--", str(harness_afl), str(good)],
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert shown.returncode == 0, shown.stderr
        assert len((tmp_path / "map").read_text().splitlines()) > 100  # edges of the crate itself


# --- the differential -------------------------------------------------------------


def test_the_crate_agrees_with_the_wheel_on_every_seed_and_corpus_file(harness: Path) -> None:
    """Every verdict equal; every error class equal but where the wheel's own is random.

    The one explained exception: among tensors that tie on (begin, end) the
    reference checks them in the order of a std HashMap, which is random per
    process, so the wheel and the harness may each raise the error of a
    different tensor of the tie (``tie_classes``; corpus i_ files and
    fuzz/seeds/n_layout_tie_mixed_errors.safetensors).  Both still reject.
    """
    pytest.importorskip("safetensors", reason="the wheel safetensors==0.8.0 is the other side")
    inputs = _inputs()
    disagreements = []
    with Session([str(harness), "--persistent"], timeout_s=10) as session:
        for name, data in inputs.items():
            answer = session.ask(data)
            assert answer.verdict in {"accept", "reject"}, f"{name}: {answer}"
            mine = None if answer.verdict == "accept" else answer.detail.split(":", 1)[0]
            theirs, _ = reference_load(data)
            if mine == theirs:
                continue
            if (
                mine is not None
                and theirs is not None
                and {mine, theirs} <= tie_classes(validate(data, profile=Profile.REFERENCE))
            ):
                continue
            disagreements.append(f"{name}: crate {mine or 'accept'}, wheel {theirs or 'accept'}")
        assert session.starts == 1
    assert len(inputs) > 600
    assert disagreements == []


# --- campaigns --------------------------------------------------------------------


def _campaign(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "validator", "fuzz", "loader-under-test", *args, "--seconds", "20"]
    argv += ["--out", str(tmp_path / "out"), "--workdir", str(tmp_path / "work"), "--interval", "5"]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False, cwd=str(ROOT))


def _assert_no_problem_class(done: subprocess.CompletedProcess[str], command: str) -> None:
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    assert f"loader {command}: no disagreement with safetensors 0.8.0 found" in done.stdout, log
    summary = re.search(r"\] done: (\d+) execs in .*findings (\d+)$", log, re.MULTILINE)
    assert summary is not None, log
    assert int(summary[1]) > 0, log
    assert summary[2] == "0", log


@pytest.mark.slow
def test_persistent_campaign_finds_no_problem_class(harness: Path, tmp_path: Path) -> None:
    """20 s of the atheris engine over the crate: the reference cannot disagree with itself."""
    pytest.importorskip("atheris", reason="--persistent runs under the atheris engine")
    command = f"{harness} --persistent"
    _assert_no_problem_class(_campaign(tmp_path, "--persistent", "--loader-cmd", command), command)


@pytest.mark.slow
def test_aflpp_campaign_finds_no_problem_class(harness_afl: Path, tmp_path: Path) -> None:
    """20 s of AFL++ over the crate's own edges: coverage grows, nothing is found."""
    command = f"{harness_afl} @@"
    done = _campaign(tmp_path, "--engine", "aflpp", "--loader-cmd", command)
    _assert_no_problem_class(done, command)
    edges = re.search(r"the loader's own coverage: (\d+) edges", done.stdout + done.stderr)
    assert edges is not None, done.stdout + done.stderr
    assert int(edges[1]) > 0
