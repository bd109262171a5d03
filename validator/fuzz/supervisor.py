# Strategy: the parent side of `stcheck fuzz`.  It prepares a work
# directory (seeds, dictionary, a corpus directory libFuzzer grows), starts
# one atheris/libFuzzer process per job with python -c BOOT, reads their
# progress lines (`#N NEW cov: C ft: F corp: K/S exec/s: E rss: R`) and
# prints a combined line every few seconds.  When a process stops on a
# finding, the runner names it by exception type and innermost frame,
# minimises it in a child process, saves it under the regressions directory
# with a one-line reproducer (`.cmd`), and restarts the job with the time
# left.  A signature found again is not saved twice; one found three times
# ends that job, since it blocks further progress until it is fixed.
# ruff: noqa: PLC0415, PTH100, PTH103, PTH110, PTH112, PTH118, PTH119, PTH123, PTH202, PTH206, PTH208
# Lazy imports: atheris, numpy, hypothesis and safetensors load, only where used.
# Paths: os.path and open(), like the rest of the package.
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from typing import IO, TYPE_CHECKING, Final

from validator.fuzz._child import child_env
from validator.fuzz.config import PERSISTENT, CampaignConfig, replay_command
from validator.fuzz.engine import SIDE_FILES, Finding, Missing, Problem, Summary, children_cpu, last_lines, replay_paths
from validator.fuzz.inprocess import BOOT, HYPOTHESIS, LOADER_UNDER_TEST
from validator.fuzz.seeds import dictionary_text, seed_files

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Summary", "atheris_available", "problem", "run"]

_PROGRESS: Final = re.compile(r"^#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+) corp: (\d+)/\S+.*?exec/s: (\d+)")
_EXECUTED: Final = re.compile(r"^stat::number_of_executed_units: (\d+)")
_ARTIFACT: Final = re.compile(r"Test unit written to (\S+)")
_PY_EXC: Final = re.compile(r"^\s*=== Uncaught Python exception: ===\s*$")
_FRAME: Final = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)')
_NOT_SEEDS: Final = (*SIDE_FILES, ".py", ".toml", ".jsonl", ".html", ".png", ".sh")
MAX_REPEATS: Final = 3


class _Job:
    """One engine process at a time for one job slot, restarted after findings."""

    def __init__(self, campaign: _Campaign, index: int) -> None:
        self.campaign = campaign
        self.index = index
        self.done_execs = 0  # executions of finished processes
        self.current_execs = 0
        self.stopped = False

    @property
    def execs(self) -> int:
        return self.done_execs + self.current_execs

    def run(self) -> None:
        c = self.campaign
        first = True
        while not self.stopped:
            left = c.deadline - time.monotonic()
            if left < 1 and not first:  # a target's share under a second still gets one short run
                return
            first = False
            output = self._one_process(int(left))
            c.last_output = output
            artifact = next((m.group(1) for m in _ARTIFACT.finditer(output)), None)
            if artifact is None or not os.path.exists(artifact):
                return  # time is up, or the engine stopped for a reason other than a finding
            if not c.handle(artifact, output):
                return

    def _one_process(self, seconds: int) -> str:
        c = self.campaign
        cfg = c.config
        art = os.path.join(c.dir, f"artifacts-{self.index}") + os.sep
        os.makedirs(art, exist_ok=True)
        argv = [
            sys.executable,
            "-c",
            BOOT,
            cfg.target,
            c.corpus_dir,
            *c.seed_dirs,
            f"-max_total_time={max(1, seconds)}",
            f"-timeout={c.engine_timeout}",
            f"-rss_limit_mb={cfg.rss_limit_mb}",
            f"-max_len={cfg.input_limit()}",
            # A loader's inputs may be as large as -max_len from the start (the big and
            # deep family's); libFuzzer otherwise lets them grow a few bytes at a time.
            *(["-len_control=0"] if cfg.target == LOADER_UNDER_TEST else []),
            f"-artifact_prefix={art}",
            "-print_final_stats=1",
            f"-seed={c.seed(self.index)}",
            *([f"-dict={c.dict_path}"] if c.dict_path else []),
            *cfg.engine_args,
        ]
        self.current_execs = 0
        lines: list[str] = []
        with subprocess.Popen(  # noqa: S603 - our own interpreter and module
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=c.child_env, text=True, errors="replace"
        ) as proc:
            c.processes.append(proc)
            stream: IO[str] = proc.stdout  # type: ignore[assignment]
            executed = None
            for line in stream:
                lines.append(line)
                if len(lines) > 400:
                    del lines[:200]
                m = _PROGRESS.match(line)
                if m is not None:
                    self.current_execs = int(m.group(1))
                    c.observe(int(m.group(3)), int(m.group(4)))
                    continue
                m = _EXECUTED.match(line)
                if m is not None:
                    executed = int(m.group(1))
            proc.wait()
        self.done_execs += executed if executed is not None else self.current_execs
        self.current_execs = 0
        return "".join(lines)


class _Campaign:
    def __init__(self, config: CampaignConfig, out: Callable[[str], None]) -> None:
        self.config = config
        # A command has --timeout per input (its own hang); the engine's limit must not come first.
        command = config.loader is not None and config.loader.command is not None
        self.engine_timeout = int(config.timeout_s * 2 + 5 if command else config.timeout_s)
        self.out_dir = config.loader.out_dir if config.loader is not None else ""
        self.out = out
        self.dir = os.path.abspath(os.path.join(config.workdir, config.target))
        self.corpus_dir = os.path.join(self.dir, "corpus")
        os.makedirs(self.corpus_dir, exist_ok=True)
        self.seed_dirs: list[str] = []
        self.dict_path: str | None = None
        if config.target != HYPOTHESIS:  # Hypothesis reads its own choice sequences, not files
            # Seeds: ours plus the given directories' files.  Saved regressions
            # stay out: one that still fails would stop every run at start-up.
            seeds = os.path.join(os.path.abspath(config.workdir), "seeds")
            shutil.rmtree(seeds, ignore_errors=True)
            os.makedirs(seeds)
            files = dict(seed_files())
            for path in replay_paths([d for d in config.seed_dirs if os.path.isdir(d)]):
                if "regressions" not in path.split(os.sep) and not path.endswith(_NOT_SEEDS):
                    with open(path, "rb") as f:
                        data = f.read()
                    files[hashlib.sha1(data, usedforsecurity=False).hexdigest()] = data
            for name, data in files.items():
                with open(os.path.join(seeds, name), "wb") as f:
                    f.write(data)
            self.seed_dirs = [seeds]
            self.dict_path = os.path.join(os.path.abspath(config.workdir), "safetensors.dict")
            with open(self.dict_path, "w", encoding="utf-8") as f:
                f.write(dictionary_text())
        self.child_env = child_env(config.child_env())
        self.tmp_dir = os.path.join(self.dir, "tmp")
        if config.engine != PERSISTENT:
            # The target's temporary files (a loader's input file) go here, and
            # go with it at the end even when the engine killed the target mid-input.
            # (A persistent harness keeps its file in memory unless TMPDIR is set.)
            os.makedirs(self.tmp_dir, exist_ok=True)
            self.child_env["TMPDIR"] = self.tmp_dir
        self.lock = threading.Lock()
        self.coverage = 0
        self.features = 0
        self.findings: list[Finding] = []
        self.last_output = ""
        self.processes: list[subprocess.Popen[str]] = []
        self.jobs = [_Job(self, i) for i in range(config.jobs)]
        self.start = time.monotonic()
        self.deadline = self.start + config.seconds

    def seed(self, index: int) -> int:
        return (int(time.time()) * 7919 + index * 104729) % (2**31 - 1) + 1

    def observe(self, coverage: int, features: int) -> None:
        with self.lock:
            self.coverage = max(self.coverage, coverage)
            self.features = max(self.features, features)

    def corpus_size(self) -> int:
        try:
            return len(os.listdir(self.corpus_dir))
        except OSError:
            return 0

    def found(self) -> int:
        """Findings so far.  Fuzzing a user's loader records each problem class in
        its --out as it is found (the target never stops the engine), so those
        are counted, not only the engine's stops."""
        if self.config.target != LOADER_UNDER_TEST:
            return len(self.findings)
        from validator.fuzz.loader_under_test import count_findings

        return count_findings(self.out_dir)

    def progress(self) -> str:
        elapsed = time.monotonic() - self.start
        execs = sum(j.execs for j in self.jobs)
        rate = execs / elapsed if elapsed > 0 else 0.0
        return (
            f"[{self.config.target}] {elapsed:5.0f}s  execs {execs}  ({rate:.0f}/s)  "
            f"{_coverage_label(self.config.target)} {self.coverage}  "
            f"ft {self.features}  corpus {self.corpus_size()}  findings {self.found()}"
        )

    def handle(self, artifact: str, output: str) -> bool:
        """File one finding; True when the job should go on."""
        kind = os.path.basename(artifact).split("-", 1)[0]
        sig = _signature(kind, output)
        with self.lock:
            known = next((f for f in self.findings if f.signature == sig), None)
            if known is not None:
                known.repeats += 1
                self.out(f"[{self.config.target}] found again: {sig} ({known.path})")
                return known.repeats < MAX_REPEATS
            if len(self.findings) >= self.config.max_findings:
                return False
        finding = self._save(kind, sig, artifact, output)
        with self.lock:
            self.findings.append(finding)
            self.out(f"[{self.config.target}] FINDING {sig}: saved {finding.path} ({finding.size} bytes)")
            self.out(f"    reproduce: {finding.reproduce}")
            return len(self.findings) < self.config.max_findings

    def _save(self, kind: str, sig: str, artifact: str, output: str) -> Finding:
        cfg = self.config
        if cfg.target == LOADER_UNDER_TEST:  # the user's loader hung, ran out of memory or died
            from validator.fuzz import loader_under_test as _fuzz_yours
            from validator.fuzz import triage

            out_dir = self.out_dir
            category = {"timeout": "hang", "oom": "out-of-memory"}.get(kind, f"crash:{sig}")
            with open(artifact, "rb") as f:
                data = f.read()
            # The crash site the engine's output names (a stack, a sanitizer's report), else the signal.
            cause = (triage.crash_cause(output) if kind == "crash" else None) or sig
            _fuzz_yours.record(out_dir, category, sig, data, cause=cause)
            path = _fuzz_yours.reproducer_path(out_dir, category)
            reproduce = replay_command(cfg, path, hang=kind == "timeout")
            return Finding(kind, sig, path, len(data), reproduce)
        dest_dir = os.path.join(cfg.regressions, cfg.target)
        os.makedirs(dest_dir, exist_ok=True)
        small = artifact + ".min"
        if kind == "crash":
            with contextlib.suppress(subprocess.TimeoutExpired):
                subprocess.run(  # noqa: S603 - our own interpreter and module
                    [
                        sys.executable,
                        "-m",
                        "validator.fuzz.inprocess",
                        "minimise",
                        cfg.target,
                        artifact,
                        small,
                        str(cfg.minimise_s),
                    ],
                    env=self.child_env,
                    capture_output=True,
                    timeout=cfg.minimise_s + 60,
                    check=False,
                )
        source = small if os.path.exists(small) and os.path.getsize(small) > 0 else artifact
        with open(source, "rb") as f:
            data = f.read()
        name = f"{kind}-{hashlib.sha1(data, usedforsecurity=False).hexdigest()[:12]}"
        path = os.path.join(dest_dir, name + ".bin")
        with open(path, "wb") as f:
            f.write(data)
        reproduce = replay_command(cfg, path)
        with open(os.path.join(dest_dir, name + ".cmd"), "w", encoding="utf-8") as f:
            f.write(reproduce + "\n")
        excerpt = [line for line in output.splitlines() if not line.startswith(("#", "INFO:", "WARNING:"))][-40:]
        with open(os.path.join(dest_dir, name + ".log"), "w", encoding="utf-8") as f:
            f.write(f"signature: {sig}\n" + "\n".join(excerpt) + "\n")
        return Finding(kind, sig, path, len(data), reproduce)

    def stop(self) -> None:
        for job in self.jobs:
            job.stopped = True
        for proc in self.processes:
            if proc.poll() is None:
                proc.terminate()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:60]


