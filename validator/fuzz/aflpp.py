# Strategy: `stcheck fuzz loader-under-test --engine aflpp`, AFL++ as the
# engine, steered by the loader's own coverage.  afl-fuzz runs the user's
# binary (built with afl-cc; persistent mode through __AFL_LOOP or the fork
# server) with `@@` for the input file, stcheck's seeds (fuzz/seeds) and
# dictionary, and stcheck's structure-aware mutator as an AFL++ Python
# custom mutator (validator/fuzz/afl_mutator.py, AFL_PYTHON_MODULE).  AFL++
# sees only crashes and hangs; the verdict that the differential oracle
# needs is the binary's exit status (0 accepts, 1 rejects, the protocol of
# validator/harness/rejection.py), so every new queue entry, crash and hang
# is replayed through the binary, one process each, and judged against the
# reference profile and safetensors 0.8.0 (loader_under_test.examine).
# Findings are the same problem classes and reproducers as the atheris
# engine's, so `--replay` confirms them.
#
# Before the campaign the seeds are replayed the same way: a seed that
# crashes or hangs the binary is a finding at once and stays out of
# afl-fuzz's input folder (afl-fuzz refuses to start on a crashing seed).
# Progress comes from AFL++'s folders (fuzzer_stats is rewritten only once
# a minute and at the end), the final figures from fuzzer_stats:
# execs_done, execs_per_sec, edges_found and bitmap_cvg, the coverage of
# the loader itself.
# ruff: noqa: PTH100, PTH103, PTH119, PTH112, PTH113, PTH118, PTH123, PTH206, PTH208
# Paths: os.path and open(), like the rest of the package.
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from typing import TYPE_CHECKING, Final

from validator.fuzz import loader_under_test as _fuzz_yours
from validator.fuzz._child import child_env
from validator.fuzz.config import AFL_INPUT, CampaignConfig, build_loader, replay_argv
from validator.fuzz.engine import EngineError, Missing, Problem, Summary, children_cpu, replay_paths
from validator.fuzz.seeds import dictionary_text, seed_files

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = [
    "INSTALL_HINT",
    "AflError",
    "afl_argv",
    "afl_fuzz",
    "judge_command",
    "problem",
    "read_stats",
    "run",
]

