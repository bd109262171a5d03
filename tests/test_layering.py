# The package's layers, checked over its import graph.  Every import
# statement counts, wherever it stands: at module level, inside a function,
# or under `if TYPE_CHECKING:`.  The layers read like the path the data
# takes, from the bytes up to the command line; each may import only the
# layers below it (ORDER) and itself:
#
#   core       validator/_*.py: the byte checks of the format; imports only itself
#   pickles    the static reading of pickles against an allowlist (never executed)
#   formats    the loaders' dispatch and the containers around pickles (zip, npy, tar, compressed)
#   io         loader, writer, index, devices, dtype maps, the names of files
#   sources    what an argument names: the scheme registry, the one resolve(),
#              the folder walk and the file kinds
#   config     the policy in force, settings read once from the environment,
#              install hints
#   read       the primitives of a file's one read: the pass, digests, deep
#              checks, the identity of the bytes judged
#   report     the result model and its writers (text, JSON, SARIF, JUnit, BOM)
#   signing    signature verification (OMS) and the signed digests
#   remote     http(s):// and hf:// sources, and download
#   pipeline   the stages: plan, the worker pool and cache, judge, vet()
#   cli        the command line: argparse, then the pipeline, then the writers
#
# Beside that path: harness (running somebody else's loader; core only),
# conformance and fuzz (applications over the core, io and the harness),
# compat (the drop-in safetensors API over io), testing and strategies.
#
# Facades: `validator/__init__.py` (the core, plus io and the pipeline for
# the typed lazy exports), `validator/strategies.py` (testing) and
# `validator/__main__.py` (cli).  Importing a facade counts as importing what
# it may import.
from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "validator"

