# Strategy: what a signed-model check of an `hf://` folder needs from the
# hub, fetched before any weight is: the repository's listing at one commit
# (huggingface_hub's repo_info, through _hub.resolve: every file's size and,
# for an LFS file, its sha256), the signature file, and the small git files
# (not in LFS: config, tokenizer and other text files, which the hub stores
# below 10 MB) whose sha256 the hub does not publish.  The LFS sha256 of a
# weight file is compared with the signed digest from the listing alone.
from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from validator.io.index import is_index_name
from validator.remote._check import default_options
from validator.remote._http import Client, Options, fetch_small
from validator.remote._hub import HubRepo, parse_hf, resolve

if TYPE_CHECKING:
    from collections.abc import Sequence

    from validator.config.settings import Network
    from validator.remote._hub import HubEntry

__all__ = ["SMALL_FILE_LIMIT", "HubFolder", "SignedHubFolder", "fetch_files", "hub_folder", "pinned", "signed_folder"]

SMALL_FILE_LIMIT: Final = 16 << 20  # bytes: a non-LFS file the hub serves is below 10 MB


@dataclass(frozen=True)
class HubFolder:
    """One folder of a repository at one commit, as the hub lists it."""

    repo: HubRepo
    folder: str  # "" for the whole repository

    def path(self, rel: str) -> str:
        """The repository path of a file given relative to the folder."""
        return posixpath.join(self.folder, rel) if self.folder else rel

    def display(self, rel: str) -> str:
        return self.repo.display(self.path(rel))

    def files(self) -> dict[str, HubEntry]:
        """Every listed file of the folder, by path relative to it."""
        base = self.folder + "/" if self.folder else ""
        return {p[len(base) :]: e for p, e in self.repo.entries.items() if p.startswith(base)}


def hub_folder(source: str, options: Options, listed: HubRepo | None = None) -> HubFolder:
    """The listing of an ``hf://`` repository or folder address: ``listed``,
    the listing the caller already holds (a download's), else the hub's
    answer now; raise ValueError when it names a single file, RemoteError
    when the hub does not answer.

    One address is listed once per run: a branch can move between two
    listings, so the commit listed here is the one whose signature is
    fetched and compared, and the one a scan then reads (pinned)."""
    location = parse_hf(source)
    folder = location.path.strip("/")
    if folder.endswith(".safetensors") or is_index_name(folder):
        msg = f"{source}: a model signature covers a folder; give the repository or a folder of it, not one file"
        raise ValueError(msg)
    if listed is not None:
        if (listed.location.repo_id, listed.location.repo_type) != (location.repo_id, location.repo_type):
            msg = f"{source}: the listing given is of {listed.display('')}, another repository"
            raise ValueError(msg)
        return HubFolder(listed, folder)
    return HubFolder(
        resolve(location, timeout=options.timeout, deadline=options.deadline, headers=options.headers), folder
    )


def pinned(source: str, commit: str) -> str:
    """The ``hf://`` address ``source`` at ``commit``: what it names, read
    at the commit already listed, whatever its branch points to now."""
    location = parse_hf(source)
    kind = {"model": "", "dataset": "datasets/", "space": "spaces/"}[location.repo_type]
    path = f"/{location.path}" if location.path else ""
    return f"hf://{kind}{location.repo_id}@{commit}{path}"


def fetch_files(
    found: HubFolder, rels: list[str], options: Options, limit: int = SMALL_FILE_LIMIT
) -> dict[str, bytes | None]:
    """The whole of each small file of the folder (None for one larger than
    ``limit``), over one connection pool; raise RemoteError when the hub
    does not serve one."""
    with Client(options) as client:
        return {rel: fetch_small(client, found.repo.url(found.path(rel)), limit, found.repo.headers)[0] for rel in rels}


@dataclass(frozen=True)
class SignedHubFolder:
    """An hf:// folder at the commit listed, as the signatures stage reads it."""

    source: str  # the address as given
    found: HubFolder
    options: Options

    @property
    def prefix(self) -> str:
        """How reports name the folder's files: the prefix of each display name."""
        return self.found.display("x")[:-1]

    @property
    def commit(self) -> str | None:
        return self.found.repo.commit

    @property
    def folder(self) -> str:
        """The folder's path in the repository ("" for the whole repository)."""
        return self.found.folder

    def files(self) -> dict[str, HubEntry]:
        return self.found.files()

    def fetch(self, rels: Sequence[str], limit: int = SMALL_FILE_LIMIT) -> dict[str, bytes | None]:
        return fetch_files(self.found, list(rels), self.options, limit)

    def pinned(self) -> str:
        commit = self.commit
        return self.source if commit is None else pinned(self.source, commit)


def signed_folder(source: str, network: Network, listed: object = None) -> SignedHubFolder:
    """The hf:// folder ``source`` as the hub lists it (``listed``: a
    download's own listing, a HubRepo); ValueError for an address of one
    file, RemoteError when the hub does not answer."""
    options = default_options(timeout=network.timeout, concurrency=network.concurrency, headers=network.headers)
    repo = listed if isinstance(listed, HubRepo) else None
    return SignedHubFolder(source, hub_folder(source, options, repo), options)
