# Strategy: where the conformance harness finds its inputs.  The corpus
# (manifest.json) and the implementations (implementations.toml) are data;
# each implementation runs through a small adapter (see adapter.py for the
# protocol).  The corpus lives in the repository, beside the package; an
# installed wheel does not carry it, so without --corpus the harness looks in
# ./corpus and in the checkout the package was imported from, and otherwise
# says where to point --corpus.
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from validator.conformance.model import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S, Case, ConformanceError, Impl

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["find_corpus", "load_cases", "load_impls", "materialise_large", "package_root", "user_impl"]

# The directory holding the `validator` package: the repository root when it
# is imported from a checkout (an editable install included), site-packages
# when it is installed.
_PACKAGE_PARENT: Final = Path(__file__).resolve().parents[2]


def find_corpus(explicit: str | None) -> Path:
    """The corpus directory: --corpus, else ./corpus, else the checkout's."""
    if explicit:
        if (Path(explicit) / "manifest.json").is_file():
            return Path(explicit)
        msg = f"no conformance corpus found: {explicit} has no manifest.json; pass --corpus DIR pointing at a corpus/"
        raise ConformanceError(msg)
    candidates = [Path.cwd() / "corpus", _PACKAGE_PARENT / "corpus"]
    for candidate in candidates:
        if (candidate / "manifest.json").is_file():
            return candidate
    where = " and ".join(dict.fromkeys(str(c) for c in candidates))
    msg = (
        f"no conformance corpus found (no manifest.json in {where}); an installed stcheck does not include "
        "the corpus: clone the stcheck repository and pass --corpus CHECKOUT/corpus"
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
    return str(_PACKAGE_PARENT)


def _command_impl(item: dict[str, Any], corpus: Path, ext: str | None) -> Impl:
    """An implementation run as its own program (`command` in the file): a
    native binary or a script of another language, taking FILE, and
    --persistent for a fuzz campaign; --probe only when `probe` says so."""
    name = item["name"]
    install = item.get("install", "")
    words = [str(w) for w in item["command"]]
    skip = None
    if any("{ext}" in w for w in words) and not ext:
        skip = f"STCHECK_EXT is not set; install with: {install}"
    where = {"{ext}": str(Path(ext).resolve()) if ext else "", "{corpus}": str(corpus)}
    for key, value in where.items():
        words = [w.replace(key, value) for w in words]
    program = words[0]
    if skip is None and shutil.which(program) is None and not Path(program).is_file():
        skip = f"{program} not found; install with: {install.replace('$STCHECK_EXT', ext or '$STCHECK_EXT')}"
    probes = bool(item.get("probe", False))
    return Impl(
        name=name,
        argv=(*words, "{path}"),
        probe_argv=(*words, "--probe") if probes and skip is None else None,
        env={str(k): str(v) for k, v in item.get("env", {}).items()},
        memory_mb=int(item.get("memory_mb", DEFAULT_MEMORY_MB)),
        timeout_s=float(item.get("timeout_s", DEFAULT_TIMEOUT_S)),
        version=None if probes else item.get("version"),
        expect_version=item.get("version") if probes else None,
        install=install,
        notes=item.get("notes", ""),
        skip_reason=skip,
        cwd=str(corpus),
        fuzz_argv=(*words, "--persistent") if item.get("fuzz", True) else None,
    )


def load_impls(corpus: Path, ext: str | None, only: Sequence[str] = ()) -> list[Impl]:
    """The implementations file as Impl objects (unprobed)."""
    corpus = corpus.resolve()  # adapters run with the corpus as working directory
    doc = _toml(corpus / "implementations.toml")
    impls = []
    for item in doc.get("implementation", []):
        name = item["name"]
        if only and name not in only:
            continue
        if "command" in item:
            impls.append(_command_impl(item, corpus, ext))
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
            fuzz_argv=(*argv, "--persistent") if item.get("fuzz", True) else None,
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
