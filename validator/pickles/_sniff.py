# Strategy: the container sniff lives with the containers
# (validator.formats._sniff); this keeps the public boundary's import.
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from validator.pickles._verdict import Container

__all__ = ["sniff"]


def sniff(head: bytes) -> Container | None:
    """The container ``head`` (a file's first bytes) starts, or None."""
    from validator.formats._sniff import sniff as container  # noqa: PLC0415 - formats imports this package

    return container(head)
