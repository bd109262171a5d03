# Strategy: `stcheck scan`, the command for vetting untrusted downloads.
# Argument handling, policy loading and output live here; discovery, the
# worker pool and the per-file work live in _scan.py, the formats in
# _report_formats.py.  The progress bar (rich, optional) is drawn only when
# stderr is a terminal, so piped and CI output stays clean.  numpy is
# imported only by the deep checks, inside the workers.
#
# Exit codes: 0 no unsuppressed finding at error severity (after the
# policy's overrides); 1 at least one such finding (or a warning, with
# --fail-on warning); 2 a usage error, a bad policy or checksum list, or an
# unreadable file.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH123
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from typing import TYPE_CHECKING

from validator._errors import SourceError
from validator._rules import Profile, Severity
from validator.cli.main import EXIT_ERROR, EXIT_INVALID, EXIT_OK
from validator.scan import runner as scale
from validator.scan.engine import (
    DEFAULT_CHUNK,
    Job,
    Options,
    default_hf_cache,
    hf_cache_jobs,
    iter_paths,
    run_jobs,
    stderr_is_tty,
    total_size,
)
from validator.scan.formats import FORMATS, render
from validator.scan.integrity import normalise_sha256, read_checksums
from validator.scan.policy import PolicyError, find_pyproject_policy, load_policy

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from contextlib import AbstractContextManager

    from validator.scan.engine import FileResult


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "scan",
        help="vet downloads: validate, deep-check contents, verify checksums, apply a policy",
        description="Scan files and directories, recursively and in parallel, for invalid or suspicious files.",
        epilog="Exit codes: 0 clean, 1 findings at error severity, 2 usage or I/O error.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or directories (searched for *.safetensors)")
    p.add_argument(
        "--hf-cache",
        nargs="?",
        const="",
        default=None,
        metavar="DIR",
        help="scan a Hugging Face hub cache (default: $HF_HUB_CACHE or ~/.cache/huggingface/hub) and verify every blob",
    )
    p.add_argument(
        "--deep", action="store_true", help="stream tensor contents: NaN/Inf, all-zero, embedded payloads, names"
    )
    p.add_argument("--sha256", metavar="HEX", help="expected sha256 of the file (one file only)")
    p.add_argument("--checksums", metavar="FILE", help="expected digests in sha256sum format")
    p.add_argument(
        "--policy", metavar="FILE.toml", help="policy file (default: [tool.stcheck] of the nearest pyproject.toml)"
    )
    p.add_argument("--no-config", action="store_true", help="ignore pyproject.toml")
    p.add_argument("--profile", choices=[p.value for p in Profile], default="strict")
    p.add_argument("--format", choices=FORMATS, default="text", help="report format on stdout (default text)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--sarif", metavar="FILE", help="also write a SARIF 2.1.0 report to FILE")
    p.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report to FILE")
    p.add_argument(
        "--fail-on", choices=["error", "warning", "never"], default="error", help="what makes the exit code 1"
    )
    p.add_argument("--no-warnings", action="store_true", help="leave warnings out of the text report")
    p.add_argument("--jobs", "-j", type=int, default=0, metavar="N", help="worker processes (default: CPU count)")
    scale.add_arguments(p)  # --cache, --cluster, --timeout-per-file
    p.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK, metavar="BYTES", help=argparse.SUPPRESS)
    p.add_argument(
        "--progress",
        choices=["auto", "always", "never"],
        default="auto",
        help="progress bar on stderr (auto: on a terminal)",
    )
    p.set_defaults(run=run_scan)


def _fail(message: str) -> int:
    sys.stderr.write(f"stcheck scan: {message}\n")
    return EXIT_ERROR


def want_progress(mode: str) -> bool:
    """Whether to draw a progress bar: on a terminal, and only if rich is there."""
    if mode == "never" or (mode == "auto" and not stderr_is_tty()):
        return False
    try:
        import rich.progress  # noqa: F401, PLC0415 - rich is optional, drawn only on a terminal
    except ImportError:
        return False
    return True


