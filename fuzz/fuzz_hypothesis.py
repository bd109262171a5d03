"""atheris entry point for the `hypothesis` target: every target driven by validator.strategies
(`valid_files`, `corrupted_files`, `mutated_files`) through `.hypothesis.fuzz_one_input`.

    python fuzz/fuzz_hypothesis.py -max_total_time=60 fuzz/out/hypothesis

`stcheck fuzz hypothesis` runs the same harness with progress, minimisation and saved regressions.
"""

import sys

TARGET = "hypothesis"
# The engine's own machinery and the invariant checks are not coverage-instrumented.
NOT_INSTRUMENTED = [
    "validator.fuzz.harness",
    "validator.fuzz.mutator",
    "validator.fuzz.seeds",
    "validator.fuzz.supervisor",
    "validator.fuzz.targets",
]


def main() -> None:
    import atheris  # type: ignore[import-untyped]  # no stubs published

    with atheris.instrument_imports(include=["validator"], exclude=NOT_INSTRUMENTED):
        import validator.fuzz.targets  # noqa: F401
    from validator.fuzz.harness import fuzz

    fuzz(TARGET, sys.argv)


if __name__ == "__main__":
    main()
