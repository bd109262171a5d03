# Strategy: the one grammar of what an argument names, for every command
# (check, inspect, scan, download's vetting, signatures) and for the library
# call.  An argument is `-` (standard input), a remote source (a scheme of
# validator.sources.schemes), a folder, a sharded checkpoint's index, or a
# file.  A folder is walked once (validator.sources.walk): its links that
# leave it, its indexes, the *.safetensors files no index names, then every
# other file with its verdict by kind (validator.sources.kinds).  Nothing
# here reads a tensor or opens a network connection: `resolve` names the
# targets; the pipeline (validator.pipeline) reads them.
# Each kind of target is a type of its own, numbered by its place in the
# run (`ordinal`): the pipeline matches on the type, and sorts the results
# by the ordinal.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH118, PTH120
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial
from itertools import chain
from typing import TYPE_CHECKING, TypeAlias

from validator._check import Checker
from validator._errors import SourceError
from validator.sources import arguments as _args
from validator.sources.arguments import arguments
from validator.sources.schemes import STDIN_NAME

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from validator._findings import Finding
    from validator.sources.kinds import Other

    _Unnumbered = Callable[[int], "Target"]  # a target waiting for its ordinal

__all__ = ["HubCache", "Index", "Link", "LocalFile", "OtherFile", "Remote", "Stdin", "Target", "is_index", "resolve"]


def is_index(name: str) -> bool:
    # Only names ending in .json can be indexes; the index module (and its
    # imports) loads only for those, so `stcheck check FILE` stays light.
    if not name.endswith(".json"):
        return False
    from validator.io.index import is_index_name  # noqa: PLC0415 - see above

    return is_index_name(name)


@dataclass(frozen=True, slots=True)
class LocalFile:
    """A local safetensors file (or a file named on its own that is no
    pickle): validated, from its header (check) or in full (scan)."""

    ordinal: int
    path: str
    via: Finding | None = None  # the walk's finding on the link it was reached through


@dataclass(frozen=True, slots=True)
class Index:
    """A sharded checkpoint's index: its own checks, then each shard it names."""

    ordinal: int
    path: str
    via: Finding | None = None


@dataclass(frozen=True, slots=True)
class OtherFile:
    """A file of a folder that is no safetensors file or index, with its
    verdict by kind (validator.sources.kinds)."""

    ordinal: int
    other: Other
    via: Finding | None = None

    @property
    def path(self) -> str:
        """Where the file is, as the walk reached it."""
        return self.other.path


@dataclass(frozen=True, slots=True)
class Link:
    """A link the walk flagged that names no file read on its own (a loop,
    a folder reached twice, a link to a folder outside the root)."""

    ordinal: int
    path: str
    finding: Finding


@dataclass(frozen=True, slots=True)
class Stdin:
    """Standard input (``-``), read once, from its header."""

    ordinal: int

    @property
    def path(self) -> str:
        """How standard input is named in reports."""
        return STDIN_NAME


@dataclass(frozen=True, slots=True)
class Remote:
    """A source of a registered scheme (validator.sources.schemes)."""

    ordinal: int
    source: str


@dataclass(frozen=True, slots=True)
class HubCache:
    """A Hugging Face hub cache, or one ``models--org--name`` folder of it."""

    ordinal: int
    cache: str


# One type per kind: a `match` over them is checked for exhaustiveness.
Target: TypeAlias = LocalFile | Index | OtherFile | Link | Stdin | Remote | HubCache


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


def _folder_targets(path: str, errors: list[str], *, empty_is_error: bool) -> Iterator[_Unnumbered]:
    """A directory's targets (validator.sources.walk): link findings, its indexes,
    the *.safetensors files no index names, then every other file.  A link's
    finding goes on the target of the file it names: one path, one entry."""
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
    links = dict(tree.links)
    # A file reached through a flagged link carries the link's finding.
    own = {*indexes, *(f for f in files if os.path.normpath(f) not in named), *(o.path for o in others)}
    for link, finding in tree.links:
        # A shard link that leaves the folder is the index's ST502 already.
        if os.path.normpath(link) not in named and link not in own:
            yield partial(Link, path=link, finding=finding)
    for index in indexes:
        yield partial(Index, path=index, via=links.get(index))
    for file in files:
        if os.path.normpath(file) not in named:
            yield partial(LocalFile, path=file, via=links.get(file))
    for other in others:
        yield partial(OtherFile, other=other, via=links.get(other.path))


def _lone(path: str) -> _Unnumbered:
    # A file a loader would unpickle is judged as it is in a folder, so the
    # same bytes give the same findings however they are named on the command line.
    from validator.sources.kinds import lone_file  # noqa: PLC0415 - only for a file not named *.safetensors

    other = None if path.lower().endswith(".safetensors") else lone_file(path)
    return partial(LocalFile, path=path) if other is None else partial(OtherFile, other=other)


def _unnumbered(paths: Sequence[str], errors: list[str], *, empty_is_error: bool) -> Iterator[_Unnumbered]:
    for given in arguments(paths):
        match given:
            case _args.Stdin():
                yield Stdin
            case _args.Remote(path):
                yield partial(Remote, source=path)
            case _args.Folder(path):
                yield from _folder_targets(path, errors, empty_is_error=empty_is_error)
            case _args.File(path) | _args.NotSignable(path):
                yield partial(Index, path=path) if is_index(path) else _lone(path)
            case _args.Absent(path):
                errors.append(f"{path}: no such file or directory")


def resolve(
    paths: Sequence[str], errors: list[str], *, empty_is_error: bool = True, hf_cache: str | None = None
) -> Iterator[Target]:
    """The targets that arguments name, numbered in order (a hub cache
    first); unreadable ones go to ``errors``, and so does a directory with
    nothing to check unless ``empty_is_error`` is false."""
    first: list[_Unnumbered] = [] if hf_cache is None else [partial(HubCache, cache=hf_cache)]
    for ordinal, make in enumerate(chain(first, _unnumbered(paths, errors, empty_is_error=empty_is_error))):
        yield make(ordinal)