class _NoBar:
    def __enter__(self) -> Callable[[int], None] | None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class _RichBar:
    def __init__(self, total: int, files: int) -> None:
        from rich.console import Console  # noqa: PLC0415 - rich is optional and drawn only on a terminal
        from rich.progress import (  # noqa: PLC0415 - rich is optional and drawn only on a terminal
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self.progress = Progress(
            TextColumn(f"scanning {files} file{'s' if files != 1 else ''}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(file=sys.stderr),
            transient=True,
        )
        self.total = total
        self.files = files

    def __enter__(self) -> Callable[[int], None]:
        self.progress.__enter__()
        task = self.progress.add_task("scan", total=self.total or 1)
        return lambda n: self.progress.advance(task, n)

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)


def progress_bar(mode: str, total: int, files: int) -> AbstractContextManager[Callable[[int], None] | None]:
    """A context manager giving an advance(bytes) callback, or None."""
    return _RichBar(total, files) if want_progress(mode) else _NoBar()


def _jobs(args: argparse.Namespace, errors: list[str]) -> Iterator[Job]:
    if args.hf_cache is not None:
        yield from hf_cache_jobs(args.hf_cache or default_hf_cache(), errors)
    for path in iter_paths(args.paths, errors):
        yield Job(path, ((path, None),))


def run_scan(args: argparse.Namespace) -> int:
    if not args.paths and args.hf_cache is None:
        return _fail("give at least one PATH, or --hf-cache")
    if args.chunk_size < 4096:
        return _fail("--chunk-size must be at least 4096")
    if args.deep and importlib.util.find_spec("numpy") is None:
        return _fail("--deep needs numpy: pip install 'stcheck[scan]'")
    try:
        policy = load_policy(args.policy) if args.policy else (None if args.no_config else find_pyproject_policy())
        checksums = read_checksums(args.checksums) if args.checksums else None
        sha256 = normalise_sha256(args.sha256) if args.sha256 else None
    except (PolicyError, SourceError, ValueError) as exc:
        return _fail(str(exc))
    errors: list[str] = []
    jobs = list(_jobs(args, errors))
    if sha256 is not None and len(jobs) != 1:
        return _fail(f"--sha256 names the digest of one file, but {len(jobs)} files were found; use --checksums")
    options = Options(
        profile=Profile(args.profile),
        deep=args.deep,
        policy=policy,
        sha256=sha256,
        checksums=checksums,
        chunk_size=args.chunk_size,
    )
    workers = args.jobs if args.jobs > 0 else (os.cpu_count() or 1)
    started = time.perf_counter()
    if scale.wanted(args):
        try:
            results = scale.run_from_args(args, jobs, options, workers, progress_bar)
        except scale.ScaleError as exc:
            return _fail(str(exc))
    else:
        with progress_bar(args.progress, total_size(jobs), len(jobs)) as advance:
            results = run_jobs(jobs, options, workers=workers, progress=advance)
    seconds = time.perf_counter() - started
    policy_name = None if policy is None else policy.source
    text = render(
        args.format, results, errors, seconds, profile=args.profile, policy=policy_name, warnings=not args.no_warnings
    )
    try:
        if args.output:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            sys.stdout.write(text)
        for fmt, target in (("sarif", args.sarif), ("junit", args.junit)):
            if target:
                with open(target, "w", encoding="utf-8") as fh:
                    fh.write(render(fmt, results, errors, seconds, profile=args.profile, policy=policy_name))
    except OSError as exc:
        return _fail(f"cannot write the report: {exc.strerror or exc}")
    for message in errors:
        sys.stderr.write(f"stcheck: {message}\n")
    return exit_code(results, errors, args.fail_on)


def exit_code(results: list[FileResult], errors: list[str], fail_on: str) -> int:
    """0 clean, 1 failing findings, 2 unreadable input."""
    if errors or any(r.error is not None for r in results):
        return EXIT_ERROR
    if fail_on == "never":
        return EXIT_OK
    failing = {Severity.ERROR} if fail_on == "error" else {Severity.ERROR, Severity.WARNING}
    if any(i.severity in failing for r in results for i in r.active):
        return EXIT_INVALID
    return EXIT_OK
