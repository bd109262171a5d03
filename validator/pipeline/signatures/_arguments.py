# Strategy: what the signatures stage needs to know of each argument: a
# folder (its DIR/model.sig), a regular file (a single-file model, signed
# with --signature), standard input or a remote source (which its scheme's
# row says can be signed or not), something else, or nothing at all.  The
# stage reads these values and never the file system.  ``arguments`` is
# the adapter from the arguments as given, one lstat each, with the same
# order of tests as validator.sources.targets.resolve; once resolve gives
# one typed target per argument, they are mapped onto these classes instead.
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
    """Each argument, as the stage reads it."""
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
