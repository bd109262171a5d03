# Strategy: `stcheck fuzz TARGET`, the command line of stcheck's fuzzing:
# argparse, then one CampaignConfig (validator/fuzz/config.py) handed to
# validator/fuzz/campaign.py, which checks it, runs the engine and cleans
# up; this module prints what comes back (validator/fuzz/report.py writes
# the lines) and maps it to an exit code.  Registering this command imports
# neither atheris nor numpy: both load only when a campaign or a target
# needs them, and a missing engine is a usage error (exit 2) that says how
# to install it.
# ruff: noqa: PLC0415, PTH100, PTH118, T201
# (lazy imports: the campaign and its engines load only when a command runs;
# paths are os.path, as in the rest of the package; a command line prints.)
from __future__ import annotations

import functools
import os
import sys
from typing import TYPE_CHECKING

from validator._display import escape_line, escape_path, plural
from validator.cli._common import EXIT_ERROR, EXIT_INVALID, EXIT_OK
from validator.config.install import install_hint
from validator.config.settings import environment
from validator.fuzz import config as fuzz_config
from validator.fuzz.config import AFLPP, ATHERIS, PERSISTENT, CampaignConfig, LoaderSpec
from validator.fuzz.inprocess import ALL_TARGETS, LOADER_UNDER_TEST
from validator.harness.rejection import REJECT_EXIT

if TYPE_CHECKING:
    import argparse

    from validator.fuzz.engine import Problem

__all__ = ["EXPORT", "register", "run"]
_OWN_TARGETS = tuple(t for t in ALL_TARGETS if t != LOADER_UNDER_TEST)
EXPORT = "export"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "fuzz",
        help="run a coverage-guided fuzz campaign (atheris/libFuzzer), or replay saved inputs",
        description=(
            "Fuzz a target for --seconds, print progress, and save each finding, minimised, under "
            "--regressions with a one-line reproducer.  TARGET 'all' splits the time across "
            f"{', '.join(_OWN_TARGETS)}.  'loader-under-test' fuzzes YOUR loader (--loader or --loader-cmd) "
            "against safetensors 0.8.0 and writes a report with reproducer files to --out."
        ),
    )
    p.add_argument(
        "target",
        choices=[*ALL_TARGETS, "all", EXPORT],
        metavar="TARGET",
        help=f"one of {', '.join(ALL_TARGETS)}, all; or 'export DIR' (seeds, dictionary, engine command lines)",
    )
    p.add_argument("directory", nargs="?", metavar="DIR", help="export: the folder to write")
    p.add_argument("--seconds", type=float, default=60.0, help="campaign length (default 60)")
    jobs = "atheris jobs, --persistent harnesses or AFL++ instances (one -M, the rest -S) side by side"
    p.add_argument("--jobs", type=int, default=1, help=f"{jobs}, their findings merged (default 1)")
    p.add_argument("--replay", nargs="+", metavar="PATH", help="run these files (or directories) through TARGET")
    p.add_argument(
        "--workdir",
        help="working corpus and artifacts, kept to share between runs (default: a folder of this run's "
        "own under ~/.cache/stcheck/fuzz, or under $XDG_CACHE_HOME, removed at the end)",
    )
    regressions = os.path.join("corpus", "regressions")
    p.add_argument("--regressions", default=regressions, help=f"where findings are saved (default {regressions})")
    p.add_argument(
        "--seeds", action="append", default=[], metavar="DIR", help="extra seed directory (default: corpus/ if present)"
    )
    p.add_argument("--timeout", type=int, default=10, help="seconds one input may take (default 10)")
    p.add_argument(
        "--rss-limit-mb", type=int, default=2048, help="memory limit of an engine process, in MiB (default 2048)"
    )
    lengths = f"default {fuzz_config.OWN_MAX_LEN}; loader-under-test {fuzz_config.LOADER_MAX_LEN}, -len_control=0"
    p.add_argument("--max-len", type=int, default=0, help=f"atheris' largest input in bytes ({lengths})")
    rate, most = fuzz_config.BIG_RATE, fuzz_config.BIG_MAX_BYTES
    big = "the big and deep mutations (fuzz/README.md), default %(default)s"
    p.add_argument("--big-rate", metavar="R", type=float, default=rate, help=f"share of {big}; 0 turns them off")
    p.add_argument("--big-max-bytes", metavar="N", type=int, default=most, help=f"largest of {big}")
    p.add_argument("--max-findings", type=int, default=10, help="stop after this many distinct findings (default 10)")
    p.add_argument("--interval", type=float, default=10.0, help="seconds between progress lines (default 10)")
    p.add_argument(
        "--engine-arg",
        action="append",
        default=[],
        metavar="-FLAG=VALUE",
        help="extra libFuzzer flag, written --engine-arg=-use_value_profile=1",
    )
    loader = p.add_argument_group("fuzz your loader (TARGET loader-under-test)")
    loader.add_argument(
        "--loader", metavar="MODULE:FUNCTION", help="a callable taking a path (or bytes) and returning {name: tensor}"
    )
    loader.add_argument(
        "--loader-cmd",
        metavar="'CMD {path}'",
        help="a command run once per input: exit 0 accepts, exit 1 (or --reject-exit) rejects; an uncaught "
        "exception (a Python traceback is judged by its class), a signal or any other exit is a crash",
    )
    loader.add_argument(
        "--persistent",
        action="store_true",
        help="--loader-cmd is a harness serving many inputs over the frame protocol of fuzz/README.md "
        "(a u32 little-endian length and the bytes in; 'accept' or 'reject <reason>' out); --timeout per input",
    )
    loader.add_argument(
        "--engine",
        choices=[ATHERIS, AFLPP],
        default=ATHERIS,
        help="atheris (libFuzzer, steered by stcheck's coverage; default) or aflpp (AFL++ over a binary built "
        "with afl-cc, steered by the loader's own coverage: --loader-cmd 'BIN @@')",
    )
    loader.add_argument(
        "--cmplog",
        metavar="BIN",
        help="--engine aflpp: the same loader built with AFL_LLVM_CMPLOG=1 (afl-fuzz -c), to solve compares",
    )
    loader.add_argument(
        "--no-custom-mutator",
        action="store_true",
        help="--engine aflpp: AFL++'s own mutations and the dictionary only, not stcheck's Python mutator",
    )
    loader.add_argument(
        "--loader-input", choices=["path", "bytes"], default="path", help="what the callable is given (default path)"
    )
    loader.add_argument(
        "--reject-exception",
        action="append",
        default=[],
        metavar="MODULE:NAME",
        help="an exception that is a clean rejection (ValueError is); a command's traceback is matched by name",
    )
    rejected = f"--loader-cmd: the exit code that means 'rejected' (default {REJECT_EXIT})"
    loader.add_argument("--reject-exit", type=int, default=REJECT_EXIT, metavar="CODE", help=rejected)
    loader.add_argument(
        "--out",
        help="report and reproducers (default: a new folder under ~/.cache/stcheck/loader-findings/, "
        "printed at the end); must hold no earlier run's findings",
    )
    loader.add_argument(
        "--overwrite", action="store_true", help="remove an earlier run's findings from --out before starting"
    )
    p.set_defaults(run=run)


