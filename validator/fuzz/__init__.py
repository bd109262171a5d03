"""Fuzzing: the atheris targets, the structure-aware mutator, the seeds, the in-process harness
and the libFuzzer supervisor."""

__all__: list[str] = []