ENGINE: Final = "aflpp"
INSTALL_HINT: Final = (
    "install AFL++ (Debian/Ubuntu: apt-get install afl++; elsewhere: https://github.com/AFLplusplus/AFLplusplus)"
)
MUTATOR_MODULE: Final = "validator.fuzz.afl_mutator"
_INPUT: Final = AFL_INPUT
_MAIN: Final = "main"  # the -M instance's folder name; the -S ones are sec-1, sec-2, ...
_STOP_GRACE_S: Final = 10.0
_GRACE_S: Final = 2.0  # past --seconds: afl-fuzz's -V has a whole-second granularity
_MIN_REPORT_S: Final = 5  # afl-fuzz's stats of a shorter run are its start-up's
_SIDE: Final = ("README.txt",)
_ABORT: Final = re.compile(r"PROGRAM ABORT : (?:\x1b\[[0-9;]*m)*(.*)")
_ANSI: Final = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\(B")


def afl_fuzz() -> str | None:
    """The afl-fuzz on PATH, or None."""
    return shutil.which("afl-fuzz")


def afl_argv(command: str) -> list[str]:
    """The loader's argv for afl-fuzz: ``{path}`` written ``@@``."""
    return [_INPUT if word == "{path}" else word.replace("{path}", _INPUT) for word in shlex.split(command)]


def judge_command(command: str) -> str:
    """The loader's command for the judge's replays: ``@@`` written ``{path}``."""
    return replay_argv(" ".join(shlex.quote(word) for word in afl_argv(command)))


def problem(config: CampaignConfig) -> Problem | None:  # noqa: ARG001 - the engine interface
    """Why AFL++ cannot run a campaign: afl-fuzz is not on PATH (the options are checked before)."""
    return Missing(f"--engine aflpp: afl-fuzz is not on PATH; {INSTALL_HINT}") if afl_fuzz() is None else None


def read_stats(path: str) -> dict[str, str]:
    """AFL++'s fuzzer_stats as a mapping (empty when absent)."""
    stats: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, sep, value = line.partition(":")
                if sep:
                    stats[key.strip()] = value.strip()
    except OSError:
        pass
    return stats


def _int(value: str | None) -> int:
    try:
        return int(float(value or "0"))
    except ValueError:
        return 0


class _Judge:
    """Replays AFL++'s files through the loader binary and records what the oracle says."""

    def __init__(self, config: CampaignConfig) -> None:
        self.out_dir = config.loader.out_dir if config.loader is not None else ""
        self.loader = build_loader(config)
        self.seen: set[str] = set()  # AFL++'s files already looked at
        self.digests: set[bytes] = set()  # inputs already judged (a seed is also a queue entry)
        self.causes: set[tuple[str, str]] = set()  # (class, cause) pairs seen in this run
        self.judged = 0

    def where(self, category: str) -> str:
        return _fuzz_yours.reproducer_path(self.out_dir, category)

    def judge(self, data: bytes, afl_kind: str = "", *, shrink: bool = True) -> list[tuple[str, str]]:
        """Classify one input and record its problems; ``afl_kind`` is 'crash' or 'hang' for AFL++'s own.

        ``shrink=False`` keeps a new cause's input as it is (a seed: the
        user's own file, and minimising it would spend the seed phase)."""
        digest = hashlib.sha1(data, usedforsecurity=False).digest()
        if digest in self.digests and not afl_kind:
            return []
        self.digests.add(digest)
        self.judged += 1
        found, outcome = _fuzz_yours.examine(self.loader, data, self.where)
        if afl_kind and not any(c.startswith(("crash:", "hang")) for c, _ in found):
            # AFL++ saw it crash or hang, the replay did not: flaky, or state
            # carried over inside a persistent loop.  Still a finding.
            found.append((f"{afl_kind}:not-reproduced" if afl_kind == "crash" else "hang", "afl-fuzz: " + afl_kind))
        for category, detail in found:
            cause = _fuzz_yours.cause_of(category, detail, outcome)
            kept = data
            if shrink and (category, cause) not in self.causes and not category.endswith(":not-reproduced"):
                # A cause new to the run: its reproducer minimised, as the atheris
                # engine's target does (a crash AFL++ alone saw cannot be replayed to shrink it).
                kept = _fuzz_yours.shrink(self.loader, data, category, cause)
            self.causes.add((category, cause))
            _fuzz_yours.record(self.out_dir, category, detail, kept, cause=cause)
        return found

    def sweep(self, folder: str, afl_kind: str = "", until: float = float("inf")) -> int:
        """Judge the files of ``folder`` not judged yet, until the monotonic time ``until``;
        how many were left unjudged."""
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return 0
        left = 0
        for name in names:
            path = os.path.join(folder, name)
            if name in _SIDE or path in self.seen or not os.path.isfile(path):
                continue
            if time.monotonic() > until:
                left += 1
                continue
            self.seen.add(path)
            with open(path, "rb") as f:
                data = f.read()
            self.judge(data, afl_kind)
        return left


def _prepare_seeds(
    config: CampaignConfig, judge: _Judge, folder: str, deadline: float, out: Callable[[str], None]
) -> int:
    """Write the seeds afl-fuzz may start from; crashing and hanging ones are findings instead.

    Those not tried by ``deadline`` (half the campaign) are left out: --seconds
    bounds the whole run.  A progress line comes a second in, then every --interval.
    """
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    files = dict(seed_files())
    for path in replay_paths([d for d in config.seed_dirs if os.path.isdir(d)]):
        if "regressions" in path.split(os.sep):
            continue
        with open(path, "rb") as f:
            data = f.read()
        files[hashlib.sha1(data, usedforsecurity=False).hexdigest()[:16]] = data
    kept = tried = 0
    start = time.monotonic()
    last = start - config.interval_s + 1.0  # the first line a second in, then one every --interval
    for name, data in files.items():
        now = time.monotonic()
        if now > deadline and kept:
            break
        if now - last >= config.interval_s:
            last = now
            out(_seed_progress(now - start, tried, len(files), judge))
        tried += 1
        # Judged now (one process each, the oracle beside it): the seed's
        # queue entry is then not judged again, and a crashing or hanging
        # seed stays out of afl-fuzz's folder.
        if any(category.startswith(("crash:", "hang")) for category, _ in judge.judge(data, shrink=False)):
            continue
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
        kept += 1
    out(_seed_progress(time.monotonic() - start, tried, len(files), judge))
    return kept


def _seed_progress(elapsed: float, tried: int, total: int, judge: _Judge) -> str:
    return (
        f"[loader-under-test/{ENGINE}] {elapsed:5.0f}s  seeds {tried} of {total} run through the loader  "
        f"findings {_fuzz_yours.count_findings(judge.out_dir)}"
    )


_RAMDISK: Final = "/dev/shm"  # noqa: S108 - a private folder made inside it, removed after


def _ramdisk_folder() -> str | None:
    """A private folder in memory for afl-fuzz's input file, or None.

    A binary that reads its input from a file (``@@``) makes afl-fuzz write
    every input to disk first: on ext4 here that costs more than the naive
    loader's whole run (224 against 13 microseconds), so AFL_TMPDIR points
    afl-fuzz at a tmpfs folder.  A harness that takes its input in shared
    memory (__AFL_FUZZ_TESTCASE_BUF, as fuzz/harness/loader_harness.c does)
    needs no file at all.
    """
    if os.environ.get("AFL_TMPDIR") or not os.path.isdir(_RAMDISK) or not os.access(_RAMDISK, os.W_OK):
        return None
    try:
        return tempfile.mkdtemp(prefix="stcheck-afl-", dir=_RAMDISK)
    except OSError:
        return None


def _env(config: CampaignConfig, tmpdir: str | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    user: dict[str, str] = {key: env[key] for key in ("AFL_NO_AFFINITY", "AFL_TRY_AFFINITY") if key in env}
    if tmpdir is not None:
        env["AFL_TMPDIR"] = tmpdir
    env.update(
        {
            "AFL_SKIP_CPUFREQ": "1",  # a container cannot set the CPU governor
            "AFL_NO_UI": "1",  # plain lines, no curses screen
            "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1",  # core_pattern may pipe to a handler
            "AFL_FAST_CAL": "1",  # shorter calibration of each new entry
            "AFL_SKIP_CRASHES": "1",  # a seed that crashes only sometimes does not stop it
        }
    )
    if config.custom_mutator:
        # The mutator reads the campaign's settings (the big and deep family's) from its one variable.
        env = child_env({"AFL_PYTHON_MODULE": MUTATOR_MODULE, **config.child_env()}, env)
    env.update(user)
    if "AFL_NO_AFFINITY" not in env:
        # One core for afl-fuzz and the loader: a wake-up across cores costs
        # more than the loader's run in a VM (the naive loader: 7,800-8,500
        # executions a second unbound, 17,700-19,700 bound, back to back);
        # "TRY" goes on unbound where no core is free.  Each instance of
        # --jobs binds a core of its own.
        env.setdefault("AFL_TRY_AFFINITY", "1")
    return env


class AflError(EngineError):
    """afl-fuzz could not run the campaign (one line, for people)."""


def _abort_reason(log_path: str) -> str:
    try:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return "afl-fuzz stopped without output"
    m = _ABORT.search(text)
    if m is not None:
        return "afl-fuzz: " + _ANSI.sub("", m.group(1)).strip()
    lines = [_ANSI.sub("", line).strip() for line in text.splitlines() if line.strip()]
    return "afl-fuzz: " + (lines[-1] if lines else "stopped without output")


def _count(folder: str) -> int:
    try:
        return sum(1 for name in os.listdir(folder) if name not in _SIDE)
    except OSError:
        return 0


def _nodes(afl_out: str, jobs: int) -> list[str]:
    """The instances' folders: the main one first, then the secondaries."""
    return [os.path.join(afl_out, _MAIN if i == 0 else f"sec-{i}") for i in range(jobs)]


def _progress(start: float, nodes: list[str], judge: _Judge) -> str:
    """One progress line.  afl-fuzz rewrites fuzzer_stats only once a minute
    (and plot_data not at all without its screen), so the counts come from
    its folders, and executions from the last stats it wrote."""
    elapsed = time.monotonic() - start
    stats = [read_stats(os.path.join(node, "fuzzer_stats")) for node in nodes]
    run_time = min((_int(s.get("run_time")) for s in stats), default=0)
    # The first stats are written after the seeds' dry run, a second in: a
    # rate from them is meaningless (165 executions in 1 ms), so none is shown
    # until afl-fuzz's first whole-minute report.
    execs = (
        f"execs {sum(_int(s.get('execs_done')) for s in stats)} by {run_time}s "
        f"({sum(float(s.get('execs_per_sec') or 0) for s in stats):.0f}/s)"
        if run_time >= _MIN_REPORT_S and all(stats)
        else "execs - (afl-fuzz reports them once a minute)"
    )
    edges = max((_int(s.get("edges_found")) for s in stats if s), default=None)
    jobs = f" x{len(nodes)}" if len(nodes) > 1 else ""
    return (
        f"[loader-under-test/{ENGINE}{jobs}] {elapsed:5.0f}s  {execs}  loader edges {'-' if edges is None else edges}  "
        f"corpus {_count(os.path.join(nodes[0], 'queue'))}  "
        f"crashes {sum(_count(os.path.join(node, 'crashes')) for node in nodes)}  "
        f"hangs {sum(_count(os.path.join(node, 'hangs')) for node in nodes)}  judged {judge.judged}  "
        f"findings {_fuzz_yours.count_findings(judge.out_dir)}"
    )


def _sweep_all(judge: _Judge, nodes: list[str], until: float) -> int:
    """Judge AFL++'s new crashes, hangs and queue entries until ``until``; how many were left.

    Each instance's queue also holds the entries it synced from the others:
    the judge knows them by their bytes and runs each once.
    """
    kinds = (("crashes", "crash"), ("hangs", "hang"), ("queue", ""))
    return sum(judge.sweep(os.path.join(node, folder), kind, until) for node in nodes for folder, kind in kinds)


def _watch(
    argvs: list[list[str]],
    config: CampaignConfig,
    *,
    judge: _Judge,
    nodes: list[str],
    logs: list[str],
    start: float,
    out: Callable[[str], None],
) -> None:
    """Run the afl-fuzz instances to their end (or the deadline), judging their new files as they come."""
    tmpdirs = [_ramdisk_folder() for _ in argvs]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for argv, log_path, tmpdir in zip(argvs, logs, tmpdirs, strict=True):
            with open(log_path, "wb") as log:
                procs.append(
                    subprocess.Popen(  # noqa: S603 - afl-fuzz over the user's own binary
                        argv, stdout=log, stderr=subprocess.STDOUT, env=_env(config, tmpdir), start_new_session=True
                    )
                )
        try:
            # The first line a second in, then one every --interval: afl-fuzz itself is silent for a while.
            last = time.monotonic() - config.interval_s + 1.0
            deadline = start + config.seconds + _GRACE_S
            while any(proc.poll() is None for proc in procs):
                time.sleep(0.5)
                if time.monotonic() - last >= config.interval_s:
                    last = time.monotonic()
                    _sweep_all(judge, nodes, deadline)
                    out(_progress(start, nodes, judge))
                if time.monotonic() > deadline:
                    for proc in procs:
                        _stop(proc, signal.SIGINT)  # afl-fuzz writes its stats on SIGINT
        finally:
            for proc in procs:
                _stop(proc, signal.SIGKILL)
    finally:
        folders = [folder for folder in (*nodes, *tmpdirs) if folder is not None]
        _reap([os.path.join(folder, ".cur_input") for folder in folders])
        for tmpdir in tmpdirs:
            if tmpdir is not None:
                shutil.rmtree(tmpdir, ignore_errors=True)


def _reap(inputs: list[str]) -> int:
    """Kill the loader processes afl-fuzz left behind; how many.

    afl-fuzz's targets call setsid(), so killing afl-fuzz's process group
    misses them, and one of a CmpLog pair was seen left stopped after
    afl-fuzz ended.  They are found by their input file, which is in their
    argv and unique to this campaign.  Linux only (/proc); elsewhere none.
    """
    marks = [path.encode() for path in inputs]
    killed = 0
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if pid != os.getpid() and any(mark in argv for mark in marks):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
    return killed


def _stop(proc: subprocess.Popen[bytes], sig: int) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=_STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def run(config: CampaignConfig, out: Callable[[str], None] = print) -> Summary:
    """Run one AFL++ campaign of --jobs instances (one -M, the rest -S, sharing one output
    folder and so one queue); judge their queues, crashes and hangs; return the summary.

    Raises AflError when afl-fuzz is missing or stops before fuzzing.
    """
    binary = afl_fuzz()
    if binary is None:
        msg = f"afl-fuzz is not on PATH: {INSTALL_HINT}"
        raise AflError(msg)
    assert config.loader is not None
    command = config.loader.command or ""
    cpu_before = children_cpu()
    base = os.path.abspath(os.path.join(config.workdir, "aflpp"))
    in_dir, afl_out = os.path.join(base, "in"), os.path.join(base, "out")
    os.makedirs(base, exist_ok=True)
    shutil.rmtree(afl_out, ignore_errors=True)
    dict_path = os.path.join(base, "safetensors.dict")
    with open(dict_path, "w", encoding="utf-8") as f:
        f.write(dictionary_text())
    judge = _Judge(config)
    start = time.monotonic()
    jobs = max(1, config.jobs)
    out(f"[loader-under-test/{ENGINE}] running the seeds through the loader before afl-fuzz starts")
    if _prepare_seeds(config, judge, in_dir, start + config.seconds / 2, out) == 0:
        msg = "every seed crashes or hangs the loader: nothing left for afl-fuzz to start from"
        raise AflError(msg)
    seconds = max(1, int(config.seconds - (time.monotonic() - start)))
    nodes = _nodes(afl_out, jobs)
    argvs = [
        [
            binary,
            *(["-M" if i == 0 else "-S", os.path.basename(node)] if jobs > 1 else []),
            "-i",
            in_dir,
            "-o",
            afl_out,
            "-x",
            dict_path,
            "-t",
            str(max(1, int(config.timeout_s * 1000))),
            "-V",
            str(seconds),
            *(["-c", config.cmplog] if config.cmplog and i == 0 else []),  # one CmpLog instance is enough
            "--",
            *afl_argv(command),
        ]
        for i, node in enumerate(nodes)
    ]
    if jobs == 1:
        nodes = [os.path.join(afl_out, "default")]
    logs = [os.path.join(base, "afl-fuzz.log" if i == 0 else f"afl-fuzz-sec-{i}.log") for i in range(jobs)]
    if jobs > 1:
        out(f"[loader-under-test/{ENGINE}] {jobs} afl-fuzz instances (-M {_MAIN}, -S sec-1..) sharing one queue")
    _watch(argvs, config, judge=judge, nodes=nodes, logs=logs, start=start, out=out)
    stats = [read_stats(os.path.join(node, "fuzzer_stats")) for node in nodes]
    if not stats[0]:
        raise AflError(_abort_reason(logs[0]))
    left = _sweep_all(judge, nodes, start + config.seconds + _GRACE_S)
    out(_progress(start, nodes, judge))
    if left:
        out(f"[loader-under-test/{ENGINE}] time is up: {left} of afl-fuzz's new inputs were not judged by the oracle")
    execs = sum(_int(s.get("execs_done")) for s in stats)
    run_time = max(_int(s.get("run_time")) for s in stats)
    summary = Summary(
        target="loader-under-test",
        seconds=time.monotonic() - start,
        cpu_seconds=children_cpu() - cpu_before,
        execs=execs,
        coverage=max(_int(s.get("edges_found")) for s in stats),
        coverage_label="loader edges",
        corpus=max(_int(s.get("corpus_count")) for s in stats),
        found=_fuzz_yours.count_findings(judge.out_dir),
        instances=jobs,
    )
    rate = sum(float(s.get("execs_per_sec") or 0) for s in stats)
    out(
        f"[loader-under-test/{ENGINE}] afl-fuzz: {execs} execs at {rate:.2f}/s over {run_time}s"
        f"{f' ({jobs} instances)' if jobs > 1 else ''}; the loader's own coverage: {summary.coverage} edges "
        f"({stats[0].get('bitmap_cvg', '?')} of the map); {judge.judged} inputs judged by the oracle"
    )
    return summary
