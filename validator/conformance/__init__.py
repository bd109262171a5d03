"""The conformance harness: runs implementations over the corpus and draws the results matrix."""
