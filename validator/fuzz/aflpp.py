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
# ruff: noqa: PTH100, PTH103, PTH112, PTH113, PTH118, PTH123, PTH206, PTH208
# Paths: os.path and open(), like the rest of the package.
from __future__ import annotations

import contextlib
import dataclasses
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
from validator.fuzz.seeds import dictionary_text, seed_files
from validator.fuzz.supervisor import Summary, replay_paths

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = [
    "INSTALL_HINT",
    "AflConfig",
    "afl_argv",
    "afl_fuzz",
    "read_stats",
    "run",
]

ENGINE: Final = "aflpp"
INSTALL_HINT: Final = (
    "install AFL++ (Debian/Ubuntu: apt-get install afl++; elsewhere: https://github.com/AFLplusplus/AFLplusplus)"
)
MUTATOR_MODULE: Final = "validator.fuzz.afl_mutator"
_INPUT: Final = "@@"
_STOP_GRACE_S: Final = 10.0
_MIN_REPORT_S: Final = 5  # afl-fuzz's stats of a shorter run are its start-up's
_SIDE: Final = ("README.txt",)
_ABORT: Final = re.compile(r"PROGRAM ABORT : (?:\x1b\[[0-9;]*m)*(.*)")
_ANSI: Final = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\(B")


@dataclasses.dataclass
class AflConfig:
    """One AFL++ campaign over a loader binary."""

    command: str  # 'BIN @@' or 'BIN {path}'
    seconds: float
    workdir: str
    out_dir: str  # the problem classes and reproducers
    seed_dirs: tuple[str, ...] = ()
    timeout_s: float = 10.0  # per input, for afl-fuzz (-t) and for the judge's replay
    interval_s: float = 10.0
    custom_mutator: bool = True
    cmplog: str | None = None  # the loader built with AFL_LLVM_CMPLOG=1 (afl-fuzz -c)
    reject_exit: int = 1
    reject_names: tuple[str, ...] = ()
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    grace_s: float = 2.0


def afl_fuzz() -> str | None:
    """The afl-fuzz on PATH, or None."""
    return shutil.which("afl-fuzz")


def afl_argv(command: str) -> list[str]:
    """The loader's argv for afl-fuzz: ``{path}`` written ``@@``."""
    return [_INPUT if word == "{path}" else word.replace("{path}", _INPUT) for word in shlex.split(command)]


def judge_command(command: str) -> str:
    """The loader's command for the judge's replays: ``@@`` written ``{path}``."""
    return " ".join("{path}" if word == _INPUT else shlex.quote(word) for word in afl_argv(command))


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

    def __init__(self, config: AflConfig) -> None:
        self.config = config
        self.loader = _fuzz_yours.LoaderUnderTest(
            command=judge_command(config.command),
            timeout_s=config.timeout_s,
            reject_exit=config.reject_exit,
            reject_names=config.reject_names,
        )
        self.seen: set[str] = set()  # AFL++'s files already looked at
        self.digests: set[bytes] = set()  # inputs already judged (a seed is also a queue entry)
        self.judged = 0

    def where(self, category: str) -> str:
        return _fuzz_yours.reproducer_path(self.config.out_dir, category)

    def judge(self, data: bytes, afl_kind: str = "") -> list[tuple[str, str]]:
        """Classify one input and record its problems; ``afl_kind`` is 'crash' or 'hang' for AFL++'s own."""
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
            _fuzz_yours.record(self.config.out_dir, category, detail, data, cause=cause)
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


def _prepare_seeds(config: AflConfig, judge: _Judge, folder: str, deadline: float) -> int:
    """Write the seeds afl-fuzz may start from; crashing and hanging ones are findings instead.

    Those not tried by ``deadline`` (half the campaign) are left out: --seconds bounds the whole run.
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
    kept = 0
    for name, data in files.items():
        if time.monotonic() > deadline and kept:
            break
        # Judged now (one process each, the oracle beside it): the seed's
        # queue entry is then not judged again, and a crashing or hanging
        # seed stays out of afl-fuzz's folder.
        if any(category.startswith(("crash:", "hang")) for category, _ in judge.judge(data)):
            continue
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
        kept += 1
    return kept


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


def _env(config: AflConfig, tmpdir: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
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
        env = child_env({"AFL_PYTHON_MODULE": MUTATOR_MODULE}, env)
    env.update(config.env)
    if "AFL_NO_AFFINITY" not in env:
        # One core for afl-fuzz and the loader: a wake-up across cores costs
        # more than the loader's run in a VM (the naive loader: 7,800-8,500
        # executions a second unbound, 17,700-19,700 bound, back to back);
        # "TRY" goes on unbound where no core is free.
        env.setdefault("AFL_TRY_AFFINITY", "1")
    return env


class AflError(Exception):
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


def _progress(config: AflConfig, start: float, node: str, judge: _Judge) -> str:
    """One progress line.  afl-fuzz rewrites fuzzer_stats only once a minute
    (and plot_data not at all without its screen), so the counts come from
    its folders, and executions from the last stats it wrote."""
    elapsed = time.monotonic() - start
    stats = read_stats(os.path.join(node, "fuzzer_stats"))
    run_time = _int(stats.get("run_time"))
    # The first stats are written after the seeds' dry run, a second in: a
    # rate from them is meaningless (165 executions in 1 ms), so none is shown
    # until afl-fuzz's first whole-minute report.
    execs = (
        f"execs {stats.get('execs_done', '-')} by {run_time}s ({stats.get('execs_per_sec', '-')}/s)"
        if run_time >= _MIN_REPORT_S
        else "execs - (afl-fuzz reports them once a minute)"
    )
    return (
        f"[loader-under-test/{ENGINE}] {elapsed:5.0f}s  {execs}  loader edges {stats.get('edges_found', '-')}  "
        f"corpus {_count(os.path.join(node, 'queue'))}  crashes {_count(os.path.join(node, 'crashes'))}  "
        f"hangs {_count(os.path.join(node, 'hangs'))}  judged {judge.judged}  "
        f"findings {_fuzz_yours.count_findings(config.out_dir)}"
    )


def _sweep_all(judge: _Judge, node: str, until: float) -> int:
    """Judge AFL++'s new crashes, hangs and queue entries until ``until``; how many were left."""
    kinds = (("crashes", "crash"), ("hangs", "hang"), ("queue", ""))
    return sum(judge.sweep(os.path.join(node, folder), kind, until) for folder, kind in kinds)


def _watch(
    argv: list[str],
    config: AflConfig,
    *,
    judge: _Judge,
    node: str,
    log_path: str,
    start: float,
    out: Callable[[str], None],
) -> None:
    """Run afl-fuzz to its end (or the deadline), judging its new files as they come."""
    tmpdir = _ramdisk_folder()
    try:
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(  # noqa: S603 - afl-fuzz over the user's own binary
                argv, stdout=log, stderr=subprocess.STDOUT, env=_env(config, tmpdir), start_new_session=True
            )
            try:
                last = time.monotonic()
                deadline = start + config.seconds + config.grace_s
                while proc.poll() is None:
                    time.sleep(0.5)
                    if time.monotonic() - last >= config.interval_s:
                        last = time.monotonic()
                        _sweep_all(judge, node, deadline)
                        out(_progress(config, start, node, judge))
                    if time.monotonic() > deadline:
                        _stop(proc, signal.SIGINT)  # afl-fuzz writes its stats on SIGINT
            finally:
                _stop(proc, signal.SIGKILL)
    finally:
        _reap([os.path.join(folder, ".cur_input") for folder in (node, tmpdir) if folder is not None])
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


def run(config: AflConfig, out: Callable[[str], None] = print) -> Summary:
    """Run one AFL++ campaign; judge its queue, crashes and hangs; return the summary.

    Raises AflError when afl-fuzz is missing or stops before fuzzing.
    """
    binary = afl_fuzz()
    if binary is None:
        msg = f"afl-fuzz is not on PATH: {INSTALL_HINT}"
        raise AflError(msg)
    import resource  # noqa: PLC0415 - POSIX only, and only here

    cpu_before = sum(resource.getrusage(resource.RUSAGE_CHILDREN)[:2])
    base = os.path.abspath(os.path.join(config.workdir, "aflpp"))
    in_dir, afl_out = os.path.join(base, "in"), os.path.join(base, "out")
    os.makedirs(base, exist_ok=True)
    shutil.rmtree(afl_out, ignore_errors=True)
    dict_path = os.path.join(base, "safetensors.dict")
    with open(dict_path, "w", encoding="utf-8") as f:
        f.write(dictionary_text())
    judge = _Judge(config)
    start = time.monotonic()
    out(f"[loader-under-test/{ENGINE}] running the seeds through the loader before afl-fuzz starts")
    if _prepare_seeds(config, judge, in_dir, start + config.seconds / 2) == 0:
        msg = "every seed crashes or hangs the loader: nothing left for afl-fuzz to start from"
        raise AflError(msg)
    judge.loader.timeout_s = config.timeout_s
    seconds = max(1, int(config.seconds - (time.monotonic() - start)))
    argv = [
        binary,
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
        *(["-c", config.cmplog] if config.cmplog else []),
        "--",
        *afl_argv(config.command),
    ]
    log_path = os.path.join(base, "afl-fuzz.log")
    node = os.path.join(afl_out, "default")
    _watch(argv, config, judge=judge, node=node, log_path=log_path, start=start, out=out)
    stats = read_stats(os.path.join(node, "fuzzer_stats"))
    if not stats:
        raise AflError(_abort_reason(log_path))
    left = _sweep_all(judge, node, start + config.seconds + config.grace_s)
    out(_progress(config, start, node, judge))
    if left:
        out(f"[loader-under-test/{ENGINE}] time is up: {left} of afl-fuzz's new inputs were not judged by the oracle")
    summary = Summary(
        target="loader-under-test",
        seconds=time.monotonic() - start,
        cpu_seconds=sum(resource.getrusage(resource.RUSAGE_CHILDREN)[:2]) - cpu_before,
        execs=_int(stats.get("execs_done")),
        coverage=_int(stats.get("edges_found")),
        coverage_label="loader edges",
        corpus=_int(stats.get("corpus_count")),
        found=_fuzz_yours.count_findings(config.out_dir),
    )
    out(
        f"[loader-under-test/{ENGINE}] afl-fuzz: {summary.execs} execs at {stats.get('execs_per_sec', '?')}/s "
        f"over {stats.get('run_time', '?')}s; the loader's own coverage: {summary.coverage} edges "
        f"({stats.get('bitmap_cvg', '?')} of the map); {judge.judged} inputs judged by the oracle"
    )
    return summary
