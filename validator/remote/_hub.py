# Strategy: `hf://` addresses, resolved through huggingface_hub so that its
# settings apply exactly as they do for the user's own downloads: the
# endpoint (HF_ENDPOINT), the token (HF_TOKEN or the stored login; sent to
# the hub's origin only, never to the CDN it redirects to) and the local
# cache (HF_HUB_CACHE / HF_HOME).  One repo_info call per repository gives
# the commit a branch or tag points to and every file's size and, for LFS
# files, its sha256; every file is then addressed at that commit, so an
# index and its shards are read from the same revision.  A file already in
# the local cache at that commit is checked there; when the cache alone can
# answer (a file at a full commit, or anything offline), _snapshot plans the
# address with no call to the hub at all.
#
# Grammar (the one huggingface_hub's HfFileSystem uses):
#   hf://[models/|datasets/|spaces/]NAMESPACE/NAME[@REVISION][/PATH]
# REVISION is percent-decoded (refs%2Fpr%2F1); an empty PATH means the
# whole repository, a PATH ending in .safetensors or an index name one file,
# any other PATH a folder of the repository.
from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urlsplit

from validator._errors import RemoteError
from validator.config.settings import environment

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["OFFLINE_HINT", "HfLocation", "HubEntry", "HubRepo", "is_hf", "parse_hf", "resolve", "unreachable"]

_TYPES: Final = {"models": "model", "datasets": "dataset", "spaces": "space"}
_PREFIX: Final = {"model": "", "dataset": "datasets/", "space": "spaces/"}
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
OFFLINE_HINT: Final = "stcheck scan --hf-cache checks the files already in the hub cache"


@dataclass(frozen=True)
class HfLocation:
    """A parsed ``hf://`` address."""

    repo_id: str
    repo_type: str  # model, dataset or space
    revision: str | None
    path: str  # "" for the whole repository

    def display(self, commit: str | None, path: str) -> str:
        rev = commit[:12] if commit else (self.revision or "main")
        return f"hf://{_PREFIX[self.repo_type]}{self.repo_id}@{rev}/{path}"


def is_hf(source: str) -> bool:
    return source.startswith("hf://")


def parse_hf(source: str) -> HfLocation:
    """Parse ``hf://…``; raise ValueError with the reason when malformed."""
    rest = source.removeprefix("hf://")
    parts = rest.split("/")
    repo_type = "model"
    if parts and parts[0] in _TYPES:
        repo_type = _TYPES[parts.pop(0)]
    if len(parts) < 2 or not parts[0] or not parts[1]:
        msg = f"{source}: expected hf://NAMESPACE/NAME[@REVISION][/PATH]"
        raise ValueError(msg)
    namespace, name = parts[0], parts[1]
    revision = None
    if "@" in name:
        name, _, rev = name.partition("@")
        revision = unquote(rev)
        if not revision:
            msg = f"{source}: empty revision after '@'"
            raise ValueError(msg)
    for part in (namespace, name):
        if _NAME.fullmatch(part) is None:
            msg = f"{source}: {part!r} is not a repository namespace or name"
            raise ValueError(msg)
    path = "/".join(p for p in parts[2:] if p)
    if ".." in path.split("/"):
        msg = f"{source}: '..' in a repository path"
        raise ValueError(msg)
    return HfLocation(f"{namespace}/{name}", repo_type, revision, path)


@dataclass(frozen=True)
class HubEntry:
    """One file of a repository at a commit, as the hub lists it."""

    path: str
    size: int | None
    sha256: str | None  # the LFS oid, when the file is in LFS
    blob_id: str | None = None  # the git blob id, for a file not in LFS


@dataclass(frozen=True)
class HubRepo:
    """A repository resolved to one commit."""

    location: HfLocation
    commit: str
    entries: Mapping[str, HubEntry]
    endpoint: str
    headers: Mapping[str, str]
    complete: bool = True  # False: read from the hub cache, which holds only what was downloaded

    def url(self, path: str) -> str:
        from huggingface_hub import hf_hub_url  # noqa: PLC0415 - the remote extra loads only for hf:// sources

        loc = self.location
        return hf_hub_url(loc.repo_id, path, repo_type=loc.repo_type, revision=self.commit, endpoint=self.endpoint)

    def display(self, path: str) -> str:
        return self.location.display(self.commit, path)

    def cached(self, path: str) -> str | None:
        """The file in the local hub cache at this commit, or None."""
        from huggingface_hub import try_to_load_from_cache  # noqa: PLC0415 - the remote extra loads only for hf:// sources

        loc = self.location
        try:
            found = try_to_load_from_cache(
                loc.repo_id, path, cache_dir=environment().hf_hub_cache, revision=self.commit, repo_type=loc.repo_type
            )
        except (OSError, ValueError):
            return None
        return found if isinstance(found, str) else None


