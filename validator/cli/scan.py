# Strategy: `stcheck scan`, the command for vetting untrusted downloads.
# argparse, then the options into validator.pipeline.vet (the same run the
# library's validator.vet is), then the report writers (validator.report).  The progress bar (rich, optional) is drawn
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
import sys
import threading
import time
from typing import TYPE_CHECKING, Final

from validator._display import escape_line, plural
from validator.cli.keys import flag_message, signature_fields
from validator.cli.options import (
    add_remote_options,
    add_scale_options,
    add_signature_options,
    network_of,
    rule_flags_problem,
)
from validator.cli.report import add_output_options, add_policy_options, add_profile_option, fail, write_reports
from validator.config.install import install_hint
from validator.pipeline.engine import DEFAULT_CHUNK, stderr_is_tty
from validator.pipeline.vet import VetError, VetOptions, vet
from validator.report.format_common import human
from validator.report.formats import OUTPUTS
from validator.report.progress import rich_progress

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["FLAGS", "LineProgress", "options_of", "progress_reporter", "register", "run_scan", "want_progress"]


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
    add_output_options(p, sha256=True)
    add_policy_options(p)
    p.add_argument("--jobs", "-j", type=int, default=0, metavar="N", help="worker processes (default 0: one per CPU)")
    add_scale_options(p)  # --cache, --cluster, --timeout-per-file
    p.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK, metavar="BYTES", help=argparse.SUPPRESS)
    p.add_argument(
        "--progress",
        choices=["auto", "always", "never"],
        default="auto",
        help="progress on stderr: auto, a bar on a terminal; always, also a line every few seconds in a log "
        "(default auto; never with --quiet)",
    )
    add_remote_options(p)  # remote sources (validator.sources.schemes)
    add_signature_options(p)  # --public-key, --certificate-chain, --signature, --identity
    p.add_argument("--progress-interval", type=float, default=5.0, help=argparse.SUPPRESS)
    p.set_defaults(run=run_scan)


def _fail(message: str) -> int:
    return fail("scan", message)


# VetOptions' fields as `stcheck scan` spells them, for VetError.worded.
FLAGS: Final = {
    "hf_cache": "--hf-cache",
    "chunk_size": "--chunk-size",
    "deep": "--deep",
    "sha256": "--sha256",
    "checksums": "--checksums",
    "timeout_per_file": "--timeout-per-file",
}


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


def options_of(args: argparse.Namespace) -> VetOptions:
    """The scan's options as the pipeline takes them."""
    return VetOptions(
        profile=args.profile,
        deep=args.deep,
        policy=args.policy,
        no_config=args.no_config,
        select=tuple(args.select),
        ignore=tuple(args.ignore),
        fail_on=args.fail_on,
        sha256=args.sha256,
        checksums=args.checksums,
        hf_cache=args.hf_cache,
        **signature_fields(args),
        jobs=args.jobs,
        cache=args.cache,
        cluster=args.cluster,
        timeout_per_file=args.timeout_per_file,
        chunk_size=args.chunk_size,
        network=network_of(args),
        every_sha256=OUTPUTS[args.format].sha256,
    )


def _refused(args: argparse.Namespace) -> str | None:
    """What the command refuses before the run, in its own words (by the
    flags typed, before vet() names its fields)."""
    if args.format == "cyclonedx" and importlib.util.find_spec("cyclonedx") is None:
        return f"--format cyclonedx needs cyclonedx-python-lib: {install_hint('sbom')}"
    if not args.paths and args.hf_cache is None:
        return "give at least one PATH, or --hf-cache"
    return rule_flags_problem(args)


def run_scan(args: argparse.Namespace) -> int:
    refused = _refused(args)
    if refused is not None:
        return _fail(refused)
    if args.quiet:
        args.progress = "never" if args.progress == "auto" else args.progress

    def progress(total: int, files: int) -> contextlib.AbstractContextManager[_Callbacks]:
        return progress_reporter(args.progress, total, files, args.progress_interval)

    def note(text: str) -> None:
        if text.startswith("not reading ") and args.quiet:
            return
        sys.stderr.write(escape_line(f"stcheck scan: {text}") + "\n")

    notes: list[str] = []  # signature notes follow the report, as before
    try:
        vetted = vet(
            args.paths,
            options_of(args),
            progress=progress,
            progress_mode=args.progress,
            on_note=lambda text: note(text) if text.startswith("not reading ") else notes.append(text),
        )
    except VetError as exc:
        # A signature option's error (cli.keys), else the run's own (FLAGS).
        message = flag_message(exc)
        return _fail(exc.worded(FLAGS) if message == str(exc) else message)
    problem = write_reports(
        args,
        vetted.results,
        vetted.errors,
        vetted.seconds,
        command="scan",
        policies=vetted.policies,
        sources=args.paths,
    )
    for line in notes:
        note(line)
    for message in [*vetted.errors, *(r.error for r in vetted.results if r.error is not None)]:
        sys.stderr.write(escape_line(f"stcheck: {message}") + "\n")
    if problem is not None:
        return _fail(problem)
    return vetted.exit_code
