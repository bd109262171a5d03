# Strategy: remote checks from headers alone.  A remote file is validated by
# the same core as a local one (_validate.check_buffer), fed by a RemoteFile:
# the 8-byte prefix and the header come from one or two Range requests and
# the file size from the server's lengths, so every header rule and the
# exact-length rule apply, and the prefix rules (a header over 100 MB, or
# past the declared size) refuse before the header is read.  A remote index
# is fetched whole (at most 100 MB), parsed by io.index, and its shards'
# headers are fetched concurrently, `concurrency` at a time; the cross-shard
# checks are io.checkpoint's, shared with local checkpoints.
#
# Sources: http(s) URLs, and hf:// addresses resolved through _hub (or
# through _snapshot, from the hub cache alone, when it can answer).  A whole
# repository (or a folder of one) is expanded into its indexes, each checked
# as one checkpoint with its shards, and the *.safetensors files no index
# names, each checked alone.
from __future__ import annotations

import posixpath
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urljoin, urlsplit

from validator._errors import RemoteError
from validator._rules import PREFIX_LEN
from validator._validate import as_profile, check_buffer, validate
from validator.io.checkpoint import ParsedIndex, ShardProblem, cross_check
from validator.io.index import (
    MAX_CONFIG_SIZE,
    MAX_INDEX_SIZE,
    IndexReport,
    index_checker,
    index_report,
    is_index_name,
    neighbour_findings,
    parse_config,
    parse_index,
    unsafe_shard_name,
)
from validator.io.names import SUFFIX
from validator.remote._http import Client, Options, fetch_small
from validator.remote._hub import HubRepo, is_hf, parse_hf, resolve
from validator.remote._ranged import RemoteFile
from validator.remote._snapshot import from_cache, not_cached

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from validator._check import Checker
    from validator._findings import Report
    from validator._rules import Profile

__all__ = [
    "IndexSource",
    "Plan",
    "RemoteEntry",
    "RemoteHeader",
    "check_index",
    "check_parsed",
    "check_source",
    "default_options",
    "loose_files",
    "plan",
    "read_header",
    "unnamed_files",
    "validate_remote_index",
    "validate_url",
]


@dataclass(frozen=True)
class RemoteEntry:
    """One remote file to read: where to fetch it and what the hub said of it."""

    url: str  # what is fetched
    display: str  # what the report calls it
    size: int | None = None  # the hub listing's size, checked against the server's
    sha256: str | None = None  # the hub listing's LFS oid
    cached: str | None = None  # a local copy in the hub cache at the same commit
    rel: str = ""  # where download puts it, relative to the output directory
    git_blob: str | None = None  # the hub's git blob id of a file not in LFS
    headers: Mapping[str, str] = field(default_factory=dict)  # the hub token, for the hub's origin only


@dataclass(frozen=True)
class RemoteHeader:
    """A checked remote header, with what download needs to go on."""

    report: Report
    size: int
    etag: str | None
    file: RemoteFile | None  # still open at the end of what was read; None when checked from the cache


def read_header(client: Client, entry: RemoteEntry, profile: Profile, *, keep_open: bool = False) -> RemoteHeader:
    """Validate one remote file's prefix and header; raise RemoteError on I/O."""
    if entry.cached is not None:
        report = validate(entry.cached, profile=profile)
        return RemoteHeader(report, report.file_size, entry.sha256, None)
    remote = RemoteFile(client, entry.url, headers=entry.headers)
    try:
        remote.open()
        _check_sizes(entry, remote)
        prefix = remote.read(0, PREFIX_LEN)

        def header(n: int) -> bytes:
            return remote.read(PREFIX_LEN, n)

        report = check_buffer(prefix, header, remote.size, profile, entry.display)
    except BaseException:
        remote.close()
        raise
    if not keep_open:
        remote.close()
    return RemoteHeader(report, remote.size, entry.sha256 or remote.etag, remote if keep_open else None)


def _check_sizes(entry: RemoteEntry, remote: RemoteFile) -> None:
    """The hub listing, X-Linked-Size and the served length must agree."""
    if entry.size is not None and entry.size != remote.size:
        msg = f"{entry.display}: the hub lists {entry.size} bytes but the server serves {remote.size}"
        raise RemoteError(msg)
    if remote.linked_size is not None and remote.linked_size != remote.size:
        msg = f"{entry.display}: X-Linked-Size says {remote.linked_size} bytes but the server serves {remote.size}"
        raise RemoteError(msg)


