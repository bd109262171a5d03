"""atheris entry point for the `differential` target (OSS-Fuzz / ClusterFuzzLite layout).

    python fuzz/fuzz_differential.py -max_total_time=60 -dict=fuzz/safetensors.dict fuzz/out/differential fuzz/seeds

`stcheck fuzz differential` runs the same harness with progress, minimisation and saved regressions.
"""

import sys

TARGET = "differential"


def main() -> None:
    import atheris  # type: ignore[import-untyped]  # no stubs published

    # The engine's machinery and the invariant checks are not instrumented (one list, in the package).
    from validator.fuzz._uninstrumented import instrumented_import

    instrumented_import(atheris, "validator.fuzz.targets")
    from validator.fuzz.inprocess import fuzz

    fuzz(TARGET, sys.argv)


if __name__ == "__main__":
    main()
