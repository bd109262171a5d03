# Strategy: the one judgement of a file that is not a safetensors file, for
# every way one arrives (a file argument, a folder's member, a hub-cache
# blob, standard input): the dispatch (_dispatch) run once over its bytes,
# and what it met beside the pickles.  A file is a pickle when some loader
# unpickles it (a stream was read, or refused), or when its name says so;
# otherwise it is what its name or content says, with the archives that
# were not read (ST708) and the member names that climb out (ST709).
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from validator.formats._dispatch import Seen, pickle_name, read
from validator.formats._errors import ArchiveError, NoPickle, Unreadable
from validator.pickles._ops import Reader, ReadError

if TYPE_CHECKING:
    import mmap

    Buffer = bytes | mmap.mmap

__all__ = ["Judged", "judge"]

# Archives stcheck has no reader for: (magic, what).
_OTHER_ARCHIVES: Final = (
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
)
# Zip-based formats that are read by their own checks, not as model pickles.
# A plain .zip is not among them: its members are not vetted, so it is
# warned about (ST708) like any archive stcheck does not read.
_OWN_ZIPS: Final = (".keras",)


@dataclass(frozen=True)
class Judged:
    """What the loaders would make of a file's bytes."""

    pickle: bool  # some loader unpickles it, or its name says pickle: read it with validator.pickles
    unread: tuple[str, ...]  # what no loader, or no reader of stcheck's, could open (ST708)
    escapes: tuple[str, ...]  # archive member names that climb out of their folder (ST709)


def judge(buf: Buffer, name: str) -> Judged:
    """The judgement of the file ``name`` whose bytes are ``buf``."""
    named = pickle_name(name)
    seen = Seen()
    unread: list[str] = []
    raised = not buf
    if buf:
        try:
            read(buf, Reader(), named=named, seen=seen)
        except (Unreadable, NoPickle):  # seen.unread names what was not read
            raised = True
        except (ReadError, ArchiveError) as exc:
            raised = True
            if not (seen.pickled or named):
                what = "a ZIP archive" if seen.archive == "zip" else "a NumPy .npy file"
                unread.append(f"{what} stcheck cannot open ({exc})")
    head = bytes(buf[:8])
    for magic, what in _OTHER_ARCHIVES:
        if head.startswith(magic):
            unread.append(f"{what}: its members were not read")
    low = os.path.basename(name).lower()  # noqa: PTH119 - paths are str in this package
    if seen.archive == "zip" and seen.kind is None and not (unread or seen.unread) and not low.endswith(_OWN_ZIPS):
        unread.append("a ZIP archive that no model loader reads: its members were not read")
    return Judged(seen.pickled or (named and raised), (*unread, *seen.unread), tuple(seen.escapes))
