# Strategy: a differential oracle for stcheck's pickle verdicts.  stcheck
# reads pickles statically; the real loaders (pickle.load, torch.load,
# numpy.load(allow_pickle=True), joblib.load) decide what actually runs.
# This module runs those loaders on the same bytes, in a throwaway process,
# and records every global each one resolves, through the audit event that
# every unpickler raises before it imports anything ("pickle.find_class":
# the C and pure-Python Unpicklers, and so torch's, numpy's and joblib's
# subclasses that call up to them).
#
# Safety: the audit hook aborts the process (os._exit, a distinct status,
# after writing what it saw) at the first global outside stcheck's
# allowlists, before that global is imported, so a hostile sample never runs
# its payload even here.  As a second fence it also aborts on audit events no
# load of data raises (a process, a socket, ctypes, exec, a write outside the
# worker's own temporary directory).  The process is a fork of a zygote that
# imported torch, numpy and joblib once (an import costs ~2 s, a fork ~10 ms),
# with a temporary cwd, RLIMIT_AS and RLIMIT_CPU, and a wall-clock deadline.
#
# The zygote is this very file, loaded by path under `python -I` (isolated:
# no PYTHON* variables, no user site, no cwd on sys.path), so its top level
# imports only the standard library; stcheck's own modules are imported
# lazily, by the parent side only.
#
#   python -m validator.formats.oracle run FILE...           # what each loader resolves
#   python -m validator.formats.oracle check FILE...         # stcheck's claims against the loaders
#   python -m validator.formats.oracle campaign --seconds N --out DIR [SEED_DIR...]
#
# Paths are str, handled with os.path as in validator.sources.
# ruff: noqa: PTH112, PTH118, PTH119, PTH208
from __future__ import annotations

import _compat_pickle
import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

try:
    import resource
except ImportError:  # pragma: no cover - not POSIX: no limits but the deadline
    resource = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

__all__ = [
    "ABORT_EVENT",
    "ABORT_GLOBAL",
    "LOADERS",
    "Claims",
    "Disagreement",
    "LoaderRun",
    "Oracle",
    "Outcome",
    "Ticket",
    "allowed_globals",
    "campaign",
    "check",
    "claims",
    "judge",
    "main",
]

# Exit statuses of a loader process that the audit hook stopped.
ABORT_GLOBAL: Final = 86  # a global outside the allowlists was about to be resolved
ABORT_EVENT: Final = 87  # an audit event no load of data raises

# Each loader, by the name results carry.  "torch-weights-only" is
# torch.load(weights_only=True): the oracle for ST705's promise, as is
# "torch-weights-only-unpickler" (torch's weights-only Unpickler on the file
# as one plain pickle stream) for a plain pickle.
LOADERS: Final = ("pickle", "torch", "numpy", "joblib", "torch-weights-only", "torch-weights-only-unpickler")
# The loaders that run code of the file's choosing when the file asks.
CODE_LOADERS: Final = ("pickle", "torch", "numpy", "joblib")

# Run statuses.
OK: Final = "ok"  # the loader returned
ERROR: Final = "error"  # the loader raised (after resolving only allowed globals)
REFUSED_GLOBAL: Final = "refused-global"  # aborted at a global outside the allowlists
REFUSED_EVENT: Final = "refused-event"  # aborted at a sensitive audit event
TIMEOUT: Final = "timeout"
CRASHED: Final = "crashed"  # killed by a signal or a resource limit
UNAVAILABLE: Final = "unavailable"  # the loader's library is not installed
REFUSED: Final = frozenset({REFUSED_GLOBAL, REFUSED_EVENT})

# How many distinct globals one run records (a stream may import millions).
_MAX_SEEN: Final = 256
_DETAIL: Final = 300
# Audit events that loading data never raises.  "open" and the file events are
# judged by path: torch.load extracts a legacy tar into a temporary directory.
_SENSITIVE_PREFIXES: Final = (
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.forkpty",
    "os.kill",
    "os.killpg",
    "os.putenv",
    "os.unsetenv",
    "subprocess.Popen",
    "socket.",
    "ctypes.",
    "webbrowser.open",
    "builtins.input",
    "code.__new__",
    "cpython.run_",
    "import_module",
    "pty.spawn",
    "sqlite3.connect",
    "urllib.Request",
    "http.client.connect",
)
_PATH_EVENTS: Final = frozenset(
    {
        "os.remove",
        "os.rmdir",
        "os.rename",
        "os.mkdir",
        "os.chmod",
        "os.chown",
        "os.utime",
        "os.symlink",
        "os.link",
        "os.truncate",
        "shutil.rmtree",
        "shutil.move",
        "shutil.copyfile",
    }
)
_WRITE_FLAGS: Final = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


