"""The public pickle scanners' own cases (tests/scanner_suites/recipes.py), judged by stcheck.

Each recipe is built into tmp_path under its suite's file name and judged as
a folder member (``classify``); a few also as a file argument through the CLI
(``python -m validator scan FILE --format json``).  "error" wants an error
finding of a rule that says loading runs code (ST701, or the format's own);
"warning" wants at least a warning (an archive stcheck cannot read; ST708
archive-unreadable once it exists, any finding until then); "clean" wants no
error.  The slow oracle test proves each "runs code" label against the real
loaders in a throwaway subprocess that stops at the first global resolved,
before anything is called.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from scanner_suites.build import (
    Call,
    Compressed,
    Npy,
    Npz,
    Plain,
    Ref,
    SevenZip,
    Stream,
    TorchSave,
    TorchZip,
    Value,
    Zip,
    build,
    stream_bytes,
)
from scanner_suites.recipes import LEFT_OUT, RECIPES, SUITES, object_array

from validator._rules import Severity
from validator.sources.kinds import classify

# Rules whose error says that loading the file runs code (or cannot be judged).
RUNS_CODE = frozenset({"ST701", "ST706"})
WORKTREE = Path(__file__).resolve().parent.parent
_BY_ID = {recipe.id: recipe for recipe in RECIPES}


def _write(tmp_path: Path, recipe_id: str) -> Path:
    recipe = _BY_ID[recipe_id]
    path = tmp_path / recipe.name
    path.write_bytes(build(recipe.container))
    return path


def _judge(expected: str, findings: list[tuple[str, str]]) -> str | None:
    """Why ``findings`` ((code, severity) pairs) miss ``expected``, or None when they meet it."""
    errors = [code for code, severity in findings if severity == "error"]
    if expected == "error" and not RUNS_CODE & set(errors):
        return f"wanted an error from {sorted(RUNS_CODE)}, got {findings}"
    if expected == "warning" and not any(severity in {"warning", "error"} for _, severity in findings):
        return f"wanted at least a warning (archive not read), got {findings}"
    if expected == "clean" and errors:
        return f"wanted no error, got {findings}"
    return None


@pytest.mark.parametrize("recipe_id", sorted(_BY_ID))
def test_folder_member(tmp_path: Path, recipe_id: str) -> None:
    recipe = _BY_ID[recipe_id]
    path = _write(tmp_path, recipe_id)
    other = classify(str(path), [recipe.name])
    findings = [(f.code, "error" if f.severity is Severity.ERROR else f.severity.value) for f in other.findings]
    assert _judge(recipe.expected, findings) is None, (recipe.calls, _judge(recipe.expected, findings))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(WORKTREE), env.get("PYTHONPATH")]))
    return env


_CLI = sorted(r.id for r in RECIPES if r.cli)


@pytest.fixture(scope="module")
def cli_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[str, str]]]:
    # One `scan` of every CLI recipe given as file arguments (one process, one
    # folder per file so that no file is judged as another's sibling).
    folder = tmp_path_factory.mktemp("cli")
    paths = {}
    for recipe_id in _CLI:
        (folder / recipe_id).mkdir()
        paths[str(_write(folder / recipe_id, recipe_id))] = recipe_id
    proc = subprocess.run(
        [sys.executable, "-m", "validator", "scan", "--no-config", "--format", "json", *paths],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
        check=False,
    )
    assert proc.returncode in {0, 1}, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    found: dict[str, list[tuple[str, str]]] = {}
    for entry in report["files"]:
        found.setdefault(paths[entry["path"]], []).extend((f["code"], f["severity"]) for f in entry["findings"])
    return found


@pytest.mark.parametrize("recipe_id", _CLI)
def test_file_argument(cli_report: dict[str, list[tuple[str, str]]], recipe_id: str) -> None:
    recipe = _BY_ID[recipe_id]
    findings = cli_report.get(recipe_id, [])
    assert _judge(recipe.expected, findings) is None, (recipe.calls, _judge(recipe.expected, findings))


_PROVENANCE = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+) (?P<path>tests?/\S+)(?P<rest>.*)$")


def test_every_recipe_names_its_suite_and_test() -> None:
    ids = [recipe.id for recipe in RECIPES]
    assert len(ids) == len(set(ids))
    for recipe in RECIPES:
        assert recipe.suite in SUITES, recipe.id
        assert recipe.id.startswith(f"{recipe.suite}-"), recipe.id
        match = _PROVENANCE.match(recipe.provenance)
        assert match is not None, recipe.provenance
        assert match["repo"] == SUITES[recipe.suite], recipe.provenance
        # a test function, a sample file, or a generator that names one
        assert re.search(r"test_\w+|\.(pkl|pickle|pt|bin|npy|npz|zip|7z|gz|dill)\b|initialize_\w+", recipe.provenance)
        assert recipe.expected in {"error", "warning", "clean"}, recipe.id
        assert recipe.label in {"malicious", "safe"}, recipe.id
        # an expectation that departs from the suite's label says why
        departs = (recipe.label == "safe") == (recipe.expected == "error")
        assert not departs or recipe.reason, recipe.id


class _Reduces:
    """An object whose __reduce__ names a harmless builtin: pickle.dumps only records it."""

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return len, ("abc",)


@pytest.mark.parametrize("protocol", range(6))
def test_builder_spells_values_as_pickle_dumps(protocol: int) -> None:
    # The recipes' Stream values are laid out as pickle.dumps lays out the
    # suites' objects, memo included, so a failure is stcheck's, not the builder's.
    data: dict[str, Value] = {
        "a": [1, 300, 70000],
        "b": {},
        "c": (1, 2, 3, 4),
        "d": "x" * 300,
        "e": None,
        "f": True,
        "g": "a\nb\\c\rd\x00",
    }
    assert stream_bytes(Stream(data, protocol)) == pickle.dumps(data, protocol)
    call = Call(Ref("builtins", "len"), ("abc",))
    assert stream_bytes(Stream([call, data], protocol)) == pickle.dumps([_Reduces(), data], protocol)


def test_builder_spells_npy_as_np_save() -> None:
    np = pytest.importorskip("numpy")
    ints = np.arange(1, 7, dtype="<i8").reshape(2, 3)
    objects = np.empty((2, 2), dtype=object)
    objects[:] = [(1, 2), (3, 4)]
    for array, npy in (
        (ints, Npy("<i8", (2, 3), ints.tobytes())),
        (objects, Npy("|O", (2, 2), Stream(object_array([1, 2, 3, 4], (2, 2), "numpy._core.multiarray"), 4))),
    ):
        saved = io.BytesIO()
        np.save(saved, array)  # numpy 2 pickles object arrays at protocol 4 from numpy._core
        assert build(npy) == saved.getvalue()


@pytest.mark.slow
@pytest.mark.parametrize("legacy", [False, True])
def test_builder_writes_torch_save_layout(legacy: bool) -> None:
    torch = pytest.importorskip("torch")
    state = {"weight": torch.arange(6, dtype=torch.float32).reshape(2, 3), "bias": torch.zeros(2)}
    saved = io.BytesIO()
    torch.save(state, saved, _use_new_zipfile_serialization=not legacy)
    mine = build(TorchSave(legacy=legacy))
    assert {k: v.tolist() for k, v in torch.load(io.BytesIO(mine), weights_only=True).items()} == {
        k: v.tolist() for k, v in state.items()
    }
    if not legacy:
        # the same bytes but for the random serialization id and its CRC
        real = saved.getvalue()
        assert len(real) == len(mine)
        assert sum(a != b for a, b in zip(real, mine, strict=True)) <= 44


def test_left_out_cases_say_why() -> None:
    for suite, where, why in LEFT_OUT:
        assert suite in SUITES
        assert where.startswith(("test/", "tests/")), where
        assert why


def test_every_container_kind_is_built() -> None:
    kinds = {type(recipe.container) for recipe in RECIPES}
    assert kinds == {Plain, Zip, Npy, Npz, TorchZip, TorchSave, SevenZip, Compressed}


# -- the oracle: the real loaders resolve the global the label names --------------

# One child process imports the loaders once, then forks once per sample;
# each fork installs an audit hook and loads its sample.  At the first
# `pickle.find_class` event for a global outside the data globals below the
# fork writes the name and ends with os._exit: the name has been read, its
# module not yet imported, nothing of the sample called.  The child prints
# {sample: [exit status, global]} as JSON.
_DATA_GLOBALS = (
    "collections.OrderedDict",
    "torch._utils._rebuild_tensor_v2",
    "torch.FloatStorage",
    "torch.LongStorage",
    "numpy.core.multiarray._reconstruct",
    "numpy._core.multiarray._reconstruct",
    "numpy.ndarray",
    "numpy.dtype",
    "_codecs.encode",
)
_CHILD = textwrap.dedent(
    """
    import gzip, json, os, pickle, sys
    import numpy, torch

    def load(loader, path):
        if loader == "pickle":
            size = os.path.getsize(path)
            with open(path, "rb") as f:
                while f.tell() < size:
                    pickle.load(f)  # every stream, as torch's legacy reader does
        elif loader == "gzip":
            with gzip.open(path, "rb") as f:
                pickle.load(f)
        elif loader == "numpy":
            loaded = numpy.load(path, allow_pickle=True)
            if isinstance(loaded, numpy.lib.npyio.NpzFile):
                [loaded[key] for key in loaded.files]  # an .npz unpickles a member when it is read
        else:
            torch.load(path, weights_only=False)

    def run(loader, path, data, out):
        def hook(event, args):
            if event == "pickle.find_class" and f"{args[0]}.{args[1]}" not in data:
                os.write(out, f"{args[0]}.{args[1]}".encode())
                os._exit(3)

        sys.addaudithook(hook)
        try:
            load(loader, path)
        except BaseException:
            os._exit(1)
        os._exit(0)

    results = {}
    for name, loader, path, data in json.load(sys.stdin):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            run(loader, path, set(data), write)
        os.close(write)
        with os.fdopen(read, "rb") as r:
            resolved = r.read().decode()
        _, status = os.waitpid(pid, 0)
        results[name] = [os.waitstatus_to_exitcode(status), resolved]
    print(json.dumps(results))
    """
)


def _loader(recipe_id: str) -> str:
    recipe = _BY_ID[recipe_id]
    if isinstance(recipe.container, Compressed):
        return "gzip"
    if isinstance(recipe.container, (Npy, Npz)) or recipe.name.endswith(".npy"):
        return "numpy"
    if isinstance(recipe.container, (TorchZip, TorchSave)):
        return "torch"
    return "pickle"


# Plain zips and 7z archives have no one loader (torch.load wants its own
# layout; zipfile refuses the flag bits, the renamed member and the bad CRC
# these cases plant), so the oracle skips them.  These others are refused
# because no loader reads them as stcheck would have to, not because a
# loader calls something: the loaders fail before any global.
_NO_GLOBAL = frozenset(
    {
        *(
            f"fickling-frame_straddle_{d}"
            for d in ("BINBYTES", "SHORT_BINUNICODE", "UNICODE", "BININT", "nested_frame")
        ),
        "picklescan-bad_pytorch",
        "modelscan-bad_pytorch",
        "picklescan-not_a_pickle",
    }
)
_RUNS = sorted(
    r.id
    for r in RECIPES
    if r.expected == "error" and r.id not in _NO_GLOBAL and not isinstance(r.container, (Zip, SevenZip))
)
_CLEAN = sorted(
    r.id
    for r in RECIPES
    if r.expected == "clean" and r.id not in _NO_GLOBAL and not isinstance(r.container, (Zip, SevenZip))
)
# What the clean cases may resolve besides: issue 35's data-only tier.
_TIER_TWO = ("builtins.dict", "numpy.core.multiarray.scalar")


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str]]:
    pytest.importorskip("torch")
    if not hasattr(os, "fork"):
        pytest.skip("the oracle forks one process per sample")
    folder = tmp_path_factory.mktemp("oracle")
    jobs = []
    for recipe_id in (*_RUNS, *_CLEAN, *_NO_GLOBAL):
        where = folder / recipe_id
        where.mkdir()
        path = _write(where, recipe_id)
        data = _DATA_GLOBALS if recipe_id in _RUNS else (*_DATA_GLOBALS, *_TIER_TWO)
        jobs.append((recipe_id, _loader(recipe_id), str(path), data))
    proc = subprocess.run(
        [sys.executable, "-I", "-c", _CHILD],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=folder,
        check=True,
    )
    return {name: (code, resolved) for name, (code, resolved) in json.loads(proc.stdout.splitlines()[-1]).items()}


@pytest.mark.slow
@pytest.mark.parametrize("recipe_id", _RUNS)
def test_oracle_loader_reaches_a_call(oracle: dict[str, tuple[int, str]], recipe_id: str) -> None:
    code, resolved = oracle[recipe_id]
    assert code == 3, f"{_loader(recipe_id)} resolved no global outside the data globals (exit {code})"
    assert resolved


@pytest.mark.slow
@pytest.mark.parametrize("recipe_id", _CLEAN)
def test_oracle_clean_cases_load_with_data_globals_only(oracle: dict[str, tuple[int, str]], recipe_id: str) -> None:
    # The loader reads the whole file, and resolves nothing beyond the data globals.
    code, resolved = oracle[recipe_id]
    assert (code, resolved) == (0, "")


@pytest.mark.slow
@pytest.mark.parametrize("recipe_id", sorted(_NO_GLOBAL))
def test_oracle_loaders_resolve_no_global(oracle: dict[str, tuple[int, str]], recipe_id: str) -> None:
    # Refused or left alone by stcheck: the loader resolves nothing, whether it
    # then raises (1) or, across a straddled frame, reads on to the end (0).
    code, resolved = oracle[recipe_id]
    assert code in {0, 1}
    assert resolved == ""
