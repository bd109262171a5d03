# Strategy: the one rule that tells a loader's clean rejection of a file
# from a crash, shared by the conformance harness (validator/conformance/
# adapter.py, whose header comment states the rule in full) and by `stcheck
# fuzz loader-under-test`.  Pure: it inspects exception objects only.
from __future__ import annotations

from typing import Final

__all__ = ["DOCUMENTED_REJECTIONS", "is_crash", "is_rejection"]


# Exception class names that libraries document as "this file is invalid";
# matched by name along the MRO, so that no library has to be imported to
# recognise its error type.
DOCUMENTED_REJECTIONS: Final = frozenset({"StcheckError", "SafetensorError", "SafetensorsParsingError"})


def is_crash(exc: BaseException) -> bool:
    """Whether an exception means the parser broke even if its type looks like a refusal."""
    if not isinstance(exc, Exception):
        return True
    if isinstance(exc, (RecursionError, MemoryError, SystemError)):
        return True
    text = str(exc)
    return isinstance(exc, ValueError) and "digits" in text and "limit" in text


def is_rejection(exc: BaseException, documented: tuple[type[BaseException], ...] = ()) -> bool:
    """Whether ``exc`` is a clean rejection under the one rule above.

    ``documented`` adds the types a user or an adapter names for its loader.
    """
    if is_crash(exc):
        return False
    if isinstance(exc, (ValueError, *documented)):
        return True
    return any(cls.__name__ in DOCUMENTED_REJECTIONS for cls in type(exc).__mro__)
