# Strategy: the one place that says how a fuzzing child process finds
# stcheck.  Every engine (atheris, the persistent protocol, AFL++'s Python
# mutator) and the CLI's import probe start Python children that must import
# `validator`, and the user's loader beside it.  The folder that goes on
# PYTHONPATH is the one that *holds* the package, never the package itself:
# with `validator/` on the path, `validator/fuzz` would be importable as
# `fuzz` (hiding a checkout's own fuzz/ folder) and `validator/_json.py` as
# `_json` (Python's JSON accelerator, so `import json` breaks in the user's
# loader).
# ruff: noqa: PTH100, PTH120
# Paths: os.path, like the rest of the package.
from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["child_env", "package_root"]

_PACKAGE: str = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../validator


def package_root() -> str:
    """The folder that holds the ``validator`` package (a checkout's root, or site-packages)."""
    return os.path.dirname(_PACKAGE)


def child_env(extra: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with ``extra``, and stcheck first on PYTHONPATH.

    Entries of an inherited PYTHONPATH that name the package folder itself are
    dropped, for the reason at the top of this module.
    """
    env = dict(os.environ if base is None else base)
    env.update(extra or {})
    root = package_root()
    own = {os.path.realpath(root), os.path.realpath(_PACKAGE)}
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.realpath(p) not in own]
    env["PYTHONPATH"] = os.pathsep.join([root, *kept])
    return env
