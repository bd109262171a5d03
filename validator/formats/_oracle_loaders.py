# Strategy: the loader process of the differential oracle (validator.formats
# .oracle).  It runs the real loaders (pickle.load, torch.load,
# numpy.load(allow_pickle=True), joblib.load) on a file and records every
# global each one resolves, through the audit event that every unpickler
# raises before it imports anything ("pickle.find_class": the C and
# pure-Python Unpicklers, and so torch's, numpy's and joblib's subclasses
# that call up to them).
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
# no PYTHON* variables, no user site, no cwd on sys.path) and started with
# `serve()`, so it imports only the standard library: stcheck's own modules
# are imported by the parent side only (_oracle_runner).
# Paths are str, handled with os.path as in validator.sources.
# ruff: noqa: PTH118, PTH208
from __future__ import annotations

import _compat_pickle
import contextlib
import dataclasses
import json
import os
import select
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import IO, Any, Final

try:
    import resource
except ImportError:  # pragma: no cover - not POSIX: no limits but the deadline
    resource = None  # type: ignore[assignment]

__all__ = [
    "ABORT_EVENT",
    "ABORT_GLOBAL",
    "CODE_LOADERS",
    "CRASHED",
    "DETAIL",
    "ERROR",
    "LOADERS",
    "OK",
    "REFUSED",
    "REFUSED_EVENT",
    "REFUSED_GLOBAL",
    "TIMEOUT",
    "UNAVAILABLE",
    "serve",
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
DETAIL: Final = 300
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
        _stop(watch, REFUSED_EVENT, f"{event} {args!r}"[:DETAIL], ABORT_EVENT)


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
    return text if len(text) <= DETAIL else f"{text[: DETAIL // 3]} ... {text[-2 * DETAIL // 3 :]}"


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


def serve() -> None:
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
