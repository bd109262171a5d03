"""The pickles that published wheels ship as test data, judged by stcheck and by their real loaders.

Issue 35: pickles that numpy, joblib, scipy and pandas ship as test data give
no error unless loading them calls something outside stcheck's two tiers (the
allowlist, validator.pickles._allow.ALLOWED, and the data tier, DATA_TIER).
The files are found at test time in the installed packages (a package that is
not installed is skipped, saying so: pandas is not a dependency of the venv).

Each file is judged twice: by ``classify`` (stcheck's verdict: no finding,
ST705, ST710, ST701) and, in the slow test, by the loader its publisher's own
tests use, in one throwaway child process that forks per file.  An audit hook
on ``pickle.find_class`` records every global the loader resolves and ends the
fork at the first global outside the two tiers, before it is called.  Then:

- an ST701 error needs the loader to reach a global outside the tiers, or the
  file to be listed in UNREADABLE (the loader raises before any global) or in
  KNOWN_FALSE_ALARMS (stcheck refuses what the loader reads with tier globals
  only; the table is asserted exact, so fixing one fails until it is updated);
- no error needs the loader to resolve tier globals only (a false clean fails).
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from validator._rules import Severity
from validator.pickles._allow import ALLOWED, DATA_TIER
from validator.sources.kinds import Other, classify

# The wheels whose test data issue 35 names.  pandas is not installed in the
# project's venv (no dependency needs it), so its files are skipped with that reason.
PACKAGES = ("numpy", "joblib", "scipy", "pandas")
# Pickle-bearing names, and the compressed forms a loader reads them in
# (joblib's .gz/.gzip/.bz2/.xz/.lzma/.z, numpy.random's .pkl.gz).
_SUFFIXES = (".pkl", ".pickle", ".npy", ".npz", ".joblib")
_COMPRESSED = (".gz", ".gzip", ".bz2", ".xz", ".lzma", ".z")

# stcheck errs, and the loader itself cannot read the file: it raises before
# resolving any global.  (name: why)
_ZF_MEMBER = (
    "joblib < 0.10's ZF form (a zlib stream after a 'ZF' header) of raw array bytes, the data that "
    "the sibling .gz file's ZNDArrayWrapper reads; alone, joblib.load inflates it and unpickles the "
    "array bytes, which start with 0x00: KeyError 0 in pickle's opcode table before any global "
    "(stcheck: unknown opcode 0x00 at byte 0)"
)
UNREADABLE: dict[str, str] = {
    f"joblib/test/data/joblib_0.9.4.dev0_compressed_cache_size_pickle_py35_np19.gz_0{i}.npy.z": _ZF_MEMBER
    for i in (1, 2, 3)
}
# stcheck errs, though the loader resolves tier globals only.  (name: why)
KNOWN_FALSE_ALARMS: dict[str, str] = {}
# The loader raises after resolving tier globals only (stcheck gives no
# error): what it resolved before is all the oracle can vouch for.  (name: why)
_PY2_JOBLIB = (
    "a joblib pickle written by Python 2: under Python 3 joblib.load raises ValueError 'You may be "
    "trying to read with python 3 a joblib pickle generated with python 2' at its first Python 2 str "
    "(joblib's own test_numpy_pickle expects it), after tier globals only"
)
LOADER_RAISES: dict[str, str] = {
    f"joblib/test/data/{name}": _PY2_JOBLIB
    for name in (
        "joblib_0.8.4_compressed_pickle_py27_np17.gz",
        "joblib_0.9.2_compressed_pickle_py27_np16.gz",
        "joblib_0.9.2_compressed_pickle_py27_np17.gz",
        "joblib_0.9.2_pickle_py27_np16.pkl",
        "joblib_0.9.2_pickle_py27_np17.pkl",
        "joblib_0.10.0_compressed_pickle_py27_np16.gz",
        "joblib_0.10.0_compressed_pickle_py27_np17.gz",
        "joblib_0.10.0_pickle_py27_np17.pkl",
        "joblib_0.10.0_pickle_py27_np17.pkl.bz2",
        "joblib_0.10.0_pickle_py27_np17.pkl.gzip",
        "joblib_0.10.0_pickle_py27_np17.pkl.lzma",
        "joblib_0.10.0_pickle_py27_np17.pkl.xz",
    )
}

TIERS = frozenset(f"{module}.{name}" for module, name in (*ALLOWED, *DATA_TIER))


def _wanted(name: str) -> bool:
    low = name.lower()
    for suffix in _COMPRESSED:
        if low.endswith(suffix):
            low = low[: -len(suffix)]
            break
    return low.endswith(_SUFFIXES) or name.lower() != low


def _root(package: str) -> Path | None:
    try:
        module = importlib.import_module(package)
    except ImportError:
        return None
    return Path(module.__file__ or "").parent


@functools.cache
def published() -> dict[str, Path]:
    """``{package/relative path: path}`` of every pickle-bearing file of the installed wheels."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        root = _root(package)
        if root is None:
            continue
        for path in sorted(root.rglob("*")):
            if path.is_file() and _wanted(path.name) and "__pycache__" not in path.parts:
                found[f"{package}/{path.relative_to(root).as_posix()}"] = path
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_package_ships_files(package: str) -> None:
    if _root(package) is None:
        pytest.skip(f"{package} is not installed in this environment: its test data cannot be judged")
    assert any(name.startswith(f"{package}/") for name in published()), package


