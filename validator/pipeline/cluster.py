# Strategy: `stcheck scan --cluster` on Dask (dask.distributed).  The client
# process (the command) keeps discovery, the cache and the report writers;
# workers run the same per-file code as a local scan (`timed_scan`, which
# is `scan_file` under the optional time limit) and send back FileResults.
#
# Work is split per file.  Small files travel in batches (a task per file
# costs the scheduler about a millisecond, more than a header-only scan of a
# small file), sized so that there are several batches per worker for the
# work stealing to balance; a file of 64 MiB or more is a task of its own.
# A --deep scan of a very large file (two `split_bytes` or more, 1 GiB by
# default) is split by tensor range (validator/pipeline/ranges.py): a planning
# task reads the header, then the range tasks and one hashing task run in
# parallel, and the client merges them into the result a whole-file scan
# would give.  By default this happens only on a cluster of SPLIT_WORKERS
# workers or more: a whole-file scan already keeps two cores busy (the hash
# runs in a thread beside the deep checks), and a split file is read twice,
# so on fewer workers splitting costs more than it gains (measured in
# tests/benchmarks/README.md).
#
# Results are taken as they complete and handed to `on_result` (the cache
# stores each at once), then sorted back into job order by the caller.
# Faults:
#   - a worker that dies mid-task: the scheduler reruns its tasks on another
#     worker (distributed.scheduler.allowed-failures, 3 by default).  The
#     client consumes one result per task key and hands each job's result
#     on exactly once, so a rerun task neither loses nor doubles a file.  A
#     task whose workers die every time (a file that kills its scanner)
#     gives that file an error, "not vetted".
#   - a scheduler that goes away: the client's futures are cancelled; the
#     scan stops with ClusterError (exit 2) and the cache keeps what
#     finished, so the next run resumes.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH116
from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from concurrent.futures import CancelledError
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from validator.pipeline.ranges import HashPart, Plan, RangePart, failed, hash_file, merge, plan, scan_range
from validator.pipeline.timed import ScaleError, timed_scan
from validator.read.integrity import checksum_key
from validator.report.progress import rich_progress
from validator.report.results import FileResult

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from distributed import Client, Future

    from validator.pipeline.engine import Job, Options

__all__ = [
    "BATCH_BYTES",
    "BATCH_FILES",
    "CONNECT_TIMEOUT",
    "DEFAULT_SPLIT",
    "SPLIT_WORKERS",
    "WORKER_WAIT",
    "Address",
    "ClusterError",
    "batches",
    "connect",
    "parse_address",
    "scan_batch",
    "scan_on",
    "scan_with_client",
]

DEFAULT_SPLIT: Final = 1 << 30
SPLIT_WORKERS: Final = 4
BATCH_BYTES: Final = 64 << 20
BATCH_FILES: Final = 32
CONNECT_TIMEOUT: Final = 10.0
WORKER_WAIT: Final = 60.0


class ClusterError(ScaleError):
    """The cluster cannot be reached, has no workers, or went away."""


@dataclass(frozen=True)
class Address:
    """Where to run: a scheduler's address, or N local worker processes."""

    scheduler: str | None = None
    local_workers: int = 0


def parse_address(text: str) -> Address:
    """``tcp://HOST:PORT`` (also tls://, ws://, wss://, inproc://) or ``local:N``."""
    if text.startswith("local:"):
        count = text[len("local:") :]
        if not count.isdigit() or not 1 <= int(count) <= 1024:
            raise ClusterError(f"--cluster {text}: local:N needs a worker count N from 1 to 1024")
        return Address(local_workers=int(count))
    scheme, sep, rest = text.partition("://")
    if not sep or scheme not in {"tcp", "tls", "ws", "wss", "inproc", "ucx"} or not rest:
        raise ClusterError(f"--cluster {text}: expected tcp://HOST:PORT of a Dask scheduler, or local:N")
    return Address(scheduler=text)


def _import_distributed() -> Any:  # noqa: ANN401 - the distributed module, optional and untyped here
    try:
        import distributed  # noqa: PLC0415 - an optional dependency, loaded only for a cluster scan
    except ImportError:
        from validator.config.install import install_hint  # noqa: PLC0415 - only on this error path

        raise ClusterError(f"--cluster needs Dask: {install_hint('cluster')}") from None
    return distributed