def _bounded_map(
    fn: Callable[[RemoteEntry], Report], entries: Iterable[RemoteEntry], concurrency: int
) -> list[Report | RemoteError]:
    items = list(entries)
    if not items:
        return []

    def safe(entry: RemoteEntry) -> Report | RemoteError:
        try:
            return fn(entry)
        except RemoteError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(items)))) as pool:
        return list(pool.map(safe, items))


@dataclass(frozen=True)
class IndexSource:
    """Where a remote index is and how its shard names become entries."""

    url: str
    display: str
    shard: Callable[[str], RemoteEntry | None]  # None: the listing shows it does not exist
    rel: str = ""  # where download puts it, relative to the output directory
    headers: Mapping[str, str] = field(default_factory=dict)  # the hub token, for the hub's origin only
    config: str | None = None  # the URL of the model's config.json beside it (None: the listing has none)
    siblings: tuple[str, ...] | None = None  # the file names beside it in a hub listing (None: unknown)
    sibling: Callable[[str], IndexSource] | None = None  # another index of that folder, by name
    cached: str | None = None  # the index in the local hub cache at the same commit
    config_cached: str | None = None  # its config.json there


def check_index(
    client: Client,
    source: IndexSource,
    profile: Profile,
    *,
    keep: list[bytes] | None = None,
    read: Callable[[RemoteEntry], Report] | None = None,
) -> IndexReport:
    """Fetch a remote index and its shards' headers; cross-check them.
    With ``keep``, the index's bytes are appended to it; ``read`` fetches
    and checks one shard's header (default: read_header), so that download
    can keep the very bytes it cross-checked."""
    raw, size = _small(client, source.url, source.cached, MAX_INDEX_SIZE, source.headers)
    if keep is not None and raw is not None:
        keep.append(raw)
    out = index_checker()
    parsed = parse_index(raw, size, out)
    if parsed is None:
        return index_report(source.display, out)
    return check_parsed(client, source, parsed, out, profile, read=read)


def check_parsed(
    client: Client,
    source: IndexSource,
    parsed: ParsedIndex,
    out: Checker,
    profile: Profile,
    *,
    read: Callable[[RemoteEntry], Report] | None = None,
) -> IndexReport:
    outcomes: dict[str, Report | ShardProblem] = {}
    todo: dict[str, RemoteEntry] = {}
    for shard in parsed.first_name:
        problem = unsafe_shard_name(shard)
        if problem is not None:
            outcomes[shard] = ShardProblem("index-shard-path", f"shard file name {shard!r} {problem}")
            continue
        entry = source.shard(shard)
        if entry is None:
            outcomes[shard] = ShardProblem("index-shard-missing", f"shard {shard!r}: not in the repository")
            continue
        todo[shard] = entry
    fetch = read or (lambda e: read_header(client, e, profile).report)
    results = _bounded_map(fetch, todo.values(), client.options.concurrency)
    for shard, result in zip(todo, results, strict=True):
        if isinstance(result, RemoteError):
            if getattr(result, "status", None) not in {404, 410}:
                raise result
            outcomes[shard] = ShardProblem("index-shard-missing", f"shard {shard!r}: {result}")
            continue
        outcomes[shard] = result
    reports, total = cross_check(parsed, outcomes, out, config=lambda: _config(client, source))
    if source.siblings is not None and source.sibling is not None:
        sibling = source.sibling
        neighbour_findings(
            posixpath.basename(source.rel),
            source.siblings,
            parsed.first_name,
            lambda name: _named_by(client, sibling(name)),
            out,
        )
    return index_report(source.display, out, parsed, reports, total)


def _named_by(client: Client, source: IndexSource) -> set[str]:
    """The shard names another remote index lists (empty when it cannot be read)."""
    try:
        raw, size = _small(client, source.url, source.cached, MAX_INDEX_SIZE, source.headers)
    except RemoteError:
        return set()
    parsed = parse_index(raw, size, index_checker())
    return set() if parsed is None else set(parsed.first_name)


def _config(client: Client, source: IndexSource) -> dict[str, Any] | None:
    """The model's config.json beside a remote index (fetched only when a
    tensor the index lists is stored by no shard: its tie evidence), or None
    when there is none or it cannot be read."""
    if source.config is None:
        return None
    try:
        raw, _ = _small(client, source.config, source.config_cached, MAX_CONFIG_SIZE, source.headers)
    except RemoteError:
        return None
    return parse_config(raw)


