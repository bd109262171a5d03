# Strategy: the parent side of the differential oracle's loader runs.  An
# Oracle starts the zygote (validator.formats._oracle_loaders, loaded by path
# in an isolated interpreter with a bare environment), hands it one file at
# a time over a pipe of JSON lines, and reads back what each real loader did
# (LoaderRun) as one Outcome per file.  A zygote that dies or loses step is
# restarted and the file run again, once.
# Paths are str, handled with os.path as in validator.sources.
from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from validator.formats import _oracle_loaders
from validator.formats._oracle_loaders import CRASHED, LOADERS, REFUSED

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = ["LoaderRun", "Oracle", "Outcome", "Ticket", "allowed_globals"]


@dataclass(frozen=True)
class LoaderRun:
    """What one real loader did with a file.

    ``status`` is "ok", "error", "refused-global" (the process was stopped at
    a global outside the allowlists, before it was imported), "refused-event"
    (stopped at a sensitive audit event), "timeout", "crashed" or
    "unavailable".  ``globals`` lists the (module, name) pairs resolved, in
    order, up to and including a refused one.
    """

    loader: str
    status: str
    globals: tuple[tuple[str, str], ...]
    detail: str = ""

    @property
    def refused(self) -> bool:
        """The loader was stopped before it could resolve something outside the allowlists."""
        return self.status in REFUSED


@dataclass(frozen=True)
class Outcome:
    """Every loader's run on one file."""

    path: str
    runs: tuple[LoaderRun, ...]

    def run(self, loader: str) -> LoaderRun | None:
        """The run of ``loader``, or None when it was not asked for."""
        return next((r for r in self.runs if r.loader == loader), None)

    @property
    def refused(self) -> tuple[LoaderRun, ...]:
        """The runs stopped at a global or event outside the allowlists."""
        return tuple(r for r in self.runs if r.refused)


# Words in a table's name that say it lists what is refused, not allowed.
_NOT_ALLOWING: Final = ("DENY", "DISALLOW", "UNSAFE", "BLOCK", "REFUS", "NOT_", "BAD")


