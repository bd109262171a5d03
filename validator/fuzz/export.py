# Strategy: `stcheck fuzz export DIR`, stcheck's fuzzing material for other
# engines.  It writes the seeds (one tiny file per construct, as in
# fuzz/seeds), the dictionary (libFuzzer/AFL++ `name="value"` format) and a
# README with the command lines that use them with libFuzzer, cargo-fuzz and
# AFL++, and with stcheck's own differential verdict.  Nothing else is
# written, and only these names are touched in DIR.
# ruff: noqa: PTH103, PTH118, PTH123
# Paths: os.path and open(), like the rest of the package.
from __future__ import annotations

import os
from typing import Final

from validator.fuzz.seeds import dictionary_text, seed_files

__all__ = ["README", "export"]

README: Final = """\
# safetensors fuzzing material, exported by `stcheck fuzz export`

- `seeds/`: {count} tiny files, one per construct: `y_` valid, `i_` accepted
  by the reference (safetensors 0.8.0) only, `n_` rejected.
- `safetensors.dict`: the format's tokens (keys, every dtype, numbers at the
  limits, escapes, 8-byte prefixes), in the `name="value"` format that
  libFuzzer (`-dict=`) and AFL++ (`-x`) read.

## libFuzzer (C/C++: a LLVMFuzzerTestOneInput harness built with -fsanitize=fuzzer)

    clang -g -O1 -fsanitize=fuzzer,address -o fuzz_load fuzz_load.c my_loader.c
    mkdir -p corpus && ./fuzz_load -dict=safetensors.dict -max_len=16384 corpus seeds

## cargo-fuzz (Rust: fuzz/fuzz_targets/load.rs calling your loader on `data`)

    cargo fuzz run load fuzz/corpus/load seeds -- -dict=safetensors.dict -max_len=16384

## AFL++ (any compiled loader; `BIN FILE` exits 0 to accept and 1 to reject)

    afl-cc -O2 -o loader-afl loader.c                      # persistent mode: __AFL_LOOP
    AFL_SKIP_CPUFREQ=1 afl-fuzz -i seeds -o afl-out -x safetensors.dict -- ./loader-afl @@

## Judge what they found against safetensors 0.8.0 (stcheck's differential verdict)

    stcheck fuzz loader-under-test --loader-cmd './loader {{path}}' --replay afl-out/default/crashes
    stcheck fuzz loader-under-test --engine aflpp --loader-cmd './loader-afl @@' --seconds 300
    stcheck fuzz loader-under-test --persistent --loader-cmd './harness --persistent' --seconds 300
"""


def export(directory: str) -> list[str]:
    """Write seeds/, safetensors.dict and README.md under ``directory``; the paths written."""
    seeds_dir = os.path.join(directory, "seeds")
    os.makedirs(seeds_dir, exist_ok=True)
    written: list[str] = []
    seeds = seed_files()
    for name, data in seeds.items():
        path = os.path.join(seeds_dir, name)
        with open(path, "wb") as f:
            f.write(data)
        written.append(path)
    for name, text in (("safetensors.dict", dictionary_text()), ("README.md", README.format(count=len(seeds)))):
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        written.append(path)
    return written
