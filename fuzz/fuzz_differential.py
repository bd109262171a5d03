"""atheris entry point for the `differential` target (OSS-Fuzz / ClusterFuzzLite layout).

    python fuzz/fuzz_differential.py -max_total_time=60 -dict=fuzz/safetensors.dict fuzz/out/differential fuzz/seeds

`stcheck fuzz differential` runs the same harness with progress, minimisation and saved regressions.
"""

import sys

TARGET = "differential"
# The engine's own machinery is not coverage-instrumented.
NOT_INSTRUMENTED = [
    "validator._fuzz_main",
    "validator._fuzz_mutator",
    "validator._fuzz_seeds",
    "validator._fuzz_runner",
]


def main() -> None:
    import atheris  # type: ignore[import-untyped]  # no stubs published

    with atheris.instrument_imports(include=["validator"], exclude=NOT_INSTRUMENTED):
        import validator._fuzz_targets  # noqa: F401
    from validator._fuzz_main import fuzz

    fuzz(TARGET, sys.argv)


if __name__ == "__main__":
    main()
