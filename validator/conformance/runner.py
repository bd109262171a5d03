# Strategy: running implementations.  Each implementation runs in its own
# processes, one implementation per thread: through its adapter's fork
# server when it has one (a fresh child per file), else one fresh process per
# file, under a memory cap and a per-file alarm.  One raw outcome per
# (implementation, file) is classified as it arrives (classify.py).
from __future__ import annotations

import json
import os
import select
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Final

from validator.conformance.classify import classify
from validator.conformance.model import Raw, Result
from validator.harness import command as _command

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from validator.conformance.model import Case, Impl

__all__ = ["PROBE_TIMEOUT_S", "SIGALRM", "Server", "probe", "run_all", "run_command", "run_impl"]

PROBE_TIMEOUT_S: Final = 180.0
SIGALRM: Final = 14


def _env(impl: Impl) -> dict[str, str]:
    env = dict(os.environ)
    env.update(impl.env)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return env


def probe(impl: Impl) -> None:
    """Fill impl.version, or impl.skip_reason when it cannot run."""
    if impl.skip_reason or impl.probe_argv is None:
        return
    try:
        done = subprocess.run(  # noqa: S603 - the command comes from the implementations file
            impl.probe_argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, env=_env(impl), check=False
        )
    except subprocess.TimeoutExpired:
        impl.skip_reason = f"probe timed out after {PROBE_TIMEOUT_S:.0f} s"
        return
    except OSError as exc:
        impl.skip_reason = f"cannot start the adapter: {exc}"
        return
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        hint = f"; install with: {impl.install}" if impl.install else ""
        impl.skip_reason = f"unavailable ({last[:200]}){hint}"
        return
    try:
        impl.version = str(json.loads(done.stdout.strip().splitlines()[-1])["version"])
    except (ValueError, KeyError, IndexError):
        impl.skip_reason = f"probe printed no version: {done.stdout[-200:]!r}"
        return
    if impl.expect_version and impl.version != impl.expect_version:
        impl.skip_reason = f"found version {impl.version}, want {impl.expect_version}; install with: {impl.install}"


def _limit(memory_mb: int) -> Callable[[], None]:
    def apply() -> None:
        from validator.conformance.adapter import limit_memory  # noqa: PLC0415 - runs in the child

        limit_memory(memory_mb, on_top=False)

    return apply


def _arg(impl: Impl, path: Path) -> str:
    """The path as the adapter sees it: relative to its working directory if it has one."""
    if impl.cwd and path.resolve().is_relative_to(Path(impl.cwd)):
        return str(path.resolve().relative_to(Path(impl.cwd)))
    return str(path)


def run_command(impl: Impl, path: Path) -> Raw:
    """One file, one fresh process (user commands and the fallback)."""
    argv = [a.replace("{path}", _arg(impl, path)) for a in impl.argv]
    done = _command.run(
        argv,
        timeout=impl.timeout_s,
        env=_env(impl),
        cwd=impl.cwd,
        preexec=_limit(impl.memory_mb) if impl.memory_mb else None,
    )
    stderr = done.error or done.stderr
    return Raw(done.rc, done.signal, done.stdout, stderr, done.seconds, timed_out=done.timed_out)


class Server:
    """A running `ADAPTER --serve` fork server."""

    def __init__(self, impl: Impl) -> None:
        assert impl.serve_argv is not None
        self.impl = impl
        self.proc = subprocess.Popen(  # noqa: S603 - the command comes from the implementations file
            impl.serve_argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_env(impl),
            cwd=impl.cwd,
        )

    def run(self, path: Path) -> Raw | None:
        """The raw result, or None when the server itself died or hung."""
        proc = self.proc
        assert proc.stdin is not None
        assert proc.stdout is not None
        request = {"path": _arg(self.impl, path), "timeout": self.impl.timeout_s, "memory_mb": self.impl.memory_mb}
        try:
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.flush()
        except OSError:
            return None
        deadline = self.impl.timeout_s + 30
        ready, _, _ = select.select([proc.stdout], [], [], deadline)
        if not ready:
            return None
        line = proc.stdout.readline()
        if not line:
            return None
        answer = json.loads(line)
        sig = answer["signal"]
        return Raw(answer["rc"], sig, answer["stdout"], answer["stderr"], answer["seconds"], timed_out=sig == SIGALRM)

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


def run_impl(impl: Impl, cases: Sequence[Case], on_result: Callable[[Result], None]) -> list[Result]:
    """Run every case through one implementation."""
    results = []
    if impl.skip_reason:
        for case in cases:
            result = Result(impl.name, case.file, "skipped", detail=impl.skip_reason)
            results.append(result)
            on_result(result)
        return results
    server = Server(impl) if impl.serve_argv else None
    try:
        for case in cases:
            raw = server.run(case.path) if server else None
            if raw is None and server is not None:
                # The fork server died or hung: run this file on its own and
                # start a fresh server for the next one.
                server.proc.kill()
                server.close()
                raw = run_command(impl, case.path)
                server = Server(impl)
            elif raw is None:
                raw = run_command(impl, case.path)
            result = classify(impl, case, raw)
            results.append(result)
            on_result(result)
    finally:
        if server is not None:
            server.close()
    return results


def run_all(
    impls: Sequence[Impl], cases: Sequence[Case], *, jobs: int = 2, on_result: Callable[[Result], None] | None = None
) -> list[Result]:
    """Run every implementation over every case, `jobs` implementations at a time."""
    lock = threading.Lock()
    collected: dict[str, list[Result]] = {}
    pending = list(impls)

    def report(result: Result) -> None:
        if on_result is not None:
            with lock:
                on_result(result)

    def worker() -> None:
        while True:
            with lock:
                if not pending:
                    return
                impl = pending.pop(0)
            collected[impl.name] = run_impl(impl, cases, report)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [r for impl in impls for r in collected.get(impl.name, [])]
