# Strategy: one file's scan under a time limit (--timeout-per-file), shared
# by the local runner and the Dask workers.  The scan runs in a thread and is
# abandoned at the deadline; it stops at its next chunk (its progress
# callback raises), or stays parked in the read that hung, holding no CPU.
# The file then gets a scan-timeout finding instead of a result.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH116
from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

from validator._errors import StcheckError
from validator._findings import Finding
from validator._rules import BY_SLUG
from validator.pipeline.engine import job_options, scan_file
from validator.pipeline.judge import unjudged
from validator.report.results import FileResult

if TYPE_CHECKING:
    from collections.abc import Callable

    from validator.pipeline.engine import Job, Options

__all__ = ["ScaleError", "timed_scan", "timeout_result"]


class ScaleError(StcheckError):
    """A cache or cluster problem that stops the scan (exit code 2)."""


class _Abandoned(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised inside a scan that ran past its deadline, to stop it."""


def timeout_result(job: Job, options: Options, seconds: float) -> FileResult:
    """The result of a file whose scan did not finish in time."""
    options = job_options(job, options)
    display, model = job.names[0]
    try:
        size: int | None = os.stat(job.path).st_size
    except OSError:
        size = None
    finding = Finding(
        BY_SLUG["scan-timeout"],
        f"the scan did not finish within {seconds:g} s (--timeout-per-file); the file was not vetted",
    )
    return FileResult(
        path=display,
        model=model,
        kind="safetensors" if job.validate else "blob",
        file_size=size,
        profile=options.profile.value,
        items=unjudged([finding]),
        policy=None if options.policy is None else options.policy.source,
        seconds=seconds,
    )


def timed_scan(
    job: Job, options: Options, progress: Callable[[int], None] | None = None, *, timeout: float | None = None
) -> FileResult:
    """scan_file under a time limit (None: no limit)."""
    if timeout is None:
        return scan_file(job, options, progress)
    abandoned = threading.Event()
    box: list[FileResult | BaseException] = []

    def tick(n: int) -> None:
        if abandoned.is_set():
            raise _Abandoned
        if progress is not None:
            progress(n)

    def work() -> None:
        try:
            box.append(scan_file(job, options, tick))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, which re-raises it
            box.append(exc)

    thread = threading.Thread(target=work, name=f"stcheck-scan {job.path}", daemon=True)
    thread.start()
    thread.join(timeout)
    if not box:
        abandoned.set()
        return timeout_result(job, options, timeout)
    outcome = box[0]
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome
