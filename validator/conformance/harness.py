# Strategy: the conformance harness.  The corpus (manifest.json) and the
# implementations (implementations.toml) are data; each implementation runs
# through a small adapter in its own processes (see _conformance_adapter.py
# for the protocol), and this module only starts them, collects one raw
# result per (implementation, file), and classifies it:
#
#   expected              did what the corpus expects
#   should-have-rejected  accepted an n_ file (an unsafe accept)
#   should-have-accepted  rejected a y_ file
#   i-accepted/i-rejected an accept or reject of an i_ file
#   wrong-data            accepted, but returned bytes that are not the bytes
#                         of the declared range
#   crash                 any exit other than 0 or 1, or a signal
#   timeout               killed by the per-file alarm
#
# The declared ranges are read the way this validator reads the header, with
# a lenient json fallback for entries the validator refused, so "returned
# bytes outside the declared range" is decided by the harness, not by the
# implementation under test.
from __future__ import annotations

import hashlib
import json
import os
import select
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

STATUSES: Final = (
    "expected",
    "should-have-rejected",
    "should-have-accepted",
    "i-accepted",
    "i-rejected",
    "wrong-data",
    "crash",
    "timeout",
    "skipped",
)
# How bad each status is, for "the most serious finding" (higher is worse).
SEVERITY: Final = {
    "wrong-data": 6,
    "crash": 5,
    "timeout": 4,
    "should-have-rejected": 3,
    "should-have-accepted": 2,
    "i-accepted": 1,
    "i-rejected": 1,
    "expected": 0,
    "skipped": 0,
}
# Statuses that fail `stcheck conformance --impl` as a CI gate.
FAILING: Final = frozenset({"should-have-rejected", "wrong-data", "crash", "timeout"})
DEFAULT_MEMORY_MB: Final = 2048
DEFAULT_TIMEOUT_S: Final = 20.0
PROBE_TIMEOUT_S: Final = 180.0
SIGALRM: Final = 14
_LOCATE_LIMIT: Final = 1 << 16


class ConformanceError(Exception):
    """A usage problem: missing corpus, bad implementations file."""


@dataclass(frozen=True)
class Case:
    """One corpus file and what the corpus expects of it."""

    file: str
    path: Path
    kind: str  # "y", "n" or "i"
    strict: str
    reference: str
    rules: tuple[str, ...]
    description: str
    source: dict[str, str]
    large: bool = False


@dataclass
class Impl:
    """One implementation: how to run it and whether it can run."""

    name: str
    argv: tuple[str, ...]  # per-file command; "{path}" is replaced
    serve_argv: tuple[str, ...] | None = None  # fork-server command, when the adapter has one
    probe_argv: tuple[str, ...] | None = None
    env: dict[str, str] = field(default_factory=dict)
    memory_mb: int = DEFAULT_MEMORY_MB
    timeout_s: float = DEFAULT_TIMEOUT_S
    version: str | None = None
    expect_version: str | None = None
    install: str = ""
    notes: str = ""
    skip_reason: str | None = None
    cwd: str | None = None  # run the adapter here and pass paths relative to it


@dataclass
class Result:
    """One implementation's raw outcome on one file, and its status."""

    impl: str
    file: str
    status: str
    rc: int | None = None
    signal: int | None = None
    seconds: float = 0.0
    detail: str = ""
    tensors: list[dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "result",
            "implementation": self.impl,
            "file": self.file,
            "status": self.status,
            "rc": self.rc,
            "signal": self.signal,
            "seconds": round(self.seconds, 3),
            "detail": self.detail,
        }


# --- corpus and implementations -------------------------------------------------


def find_corpus(explicit: str | None) -> Path:
    """The corpus directory: --corpus, else ./corpus, else the checkout's."""
    candidates = (
        [Path(explicit)] if explicit else [Path.cwd() / "corpus", Path(__file__).resolve().parent.parent / "corpus"]
    )
    for candidate in candidates:
        if (candidate / "manifest.json").is_file():
            return candidate
    where = ", ".join(str(c) for c in candidates)
    msg = (
        f"no conformance corpus found (looked for manifest.json in {where}); "
        "pass --corpus DIR pointing at the repository's corpus/"
    )
    raise ConformanceError(msg)


