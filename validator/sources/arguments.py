# Strategy: the one grammar of what a command-line argument is, before any
# folder is walked: standard input, a remote source (with the scheme whose
# row says what it can do), a folder, a regular file, something else that
# exists (a device, a FIFO, a dangling link), or nothing at all.  One lstat
# (and stat) per argument.  validator.sources.targets.resolve expands each
# argument into its targets by this grammar, and the signatures stage
# (validator.pipeline.signatures), which needs the argument itself (a
# folder's DIR/model.sig, not the files found in it), reads the same values:
# the arguments are classified in one place.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH112, PTH113
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from validator.sources.schemes import STDIN, Scheme, scheme_of

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Absent", "Argument", "File", "Folder", "NotSignable", "Remote", "Stdin", "arguments"]


@dataclass(frozen=True, slots=True)
class Folder:
    """A local folder: its signature is DIR/model.sig (or --signature)."""

    path: str


@dataclass(frozen=True, slots=True)
class File:
    """A local regular file: a single-file model, signed with --signature."""

    path: str


@dataclass(frozen=True, slots=True)
class Stdin:
    """Standard input: it carries no model signature."""

    path: str = STDIN


@dataclass(frozen=True, slots=True)
class Remote:
    """A remote source, and the scheme that says whether it can be signed."""

    path: str
    scheme: Scheme


@dataclass(frozen=True, slots=True)
class NotSignable:
    """A local path that is neither a folder nor a regular file (a device, a FIFO)."""

    path: str


@dataclass(frozen=True, slots=True)
class Absent:
    """A path that does not exist: the scan's own error."""

    path: str


Argument = Folder | File | Stdin | Remote | NotSignable | Absent


def arguments(paths: Sequence[str]) -> list[Argument]:
    """Each argument, by the one grammar."""
    out: list[Argument] = []
    for path in paths:
        scheme = scheme_of(path)
        if path == STDIN:
            out.append(Stdin())
        elif scheme is not None:
            out.append(Remote(path, scheme))
        elif os.path.isdir(path):
            out.append(Folder(path))
        elif os.path.isfile(path):
            out.append(File(path))
        elif os.path.lexists(path):
            out.append(NotSignable(path))
        else:
            out.append(Absent(path))
    return out