def _classify(path: Path) -> Other:
    return classify(str(path), [sibling.name for sibling in path.parent.iterdir()])


def verdict(path: Path) -> tuple[str, list[str]]:
    """("error"/"warning"/"clean", the finding codes) of classify for ``path`` in its folder."""
    other = _classify(path)
    codes = [f.code for f in other.findings]
    if any(f.severity is Severity.ERROR for f in other.findings):
        return "error", codes
    return ("warning" if codes else "clean"), codes


def test_tables_name_shipped_files() -> None:
    names = published()
    for table in (UNREADABLE, KNOWN_FALSE_ALARMS, LOADER_RAISES):
        for name, why in table.items():
            assert why
            package = name.split("/", 1)[0]
            if _root(package) is not None:
                assert name in names, name


def test_errors_are_listed_or_name_a_call() -> None:
    # Without the loaders: every error is ST701, and names a global outside
    # the tiers unless the file is listed (unreadable or a known false alarm).
    for name, path in published().items():
        other = _classify(path)
        errors = [f for f in other.findings if f.severity is Severity.ERROR]
        assert {f.code for f in errors} <= {"ST701"}, (name, errors)
        if not errors or name in UNREADABLE or name in KNOWN_FALSE_ALARMS:
            continue
        refused = [i["global"] for i in (other.pickle or {}).get("imports", []) if not i["allowed"]]
        assert refused, (name, other.pickle)


