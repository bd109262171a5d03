# Strategy: `stcheck fuzz TARGET`, the command line of the fuzzing harness.
# Campaigns run atheris/libFuzzer in subprocesses (_fuzz_runner); --replay
# runs saved inputs in-process (_fuzz_main.replay).  Registering this
# command imports neither atheris nor numpy: both load only when a campaign
# or a target needs them, and a missing atheris is a usage error (exit 2)
# that says which extra to install.
# ruff: noqa: PLC0415, PTH100, PTH103, PTH106, PTH107, PTH112, PTH113, PTH118, PTH119, PTH123, T201
# Lazy imports: atheris, numpy, hypothesis and safetensors load, only where used.
# Paths: os.path and open(), like the rest of the package.
# A command-line module prints.
from __future__ import annotations

import contextlib
import functools
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from typing import TYPE_CHECKING, Any

from validator._display import escape_line, escape_path, plural
from validator.cli._common import EXIT_ERROR, EXIT_INVALID, EXIT_OK
from validator.config.install import install_hint
from validator.config.settings import environment
from validator.fuzz.harness import ALL_TARGETS, HYPOTHESIS, LOADER_UNDER_TEST
from validator.fuzz.targets import TARGETS
from validator.harness.rejection import REJECT_EXIT

if TYPE_CHECKING:
    import argparse

    from validator.fuzz.supervisor import Summary

_OWN_TARGETS = tuple(t for t in ALL_TARGETS if t != LOADER_UNDER_TEST)
EXPORT = "export"
ATHERIS = "atheris"
AFLPP = "aflpp"
_PROBE_SEEDS = 3  # seeds a --persistent harness answers before a campaign starts


def _install_hint() -> str:
    """How to get atheris, as a command that works (validator.config.install)."""
    return f"atheris is not installed: {install_hint('fuzz')}"


def _cache_dir(*parts: str) -> str:
    """A folder under the user's cache ($XDG_CACHE_HOME, else ~/.cache), never the project's."""
    base = environment().cache_home
    return os.path.join(base, "stcheck", *parts)


def _fresh_out() -> str:
    """A new folder for one run's reproducers, so no run finds an earlier one's."""
    base = _cache_dir("loader-findings")
    os.makedirs(base, exist_ok=True)
    return tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=base)


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
    p.add_argument("--jobs", type=int, default=1, help="parallel engine processes (default 1)")
    p.add_argument(
        "--replay", nargs="+", metavar="PATH", help="run these files (or directories) through TARGET and stop"
    )
    p.add_argument(
        "--workdir",
        help="working corpus and artifacts, kept to share between runs (default: a folder of this run's "
        "own under ~/.cache/stcheck/fuzz, or under $XDG_CACHE_HOME, removed at the end)",
    )
    p.add_argument(
        "--regressions",
        default=os.path.join("corpus", "regressions"),
        help="where findings are saved (default corpus/regressions)",
    )
    p.add_argument(
        "--seeds", action="append", default=[], metavar="DIR", help="extra seed directory (default: corpus/ if present)"
    )
    p.add_argument("--timeout", type=int, default=10, help="seconds one input may take (default 10)")
    p.add_argument(
        "--rss-limit-mb", type=int, default=2048, help="memory limit of an engine process, in MiB (default 2048)"
    )
    p.add_argument("--max-len", type=int, default=16384, help="largest input in bytes (default 16384)")
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
    loader.add_argument(
        "--reject-exit",
        type=int,
        default=REJECT_EXIT,
        metavar="CODE",
        help="--loader-cmd: the exit code that means 'rejected' (default 1)",
    )
    loader.add_argument(
        "--out",
        help="report and reproducers (default: a new folder under ~/.cache/stcheck/loader-findings/, "
        "printed at the end); must hold no earlier run's findings",
    )
    loader.add_argument(
        "--overwrite", action="store_true", help="remove an earlier run's findings from --out before starting"
    )
    p.set_defaults(run=run)