def load_cases(corpus: Path, *, large: bool = False, cache: Path | None = None) -> list[Case]:
    """The manifest's cases; large ones only when asked (materialised into cache)."""
    doc = json.loads((corpus / "manifest.json").read_text(encoding="utf-8"))
    cases = []
    for entry in doc["files"]:
        is_large = bool(entry.get("large"))
        if is_large and not large:
            continue
        base = (cache or corpus / ".cache") if is_large else corpus
        cases.append(
            Case(
                file=entry["file"],
                path=base / entry["file"],
                kind=entry["file"][0],
                strict=entry["expect"]["strict"],
                reference=entry["expect"]["reference"],
                rules=tuple(entry["rules"]),
                description=entry["description"],
                source=entry["source"],
                large=is_large,
            )
        )
    if large:
        missing = [c for c in cases if c.large and not c.path.exists()]
        if missing:
            materialise_large(corpus, cache or corpus / ".cache")
    return cases


def materialise_large(corpus: Path, cache: Path) -> None:
    """Write the large recipes into cache with the corpus's own generator."""
    cache.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, str(corpus / "generate.py"), "--only-large", "--out", str(cache)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)  # noqa: S603 - our own generator
    if done.returncode:
        msg = f"could not materialise the large corpus files: {done.stderr.strip()[-400:]}"
        raise ConformanceError(msg)


def _toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib  # noqa: PLC0415 - only the matrix mode reads TOML
    except ImportError:  # Python 3.10: the tomli backport, same API
        import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]  # noqa: PLC0415
    with path.open("rb") as f:
        return tomllib.load(f)


def _pythonpath(*dirs: str) -> str:
    extra = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join([d for d in dirs if d] + ([extra] if extra else []))


def package_root() -> str:
    """The directory holding the `validator` package, for adapters to import it."""
    return str(Path(__file__).resolve().parent.parent)


def load_impls(corpus: Path, ext: str | None, only: Sequence[str] = ()) -> list[Impl]:
    """The implementations file as Impl objects (unprobed)."""
    corpus = corpus.resolve()  # adapters run with the corpus as working directory
    doc = _toml(corpus / "implementations.toml")
    impls = []
    for item in doc.get("implementation", []):
        name = item["name"]
        if only and name not in only:
            continue
        adapter = corpus / "adapters" / item["adapter"]
        argv = (sys.executable, str(adapter))
        impl = Impl(
            name=name,
            argv=(*argv, "{path}"),
            serve_argv=(*argv, "--serve"),
            probe_argv=(*argv, "--probe"),
            env={str(k): str(v) for k, v in item.get("env", {}).items()},
            memory_mb=int(item.get("memory_mb", DEFAULT_MEMORY_MB)),
            timeout_s=float(item.get("timeout_s", DEFAULT_TIMEOUT_S)),
            expect_version=item.get("version"),
            install=item.get("install", ""),
            notes=item.get("notes", ""),
            cwd=str(corpus),
        )
        target = item.get("target")
        paths = [package_root()]
        if target:
            if not ext:
                impl.skip_reason = f"STCHECK_EXT is not set; install with: {impl.install}"
            else:
                where = Path(ext).resolve() / target
                if not where.is_dir():
                    impl.skip_reason = (
                        f"not installed at {where}; install with: {impl.install.replace('$STCHECK_EXT', ext)}"
                    )
                paths.insert(0, str(where))
        impl.env["PYTHONPATH"] = _pythonpath(*paths)
        impls.append(impl)
    if only:
        unknown = sorted(set(only) - {i.name for i in impls})
        if unknown:
            msg = f"unknown implementation(s) {', '.join(unknown)}; see {corpus / 'implementations.toml'}"
            raise ConformanceError(msg)
    return impls


def user_impl(spec: str, *, memory_mb: int, timeout_s: float) -> Impl:
    """An implementation from --impl: a command with {path}, or module:function."""
    env = {"PYTHONPATH": _pythonpath(str(Path.cwd()), package_root())}
    if "{path}" not in spec and " " not in spec.strip() and ":" in spec:
        base = (sys.executable, "-m", "validator.conformance.adapter", spec)
        return Impl(
            name=spec,
            argv=(*base, "{path}"),
            serve_argv=(*base, "--serve"),
            probe_argv=(*base, "--probe"),
            env=env,
            memory_mb=memory_mb,
            timeout_s=timeout_s,
        )
    argv = tuple(shlex.split(spec))
    if not argv:
        msg = "--impl needs a command (with {path}) or module:function"
        raise ConformanceError(msg)
    if not any("{path}" in a for a in argv):
        argv = (*argv, "{path}")
    return Impl(name=spec, argv=argv, env=env, memory_mb=memory_mb, timeout_s=timeout_s)


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


# --- running ------------------------------------------------------------------------


