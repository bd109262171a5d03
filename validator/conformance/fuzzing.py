# Strategy: the matrix's fuzz columns.  Each implementation whose adapter
# serves the frame protocol gets one fixed-budget campaign of `stcheck fuzz
# loader-under-test --persistent`, run through the documented command line
# as a subprocess (so the campaign code can change behind it), into a
# private folder; its `--out` notes are read back, and every reproducer
# travels as bytes.  A campaign is a plain function of a picklable plan, so
# the same code runs here, in threads, or as one Dask task per loader (the
# command line passes `run_campaigns` a mapper for that); `save` then writes
# the reproducers beside the report, so the page links files the reader has.
#
# The `--out` layout read here (fuzz/README.md, "Fuzz your loader"): per
# class a note `<class>.json` ({"category", "detail", "size", "causes":
# {cause: {"count", "file", "size"}}}) beside `<class>.safetensors`, and per
# cause `<class>@<tag>.safetensors`.  Anything else there is ignored.
from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from validator._display import escape_line

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from validator.conformance.model import Impl

__all__ = [
    "GROUPS",
    "GROUP_NAMES",
    "IDEF",
    "MAX_TIMEOUT_S",
    "Campaign",
    "Cause",
    "FuzzClass",
    "Plan",
    "folder_of",
    "group_of",
    "loader_command",
    "plan_for",
    "read_fuzz_lines",
    "read_out",
    "run_campaign",
    "run_campaigns",
    "save",
    "threads",
]

# The four questions a row answers, in the order the page shows them:
# group, heading, column title, colour (the screenshot test counts these
# exact RGB values: the matrix's own colours for the same failures).
GROUPS: Final = (
    ("accepts", "accepts what it must not", "bad accepts", "#ff7f00"),
    ("rejects", "rejects valid files", "bad rejects", "#ffd92f"),
    ("crashes", "crashes", "crashes", "#e41a1c"),
    ("hangs", "hangs", "hangs", "#202020"),
    ("other", "wrong data or oracle disagreement", "other", "#b000d8"),
    ("idef", "rejects files the corpus leaves to the implementation (i_)", "i_ rejects", "#3182bd"),
)
# A file safetensors 0.8.0 accepts and stcheck's strict profile rejects is
# what the corpus calls implementation-defined (an i_ file: the array form of
# an entry, a dtype written {"F32": null}); refusing it is no bug, so such
# causes of rejects-valid move to a class of their own.
IDEF: Final = "rejects-implementation-defined"
GROUP_NAMES: Final = tuple(g[0] for g in GROUPS)
MAX_TIMEOUT_S: Final = 10.0  # per input: a loader allowed 90 s per corpus file still answers a frame in 10
_MAX_NOTE: Final = 1 << 20
_MAX_REPRODUCER: Final = 1 << 20  # the campaign's inputs stay far below this (--max-len)
_SETTLE_S: Final = 120.0  # the campaign's own start, seeds and report, on top of --seconds
_SAFE: Final = re.compile(r"[^A-Za-z0-9_.@-]+")


def group_of(category: str) -> str:
    """Which of the row's questions a campaign class answers."""
    if category.startswith("accepts-invalid"):
        return "accepts"
    if category == "rejects-valid":
        return "rejects"
    if category.startswith("crash") or category == "out-of-memory":
        return "crashes"
    if category == "hang":
        return "hangs"
    if category == IDEF:
        return "idef"
    return "other"


@dataclass(frozen=True)
class Cause:
    """One root cause within a class: how often it was seen, and its reproducer."""

    cause: str
    count: int
    file: str  # relative to the report folder once saved; a bare name before
    size: int


@dataclass(frozen=True)
class FuzzClass:
    """One problem class a campaign found in one loader."""

    category: str
    group: str
    detail: str
    file: str
    size: int
    causes: tuple[Cause, ...]


@dataclass(frozen=True)
class Plan:
    """One loader's campaign: the harness command and its budget."""

    impl: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    seconds: float
    timeout_s: float
    seeds: str | None = None
    memory_mb: int = 0  # the address-space cap of the harness, above what its library maps
    package_root: str | None = None  # put first on the campaign's PYTHONPATH (a worker's own otherwise)


@dataclass(frozen=True)
class Campaign:
    """What one campaign found.  `files` holds the reproducers' bytes until
    `save` writes them beside the report (then it is empty)."""

    impl: str
    budget_s: float
    seconds: float
    host: str
    worker: str | None = None  # the Dask worker that ran it, or None when it ran here
    classes: tuple[FuzzClass, ...] = ()
    error: str | None = None
    files: tuple[tuple[str, bytes], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "fuzz",
            "implementation": self.impl,
            "budget_s": self.budget_s,
            "seconds": round(self.seconds, 1),
            "host": self.host,
            "worker": self.worker,
            "error": self.error,
            "classes": [
                {
                    "category": c.category,
                    "group": c.group,
                    "detail": c.detail,
                    "file": c.file,
                    "size": c.size,
                    "causes": [{"cause": k.cause, "count": k.count, "file": k.file, "size": k.size} for k in c.causes],
                }
                for c in self.classes
            ],
        }


