"""Run safetensors' own Python tests, unmodified, against validator.compat.

Usage: python tests/upstream_compat.py PATH [--reference] [--files a.py,b.py]

PATH is a checkout's ``bindings/python/tests`` directory.  The test files are
copied into a temporary directory (upstream code is never part of this
repository), next to a package named ``safetensors`` that maps
``safetensors``, ``safetensors.numpy``, ``safetensors.torch`` (and flax, mlx,
paddle) onto ``validator.compat``; pytest runs there in a child process with
that package first on ``sys.path``.  ``--reference`` also runs the same files
against the installed safetensors, for the baseline.  Prints the pass count
and every test that did not pass, with the reason where the difference is
deliberate.  Exit status 0 when every failure is a listed deliberate one.

Not collected by pytest, and CI does not depend on it: the upstream source
is not available there.
"""

# Strategy: one child pytest per run, results read back from its JUnit XML.
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = (
    "test_simple.py",
    "test_pt_comparison.py",
    "test_pt_model.py",
    "test_handle.py",
    "test_threadable.py",
    "test_multithreaded.py",
    "test_pread_backend.py",
)
# Tests that fail on purpose: test id -> why stcheck differs.
DELIBERATE: dict[str, str] = {}

SHIM_INIT = '''"""Test shim: safetensors -> validator.compat (made by tests/upstream_compat.py)."""
from validator.compat import *  # noqa: F403
from validator.compat import SafetensorError, TensorSpec, __version__, _safe_open_handle  # noqa: F401
'''
SHIM_MODULE = '''"""Test shim: safetensors.{name} -> validator.compat.{name}."""
import sys

import validator.compat.{name} as _target

sys.modules[__name__] = _target
'''


def make_shim(where: Path) -> Path:
    """Write the ``safetensors`` package that maps onto validator.compat."""
    package = where / "shim" / "safetensors"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(SHIM_INIT)
    for name in ("numpy", "torch", "flax", "mlx", "paddle"):
        (package / f"{name}.py").write_text(SHIM_MODULE.format(name=name))
    return package.parent


def run(tests: Path, files: list[str], *, shim: bool) -> dict[str, tuple[str, str]]:
    """Run the files; return test id -> (outcome, message)."""
    with tempfile.TemporaryDirectory(prefix="stcheck-upstream-") as tmp:
        work = Path(tmp)
        (work / "tests" / "data").mkdir(parents=True)
        for name in files:
            shutil.copy(tests / name, work / "tests" / name)
        if (tests / "data" / "__init__.py").exists():
            shutil.copy(tests / "data" / "__init__.py", work / "tests" / "data" / "__init__.py")
        paths = [str(ROOT)]
        if shim:
            paths.insert(0, str(make_shim(work)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")]))
        report = work / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"]
        done = subprocess.run([*command, *(f"tests/{name}" for name in files)], cwd=work, env=env, check=False)
        if not report.exists():  # the interpreter died (a crash in native code)
            return {f"<{', '.join(files)}>": ("crashed", f"pytest exited with status {done.returncode}")}
        return _outcomes(report)


def _outcomes(report: Path) -> dict[str, tuple[str, str]]:
    out = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        test_id = f"{case.get('classname')}::{case.get('name')}".removeprefix("tests.")
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                message = (child.get("message") or "").splitlines()[0][:160] if child.get("message") else ""
        out[test_id] = (outcome, message)
    return out


def summary(label: str, results: dict[str, tuple[str, str]]) -> tuple[int, int]:
    passed = sum(1 for outcome, _ in results.values() if outcome == "passed")
    ran = sum(1 for outcome, _ in results.values() if outcome != "skipped")
    print(f"{label}: {passed} of {ran} passed ({len(results) - ran} skipped: accelerators, S3)")
    return passed, ran


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tests", type=Path, help="safetensors' bindings/python/tests directory")
    parser.add_argument("--reference", action="store_true", help="also run against the installed safetensors")
    parser.add_argument("--files", default=",".join(FILES), help="comma-separated test files")
    args = parser.parse_args(argv)
    files = [f for f in args.files.split(",") if f]
    missing = [f for f in files if not (args.tests / f).is_file()]
    if missing:
        print(f"upstream_compat: not found in {args.tests}: {', '.join(missing)}", file=sys.stderr)
        return 2
    if args.reference:
        summary("safetensors 0.8.0", run(args.tests, files, shim=False))
    results = run(args.tests, files, shim=True)
    summary("validator.compat", results)
    unexpected = 0
    for test_id, (outcome, message) in sorted(results.items()):
        if outcome in ("failed", "error", "crashed"):
            reason = DELIBERATE.get(test_id)
            unexpected += reason is None
            print(f"  {outcome.upper()} {test_id}: {reason or message}")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
