# Strategy: `vet`, the one run from arguments to a verdict, which
# `stcheck scan` and the library call both go through, so they cannot
# disagree.  The stages, in order:
#   1. plan: the policy in force (validator.config.resolve); every argument,
#      and a hub cache, resolved into numbered targets (validator.sources),
#      each planned by validator.pipeline.plan into results it finishes
#      itself and jobs for the read; signatures are verified before any file
#      is read (pipeline.signatures), and each signed file's digests are added
#      to its job;
#   2. read: the one read of each file (format, deep checks, digests) in a
#      worker pool, a Dask cluster or through the results cache
#      (pipeline.runner); its results are grouped by their target's
#      ordinal, and each target's verdicts (another file's kind, a link's
#      finding) taken into them (pipeline.verdicts);
#   3. signatures: the digests compared with each signature (pipeline.signatures);
#   4. judge: the policy applied once (pipeline.judge), the exit status computed.
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
from validator.config.policy import PolicyError
from validator.config.resolve import passed_over_note, resolve_policy
from validator.config.settings import Network
from validator.io.names import hub_snapshot
from validator.pipeline import runner
from validator.pipeline.engine import DEFAULT_CHUNK, Job, Options, run_jobs, total_size
from validator.pipeline.hubcache import HubWalk, default_hf_cache
from validator.pipeline.judge import judge
from validator.pipeline.plan import Planned, plan_target, results_of
from validator.pipeline.signatures import Signatures, arguments
from validator.pipeline.verdicts import take_verdicts
from validator.read.integrity import normalise_sha256, read_checksums
from validator.report.results import FailOn, exit_status
from validator.signing.base import SigningSetupError
from validator.sources.schemes import STDIN, is_remote
from validator.sources.targets import resolve

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence
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
    policy, checksum list, key or cache, or nothing to vet at all.

    Its message names VetOptions' own fields (``chunk_size``); ``worded``
    gives it in another spelling of them (`stcheck scan`'s flags)."""

    def __init__(self, message: str, *, template: str = "", fields: tuple[str, ...] = (), subject: str = "") -> None:
        super().__init__(message)
        self.template = template or message
        self.fields = fields
        self.subject = subject

    @classmethod
    def naming(cls, template: str, *fields: str, subject: str = "") -> VetError:
        """An error whose ``template`` names each of ``fields`` as ``{field}``,
        after ``subject`` (a path, never reworded) when one is given."""
        error = cls("", template=template, fields=fields, subject=subject)
        error.args = (error.worded({}),)
        return error

    def worded(self, names: Mapping[str, str]) -> str:
        """The message with each field it names spelt as ``names`` spells it."""
        message = self.template
        for name in self.fields:
            message = message.replace("{" + name + "}", names.get(name, name))
        return f"{self.subject}: {message}" if self.subject else message


@dataclass(frozen=True)
class VetOptions:
    """What `stcheck scan` takes, as one value (the same names as its options)."""

    profile: str = "strict"
    deep: bool = False
    policy: str | Policy | None = None  # a policy file or a Policy; None: the user's pyproject.toml
    no_config: bool = False
    select: Sequence[str] = ()
    ignore: Sequence[str] = ()
    fail_on: FailOn = "error"
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
        raise VetError.naming("give at least one path, or {hf_cache}", "hf_cache")
    if options.chunk_size < 4096:
        raise VetError.naming("{chunk_size} must be at least 4096", "chunk_size")
    if options.profile not in {p.value for p in Profile}:
        raise VetError(f"unknown profile {options.profile!r}: strict or reference")
    if options.fail_on not in {"error", "warning", "never"}:
        raise VetError(f"unknown fail_on {options.fail_on!r}: error, warning or never")
    if STDIN in paths and (options.deep or options.sha256 or options.checksums or list(paths).count(STDIN) > 1):
        raise VetError.naming(
            "- (standard input, once) is checked from its header only: {deep} and digests need a file", "deep"
        )
    # A remote source is read from its header by range requests, as stdin is from its pipe (spec: Remote sources).
    remote = next((p for p in paths if is_remote(p)), None)
    if remote is not None and (options.deep or options.sha256 or options.checksums):
        raise VetError.naming(
            "a remote source is checked from its header only (by range requests): {deep} and digests need a file; "
            "stcheck download reads it whole",
            "deep",
            subject=remote,
        )
    if options.deep and importlib.util.find_spec("numpy") is None:
        raise VetError.naming("{deep} needs numpy: " + install_hint("scan"), "deep")
    if options.timeout_per_file is not None and not options.timeout_per_file > 0:
        raise VetError.naming("{timeout_per_file} must be a positive number of seconds", "timeout_per_file")


def _hub_revisions(results: list[FileResult]) -> None:
    """Give each hub-cache result the revision of its snapshot."""
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
    hf_cache = None if options.hf_cache is None else options.hf_cache or default_hf_cache()
    try:
        policy, policies = resolve_policy(
            [*paths, *([hf_cache] if hf_cache is not None else [])],
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
        signing.verify_sources(arguments(paths), options.network, hf_cache=hf_cache is not None)
        paths = signing.pinned(paths)  # an hf:// folder is read at the commit its signature was compared with
        planned = _plan(paths, hf_cache, options, policy, errors, own)
    except (PolicyError, SourceError, ValueError, SigningSetupError) as exc:
        raise VetError(str(exc)) from exc
    jobs = [job for p in planned for job in p.jobs]
    if sha256 is not None and len(jobs) != 1:
        msg = f"{{sha256}} names the digest of one file, but {plural(len(jobs), 'file')} were found; use {{checksums}}"
        raise VetError.naming(msg, "sha256", "checksums")
    missing = _missing_listed(checksums)
    # Each job's target, by ordinal; a listed file not on disk comes after every target.
    ordinals = [p.ordinal for p in planned for _ in p.jobs] + [len(planned)] * len(missing)
    jobs += missing
    hub = next((p.hub for p in planned if p.hub is not None), HubWalk())
    try:
        jobs = signing.with_digests(jobs, hub, sha256=options.every_sha256)  # digests computed in the one read
    except (ValueError, SigningSetupError) as exc:
        raise VetError(str(exc)) from exc
    finished = [results_of(p, options.profile, policy) for p in planned]
    if not jobs and not any(finished) and not errors:
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
    # read
    by_target = _by_target(jobs, ordinals, _read_all(jobs, read, options, workers, progress, progress_mode))
    results: list[FileResult] = []
    for p, done in zip(planned, finished, strict=True):
        results += take_verdicts([*done, *by_target.pop(p.ordinal, [])], p.verdicts, p.via)
    results += by_target.pop(len(planned), [])
    # signatures
    results = signing.finish(results, read, sha256=options.every_sha256)
    # judge
    judge(results, policy)
    _hub_revisions(results)
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


def _plan(  # noqa: PLR0917 - one private call site
    paths: Sequence[str],
    hf_cache: str | None,
    options: VetOptions,
    policy: Policy | None,
    errors: list[str],
    not_read: frozenset[str],
) -> list[Planned]:
    """Every target planned for a scan; one that cannot be read goes to ``errors``."""
    planned = []
    for target in resolve(paths, errors, hf_cache=hf_cache):
        try:
            p = plan_target(target, "scan", options.profile, policy, options.network, not_read=not_read)
        except SourceError as exc:
            errors.append(str(exc))
            continue
        errors.extend(p.errors)
        planned.append(p)
    return planned


def _by_target(
    jobs: Sequence[Job], ordinals: Sequence[int], results: Sequence[FileResult]
) -> dict[int, list[FileResult]]:
    """The read's results grouped by their job's target, in job order (a job
    gives one result per name it is reported under)."""
    grouped: dict[int, list[FileResult]] = {}
    at = 0
    for job, ordinal in zip(jobs, ordinals, strict=True):
        grouped.setdefault(ordinal, []).extend(results[at : at + len(job.names)])
        at += len(job.names)
    if at != len(results):
        msg = f"the read gave {len(results)} results for {at} names"
        raise AssertionError(msg)
    return grouped


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
