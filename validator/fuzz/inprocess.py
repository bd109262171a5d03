# Strategy: the in-process side of `stcheck fuzz`, the code that runs inside
# the atheris/libFuzzer process (and inside the OSS-Fuzz entry points in
# fuzz/).  (Not a "harness": that word is kept for the programs of
# fuzz/harness/ that wrap a loader, and for any process that serves the
# persistent protocol of validator/fuzz/persistent.py.)
# `fuzz(target, argv)` resolves a target name to its test function and
# mutator and hands them to atheris; `replay` runs saved inputs through a
# target in-process; `minimise` shrinks a failing input while it keeps
# failing the same way.  atheris is imported only inside `fuzz`, so pytest
# and the CLI can import this module without it.
#
# The atheris engine (supervisor.py) starts its process with BOOT (python -c BOOT TARGET FLAGS...),
# which imports the package under atheris' import hook so that validator's
# own modules are coverage-instrumented, all but the one list of
# validator/fuzz/_uninstrumented.py.
# ruff: noqa: PLC0415, PTH119, PTH123, T201
# Lazy imports: atheris, numpy, hypothesis and safetensors load, only where used.
# Paths: os.path and open(), like the rest of the package.
# A command-line module prints.
from __future__ import annotations

import os
import struct
import sys
import time
import traceback
from typing import TYPE_CHECKING, Final

from validator.fuzz.mutator import reductions
from validator.fuzz.targets import FUZZ_TARGETS, TARGETS

if TYPE_CHECKING:
    from collections.abc import Callable

    from hypothesis.strategies import SearchStrategy

__all__ = [
    "ALL_TARGETS",
    "BOOT",
    "HYPOTHESIS",
    "LOADER_UNDER_TEST",
    "STRATEGY_NAMES",
    "as_bytes",
    "failure",
    "file_strategy",
    "fuzz",
    "hypothesis_target",
    "minimise",
    "replay",
    "resolve",
    "signature",
]

HYPOTHESIS: Final = "hypothesis"
LOADER_UNDER_TEST: Final = "loader-under-test"
ALL_TARGETS: Final = (*TARGETS, HYPOTHESIS, LOADER_UNDER_TEST)
BOOT: Final = (
    "import sys, atheris\n"
    "from validator.fuzz._uninstrumented import instrumented_import\n"
    "instrumented_import(atheris, 'validator.fuzz.targets', 'validator.fuzz.loader_under_test', "
    f"'validator.io.loader', for_loaders=sys.argv[1:2] == [{LOADER_UNDER_TEST!r}])\n"
    "from validator.fuzz import inprocess\n"
    "inprocess.fuzz(sys.argv[1], [sys.argv[0], *sys.argv[2:]])\n"
)


STRATEGY_NAMES: Final = ("valid_files", "corrupted_files", "mutated_files")


def file_strategy() -> SearchStrategy[bytes]:
    """Whole files from validator.strategies, plus valid files put through our mutator.

    Uses whichever of valid_files, corrupted_files and mutated_files exist;
    raises ImportError when validator.strategies or valid_files is missing.
    """
    from hypothesis import strategies as st

    from validator import strategies
    from validator.fuzz.mutator import mutate

    if not hasattr(strategies, "valid_files"):
        msg = "validator.strategies has no valid_files"
        raise ImportError(msg)
    drawn = [getattr(strategies, name)().map(as_bytes) for name in STRATEGY_NAMES if hasattr(strategies, name)]
    mutated = st.tuples(drawn[0], st.integers(0, 2**32 - 1)).map(lambda pair: mutate(pair[0], 1 << 16, pair[1]))
    return st.one_of(*drawn, mutated)


