# Strategy: the files of an hf:// folder that are not safetensors files or
# indexes, known by the hub's listing alone (nothing of them is read).
# `check` and `scan` of an hf:// folder give each a verdict, as a local
# folder's walk does (validator.sources.walk): a pickle by its name (and a .bin
# file, a pickle when torch.save wrote it) is pickle-file (ST701), a Python
# file custom-code (ST702), the rest are counted by kind.  `download`, which
# fetches only the safetensors files, lists what it leaves behind.
from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

from validator._check import make_finding
from validator._display import escape_line
from validator.io.index import is_index_name
from validator.io.names import SUFFIX
from validator.remote._hub import is_hf, parse_hf
from validator.sources.kinds import Other, count_kinds, kinds_line, listed_kind, pickle_advice, safetensors_copy

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from validator._findings import Finding
    from validator.remote._hub import HubRepo

__all__ = ["listing_lines", "remote_others"]


def _listed(names: Sequence[str], source: str) -> Iterator[tuple[str, str, str | None, tuple[str | None, str]]]:
    """(name, kind, warning or None, (safetensors copy or None, pickle advice))
    of each other file below the folder ``source`` names; nothing for a
    single-file source."""
    if not is_hf(source):
        return
    folder = parse_hf(source).path.strip("/")
    if folder.endswith(SUFFIX) or is_index_name(folder):
        return
    siblings: dict[str, set[str]] = {}
    for name in names:
        siblings.setdefault(posixpath.dirname(name), set()).add(posixpath.basename(name))
    for name in names:
        if (folder and not name.startswith(folder + "/")) or name.endswith(SUFFIX) or is_index_name(name):
            continue
        kind, warning = listed_kind(name)
        here = siblings[posixpath.dirname(name)]
        copy = safetensors_copy(name, here) if warning is not None and kind != "Python" else None
        yield name, kind, warning, (copy, pickle_advice(name, here))


def remote_others(source: str, repo: HubRepo) -> list[Other]:
    """A verdict on each other file of an hf:// folder, from the listing."""
    found = []
    for name, kind, warning, (_copy, advice) in _listed(sorted(repo.entries), source):
        findings: tuple[Finding, ...] = ()
        if kind == "Python" and warning is not None:
            findings = (make_finding("custom-code", warning),)
        elif warning is not None:
            # Judged by name: nothing of the file is fetched, so what it would run is not known.
            findings = (make_finding("pickle-file", f"{warning} (judged by name: its content was not read){advice}"),)
        size = repo.entries[name].size
        found.append(Other(repo.display(name), kind, size or 0, findings))
    return found


def listing_lines(names: Sequence[str], source: str) -> list[str]:
    """What `stcheck download` of a repository or folder leaves behind, from
    the hub's listing (``names``): a line for each pickle and Python file and
    a count per kind of the rest; nothing for a single-file source."""
    lines = []
    kinds = []
    for name, kind, warning, (copy, _advice) in _listed(names, source):
        kinds.append(kind)
        if warning is None:
            continue
        note = f"; {copy} is a safetensors copy" if copy is not None else ""
        lines.append(escape_line(f"{name}: not downloaded: {warning}{note}"))
    counts = count_kinds(kinds)
    if counts:
        lines.append(escape_line(f"not downloaded (not safetensors): {kinds_line(counts, 'file')}"))
    return lines
