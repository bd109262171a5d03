# Strategy: `stcheck scan`, the command for vetting untrusted downloads.
# Argument handling, policy discovery and output live here; discovery of
# files, the worker pool and the per-file work live in scan/engine.py, the
# formats in scan/formats.py.  The progress bar (rich, optional) is drawn
# only when stderr is a terminal; with --progress always and stderr not a
# terminal (a CI log), a plain progress line is written every few seconds
# instead.  numpy is imported only by the deep checks, inside the workers.
#
# Exit codes: 0 no unsuppressed finding at error severity (after the
# policy's overrides); 1 at least one such finding (or a warning, with
# --fail-on warning); 2 a usage error, a bad policy or checksum list, an
# unreadable file, or nothing to scan at all (an empty directory, a
# mistyped path): a scan that did no work never passes.
# Paths are str, handled with os.path as in the rest of the package.
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from validator._display import escape_line, plural
from validator._errors import SourceError
from validator._install import install_hint
from validator._rules import Profile
from validator.cli import signed
from validator.cli.report import (
    add_output_options,
    add_policy_options,
    add_profile_option,
    exit_code,
    fail,
    resolve_policy,
    write_reports,
)
from validator.cli.targets import STDIN, add_remote_options, index_result, scan_plan
from validator.scan import runner as scale
from validator.scan.engine import (
    DEFAULT_CHUNK,
    HubWalk,
    Job,
    Options,
    default_hf_cache,
    hf_cache_walk,
    run_jobs,
    stderr_is_tty,
    total_size,
)
from validator.scan.format_common import human
from validator.scan.integrity import Checksums, normalise_sha256, read_checksums
from validator.scan.oms import SigningSetupError
from validator.scan.policy import Policy, PolicyError
from validator.scan.progress import rich_progress
from validator.scan.verdicts import attach, link_result

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from validator.scan.results import FileResult

_Callbacks = tuple["Callable[[int], None] | None", "Callable[[], None] | None"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "scan",
        help="vet downloads: validate, deep-check contents, verify checksums, apply a policy",
        description=(
            "Scan files and directories, recursively and in parallel, for invalid or suspicious files: what "
            "`stcheck check` does, plus the tensor data (--deep), digests (--sha256, --checksums, --hf-cache) and "
            "a hub cache.  The same formats, policy and exit codes as `stcheck check`.  Without --policy, the "
            "[tool.stcheck] table of the nearest pyproject.toml from the working directory upward applies, never "
            "one inside a scanned path: configuration comes from the user, not the download."
        ),
        epilog=(
            "Exit codes: 0 no finding at error severity (after the policy; --fail-on sets which findings count), "
            "1 at least one, 2 usage or I/O error (also: nothing to scan)."
        ),
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="files or directories (every file below is judged; links followed), http(s):// or hf:// sources "
        "(header only), or - for standard input (header only)",
    )
    p.add_argument(
        "--hf-cache",
        nargs="?",
        const="",
        default=None,
        metavar="DIR",
        help="scan a Hugging Face hub cache, or one models--org--name folder of it "
        "(default: $HF_HUB_CACHE or ~/.cache/huggingface/hub), verify every blob, report interrupted downloads",
    )
    p.add_argument(
        "--deep", action="store_true", help="stream tensor contents: NaN/Inf, all-zero, embedded payloads, names"
    )
    p.add_argument("--sha256", metavar="HEX", help="expected sha256 of the file (one file only)")
    p.add_argument(
        "--checksums",
        metavar="FILE",
        help="expected digests in sha256sum format; a relative name is looked up in FILE's own folder (where "
        "SHA256SUMS usually sits), then in the working directory; a listed file that is missing fails",
    )
    add_profile_option(p)
    add_output_options(p, bom=True)
    add_policy_options(p)
    p.add_argument("--jobs", "-j", type=int, default=0, metavar="N", help="worker processes (default 0: one per CPU)")
    scale.add_arguments(p)  # --cache, --cluster, --timeout-per-file
    p.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK, metavar="BYTES", help=argparse.SUPPRESS)
    p.add_argument(
        "--progress",
        choices=["auto", "always", "never"],
        default="auto",
        help="progress on stderr: auto, a bar on a terminal; always, also a line every few seconds in a log "
        "(default auto; never with --quiet)",
    )
    add_remote_options(p)  # remote/checkpoint hook (validator.cli.targets)
    signed.add_arguments(p)  # --public-key, --certificate-chain, --signature, --identity (validator.cli.signed)
    p.add_argument("--progress-interval", type=float, default=5.0, help=argparse.SUPPRESS)
    p.set_defaults(run=run_scan)