@dataclass
class Raw:
    rc: int | None
    signal: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False


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
    start = time.monotonic()
    try:
        done = subprocess.run(  # noqa: S603 - the command is the implementation under test
            argv,
            capture_output=True,
            timeout=impl.timeout_s,
            env=_env(impl),
            cwd=impl.cwd,
            preexec_fn=_limit(impl.memory_mb) if impl.memory_mb else None,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode("utf-8", "replace") if isinstance(exc.stderr, bytes) else ""
        return Raw(None, None, "", err, time.monotonic() - start, timed_out=True)
    except OSError as exc:
        return Raw(None, None, "", f"cannot start {argv[0]}: {exc}", time.monotonic() - start)
    rc = done.returncode
    return Raw(
        rc if rc >= 0 else None,
        -rc if rc < 0 else None,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace")[-4000:],
        time.monotonic() - start,
    )


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
            result = classify(impl.name, case, raw)
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


# --- classification ----------------------------------------------------------------


@dataclass(frozen=True)
class Declared:
    """What the file declares, read the way this validator reads it."""

    blob: bytes
    data_start: int | None
    ranges: dict[str, tuple[int, int]]  # name -> data_offsets as declared (relative)


def _loose_offsets(info: object) -> tuple[int, int] | None:
    """The first two data_offsets as integers, however loosely written."""
    offsets = info.get("data_offsets") if isinstance(info, dict) else None
    if not isinstance(offsets, list) or len(offsets) < 2:
        return None
    pair = []
    for item in offsets[:2]:
        if type(item) is int:
            pair.append(item)
        elif type(item) is float and item.is_integer():
            pair.append(int(item))
        else:
            return None
    return pair[0], pair[1]


def declared(path: Path) -> Declared:
    """Read the file and its declared tensor ranges.

    The validator's reading wins; entries it refused are read leniently
    (BOM and padding skipped, floats like 16.0 taken as integers, the first
    two offsets of a longer list), since a lenient implementation reads them
    that way too.
    """
    from validator._validate import validate  # noqa: PLC0415 - keeps the harness import light

    blob = path.read_bytes()
    report = validate(blob, profile="reference")
    start = report.data_start
    ranges: dict[str, tuple[int, int]] = {}
    if start is None and len(blob) >= 8:
        n = int.from_bytes(blob[:8], "little")
        start = 8 + n if 8 + n <= len(blob) else None
    if start is not None:
        text = blob[8:start].decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
        try:
            loose, _ = json.JSONDecoder(strict=False).raw_decode(text)
        except (ValueError, RecursionError):
            loose = None
        if isinstance(loose, dict):
            for name, info in loose.items():
                pair = _loose_offsets(info)
                if pair is not None:
                    ranges[name] = pair
        for name, tensor in (report.tensors or {}).items():
            ranges[name] = tensor.data_offsets
    return Declared(blob, start, ranges)


def _region(data_start: int | None, offset: int) -> str:
    if offset < 8:
        return "the length prefix"
    if data_start is None or offset < data_start:
        return "the header"
    return "the data region"


def locate(blob: bytes, data_start: int | None, nbytes: int, digest: str) -> tuple[str, str | None]:
    """Where in the file a returned byte string comes from: (text, region)."""
    if nbytes <= 0 or nbytes > len(blob) or len(blob) > _LOCATE_LIMIT:
        return "", None
    for i in range(len(blob) - nbytes + 1):
        if hashlib.sha256(blob[i : i + nbytes]).hexdigest() == digest:
            region = _region(data_start, i)
            return f"; they are file bytes [{i}, {i + nbytes}), in {region}", region
    return "; they are not bytes of the file (memory outside it, or zeros)", "outside"


def check_data(path: Path, tensors: Iterable[dict[str, Any]]) -> str:
    """Empty unless a returned tensor holds bytes from outside its declared range.

    The declared range is clipped to the data region that exists, and bytes
    that are a prefix of it pass: a loader that hands back the part of a
    truncated range that is in the file, or fewer bytes than declared, returns
    wrong-sized data but not data from elsewhere (and it has already accepted
    an n_ file).  When the header cannot be read at all, only bytes from the
    length prefix, the header or outside the file count.
    """
    info = declared(path)
    blob, start = info.blob, info.data_start
    problems = []
    for t in tensors:
        digest, nbytes = t.get("sha256"), t.get("nbytes")
        if not isinstance(digest, str) or not isinstance(nbytes, int):
            continue
        name = str(t.get("name"))
        rng = info.ranges.get(name)
        if rng is None or start is None:
            where, region = locate(blob, start, nbytes, digest)
            if nbytes and region in ("the length prefix", "the header", "outside"):
                problems.append(f"tensor {name!r}: no readable data_offsets, yet {nbytes} bytes were returned{where}")
            continue
        begin, end = rng
        lo, hi = max(start, start + begin), min(len(blob), start + end)
        inside = blob[lo:hi] if lo <= hi else b""
        if nbytes == 0 or hashlib.sha256(inside[:nbytes]).hexdigest() == digest:
            continue  # nothing returned, or bytes from inside the declared range
        where, _ = locate(blob, start, nbytes, digest)
        if begin < 0 or end < begin or start + end > len(blob):
            reason = f"data_offsets [{begin}, {end}] reach outside the data region [{start}, {len(blob)}), yet"
        else:
            reason = f"data_offsets [{begin}, {end}] declare file bytes [{start + begin}, {start + end}), but"
        problems.append(f"tensor {name!r}: {reason} the {nbytes} bytes returned are not from that range{where}")
    return "; ".join(problems)


def classify(impl: str, case: Case, raw: Raw) -> Result:
    """Turn a raw outcome into a status."""
    result = Result(impl, case.file, "crash", raw.rc, raw.signal, raw.seconds)
    err = raw.stderr.strip().splitlines()
    last = err[0][:300] if err else ""
    if raw.timed_out:
        result.status, result.detail = "timeout", f"no answer within the time limit {last}".strip()
        return result
    if raw.rc not in (0, 1):
        how = f"signal {raw.signal}" if raw.signal is not None else f"exit code {raw.rc}"
        result.detail = f"{how}: {last}" if last else how
        return result
    if raw.rc == 1:
        result.status = {"y": "should-have-accepted", "n": "expected", "i": "i-rejected"}[case.kind]
        result.detail = last
        return result
    tensors: list[dict[str, Any]] = []
    lines = raw.stdout.strip().splitlines()
    if lines:
        try:
            doc = json.loads(lines[-1])
            tensors = list(doc.get("tensors", [])) if isinstance(doc, dict) else []
        except ValueError:
            tensors = []
    result.tensors = tensors
    problem = check_data(case.path, tensors)
    if problem:
        result.status, result.detail = "wrong-data", problem
        return result
    result.status = {"y": "expected", "n": "should-have-rejected", "i": "i-accepted"}[case.kind]
    result.detail = f"accepted {len(tensors)} tensors" if tensors else "accepted"
    return result


# --- summaries -----------------------------------------------------------------------


def totals(results: Iterable[Result]) -> dict[str, dict[str, int]]:
    """Per implementation: count of each status."""
    out: dict[str, dict[str, int]] = {}
    for r in results:
        row = out.setdefault(r.impl, dict.fromkeys(STATUSES, 0))
        row[r.status] += 1
    return out


def worst(results: Iterable[Result]) -> dict[str, Result]:
    """Per implementation: its most serious result (first file among equals)."""
    best: dict[str, Result] = {}
    for r in results:
        cur = best.get(r.impl)
        if cur is None or SEVERITY[r.status] > SEVERITY[cur.status]:
            best[r.impl] = r
    return best


def impl_json(impl: Impl) -> dict[str, Any]:
    return {
        "type": "implementation",
        "implementation": impl.name,
        "version": impl.version,
        "skipped": impl.skip_reason,
        "notes": impl.notes,
        "memory_mb": impl.memory_mb,
        "timeout_s": impl.timeout_s,
    }


def write_jsonl(path: Path, impls: Sequence[Impl], results: Sequence[Result]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for impl in impls:
            f.write(json.dumps(impl_json(impl), ensure_ascii=False) + "\n")
        for r in results:
            f.write(json.dumps(r.to_json(), ensure_ascii=False) + "\n")


def read_jsonl(path: Path) -> tuple[list[Impl], list[Result]]:
    """Implementations and results back from a results.jsonl file."""
    impls: list[Impl] = []
    results: list[Result] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        doc = json.loads(line)
        if doc.get("type") == "implementation":
            impls.append(
                Impl(
                    name=doc["implementation"],
                    argv=(),
                    version=doc.get("version"),
                    skip_reason=doc.get("skipped"),
                    notes=doc.get("notes") or "",
                    memory_mb=int(doc.get("memory_mb") or DEFAULT_MEMORY_MB),
                    timeout_s=float(doc.get("timeout_s") or DEFAULT_TIMEOUT_S),
                )
            )
        elif doc.get("type") == "result":
            results.append(
                Result(
                    impl=doc["implementation"],
                    file=doc["file"],
                    status=doc["status"],
                    rc=doc.get("rc"),
                    signal=doc.get("signal"),
                    seconds=float(doc.get("seconds") or 0),
                    detail=doc.get("detail") or "",
                )
            )
    return impls, results