# -- the loader process (runs in the zygote and its forks: standard library only) ------------


@dataclass
class _Watch:
    """What the audit hook knows in a loader process: None state in the zygote."""

    allowed: frozenset[tuple[str, str]]
    private: str  # the process's own temporary directory: writes there are torch's
    out: IO[str] | None = None  # the channel to the zygote, in a loader process
    loader: str = ""
    seen: list[tuple[str, str]] = dataclasses.field(default_factory=list)


_WATCH: _Watch | None = None


def _fixed(module: str, name: str) -> tuple[str, str]:
    # pickle's fix_imports (protocols 0 to 2) renames Python 2 names after the
    # audit event and before the import: judge the name that is imported.
    if (module, name) in _compat_pickle.NAME_MAPPING:
        pair: tuple[str, str] = _compat_pickle.NAME_MAPPING[module, name]
        return pair
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def _sensitive(event: str, args: tuple[Any, ...], private: str) -> bool:
    if event == "exec":
        # Imports execute code objects read from files; a payload's code is
        # compiled from a string ("<string>").  ("compile" alone is not
        # sensitive: numpy parses an .npy header with ast.literal_eval.)
        filename = getattr(args[0], "co_filename", None) if args else None
        return not isinstance(filename, str) or filename.startswith("<")
    if event == "open":
        path, mode, flags = ([*list(args), None, None, 0])[:3]
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        return bool(writes) and not _inside(path, private)
    if event in _PATH_EVENTS:
        return not all(_inside(a, private) for a in args[:2] if isinstance(a, (str, bytes, os.PathLike)))
    return event.startswith(_SENSITIVE_PREFIXES)


def _inside(path: object, private: str) -> bool:
    if isinstance(path, int):  # an open file descriptor
        return True
    try:
        text = os.fsdecode(path)  # type: ignore[arg-type]  # checked by the except
    except TypeError:
        return False
    return os.path.realpath(text).startswith(private + os.sep)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    watch = _WATCH
    if watch is None or watch.out is None:
        return
    if event == "pickle.find_class":
        module, name = (args[0], args[1]) if len(args) == 2 else ("?", "?")
        pair = (module if isinstance(module, str) else repr(module), name if isinstance(name, str) else repr(name))
        refused = pair not in watch.allowed and _fixed(*pair) not in watch.allowed
        if pair not in watch.seen and (len(watch.seen) < _MAX_SEEN or refused):
            watch.seen.append(pair)
        if refused:
            _stop(watch, REFUSED_GLOBAL, f"{pair[0]}.{pair[1]}", ABORT_GLOBAL)
    elif _sensitive(event, args, watch.private):
        _stop(watch, REFUSED_EVENT, f"{event} {args!r}"[:_DETAIL], ABORT_EVENT)


def _stop(watch: _Watch, status: str, detail: str, code: int) -> None:
    out = watch.out
    if out is not None:
        out.write(json.dumps(_record(watch, status, detail)) + "\n")
        out.flush()
    os._exit(code)


def _record(watch: _Watch, status: str, detail: str) -> dict[str, Any]:
    return {"loader": watch.loader, "status": status, "globals": [list(p) for p in watch.seen], "detail": _clip(detail)}


def _clip(text: str) -> str:
    # torch's weights-only refusals wrap the cause in advice; keep the cause.
    head, marker, cause = text.partition("WeightsUnpickler error:")
    if marker:
        text = f"{head.split(':', 1)[0]}: Weights only load failed: {cause.split('Check the documentation')[0]}"
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL else f"{text[: _DETAIL // 3]} ... {text[-2 * _DETAIL // 3 :]}"


