# Strategy: the command line's and the pipeline's name for the install hint
# of an optional extra.  The hint itself is written once, in
# validator.io._extras, where the library's entry points (below config) reach
# it too; this module says which checkout the running stcheck is.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH100, PTH120
from __future__ import annotations

import os

from validator.io._extras import hint_for

__all__ = ["install_hint"]

_PACKAGE_PARENT = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)  # above validator/config/


def install_hint(extra: str) -> str:
    """A `pip install` command, working as written, that installs ``extra``."""
    return hint_for(extra, _PACKAGE_PARENT)