ORDER = ("core", "pickles", "formats", "io", "sources", "config", "read", "report", "signing", "remote", "pipeline")
# layer -> the layers its modules may import
ALLOWED: dict[str, frozenset[str]] = {
    **{name: frozenset(ORDER[: i + 1]) for i, name in enumerate(ORDER)},
    # The reader's public boundary calls the containers' dispatch, which calls the reader.
    "pickles": frozenset({"core", "pickles", "formats"}),
    "pipeline": frozenset({*ORDER, "package"}),
    "testing": frozenset({"core", "testing"}),
    "harness": frozenset({"core", "harness"}),
    "fuzz": frozenset({"core", "io", "harness", "fuzz", "package", "testing", "strategies"}),
    "conformance": frozenset({"core", "io", "harness", "conformance", "package"}),
    "package": frozenset({"core", "io", "package", "pipeline"}),
    "strategies": frozenset({"core", "testing", "strategies"}),
    "compat": frozenset({"core", "io", "compat", "package"}),
    "cli": frozenset({*ORDER, "testing", "harness", "fuzz", "conformance", "compat", "cli", "package", "strategies"}),
    "main": frozenset({"cli", "package"}),
    # validator.formats.oracle (branch oracle): the real loaders against stcheck's dispatch
    # (sources.kinds) and reader (pickles), driven by the fuzz layer's pickle mutator.
    "formats": frozenset({"core", "pickles", "sources", "fuzz", "formats"}),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "package"
    head = parts[1]
    if len(parts) == 2 and head == "__main__":
        return "main"
    if len(parts) == 2 and head.startswith("_"):
        return "core"
    return head


def imported(module: str, source: str, *, is_package: bool, known: set[str]) -> set[str]:
    """The validator modules ``module`` imports anywhere in ``source``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if is_package else module.split(".")[:-1]
                here = here[: len(here) - node.level + 1]
                base = ".".join([*here, base] if base else here)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return {m for m in found if m.split(".")[0] == "validator" and m != module}


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(paths)
    return {
        name: imported(name, path.read_text(encoding="utf-8"), is_package=path.name == "__init__.py", known=known)
        for name, path in paths.items()
    }


def violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for module, targets in sorted(graph.items()):
        allowed = ALLOWED.get(layer(module))
        if allowed is None:
            bad.append(f"{module}: layer {layer(module)!r} is not in ALLOWED")
            continue
        bad.extend(
            f"{module} ({layer(module)}) imports {target} ({layer(target)})"
            for target in sorted(targets)
            if layer(target) not in allowed
        )
    return bad


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_import_respects_the_layers():
    assert violations(import_graph()) == []


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_every_subpackage_has_a_layer():
    subpackages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert subpackages <= set(ALLOWED)
    assert len(subpackages - {"cli", "testing"}) >= 4


def test_the_check_sees_upward_local_and_type_checking_imports():
    source = textwrap.dedent(
        """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from validator.io.index import IndexReport
        def f():
            from .pipeline import engine
            import validator.cli.main
        """
    )
    known = {
        "validator._errors",
        "validator.io.index",
        "validator.pipeline",
        "validator.pipeline.engine",
        "validator.cli.main",
    }
    graph = {"validator._errors": imported("validator._errors", source, is_package=False, known=known)}
    assert violations(graph) == [
        "validator._errors (core) imports validator.cli.main (cli)",
        "validator._errors (core) imports validator.io.index (io)",
        "validator._errors (core) imports validator.pipeline.engine (pipeline)",
    ]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_subcommands_do_not_import_the_cli_entry_point():
    graph = import_graph()
    importers = sorted(m for m, targets in graph.items() if "validator.cli.main" in targets)
    assert importers == ["validator.__main__"]


# --- what start-up imports ----------------------------------------------------

# Never imported by `import validator`, nor by `stcheck check`.
HEAVY = (
    "numpy",
    "torch",
    "ml_dtypes",
    "hypothesis",
    "safetensors",
    "multiprocessing",
    "concurrent.futures",
    "validator.pipeline.engine",
    "validator.pipeline.runner",
    "validator.pipeline.vet",
    "validator.read",
    "validator.signing",
    "validator.fuzz",
    "validator.conformance",
    "validator.testing",
    "validator.remote",
    "validator.compat",
    "validator.io.loader",
    "validator.io.writer",
    "validator.io.index",
)


# What `stcheck check` shares with `stcheck scan` (one policy, one result
# type, one writer per format): modules that import only the core and each
# other, never the engine, multiprocessing or numpy (checked over the import
# graph below), so check FILE stays light.  The plan (pipeline.plan) and the
# grammar (sources.targets) load the index and remote modules lazily, only
# for an index or a URL; the start-up tests below run check FILE for real.
SHARED_WITH_CHECK = (
    "validator.pipeline",
    "validator.pipeline.verdicts",
    "validator.pipeline.judge",
    "validator.sources",
    "validator.sources.schemes",
    "validator.sources.walk",
    "validator.sources.kinds",
    "validator.config",
    "validator.config.policy",
    "validator.config.resolve",
    "validator.config.settings",
    "validator.report",
    "validator.report.format_common",
    "validator.report.formats",
    "validator.report.results",
    "validator.report.group",
    "validator.report.signatures",
)
# Also light, and reached from those: the formats loaded only when chosen
# (SARIF, JUnit, the CycloneDX BOM, whose cyclonedx import is itself lazy),
# the type of a result's stamp
# (validator.read.identity, under TYPE_CHECKING), the index modules loaded
# only for an index, remote sources loaded only for a URL, the file-name
# rules loaded only for a folder, and the install hints loaded only on the
# error that needs one.
SHARED_LIGHT = (
    "validator.pickles",  # the pickle reader: standard library only, loaded for a folder's pickles
    "validator.sources.codeformats",  # Keras and ONNX checks: standard library only, loaded for such files
    "validator.pickles._allow",
    "validator.pickles._archive",
    "validator.pickles._args",
    "validator.pickles._dtypes",
    "validator.pickles._handlers",
    "validator.pickles._ops",
    "validator.pickles._values",
    "validator.pickles._sniff",
    "validator.pickles._verdict",
    # the loaders' dispatch and containers: standard library only (numpy, when installed, for an .npy dtype)
    "validator.formats",
    "validator.formats._buffer",
    "validator.formats._compressed",
    "validator.formats._dispatch",
    "validator.formats._errors",
    "validator.formats._inflate",
    "validator.formats._judge",
    "validator.formats._lenient",
    "validator.formats._npy",
    "validator.formats._sniff",
    "validator.formats._tar",
    "validator.formats._zip",
    "validator.io",
    "validator.io.names",
    "validator.config.install",
    "validator.report.sarif",
    "validator.report.junit",
    "validator.report.bom",
    "validator.read",
    "validator.read.identity",
)


def test_what_check_shares_with_scan_imports_only_the_core():
    graph = import_graph()
    seen: set[str] = set()
    todo = list(SHARED_WITH_CHECK)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        if module != "validator":  # the facade (for __version__): its io exports load lazily, on use
            todo.extend(graph.get(module, ()))
    allowed = {*SHARED_WITH_CHECK, *SHARED_LIGHT, "validator"}
    outside = sorted(m for m in seen if layer(m) != "core" and m not in allowed)
    assert outside == []


# Loaded on demand, never by `stcheck check FILE` of one valid file where no
# pyproject.toml is found (issue 28: check FILE starts in at most the time of
# a bare safe_open script, tests/benchmarks/bench_startup.py): what only a
# usage error, a folder, another format, a missing extra or a found
# pyproject.toml needs.
DEFERRED_FROM_CHECK = (
    "difflib",  # the guess at a misspelt option or rule
    "shlex",  # the install hint of a missing extra
    "validator.config.install",
    "unicodedata",  # the file-name rules, for a folder
    "validator.io",
    "validator.sources.walk",
    "validator.sources.kinds",
    "validator.report.sarif",  # the formats not chosen
    "validator.report.junit",
    "validator.report.bom",
    "xml",
    "validator.cli.explain",  # `stcheck rules RULE`
    "tomllib",  # a pyproject.toml found
)


def loaded_after(code: str, *args: str, watch: tuple[str, ...] = HEAVY, cwd: Path = ROOT) -> list[str]:
    """The modules of ``watch`` (or below them) that running ``code`` loads,
    except the ones `stcheck check` shares with scan."""
    probe = f"{code}\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    if cwd != ROOT:  # this checkout, not an installed copy
        probe = f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n{probe}"
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True, cwd=cwd, timeout=60
    )
    names = done.stdout.split()
    return sorted(
        m for m in names if any(m == h or m.startswith(h + ".") for h in watch) and m not in SHARED_WITH_CHECK
    )


def test_import_validator_stays_light():
    assert loaded_after("import validator; validator.validate(b'')", watch=HEAVY + DEFERRED_FROM_CHECK) == []


def test_check_subcommand_imports_only_its_own_module(tmp_path):
    path = tmp_path / "empty.safetensors"
    path.write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
    code = "import sys\nfrom validator.cli.main import main\nassert main(['check', sys.argv[1]]) == 0"
    assert loaded_after(code, str(path)) == []
    # Where no pyproject.toml is found, nothing deferred is loaded either.
    if not any((d / "pyproject.toml").exists() for d in (tmp_path, *tmp_path.parents)):
        assert loaded_after(code, str(path), watch=HEAVY + DEFERRED_FROM_CHECK, cwd=tmp_path) == []
    # The working directory's pyproject.toml is read for a [tool.stcheck]
    # policy, as scan reads it; that loads nothing heavy either.
    (tmp_path / "pyproject.toml").write_text("[tool.stcheck]\nmax_tensors = 10\n")
    code = "import os, sys\nfrom validator.cli.main import main\nos.chdir(sys.argv[2])\nassert main(['check', sys.argv[1]]) == 0"
    assert loaded_after(code, str(path), str(tmp_path)) == []


# --- a subcommand whose module cannot be imported ------------------------------


@pytest.fixture
def fake_scan(tmp_path, monkeypatch):
    """Point `stcheck scan` at a module written by the test."""
    from validator.cli import main as cli_main

    def install(body: str) -> None:
        (tmp_path / "stcheck_fake_cmd.py").write_text(body, encoding="utf-8")
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, "stcheck_fake_cmd", raising=False)
        monkeypatch.setitem(cli_main._COMMANDS, "scan", ("stcheck_fake_cmd", "scan"))

    return install


def test_missing_optional_package_is_one_line_and_exit_2(fake_scan, capsys):
    from validator.cli.main import main

    fake_scan("import stcheck_no_such_package.sub\n")
    assert main(["scan", "x.safetensors"]) == 2
    err = capsys.readouterr().err
    # stcheck is on no index: the hint installs the extra from this checkout (issue 24).
    expected = (
        "stcheck: `stcheck scan` needs the package 'stcheck_no_such_package', which is not installed:"
        f" pip install '{ROOT}[scan]' (the scan extra, from this checkout of stcheck)"
    )
    assert err.splitlines() == [expected]
    assert "'stcheck[" not in err


def test_missing_optional_package_still_lists_the_subcommand(fake_scan, capsys):
    from validator.cli.main import main

    fake_scan("import stcheck_no_such_package\n")
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "unavailable: `stcheck scan` needs the package 'stcheck_no_such_package'" in " ".join(out.split())
    assert "check" in out


def test_a_broken_subcommand_is_not_hidden(fake_scan):
    from validator.cli.main import main

    fake_scan("import validator.no_such_module\n")
    with pytest.raises(ModuleNotFoundError, match=r"validator\.no_such_module"):
        main(["scan", "x.safetensors"])
    with pytest.raises(ModuleNotFoundError, match=r"validator\.no_such_module"):
        main(["--help"])


# --- private names stay in their package ---------------------------------------


def _package(module: str) -> str:
    parts = module.split(".")
    return "core" if len(parts) == 2 and parts[1].startswith("_") else (parts[1] if len(parts) > 1 else "package")


def crossed_private_names() -> list[str]:
    """``from validator.x.y import _name`` where the importer lies in another package."""
    crossed = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("validator"):
                continue
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and _package(node.module or "") != _package(module):
                    crossed.append(f"{module} imports {node.module}.{alias.name}")
    return crossed


def test_no_private_name_is_crossed_between_packages():
    assert crossed_private_names() == []


def test_every_core_module_says_what_it_exports():
    # The core's modules declare their public names; every name another
    # module takes from one of them is among those names.
    missing = []
    for path in sorted(PACKAGE.glob("_*.py")):
        if path.name in {"__init__.py", "__main__.py"}:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        exported = next(
            (
                {ast.literal_eval(e) for e in node.value.elts}
                for node in tree.body
                if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                and isinstance(node.value, ast.List)
            ),
            None,
        )
        if exported is None:
            missing.append(f"{path.name}: no __all__")
            continue
        module = module_name(path)
        for other in PACKAGE.rglob("*.py"):
            for node in ast.walk(ast.parse(other.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module == module:
                    missing.extend(
                        f"{other.relative_to(ROOT)} takes {module}.{a.name}, not in its __all__"
                        for a in node.names
                        if a.name not in exported and not a.name.startswith("_")
                    )
    assert missing == []
