# Strategy: a Hugging Face hub cache as the scan's jobs.  The layout
# (validator.io.names): <cache>/models--<org>--<name>/snapshots/<revision>/
# <path> are links to ../../blobs/<hash>, where an LFS file's blob is named
# by its sha256 and a small git file's blob by its git blob id.  A blob
# shared by several snapshots is read once and reported under each file
# that points to it; an interrupted download (a .incomplete blob) is a job
# of its own.  The hub cache is a target of its own (validator.sources.targets
# HubCache), planned by validator.pipeline.plan.  Each snapshot is walked by validator.sources.walk with its
# repository folder as the root.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH112, PTH118, PTH119, PTH208
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from validator.config.settings import environment
from validator.io.index import is_index_name
from validator.io.names import HUB_BLOBS, HUB_INCOMPLETE, HUB_SNAPSHOTS, hub_repo_id
from validator.pipeline.engine import Job
from validator.read.integrity import from_blob_name
from validator.sources.walk import judge_others, walk

if TYPE_CHECKING:
    from collections.abc import Callable

    from validator._findings import Finding
    from validator.config.policy import Policy
    from validator.sources.kinds import Other
    from validator.sources.walk import Tree

__all__ = ["HubWalk", "default_hf_cache", "hf_cache_jobs", "hf_cache_walk"]


def default_hf_cache() -> str:
    """Where huggingface_hub keeps its cache, from its environment variables."""
    return environment().hf_hub_cache


def _repo_dirs(cache: str) -> list[tuple[str, str]]:
    """(repo id, folder) of every repository in a hub cache, or of the one
    repository folder (``models--org--name``) given instead of a cache."""
    own = hub_repo_id(os.path.basename(os.path.normpath(cache)))
    if own is not None and os.path.isdir(os.path.join(cache, HUB_SNAPSHOTS)):
        return [(own, cache)]
    found = []
    for name in sorted(os.listdir(cache)):
        repo = hub_repo_id(name)
        if repo is not None and os.path.isdir(os.path.join(cache, name, HUB_SNAPSHOTS)):
            found.append((repo, os.path.join(cache, name)))
    return found


@dataclass
class HubWalk:
    """A hub cache's jobs, and the walker's verdicts on its files by display name."""

    jobs: list[Job] = field(default_factory=list)
    others: dict[str, Other] = field(default_factory=dict)
    # (display, finding, repo id) of each flagged link that names no file of the snapshot
    links: list[tuple[str, Finding, str]] = field(default_factory=list)
    via: dict[str, Finding] = field(default_factory=dict)  # display -> the finding on the link that names it
    indexes: list[tuple[str, str]] = field(default_factory=list)  # (display, repo id) of each snapshot's index


def hf_cache_jobs(cache: str, errors: list[str]) -> list[Job]:
    """Jobs for every file of every snapshot in a hub cache, one per blob,
    and one for each interrupted download (a ``.incomplete`` blob)."""
    return hf_cache_walk(cache, errors).jobs


def _take_links(found: HubWalk, tree: Tree, display: Callable[[str], str], repo: str) -> None:
    """A flagged link's finding goes on the file it names; a link that names
    none (a loop, a folder) is a result of its own."""
    files = {entry.path for entry in tree.found if entry.kind != "unreadable"}
    for path, finding in tree.links:
        if path in files:
            found.via[display(path)] = finding
        else:
            found.links.append((display(path), finding, repo))


def hf_cache_walk(  # noqa: C901 - one branch per kind of snapshot entry
    cache: str, errors: list[str], policy: Policy | None = None
) -> HubWalk:
    """hf_cache_jobs, with the walker's verdicts: each snapshot is walked by
    validator.sources.walk with its repository folder as the root, so a snapshot
    link (to a file or a folder) that resolves outside that folder is a
    link-leaves-root finding (on the file it names, when there is one), and
    the file it reaches is never taken for a verified blob (its name is not
    trusted as its digest).  Every job is read under ``policy``."""
    found = HubWalk()
    if not os.path.isdir(cache):
        errors.append(f"{cache}: not a Hugging Face hub cache directory")
        return found
    repos = _repo_dirs(cache)
    if not repos:
        errors.append(f"{cache}: no models--*/snapshots folder here: not a Hugging Face hub cache")
        return found
    by_blob: dict[str, list[tuple[str, str | None]]] = {}
    kinds: dict[str, bool] = {}
    outside: set[str] = set()
    for repo, folder in repos:
        snapshots = os.path.join(folder, HUB_SNAPSHOTS)
        for revision in sorted(os.listdir(snapshots)):
            top = os.path.join(snapshots, revision)
            if not os.path.isdir(top):  # a stray file (.DS_Store): not a revision
                continue

            def display(path: str, top: str = top) -> str:
                # A path anyone can open (the snapshot's link), not "repo@rev/name":
                # the repository and revision are in it, and in the result's model.
                return os.path.join(top, os.path.relpath(path, top))

            tree = walk(top, is_index=is_index_name, root=folder)
            errors.extend(tree.errors)
            _take_links(found, tree, display, repo)
            for entry in tree.found:
                if entry.kind == "unreadable":
                    broken = entry.reason.startswith("a broken symlink")
                    why = f"points to a missing blob {os.path.basename(entry.real)}" if broken else entry.reason
                    errors.append(f"{display(entry.path)}: {why}")
                    continue
                by_blob.setdefault(entry.real, []).append((display(entry.path), repo))
                if entry.kind == "index":  # its checks too, as `scan DIR` runs them (its blob is verified as well)
                    found.indexes.append((display(entry.path), repo))
                kinds[entry.real] = kinds.get(entry.real, False) or entry.kind == "safetensors"
                if entry.outside:
                    outside.add(entry.real)
            for other in judge_others(tree, errors):
                found.others[display(other.path)] = other
        blobs = os.path.join(folder, HUB_BLOBS)
        if os.path.isdir(blobs):
            found.jobs.extend(
                Job(os.path.join(blobs, name), ((os.path.join(blobs, name), repo),), policy=policy, kind="incomplete")
                for name in sorted(os.listdir(blobs))
                if name.endswith(HUB_INCOMPLETE)
            )
    for blob, names in by_blob.items():
        expected = None if blob in outside else from_blob_name(blob)
        found.jobs.append(
            Job(blob, tuple(names), expected, validate=kinds[blob], checksum_required=True, policy=policy)
        )
    found.jobs.sort(key=lambda j: j.names[0][0])
    return found
