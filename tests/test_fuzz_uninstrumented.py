"""One list of the modules atheris leaves uninstrumented, used by every way the engine starts."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from validator.fuzz import inprocess
from validator.fuzz._child import child_env
from validator.fuzz._uninstrumented import NOT_INSTRUMENTED, NOT_INSTRUMENTED_FOR_LOADERS

ROOT = Path(__file__).resolve().parent.parent


def test_the_list_is_written_once_and_every_entry_point_uses_it() -> None:
    sources = [*ROOT.glob("validator/**/*.py"), *ROOT.glob("fuzz/*.py")]
    holders = [p.relative_to(ROOT).as_posix() for p in sources if '"validator.fuzz.mutator"' in p.read_text()]
    assert holders == ["validator/fuzz/_uninstrumented.py"]
    entry_points = [p for p in ROOT.glob("fuzz/fuzz_*.py") if 'include=["validator"]' in p.read_text()]
    assert not entry_points, entry_points  # each goes through instrumented_import instead
    uses = [p.name for p in ROOT.glob("fuzz/fuzz_*.py") if "instrumented_import(atheris" in p.read_text()]
    assert len(uses) >= 5, uses
    assert "instrumented_import(atheris" in inprocess.BOOT


def test_the_lists_name_modules_that_exist() -> None:
    for name in (*NOT_INSTRUMENTED, *NOT_INSTRUMENTED_FOR_LOADERS):
        path = ROOT / (name.replace(".", "/") + ".py")
        assert path.is_file() or (ROOT / name.replace(".", "/") / "__init__.py").is_file(), name


def test_the_mutators_family_and_the_runners_triage_are_left_uninstrumented() -> None:
    """Both run on every input (the mutator's big family, the loader runner's causes and minimiser)
    and say nothing about the code under test."""
    assert {"validator.fuzz._big", "validator.fuzz.triage"} <= set(NOT_INSTRUMENTED)
    pytest.importorskip("atheris")
    code = inprocess.BOOT.split("from validator.fuzz import inprocess")[0].replace("sys.argv[1:2]", "['x']")
    done = subprocess.run(
        [sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    instrumented = set(re.findall(r"INFO: Instrumenting (\S+)", done.stderr))
    assert "validator._header" in instrumented  # the oracle is traced ...
    assert not instrumented & {
        "validator.fuzz._big",
        "validator.fuzz.triage",
        "validator.fuzz.mutator",
    }  # ... not these
