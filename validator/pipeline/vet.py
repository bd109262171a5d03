# Strategy: `vet`, the one run from arguments to a verdict, which
# `stcheck scan` and the library call both go through, so they cannot
# disagree.  The stages, in order:
#   1. resolve: the policy in force (validator.config.resolve), then every
#      argument into targets (validator.sources, through the plan in
#      validator.pipeline.plan) and a hub cache into jobs (hubcache);
#   2. signatures are verified before any file is read (pipeline.signatures),
#      and each signed file's digests are added to its job;
#   3. the one read of each file (format, deep checks, digests) in a worker
#      pool, a Dask cluster or through the results cache (pipeline.runner);
#   4. judge: the other files' verdicts and the signature comparison are
#      attached, the policy applied, the exit status computed.
# The report writers (validator.report) take what `vet` returns; the
# command line only parses its options into VetOptions and writes reports.
# Paths are str, handled with os.path as in the rest of the package.
from __future__ import annotations

import contextlib
import importlib.util
import os
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from validator._display import plural
from validator._errors import SourceError, StcheckError
from validator._rules import Profile
from validator.config.install import install_hint
from validator.config.policy import PolicyError, apply_policy
from validator.config.resolve import passed_over_note, resolve_policy
from validator.config.settings import Network
from validator.io.names import hub_snapshot
from validator.pipeline import runner
from validator.pipeline.engine import DEFAULT_CHUNK, Job, Options, run_jobs, total_size
from validator.pipeline.hubcache import HubWalk, default_hf_cache, hf_cache_walk
from validator.pipeline.plan import index_result, scan_plan
from validator.pipeline.signatures import Signatures, arguments
from validator.pipeline.verdicts import attach, link_result, one_entry_per_path
from validator.read.integrity import normalise_sha256, read_checksums
from validator.report.results import exit_status
from validator.signing.base import SigningSetupError
from validator.sources.schemes import STDIN, is_remote

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from contextlib import AbstractContextManager

    from validator.config.policy import Policy
    from validator.read.integrity import Checksums
    from validator.report.results import FileResult

    # (total bytes, files) -> a context giving (advance(bytes), file_done()) callbacks
    Callbacks = tuple[Callable[[int], None] | None, Callable[[], None] | None]
    Progress = Callable[[int, int], AbstractContextManager[Callbacks]]

__all__ = ["VetError", "VetOptions", "Vetted", "vet"]


class VetError(StcheckError, ValueError):
    """The run cannot start: options that cannot work together, a bad
    policy, checksum list, key or cache, or nothing to vet at all."""


@dataclass(frozen=True)
class VetOptions:
    """What `stcheck scan` takes, as one value (the same names as its options)."""

    profile: str = "strict"
    deep: bool = False
    policy: str | Policy | None = None  # a policy file or a Policy; None: the user's pyproject.toml
    no_config: bool = False
    select: Sequence[str] = ()
    ignore: Sequence[str] = ()
    fail_on: str = "error"  # error, warning or never
    sha256: str | None = None
    checksums: str | None = None
    hf_cache: str | None = None  # a hub cache to scan; "" for the default one
    public_key: str | None = None
    certificate_chain: Sequence[str] = ()
    signature: str | None = None
    identity: str | None = None
    issuer: str | None = None
    trust_config: str | None = None
    ignore_paths: Sequence[str] = ()  # left out of a signature's verification, relative to the signed folder
    jobs: int = 0  # worker processes; 0: one per CPU
    cache: str | None = None  # a SQLite file or a postgresql:// URL
    cluster: str | None = None  # tcp://HOST:PORT or local:N
    client: Any = None  # a distributed.Client to run on
    timeout_per_file: float | None = None
    chunk_size: int = DEFAULT_CHUNK
    network: Network = field(default_factory=Network)
    signature_method: str = "oms"  # a row of validator.signing.base.METHODS
    every_sha256: bool = False  # compute every file's sha256 in its one read (a report that lists them: a BOM)


@dataclass
class Vetted:
    """What a run found: one result per target, the sources that could not
    be read, the policies in force, notes on signatures and configuration,
    and the exit status (0 clean, 1 failing findings, 2 unreadable input)."""

    results: list[FileResult]
    errors: list[str]
    policies: list[str]
    notes: list[str]
    seconds: float
    exit_code: int
    profile: str

    @property
    def ok(self) -> bool:
        """Whether the run passed (exit status 0)."""
        return self.exit_code == 0

    def to_json(self) -> dict[str, Any]:
        """The document `stcheck scan --format json` writes."""
        from validator.report.format_common import Context  # noqa: PLC0415 - the writers load only when asked
        from validator.report.formats import json_document  # noqa: PLC0415 - as above

        context = Context(
            command="scan", profile=self.profile, policies=tuple(self.policies), errors=tuple(self.errors)
        )
        return json_document(self.results, replace(context, seconds=self.seconds))