def _small(
    client: Client, url: str, cached: str | None, limit: int, headers: Mapping[str, str]
) -> tuple[bytes | None, int]:
    """A small file (an index, a config) from the hub cache when it is
    there, else over HTTP: (its bytes, or None past ``limit``; its size)."""
    if cached is None:
        return fetch_small(client, url, limit, headers)
    try:
        with open(cached, "rb") as f:  # noqa: PTH123 - a path from the hub cache, as str
            data = f.read(limit + 1)
    except OSError as exc:
        raise RemoteError(f"{cached}: {exc.strerror or exc}") from exc
    return (None, len(data)) if len(data) > limit else (data, len(data))


# -- sources -----------------------------------------------------------------


def _url_entry(url: str, rel: str | None = None) -> RemoteEntry:
    return RemoteEntry(url, url, rel=rel or posixpath.basename(urlsplit(url).path) or "download.safetensors")


def _url_index(url: str) -> IndexSource:
    def shard(name: str) -> RemoteEntry:
        return _url_entry(urljoin(url, quote(name)), name)

    return IndexSource(url, url, shard, posixpath.basename(urlsplit(url).path), config=urljoin(url, "config.json"))


def _hub_entry(repo: HubRepo, path: str) -> RemoteEntry:
    listed = repo.entries.get(path)
    cached = repo.cached(path)
    if cached is None and not repo.complete:
        raise not_cached(repo, path)
    return RemoteEntry(
        repo.url(path),
        repo.display(path),
        None if listed is None else listed.size,
        None if listed is None else listed.sha256,
        cached,
        path,
        None if listed is None else listed.blob_id,
        repo.headers,
    )


def _hub_index(repo: HubRepo, path: str, *, local: bool = True) -> IndexSource:
    base = posixpath.dirname(path)

    def shard(name: str) -> RemoteEntry | None:
        full = posixpath.join(base, name) if base else name
        if full not in repo.entries and not repo.complete:
            raise not_cached(repo, full)
        return _hub_entry(repo, full) if full in repo.entries else None

    config = posixpath.join(base, "config.json") if base else "config.json"
    listed = repo.url(config) if config in repo.entries else None
    siblings = tuple(sorted(posixpath.basename(p) for p in repo.entries if posixpath.dirname(p) == base))

    def sibling(name: str) -> IndexSource:
        return _hub_index(repo, posixpath.join(base, name) if base else name, local=local)

    return IndexSource(
        repo.url(path),
        repo.display(path),
        shard,
        path,
        repo.headers,
        listed,
        siblings,
        sibling,
        repo.cached(path) if local else None,
        repo.cached(config) if local and listed is not None else None,
    )


@dataclass(frozen=True)
class Plan:
    """What one source expands to: indexes and loose files."""

    indexes: list[IndexSource]
    files: list[RemoteEntry]
    hub: HubRepo | None = None


def plan(source: str, options: Options, *, cache: bool = True) -> Plan:
    """Expand a URL or hf:// address; raise RemoteError or ValueError.
    With ``cache``, an hf:// address the local hub cache can answer is
    planned from it, with no network call (remote._snapshot)."""
    if not is_hf(source):
        if urlsplit(source).scheme not in {"http", "https"}:
            msg = f"{source}: not an http(s):// URL or hf:// address"
            raise ValueError(msg)
        path = urlsplit(source).path
        if is_index_name(path):
            return Plan([_url_index(source)], [])
        return Plan([], [_url_entry(source)])
    location = parse_hf(source)
    repo = from_cache(location) if cache else None
    if repo is None:
        repo = resolve(location, timeout=options.timeout, deadline=options.deadline, headers=options.headers)
    path = location.path
    if path.endswith(SUFFIX) or is_index_name(path):
        if path not in repo.entries and not repo.complete:
            raise not_cached(repo, path)
        if path not in repo.entries:
            raise RemoteError(f"{repo.display(path)}: no such file in the repository", status=404)
        if is_index_name(path):
            return Plan([_hub_index(repo, path, local=cache)], [], repo)
        return Plan([], [_hub_entry(repo, path)], repo)
    folder = path.rstrip("/")
    inside = [p for p in sorted(repo.entries) if not folder or p.startswith(folder + "/")]
    indexes = [p for p in inside if is_index_name(p)]
    files = [p for p in inside if p.endswith(SUFFIX)]
    if not indexes and not files:
        where = repo.display(folder) if folder else repo.display("")
        there = "the repository" if repo.complete else "the hub cache at this commit (HF_HUB_OFFLINE is set)"
        raise RemoteError(f"{where}: no *.safetensors file or index in {there}", status=404)
    return Plan([_hub_index(repo, p, local=cache) for p in indexes], [_hub_entry(repo, p) for p in files], repo)