def _fail(message: str) -> int:
    return fail("scan", message)


def want_progress(mode: str) -> bool:
    """Whether to draw a progress bar: on a terminal, and only if rich is there."""
    if mode == "never" or (mode == "auto" and not stderr_is_tty()):
        return False
    try:
        import rich.progress  # noqa: F401, PLC0415 - rich is optional, drawn only on a terminal
    except ImportError:
        return False
    return True


class _RichBar:
    def __init__(self, total: int, files: int) -> None:
        self.progress = rich_progress(f"scanning {plural(files, 'file')}")
        self.total = total

    def __enter__(self) -> _Callbacks:
        self.progress.__enter__()
        task = self.progress.add_task("scan", total=self.total or 1)
        return (lambda n: self.progress.advance(task, n)), None

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)


class LineProgress:
    """A progress line on stderr every ``interval`` seconds, and one at the
    end: what a CI log can show where a bar cannot be drawn."""

    def __init__(self, total: int, files: int, interval: float) -> None:
        self.total = total
        self.files = files
        self.interval = interval
        self.bytes = 0
        self.done = 0
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def line(self) -> str:
        with self._lock:
            done, seen = self.done, self.bytes
        elapsed = time.monotonic() - self.started
        share = f" ({100 * seen / self.total:.0f}%)" if self.total else ""
        rate = human(seen / elapsed) + "/s" if elapsed > 0 else "-"
        return (
            f"stcheck scan: {done}/{plural(self.files, 'file')}, {human(seen)} of {human(self.total)}{share}, "
            f"{rate}, {elapsed:.0f} s"
        )

    def _advance(self, n: int) -> None:
        with self._lock:
            self.bytes += n

    def _file_done(self) -> None:
        with self._lock:
            self.done += 1

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            sys.stderr.write(self.line() + "\n")
            sys.stderr.flush()

    def __enter__(self) -> _Callbacks:
        self._thread.start()
        return self._advance, self._file_done

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        sys.stderr.write(self.line() + "\n")
        sys.stderr.flush()


def progress_reporter(
    mode: str, total: int, files: int, interval: float = 5.0
) -> contextlib.AbstractContextManager[_Callbacks]:
    """A context manager giving (advance(bytes), file_done()) callbacks, or Nones."""
    if want_progress(mode) and stderr_is_tty():
        return _RichBar(total, files)
    if mode == "always":
        return LineProgress(total, files, interval)
    return contextlib.nullcontext((None, None))


@contextlib.contextmanager
def _bar(mode: str, total: int, files: int) -> Iterator[Callable[[int], None] | None]:
    """The byte-count callback alone, for the cache and cluster runner."""
    with progress_reporter(mode, total, files) as (advance, _done):
        yield advance


def _hf_jobs(args: argparse.Namespace, errors: list[str], policy: Policy | None) -> HubWalk:
    if args.hf_cache is None:
        return HubWalk()
    cache = args.hf_cache or default_hf_cache()
    found = hf_cache_walk(cache, errors)
    found.jobs = [replace(job, policy=policy) for job in found.jobs]
    return found


_HUB_KINDS = ("models--", "datasets--", "spaces--")


def hub_context(results: list[FileResult], hub: HubWalk) -> None:
    """Give each hub-cache result the revision of its snapshot (its path is
    ``.../models--org--name/snapshots/REVISION/...``; its model is the repository)."""
    if not hub.jobs and not hub.links:
        return
    for result in results:
        if result.model is None:
            continue
        parts = Path(result.path).parts
        for k in range(len(parts) - 3, -1, -1):
            if parts[k].startswith(_HUB_KINDS) and parts[k + 1] == "snapshots":
                result.revision = parts[k + 2]
                break


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


def _missing_listed(checksums: Checksums | None) -> list[Job]:
    """A job for every file the checksum list names that is not on disk."""
    if checksums is None:
        return []
    return [Job(name, ((name, None),), kind="missing", listed_by=where) for name, where in checksums.missing]


