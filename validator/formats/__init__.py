"""What stcheck knows about model files that are not safetensors files.

The loaders' dispatch (``torch.load``, ``numpy.load(allow_pickle=True)``,
``joblib.load``, ``pickle.load``) over a file's bytes, the one ZIP reader,
the .npy header, the legacy torch tar and stream, and joblib's compressed
forms.  Nothing here unpickles anything: every stream a loader would
unpickle is handed to the opcode reader (``validator.pickles``)::

    >>> from validator.formats import judge
    >>> judge(b"hello", "README").pickle
    False
"""

from __future__ import annotations

from validator.formats._dispatch import PICKLE_SUFFIXES, Seen, pickle_name, read
from validator.formats._errors import ArchiveError, NoPickle, Unreadable
from validator.formats._judge import Judged, judge
from validator.formats._sniff import sniff

__all__ = [
    "PICKLE_SUFFIXES",
    "ArchiveError",
    "Judged",
    "NoPickle",
    "Seen",
    "Unreadable",
    "judge",
    "pickle_name",
    "read",
    "sniff",
]