def unnamed_files(found: Plan, reports: list[IndexReport]) -> list[RemoteEntry]:
    """The plan's files that none of its checked indexes names."""
    named = set()
    for index, report in zip(found.indexes, reports, strict=True):
        base = posixpath.dirname(urlsplit(index.url).path)
        for shard in (report.weight_map or {}).values():
            named.add(posixpath.normpath(posixpath.join(base, shard)))
    return [f for f in found.files if posixpath.normpath(urlsplit(f.url).path) not in named]


def loose_files(client: Client, found: Plan, profile: Profile) -> tuple[list[IndexReport], list[RemoteEntry]]:
    """Check the plan's indexes; return their reports and the files no index names."""
    reports = [check_index(client, index, profile) for index in found.indexes]
    return reports, unnamed_files(found, reports)


def check_source(
    source: str,
    *,
    profile: Profile | str = "strict",
    options: Options | None = None,
    on_repo: Callable[[HubRepo], None] | None = None,
) -> list[Report | IndexReport]:
    """Check every file and checkpoint a remote source names.

    ``source`` is an http(s) URL of a safetensors file or of an index, or an
    ``hf://`` address of a file, an index, a folder or a whole repository.
    Returns one Report per lone file and one IndexReport per checkpoint.
    ``on_repo``, for an hf:// source, is given the resolved repository (its
    listing) before any header is fetched.  Raises RemoteError (a
    SourceError) with the address and the reason when a source cannot be
    read, and ValueError for a malformed address.
    """
    prof = as_profile(profile)
    opts = options or Options()
    with Client(opts) as client:
        found = plan(source, opts)
        if on_repo is not None and found.hub is not None:
            on_repo(found.hub)
        checkpoints, rest = loose_files(client, found, prof)
        results = _bounded_map(lambda e: read_header(client, e, prof).report, rest, opts.concurrency)
    out: list[Report | IndexReport] = [*checkpoints]
    for result in results:
        if isinstance(result, RemoteError):
            raise result
        out.append(result)
    return out


def validate_url(url: str, *, profile: Profile | str = "strict", options: Options | None = None) -> Report:
    """Validate one remote safetensors file from its prefix and header alone.

    ``url`` is an http(s) URL or an ``hf://NAMESPACE/NAME[@REVISION]/PATH``
    address.  At most two Range requests are made (the first asks for 64 KiB;
    a second is needed only for a longer header), and tensor data is never
    downloaded.  Raises RemoteError with the URL and the reason on network
    errors and HTTP errors (404 included).
    """
    prof = as_profile(profile)
    opts = options or Options()
    with Client(opts) as client:
        found = plan(url, opts)
        if found.indexes or len(found.files) != 1:
            msg = f"{url}: not a single safetensors file; use validate_remote_index or check_source"
            raise ValueError(msg)
        return read_header(client, found.files[0], prof).report


def validate_remote_index(
    url: str, *, profile: Profile | str = "strict", options: Options | None = None
) -> IndexReport:
    """Validate a remote sharded checkpoint: its index and every shard's header.

    Shard headers are fetched concurrently, ``options.concurrency`` at a time.
    A shard the server answers 404 for is an ``index-shard-missing`` finding;
    other network errors raise RemoteError.
    """
    prof = as_profile(profile)
    opts = options or Options()
    with Client(opts) as client:
        found = plan(url, opts)
        if len(found.indexes) != 1 or found.files:
            msg = f"{url}: not an index (*.safetensors.index.json)"
            raise ValueError(msg)
        return check_index(client, found.indexes[0], prof)


def default_options(
    *, timeout: float | None = None, concurrency: int | None = None, headers: Mapping[str, str] | None = None
) -> Options:
    """Options with a per-read ``timeout`` (the deadline of one request is ten
    times that, at least five minutes), a bound on ``concurrency`` and extra
    request ``headers`` (sent to the source's origin only, never after a
    redirect to another)."""
    base = Options()
    t = base.timeout if timeout is None else timeout
    return Options(
        timeout=t,
        deadline=max(base.deadline, 10 * t),
        concurrency=concurrency or base.concurrency,
        headers=dict(headers or {}),
    )