def allowed_globals() -> frozenset[tuple[str, str]]:
    """stcheck's allowlists as (module, name) pairs: ALLOWED plus a data-only tier, when one exists.

    The data tier is any table in stcheck's allowlist modules whose name says
    it allows (``*ALLOW*`` or ``*DATA*``, never ``*DENY*``/``*UNSAFE*``) and
    whose keys or items are (module, name) pairs.  (A tier kept elsewhere
    is passed to ``Oracle(allowed=...)``.)
    """
    import importlib  # noqa: PLC0415

    pairs: set[tuple[str, str]] = set()
    for module_name in ("validator.pickles._allow", "validator.pickles._data", "validator.formats._allow"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for attr, value in vars(module).items():
            upper = attr.upper()
            if not ("ALLOW" in upper or "DATA" in upper) or any(w in upper for w in _NOT_ALLOWING):
                continue
            if isinstance(value, (dict, frozenset, set)) or hasattr(value, "keys"):
                pairs.update(
                    k for k in value if isinstance(k, tuple) and len(k) == 2 and all(isinstance(s, str) for s in k)
                )
    return frozenset(pairs)


class Oracle:
    """The real loaders, run on files in a throwaway zygote process.

        >>> with Oracle() as oracle:                                  # doctest: +SKIP
        ...     outcome = oracle.run("pytorch_model.bin")
        >>> [(r.loader, r.status) for r in outcome.runs]              # doctest: +SKIP
        [('pickle', 'error'), ('torch', 'ok'), ...]

    ``timeout`` bounds each loader on each file (wall clock, and CPU through
    RLIMIT_CPU); ``memory`` is the address space a loader may add.  The
    zygote is restarted when it dies.
    """

    def __init__(
        self,
        *,
        timeout: float = 10.0,
        memory: int = 2 << 30,
        allowed: Iterable[tuple[str, str]] | None = None,
        python: str | None = None,
    ) -> None:
        self.timeout = timeout
        self.memory = memory
        self.allowed = frozenset(allowed) if allowed is not None else allowed_globals()
        self.python = python or sys.executable
        self.restarts = 0
        self.available: tuple[str, ...] = ()
        self._proc: subprocess.Popen[str] | None = None
        self._count = 0
        self._home = tempfile.mkdtemp(prefix="stcheck-oracle-home-")

    def __enter__(self) -> Oracle:  # noqa: PYI034 - typing_extensions.Self is not a dependency
        self._start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the zygote and remove its directory."""
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(OSError):
                if proc.stdin is not None:
                    proc.stdin.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        shutil.rmtree(self._home, ignore_errors=True)

    def _start(self) -> subprocess.Popen[str]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        if self._proc is not None:
            self.restarts += 1
        boot = (
            "import importlib.util,sys;"
            "s=importlib.util.spec_from_file_location('_stcheck_oracle_zygote',sys.argv[1]);"
            "m=importlib.util.module_from_spec(s);sys.modules[s.name]=m;s.loader.exec_module(m);m.serve()"
        )
        os.makedirs(self._home, exist_ok=True)  # noqa: PTH103
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self._home,
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "LC_ALL": "C.UTF-8",
        }
        proc = subprocess.Popen(  # noqa: S603 - our own interpreter, our own file
            [self.python, "-I", "-c", boot, str(Path(_oracle_loaders.__file__).resolve())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=self._home,
            env=env,
            text=True,
            encoding="utf-8",
        )
        assert proc.stdin is not None
        config = {"allowed": sorted(self.allowed), "timeout": self.timeout, "memory": self.memory}
        proc.stdin.write(json.dumps(config) + "\n")
        proc.stdin.flush()
        ready = self._reply(proc, 120.0)
        if ready is None or "ready" not in ready:
            proc.kill()
            proc.wait()
            raise RuntimeError("the oracle's loader process did not start")
        self.available = tuple(ready["ready"])
        self._proc = proc
        return proc

    @staticmethod
    def _reply(proc: subprocess.Popen[str], wait: float) -> dict[str, Any] | None:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], wait)
        if not ready:
            return None
        line = proc.stdout.readline()
        if not line:
            return None
        reply: dict[str, Any] = json.loads(line)
        return reply

    def run(self, path: str | os.PathLike[str], loaders: Sequence[str] = LOADERS) -> Outcome:
        """Every loader in ``loaders`` on the file at ``path``, in a fork each (a fresh one after an abort)."""
        return self.collect(self.submit(path, loaders))

    def submit(self, path: str | os.PathLike[str], loaders: Sequence[str] = LOADERS) -> Ticket:
        """Start the loaders on ``path`` and return at once (``collect`` waits for them).

        One file at a time: collect a ticket before submitting the next.
        The caller's own work between the two overlaps the loaders'.
        """
        where = os.path.realpath(path)
        proc = self._start()
        assert proc.stdin is not None
        self._count += 1
        try:
            proc.stdin.write(json.dumps({"id": self._count, "path": where, "loaders": list(loaders)}) + "\n")
            proc.stdin.flush()
        except OSError:
            return Ticket(self._count, where, tuple(loaders), sent=False)
        return Ticket(self._count, where, tuple(loaders), sent=True)

    def collect(self, ticket: Ticket, *, retry: bool = True) -> Outcome:
        """The outcome of a submitted file; a zygote that died or lost step is restarted and the file run again."""
        proc = self._proc
        reply = None
        if ticket.sent and proc is not None:
            reply = self._reply(proc, self.timeout * (len(ticket.loaders) + 1) + 30)
        if reply is not None and reply.get("id") == ticket.id:
            return Outcome(ticket.path, tuple(_run(r) for r in reply["runs"]))
        if proc is not None:
            proc.kill()
            proc.wait()
        if retry:
            return self.collect(self.submit(ticket.path, ticket.loaders), retry=False)
        return Outcome(
            ticket.path, tuple(LoaderRun(ld, CRASHED, (), "the loader process died") for ld in ticket.loaders)
        )


@dataclass(frozen=True)
class Ticket:
    """A file handed to the oracle's loaders, to collect."""

    id: int
    path: str
    loaders: tuple[str, ...]
    sent: bool


def _run(item: dict[str, Any]) -> LoaderRun:
    pairs = tuple((str(p[0]), str(p[1])) for p in item.get("globals", ()))
    return LoaderRun(str(item["loader"]), str(item["status"]), pairs, str(item.get("detail", "")))