def _check_loader(args: argparse.Namespace, env: dict[str, str]) -> str | None:
    """Why the loader cannot run, or None.  A callable is imported in a child
    process (as the engine will), so a misspelt module fails here, with exit
    2, instead of running 0 executions and passing."""
    if args.loader_cmd:
        argv = shlex.split(args.loader_cmd)
        if not argv or (shutil.which(argv[0]) is None and not os.path.isfile(argv[0])):
            return f"--loader-cmd: {argv[0] if argv else '(empty)'}: command not found"
        return None
    probe = "from validator.fuzz.loader_under_test import from_env; from_env()"
    from validator.fuzz._child import child_env

    child = child_env(env)
    try:
        done = subprocess.run(  # noqa: S603 - our own interpreter
            [sys.executable, "-c", probe], env=child, capture_output=True, text=True, timeout=120, check=False
        )
    except subprocess.TimeoutExpired:
        return f"--loader {args.loader}: importing it took more than 120 s"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"it exited with status {done.returncode}"])[-1]
        return f"cannot import --loader {args.loader} or a --reject-exception: {last}"
    return None


def _native_problem(args: argparse.Namespace) -> str | None:
    """Why --loader-cmd, --persistent and --engine do not fit together, or None."""
    from validator.fuzz.aflpp import INSTALL_HINT, afl_fuzz

    if args.engine == AFLPP:
        if not args.loader_cmd or args.persistent:
            return "--engine aflpp fuzzes a binary: give --loader-cmd 'BIN @@' (built with afl-cc), not --persistent"
        if afl_fuzz() is None and not args.replay:  # a replay runs the binary alone
            return f"--engine aflpp: afl-fuzz is not on PATH; {INSTALL_HINT}"
        if "{path}" not in args.loader_cmd and "@@" not in shlex.split(args.loader_cmd):
            return "--engine aflpp: --loader-cmd must name the input as @@ (or {path})"
        if args.cmplog and not os.path.isfile(args.cmplog):
            return f"--cmplog {escape_path(args.cmplog)}: no such file"
        return None
    if args.cmplog or args.no_custom_mutator:
        return "--cmplog and --no-custom-mutator go with --engine aflpp"
    if args.persistent:
        return None if args.loader_cmd else "--persistent goes with --loader-cmd 'HARNESS ARGS'"
    if args.loader_cmd and "{path}" not in args.loader_cmd:
        return "--loader-cmd must contain {path}"
    return None


def _probe_persistent(args: argparse.Namespace) -> str | None:
    """Why the --persistent harness cannot serve a campaign: it must answer a few seeds by the protocol."""
    from validator.fuzz.persistent import Answer, ProtocolError, Session
    from validator.fuzz.seeds import seed_files

    exits: list[Answer] = []
    with Session(shlex.split(args.loader_cmd), float(args.timeout)) as session:
        for name, data in list(seed_files().items())[:_PROBE_SEEDS]:
            try:
                answer = session.ask(data)
            except ProtocolError as exc:
                return f"--persistent: on the seed {name}: {exc}"
            if answer.verdict == "hang":
                return f"--persistent: the harness gave no answer to the seed {name} within --timeout {args.timeout}s"
            if answer.verdict == "crash" and answer.kind.startswith("exit-"):
                exits.append(answer)
    if len(exits) == _PROBE_SEEDS:
        # Exiting before any answer on every seed is a command that does not
        # serve the protocol (a FILE-taking binary, a wrong flag), not a finding.
        said = next((line.strip() for line in exits[0].trace.splitlines() if line.strip()), "")
        told = f" (it said: {escape_line(said[:160])})" if said else ""
        return (
            f"--persistent: the harness exited ({exits[0].kind}) on each of the first {_PROBE_SEEDS} seeds without "
            f"an answer{told}; does it serve the frame protocol?"
        )
    return None


def _prepare_out(args: argparse.Namespace) -> str | None:
    """Why --out cannot hold reproducers, or None: it exists now (a new folder of the
    run's own when not given; made here, it counts as the run's own too)."""
    args.fresh_out = args.out is None and not args.replay
    if args.fresh_out:
        args.out = _fresh_out()
        return None
    if args.replay or os.path.isdir(args.out):
        return None
    if os.path.lexists(args.out):
        return f"--out {escape_path(args.out)}: not a folder"
    try:
        os.makedirs(args.out)
    except OSError as exc:
        return f"--out {escape_path(args.out)}: cannot make it ({escape_line(exc.strerror or str(exc))})"
    args.fresh_out = True  # removed again if the run leaves it empty
    return None