@contextlib.contextmanager
def connect(address: Address) -> Iterator[Client]:
    """A Client for the address, closed (and a local cluster stopped) on exit."""
    distributed = _import_distributed()
    if address.local_workers:
        with (
            distributed.LocalCluster(
                n_workers=address.local_workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                silence_logs=logging.CRITICAL,
            ) as local,
            distributed.Client(local) as client,
        ):
            yield client
        return
    try:
        client = distributed.Client(address.scheduler, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler at {address.scheduler}: {exc}") from exc
    try:
        yield client
    finally:
        with contextlib.suppress(Exception):  # a scheduler that is gone cannot be told goodbye
            client.close(timeout=2)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Dask logs every lost worker and connection (its config gives each of
    its loggers a level of its own); the scan reports its own errors."""
    names = ["distributed", *(n for n in logging.root.manager.loggerDict if n.startswith("distributed."))]
    saved = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


def scan_on(
    cluster: str,
    jobs: Sequence[Job],
    options: Options,
    *,
    on_result: Callable[[int, FileResult], None] | None = None,
    timeout: float | None = None,
    progress: bool = False,
) -> list[FileResult]:
    """Scan on the cluster named by ``--cluster``; see scan_with_client."""
    address = parse_address(cluster)
    _import_distributed()  # first: importing it configures the loggers _quiet silences
    with _quiet(), connect(address) as client:
        return scan_with_client(
            client,
            jobs,
            options,
            on_result=on_result,
            timeout=timeout,
            progress=progress,
            name=address.scheduler or cluster,
        )


# -- worker tasks ------------------------------------------------------------


def scan_batch(jobs: Sequence[Job], options: Options, timeout: float | None) -> list[FileResult]:
    """A worker task: scan a few files one after another."""
    return [timed_scan(job, options, timeout=timeout) for job in jobs]


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _options_for(options: Options, jobs: Sequence[Job]) -> Options:
    # A checksum list can name millions of files; each task carries only
    # the lines of its own files.
    if not options.checksums:
        return options
    keys = {checksum_key(job.path) for job in jobs}
    return replace(options, checksums={k: v for k, v in options.checksums.items() if k in keys})


def batches(sizes: Sequence[int], workers: int, *, batch_bytes: int = BATCH_BYTES) -> list[list[int]]:
    """Group job indices, in order, into tasks: several per worker, each at
    most BATCH_FILES files and about batch_bytes bytes."""
    per_batch = max(1, min(BATCH_FILES, len(sizes) // max(1, 8 * workers)))
    groups: list[list[int]] = []
    current: list[int] = []
    held = 0
    for i, size in enumerate(sizes):
        if current and (len(current) >= per_batch or held + size > batch_bytes):
            groups.append(current)
            current, held = [], 0
        current.append(i)
        held += size
    if current:
        groups.append(current)
    return groups


# -- the client's loop -------------------------------------------------------


class _Bar:
    """The local scan's bar (bytes, throughput, time left) plus files and workers."""

    def __init__(self, total: int, files: int, client: Client) -> None:
        self.client = client
        self.files = files
        self.done = 0
        self.checked = 0.0
        self.progress = rich_progress("scanning {task.fields[count]} files", "{task.fields[workers]} workers")
        self.progress.start()
        self.task = self.progress.add_task("scan", total=total or 1, count=f"0/{files}", workers=self._workers())

    def _workers(self) -> int:
        try:
            return len(self.client.nthreads())  # type: ignore[no-untyped-call]
        except Exception:  # noqa: BLE001 - a count for the bar; never worth failing the scan over
            return 0

    def advance(self, nbytes: int, files: int) -> None:
        self.done += files
        fields: dict[str, Any] = {"count": f"{self.done}/{self.files}"}
        now = time.monotonic()
        if now - self.checked >= 1.0:
            self.checked = now
            fields["workers"] = self._workers()
        self.progress.update(self.task, advance=nbytes, **fields)

    def close(self) -> None:
        self.progress.stop()


@dataclass
class _Split:
    """A large file's split scan in progress."""

    plan: Plan | None = None
    parts: dict[int, RangePart] | None = None
    digest: HashPart | None = None
    waiting: int = 0


def scan_with_client(  # noqa: C901, PLR0912, PLR0915 - submit, retry on worker loss, cache and time out in one loop
    client: Client,
    jobs: Sequence[Job],
    options: Options,
    *,
    on_result: Callable[[int, FileResult], None] | None = None,
    timeout: float | None = None,
    progress: bool = False,
    split_bytes: int | None = None,
    name: str | None = None,
) -> list[FileResult]:
    """Scan the jobs on a Dask cluster through ``client``; job order.

    One FileResult per job (call ``engine.expand`` for one per name).
    ``on_result(index, result)`` sees each as it arrives; ``timeout`` is the
    per-file limit in seconds; ``split_bytes`` sets when and how a --deep
    scan of a large file is split by tensor range (None: DEFAULT_SPLIT on a
    cluster of SPLIT_WORKERS workers or more, else never).  Raises
    ClusterError when no worker joins or the scheduler goes away."""
    distributed = _import_distributed()
    where = name or str(getattr(client.scheduler, "address", "the client's scheduler"))
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"no Dask worker joined the scheduler at {where} within {WORKER_WAIT:g} s") from exc
    results: list[FileResult | None] = [None] * len(jobs)
    sizes = [_size(job.path) for job in jobs]
    token = uuid.uuid4().hex[:12]
    meta: dict[str, tuple[Any, ...]] = {}
    ac = distributed.as_completed()
    serial = 0

    def submit(kind: str, fn: Callable[..., Any], *args: object, info: tuple[Any, ...]) -> None:
        nonlocal serial
        serial += 1
        key = f"stcheck-{kind}-{token}-{serial}"
        meta[key] = (kind, *info)
        ac.add(client.submit(fn, *args, key=key, pure=False))

    workers = max(1, len(client.nthreads()))  # type: ignore[no-untyped-call]
    if split_bytes is None:
        split_bytes = DEFAULT_SPLIT if workers >= SPLIT_WORKERS else 1 << 62
    split = {i for i, job in enumerate(jobs) if options.deep and job.validate and sizes[i] >= 2 * split_bytes}
    whole = [i for i in range(len(jobs)) if i not in split]
    for group in batches([sizes[i] for i in whole], workers):
        indices = [whole[k] for k in group]
        batch = [jobs[i] for i in indices]
        submit("batch", scan_batch, batch, _options_for(options, batch), timeout, info=(indices,))
    splits: dict[int, _Split] = {}
    for i in sorted(split):
        splits[i] = _Split()
        submit("plan", plan, jobs[i], _options_for(options, [jobs[i]]), split_bytes, info=(i,))

    bar = _Bar(sum(sizes), len(jobs), client) if progress else None
    finished = 0

    def emit(i: int, result: FileResult) -> None:
        nonlocal finished
        if results[i] is not None:
            return  # a late part of a split file that already failed
        results[i] = result
        finished += 1
        splits.pop(i, None)
        if on_result is not None:
            on_result(i, result)
        if bar is not None:
            bar.advance(sizes[i], 1)

    try:
        for future in ac:
            kind, *info = meta.pop(future.key)
            outcome = _outcome(future, where, finished, len(jobs))
            future.release()
            if kind == "batch":
                (indices,) = info
                for k, i in enumerate(indices):
                    emit(i, outcome[k] if isinstance(outcome, list) else _lost(jobs[i], options, outcome))
                continue
            i = info[0]
            state = splits.get(i)
            if state is None:
                continue
            if isinstance(outcome, BaseException):
                emit(i, _lost(jobs[i], options, outcome))
            elif kind == "plan":
                if isinstance(outcome, FileResult):
                    emit(i, outcome)
                    continue
                state.plan, state.parts, state.waiting = outcome, {}, len(outcome.ranges) + 1
                own = _options_for(options, [jobs[i]])
                for r in range(len(outcome.ranges)):
                    submit("range", scan_range, jobs[i], own, outcome, r, info=(i, r))
                submit("hash", hash_file, jobs[i], own, info=(i,))
            else:
                if kind == "range" and state.parts is not None:
                    state.parts[info[1]] = outcome
                else:
                    state.digest = outcome
                state.waiting -= 1
                if state.waiting == 0 and state.plan is not None and state.parts is not None and state.digest:
                    parts = [state.parts[r] for r in range(len(state.plan.ranges))]
                    emit(i, merge(jobs[i], options, state.plan, parts, state.digest))
    finally:
        if bar is not None:
            bar.close()
    missing = [jobs[i].names[0][0] for i, r in enumerate(results) if r is None]
    if missing:
        raise ClusterError(f"the cluster returned no result for {len(missing)} files, such as {missing[0]}")
    return [r for r in results if r is not None]