def _signature(kind: str, output: str) -> str:
    """Exception type and innermost frame of an atheris crash report; the kind otherwise."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if _PY_EXC.match(line)), None)
    if kind != "crash" or start is None:
        return kind
    exc_type = lines[start + 1].split(":", 1)[0].strip() if start + 1 < len(lines) else "?"
    frame = None
    for line in lines[start + 1 :]:
        m = _FRAME.match(line)
        if m is not None:
            frame = m
        elif line.startswith("==") or "libFuzzer" in line:
            break
    where = f" at {os.path.basename(frame.group(1))}:{frame.group(2)} ({frame.group(3)})" if frame else ""
    return f"{exc_type.rsplit('.', 1)[-1]}{where}"


def run(config: CampaignConfig, out: Callable[[str], None] = print) -> Summary:
    """Run one campaign; print progress through ``out``; return its summary."""
    cpu_before = children_cpu()
    campaign = _Campaign(config, out)
    threads = [threading.Thread(target=job.run, daemon=True) for job in campaign.jobs]
    for thread in threads:
        thread.start()
    last = time.monotonic()
    overdue = False
    try:
        while any(t.is_alive() for t in threads):
            for thread in threads:
                thread.join(timeout=0.5)
            if time.monotonic() - last >= config.interval_s:
                last = time.monotonic()
                out(campaign.progress())
            if not overdue and time.monotonic() > campaign.deadline + config.grace_s:
                # libFuzzer checks -max_total_time only once it is fuzzing, not
                # while it runs the seeds: a slow target (a loader command) would
                # run on for minutes.
                overdue = True
                out(f"[{config.target}] time is up: stopping the engine (it was still running its seeds)")
                campaign.stop()
    except KeyboardInterrupt:
        campaign.stop()
        for thread in threads:
            thread.join(timeout=10)
        raise
    finally:
        shutil.rmtree(campaign.tmp_dir, ignore_errors=True)
    out(campaign.progress())
    return Summary(
        target=config.target,
        seconds=time.monotonic() - campaign.start,
        cpu_seconds=children_cpu() - cpu_before,
        execs=sum(j.execs for j in campaign.jobs),
        coverage=campaign.coverage,
        coverage_label=_coverage_label(config.target),
        features=campaign.features,
        corpus=campaign.corpus_size(),
        findings=campaign.findings,
        found=campaign.found(),
        engine_said=last_lines(campaign.last_output),
        instances=config.jobs,
    )


def _coverage_label(target: str) -> str:
    """What atheris' coverage counts: stcheck's own branches (the oracle's, fuzzing a loader)."""
    return "oracle coverage" if target == LOADER_UNDER_TEST else "coverage"


def problem(config: CampaignConfig) -> Problem | None:
    """Why atheris cannot run ``config``: it is not installed, or the target needs what is not."""
    if not atheris_available():
        return Missing("atheris is not installed", "fuzz")
    if config.target == HYPOTHESIS and not has_strategies():
        return "the hypothesis target needs validator.strategies, which is not installed"
    return None


def has_strategies() -> bool:
    """Whether validator.strategies (the hypothesis target's files) can be imported."""
    try:
        from validator import strategies
    except ImportError:
        return False
    return hasattr(strategies, "valid_files")


def atheris_available() -> bool:
    """Whether atheris can be imported (the `fuzz` extra)."""
    import importlib.util

    return importlib.util.find_spec("atheris") is not None


def clean(workdir: str) -> None:
    """Remove a work directory (the grown corpus and artifacts)."""
    shutil.rmtree(workdir, ignore_errors=True)