def _load(loader: str, path: str) -> None:
    if loader == "pickle":
        import pickle  # noqa: PLC0415 - the loader under test

        with open(path, "rb") as f:  # noqa: PTH123 - as a user opens it
            pickle.load(f)  # noqa: S301 - the point: aborted at any global off the allowlists
    elif loader in {"torch", "torch-weights-only"}:
        import torch  # noqa: PLC0415

        torch.load(path, map_location="cpu", weights_only=loader == "torch-weights-only")
    elif loader == "torch-weights-only-unpickler":
        from torch import _weights_only_unpickler  # noqa: PLC0415

        with open(path, "rb") as f:  # noqa: PTH123
            unpickler = _weights_only_unpickler.Unpickler(f, encoding="utf-8")
            # torch.load supplies the storages of a stream inside its containers
            unpickler.persistent_load = _zero_storage  # type: ignore[method-assign]
            unpickler.load()  # type: ignore[no-untyped-call]  # untyped in torch
    elif loader == "numpy":
        import numpy as np  # noqa: PLC0415

        loaded = np.load(path, allow_pickle=True)
        if hasattr(loaded, "files"):  # an NpzFile: numpy reads a member when it is asked for
            with loaded:
                for key in loaded.files:
                    loaded[key]
    elif loader == "joblib":
        import joblib  # type: ignore[import-untyped]  # noqa: PLC0415 - no stubs published

        joblib.load(path)
    else:
        raise ValueError(f"unknown loader {loader!r}")


def _zero_storage(pid: object) -> object:
    """A zeroed storage for a ("storage", type, key, location, numel) id, as torch.load's would be."""
    import torch  # noqa: PLC0415

    if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"):
        raise TypeError(f"unsupported persistent id {pid!r:.80}")
    storage_type, numel = pid[1], pid[4]
    dtype = torch.uint8 if storage_type is torch.UntypedStorage else storage_type.dtype
    if not isinstance(numel, int) or not 0 <= numel <= 1 << 24:
        raise ValueError("storage size out of range")
    size = numel * torch._utils._element_size(dtype)  # type: ignore[no-untyped-call]  # noqa: SLF001 - torch's helper
    untyped = torch.UntypedStorage(size)  # type: ignore[no-untyped-call]  # untyped in torch
    return torch.storage.TypedStorage(wrap_storage=untyped, dtype=dtype, _internal=True)  # type: ignore[no-untyped-call]


def _available(loader: str) -> bool:
    module = {"numpy": "numpy", "joblib": "joblib", "pickle": "pickle"}.get(loader, "torch")
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def _limit(memory: int, cpu: int) -> None:
    if resource is None:
        return
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/statm", encoding="ascii") as f:  # noqa: PTH123
            mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (mapped + memory, mapped + memory))
    with contextlib.suppress(OSError, ValueError):
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    with contextlib.suppress(OSError, ValueError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _child(watch: _Watch, write_fd: int, path: str, loaders: list[str], *, memory: int, cpu: int) -> None:
    """A forked loader process: run each loader in turn, one JSON line each."""
    out = os.fdopen(write_fd, "w", encoding="utf-8")
    watch.out = out
    _limit(memory, cpu)
    for loader in loaders:
        watch.loader, watch.seen = loader, []
        out.write(json.dumps({"start": loader}) + "\n")
        out.flush()
        if not _available(loader):
            out.write(json.dumps(_record(watch, UNAVAILABLE, "not installed")) + "\n")
            continue
        try:
            _load(loader, path)
        except BaseException as exc:  # noqa: BLE001 - any failure of the loader is its answer
            out.write(json.dumps(_record(watch, ERROR, f"{type(exc).__name__}: {exc}")) + "\n")
        else:
            out.write(json.dumps(_record(watch, OK, "")) + "\n")
        out.flush()
    watch.out = None
    out.close()
    os._exit(0)


def _fork_run(  # noqa: C901 - one loop: fork, read, account for each way a fork ends
    watch: _Watch, path: str, loaders: list[str], *, timeout: float, memory: int
) -> list[dict[str, Any]]:
    """Run ``loaders`` on ``path`` in forks of this process, a fresh fork after each abort."""
    runs: list[dict[str, Any]] = []
    todo = list(loaders)
    while todo:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child exits inside
            os.close(read_fd)
            try:
                _child(watch, write_fd, path, todo, memory=memory, cpu=max(1, int(timeout)))
            except BaseException as exc:  # noqa: BLE001 - the fork must never return into the zygote
                sys.stderr.write(f"oracle loader process: {type(exc).__name__}: {exc}\n")
            finally:
                os._exit(70)
        os.close(write_fd)
        lines, timed_out = _read_until(read_fd, time.monotonic() + timeout * len(todo))
        if timed_out:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        os.close(read_fd)
        current, before = None, len(todo)
        for line in lines:
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if "start" in item:
                current = item["start"]
            elif item.get("loader") in todo:
                runs.append(item)
                todo.remove(item["loader"])
                current = None
        if current is not None and current in todo:  # the process died inside this loader
            code = os.waitstatus_to_exitcode(status)
            what = TIMEOUT if timed_out else CRASHED
            runs.append({"loader": current, "status": what, "globals": [], "detail": f"exit status {code}"})
            todo.remove(current)
        if len(todo) == before:  # died before it started anything: no loop on a process that cannot start
            runs.extend({"loader": ld, "status": CRASHED, "globals": [], "detail": "no output"} for ld in todo)
            todo = []
    return runs


def _read_until(fd: int, deadline: float) -> tuple[list[str], bool]:
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks).decode("utf-8", "replace").splitlines(), True
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks).decode("utf-8", "replace").splitlines(), False
        chunks.append(chunk)


