"""House rules that hold for every module of the package (DEVELOPERS.md, house style):
each module declares ``__all__``, none is over 600 lines, and no comment names a
module that does not exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "validator"
MODULES = sorted(PACKAGE.rglob("*.py"))
MOST_LINES = 600

# A path to a Python file inside a comment ("see scan/oms.py"), or a dotted
# validator.* name.  Paths of other projects (torch/serialization.py) are
# named with their project first and are skipped by THIRD_PARTY.
_PATH = re.compile(r"\b((?:[a-z_]+/)+[a-z_]+\.py)\b")
_DOTTED = re.compile(r"\bvalidator(?:\.[a-z_]+)+\b")
THIRD_PARTY = ("torch/", "numpy/", "joblib/", "safetensors/", "model_signing/", "huggingface_hub/", "src/")


def _module_names() -> set[str]:
    names = set()
    for path in MODULES:
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.add(".".join(parts))
    return names


def _comments(path: Path) -> list[tuple[int, str]]:
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if "#" in line:
            out.append((number, line[line.index("#") :]))
    return out


def _exists(named: str) -> bool:
    if named.startswith(THIRD_PARTY):
        return True
    return any((base / named).exists() for base in (ROOT, PACKAGE, ROOT / "fuzz", ROOT / "tests"))


def _top_level_names(module: str) -> set[str]:
    base = ROOT.joinpath(*module.split("."))
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets) and isinstance(
                node.value, ast.List
            ):
                names.update(
                    e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
                )
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _names_something(dotted: str, modules: set[str]) -> bool:
    """``validator.a.b.c`` names a module, or a name a module defines or imports."""
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        module = ".".join(parts[:k])
        if module in modules:
            return k == len(parts) or parts[k] in _top_level_names(module)
    return False


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_declares_all(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    declared = [
        node
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        and any(
            isinstance(t, ast.Name) and t.id == "__all__"
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
    ]
    assert declared, f"{path.relative_to(ROOT)} has no __all__"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_is_small(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MOST_LINES, f"{path.relative_to(ROOT)} has {lines} lines (at most {MOST_LINES})"


def test_no_comment_names_a_missing_module() -> None:
    modules = _module_names()
    missing = [
        f"{path.relative_to(ROOT)}:{number}: {named}"
        for path in MODULES
        for number, comment in _comments(path)
        for named in [
            *(m.group(1) for m in _PATH.finditer(comment) if not _exists(m.group(1))),
            *(m.group(0) for m in _DOTTED.finditer(comment) if not _names_something(m.group(0), modules)),
        ]
    ]
    assert not missing, "comments name modules that do not exist:\n" + "\n".join(missing)
