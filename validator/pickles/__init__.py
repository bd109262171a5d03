"""Static reading of pickle-bearing files: what loading them would run.

Nothing here unpickles anything: the opcodes are read as data, every
imported global is collected, and the file is judged against one allowlist
(``validator.pickles._allow``).  Handles plain pickles (protocols 0 to 5),
torch.save files (zip, legacy stream and legacy tar), NumPy ``.npy`` and
``.npz``, and joblib files (plain or compressed)::

    >>> from validator.pickles import read_pickle_file
    >>> verdict = read_pickle_file("pytorch_model.bin")      # doctest: +SKIP
    >>> verdict.weights_only, verdict.message()               # doctest: +SKIP
    (True, 'holds only tensors: loads with torch.load(weights_only=True) (the default since torch 2.6)')

Reading is bounded (opcodes, stack, memo, nesting, member and decompressed
sizes); bad input gives a verdict with ``problem`` set, never an exception.
"""

# Strategy: the public boundary.  The reader (_ops) and the containers
# (_archive) raise ReadError and ArchiveError; here, and only here, they
# become a verdict's problem.  read_pickle_file is the one function that does
# I/O: it opens the file with the package's RegularFile (no FIFOs, devices or
# directories) and maps it read-only, so a container's tensor bytes are never
# read, only mapped.
from __future__ import annotations

import mmap
from typing import TYPE_CHECKING

from validator._source import RegularFile, os_error
from validator.pickles._allow import ALLOWED
from validator.pickles._archive import ArchiveError, read
from validator.pickles._ops import MAX_OPS, Reader, ReadError, RefusedError
from validator.pickles._sniff import sniff
from validator.pickles._verdict import Container, Global, PickleVerdict, verdict_from

if TYPE_CHECKING:
    import os

    from validator.pickles._values import Buffer

__all__ = ["ALLOWED", "MAX_OPS", "Global", "PickleVerdict", "read_pickle_bytes", "read_pickle_file", "sniff_pickle"]


def sniff_pickle(head: bytes) -> str | None:
    """The kind of pickle-bearing file ``head`` (its first bytes, 4 KiB is plenty) begins.

    One of "pickle", "torch-zip", "torch-legacy", "torch-tar", "npy", "npz",
    "joblib", or None for anything else.  Any zip archive sniffs as
    "torch-zip" (or "npz" when its first member is an ``.npy``); the read
    then says whether it holds a pickle.  An uncompressed joblib file
    sniffs as "pickle" unless its wrapper class shows in ``head``.
    """
    return sniff(bytes(head[:4096]))


def read_pickle_bytes(data: bytes, *, name: str | None = None) -> PickleVerdict:
    """The verdict on a file's bytes, by their content whatever ``name`` says.

    ``name`` is only carried into the verdict (``PickleVerdict.name``).  Never raises
    on bad input.
    """
    return _verdict(data, name)


def read_pickle_file(path: str | os.PathLike[str]) -> PickleVerdict:
    """The verdict on the file at ``path``, by its content whatever its extension.

    Raises ``validator.SourceError`` (an ``OSError``) when the file cannot be
    opened or mapped; never raises on its content.
    """
    where = str(path)
    with RegularFile(where) as (fd, st):
        if st.st_size == 0:
            return _verdict(b"", where)
        try:
            mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except OSError as exc:
            raise os_error(where, exc) from exc
        with mapped:
            if hasattr(mapped, "madvise") and hasattr(mmap, "MADV_RANDOM"):
                # Only headers and pickle members are touched: no read-around
                # of the tensor bytes beside them (8 MiB a fault on some disks).
                mapped.madvise(mmap.MADV_RANDOM)
            return _verdict(mapped, where)


def _verdict(buf: Buffer, name: str | None) -> PickleVerdict:
    reader = Reader()
    problem = None
    kind: Container = sniff(bytes(buf[:4096])) or "pickle"
    if not buf:
        problem = "an empty file: not a pickle"
    else:
        try:
            kind = read(buf, reader)
        except RefusedError as exc:
            where = f" in {reader.member}" if reader.member else ""
            problem = f"refused: {exc}{where}"
        except ReadError as exc:
            where = f" in {reader.member}" if reader.member else ""
            problem = f"cannot be read to its STOP: {exc}{where}"
        except ArchiveError as exc:
            problem = str(exc)
        kind = "joblib" if reader.joblib and kind == "pickle" else kind
    return verdict_from(kind, reader, problem, name)
