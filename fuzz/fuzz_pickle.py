"""atheris entry point for the static pickle reader (OSS-Fuzz / ClusterFuzzLite layout).

    python fuzz/fuzz_pickle.py -max_total_time=600 -timeout=5 -dict=fuzz/pickle.dict fuzz/out/pickle corpus/pickles

The first directory collects new inputs (fuzz/out/ is ignored by git); the
corpus files are the seeds.  The invariant: any bytes give a PickleVerdict,
never an exception, and its fields agree with each other.
"""

import sys


def check(data: bytes) -> None:
    """Read ``data``; raise when the verdict contradicts itself."""
    from validator.pickles import PickleVerdict, read_pickle_bytes, sniff_pickle

    verdict = read_pickle_bytes(data)
    if not isinstance(verdict, PickleVerdict):
        raise TypeError(verdict)
    clean = not verdict.unsafe and verdict.problem is None
    if verdict.weights_only != clean or not set(verdict.unsafe) <= set(verdict.imports):
        raise AssertionError(verdict)
    if not verdict.message():
        raise AssertionError(verdict)
    sniff_pickle(data[:4096])


def TestOneInput(data: bytes) -> None:  # noqa: N802 - the name libFuzzer and atheris expect
    check(data)


def main() -> None:
    import atheris  # type: ignore[import-untyped]  # no stubs published

    with atheris.instrument_imports(include=["validator.pickles"]):
        import validator.pickles  # noqa: F401
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
