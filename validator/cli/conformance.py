# Strategy: `stcheck conformance`, the command line of the harness in
# validator/conformance/.  Two modes:
#
# - matrix mode (default): every implementation in corpus/implementations.toml
#   over the corpus; prints the totals and, with --out, writes results.jsonl,
#   summary.md and results.html there.  Exit 0 unless a usage error.
# - user mode (--impl 'python my_loader.py {path}' or --impl module:function):
#   only the user's loader; prints a scorecard and exits 1 when any n_ file
#   is accepted, any crash or timeout happens, or wrong data is returned, so
#   it works as a CI gate.
from __future__ import annotations

import fnmatch
import importlib.util
import json
import os
import shlex
import shutil
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Final

from validator._display import escape_line, plural
from validator._errors import StcheckError
from validator.cli._common import EXIT_ERROR, EXIT_INVALID, EXIT_OK
from validator.conformance.adapter import ENV_REJECT
from validator.conformance.harness import (
    DEFAULT_MEMORY_MB,
    DEFAULT_TIMEOUT_S,
    FAILING,
    SEVERITY,
    STATUSES,
    ConformanceError,
    find_corpus,
    load_cases,
    load_impls,
    probe,
    run_all,
    totals,
    user_impl,
    worst,
    write_jsonl,
)
from validator.harness.command import stop_all
from validator.harness.rejection import REJECT_EXIT

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

    from validator.conformance.fuzzing import Campaign, Plan
    from validator.conformance.harness import Case, Impl, Result

