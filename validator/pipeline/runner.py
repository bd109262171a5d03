# Strategy: `stcheck scan` at registry scale, between the command and the
# executors.  The command hands over its jobs; this module looks each one up
# in the results cache (--cache), sends the rest to a local process pool or
# to a Dask cluster (--cluster), stores each fresh result in the cache the
# moment it arrives, and returns the results in job order, so the report
# writers see the same list a plain local scan gives.  A per-file time limit
# (--timeout-per-file) wraps each file's scan: the scan runs in a thread and
# is abandoned at the deadline; it stops at its next chunk (its progress
# callback raises), or stays parked in the read that hung, holding no CPU.
# The file gets a scan-timeout finding instead of a result.
# Paths are str, handled with os.path as in the rest of the package.
from __future__ import annotations

import functools
import importlib.util
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from validator.pipeline.engine import Job, Options, expand, run_jobs, stderr_is_tty
from validator.pipeline.timed import ScaleError, timed_scan, timeout_result

__all__ = ["ScaleError", "Settings", "run", "timed_scan", "timeout_result"]

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from contextlib import AbstractContextManager

    from validator.pipeline.cache import Lookup
    from validator.report.results import FileResult

    BarFactory = Callable[[str, int, int], AbstractContextManager[Callable[[int], None] | None]]


@dataclass
class Settings:
    """How a scaled scan runs."""

    workers: int = 1
    cache: str | None = None
    cluster: str | None = None
    timeout: float | None = None
    progress: str = "never"  # --progress: auto, always or never
    client: Any = None  # a distributed.Client to run on (the Python API)


def want_bar(mode: str) -> bool:
    """Whether a progress bar is drawn (as for a local scan: on a terminal, with rich)."""
    if mode == "never" or (mode == "auto" and not stderr_is_tty()):
        return False
    return importlib.util.find_spec("rich") is not None


def run(
    jobs: Sequence[Job], options: Options, settings: Settings, *, bar: BarFactory | None = None
) -> list[FileResult]:
    """Scan the jobs through the cache and the chosen executor; job order.

    One FileResult per name of each job, as ``run_jobs`` returns them."""
    from validator.pipeline.cache import CacheError, Lookup, local_identity, open_cache  # noqa: PLC0415 - sqlite3 loads only with --cache

    if settings.cluster is not None:
        from validator.pipeline.cluster import parse_address  # noqa: PLC0415 - dask loads only with --cluster

        parse_address(settings.cluster)  # a malformed address fails before the cache is touched
    per_job: list[FileResult | None] = [None] * len(jobs)
    lookup: Lookup | None = None
    try:
        cache = None if settings.cache is None else open_cache(settings.cache)
    except CacheError as exc:
        raise ScaleError(str(exc)) from exc
    try:
        if cache is not None:
            identities = [None if "://" in job.path else local_identity(job.path) for job in jobs]
            remote_workers = settings.client is not None or settings.cluster is not None
            lookup = Lookup(cache, jobs, options, identities, same_host=not remote_workers)
            for i, result in lookup.hits.items():
                per_job[i] = result
        todo = [i for i in range(len(jobs)) if per_job[i] is None]

        def done(k: int, result: FileResult) -> None:
            i = todo[k]
            per_job[i] = result
            if lookup is not None:
                lookup.record(i, result)

        _execute([jobs[i] for i in todo], options, settings, done, bar)
    except CacheError as exc:
        raise ScaleError(str(exc)) from exc
    finally:
        if cache is not None:
            cache.close()
    if lookup is not None:
        sys.stderr.write(
            f"stcheck: results cache {'' if cache is None else cache.url}: "
            f"{len(lookup.hits)} of {len(jobs)} files unchanged and not read again; {lookup.stored} stored"
            + (f"; {lookup.changed} not stored: changed while scanned" if lookup.changed else "")
            + "\n"
        )
    return [r for job, result in zip(jobs, per_job, strict=True) if result is not None for r in expand(job, result)]


def _execute(
    jobs: Sequence[Job],
    options: Options,
    settings: Settings,
    done: Callable[[int, FileResult], None],
    bar: BarFactory | None,
) -> None:
    if not jobs:
        return
    if settings.client is not None:
        from validator.pipeline.cluster import scan_with_client  # noqa: PLC0415 - dask loads only for a cluster scan

        scan_with_client(settings.client, jobs, options, on_result=done, timeout=settings.timeout)
        return
    if settings.cluster is not None:
        from validator.pipeline.cluster import scan_on  # noqa: PLC0415 - dask loads only with --cluster

        scan_on(
            settings.cluster,
            jobs,
            options,
            on_result=done,
            timeout=settings.timeout,
            progress=want_bar(settings.progress),
        )
        return
    from validator.pipeline.engine import total_size  # noqa: PLC0415 - kept beside its one use

    scan: Any = functools.partial(timed_scan, timeout=settings.timeout)
    if bar is None:
        run_jobs(jobs, options, workers=settings.workers, scan=scan, on_result=done)
        return
    with bar(settings.progress, total_size(jobs), len(jobs)) as advance:
        run_jobs(jobs, options, workers=settings.workers, progress=advance, scan=scan, on_result=done)
