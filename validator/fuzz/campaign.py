# Strategy: one fuzz campaign, from one CampaignConfig (validator/fuzz/config.py)
# to its summaries, for the command line and for any other caller (the loader
# matrix runs the CLI; a script may call run() itself).  In order:
#   1. check: the options fit together, the loader can be started (a callable
#      is imported in a child process, as the engine will), the engine can run;
#   2. folders: --out (a fresh one of the run's own when not given; one
#      holding an earlier run's findings is refused unless --overwrite) and the
#      workdir (the run's own unless --workdir shares one on purpose);
#   3. the engine, picked by name from ENGINES and driven through the one
#      interface of validator/fuzz/engine.py, for each target ('all' splits
#      --seconds across them);
#   4. cleaning up: the run's own workdir always, its own --out when empty.
# --seconds bounds all of it: what the checks took is taken from the engine's
# share.  Replays go through the same checks and the same loader runner.
# ruff: noqa: PLC0415, PTH100, PTH103, PTH106, PTH107, PTH112, PTH113, PTH118, PTH123
# Lazy imports: an engine, the oracle and the user's loader load only where used.
# Paths: os.path and open(), like the rest of the package.
from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from typing import TYPE_CHECKING, Final, cast

from validator._display import escape_line, escape_path
from validator.fuzz._child import child_env
from validator.fuzz.config import AFLPP, ATHERIS, ENGINES, LOADER_UNDER_TEST, PERSISTENT, CampaignConfig
from validator.fuzz.engine import EngineError, Summary, replay_paths
from validator.fuzz.inprocess import ALL_TARGETS, HYPOTHESIS
from validator.fuzz.report import shown, summary_lines

if TYPE_CHECKING:
    from collections.abc import Callable

    from validator.fuzz.engine import Engine, Problem

__all__ = ["ENGINES", "Result", "engine", "own_targets", "replay", "run"]

_MODULES: Final = {
    ATHERIS: "validator.fuzz.supervisor",
    PERSISTENT: "validator.fuzz.persistent_engine",
    AFLPP: "validator.fuzz.aflpp",
}
_IMPORT_PROBE_S: Final = 120


@dataclasses.dataclass(frozen=True)
class Result:
    """What a campaign did, or why it did not start."""

    config: CampaignConfig  # as it ran: --out and the workdir resolved
    summaries: tuple[Summary, ...] = ()
    problem: Problem | None = None  # why it could not start (a usage error)
    interrupted: bool = False  # stopped by Ctrl-C: what --out holds is what was found so far


def engine(name: str) -> Engine:
    """The engine called ``name`` (one of ENGINES), imported now."""
    return cast("Engine", importlib.import_module(_MODULES[name]))


def own_targets() -> tuple[str, ...]:
    """stcheck's own targets ('all'); the hypothesis one only where validator.strategies exists."""
    from validator.fuzz.supervisor import has_strategies

    return tuple(t for t in ALL_TARGETS if t != LOADER_UNDER_TEST and (t != HYPOTHESIS or has_strategies()))


def _range_problem(config: CampaignConfig) -> str | None:
    # A value out of range is refused, never clamped or read as "the default".
    checks = (
        ("--seconds", config.seconds, 0, "more than 0", False),
        ("--jobs", config.jobs, 1, "at least 1", True),
        ("--timeout", config.timeout_s, 0, "more than 0", False),
        ("--interval", config.interval_s, 0, "more than 0", False),
        ("--rss-limit-mb", config.rss_limit_mb, 0, "0 (no limit) or more", True),
        ("--max-len", config.max_len, 0, "0 (the target's default) or more", True),
        ("--max-findings", config.max_findings, 1, "at least 1", True),
        ("--big-max-bytes", config.big_max_bytes, 64, "at least 64", True),
    )
    for flag, value, least, wording, inclusive in checks:
        if not (value >= least if inclusive else value > least):
            return f"{flag} must be {wording} (got {value:g})"
    if not 0 <= config.big_rate <= 1:
        return f"--big-rate must be between 0 (off) and 1 (got {config.big_rate:g})"
    return None


def options_problem(config: CampaignConfig) -> str | None:
    """Why the options do not fit together (before anything runs), or None."""
    problem = _range_problem(config)
    if problem is not None:
        return problem
    spec = config.loader
    if config.target != LOADER_UNDER_TEST:
        if config.engine != ATHERIS:
            return f"--engine aflpp and --persistent fuzz a loader: use them with TARGET {LOADER_UNDER_TEST}"
        return None
    if spec is None or (spec.function is None) == (spec.command is None):
        return "loader-under-test needs exactly one of --loader MODULE:FUNCTION or --loader-cmd 'CMD {path}'"
    if config.engine == AFLPP:
        problem = _aflpp_problem(config, spec.command)
        if problem is not None:
            return problem
    elif config.cmplog or not config.custom_mutator:
        return "--cmplog and --no-custom-mutator go with --engine aflpp"
    if config.engine == PERSISTENT and spec.command is None:
        return "--persistent goes with --loader-cmd 'HARNESS ARGS'"
    if config.engine == ATHERIS and spec.command is not None and "{path}" not in spec.command:
        return "--loader-cmd must contain {path}"
    return _reject_problem(spec.reject_names)