def run_scan(args: argparse.Namespace) -> int:  # noqa: C901, PLR0912 - one branch per option and exit code
    if not args.paths and args.hf_cache is None:
        return _fail("give at least one PATH, or --hf-cache")
    if args.chunk_size < 4096:
        return _fail("--chunk-size must be at least 4096")
    if STDIN in args.paths and (args.deep or args.sha256 or args.checksums or args.paths.count(STDIN) > 1):
        return _fail("- (standard input, once) is checked from its header only: --deep and digests need a file")
    if args.deep and importlib.util.find_spec("numpy") is None:
        return _fail(f"--deep needs numpy: {install_hint('scan')}")
    if args.format == "cyclonedx" and importlib.util.find_spec("cyclonedx") is None:
        return _fail(f"--format cyclonedx needs cyclonedx-python-lib: {install_hint('sbom')}")
    if args.quiet:
        args.progress = "never" if args.progress == "auto" else args.progress
    errors: list[str] = []
    try:
        policy, policies = resolve_policy(
            args, [*args.paths, *([args.hf_cache or default_hf_cache()] if args.hf_cache is not None else [])], "scan"
        )
        checksums = read_checksums(args.checksums) if args.checksums else None
        sha256 = normalise_sha256(args.sha256) if args.sha256 else None
        # Hook (validator.cli.targets): indexes, directories holding them, and remote sources.
        # The checksum list cannot list itself: it is judged, not verified.
        own = frozenset({os.path.realpath(args.checksums)} if args.checksums else ())
        # Signatures are verified (and compared with a hub's listing) before any file is read.
        signing = signed.Signing.from_args(args)
        signing.verify_sources(args.paths, args, hf_cache=args.hf_cache is not None)
        plan = scan_plan(args.paths, args.profile, policy, errors, args, not_read=own)
        hub = _hf_jobs(args, errors, policy)
    except (PolicyError, SourceError, ValueError, SigningSetupError) as exc:
        return _fail(str(exc))
    jobs = hub.jobs + [
        Job(path, ((path, None),), policy=policy, validate=path not in plan.others) for path in plan.paths
    ]
    if sha256 is not None and len(jobs) != 1:
        return _fail(
            f"--sha256 names the digest of one file, but {plural(len(jobs), 'file')} were found; use --checksums"
        )
    # The plan's own files come last: plan.merge finds their results there.
    missing = _missing_listed(checksums)
    cut = len(jobs) - len(plan.paths)
    jobs[cut:cut] = missing
    try:
        jobs = signing.annotate(jobs, hub)  # each signed file's digests, computed in its one read
    except (ValueError, SigningSetupError) as exc:
        return _fail(str(exc))
    links = [link_result(p, f, args.profile, policy, model) for p, f, model in hub.links]
    links.extend(_hub_indexes(hub, args.profile, policy))
    if not jobs and not plan.ready and not links and not errors:
        return _fail("nothing to scan: no file was found")
    options = Options(
        profile=Profile(args.profile),
        deep=args.deep,
        policy=None,
        sha256=sha256,
        checksums=checksums,
        chunk_size=args.chunk_size,
    )
    workers = args.jobs if args.jobs > 0 else (os.cpu_count() or 1)
    started = time.perf_counter()
    if scale.wanted(args):
        try:
            results = plan.merge(scale.run_from_args(args, jobs, options, workers, _bar))
        except scale.ScaleError as exc:
            return _fail(str(exc))
    else:
        with progress_reporter(args.progress, total_size(jobs), len(jobs), args.progress_interval) as (advance, done):
            results = plan.merge(run_jobs(jobs, options, workers=workers, progress=advance, on_file=done))
    results = links + results
    attach(results, {**hub.others, **plan.others}, policy)
    results = signing.finish(results, options, policy)
    hub_context(results, hub)
    problem = write_reports(
        args,
        results,
        errors,
        time.perf_counter() - started,
        command="scan",
        policies=policies,
        models=signing.models(results) if args.format == "cyclonedx" else None,
    )
    for note in signing.notes():
        sys.stderr.write(escape_line(f"stcheck scan: {note}") + "\n")
    for message in [*errors, *(r.error for r in results if r.error is not None)]:
        sys.stderr.write(escape_line(f"stcheck: {message}") + "\n")
    if problem is not None:
        return _fail(problem)
    return exit_code(results, errors, args.fail_on)
