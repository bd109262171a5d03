"""One list of the modules atheris leaves uninstrumented, used by every way the engine starts."""

from __future__ import annotations

from pathlib import Path

from validator.fuzz import inprocess
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