# -- the oracle ---------------------------------------------------------------------
# One child imports the loaders once and forks per file.  Each fork installs
# an audit hook and loads its file; every global pickle.find_class is asked
# for is written to a pipe, and at the first one outside the tiers the fork
# ends with os._exit(3): the name was read, its module not imported, nothing
# called.  Exit 0: loaded; 1: the loader raised (its message follows).  A
# protocol 0-2 stream's Python 2 names are checked as pickle resolves them
# (fix_imports); the audit event carries the raw name.
_CHILD = textwrap.dedent(
    """
    import _compat_pickle, gzip, json, os, pickle, sys
    import numpy
    try:
        import joblib  # once, before the forks
    except ImportError:
        pass

    def load(loader, path):
        if loader == "joblib":
            joblib.load(path)
        elif loader == "numpy":
            # numpy's own tests read the py2 files with encoding='latin1'
            loaded = numpy.load(path, allow_pickle=True, encoding="latin1")
            if isinstance(loaded, numpy.lib.npyio.NpzFile):
                [loaded[key] for key in loaded.files]  # a member is unpickled when it is read
        elif loader == "gzip-pickle":
            with gzip.open(path, "rb") as f:  # numpy.random's tests
                pickle.load(f)
        else:
            with open(path, "rb") as f:  # numpy's test_regression.test_astype_copy
                pickle.load(f, encoding="latin1")

    def resolved(module, name):
        if (module, name) in _compat_pickle.NAME_MAPPING:
            return _compat_pickle.NAME_MAPPING[module, name]
        return _compat_pickle.IMPORT_MAPPING.get(module, module), name

    def run(loader, path, tiers, out):
        def hook(event, args):
            if event == "pickle.find_class":
                module, name = resolved(*args[:2])
                os.write(out, f"{module}.{name}\\n".encode())
                if f"{module}.{name}" not in tiers:
                    os._exit(3)

        sys.addaudithook(hook)
        try:
            load(loader, path)
        except BaseException as exc:
            os.write(out, f"!{type(exc).__name__}: {str(exc)[:200]}".replace("\\n", " ").encode())
            os._exit(1)
        os._exit(0)

    jobs, tiers = json.load(sys.stdin)
    tiers = frozenset(tiers)
    results = {}
    for name, loader, path in jobs:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            run(loader, path, tiers, write)
        os.close(write)
        with os.fdopen(read, "rb") as r:
            lines = r.read().decode(errors="replace").splitlines()
        _, status = os.waitpid(pid, 0)
        raised = [line[1:] for line in lines if line.startswith("!")]
        results[name] = [os.waitstatus_to_exitcode(status), [g for g in lines if not g.startswith("!")], raised]
    print(json.dumps(results))
    """
)


def loader(name: str) -> str:
    """The loader the file's publisher reads it with."""
    low = name.lower()
    if low.endswith((".npy", ".npz")):
        return "numpy"
    if name.startswith("joblib/"):
        return "joblib"
    if low.endswith(".gz"):
        return "gzip-pickle"
    return "pickle"


@functools.cache
def oracle() -> dict[str, tuple[int, list[str], list[str]]]:
    """``{name: (exit status, globals resolved, the exception raised)}``."""
    jobs = [(name, loader(name), str(path)) for name, path in published().items()]
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=json.dumps([jobs, sorted(TIERS)]),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    found = json.loads(proc.stdout.splitlines()[-1])
    return {name: (code, list(globals_), list(raised)) for name, (code, globals_, raised) in found.items()}


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="the oracle forks one process per file")
@pytest.mark.parametrize("name", sorted(published()))
def test_stcheck_agrees_with_the_loader(name: str) -> None:
    level, codes = verdict(published()[name])
    code, resolved, raised = oracle()[name]
    outside = [g for g in resolved if g not in TIERS]
    assert code in {0, 1, 3}, (name, code, raised)
    if level == "error":
        if name in UNREADABLE:
            assert (code, resolved) == (1, []), f"{name}: listed unreadable, but {loader(name)} gave {code} {resolved}"
        elif name in KNOWN_FALSE_ALARMS:
            assert not outside, f"{name}: listed a false alarm, but {loader(name)} calls {outside}"
        else:
            assert code == 3, f"{name}: {codes}, but {loader(name)} resolved tier globals only: {resolved} {raised}"
            print(f"{name}: {codes}; {loader(name)} reaches {outside[0]}")
    else:
        assert code != 3, f"{name}: false clean {codes}: {loader(name)} calls {outside}"
        assert not outside, f"{name}: false clean {codes}: {loader(name)} calls {outside}"
        assert name not in UNREADABLE, f"{name} no longer errs: update UNREADABLE"
        assert name not in KNOWN_FALSE_ALARMS, f"{name} no longer errs: update KNOWN_FALSE_ALARMS"
        assert (code == 1) == (name in LOADER_RAISES), f"{name}: {loader(name)} exit {code} {raised}"
