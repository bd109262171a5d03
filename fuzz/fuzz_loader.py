"""atheris entry point for the `loader` target (OSS-Fuzz / ClusterFuzzLite layout).

    python fuzz/fuzz_loader.py -max_total_time=60 -dict=fuzz/safetensors.dict fuzz/out/loader fuzz/seeds

`stcheck fuzz loader` runs the same harness with progress, minimisation and saved regressions.
"""

import sys

TARGET = "loader"
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
        import validator.fuzz.targets
        import validator.io.loader  # noqa: F401  # the loader under test
    from validator.fuzz.harness import fuzz

    fuzz(TARGET, sys.argv)


if __name__ == "__main__":
    main()