def _warm(directory: str) -> None:
    """Import the loaders and run each once on benign data, so forks start warm.

    The lazily imported parts of torch, numpy and joblib then come from the
    zygote's memory instead of being imported (and audited) in every fork.
    """
    import pickle  # noqa: PLC0415

    with contextlib.suppress(ImportError):
        import numpy as np  # noqa: PLC0415

        np.save(os.path.join(directory, "w.npy"), np.array([1, "a"], dtype=object), allow_pickle=True)
        with contextlib.suppress(Exception):
            np.load(os.path.join(directory, "w.npy"), allow_pickle=True)
        with contextlib.suppress(ImportError, Exception):
            import joblib  # noqa: PLC0415

            joblib.dump({"a": np.zeros(2)}, os.path.join(directory, "w.joblib"), compress=1)
            joblib.load(os.path.join(directory, "w.joblib"))
    with contextlib.suppress(ImportError, Exception):
        import torch  # noqa: PLC0415

        torch.set_num_threads(1)
        torch.save({"w": torch.zeros(2)}, os.path.join(directory, "w.pt"))
        torch.load(os.path.join(directory, "w.pt"), weights_only=False)
        torch.load(os.path.join(directory, "w.pt"), weights_only=True)
        from torch import _weights_only_unpickler  # noqa: PLC0415, F401
    with open(os.path.join(directory, "w.pkl"), "wb") as f:  # noqa: PTH123
        pickle.dump({"a": 1}, f)
    for name in os.listdir(directory):
        os.remove(os.path.join(directory, name))  # noqa: PTH107


def _serve() -> None:
    """The zygote: read a configuration line, then one request line per file."""
    global _WATCH  # noqa: PLW0603 - the audit hook's one piece of state
    results = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what the loaders print goes to stderr, never into the results
    config = json.loads(sys.stdin.readline())
    private = os.path.realpath(tempfile.mkdtemp(prefix="stcheck-oracle-"))
    tempfile.tempdir = private
    os.environ["TMPDIR"] = private
    os.chdir(private)
    _warm(private)
    _WATCH = _Watch(frozenset((m, n) for m, n in config["allowed"]), private)
    sys.addaudithook(_hook)
    results.write(json.dumps({"ready": [ld for ld in LOADERS if _available(ld)]}) + "\n")
    results.flush()
    for line in sys.stdin:
        request = json.loads(line)
        runs = _fork_run(
            _WATCH, request["path"], request["loaders"], timeout=config["timeout"], memory=config["memory"]
        )
        results.write(json.dumps({"id": request["id"], "runs": runs}) + "\n")
        results.flush()


# -- the parent side -----------------------------------------------------------------------


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
            "m=importlib.util.module_from_spec(s);sys.modules[s.name]=m;s.loader.exec_module(m);m._serve()"
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
            [self.python, "-I", "-c", boot, str(Path(__file__).resolve())],
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


# -- stcheck's claims, and the check -------------------------------------------------------


@dataclass(frozen=True)
class Claims:
    """What stcheck says of one file.

    ``codes`` are the finding codes the folder dispatch
    (``validator.sources.kinds.classify``) gives the file; ``runs_no_code``
    is True when none of them is ST701; ``torch_promise`` when it promises
    that torch.load(weights_only=True) loads the file (ST705 with
    ``torch_weights_only``).  ``reader_*`` are the same for the public
    reader (``read_pickle_bytes``): clean when ``weights_only`` or a
    ``data_only`` tier says no code runs.  ``crash`` names an exception
    stcheck raised, which is a finding of its own.
    """

    kind: str
    codes: tuple[str, ...]
    runs_no_code: bool
    torch_promise: bool
    container: str | None
    reader_clean: bool
    reader_torch_promise: bool
    reader_kind: str
    crash: str | None = None


