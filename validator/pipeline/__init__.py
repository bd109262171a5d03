"""The stages between an argument and a verdict: resolve the sources, read
each file once (format, deep checks, digests, signature), judge (policy),
and hand the results to the report writers."""

__all__: list[str] = []
