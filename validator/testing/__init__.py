"""The internals of `validator.strategies`: generators of valid and singly-corrupted files."""

__all__: list[str] = []