__all__ = ["register", "run"]


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "conformance",
        help="run safetensors parsers over the conformance corpus (or gate your own loader with --impl)",
        description="Run implementations over the conformance corpus and classify each result.",
    )
    p.add_argument("--corpus", metavar="DIR", help="corpus directory (default: ./corpus, then the checkout's)")
    p.add_argument("--impl", metavar="SPEC", help="user mode: 'python my_loader.py {path}' or module:function")
    p.add_argument(
        "--reject-exception",
        action="append",
        default=[],
        metavar="MODULE:NAME",
        help="user mode: an exception type the loader documents as its rejection (ValueError, StcheckError "
        "and SafetensorError already are; any other exception is a crash); a command's traceback is matched by name",
    )
    p.add_argument(
        "--reject-exit",
        type=int,
        default=REJECT_EXIT,
        metavar="CODE",
        help="user mode, command: the exit code that means 'rejected' (default 1; exit 0 accepts, a Python "
        "traceback is judged by its exception, anything else is a crash)",
    )
    p.add_argument(
        "--only", metavar="NAME", action="append", default=[], help="run only this implementation (repeatable)"
    )
    p.add_argument(
        "--ext",
        metavar="DIR",
        default=os.environ.get("STCHECK_EXT"),
        help="where optional implementations are installed (default: $STCHECK_EXT)",
    )
    p.add_argument(
        "--files", metavar="GLOB", action="append", default=[], help="only corpus files matching this glob (repeatable)"
    )
    p.add_argument(
        "--large",
        action="store_true",
        help="also run the cases with a 100,000,000-byte header, about 95 MiB (materialised in the cache on first use)",
    )
    p.add_argument("--cache-dir", metavar="DIR", help="where large cases are materialised (default: CORPUS/.cache)")
    p.add_argument("--out", metavar="DIR", help="write results.jsonl, summary.md and results.html here")
    p.add_argument("--jobs", type=int, default=2, help="implementations run in parallel (default 2)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="user mode: seconds per file (default 20)")
    p.add_argument(
        "--memory-mb",
        type=int,
        default=DEFAULT_MEMORY_MB,
        help="user mode: address-space cap per file in MiB (default 2048, 0 = none)",
    )
    p.add_argument("--from-jsonl", metavar="FILE", help="do not run anything: re-render --out from a results.jsonl")
    p.add_argument(
        "--fuzz-seconds",
        type=float,
        default=0,
        metavar="N",
        help="matrix mode, with --out: also fuzz each loader whose adapter serves the frame protocol for N seconds "
        "(stcheck fuzz loader-under-test --persistent); its classes and causes join its row, the reproducers "
        "go to OUT/fuzz/ (default 0: off)",
    )
    p.add_argument(
        "--cluster",
        metavar="ADDR",
        help="with --fuzz-seconds: run one campaign per loader as a Dask task on tcp://HOST:PORT or local:N "
        "(workers need this checkout and the loaders at the same paths)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(run=run)


def _command_line(args: argparse.Namespace) -> str:  # noqa: C901, PLR0912 - one branch per option that shapes the results
    parts = ["stcheck", "conformance"]
    if args.corpus:
        parts += ["--corpus", args.corpus]
    if args.impl:
        parts += ["--impl", args.impl]
        # Options that change a user-mode verdict (a reject or a crash, a
        # timeout, an out-of-memory) are part of the command; defaults are left out.
        for exc in args.reject_exception:
            parts += ["--reject-exception", exc]
        if args.reject_exit != REJECT_EXIT:
            parts += ["--reject-exit", str(args.reject_exit)]
        if args.timeout != DEFAULT_TIMEOUT_S:
            parts += ["--timeout", f"{args.timeout:g}"]
        if args.memory_mb != DEFAULT_MEMORY_MB:
            parts += ["--memory-mb", str(args.memory_mb)]
    if args.cache_dir:
        parts += ["--cache-dir", args.cache_dir]
    for name in args.only:
        parts += ["--only", name]
    for glob in args.files:
        parts += ["--files", glob]
    if args.large:
        parts.append("--large")
    if args.fuzz_seconds:
        parts += ["--fuzz-seconds", f"{args.fuzz_seconds:g}"]
    if args.cluster:
        parts += ["--cluster", args.cluster]
    if args.out:
        parts += ["--out", args.out]
    env = f"STCHECK_EXT={shlex.quote(args.ext)} " if args.ext else ""
    return env + " ".join(shlex.quote(p) for p in parts)


def run(args: argparse.Namespace) -> int:  # noqa: C901, PLR0912 - one branch per option and exit code
    problem = _fuzz_usage(args)
    if problem:
        _err(f"stcheck: {problem}")
        return EXIT_ERROR
    try:
        corpus = find_corpus(args.corpus)
        cache = Path(args.cache_dir) if args.cache_dir else None
        cases = load_cases(corpus, large=args.large, cache=cache)
        if args.files:
            cases = [c for c in cases if any(fnmatch.fnmatch(c.file, g) for g in args.files)]
            if not cases:
                _err(f"stcheck: no corpus file matches {', '.join(args.files)}")
                return EXIT_ERROR
        if args.from_jsonl:
            return _rerender(args, cases)
        impls = [_user_impl(args)] if args.impl else load_impls(corpus, args.ext, args.only)
    except ConformanceError as exc:
        _err(f"stcheck: {exc}")
        return EXIT_ERROR
    except (OSError, ValueError, KeyError) as exc:
        _err(f"stcheck: cannot read the corpus: {exc}")
        return EXIT_ERROR
    for impl in impls:
        probe(impl)
        if args.impl and impl.skip_reason:
            _err(f"stcheck: cannot run {escape_line(args.impl)}: {impl.skip_reason}")
            return EXIT_ERROR
        if not args.quiet:
            _err(_ready_line(impl, user=bool(args.impl)))
    done = [0]
    total = len(cases) * len(impls)

    def progress(_result: Result) -> None:
        done[0] += 1
        if not args.quiet and (done[0] % 200 == 0 or done[0] == total):
            _err(f"  {done[0]}/{total} results")

    try:
        results = run_all(impls, cases, jobs=args.jobs, on_result=progress)
    except BaseException:
        stop_all()  # an interrupted run leaves no loader running, and starts none
        raise
    command = _command_line(args)
    campaigns = []
    if args.fuzz_seconds:
        try:
            campaigns = _fuzz(args, impls, find_corpus(args.corpus))
        except StcheckError as exc:
            _err(f"stcheck: {exc}")
            return EXIT_ERROR
    if args.out:
        _write(Path(args.out), (impls, cases, results), command, campaigns)
    if args.impl:
        return _scorecard(impls[0], results)
    _print_totals(impls, results)
    _print_campaigns(campaigns)
    if args.out:
        _out(f"wrote {Path(args.out) / 'results.jsonl'}, summary.md and results.html")
    return _verdict_line(impls, results)


def _write(
    out: Path, run: tuple[list[Impl], list[Case], list[Result]], command: str, campaigns: Sequence[Campaign]
) -> None:
    from validator.conformance.report import render_html, render_markdown  # noqa: PLC0415 - only when writing

    impls, cases, results = run
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "results.jsonl", impls, results, [c.to_json() for c in campaigns])
    (out / "summary.md").write_text(render_markdown(impls, cases, results, command, campaigns), encoding="utf-8")
    (out / "results.html").write_text(
        render_html(impls, cases, results, command, campaigns=campaigns), encoding="utf-8"
    )


def _fuzz_usage(args: argparse.Namespace) -> str | None:
    if args.fuzz_seconds < 0:
        return "--fuzz-seconds must be 0 (off) or more"
    if args.cluster and not args.fuzz_seconds:
        return "--cluster runs the fuzz campaigns: give --fuzz-seconds N too"
    if args.fuzz_seconds and (args.impl or args.from_jsonl):
        return "--fuzz-seconds fuzzes the matrix's loaders: not with --impl or --from-jsonl"
    if args.fuzz_seconds and not args.out:
        return "--fuzz-seconds needs --out DIR: the reproducers are saved beside the report"
    if args.cluster:
        # Checked before the corpus runs: a misspelt address must not cost the whole matrix first.
        from validator.pipeline.cluster import ClusterError, parse_address  # noqa: PLC0415 - only on a cluster

        try:
            parse_address(args.cluster)
        except ClusterError as exc:
            return str(exc)
        if args.cluster.startswith("local:") and importlib.util.find_spec("distributed") is None:
            from validator.config.install import install_hint  # noqa: PLC0415 - only on this error path

            return f"--cluster needs Dask: {install_hint('cluster')}"
    return None


def _fuzz(args: argparse.Namespace, impls: list[Impl], corpus: Path) -> list[Campaign]:
    """One campaign per loader that serves the frame protocol, here or on a Dask cluster."""
    from validator.conformance.fuzzing import plan_for, run_campaigns, threads  # noqa: PLC0415 - only when fuzzing

    plans = [p for p in (plan_for(i, args.fuzz_seconds, str(corpus.resolve())) for i in impls) if p is not None]
    if not args.quiet:
        names = ", ".join(p.impl for p in plans) or "none"
        where = f" on the Dask cluster {args.cluster}" if args.cluster else ""
        _err(f"fuzzing {plural(len(plans), 'loader')} for {args.fuzz_seconds:g} s each{where}: {names}")
    mapper = _dask_mapper(args.cluster) if args.cluster else threads(args.jobs)
    return run_campaigns(plans, Path(args.out), mapper)


def _dask_mapper(address: str) -> Callable[[Callable[[Plan], Campaign], Sequence[Plan]], list[Campaign]]:
    """Each campaign as one Dask task; their findings come back as values and are merged here."""
    from validator.pipeline.cluster import connect, parse_address  # noqa: PLC0415 - only on a cluster

    where = parse_address(address)

    def mapper(fn: Callable[[Plan], Campaign], plans: Sequence[Plan]) -> list[Campaign]:
        if not plans:
            return []
        with connect(where) as client:
            run = uuid.uuid4().hex[:8]
            futures = [client.submit(fn, p, key=f"stcheck-matrix-{run}-{i}", pure=False) for i, p in enumerate(plans)]
            return [f.result() for f in futures]

    return mapper


def _print_campaigns(campaigns: Sequence[Campaign]) -> None:
    from validator.conformance.fuzzing import GROUPS  # noqa: PLC0415 - only after fuzzing

    for c in campaigns:
        counts = ", ".join(
            f"{heading} {n}" for group, heading, _, _ in GROUPS if (n := sum(k.group == group for k in c.classes))
        )
        error = f" (did not finish: {c.error})" if c.error else ""
        _out(
            f"fuzz {escape_line(c.impl)}: {plural(len(c.classes), 'class', 'classes')}{error}"
            + (f": {counts}" if counts else "")
        )


def _verdict_line(impls: list[Impl], results: list[Result]) -> int:
    """The matrix run's last line: stcheck's own profiles decide the exit code
    (a verdict the corpus does not expect is a failure of stcheck); other
    implementations' failures are what the matrix reports, not an error."""
    own = {i.name for i in impls if i.name.startswith("stcheck-")}
    mine = [r for r in results if r.impl in own]
    wrong = [r for r in mine if r.status in FAILING]
    if wrong:
        _out(f"FAILED: {len(wrong)} of stcheck's {plural(len(mine), 'verdict')}: not the ones the corpus requires")
        return EXIT_INVALID
    defined = sum(1 for r in mine if r.status in {"i-accepted", "i-rejected"})
    others = sum(1 for r in results if r.impl not in own and r.status in FAILING)
    if mine:
        _out(
            f"passed: all {len(mine)} verdicts of {', '.join(sorted(own))} as expected "
            f"({len(mine) - defined} as the corpus requires, {defined} on implementation-defined i_ files)"
            + (f"; other implementations: {plural(others, 'failing result')}" if others else "")
        )
    elif others:
        _out(f"done: {plural(others, 'failing result')} among the implementations run (the matrix above)")
    return EXIT_OK


def _rerender(args: argparse.Namespace, cases: list[Case]) -> int:
    from validator.conformance.fuzzing import read_fuzz_lines  # noqa: PLC0415 - only when re-rendering
    from validator.conformance.harness import read_jsonl  # noqa: PLC0415 - only when re-rendering
    from validator.conformance.report import render_html, render_markdown  # noqa: PLC0415 - only when re-rendering

    impls, results = read_jsonl(Path(args.from_jsonl))
    lines = Path(args.from_jsonl).read_text(encoding="utf-8").splitlines()
    campaigns = read_fuzz_lines(json.loads(line) for line in lines if line.strip())
    names = {r.file for r in results}
    cases = [c for c in cases if c.file in names]
    out = Path(args.out or Path(args.from_jsonl).parent)
    out.mkdir(parents=True, exist_ok=True)
    summary = out / "summary.md"
    command = _regen_command(summary)
    summary.write_text(render_markdown(impls, cases, results, command, campaigns), encoding="utf-8")
    (out / "results.html").write_text(
        render_html(impls, cases, results, command, campaigns=campaigns), encoding="utf-8"
    )
    _print_totals(impls, results)
    _print_campaigns(campaigns)
    return EXIT_OK


def _regen_command(summary: Path) -> str:
    """The command recorded in an existing summary.md, kept on re-rendering."""
    try:
        text = summary.read_text(encoding="utf-8")
    except OSError:
        return "stcheck conformance --out DIR"
    _, _, rest = text.partition("```sh\n")
    return rest.partition("\n")[0] or "stcheck conformance --out DIR"


def _print_totals(impls: list[Impl], results: list[Result]) -> None:
    count = totals(results)
    shown = [s for s in STATUSES if any(row.get(s) for row in count.values())]
    width = max(len(i.name) for i in impls)
    _out(f"{'implementation':{width}}  " + "  ".join(shown))
    for impl in impls:
        row = count.get(impl.name, {})
        _out(f"{impl.name:{width}}  " + "  ".join(f"{row.get(s, 0):>{len(s)}}" for s in shown))
    for impl in impls:
        r = worst(results).get(impl.name)
        if r is not None and SEVERITY[r.status] >= 2:
            _out(f"{impl.name}: worst is {r.status} on {r.file}: {r.detail[:200]}")


# What each status means on the scorecard.
_SCORE_LABELS: Final = {
    "expected": "as the corpus requires (y_ accepted, n_ rejected)",
    "should-have-rejected": "n_ files accepted",
    "should-have-accepted": "y_ files rejected",
    "i-accepted": "i_ files accepted: implementation-defined, not a failure",
    "i-rejected": "i_ files rejected: implementation-defined, not a failure",
    "wrong-data": "accepted, but returned bytes from outside the declared range",
    "crash": "an uncaught exception, a signal or an unexpected exit code",
    "timeout": "no answer within --timeout",
    "skipped": "not run",
}


def _user_impl(args: argparse.Namespace) -> Impl:
    """The user's loader from --impl, with its rejection types and code; a
    command whose program does not exist is a usage error, not 265 crashes."""
    for spec in args.reject_exception:
        module, _, name = spec.partition(":")
        if not (module and name):
            msg = f"--reject-exception {escape_line(spec)}: write it MODULE:NAME (builtins:KeyError, mypkg.errors:Bad)"
            raise ConformanceError(msg)
    impl = user_impl(args.impl, memory_mb=args.memory_mb, timeout_s=args.timeout)
    impl.reject_exit = args.reject_exit
    impl.reject_names = tuple(args.reject_exception)
    if impl.probe_argv is not None:  # module:function: the adapter imports the named types
        if args.reject_exception:
            impl.env[ENV_REJECT] = ",".join(args.reject_exception)
        return impl
    program = impl.argv[0]
    if shutil.which(program) is None and not Path(program).is_file():
        msg = f"--impl: {escape_line(program)}: command not found"
        raise ConformanceError(msg)
    return impl


def _ready_line(impl: Impl, *, user: bool) -> str:
    name = escape_line(impl.name)
    if impl.skip_reason:
        return f"{name}: skipped: {impl.skip_reason}"
    if not user:
        return f"{name}: version {impl.version}" if impl.version else f"{name}: ready"
    if impl.probe_argv is None:
        return f"loader {name}: a command, run once per file"
    return f"loader {name}, version {impl.version or 'unknown'}"


def _scorecard(impl: Impl, results: list[Result]) -> int:
    count = totals(results).get(impl.name, {})
    version = f", version {impl.version}" if impl.version else ""
    _out(f"conformance scorecard for {escape_line(impl.name)}{version}")
    for status in STATUSES:
        if count.get(status):
            mark = "  (fails the gate)" if status in FAILING else ""
            _out(f"  {status:22} {count[status]:>4}  {_SCORE_LABELS[status]}{mark}")
    accepted, rejected = count.get("i-accepted", 0), count.get("i-rejected", 0)
    failing = [r for r in results if r.status in FAILING]
    for r in sorted(failing, key=lambda r: (-SEVERITY[r.status], r.file)):
        _out(f"FAIL {r.status}: {r.file}: {r.detail[:300]}")
    crashes = {r.detail for r in results if r.status == "crash"}
    if len(results) > 1 and len(crashes) == 1 and all(r.status == "crash" for r in results):
        _out(f"note: every file crashed the same way ({next(iter(crashes))[:200]}); is the command right?")
    if failing:
        by_status = ", ".join(f"{s} {count[s]}" for s in STATUSES if s in FAILING and count.get(s))
        _out(
            f"FAILED: {len(failing)} of {plural(len(results), 'file')} did not get the verdict the corpus requires "
            f"({by_status})"
        )
        return EXIT_INVALID
    required = len(results) - accepted - rejected
    _out(
        f"passed: all {len(results)} verdicts as expected ({required} y_/n_ files as the corpus requires, "
        f"{accepted + rejected} implementation-defined i_ files: {accepted} accepted, {rejected} rejected)"
    )
    return EXIT_OK
