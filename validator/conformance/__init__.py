"""The conformance harness: runs implementations over the corpus and draws the results matrix."""

__all__: list[str] = []
