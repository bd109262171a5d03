# Strategy: the one walker of the user's folders.  `check`, `scan`,
# `inspect`, the hub-cache scan and the Python scan API all turn a directory
# into the files to judge here, under one rule:
#
# - every entry is looked at with lstat; a symlink is followed, to a file or
#   to a folder alike (the hub library and every loader open a file through
#   such a link), and each real folder (device and inode) is walked once: a
#   link back to an ancestor, a cycle of links, or a second link to a folder
#   already walked is cut, with a link-loop finding on the link;
# - a link whose target lies outside the root (the folder given, or a hub
#   cache repository folder) is a link-leaves-root finding on the link; what
#   it points to is still judged, marked `outside`, since a loader reads it;
# - a regular file is a safetensors file (`*.safetensors`), an index (the
#   caller's `is_index`, io.index.is_index_name) or another file, judged by
#   validator.sources.kinds;
# - a broken link, a FIFO, a socket or a device is never opened: it is listed
#   as unreadable, by its kind; a folder that cannot be listed likewise;
# - version control: the `.git` folder at the top of the folder given is
#   skipped, as the OpenSSF model-signing library skips it (its
#   ignore_git_paths); every other version-control folder (.hg, .svn, a
#   nested sub/.git) is walked and judged like anything else, since those
#   are the files that make other tools run commands, and the signature
#   check compares exactly what this walk finds.
#
# The walk uses an explicit stack (no recursion limit on deep trees) and
# returns its entries sorted by path, the order every report uses.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH110, PTH115, PTH116, PTH120
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from validator._check import make_finding
from validator._errors import SourceError
from validator.io.names import SUFFIX, hub_repo_folder
from validator.sources.kinds import Other, classify

if TYPE_CHECKING:
    from collections.abc import Callable

    from validator._findings import Finding

__all__ = ["TOP_SKIPPED", "Found", "FoundKind", "Tree", "judge_others", "link_root", "walk"]

# A safetensors file, an index, another file (judged by kinds), or an entry
# that is never opened (a broken link, a FIFO, a socket, a device).
FoundKind: TypeAlias = Literal["safetensors", "index", "other", "unreadable"]
TOP_SKIPPED: Final = ".git"  # only directly below the folder given
_SPECIAL: Final = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


@dataclass(frozen=True)
class Found:
    """One entry of a walk that is not a folder."""

    path: str  # as reached from the top: the top joined with names, links not resolved
    real: str  # the path with every link resolved
    kind: FoundKind
    outside: bool = False  # reached through a link that leaves the root
    reason: str = ""  # for "unreadable": why


@dataclass
class Tree:
    """What a walk found below one folder."""

    top: str
    root: str
    found: list[Found] = field(default_factory=list)
    links: list[tuple[str, Finding]] = field(default_factory=list)  # (link path, link finding)
    names: dict[str, frozenset[str]] = field(default_factory=dict)  # folder as reached -> its entries' names
    skipped: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # folders that could not be listed

    def of_kind(self, kind: FoundKind) -> list[str]:
        """The paths of the entries of one kind, in order."""
        return [f.path for f in self.found if f.kind == kind]

    def unreadable(self) -> list[str]:
        """One message per entry that is never opened, and per folder that could not be listed."""
        return [*self.errors, *(f"{f.path}: {f.reason}" for f in self.found if f.kind == "unreadable")]


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # different drives
        return False


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def _special(mode: int) -> str:
    for test, what in _SPECIAL:
        if test(mode):
            return what
    return "not a regular file"


def link_root(top: str) -> str:
    """Where links below ``top`` may point: ``top`` itself, or, when ``top``
    lies in a Hugging Face hub cache snapshot
    (``<cache>/models--org--name/snapshots/<revision>/...``), that repository
    folder, whose snapshot files are links into its ``blobs/`` by design."""
    return hub_repo_folder(os.path.realpath(top)) or top


def _strip_separators(path: str) -> str:
    """``path`` without trailing separators (the root ``/`` stays itself)."""
    stripped = path.rstrip(os.sep + (os.altsep or ""))
    return stripped or path[:1]


def _entry_kind(name: str, is_index: Callable[[str], bool]) -> FoundKind:
    if name.endswith(SUFFIX):
        return "safetensors"
    return "index" if is_index(name) else "other"


_Key = tuple[int, int]  # a folder's (device, inode)


