# Strategy: an hf:// address served by the local hub cache, with no network
# call.  huggingface_hub keeps each downloaded file of a repository as
# HF_HUB_CACHE / "models--NAMESPACE--NAME" / "snapshots" / COMMIT / PATH (or
# datasets--, spaces--), a link into ../blobs, and the commit each branch or tag pointed to when
# it was last asked for in refs/REVISION.  What is at a commit never
# changes, so:
# - a lone *.safetensors file at a full 40-hex commit that the cache holds is
#   checked there, online or not: the hub has nothing to add;
# - an index, a folder or a whole repository needs the hub's listing when it
#   can be had (the cache holds what was downloaded, not necessarily every
#   file of the commit: a shard or a pickle never fetched would go unseen);
# - offline (HF_HUB_OFFLINE, huggingface_hub's own switch), the snapshot is
#   all there is: it stands for the listing, a branch or tag is resolved
#   through refs/ as huggingface_hub does offline, and a file the cache does
#   not hold is an error that says so, never a finding or a pass.
# Paths are str, handled with os.path as in validator.sources.
# ruff: noqa: PTH112, PTH113, PTH118, PTH119, PTH202
from __future__ import annotations

import os
import re
from typing import Final

from validator._errors import RemoteError
from validator.config.settings import environment
from validator.io.names import SUFFIX
from validator.remote._hub import OFFLINE_HINT, HfLocation, HubEntry, HubRepo, _endpoint

__all__ = ["from_cache", "hub_offline", "not_cached"]

_COMMIT: Final = re.compile(r"[0-9a-f]{40}")
_BLOB_SHA256: Final = re.compile(r"[0-9a-f]{64}")


def hub_offline() -> bool:
    """Whether huggingface_hub was told to stay offline (HF_HUB_OFFLINE)."""
    from huggingface_hub import constants  # noqa: PLC0415 - the remote extra loads only for hf:// sources

    return bool(constants.HF_HUB_OFFLINE)


def _repo_folder(location: HfLocation) -> str:
    from huggingface_hub.file_download import repo_folder_name  # noqa: PLC0415 - as above

    return os.path.join(
        environment().hf_hub_cache, repo_folder_name(repo_id=location.repo_id, repo_type=location.repo_type)
    )


def _commit(location: HfLocation, folder: str, *, offline: bool) -> str | None:
    """The commit the address names: itself when it is one; offline, the
    one the cache's refs/ recorded for a branch or tag; else None."""
    revision = location.revision or "main"
    if _COMMIT.fullmatch(revision):
        return revision
    if not offline or revision.startswith("/") or ".." in revision.split("/"):
        return None
    try:
        with open(os.path.join(folder, "refs", revision), encoding="ascii") as f:  # noqa: PTH123
            text = f.read(64).strip()
    except (OSError, ValueError):
        return None
    return text if _COMMIT.fullmatch(text) else None


def _entry(snapshot: str, rel: str) -> HubEntry:
    """A cached file as the hub would list it: its size, and the digest its
    blob is named by (an LFS file's sha256, a small file's git blob id)."""
    full = os.path.join(snapshot, *rel.split("/"))
    blob = os.path.basename(os.path.realpath(full))
    lfs = blob if _BLOB_SHA256.fullmatch(blob) else None
    git = blob if lfs is None and _COMMIT.fullmatch(blob) else None
    return HubEntry(rel, os.path.getsize(full), lfs, git)


def _entries(snapshot: str) -> dict[str, HubEntry]:
    """Every file of a snapshot, as a listing."""
    found: dict[str, HubEntry] = {}
    for top, dirs, files in os.walk(snapshot):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(top, name)
            if os.path.isfile(full):  # not a link to a blob that is gone
                rel = os.path.relpath(full, snapshot).replace(os.sep, "/")
                found[rel] = _entry(snapshot, rel)
    return found


def from_cache(location: HfLocation) -> HubRepo | None:
    """The repository at the address's commit, read from the hub cache
    alone, or None when the hub must be asked for its listing.

    Offline, raises RemoteError (naming the cache and ``--hf-cache``) when
    the cache does not hold what the address names."""
    offline = hub_offline()
    folder = _repo_folder(location)
    commit = _commit(location, folder, offline=offline)
    where = location.display(commit, location.path)
    snapshot = None if commit is None else os.path.join(folder, "snapshots", commit)
    if snapshot is None or not os.path.isdir(snapshot):
        if offline:
            cache = environment().hf_hub_cache
            msg = f"{where}: not in the hub cache ({cache}), and HF_HUB_OFFLINE is set; {OFFLINE_HINT}"
            raise RemoteError(msg)
        return None
    assert commit is not None  # a snapshot was found at it
    endpoint = _endpoint()
    path = location.path
    if path.endswith(SUFFIX) and os.path.isfile(os.path.join(snapshot, path)):
        return HubRepo(location, commit, {path: _entry(snapshot, path)}, endpoint, {}, complete=False)
    if not offline:
        return None
    return HubRepo(location, commit, _entries(snapshot), endpoint, {}, complete=False)


def not_cached(repo: HubRepo, path: str) -> RemoteError:
    """The error for a file an offline check needs that the cache does not hold."""
    msg = f"{repo.display(path)}: not in the hub cache at this commit, and HF_HUB_OFFLINE is set; {OFFLINE_HINT}"
    return RemoteError(msg)