def _endpoint() -> str:
    from huggingface_hub import constants  # noqa: PLC0415 - the remote extra loads only for hf:// sources

    return (environment().hf_endpoint or constants.ENDPOINT).rstrip("/")


def _within(seconds: float, call: Callable[[], Any]) -> Any:  # noqa: ANN401 - whatever the call returns
    """``call()``, or TimeoutError after ``seconds``.  huggingface_hub's HTTP
    client has only per-read timeouts, which a server dripping its answer
    never trips: the call runs in a daemon thread, abandoned at the deadline
    (it ends at its next read timeout, or with the process)."""
    box: list[tuple[bool, Any]] = []

    def work() -> None:
        try:
            box.append((True, call()))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, which re-raises it
            box.append((False, exc))

    thread = threading.Thread(target=work, name="stcheck-hub-api", daemon=True)
    thread.start()
    thread.join(seconds)
    if not box:
        raise TimeoutError
    ok, value = box[0]
    if not ok:
        raise value
    return value


def resolve(
    location: HfLocation, *, timeout: float, deadline: float = 300.0, headers: Mapping[str, str] | None = None
) -> HubRepo:
    """List the repository at the location's revision through huggingface_hub.

    ``timeout`` bounds each read, ``deadline`` the whole listing; ``headers``
    (the user's -H, for a private hub) go with the listing's request, as they
    go with every file request to the same origin.  Raises
    RemoteError (the address and the hub's reason) when the hub cannot
    answer: an unknown repository or revision, no access, no network, no
    answer within the deadline.
    """
    try:
        from huggingface_hub import HfApi  # noqa: PLC0415 - the remote extra loads only for hf:// sources
        from huggingface_hub.utils._headers import build_hf_headers  # noqa: PLC0415 - as above
    except ImportError as exc:
        from validator.config.install import install_hint  # noqa: PLC0415 - only on this error path

        msg = f"hf:// addresses need huggingface_hub: {install_hint('remote')}"
        raise RemoteError(msg) from exc
    endpoint = _endpoint()
    where = location.display(None, location.path)
    try:
        api = HfApi(endpoint=endpoint, headers=dict(headers or {}))
        info: Any = _within(
            deadline,
            lambda: api.repo_info(
                location.repo_id,
                revision=location.revision,
                repo_type=location.repo_type,
                files_metadata=True,
                timeout=timeout,
            ),
        )
        headers = build_hf_headers()
    except TimeoutError as exc:
        raise RemoteError(f"{where}: the hub did not answer within the deadline of {deadline:g} s") from exc
    except Exception as exc:  # huggingface_hub raises its own errors and its HTTP client's: the hub did not answer
        if _no_answer(exc):
            raise unreachable(where, endpoint, _first_line(exc)) from exc
        raise RemoteError(f"{where}: {_hub_reason(exc)}") from exc
    commit = getattr(info, "sha", None)
    if not isinstance(commit, str) or not commit:
        raise RemoteError(f"{where}: the hub did not say which commit {location.revision or 'main'} is")
    entries: dict[str, HubEntry] = {}
    for sibling in getattr(info, "siblings", None) or []:
        lfs = getattr(sibling, "lfs", None)
        sha256 = getattr(lfs, "sha256", None) if lfs is not None else None
        blob = None if sha256 is not None else getattr(sibling, "blob_id", None)
        entries[sibling.rfilename] = HubEntry(sibling.rfilename, getattr(sibling, "size", None), sha256, blob)
    # Only the authorization header is ours to send on; the user agent is the hub library's.
    auth = {k: v for k, v in headers.items() if k.lower() == "authorization"}
    return HubRepo(location, commit, entries, endpoint, auth)


def unreachable(where: str, endpoint: str, reason: str) -> RemoteError:
    """The error for a hub that could not be reached: it names the host, and the way to check offline."""
    host = urlsplit(endpoint).netloc or endpoint
    return RemoteError(f"{where}: cannot reach the hub at {host}: {reason.rstrip('.')}; {OFFLINE_HINT}")


def _no_answer(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure to reach the hub at all (no HTTP status):
    a name that does not resolve, a refused connection, a network error."""
    seen: BaseException | None = exc
    for _ in range(8):  # a short chain: the HTTP client wraps once or twice
        if seen is None or getattr(getattr(seen, "response", None), "status_code", None) is not None:
            return False
        names = {k.__name__ for k in type(seen).__mro__}
        if isinstance(seen, OSError) or names & {"TransportError", "ConnectionError", "NetworkError"}:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _hub_reason(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    first = _first_line(exc)
    if status == 401:
        return f"HTTP 401: not authorised (set HF_TOKEN for a private or gated repository): {first}"
    if status is not None:
        return f"HTTP {status}: {first}"
    return first