def claims(path: str | os.PathLike[str]) -> Claims:
    """stcheck's claims about the file at ``path``, as a folder member (alone in its folder) and by the reader."""
    from validator.pickles import read_pickle_bytes  # noqa: PLC0415 - stcheck loads only on the parent side
    from validator.sources.kinds import classify  # noqa: PLC0415

    where = str(path)
    try:
        other = classify(where, [os.path.basename(where)])
        data = Path(where).read_bytes()
        verdict = read_pickle_bytes(data, name=os.path.basename(where))
    except Exception as exc:  # noqa: BLE001 - any exception out of stcheck on bad input is a finding
        return Claims(
            kind="?",
            codes=(),
            runs_no_code=False,
            torch_promise=False,
            container=None,
            reader_clean=False,
            reader_torch_promise=False,
            reader_kind="?",
            crash=f"{type(exc).__name__}: {exc}"[:_DETAIL],
        )
    codes = tuple(f.code for f in other.findings)
    promise = any(f.code == "ST705" and _promises_torch(f.message) for f in other.findings)
    pickle = other.pickle or {}
    reader_clean = verdict.weights_only or bool(getattr(verdict, "data_only", False))
    return Claims(
        kind=other.kind,
        codes=codes,
        runs_no_code="ST701" not in codes,
        torch_promise=promise and bool(pickle.get("torch_weights_only")),
        container=pickle.get("container"),
        reader_clean=reader_clean,
        reader_torch_promise=verdict.weights_only and verdict.torch_weights_only and _promises_torch(verdict.message()),
        reader_kind=verdict.kind,
    )


def _promises_torch(message: str) -> bool:
    return "weights_only=True" in message and "not " not in message.split("weights_only=True", maxsplit=1)[0][-40:]


@dataclass(frozen=True)
class Disagreement:
    """stcheck said one thing, a real loader did another.

    ``what`` is "false-clean" (the folder dispatch gave no ST701, a loader
    resolved a global outside the allowlists), "reader-false-clean" (the
    same for ``read_pickle_bytes``), "broken-promise" (torch.load
    (weights_only=True) was promised and refused the file),
    "reader-broken-promise", or "stcheck-crash".  ``reproducer`` is the
    saved copy of the file, when one was saved.
    """

    what: str
    name: str
    loader: str
    detail: str
    reproducer: str | None = None


# Which loader keeps ST705's promise, by the container stcheck read: torch.load
# itself for its own containers; for a bare stream, torch's weights-only
# Unpickler on it (with the storages torch.load would supply).
_PROMISE_LOADER: Final = {
    "torch-zip": "torch-weights-only",
    "torch-legacy": "torch-weights-only",
    "pickle": "torch-weights-only-unpickler",
}


# The loader that reads the same bytes without weights_only's restrictions.
_PROMISE_PEER: Final = {"torch-weights-only": "torch", "torch-weights-only-unpickler": "pickle"}


def _breaks_promise(answer: LoaderRun, peer: LoaderRun | None) -> bool:
    # A promise that weights_only=True loads the file is broken when torch's
    # restricted unpickler refuses it (torch raises UnpicklingError, wrapped
    # in "Weights only load failed" by torch.load), or when the unrestricted
    # loader loads it and the restricted one does not.  A file both fail on
    # alike (a tensor whose sizes do not fit its storage) is malformed data,
    # which no promise about weights_only covers.
    if answer.status in {OK, UNAVAILABLE}:
        return False
    refused = answer.status != ERROR or answer.detail.startswith("UnpicklingError")
    return refused or (peer is not None and peer.status == OK)


