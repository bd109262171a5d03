"""atheris entry point for the `roundtrip` target (OSS-Fuzz / ClusterFuzzLite layout).

    python fuzz/fuzz_roundtrip.py -max_total_time=60 -dict=fuzz/safetensors.dict fuzz/out/roundtrip fuzz/seeds

`stcheck fuzz roundtrip` runs the same harness with progress, minimisation and saved regressions.
"""

import sys

TARGET = "roundtrip"


def main() -> None:
    import atheris  # type: ignore[import-untyped]  # no stubs published

    # The engine's machinery and the invariant checks are not instrumented (one list, in the package).
    from validator.fuzz._uninstrumented import instrumented_import

    instrumented_import(atheris, "validator.fuzz.targets")
    from validator.fuzz.inprocess import fuzz

    fuzz(TARGET, sys.argv)


if __name__ == "__main__":
    main()