def _stale_out(args: argparse.Namespace) -> str | None:
    """Why --out cannot take this run's findings, or None (after --overwrite clears it)."""
    from validator.fuzz.loader_under_test import read_findings

    earlier = read_findings(args.out)
    if not earlier:
        return None
    if not args.overwrite:
        return (
            f"--out {args.out} holds {len(earlier)} problem reports of an earlier run; "
            "remove them, choose another --out, or pass --overwrite"
        )
    for entry in earlier:
        causes = [cause["path"] for cause in entry["causes"]]
        for path in (entry["path"], entry["path"].removesuffix(".safetensors") + ".json", *causes):
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
    return None


def _loader_env(args: argparse.Namespace) -> dict[str, str] | None:  # noqa: C901 - one branch per option that shapes the environment
    if args.target != LOADER_UNDER_TEST:
        return {}
    if bool(args.loader) == bool(args.loader_cmd):
        print(
            "stcheck fuzz: loader-under-test needs exactly one of "
            "--loader MODULE:FUNCTION or --loader-cmd 'CMD {path}'",
            file=sys.stderr,
        )
        return None
    problem = _native_problem(args)
    if problem is not None:
        print(f"stcheck fuzz: {problem}", file=sys.stderr)
        return None
    for spec in args.reject_exception:
        module, _, name = spec.partition(":")
        if not (module and name):
            hint = "write it MODULE:NAME (builtins:KeyError, mypkg.errors:Bad)"
            print(f"stcheck fuzz: --reject-exception {escape_line(spec)}: {hint}", file=sys.stderr)
            return None
    problem = _prepare_out(args)
    if problem is not None:
        print(f"stcheck fuzz: {problem}", file=sys.stderr)
        return None
    env = {
        "STCHECK_FUZZ_LOADER_INPUT": args.loader_input,
        "STCHECK_FUZZ_LOADER_REJECT": ",".join(args.reject_exception),
        "STCHECK_FUZZ_LOADER_REJECT_EXIT": str(args.reject_exit),
    }
    if args.out is not None:
        env["STCHECK_FUZZ_LOADER_OUT"] = os.path.abspath(args.out)
    if args.loader:
        env["STCHECK_FUZZ_LOADER"] = args.loader
    elif args.engine == AFLPP:
        from validator.fuzz.aflpp import judge_command

        env["STCHECK_FUZZ_LOADER_CMD"] = judge_command(args.loader_cmd)  # replays: one process per input
        env["STCHECK_FUZZ_LOADER_TIMEOUT"] = str(args.timeout)
    else:
        env["STCHECK_FUZZ_LOADER_CMD"] = args.loader_cmd
        env["STCHECK_FUZZ_LOADER_TIMEOUT"] = str(args.timeout)  # a command counts as hung past --timeout
        if args.persistent:
            env["STCHECK_FUZZ_LOADER_PERSISTENT"] = "1"
    problem = _check_loader(args, env) or (None if args.replay or args.fresh_out else _stale_out(args))
    if problem is not None:
        print(f"stcheck fuzz: {problem}", file=sys.stderr)
        return None
    return env


def _replay_problem(given: list[str], paths: list[str]) -> str | None:
    """Why these inputs cannot be replayed (a missing file, nothing to replay), or None."""
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        return f"no such file: {escape_path(missing[0])}"
    if not paths:
        return f"no inputs to replay in {', '.join(escape_path(p) for p in given)}"
    return None


def _replay(args: argparse.Namespace) -> int:
    from validator.fuzz.harness import replay
    from validator.fuzz.supervisor import replay_paths

    paths = replay_paths(args.replay)
    problem = _replay_problem(args.replay, paths)
    if problem:
        print(f"stcheck fuzz: {problem}", file=sys.stderr)
        return EXIT_ERROR
    if args.target == HYPOTHESIS:
        print("stcheck fuzz: the hypothesis target draws its own inputs; replay another target", file=sys.stderr)
        return EXIT_ERROR
    targets = tuple(TARGETS) if args.target == "all" else (args.target,)
    failed = sum(replay(target, paths, out=lambda s: print(s, flush=True)) for target in targets)
    print(f"{len(paths)} inputs x {len(targets)} targets: {failed} failures")
    return EXIT_INVALID if failed else EXIT_OK