def judge(name: str, said: Claims, outcome: Outcome) -> list[Disagreement]:
    """Every disagreement between stcheck's claims about a file and the loaders' runs on it."""
    found: list[Disagreement] = []
    if said.crash is not None:
        found.append(Disagreement("stcheck-crash", name, "stcheck", said.crash))
    for run in outcome.refused:
        detail = f"{run.loader} {run.status}: {run.detail}"
        if said.runs_no_code and said.crash is None:
            found.append(Disagreement("false-clean", name, run.loader, f"{detail} (stcheck: {said.codes or 'none'})"))
        if said.reader_clean:
            found.append(Disagreement("reader-false-clean", name, run.loader, f"{detail} (reader: {said.reader_kind})"))
    for promised, what in (
        (said.torch_promise, "broken-promise"),
        (said.reader_torch_promise, "reader-broken-promise"),
    ):
        if not promised:
            continue
        kind = said.container if what == "broken-promise" else said.reader_kind
        loader = _PROMISE_LOADER.get(kind or "")
        if loader is None:  # a container torch.load does not read (npy, npz, joblib): its message names no torch.load
            continue
        answer = outcome.run(loader)
        if answer is not None and _breaks_promise(answer, outcome.run(_PROMISE_PEER[loader])):
            found.append(Disagreement(what, name, loader, f"{answer.status}: {answer.detail}"))
    return found


def check(
    path: str | os.PathLike[str],
    oracle: Oracle,
    out: str | os.PathLike[str] | None = None,
    *,
    said: Claims | None = None,
) -> list[Disagreement]:
    """stcheck's claims about ``path`` judged by the real loaders; each disagreement's file saved under ``out``.

    ``said`` replaces stcheck's claims (to test the check itself).
    """
    said = claims(path) if said is None else said
    outcome = oracle.run(path)
    name = os.path.basename(str(path))
    found = judge(name, said, outcome)
    if found and out is not None:
        saved = save_reproducer(Path(path).read_bytes(), name, out, said=said, outcome=outcome, found=found)
        found = [dataclasses.replace(d, reproducer=saved) for d in found]
    return found