def _outcome(future: Future[Any], where: str, finished: int, total: int) -> Any:  # noqa: ANN401 - whatever the task returned
    """A finished task's value, or the exception it ended with; raise
    ClusterError when the scheduler is gone: its futures are cancelled, or
    fetching a finished task's value fails on the closed connection
    (distributed's CommClosedError is an OSError; a task's own OSError is
    the "error" status, not a failed fetch)."""
    gone = ClusterError(
        f"the Dask scheduler at {where} went away after {finished} of {total} files; "
        "results already finished are kept in the --cache, and a re-run resumes from there"
    )
    if future.status == "cancelled":
        raise gone
    try:
        if future.status == "error":
            exc = future.exception()  # type: ignore[no-untyped-call]
            return exc if isinstance(exc, BaseException) else RuntimeError(str(exc))
        return future.result()
    except (OSError, CancelledError) as lost:
        raise gone from lost


def _lost(job: Job, options: Options, exc: BaseException) -> FileResult:
    """The result of a file whose task failed on the cluster."""
    if type(exc).__name__ == "KilledWorker":
        display, model = job.names[0]
        return FileResult(
            path=display,
            model=model,
            profile=options.profile.value,
            error=f"{display}: every worker that scanned it died (killed, or out of memory); not vetted",
        )
    return failed(job, options, exc)
