"""Fuzzing: the atheris targets, the structure-aware mutator, seeds, the in-process harness and the libFuzzer supervisor."""
