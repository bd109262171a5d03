"""atheris entry point for the `hypothesis` target: every target driven by validator.strategies
(`valid_files`, `corrupted_files`, `mutated_files`) through `.hypothesis.fuzz_one_input`.

    python fuzz/fuzz_hypothesis.py -max_total_time=60 fuzz/out/hypothesis

`stcheck fuzz hypothesis` runs the same harness with progress, minimisation and saved regressions.
"""

import sys

TARGET = "hypothesis"


def main() -> None:
    import atheris  # type: ignore[import-untyped]  # no stubs published

    # The engine's machinery and the invariant checks are not instrumented (one list, in the package).
    from validator.fuzz._uninstrumented import instrumented_import

    instrumented_import(atheris, "validator.fuzz.targets")
    from validator.fuzz.inprocess import fuzz

    fuzz(TARGET, sys.argv)


if __name__ == "__main__":
    main()
