"""atheris entry point for the `loader` target (OSS-Fuzz / ClusterFuzzLite layout).

    python fuzz/fuzz_loader.py -max_total_time=60 -dict=fuzz/safetensors.dict fuzz/out/loader fuzz/seeds

`stcheck fuzz loader` runs the same harness with progress, minimisation and saved regressions.
"""

import sys

TARGET = "loader"


def main() -> None:
    import atheris  # type: ignore[import-untyped]  # no stubs published

    # The engine's machinery and the invariant checks are not instrumented (one list, in the package).
    from validator.fuzz._uninstrumented import instrumented_import

    instrumented_import(atheris, "validator.fuzz.targets", "validator.io.loader")  # and the loader under test
    from validator.fuzz.inprocess import fuzz

    fuzz(TARGET, sys.argv)


if __name__ == "__main__":
    main()