def _check_options(paths: Sequence[str], options: VetOptions) -> None:
    if not paths and options.hf_cache is None:
        raise VetError("give at least one PATH, or --hf-cache")
    if options.chunk_size < 4096:
        raise VetError("--chunk-size must be at least 4096")
    if options.profile not in {p.value for p in Profile}:
        raise VetError(f"unknown profile {options.profile!r}: strict or reference")
    if options.fail_on not in {"error", "warning", "never"}:
        raise VetError(f"unknown fail_on {options.fail_on!r}: error, warning or never")
    if STDIN in paths and (options.deep or options.sha256 or options.checksums or list(paths).count(STDIN) > 1):
        raise VetError("- (standard input, once) is checked from its header only: --deep and digests need a file")
    # A remote source is read from its header by range requests, as stdin is from its pipe (spec: Remote sources).
    remote = next((p for p in paths if is_remote(p)), None)
    if remote is not None and (options.deep or options.sha256 or options.checksums):
        msg = "a remote source is checked from its header only (by range requests): --deep and digests need a file"
        raise VetError(f"{remote}: {msg}; stcheck download reads it whole")
    if options.deep and importlib.util.find_spec("numpy") is None:
        raise VetError(f"--deep needs numpy: {install_hint('scan')}")
    if options.timeout_per_file is not None and not options.timeout_per_file > 0:
        raise VetError("--timeout-per-file must be a positive number of seconds")


def _hub_walk(options: VetOptions, errors: list[str], policy: Policy | None) -> HubWalk:
    if options.hf_cache is None:
        return HubWalk()
    found = hf_cache_walk(options.hf_cache or default_hf_cache(), errors)
    found.jobs = [replace(job, policy=policy) for job in found.jobs]
    return found


def _hub_indexes(hub: HubWalk, profile: str, policy: Policy | None) -> list[FileResult]:
    """Each snapshot index's checks (missing shards, orphans, ties), as for a folder."""
    if not hub.indexes:
        return []
    from validator.io.index import validate_index  # noqa: PLC0415 - the index modules load only for checkpoints

    results = []
    for path, repo in hub.indexes:
        result = index_result(validate_index(path, profile=profile), profile, policy)
        result.model = repo
        results.append(result)
    return results


def _hub_revisions(results: list[FileResult], hub: HubWalk) -> None:
    """Give each hub-cache result the revision of its snapshot."""
    if not hub.jobs and not hub.links:
        return
    for result in results:
        snapshot = None if result.model is None else hub_snapshot(result.path)
        if snapshot is not None:
            result.revision = snapshot.revision


def _missing_listed(checksums: Checksums | None) -> list[Job]:
    """A job for every file the checksum list names that is not on disk."""
    if checksums is None:
        return []
    return [Job(name, ((name, None),), kind="missing", listed_by=where) for name, where in checksums.missing]


