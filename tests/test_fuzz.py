"""The fuzzing harness: seeds and regressions replayed through every target,
the structure-aware mutator, fuzz-your-loader on a naive loader, the runner
and CLI, short real atheris runs of each harness, and build.sh without Docker.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import validator
from validator.cli import main as _cli
from validator.fuzz import inprocess as _fuzz_main
from validator.fuzz import loader_under_test as _fuzz_yours
from validator.fuzz import mutator
from validator.fuzz import supervisor as _fuzz_runner
from validator.fuzz import targets as _fuzz_targets
from validator.fuzz.config import CampaignConfig, LoaderSpec, build_loader
from validator.fuzz.mutator import byte_mutate, mutate
from validator.fuzz.seeds import build, dictionary_text, seed_files
from validator.fuzz.targets import TARGETS, InvariantError

ROOT = Path(__file__).resolve().parent.parent
FUZZ = ROOT / "fuzz"
SEEDS = FUZZ / "seeds"
CORPUS = ROOT / "corpus"
REGRESSIONS = CORPUS / "regressions"
HAS_ATHERIS = importlib.util.find_spec("atheris") is not None
HAS_STRATEGIES = _fuzz_runner.has_strategies()
NAIVE = "fuzz.examples.naive_loader:load"


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    env.update(extra)
    return env


def _inputs() -> list[tuple[str, Path]]:
    """Every seed, corpus file and saved regression, with a readable id."""
    paths = sorted(SEEDS.glob("*"))
    paths += sorted(CORPUS.glob("*.safetensors"))
    paths += sorted(p for p in REGRESSIONS.glob("*/*.bin") if not p.name.startswith("timeout-"))
    return [(str(p.relative_to(ROOT)), p) for p in paths]


def _xfail(path: Path) -> tuple[str | None, set[str]]:
    """The reason an open bug's regression still fails, and the targets it fails.

    A ``.xfail`` file holds the reason; a first line ``targets: a b`` limits
    it to those targets (all targets otherwise).
    """
    marker = path.with_suffix(".xfail")
    if not marker.exists():
        return None, set()
    text = marker.read_text(encoding="utf-8").strip()
    first, _, rest = text.partition("\n")
    if first.startswith("targets:"):
        return rest.strip(), set(first.removeprefix("targets:").split())
    return text, set(TARGETS)


def _xfail_reason(path: Path) -> str | None:
    return _xfail(path)[0]


def _replay_cases() -> list[object]:
    cases = []
    for ident, path in _inputs():
        reason, failing = _xfail(path)
        for name in TARGETS:
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if name in failing else []
            cases.append(pytest.param(path, name, id=f"{name}:{ident}", marks=marks))
    return cases


# --- seeds, dictionary, regressions ----------------------------------------


def test_committed_seeds_and_dictionary_match_the_generator():
    files = {p.name: p.read_bytes() for p in SEEDS.iterdir()}
    assert files == seed_files()
    assert (FUZZ / "safetensors.dict").read_text(encoding="utf-8") == dictionary_text()


def test_seeds_have_the_verdicts_their_names_claim():
    for name, data in seed_files().items():
        strict = validator.validate(data)
        ref = validator.validate(data, profile="reference")
        verdict = name[0]
        if verdict == "i":  # disputed: strict refuses it, or warns where real writers emit it (ST303)
            assert not strict.valid or any(not f.rule.applies_to(validator.Profile.REFERENCE) for f in strict.warnings)
        else:
            assert (verdict == "y") == strict.valid, name
        assert (verdict != "n") == ref.valid, name


@pytest.mark.parametrize(("path", "target"), _replay_cases())
def test_replay_through_target(path: Path, target: str):
    TARGETS[target](path.read_bytes())


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(
            p,
            id=str(p.relative_to(ROOT)),
            marks=[pytest.mark.xfail(strict=True, reason=r)] if (r := _xfail_reason(p)) else [],
        )
        for p in sorted(REGRESSIONS.glob("*/timeout-*.bin"))
    ],
)
def test_replay_hang_regressions_finish_in_time(path: Path):
    # A hang cannot be replayed in-process: replay it through the CLI under a time limit.
    cmd = [sys.executable, "-m", "validator", "fuzz", "all", "--replay", str(path)]
    try:
        proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=5, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{path.name}: no verdict within 5 s")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_regression_has_a_one_line_reproducer():
    bins = sorted(REGRESSIONS.glob("*/*.bin"))
    assert bins, "at least the json-string-backtracking regression is saved"
    for path in bins:
        cmd = path.with_suffix(".cmd").read_text(encoding="utf-8").strip()
        assert cmd.splitlines() == [cmd]
        assert cmd.startswith(f"stcheck fuzz {path.parent.name} --replay ")
        assert cmd.endswith(str(path.relative_to(ROOT)))


# --- the targets can fail ----------------------------------------------------


def test_loader_target_catches_a_loader_that_slices_one_byte_short(monkeypatch):
    def short(data: bytes) -> dict[str, bytes]:
        report = validator.ensure_valid(data)
        start = report.data_start or 0
        return {n: data[start + t.begin : start + t.end - 1] for n, t in (report.tensors or {}).items()}

    monkeypatch.setattr(_fuzz_targets, "LOAD", short)
    with pytest.raises(InvariantError, match="loaded bytes differ"):
        _fuzz_targets.target_loader(seed_files()["y_one_f32.safetensors"])


def test_loader_target_catches_a_loader_that_accepts_holes(monkeypatch):
    monkeypatch.setattr(_fuzz_targets, "LOAD", lambda data: {})
    with pytest.raises(InvariantError, match="accepts a file the strict profile rejects"):
        _fuzz_targets.target_loader(seed_files()["n_layout_hole.safetensors"])


def test_differential_target_catches_a_disagreement(monkeypatch):
    monkeypatch.setattr(_fuzz_targets, "reference_load", lambda data: ("InvalidOffset", []))
    with pytest.raises(InvariantError, match=r"safetensors 0\.8\.0 says InvalidOffset"):
        _fuzz_targets.target_differential(seed_files()["y_one_f32.safetensors"])


def test_roundtrip_target_catches_a_lossy_serialiser(monkeypatch):
    real = _fuzz_targets.serialise
    monkeypatch.setattr(_fuzz_targets, "serialise", lambda report, data: real(report, data) + b"x")
    with pytest.raises(InvariantError, match="canonical form of an accepted file is invalid"):
        _fuzz_targets.target_roundtrip(seed_files()["y_one_f32.safetensors"])


def test_validate_target_catches_an_escaping_exception(monkeypatch):
    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(_fuzz_targets, "validate", broken)
    with pytest.raises(KeyError):
        _fuzz_targets.target_validate(b"12345678")
    monkeypatch.setattr(_fuzz_targets, "both_profiles", broken)
    with pytest.raises(KeyError):
        _fuzz_targets.fuzz_validate(b"12345678")


def test_reference_class_refuses_an_unknown_message():
    assert _fuzz_targets.reference_class("Error while deserializing: header too large") == "HeaderTooLarge"
    with pytest.raises(InvariantError, match="unrecognised"):
        _fuzz_targets.reference_class("something new")


# --- mutator -------------------------------------------------------------------


def test_mutator_output_is_varied_bounded_and_never_raises():
    seeds = list(seed_files().values())
    outputs = set()
    classes = set()
    strict_valid = 0
    pool = list(seeds)
    for i in range(3000):
        max_size = (64, 512, 4096)[i % 3]
        out = mutate(pool[i % len(pool)], max_size, i)
        assert isinstance(out, bytes)
        assert len(out) <= max_size
        outputs.add(out)
        if i % 2:
            pool.append(out)  # mutate mutants too, as the engine does
    assert len(outputs) > 2700
    for i in range(1000):  # one generation from the seeds
        out = mutate(seeds[i % len(seeds)], 4096, i)
        classes.add(validator.validate(out, profile="reference").reference_error)
        strict_valid += validator.is_valid(out)
    # structure-aware: past the JSON layer into layout errors, and back to valid files
    assert {"InvalidOffset", "TensorInvalidInfo", "MetadataIncompleteBuffer", "InvalidHeaderDeserialization"} <= classes
    assert strict_valid > 0


def test_encoder_spells_chains_of_one_member_containers_as_json_does():
    """The one-pass spelling of nested one-member arrays and objects (_nest)."""
    tree: object = [1, "x"]
    plain: object = [1, "x"]
    for level in range(300):
        if level % 3:
            tree, plain = [tree], [plain]
        else:
            tree, plain = mutator.Obj([[f"k{level}", tree]]), {f"k{level}": plain}
    style = mutator._Style(random.Random(0))
    style.ws, style.odd_numbers, style.escape = "", False, False
    parts: list[str] = []
    mutator._encode(mutator.Obj([["a", tree], ["b", [[2]]]]), style, parts)
    assert "".join(parts) == json.dumps({"a": plain, "b": [[2]]}, separators=(",", ":"))
    deep: object = 0
    for _ in range(5000):
        deep = [deep]
    parts = []
    mutator._encode(deep, style, parts)
    assert "".join(parts) == "[" * 5000 + "0" + "]" * 5000


def test_mutator_is_deterministic_per_seed_and_falls_back_to_bytes():
    data = seed_files()["y_two_tensors_metadata.safetensors"]
    assert mutate(data, 4096, 7) == mutate(data, 4096, 7)
    garbage = b"\x05\x00\x00\x00\x00\x00\x00\x00{[{[{" + b"data"
    calls = []

    def engine(buf: bytes, max_size: int) -> bytes:
        calls.append((buf, max_size))
        return buf[::-1]

    # Structure-aware (an input that does not decode) and header-bytes seeds:
    # the engine mutates the header alone, and N is rewritten to fit.
    for seed in (1, mutator.STRUCTURED, mutator.STRUCTURED + mutator.HEADER_BYTES - 1):
        calls.clear()
        assert mutate(garbage, 100, seed, engine) == b"\x05" + bytes(7) + b"{[{[{"[::-1] + b"data"
        assert calls == [(b"{[{[{", 100 - 8 - 4)]
    # An N that does not fit: the rest taken for the header, or all of it.
    broken = b"\xff" * 8 + b"{[{"
    calls.clear()
    assert mutate(broken, 100, mutator.STRUCTURED, engine) == b"\x03" + bytes(7) + b"{[{"[::-1]
    assert calls == [(b"{[{", 92)]
    # Whole-input seeds, and inputs without 8 bytes: all of it.
    assert mutator.STRUCTURED <= 0x100 % 100 < mutator.STRUCTURED + mutator.HEADER_BYTES  # a header-bytes seed
    for seed, data_in in ((99, garbage), (0x100, broken), (50, b"\x01")):
        calls.clear()
        assert mutate(data_in, 100, seed, engine) == data_in[::-1]
        assert calls == [(data_in, 100)]
    assert len(byte_mutate(b"x" * 100, 10, random.Random(1))) <= 10


# --- fuzz your loader --------------------------------------------------------


@pytest.fixture
def naive(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    return build_loader(CampaignConfig("loader-under-test", loader=LoaderSpec(function=NAIVE)))


def _categories(loader: _fuzz_yours.LoaderUnderTest, data: bytes) -> list[str]:
    return [category for category, _ in _fuzz_yours.classify(loader, data)]


def test_naive_loader_bug_classes_are_reported(naive):
    seeds = seed_files()
    assert _categories(naive, seeds["n_layout_hole.safetensors"]) == ["accepts-invalid:offsets-not-contiguous(hole)"]
    assert _categories(naive, seeds["n_layout_overlap.safetensors"]) == [
        "accepts-invalid:offsets-not-contiguous(overlap)"
    ]
    assert _categories(naive, seeds["n_layout_trailing_bytes.safetensors"]) == ["accepts-invalid:buffer-trailing-bytes"]
    assert _categories(naive, seeds["n_deep_3000.safetensors"]) == ["crash:RecursionError"]
    assert _categories(naive, seeds["n_too_small.safetensors"]) == ["crash:struct.error"]
    assert _categories(naive, seeds["y_two_tensors_metadata.safetensors"]) == []


def test_a_correct_loader_gets_no_report(monkeypatch):
    def good(path: str) -> object:
        return _fuzz_targets.numpy_views(Path(path).read_bytes())

    loader = _fuzz_yours.LoaderUnderTest(function=good)
    for name, data in seed_files().items():
        found = _fuzz_yours.classify(loader, data)
        # strict-only constructs (i_*) are accepted by the reference and refused by this strict
        # loader, except those strict accepts with a warning (null metadata, which mlx writes)
        assert [c for c, _ in found if c != "rejects-valid"] == [], name
        assert bool(found) == (name.startswith("i_") and not validator.validate(data).valid), name


def test_loader_bytes_mismatch_is_reported():
    def off_by_one(data: bytes) -> dict[str, bytes]:
        report = validator.ensure_valid(data)
        start = (report.data_start or 0) + 1
        return {n: data[start + t.begin : start + t.end] for n, t in (report.tensors or {}).items()}

    loader = _fuzz_yours.LoaderUnderTest(function=off_by_one, pass_bytes=True)
    assert _categories(loader, seed_files()["y_one_f32.safetensors"]) == ["bytes-mismatch"]


def test_loader_command_template(tmp_path):
    script = tmp_path / "accept_all.py"
    script.write_text("import sys\nopen(sys.argv[1], 'rb').read()\nsys.exit(0)\n", encoding="utf-8")
    loader = _fuzz_yours.LoaderUnderTest(command=f"{sys.executable} {script} {{path}}")
    assert _categories(loader, seed_files()["n_layout_hole.safetensors"]) == [
        "accepts-invalid:offsets-not-contiguous(hole)"
    ]
    assert _categories(loader, seed_files()["y_one_f32.safetensors"]) == []
    crash = tmp_path / "crash.py"
    crash.write_text("raise SystemExit(3)\n", encoding="utf-8")
    loader = _fuzz_yours.LoaderUnderTest(command=f"{sys.executable} {crash} {{path}}")
    assert _categories(loader, seed_files()["y_one_f32.safetensors"]) == ["crash:exit-3"]


def test_loader_command_that_hangs(tmp_path):
    script = tmp_path / "sleep.py"
    script.write_text("import time\ntime.sleep(30)\n", encoding="utf-8")
    loader = _fuzz_yours.LoaderUnderTest(command=f"{sys.executable} {script} {{path}}", timeout_s=0.5)
    assert _categories(loader, seed_files()["y_one_f32.safetensors"]) == ["hang"]


def test_fuzz_your_loader_replay_through_the_cli(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    code = _cli.main(["fuzz", "loader-under-test", "--loader", NAIVE, "--replay", str(SEEDS)])
    out = capsys.readouterr().out
    assert code == 1
    for category in (
        "offsets-not-contiguous(hole)",
        "offsets-not-contiguous(overlap)",
        "buffer-trailing-bytes",
        "crash:RecursionError",
    ):
        assert category in out


def test_loader_findings_are_recorded_shortest_first(tmp_path):
    _fuzz_yours.record(str(tmp_path), "crash:X", "d", b"long input")
    _fuzz_yours.record(str(tmp_path), "crash:X", "d", b"short")
    _fuzz_yours.record(str(tmp_path), "crash:X", "d", b"longer again")
    [entry] = _fuzz_yours.read_findings(str(tmp_path))
    assert entry["category"] == "crash:X"
    assert Path(entry["path"]).read_bytes() == b"short"


# --- runner and CLI ------------------------------------------------------------


def test_cli_import_pulls_in_neither_atheris_nor_numpy():
    code = "import sys, validator.cli.main, validator.cli.fuzz; print(sorted({'atheris', 'numpy'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_missing_atheris_is_a_usage_error_with_the_install_hint(monkeypatch, capsys):
    monkeypatch.setattr(_fuzz_runner, "atheris_available", lambda: False)
    assert _cli.main(["fuzz", "validate", "--seconds", "1"]) == 2
    assert "(the fuzz extra, from this checkout of stcheck)" in capsys.readouterr().err


def test_loader_under_test_needs_a_loader(capsys):
    assert _cli.main(["fuzz", "loader-under-test", "--seconds", "1"]) == 2
    assert "--loader" in capsys.readouterr().err


def test_replay_cli_reports_failures(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(_fuzz_targets, "reference_load", lambda data: ("HeaderTooSmall", []))
    bad = tmp_path / "x.bin"
    bad.write_bytes(seed_files()["y_one_f32.safetensors"])
    assert _cli.main(["fuzz", "differential", "--replay", str(bad)]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_signature_is_parsed_from_an_atheris_report():
    output = (
        "#12 NEW cov: 1 ft: 1 corp: 1/1b exec/s: 0 rss: 1Mb\n"
        " === Uncaught Python exception: ===\n"
        "InvariantError: something\n"
        "Traceback (most recent call last):\n"
        '  File "/x/validator/fuzz/targets.py", line 10, in target_loader\n'
        '  File "/x/validator/fuzz/targets.py", line 77, in _fail\n'
        "==1== ERROR: libFuzzer: fuzz target exited\n"
    )
    assert _fuzz_runner._signature("crash", output) == "InvariantError at targets.py:77 (_fail)"
    assert _fuzz_runner._signature("timeout", output) == "timeout"


def test_minimise_keeps_the_failure_and_shrinks():
    def test(data: bytes) -> None:
        if b"BUG" in data:
            raise ValueError("bug")

    data = build('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"BUG":1}', b"z" * 50)
    small = _fuzz_main.minimise(test, data, seconds=10)
    assert b"BUG" in small
    assert len(small) <= 8


def test_a_finding_is_saved_with_its_reproducer(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = CampaignConfig(target="validate", seconds=1, workdir="out", regressions="reg", minimise_s=1)
    campaign = _fuzz_runner._Campaign(config, out=lambda s: None)
    artifact = tmp_path / "crash-abc"
    artifact.write_bytes(b"\x00" * 9)
    assert campaign.handle(str(artifact), "=== Uncaught Python exception: ===\nKeyError: 1\n")
    [finding] = campaign.findings
    saved = Path(finding.path)
    assert saved.read_bytes() == b"\x00" * 9
    assert saved.with_suffix(".cmd").read_text().strip() == f"stcheck fuzz validate --replay {finding.path}"
    assert "KeyError" in saved.with_suffix(".log").read_text()
    assert campaign.handle(
        str(artifact), "=== Uncaught Python exception: ===\nKeyError: 1\n"
    )  # seen again: not saved twice
    assert len(campaign.findings) == 1
    assert campaign.findings[0].repeats == 2


# --- real atheris runs (short) ---------------------------------------------------

needs_atheris = pytest.mark.skipif(
    not HAS_ATHERIS, reason="atheris is not installed (pip install '.[fuzz]' in the checkout)"
)


@needs_atheris
@pytest.mark.parametrize("harness", sorted(p.name for p in FUZZ.glob("fuzz_*.py")))
def test_harness_runs_under_atheris(harness, tmp_path):
    if harness == "fuzz_hypothesis.py" and not HAS_STRATEGIES:
        pytest.skip("validator.strategies (valid_files) is not available")
    if harness == "fuzz_pickle_loaders.py":  # the oracle's harness: real loaders, pickle seeds
        pytest.skip("replayed through the oracle by tests/test_pickle_oracle.py (a disagreement is a finding)")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    args = [sys.executable, str(FUZZ / harness), "-runs=300", f"-artifact_prefix={tmp_path}/", str(corpus)]
    if harness != "fuzz_hypothesis.py":
        args += [f"-dict={FUZZ / 'safetensors.dict'}", str(SEEDS)]
    proc = subprocess.run(args, env=_env(), capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Done 300 runs" in proc.stderr
    assert not list(tmp_path.glob("crash-*"))


@pytest.mark.slow
@needs_atheris
def test_stcheck_fuzz_prints_progress_and_totals(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "validator",
        "fuzz",
        "roundtrip",
        "--seconds",
        "3",
        "--interval",
        "1",
        "--workdir",
        str(tmp_path / "out"),
        "--regressions",
        str(tmp_path / "reg"),
    ]
    proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[roundtrip] done:" in proc.stdout
    assert " execs " in proc.stdout
    assert "corpus" in proc.stdout
    assert "findings 0" in proc.stdout


# --- ClusterFuzzLite build.sh without Docker ------------------------------------


def test_build_sh_lays_out_harnesses_dicts_and_seed_zips(tmp_path):
    import zipfile

    src, out, bin_dir = tmp_path / "src", tmp_path / "out", tmp_path / "bin"
    for d in (src, out, bin_dir):
        d.mkdir()
    (src / "stcheck").symlink_to(ROOT)
    stub = bin_dir / "compile_python_fuzzer"
    stub.write_text('#!/bin/sh\nname=$(basename "$1" .py)\ncp "$1" "$OUT/$name"\necho "$1" >> "$OUT/compiled.txt"\n')
    stub.chmod(0o755)
    env = _env(
        SRC=str(src), OUT=str(out), STCHECK_BUILD_SKIP_INSTALL="1", PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    )
    subprocess.run(
        ["bash", str(ROOT / ".clusterfuzzlite" / "build.sh")], env=env, check=True, capture_output=True, timeout=60
    )
    harnesses = sorted(p.stem for p in FUZZ.glob("fuzz_*.py"))
    assert (out / "compiled.txt").read_text().split() == [f"fuzz/{h}.py" for h in harnesses]
    for name in harnesses:
        assert (out / name).exists()
        if name == "fuzz_hypothesis":
            assert not (out / f"{name}_seed_corpus.zip").exists()
            continue
        if name == "fuzz_pickle":  # the pickle reader: its own tokens and corpus
            assert (out / f"{name}.dict").read_bytes() == (FUZZ / "pickle.dict").read_bytes()
            with zipfile.ZipFile(out / f"{name}_seed_corpus.zip") as zf:
                contents = {zf.read(n) for n in zf.namelist()}
            pickles = ROOT / "corpus" / "pickles"
            assert contents == {p.read_bytes() for p in pickles.iterdir() if p.name.startswith(("y_", "n_"))}
            continue
        assert (out / f"{name}.dict").read_text() == dictionary_text()
        with zipfile.ZipFile(out / f"{name}_seed_corpus.zip") as zf:
            contents = {zf.read(n) for n in zf.namelist()}
        assert set(seed_files().values()) <= contents
        assert {p.read_bytes() for p in CORPUS.glob("*.safetensors")} <= contents
        for regression in REGRESSIONS.glob("*/*.bin"):  # open bugs (.xfail) stay out
            assert (regression.read_bytes() in contents) != regression.with_suffix(".xfail").exists()


def test_clusterfuzzlite_project_files():
    assert (ROOT / ".clusterfuzzlite" / "project.yaml").read_text().strip() == "language: python"
    docker = (ROOT / ".clusterfuzzlite" / "Dockerfile").read_text()
    assert "base-builder-python" in docker
    assert "build.sh" in docker
    assert shutil.which("bash")


def test_dictionary_entries_parse_as_libfuzzer_lines():
    lines = [ln for ln in dictionary_text().splitlines() if not ln.startswith("#")]
    assert len(lines) > 40
    for line in lines:
        name, _, value = line.partition("=")
        assert name.isidentifier()
        assert value.startswith('"')
        assert value.endswith('"')
        json.loads(value.replace("\\x", "\\u00"))  # printable ASCII plus \xNN escapes only


def test_tie_order_divergence_is_accepted_but_only_for_ties():
    data = (REGRESSIONS / "differential" / "crash-tie-order-nondeterministic.bin").read_bytes()
    report = validator.validate(data, profile="reference")
    assert _fuzz_targets.tie_classes(report) == {"MisalignedSlice", "InvalidOffset"}
    for _ in range(10):  # safetensors picks either class, at random
        _fuzz_targets.target_differential(data)
    untied = build({"a": {"dtype": "U8", "shape": [0], "data_offsets": [0, 1]}}, b"z")
    assert _fuzz_targets.tie_classes(validator.validate(untied, profile="reference")) == set()
