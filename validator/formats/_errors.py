# Strategy: the two ways a container can stop the read.  ArchiveError: the
# bytes are not what they claim, or a loader might read them differently
# from stcheck (an error wherever a loader would unpickle them).
# Unreadable: well formed, but stcheck cannot open it or a member of it
# (encryption, a compression method or flag the standard library cannot
# follow, a format it has no reader for): ST708 names what was not read.
from __future__ import annotations

__all__ = ["ArchiveError", "NoPickle", "Unreadable"]


class ArchiveError(Exception):
    """A container that is not what it claims (the public API reports it as a problem)."""


class Unreadable(ArchiveError):  # noqa: N818 - a kind of ArchiveError, named for what it says
    """A container, or a member of one, that stcheck cannot open (ST708 names it)."""


class NoPickle(ArchiveError):  # noqa: N818 - as Unreadable
    """Bytes that no loader unpickles (a plain zip or tar, text)."""