def _print_summary(summary: Summary) -> None:
    print(
        f"[{summary.target}] done: {summary.execs} execs in {summary.seconds:.0f}s ({summary.execs_per_s:.0f}/s); "
        f"{summary.cpu_seconds:.0f} CPU s ({summary.execs_per_cpu_s:.0f} execs per CPU second); "
        f"{summary.coverage_label} {summary.coverage}, corpus {summary.corpus}, "
        f"findings {max(summary.found, len(summary.findings))}"
    )
    for finding in summary.findings:
        print(f"  {finding.signature}  {finding.path}  ({finding.size} bytes, seen {finding.repeats}x)")
        print(f"    reproduce: {finding.reproduce}")


def _shown(path: str) -> str:
    """``path`` relative to the working directory when it lies below it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _print_loader_report(out_dir: str, args: argparse.Namespace) -> int:
    from validator.fuzz.loader_under_test import DESCRIPTIONS, read_findings

    foreign: list[str] = []
    found = read_findings(out_dir, foreign)
    what = escape_line(args.loader or args.loader_cmd)
    shown = escape_path(_shown(out_dir))
    if foreign:
        names = ", ".join(escape_path(os.path.basename(path)) for path in foreign[:5])
        print(f"stcheck fuzz: skipped {plural(len(foreign), 'file')} in {shown} that stcheck did not write: {names}")
    if not found:
        print(f"loader {what}: no disagreement with safetensors 0.8.0 found")
        return EXIT_OK
    print(f"loader {what}: {len(found)} problem classes (reproducers in {shown})")
    for entry in found:
        family = entry["category"].split(":", 1)[0]
        print(f"  {escape_line(entry['category']):48} {DESCRIPTIONS.get(family, '')}")
        detail, path = entry["detail"], entry["path"]
        if detail.startswith(f"{path}:"):  # a finding's line, which names the reproducer
            line = escape_path(_shown(path)) + escape_line(detail[len(path) :])
            print(f"      {line[:400]} ({entry['size']} bytes)")
        else:
            print(f"      {escape_line(detail[:400])}")
            print(f"      {escape_path(_shown(path))} ({entry['size']} bytes)")
        _print_causes(entry["causes"])
    flag = f"--loader {shlex.quote(args.loader)}" if args.loader else f"--loader-cmd {shlex.quote(args.loader_cmd)}"
    if args.engine == AFLPP:
        flag = f"--engine {AFLPP} {flag}"
    elif args.persistent:
        flag = f"--persistent {flag}"
    if args.loader_cmd:
        flag += f" --timeout {args.timeout}"  # a command's hang is judged by the same limit as in the run
    print(f"replay them, with your loader's traceback: stcheck fuzz loader-under-test {flag} --replay {shown}")
    hangs = [entry for entry in found if entry["category"] == "hang"]
    if hangs:
        # A callable is replayed in stcheck's own process, which no --timeout can stop.
        limit = f"timeout {args.timeout * 2 + 5} " if args.loader else ""
        where = escape_path(_shown(hangs[0]["path"]))
        print(f"replay the hang under a time limit: {limit}stcheck fuzz loader-under-test {flag} --replay {where}")
    return EXIT_INVALID


def _print_causes(causes: list[dict[str, Any]], most: int = 8) -> None:
    """The distinct causes within one class, most seen first, each with its own reproducer.

    One cause is the class itself: only how often it was seen is worth a line.
    """
    if len(causes) == 1:
        print(f"      seen {causes[0]['count']}x, one cause: {escape_line(causes[0]['cause'][:160])}")
        return
    if not causes:
        return
    print(f"      {len(causes)} causes, most seen first:")
    for cause in causes[:most]:
        where = escape_path(_shown(cause["path"]))
        print(f"        {cause['count']:>6}x  {escape_line(cause['cause'][:160])}  {where}")
    if len(causes) > most:
        print(f"        [... {len(causes) - most} more]")


def _same(path: str, _category: str) -> str:
    return path


def _replay_loader(args: argparse.Namespace, env: dict[str, str]) -> int:
    from validator.fuzz import loader_under_test as _fuzz_yours
    from validator.fuzz.supervisor import replay_paths

    loader = _fuzz_yours.from_env(env)  # the process environment stays as it was
    problems = 0
    paths = replay_paths(args.replay)
    problem = _replay_problem(args.replay, paths)
    if problem:
        print(f"stcheck fuzz: {problem}", file=sys.stderr)
        return EXIT_ERROR
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        shown = escape_path(_shown(path))
        try:
            found, outcome = _fuzz_yours.examine(loader, data, functools.partial(_same, shown))
        finally:
            if path == paths[-1]:
                loader.close()
        problems += bool(found)
        for category, detail in found or [("ok", "the loader agrees with safetensors 0.8.0")]:
            print(f"{shown}: {category}: {detail}")
        note = _fuzz_yours.read_note(path)
        if note is not None and note["category"] not in {category for category, _ in found}:
            # A hang caused by load, a crash fixed since, a loader that changed: say so.
            now = ", ".join(category for category, _ in found) or "ok"
            print(f"{shown}: not reproduced: recorded as {escape_line(note['category'])}, now {now}")
        if found and outcome.trace:
            # The loader's own traceback (a callable's frames, a command's stderr).
            for line in outcome.trace.splitlines():
                print(f"    {escape_line(line)}")
    return EXIT_INVALID if problems else EXIT_OK


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


def _has_strategies() -> bool:
    try:
        from validator import strategies
    except ImportError:
        return False
    return hasattr(strategies, "valid_files")


def _export(args: argparse.Namespace) -> int:
    from validator.fuzz.export import export

    if not args.directory:
        print("stcheck fuzz: export needs a folder: stcheck fuzz export DIR", file=sys.stderr)
        return EXIT_ERROR
    try:
        written = export(args.directory)
    except OSError as exc:
        print(f"stcheck fuzz: export: {escape_line(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    where = escape_path(args.directory)
    print(f"wrote {plural(len(written), 'file')} to {where} (seeds/, safetensors.dict, README.md)")
    return EXIT_OK


def _found_count(out_dir: str | None) -> int:
    """How many problem classes ``out_dir`` holds (0 for none, or no folder)."""
    from validator.fuzz.loader_under_test import count_findings

    return count_findings(out_dir) if out_dir else 0


def _seconds_left(args: argparse.Namespace) -> float:
    """What is left of --seconds after the checks before the campaign (at least one second)."""
    started: float = args.started
    return max(1.0, float(args.seconds) - (time.monotonic() - started))


def _run_aflpp(args: argparse.Namespace, env: dict[str, str]) -> int:
    from validator.fuzz.aflpp import AflConfig, AflError
    from validator.fuzz.aflpp import run as run_afl

    config = AflConfig(
        command=args.loader_cmd,
        seconds=_seconds_left(args),
        workdir=args.workdir,
        out_dir=env["STCHECK_FUZZ_LOADER_OUT"],
        seed_dirs=tuple(args.seeds) or _default_seeds(),
        timeout_s=float(args.timeout),
        interval_s=args.interval,
        custom_mutator=not args.no_custom_mutator,
        cmplog=os.path.abspath(args.cmplog) if args.cmplog else None,
        reject_exit=args.reject_exit,
        reject_names=tuple(args.reject_exception),
    )
    print(f"[{LOADER_UNDER_TEST}] reproducers go to {escape_path(_shown(args.out))}", flush=True)
    try:
        summary = run_afl(config, out=lambda s: print(s, flush=True))
    except AflError as exc:
        print(f"stcheck fuzz: {escape_line(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    _print_summary(summary)
    return _print_loader_report(env["STCHECK_FUZZ_LOADER_OUT"], args)


def run(args: argparse.Namespace) -> int:
    if args.target == EXPORT:
        return _export(args)
    if args.directory:
        print(f"stcheck fuzz: only 'export' takes a folder ({escape_line(args.directory)})", file=sys.stderr)
        return EXIT_ERROR
    args.fresh_out = False
    args.started = time.monotonic()  # --seconds bounds the whole run: checks, seeds and engine
    own_workdir = None
    try:
        env = _loader_env(args)
        if env is None:
            return EXIT_ERROR
        if not args.replay and not args.workdir:
            # A run's own corpus: one campaign's inputs must not seed the next one's, whatever its loader.
            base = _cache_dir("fuzz")
            os.makedirs(base, exist_ok=True)
            own_workdir = args.workdir = tempfile.mkdtemp(prefix=time.strftime("run-%Y%m%d-%H%M%S-"), dir=base)
        return _run(args, env)
    except KeyboardInterrupt:
        if args.target == LOADER_UNDER_TEST and not args.replay and _found_count(args.out):
            print("stcheck fuzz: interrupted; what was found so far:", file=sys.stderr)
            _print_loader_report(args.out, args)
        raise
    finally:
        if own_workdir is not None:
            shutil.rmtree(own_workdir, ignore_errors=True)
        if args.fresh_out:
            with contextlib.suppress(OSError):
                os.rmdir(args.out)  # the run's own folder, when it stayed empty (a failed start)


def _run(args: argparse.Namespace, env: dict[str, str]) -> int:  # noqa: C901, PLR0912 - one branch per target kind and exit code
    if args.replay:
        if args.target == LOADER_UNDER_TEST:
            return _replay_loader(args, env)
        return _replay(args)
    if args.engine == AFLPP:
        return _run_aflpp(args, env)
    if args.persistent:
        problem = _probe_persistent(args)
        if problem is not None:
            print(f"stcheck fuzz: {problem}", file=sys.stderr)
            return EXIT_ERROR
    from validator.fuzz.supervisor import Config, atheris_available
    from validator.fuzz.supervisor import run as run_campaign

    if not atheris_available():
        print(f"stcheck fuzz: {_install_hint()}", file=sys.stderr)
        return EXIT_ERROR
    if args.target == "all":
        targets = tuple(t for t in _OWN_TARGETS if t != HYPOTHESIS or _has_strategies())
    elif args.target == HYPOTHESIS and not _has_strategies():
        print("stcheck fuzz: the hypothesis target needs validator.strategies, which is not installed", file=sys.stderr)
        return EXIT_ERROR
    else:
        targets = (args.target,)
    seeds = tuple(args.seeds) or _default_seeds()
    share = _seconds_left(args) / len(targets)
    if args.target == LOADER_UNDER_TEST:
        print(f"[{LOADER_UNDER_TEST}] reproducers go to {escape_path(_shown(args.out))}", flush=True)
    summaries = []
    for target in targets:
        config = Config(
            target=target,
            seconds=share,
            jobs=max(1, args.jobs),
            workdir=args.workdir,
            regressions=args.regressions,
            seed_dirs=seeds,
            # A command has --timeout per input (its own hang); the engine's limit must not come first.
            timeout_s=args.timeout * 2 + 5 if args.loader_cmd else args.timeout,
            rss_limit_mb=args.rss_limit_mb,
            max_len=args.max_len,
            max_findings=args.max_findings,
            interval_s=args.interval,
            env=env,
            engine_args=tuple(args.engine_arg),
        )
        summary = run_campaign(config, out=lambda s: print(s, flush=True))
        _print_summary(summary)
        summaries.append(summary)
    found = sum(len(s.findings) for s in summaries)
    idle = [s.target for s in summaries if s.execs == 0 and not s.findings and not s.found]
    if idle:
        # The engine never ran an input (it failed to start, or the target
        # raised at import): that is no evidence of anything.  What it said
        # last is the reason.
        for summary in summaries:
            if summary.target in idle and summary.engine_said:
                print(f"[{summary.target}] the engine said:", file=sys.stderr)
                for line in summary.engine_said.splitlines():
                    print(f"    {escape_line(line)}", file=sys.stderr)
        print(
            f"stcheck fuzz: {', '.join(idle)}: 0 executions; the target never ran (see the output above)",
            file=sys.stderr,
        )
        return EXIT_ERROR
    if len(summaries) > 1:
        execs = sum(s.execs for s in summaries)
        cpu = sum(s.cpu_seconds for s in summaries)
        wall = sum(s.seconds for s in summaries)
        print(f"[all] {len(summaries)} targets: {execs} execs in {wall:.0f}s, {cpu:.0f} CPU s; findings {found}")
    if args.target == LOADER_UNDER_TEST:
        return _print_loader_report(env["STCHECK_FUZZ_LOADER_OUT"], args)
    return EXIT_INVALID if found else EXIT_OK