def _aflpp_problem(config: CampaignConfig, command: str | None) -> str | None:
    if command is None:
        return "--engine aflpp fuzzes a binary: give --loader-cmd 'BIN @@' (built with afl-cc), not --persistent"
    if "{path}" not in command and "@@" not in shlex.split(command):
        return "--engine aflpp: --loader-cmd must name the input as @@ (or {path})"
    if config.cmplog and not os.path.isfile(config.cmplog):
        return f"--cmplog {escape_path(config.cmplog)}: no such file"
    return None


def _reject_problem(names: tuple[str, ...]) -> str | None:
    for name in names:
        module, _, attr = name.partition(":")
        if not (module and attr):
            return f"--reject-exception {escape_line(name)}: write it MODULE:NAME (builtins:KeyError, mypkg.errors:Bad)"
    return None


def loader_problem(config: CampaignConfig) -> str | None:
    """Why the loader cannot run, or None.  A callable is imported in a child
    process (as the engine will), so a misspelt module fails here, with exit
    2, instead of running 0 executions and passing."""
    spec = config.loader
    if spec is None:
        return None
    if spec.command is not None:
        argv = shlex.split(spec.command)
        if not argv or (shutil.which(argv[0]) is None and not os.path.isfile(argv[0])):
            return f"--loader-cmd: {argv[0] if argv else '(empty)'}: command not found"
        return None
    probe = "from validator.fuzz.config import build_loader, from_env; build_loader(from_env())"
    try:
        done = subprocess.run(  # noqa: S603 - our own interpreter
            [sys.executable, "-c", probe],
            env=child_env(config.child_env()),
            capture_output=True,
            text=True,
            timeout=_IMPORT_PROBE_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"--loader {spec.function}: importing it took more than {_IMPORT_PROBE_S} s"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"it exited with status {done.returncode}"])[-1]
        return f"cannot import --loader {spec.function} or a --reject-exception: {last}"
    return None


def _fresh_folder(base: str, prefix: str) -> str:
    os.makedirs(base, exist_ok=True)
    return tempfile.mkdtemp(prefix=time.strftime(prefix), dir=base)


def _stale_out(out_dir: str, *, overwrite: bool) -> str | None:
    """Why ``out_dir`` cannot take this run's findings, or None (after --overwrite clears it)."""
    from validator.fuzz.loader_under_test import read_findings

    earlier = read_findings(out_dir)
    if not earlier:
        return None
    if not overwrite:
        return (
            f"--out {out_dir} holds {len(earlier)} problem reports of an earlier run; "
            "remove them, choose another --out, or pass --overwrite"
        )
    for entry in earlier:
        causes = [cause["path"] for cause in entry["causes"]]
        for path in (entry["path"], entry["path"].removesuffix(".safetensors") + ".json", *causes):
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
    return None


@dataclasses.dataclass
class _Folders:
    """The folders a run made for itself, removed at its end (--out only when it stayed empty)."""

    out: str | None = None
    workdir: str | None = None

    def clean(self) -> None:
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
        if self.out is not None:
            with contextlib.suppress(OSError):
                os.rmdir(self.out)  # the run's own folder, when it stayed empty (a failed start)


def _out_folder(config: CampaignConfig, cache_root: str, own: _Folders) -> tuple[CampaignConfig, str | None]:
    """``config`` with --out made absolute and existing (a new folder of the run's own when not given)."""
    assert config.loader is not None
    out_dir = config.loader.out_dir
    if not out_dir:
        out_dir = own.out = _fresh_folder(os.path.join(cache_root, "loader-findings"), "%Y%m%d-%H%M%S-")
    elif not os.path.isdir(out_dir):
        if os.path.lexists(out_dir):
            return config, f"--out {escape_path(out_dir)}: not a folder"
        try:
            os.makedirs(out_dir)
        except OSError as exc:
            return config, f"--out {escape_path(out_dir)}: cannot make it ({escape_line(exc.strerror or str(exc))})"
        own.out = out_dir  # removed again if the run leaves it empty
    loader = dataclasses.replace(config.loader, out_dir=os.path.abspath(out_dir))
    return dataclasses.replace(config, loader=loader), None