class _Walk:
    """One walk: the folders still to list, and each real folder's first path."""

    def __init__(self, tree: Tree, is_index: Callable[[str], bool]) -> None:
        self.tree = tree
        self.is_index = is_index
        self.real_root = os.path.realpath(tree.root)
        self.first: dict[_Key, str] = {}
        # (folder as reached, its ancestors' identities, reached through a link that left the root)
        self.stack: list[tuple[str, tuple[_Key, ...], bool]] = []

    def run(self) -> None:
        top = self.tree.top
        try:
            st = os.stat(top)
        except OSError as exc:
            self.tree.errors.append(f"{top}: {exc.strerror or exc}")
            return
        key = (st.st_dev, st.st_ino)
        self.first[key] = top
        self.stack.append((top, (key,), False))
        while self.stack:
            folder, ancestors, outside = self.stack.pop()
            try:
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as exc:
                self.tree.errors.append(f"{folder}: {exc.strerror or exc}")
                continue
            self.tree.names[folder] = frozenset(e.name for e in entries)
            for entry in entries:
                self._entry(entry, entry.path, ancestors, outside=outside)

    def _entry(self, entry: os.DirEntry[str], path: str, ancestors: tuple[_Key, ...], *, outside: bool) -> None:
        # The directory entry's type (d_type) answers for plain files and
        # folders without a stat call; links and special files are stat'ed.
        try:
            if not entry.is_symlink():
                if entry.is_file(follow_symlinks=False):
                    self.tree.found.append(Found(path, path, _entry_kind(entry.name, self.is_index), outside))
                    return
                target = entry.stat(follow_symlinks=False)
                linked = False
                real = path
            else:
                followed = self._follow(path, outside=outside)
                if followed is None:
                    return
                target, real, outside = followed
                linked = True
        except OSError as exc:
            self.tree.found.append(Found(path, path, "unreadable", outside, exc.strerror or str(exc)))
            return
        if stat.S_ISDIR(target.st_mode):
            self._folder(entry.name, path, (target.st_dev, target.st_ino), ancestors, outside=outside, linked=linked)
        elif stat.S_ISREG(target.st_mode):
            self.tree.found.append(Found(path, real, _entry_kind(entry.name, self.is_index), outside))
        else:
            why = f"not a regular file ({_special(target.st_mode)})"
            self.tree.found.append(Found(path, real, "unreadable", outside, why))

    def _follow(self, path: str, *, outside: bool) -> tuple[os.stat_result, str, bool] | None:
        """(the target's stat, its real path, outside the root) of a link; None when broken."""
        try:
            target = os.stat(path)
        except OSError as exc:
            why = "a broken symlink" if not os.path.exists(path) else (exc.strerror or str(exc))
            reason = f"{why} (to {_readlink(path)!r})"
            self.tree.found.append(Found(path, os.path.realpath(path), "unreadable", outside, reason))
            return None
        real = os.path.realpath(path)
        if not outside and not _inside(real, self.real_root):
            message = (
                f"resolves through a symlink to {real!r}, outside {self.tree.root!r}: what it points to is "
                "still checked, but it is not part of what was given"
            )
            self.tree.links.append((path, make_finding("link-leaves-root", message)))
            outside = True
        return target, real, outside

    def _folder(
        self, name: str, path: str, key: _Key, ancestors: tuple[_Key, ...], *, outside: bool, linked: bool
    ) -> None:
        if name == TOP_SKIPPED and len(ancestors) == 1:  # a child of the folder given
            self.tree.skipped.append(path)
            return
        if key not in self.first:
            self.first[key] = path
            self.stack.append((path, (*ancestors, key), outside))
            return
        if not linked:  # a bind mount seen twice: nothing to say about a link
            return
        seen = self.first[key]
        if key in ancestors:
            message = f"links back to {seen!r}, a folder that holds it (a loop): not walked again"
        else:
            message = f"links to a folder already walked as {seen!r}: its files are reported there"
        self.tree.links.append((path, make_finding("link-loop", message)))


def walk(top: str, *, is_index: Callable[[str], bool], root: str | None = None) -> Tree:
    """Walk the folder ``top``; ``root`` (default: link_root(top)) is where links may point."""
    # `classic/` (as tab completion types it) names the folder `classic`:
    # every path the walk reports, and every key of `names`, starts the same.
    top = _strip_separators(top)
    tree = Tree(top, _strip_separators(root) if root else link_root(top))
    _Walk(tree, is_index).run()
    tree.found.sort(key=lambda f: f.path)
    tree.links.sort(key=lambda pair: pair[0])
    return tree


def judge_others(tree: Tree, errors: list[str]) -> list[Other]:
    """The kind and findings of every other file of a walk; files that
    cannot be opened go to ``errors``."""
    judged = []
    for found in tree.found:
        if found.kind != "other":
            continue
        siblings = tree.names.get(os.path.dirname(found.path), frozenset())
        try:
            judged.append(classify(found.path, siblings))
        except SourceError as exc:
            errors.append(str(exc))
    return judged