def hypothesis_target() -> Callable[[bytes], None]:
    """Every target, driven by Hypothesis through ``.hypothesis.fuzz_one_input``."""
    from hypothesis import HealthCheck, given, settings

    @settings(database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(file_strategy())
    def every_target(data: bytes) -> None:
        for check in TARGETS.values():
            check(data)

    return every_target.hypothesis.fuzz_one_input  # type: ignore[attr-defined,no-any-return]


def as_bytes(generated: object) -> bytes:
    """The file bytes of whatever a strategy draws (bytes, or an object holding them)."""
    if isinstance(generated, (bytes, bytearray, memoryview)):
        return bytes(generated)
    for attr in ("data", "content", "raw"):
        value = getattr(generated, attr, None)
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
    to_bytes = getattr(generated, "to_bytes", None)
    if callable(to_bytes):
        return bytes(to_bytes())
    msg = f"cannot get file bytes from a {type(generated).__name__}"
    raise TypeError(msg)


def resolve(target: str, *, engine: bool = False) -> tuple[Callable[[bytes], None], bool]:
    """The test function for ``target`` and whether the custom mutator applies.

    ``engine``: the function the engine runs (FUZZ_TARGETS: some checks on a
    sample of inputs); otherwise every check on every input, for replays and
    the minimiser.
    """
    if target in TARGETS:
        return (FUZZ_TARGETS if engine else TARGETS)[target], True
    if target == HYPOTHESIS:
        return hypothesis_target(), False
    if target == LOADER_UNDER_TEST:
        from validator.fuzz.config import build_loader, from_env
        from validator.fuzz.loader_under_test import make_target

        config = from_env()  # the one value the campaign passed (validator/fuzz/config.py)
        assert config.loader is not None
        return make_target(build_loader(config), config.loader.out_dir), True
    msg = f"unknown fuzz target {target!r}; choose one of {', '.join(ALL_TARGETS)}"
    raise ValueError(msg)


def fuzz(target: str, argv: list[str]) -> None:
    """Run atheris on ``target`` with libFuzzer flags ``argv[1:]``; never returns."""
    import atheris  # type: ignore[import-untyped]  # no stubs published

    from validator.fuzz.config import configure_big
    from validator.fuzz.mutator import mutate

    configure_big()  # the campaign's settings, or (an entry point of fuzz/ run by hand) the variables'
    test, structured = resolve(target, engine=True)
    if target == LOADER_UNDER_TEST:
        test = _with_fault_stacks(test)

    def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
        return mutate(data, max_size, seed, atheris.Mutate)

    if structured:
        atheris.Setup(argv, test, custom_mutator=custom_mutator)
    else:
        atheris.Setup(argv, test)
    atheris.Fuzz()


def _with_fault_stacks(test: Callable[[bytes], None]) -> Callable[[bytes], None]:
    """``test`` that, from its first input on, prints the Python stack when the process dies of a signal.

    A loader that segfaults (a C extension, ctypes) stops libFuzzer with
    "deadly signal" and no stack.  faulthandler, enabled once libFuzzer's
    own handlers are in place (they refuse to replace another's), dumps the
    stack and hands the signal on to them, so the engine's output names the
    crash site (validator/fuzz/triage.py) and libFuzzer still saves the input.
    """
    import faulthandler

    def run(data: bytes) -> None:
        if not faulthandler.is_enabled():
            faulthandler.enable()
        test(data)

    return run


def signature(exc: BaseException) -> str:
    """A stable name for a failure: exception type and innermost frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno} ({frames[-1].name})" if frames else ""
    return f"{type(exc).__name__}{where}"


def failure(test: Callable[[bytes], None], data: bytes) -> BaseException | None:
    """The exception ``test`` raises on ``data``, or None."""
    try:
        test(data)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - any escape is the finding being reported
        return exc
    return None


def _candidates(data: bytes, i: int, size: int) -> list[bytes]:
    """``data`` without ``data[i:i+size]``; first with N shrunk to match, if the cut is in the header."""
    cut = data[:i] + data[i + size :]
    out = []
    if len(data) >= 8 and i >= 8:
        n = int.from_bytes(data[:8], "little")
        overlap = min(i + size, 8 + n) - i
        if 0 < overlap <= n:
            out.append(struct.pack("<Q", n - overlap) + cut[8:])
    out.append(cut)
    return out


def minimise(test: Callable[[bytes], None], data: bytes, seconds: float) -> bytes:
    """Shrink ``data`` by removing chunks while ``test`` keeps failing with the same signature."""
    first = failure(test, data)
    if first is None:
        return data
    want = signature(first)
    deadline = time.monotonic() + seconds
    best = data
    progress = True
    while progress and time.monotonic() < deadline:  # structural first: drop whole header members
        progress = False
        for candidate in reductions(best):
            if len(candidate) >= len(best):
                continue
            exc = failure(test, candidate)
            if exc is not None and signature(exc) == want:
                best, progress = candidate, True
                break
    size = max(1, len(best) // 2)
    while size >= 1 and time.monotonic() < deadline:
        i = 0
        while i < len(best) and time.monotonic() < deadline:
            for candidate in _candidates(best, i, size):
                exc = failure(test, candidate)
                if exc is not None and signature(exc) == want:
                    best = candidate
                    break
            else:
                i += size
        size //= 2
    return best


def replay(target: str, paths: list[str], out: Callable[[str], None] = print) -> int:
    """Run each file through ``target``; print PASS/FAIL lines; return the number of failures."""
    test, _ = resolve(target)
    failed = 0
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        exc = failure(test, data)
        if exc is None:
            out(f"PASS {path}")
            continue
        failed += 1
        out(f"FAIL {path}: {signature(exc)}: {type(exc).__name__}: {exc}")
        out("".join(traceback.format_exception(exc)).rstrip())
    return failed


def _main(argv: list[str]) -> int:
    """`python -m validator.fuzz.inprocess minimise TARGET IN OUT SECONDS` (used by the runner)."""
    if len(argv) == 5 and argv[0] == "minimise":
        _, target, src, dst, seconds = argv
        test, _ = resolve(target)
        with open(src, "rb") as f:
            data = f.read()
        small = minimise(test, data, float(seconds))
        with open(dst, "wb") as f:
            f.write(small)
        print(f"minimised {len(data)} -> {len(small)} bytes")
        return 0
    print("usage: python -m validator.fuzz.inprocess minimise TARGET IN OUT SECONDS", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