def run(config: CampaignConfig, out: Callable[[str], None], *, cache_root: str, overwrite: bool = False) -> Result:
    """Run the campaign ``config`` describes; progress and summaries through ``out``.

    ``cache_root`` holds the run's own folders (``fuzz/`` and
    ``loader-findings/``); --out and --workdir, when given, are used as they are.
    """
    started = time.monotonic()  # --seconds bounds the whole run: checks, seeds and engine
    own = _Folders()
    try:
        problem: Problem | None = options_problem(config)
        if problem is None and config.loader is not None:
            config, problem = _out_folder(config, cache_root, own)
            problem = problem or loader_problem(config)
            if problem is None and own.out is None:
                problem = _stale_out(config.loader.out_dir if config.loader else "", overwrite=overwrite)
        if problem is None:
            problem = engine(config.engine).problem(config)
        if problem is not None:
            return Result(config, problem=problem)
        if not config.workdir:
            # A run's own corpus: one campaign's inputs must not seed the next one's, whatever its loader.
            own.workdir = _fresh_folder(os.path.join(cache_root, "fuzz"), "run-%Y%m%d-%H%M%S-")
            config = dataclasses.replace(config, workdir=own.workdir)
        if config.loader is not None:
            out(f"[{LOADER_UNDER_TEST}] reproducers go to {escape_path(shown(config.loader.out_dir))}")
        return Result(config, _run_targets(config, out, started))
    except EngineError as exc:
        return Result(config, problem=escape_line(str(exc)))
    except KeyboardInterrupt:
        return Result(config, interrupted=True)
    finally:
        own.clean()


def _run_targets(config: CampaignConfig, out: Callable[[str], None], started: float) -> tuple[Summary, ...]:
    targets = own_targets() if config.target == "all" else (config.target,)
    share = max(1.0, config.seconds - (time.monotonic() - started)) / len(targets)
    runner = engine(config.engine)
    summaries = []
    for target in targets:
        summary = runner.run(dataclasses.replace(config, target=target, seconds=share), out)
        for line in summary_lines(summary):
            out(line)
        summaries.append(summary)
    if len(summaries) > 1:
        execs = sum(s.execs for s in summaries)
        cpu = sum(s.cpu_seconds for s in summaries)
        wall = sum(s.seconds for s in summaries)
        found = sum(len(s.findings) for s in summaries)
        out(f"[all] {len(summaries)} targets: {execs} execs in {wall:.0f}s, {cpu:.0f} CPU s; findings {found}")
    return tuple(summaries)


def replay(config: CampaignConfig, given: list[str], out: Callable[[str], None]) -> tuple[int, str | None]:
    """Run the inputs under ``given`` through ``config``'s target: (failures, None), or (0, why not)."""
    if config.target == LOADER_UNDER_TEST:
        problem = options_problem(config) or loader_problem(config)
        if problem is not None:
            return 0, problem
    paths = replay_paths(given)
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        return 0, f"no such file: {escape_path(missing[0])}"
    if not paths:
        return 0, f"no inputs to replay in {', '.join(escape_path(p) for p in given)}"
    if config.target == HYPOTHESIS:
        return 0, "the hypothesis target draws its own inputs; replay another target"
    if config.target != LOADER_UNDER_TEST:
        from validator.fuzz.inprocess import replay as replay_target
        from validator.fuzz.targets import TARGETS

        targets = tuple(TARGETS) if config.target == "all" else (config.target,)
        failed = sum(replay_target(target, paths, out=out) for target in targets)
        out(f"{len(paths)} inputs x {len(targets)} targets: {failed} failures")
        return failed, None
    return _replay_loader(config, paths, out), None


def _same(path: str, _category: str) -> str:
    return path


def _replay_loader(config: CampaignConfig, paths: list[str], out: Callable[[str], None]) -> int:
    from validator.fuzz import loader_under_test as lut
    from validator.fuzz.config import build_loader

    loader = build_loader(config)
    problems = 0
    try:
        for path in paths:
            with open(path, "rb") as f:
                data = f.read()
            name = escape_path(shown(path))
            found, outcome = lut.examine(loader, data, functools.partial(_same, name))
            problems += bool(found)
            for category, detail in found or [("ok", "the loader agrees with safetensors 0.8.0")]:
                out(f"{name}: {category}: {detail}")
            note = lut.read_note(path)
            if note is not None and note["category"] not in {category for category, _ in found}:
                # A hang caused by load, a crash fixed since, a loader that changed: say so.
                now = ", ".join(category for category, _ in found) or "ok"
                out(f"{name}: not reproduced: recorded as {escape_line(note['category'])}, now {now}")
            if found and outcome.trace:
                # The loader's own traceback (a callable's frames, a command's stderr).
                for line in outcome.trace.splitlines():
                    out(f"    {escape_line(line)}")
    finally:
        loader.close()
    return problems