def vet(
    paths: Sequence[str],
    options: VetOptions | None = None,
    *,
    progress: Progress | None = None,
    progress_mode: str = "auto",
    on_note: Callable[[str], None] | None = None,
) -> Vetted:
    """Vet files, folders, indexes, standard input (``-``), remote sources
    and a hub cache as `stcheck scan` does, and return what it found.

    Raises VetError when the run cannot start (its message is the one line
    `stcheck scan` prints before exiting 2).  ``progress`` draws progress
    (and ``progress_mode``, auto, always or never, says whether a Dask
    cluster draws its own); ``on_note`` receives each note as it is made
    (they are also returned)."""
    options = options or VetOptions()
    paths = [paths] if isinstance(paths, str) else list(paths)  # one path, not its characters
    _check_options(paths, options)
    notes: list[str] = []

    def note(text: str) -> None:
        notes.append(text)
        if on_note is not None:
            on_note(text)

    errors: list[str] = []
    try:
        checked = [*paths, *([options.hf_cache or default_hf_cache()] if options.hf_cache is not None else [])]
        policy, policies = resolve_policy(
            checked,
            policy=options.policy,
            no_config=options.no_config,
            select=options.select,
            ignore=options.ignore,
            on_passed_over=lambda candidate: note(passed_over_note(candidate, "scanned")),
        )
        checksums = read_checksums(options.checksums) if options.checksums else None
        sha256 = normalise_sha256(options.sha256) if options.sha256 else None
        # The checksum list cannot list itself: it is judged, not verified.
        own = frozenset({os.path.realpath(options.checksums)} if options.checksums else ())
        # Signatures are verified (and compared with a hub's listing) before any file is read.
        signing = Signatures.from_options(options, policy)
        signing.verify_sources(arguments(paths), options.network, hf_cache=options.hf_cache is not None)
        paths = signing.pinned(paths)  # an hf:// folder is read at the commit its signature was compared with
        plan = scan_plan(paths, options.profile, policy, errors, options.network, not_read=own)
        hub = _hub_walk(options, errors, policy)
    except (PolicyError, SourceError, ValueError, SigningSetupError) as exc:
        raise VetError(str(exc)) from exc
    jobs = hub.jobs + [
        Job(path, ((path, None),), policy=policy, validate=path not in plan.others) for path in plan.paths
    ]
    if sha256 is not None and len(jobs) != 1:
        msg = f"--sha256 names the digest of one file, but {plural(len(jobs), 'file')} were found; use --checksums"
        raise VetError(msg)
    # The plan's own files come last: plan.merge finds their results there.
    cut = len(jobs) - len(plan.paths)
    jobs[cut:cut] = _missing_listed(checksums)
    try:
        jobs = signing.with_digests(jobs, hub, sha256=options.every_sha256)  # digests computed in the one read
    except (ValueError, SigningSetupError) as exc:
        raise VetError(str(exc)) from exc
    links = [link_result(p, f, options.profile, policy, model) for p, f, model in hub.links]
    links.extend(_hub_indexes(hub, options.profile, policy))
    if not jobs and not plan.ready and not links and not errors:
        raise VetError("nothing to scan: no file was found")
    read = Options(
        profile=Profile(options.profile),
        deep=options.deep,
        policy=None,
        sha256=sha256,
        checksums=checksums,
        chunk_size=options.chunk_size,
    )
    workers = options.jobs if options.jobs > 0 else (os.cpu_count() or 1)
    started = time.perf_counter()
    results = plan.merge(_read_all(jobs, read, options, workers, progress, progress_mode))
    results = links + results
    # judge
    attach(results, {**hub.others, **plan.others}, policy)
    results = one_entry_per_path(signing.finish(results, read, sha256=options.every_sha256))
    _judge_pending(results, policy)  # until the judge stage (branch `targets`) does
    _hub_revisions(results, hub)
    for line in signing.notes():
        note(line)
    return Vetted(
        results=results,
        errors=errors,
        policies=policies,
        notes=notes,
        seconds=time.perf_counter() - started,
        exit_code=exit_status(results, errors, options.fail_on),
        profile=options.profile,
    )


# --- until the judge stage (branch `targets`) applies the policy once: the
# signatures stage's raw findings (FileResult.pending) get the policy here.
def _judge_pending(results: list[FileResult], policy: Policy | None) -> None:
    for result in results:
        if result.pending:
            result.items.extend(apply_policy(result.pending, policy))
            result.pending = []
            if result.policy is None and policy is not None:
                result.policy = policy.source


# --- end


def _read_all(  # noqa: PLR0917 - one private call site
    jobs: list[Job], read: Options, options: VetOptions, workers: int, progress: Progress | None, mode: str
) -> list[FileResult]:
    """The one read of every job: through the cache, a cluster or a time
    limit when one is asked for, else the local worker pool."""
    if options.cache or options.cluster or options.client is not None or options.timeout_per_file is not None:
        settings = runner.Settings(
            workers,
            options.cache,
            options.cluster,
            options.timeout_per_file,
            progress="never" if progress is None else mode,
            client=options.client,
        )

        @contextlib.contextmanager
        def bar(_mode: str, total: int, files: int) -> Iterator[Callable[[int], None] | None]:
            if progress is None:
                yield None
                return
            with progress(total, files) as (advance, _done):
                yield advance

        try:
            return runner.run(jobs, read, settings, bar=bar)
        except runner.ScaleError as exc:
            raise VetError(str(exc)) from exc
    if progress is None:
        return run_jobs(jobs, read, workers=workers)
    with progress(total_size(jobs), len(jobs)) as (advance, done):
        return run_jobs(jobs, read, workers=workers, progress=advance, on_file=done)
