# Strategy: the one list of stcheck's modules that atheris does not
# coverage-instrument, and the one function that imports the package under
# atheris' hook, for the engine's child (inprocess.BOOT) and for the OSS-Fuzz
# entry points (fuzz/fuzz_*.py) alike.  The engine's own machinery (the
# mutator, the runner, the targets' invariant checks, the loader's runner)
# says nothing about the code under test, and tracing it cost a quarter of
# each execution.  Importing this module imports the package (its
# __init__), uninstrumented; instrumented_import() drops those copies from
# sys.modules first, so that everything outside the list is imported again
# under the hook.  Nothing here imports the rest of stcheck.
from __future__ import annotations

import sys
from typing import Final

__all__ = ["NOT_INSTRUMENTED", "NOT_INSTRUMENTED_FOR_LOADERS", "instrumented_import"]

NOT_INSTRUMENTED: Final = (
    "validator.fuzz._uninstrumented",
    "validator.fuzz._child",
    "validator.fuzz.config",
    "validator.fuzz.engine",
    "validator.fuzz.campaign",
    "validator.fuzz.report",
    "validator.fuzz.aflpp",
    "validator.fuzz.inprocess",
    "validator.fuzz.mutator",
    "validator.fuzz._big",  # the mutator's big and deep family
    "validator.fuzz.supervisor",
    "validator.fuzz.seeds",
    "validator.fuzz.targets",
    "validator.fuzz.loader_under_test",  # the loader's runner: its branches are not the oracle's
    "validator.fuzz.triage",  # the runner's causes and minimiser
    "validator.fuzz.persistent",
    "validator.fuzz.persistent_engine",
    "validator.harness.command",
    "validator.harness.rejection",
    "validator.cli.fuzz",
    "validator.cli.main",
)
# Fuzzing someone's loader, the oracle's coverage only steers the inputs
# toward new verdicts: the branches that say which rule fails are kept, the
# bookkeeping around them (collecting findings, building the report, their
# text) is not traced (a quarter of the oracle's cost under atheris).
NOT_INSTRUMENTED_FOR_LOADERS: Final = (
    "validator._check",
    "validator._display",
    "validator._findings",
    "validator._rules",
    "validator._tiers",
    "validator._validate",
    "validator._version",
)


def instrumented_import(atheris: object, *modules: str, for_loaders: bool = False) -> None:
    """Import ``modules`` with every stcheck module outside the lists coverage-instrumented.

    ``atheris`` is the imported atheris module (passed in: this module must not
    import it, so that pytest and the CLI can read the lists without it).
    """
    skip = [*NOT_INSTRUMENTED, *(NOT_INSTRUMENTED_FOR_LOADERS if for_loaders else ())]
    for name in [m for m in sys.modules if m == "validator" or m.startswith("validator.")]:
        if name != __name__:
            del sys.modules[name]
    with atheris.instrument_imports(include=["validator"], exclude=skip):  # type: ignore[attr-defined]
        for module in modules:
            __import__(module)