def save_reproducer(
    data: bytes, name: str, out: str | os.PathLike[str], *, said: Claims, outcome: Outcome, found: list[Disagreement]
) -> str:
    """Write ``data`` as ``<what>-<sha1>-<name>`` under ``out``, with a ``.json`` of the claims and runs beside it."""
    digest = hashlib.sha1(data).hexdigest()[:12]  # noqa: S324 - a name, not a security boundary
    target = Path(out) / f"{found[0].what}-{digest}-{_safe(name)}"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    record = {
        "name": name,
        "claims": dataclasses.asdict(said),
        "runs": [dataclasses.asdict(r) for r in outcome.runs],
        "disagreements": [dataclasses.asdict(d) for d in found],
    }
    target.with_name(target.name + ".json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return str(target)


# -- the campaign --------------------------------------------------------------------------


@dataclass
class CampaignStats:
    """What a campaign did: inputs judged, how fast, and what disagreed.

    ``classes`` counts disagreements by class (what, loader, stcheck's kind,
    container and codes, the file's magic); ``disagreements`` keeps the
    first few of each class, with their reproducers.
    """

    inputs: int = 0
    seconds: float = 0.0
    corpus: int = 0
    refused: int = 0  # inputs on which some loader was stopped at a global
    restarts: int = 0
    mutator_errors: int = 0  # parents on which the mutator raised (saved as findings/mutator-*)
    disagreements: list[Disagreement] = dataclasses.field(default_factory=list)
    classes: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def rate(self) -> float:
        """Inputs judged per second."""
        return self.inputs / self.seconds if self.seconds else 0.0

    @property
    def total(self) -> int:
        """Every disagreement seen, saved or not."""
        return sum(self.classes.values())

    def line(self) -> str:
        """One progress line."""
        return (
            f"[oracle] {self.seconds:7.0f}s  inputs {self.inputs}  ({self.rate:.1f}/s)  corpus {self.corpus}  "
            f"refused {self.refused}  restarts {self.restarts}  disagreements {self.total} "
            f"in {len(self.classes)} classes"
            + (f"  mutator errors {self.mutator_errors}" if self.mutator_errors else "")
        )


# Reproducers kept per class of disagreement in a mutating campaign.
_PER_CLASS: Final = 3


def _signature(said: Claims, outcome: Outcome) -> tuple[object, ...]:
    # An input joins the corpus when it shows a new combination of what
    # stcheck said and what each loader did (a cheap stand-in for coverage
    # where the code under test runs in another process).
    return (
        said.kind,
        said.codes,
        said.container,
        said.reader_kind,
        said.reader_clean,
        tuple((r.loader, r.status, r.globals[:4], r.detail.split(":")[0][:40]) for r in outcome.runs),
    )


def _class(d: Disagreement, said: Claims, data: bytes) -> str:
    from validator.fuzz.pickle_mutator import magic  # noqa: PLC0415

    codes = ",".join(said.codes) or "none"
    container = said.container or said.reader_kind
    return f"{d.what} {d.loader} kind={said.kind} container={container} codes={codes} magic={magic(data)}"


def campaign(
    *,
    seconds: float,
    out: str | os.PathLike[str],
    seeds: Iterable[tuple[str, bytes]],
    rng_seed: int = 0,
    oracle: Oracle | None = None,
    log: Callable[[str], None] | None = None,
    interval: float = 60.0,
    mutate: bool = True,
) -> CampaignStats:
    """Judge every seed, then mutated inputs until ``seconds`` pass; disagreements go under ``out``.

    ``seeds`` are (file name, bytes) pairs; the name's extension is what
    stcheck's dispatch sees.  Every seed is judged first, whatever
    ``seconds`` says.  With ``mutate=False`` only the seeds are judged
    (the replay CI runs) and every disagreement keeps its reproducer; a
    mutating campaign keeps the first few of each class, and writes the
    inputs it adds to its corpus under ``out/corpus`` as it goes.
    """
    rng = random.Random(rng_seed)  # noqa: S311 - fuzzing, not cryptography
    stats = CampaignStats()
    corpus = list(seeds)
    known = {hashlib.sha1(d).digest() for _, d in corpus}  # noqa: S324 - identity, not security
    signatures: set[tuple[object, ...]] = set()
    own = oracle is None
    runner = oracle if oracle is not None else Oracle(timeout=5.0)
    work = Path(tempfile.mkdtemp(prefix="stcheck-oracle-inputs-"))
    corpus_dir = Path(out) / "corpus"
    start = last = time.monotonic()
    try:
        runner._start()  # noqa: SLF001 - start the zygote before the clock matters
        queue = list(corpus)
        while True:
            if queue:  # every seed is judged, however short the campaign
                name, data = queue.pop(0)
            elif mutate and time.monotonic() - start < seconds:
                mutant = _mutant(rng, corpus, stats, out)
                if mutant is None:
                    continue
                name, data = mutant
            else:
                break
            said, outcome = _judge_one(runner, work, name, data)
            stats.inputs += 1
            stats.refused += bool(outcome.refused)
            found = judge(name, said, outcome)
            if found:
                _keep(stats, found, said=said, outcome=outcome, data=data, name=name, out=out, keep_all=not mutate)
            sig = _signature(said, outcome)
            if sig not in signatures:
                signatures.add(sig)
                _grow(corpus, known, corpus_dir, name, data)
            if log is not None and time.monotonic() - last >= interval:
                last = time.monotonic()
                stats.seconds, stats.corpus, stats.restarts = last - start, len(corpus), runner.restarts
                log(stats.line())
    finally:
        stats.seconds = time.monotonic() - start
        stats.corpus = len(corpus)
        stats.restarts = runner.restarts
        if own:
            runner.close()
        shutil.rmtree(work, ignore_errors=True)
    return stats


def _mutant(
    rng: random.Random, corpus: list[tuple[str, bytes]], stats: CampaignStats, out: str | os.PathLike[str]
) -> tuple[str, bytes] | None:
    from validator.fuzz.pickle_mutator import mutate_named  # noqa: PLC0415

    parent_name, parent = rng.choice(corpus)
    try:
        return mutate_named(parent_name, parent, rng, corpus)
    except Exception as exc:  # noqa: BLE001 - a mutator bug is kept as a finding; the campaign goes on
        stats.mutator_errors += 1
        where = Path(out) / "findings" / f"mutator-{type(exc).__name__}-{_safe(parent_name)}"
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_bytes(parent)
        return None


def _keep(
    stats: CampaignStats,
    found: list[Disagreement],
    *,
    said: Claims,
    outcome: Outcome,
    data: bytes,
    name: str,
    out: str | os.PathLike[str],
    keep_all: bool,
) -> None:
    labels = [_class(d, said, data) for d in found]
    fresh = keep_all or any(stats.classes.get(label, 0) < _PER_CLASS for label in labels)
    for label in labels:
        stats.classes[label] = stats.classes.get(label, 0) + 1
    if fresh:
        where = Path(out) / "findings"
        saved = save_reproducer(data, os.path.basename(name), where, said=said, outcome=outcome, found=found)
        stats.disagreements.extend(dataclasses.replace(d, reproducer=saved) for d in found)


def _grow(corpus: list[tuple[str, bytes]], known: set[bytes], folder: Path, name: str, data: bytes) -> None:
    digest = hashlib.sha1(data).digest()  # noqa: S324 - identity, not security
    if digest not in known:
        known.add(digest)
        corpus.append((name, data))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{digest.hex()[:12]}-{_safe(name)}").write_bytes(data)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in os.path.basename(name))[-60:] or "input"


def _judge_one(runner: Oracle, work: Path, name: str, data: bytes) -> tuple[Claims, Outcome]:
    folder = Path(tempfile.mkdtemp(dir=work))
    path = folder / _safe(name)
    try:
        path.write_bytes(data)
        ticket = runner.submit(path)  # the loaders run while stcheck reads the same file
        said = claims(path)
        return said, runner.collect(ticket)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def read_seeds(folders: Iterable[str | os.PathLike[str]]) -> list[tuple[str, bytes]]:
    """Every regular file under ``folders`` (recursively, manifests and ``findings/`` skipped) as (name, bytes)."""
    skip = {".json", ".md", ".py"}
    return [
        (path.name, path.read_bytes())
        for folder in folders
        for path in sorted(Path(folder).rglob("*"))
        if path.is_file() and "findings" not in path.parts and path.suffix not in skip
    ]


def _walk(paths: Iterable[str]) -> Iterator[str]:
    for p in paths:
        if os.path.isdir(p):
            yield from (str(q) for q in sorted(Path(p).rglob("*")) if q.is_file())
        else:
            yield p


def main(argv: Sequence[str] | None = None) -> int:
    """``run``, ``check`` or ``campaign`` (see the module's comment); exit 1 on a disagreement."""
    parser = argparse.ArgumentParser(prog="python -m validator.formats.oracle", description="pickle loader oracle")
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="what each real loader resolves on each file")
    run_p.add_argument("files", nargs="+")
    check_p = sub.add_parser("check", help="stcheck's claims against the real loaders")
    check_p.add_argument("files", nargs="+")
    check_p.add_argument("--out", default=None, help="save reproducers here")
    camp = sub.add_parser("campaign", help="mutate seeds and check each input")
    camp.add_argument("seeds", nargs="*", default=[str(Path(__file__).resolve().parents[2] / "corpus" / "pickles")])
    camp.add_argument("--seconds", type=float, default=60.0)
    camp.add_argument("--out", required=True)
    camp.add_argument("--seed", type=int, default=0)
    camp.add_argument("--interval", type=float, default=60.0)
    camp.add_argument("--replay", action="store_true", help="judge the seeds only, no mutation")
    args = parser.parse_args(argv)
    if args.command == "run":
        with Oracle() as oracle:
            for path in _walk(args.files):
                for r in oracle.run(path).runs:
                    names = " ".join(f"{m}.{n}" for m, n in r.globals)
                    _say(f"{path}: {r.loader}: {r.status} {r.detail[:120]!r} [{names}]")
        return 0
    if args.command == "check":
        found: list[Disagreement] = []
        with Oracle() as oracle:
            for path in _walk(args.files):
                found.extend(check(path, oracle, args.out))
        for d in found:
            _say(f"{d.name}: {d.what} {d.loader}: {d.detail}" + (f" -> {d.reproducer}" if d.reproducer else ""))
        return 1 if found else 0
    stats = campaign(
        seconds=args.seconds,
        out=args.out,
        seeds=read_seeds(args.seeds),
        rng_seed=args.seed,
        log=_say,
        interval=args.interval,
        mutate=not args.replay,
    )
    _say(stats.line())
    for label, count in sorted(stats.classes.items()):
        _say(f"  {count:6d}  {label}")
    for d in stats.disagreements:
        _say(f"  {d.what} {d.name} {d.loader}: {d.detail[:160]} -> {d.reproducer}")
    summary = {
        "inputs": stats.inputs,
        "seconds": round(stats.seconds, 1),
        "rate": round(stats.rate, 2),
        "corpus": stats.corpus,
        "refused": stats.refused,
        "restarts": stats.restarts,
        "classes": stats.classes,
        "reproducers": sorted({d.reproducer for d in stats.disagreements if d.reproducer}),
    }
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 1 if stats.classes else 0


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
