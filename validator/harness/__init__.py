"""Running somebody else's loader: the loader-command protocol (a bounded
subprocess) and the rule that tells a rejection from a crash, shared by the
conformance harness and the fuzzers."""

__all__: list[str] = []