def _usage(problem: Problem) -> int:
    """Print why the command cannot run (with how to install a missing engine); exit 2."""
    extra = getattr(problem, "extra", None)
    print(f"stcheck fuzz: {problem}{f': {install_hint(extra)}' if extra else ''}", file=sys.stderr)
    return EXIT_ERROR


def _default_seeds() -> tuple[str, ...]:
    """The stcheck conformance corpus (./corpus when it is one, else the checkout's), if found.

    A folder that merely is called corpus/ in the user's project is not read.
    """
    from validator.conformance.corpus import find_corpus
    from validator.conformance.model import ConformanceError

    try:
        return (str(find_corpus(None)),)
    except ConformanceError:
        return ()


def _config(args: argparse.Namespace) -> CampaignConfig:
    loader = None
    if args.target == LOADER_UNDER_TEST:
        loader = LoaderSpec(
            function=args.loader,
            command=args.loader_cmd,
            pass_bytes=args.loader_input == "bytes",
            reject_names=tuple(args.reject_exception),
            reject_exit=args.reject_exit,
            timeout_s=float(args.timeout),
            out_dir=args.out or "",
        )
    return CampaignConfig(
        target=args.target,
        seconds=args.seconds,
        engine=AFLPP if args.engine == AFLPP else PERSISTENT if args.persistent else ATHERIS,
        jobs=args.jobs,
        workdir=args.workdir or "",
        regressions=args.regressions,
        seed_dirs=() if args.replay else tuple(args.seeds) or _default_seeds(),
        timeout_s=float(args.timeout),
        rss_limit_mb=args.rss_limit_mb,
        max_len=max(0, args.max_len),
        big_rate=args.big_rate,
        big_max_bytes=args.big_max_bytes,
        max_findings=args.max_findings,
        interval_s=args.interval,
        engine_args=tuple(args.engine_arg),
        loader=loader,
        cmplog=os.path.abspath(args.cmplog) if args.cmplog else None,
        custom_mutator=not args.no_custom_mutator,
    )


def _export(args: argparse.Namespace) -> int:
    from validator.fuzz.export import export

    if not args.directory:
        return _usage("export needs a folder: stcheck fuzz export DIR")
    try:
        written = export(args.directory)
    except OSError as exc:
        return _usage(f"export: {escape_line(str(exc))}")
    where = escape_path(args.directory)
    print(f"wrote {plural(len(written), 'file')} to {where} (seeds/, safetensors.dict, README.md)")
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    from validator.fuzz import campaign
    from validator.fuzz.report import idle_lines, loader_report

    if args.target == EXPORT:
        return _export(args)
    if args.directory:
        return _usage(f"only 'export' takes a folder ({escape_line(args.directory)})")
    if args.engine == AFLPP and args.persistent:
        return _usage(
            "--engine aflpp fuzzes a binary: give --loader-cmd 'BIN @@' (built with afl-cc), not --persistent"
        )
    say = functools.partial(print, flush=True)
    if args.replay:
        failed, problem = campaign.replay(_config(args), args.replay, say)
        return _usage(problem) if problem is not None else EXIT_INVALID if failed else EXIT_OK
    cache_root = os.path.join(environment().cache_home, "stcheck")  # never the project's folder
    result = campaign.run(_config(args), say, cache_root=cache_root, overwrite=args.overwrite)
    if result.problem is not None:
        return _usage(result.problem)
    report = loader_report(result.config) if result.config.loader is not None else ([], 0)
    if result.interrupted:
        if report[1]:
            print("stcheck fuzz: interrupted; what was found so far:", file=sys.stderr)
            print("\n".join(report[0]))
        raise KeyboardInterrupt
    idle = idle_lines(list(result.summaries))
    if idle:
        # The engine never ran an input (it failed to start, or the target
        # raised at import): that is no evidence of anything.
        print("\n".join(idle), file=sys.stderr)
        return EXIT_ERROR
    if result.config.loader is not None:
        print("\n".join(report[0]))
        return EXIT_INVALID if report[1] else EXIT_OK
    return EXIT_INVALID if any(s.findings for s in result.summaries) else EXIT_OK