def plan_for(impl: Impl, seconds: float, seeds: str | None = None) -> Plan | None:
    """The campaign of one implementation, or None when it has no harness or cannot run."""
    if impl.fuzz_argv is None or impl.skip_reason:
        return None
    return Plan(
        impl=impl.name,
        argv=impl.fuzz_argv,
        env=tuple(sorted(impl.env.items())),
        seconds=seconds,
        timeout_s=min(impl.timeout_s, MAX_TIMEOUT_S),
        seeds=seeds,
        memory_mb=impl.memory_mb,
    )


def loader_command(plan: Plan) -> str:
    """The --loader-cmd of a plan: its environment travels in the command
    (through env(1)), so a target folder that shadows a library the campaign
    itself imports (an old safetensors) reaches the harness only."""
    env = [f"{k}={v}" for k, v in plan.env]
    if plan.memory_mb:
        env.append(f"STCHECK_ADAPTER_MEMORY_MB={plan.memory_mb}")
    return shlex.join(["env", *env, *plan.argv] if env else list(plan.argv))


def _campaign_env(plan: Plan) -> dict[str, str]:
    env = dict(os.environ)
    root = plan.package_root or str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def run_campaign(plan: Plan) -> Campaign:
    """Run one campaign through `stcheck fuzz loader-under-test` and gather its findings.

    Never raises for a campaign that fails: the reason is the Campaign's error.
    """
    host = socket.gethostname()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="stcheck-matrix-") as tmp:
        out = Path(tmp) / "out"
        argv = [
            sys.executable,
            "-m",
            "validator",
            "fuzz",
            "loader-under-test",
            "--persistent",
            "--loader-cmd",
            loader_command(plan),
            "--seconds",
            f"{plan.seconds:g}",
            "--timeout",
            f"{plan.timeout_s:g}",
            "--max-findings",
            "1000",
            "--interval",
            "3600",
            "--out",
            str(out),
        ]
        if plan.seeds:
            argv += ["--seeds", plan.seeds]
        error = _run(argv, plan, tmp)
        classes, files = read_out(out)
    seconds = time.monotonic() - start
    return Campaign(plan.impl, plan.seconds, seconds, host, _worker(), classes=classes, error=error, files=files)


def _worker() -> str | None:
    """The address of the Dask worker running this, if this is one (distributed
    is then already imported; it is never imported here for that)."""
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return None
    try:
        return str(distributed.get_worker().address)
    except (ValueError, AttributeError):
        return None


def _run(argv: list[str], plan: Plan, cwd: str) -> str | None:
    """Run the campaign command in a session of its own; None when it ran, else why not.
    Past its deadline the whole session (the harnesses included) is killed."""
    limit = plan.seconds + _SETTLE_S
    proc = subprocess.Popen(  # noqa: S603 - our own command line, the harness from the implementations file
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_campaign_env(plan),
        cwd=cwd,
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        _kill(proc)
        return f"the campaign ran past {limit:g} s and was stopped"
    except BaseException:
        _kill(proc)
        raise
    # 0: nothing found, 1: findings (the fuzz command's exit codes); 2 and the rest: it did not run.
    if proc.returncode in (0, 1):
        return None
    last = (err.decode("utf-8", "replace").strip().splitlines() or ["no output"])[-1]
    return f"exit {proc.returncode}: {escape_line(last)[:300]}"


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _note(path: Path) -> dict[str, Any] | None:
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > _MAX_NOTE:
            return None
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("category"), str):
        return None
    return doc


def _bytes(path: Path) -> bytes | None:
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > _MAX_REPRODUCER:
            return None
        return path.read_bytes()
    except OSError:
        return None


def read_out(out: Path) -> tuple[tuple[FuzzClass, ...], tuple[tuple[str, bytes], ...]]:
    """The classes of a campaign's --out folder, and the bytes of every reproducer they name."""
    classes: list[FuzzClass] = []
    files: dict[str, bytes] = {}
    if not out.is_dir():
        return (), ()
    for note_path in sorted(out.glob("*.json")):
        note = _note(note_path)
        reproducer = note_path.with_suffix(".safetensors")
        data = _bytes(reproducer)
        if note is None or data is None:
            continue
        files[reproducer.name] = data
        causes = []
        raw = note.get("causes")
        for cause, entry in (raw if isinstance(raw, dict) else {}).items():
            if not isinstance(entry, dict) or not isinstance(entry.get("count"), int):
                continue
            name = Path(str(entry.get("file") or "")).name
            cause_data = _bytes(out / name) if name else None
            if cause_data is None:
                continue
            files[name] = cause_data
            causes.append(Cause(escape_line(str(cause))[:300], entry["count"], name, len(cause_data)))
        category = escape_line(note["category"])[:200]
        # The campaign names its reproducers by its own private folder; the report by the file alone.
        detail = str(note.get("detail", "")).replace(str(out) + os.sep, "")
        classes.append(
            FuzzClass(
                category=category,
                group=group_of(category),
                detail=escape_line(detail)[:500],
                file=reproducer.name,
                size=len(data),
                causes=tuple(sorted(causes, key=lambda c: (-c.count, c.cause))),
            )
        )
    classes = [part for c in classes for part in _split_idef(c, files)]
    order = {g: i for i, g in enumerate(GROUP_NAMES)}
    classes.sort(key=lambda c: (order[c.group], c.category))
    return tuple(classes), tuple(sorted(files.items()))


