# Strategy: the one grammar of what an argument names, for every command
# (check, inspect, scan, download's vetting, signatures) and for the library
# call.  An argument is `-` (standard input), a remote source (a scheme of
# validator.sources.schemes), a folder, a sharded checkpoint's index, or a
# file.  A folder is walked once (validator.sources.walk): its links that
# leave it, its indexes, the *.safetensors files no index names, then every
# other file with its verdict by kind (validator.sources.kinds).  Nothing
# here reads a tensor or opens a network connection: `resolve` names the
# targets; the pipeline (validator.pipeline) reads them.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH112, PTH118, PTH120
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from validator._check import Checker
from validator._errors import SourceError
from validator.sources.schemes import STDIN, STDIN_NAME, is_remote

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from validator._findings import Finding
    from validator.sources.kinds import Other

__all__ = ["Target", "is_index", "resolve"]


def is_index(name: str) -> bool:
    # Only names ending in .json can be indexes; the index module (and its
    # imports) loads only for those, so `stcheck check FILE` stays light.
    if not name.endswith(".json"):
        return False
    from validator.io.index import is_index_name  # noqa: PLC0415 - see above

    return is_index_name(name)


@dataclass(frozen=True)
class Target:
    """One thing to check: a lone file, an index, a remote source, another
    file of a folder (judged by validator.sources.kinds) or a link finding."""

    kind: str  # "file", "index", "remote", "stdin", "other" or "link"
    path: str
    other: Other | None = None  # for "other"
    finding: Finding | None = None  # for "link"


def _named_shards(index: str) -> set[str]:
    """The shard paths an index names, normalised (empty when unreadable)."""
    from validator.io.index import parse_index, read_index  # noqa: PLC0415 - only for indexes

    try:
        raw, size = read_index(index)
    except SourceError:
        return set()
    parsed = parse_index(raw, size, Checker())
    if parsed is None:
        return set()
    base = os.path.dirname(index)
    return {os.path.normpath(os.path.join(base, shard)) for shard in parsed.first_name}


def _folder_targets(path: str, errors: list[str], *, empty_is_error: bool) -> Iterator[Target]:
    """A directory's targets (validator.sources.walk): link findings, its indexes,
    the *.safetensors files no index names, then every other file."""
    from validator.io.names import SUFFIX  # noqa: PLC0415 - as walk (which imports it), only for folders
    from validator.sources.kinds import count_kinds, kinds_line  # noqa: PLC0415 - as above
    from validator.sources.walk import judge_others, walk  # noqa: PLC0415 - as above

    tree = walk(path, is_index=is_index)
    errors.extend(tree.unreadable())
    indexes = tree.of_kind("index")
    files = tree.of_kind("safetensors")
    others = judge_others(tree, errors)
    if empty_is_error and not files and not indexes and not tree.links and all(not o.findings for o in others):
        # A check that checked nothing there must not pass.
        line = kinds_line(count_kinds(o.kind for o in others))
        errors.append(f"{path}: no *{SUFFIX} file in this directory or below it" + (f" ({line})" if line else ""))
    named: set[str] = set()
    for index in indexes:
        named |= _named_shards(index)
    for link, finding in tree.links:
        # A shard link that leaves the folder is the index's ST502 already.
        if os.path.normpath(link) not in named:
            yield Target("link", link, finding=finding)
    for index in indexes:
        yield Target("index", index)
    for file in files:
        if os.path.normpath(file) not in named:
            yield Target("file", file)
    for other in others:
        yield Target("other", other.path, other=other)


def _lone(path: str) -> Target:
    # A file a loader would unpickle is judged as it is in a folder, so the
    # same bytes give the same findings however they are named on the command line.
    from validator.sources.kinds import lone_file  # noqa: PLC0415 - only for a file not named *.safetensors

    other = None if path.lower().endswith(".safetensors") else lone_file(path)
    return Target("file", path) if other is None else Target("other", path, other=other)


def resolve(paths: Sequence[str], errors: list[str], *, empty_is_error: bool = True) -> Iterator[Target]:
    """The targets that arguments name, in order; unreadable ones go to ``errors``,
    and so does a directory with nothing to check unless ``empty_is_error`` is false."""
    for path in paths:
        if path == STDIN:
            yield Target("stdin", STDIN_NAME)
        elif is_remote(path):
            yield Target("remote", path)
        elif os.path.isdir(path):
            yield from _folder_targets(path, errors, empty_is_error=empty_is_error)
        elif is_index(path) and os.path.lexists(path):
            yield Target("index", path)
        elif os.path.lexists(path):
            yield _lone(path)
        else:
            errors.append(f"{path}: no such file or directory")