def _strict_rejects(data: bytes) -> bool:
    from validator._validate import validate  # noqa: PLC0415 - the core, only for rejects-valid classes

    return not validate(data, profile="strict").valid


def _split_idef(cls: FuzzClass, files: dict[str, bytes]) -> list[FuzzClass]:
    """A rejects-valid class, its implementation-defined causes moved to a class of their own."""
    if cls.category != "rejects-valid":
        return [cls]
    causes = cls.causes or (Cause(cls.detail, 1, cls.file, cls.size),)
    idef = tuple(k for k in causes if _strict_rejects(files[k.file]))
    valid = tuple(k for k in causes if k not in idef)
    parts = []
    for category, group, mine in (("rejects-valid", "rejects", valid), (IDEF, "idef", idef)):
        if mine:
            first = min(mine, key=lambda k: (k.size, k.file))
            parts.append(replace(cls, category=category, group=group, file=first.file, size=first.size, causes=mine))
    return parts


def folder_of(impl: str) -> str:
    """The report's folder for one loader's reproducers: fuzz/<name>."""
    return "fuzz/" + (_SAFE.sub("_", impl).strip("._") or "loader")


def save(campaign: Campaign, report: Path) -> Campaign:
    """Write a campaign's reproducers under report/fuzz/<loader>/ and return it
    with each file named relative to the report (and no bytes left in it).
    Each file is written under a fresh name and renamed into place."""
    folder = folder_of(campaign.impl)
    where = report / folder
    if campaign.files:
        where.mkdir(parents=True, exist_ok=True)
    for name, data in campaign.files:
        safe = _SAFE.sub("_", Path(name).name)
        fd, part = tempfile.mkstemp(dir=where, prefix=".part-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        Path(part).replace(where / safe)

    def rel(name: str) -> str:
        return f"{folder}/{_SAFE.sub('_', Path(name).name)}"

    classes = tuple(
        replace(c, file=rel(c.file), causes=tuple(replace(k, file=rel(k.file)) for k in c.causes))
        for c in campaign.classes
    )
    return replace(campaign, classes=classes, files=())


def threads(jobs: int) -> Callable[[Callable[[Plan], Campaign], Sequence[Plan]], list[Campaign]]:
    """Run the campaigns here, `jobs` at a time."""

    def mapper(fn: Callable[[Plan], Campaign], plans: Sequence[Plan]) -> list[Campaign]:
        results: dict[int, Campaign] = {}
        pending = list(enumerate(plans))
        lock = threading.Lock()

        def worker() -> None:
            while True:
                with lock:
                    if not pending:
                        return
                    i, plan = pending.pop(0)
                results[i] = fn(plan)

        workers = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, jobs))]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        return [results[i] for i in range(len(plans))]

    return mapper


def run_campaigns(
    plans: Sequence[Plan],
    report: Path,
    mapper: Callable[[Callable[[Plan], Campaign], Sequence[Plan]], Iterable[Campaign]],
) -> list[Campaign]:
    """Every plan's campaign through `mapper` (threads here, or Dask tasks),
    merged: saved beside the report, in the plans' order."""
    done = {c.impl: save(c, report) for c in mapper(run_campaign, plans)}
    return [done[p.impl] for p in plans if p.impl in done]


def read_fuzz_lines(lines: Iterable[dict[str, Any]]) -> list[Campaign]:
    """Campaigns back from results.jsonl's "fuzz" lines (for --from-jsonl)."""
    found = []
    for doc in lines:
        if doc.get("type") != "fuzz":
            continue
        classes = tuple(
            FuzzClass(
                category=str(c["category"]),
                group=str(c["group"]),
                detail=str(c.get("detail", "")),
                file=str(c["file"]),
                size=int(c["size"]),
                causes=tuple(
                    Cause(str(k["cause"]), int(k["count"]), str(k["file"]), int(k["size"])) for k in c.get("causes", [])
                ),
            )
            for c in doc.get("classes", [])
        )
        found.append(
            Campaign(
                impl=str(doc["implementation"]),
                budget_s=float(doc["budget_s"]),
                seconds=float(doc["seconds"]),
                host=str(doc.get("host", "")),
                worker=doc.get("worker"),
                classes=classes,
                error=doc.get("error"),
            )
        )
    return found
