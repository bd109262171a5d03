# Strategy: what an open loader handle holds, and the small helpers the
# loader shares with validator.compat.
#
# Lifetime.  `Mapped` owns the handle's descriptor and its mapping.  The
# handle holds one reference; every call that reads the file takes its own
# reference first (one attribute read, no lock) and uses only that object.
# `close()` drops the handle's reference, so a call that starts afterwards
# finds none and says the handle is closed, while a call already running
# still holds the object: the descriptor is closed (and its number freed
# for reuse by another open()) only when the last reference goes.  So a
# call racing `close()` can never read through a descriptor number that
# another file has taken meanwhile.  The mapping is unmapped when no array
# or tensor views it any more.
from __future__ import annotations

import contextlib
import gc
import mmap
import os
import stat
from typing import TYPE_CHECKING, Any, Final

from validator._dtypes import DTYPE_BITS, element_bytes
from validator._errors import LoadError, SourceError
from validator._source import open_regular, os_error
from validator.io._extras import needs_extra

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from types import TracebackType

    from validator._findings import TensorInfo

    # (index, kinds, begins, ends, parse): see `columns`.
    Columns = tuple[dict[str, int], list[Any], list[int], list[int], Callable[[Any], tuple[str, tuple[int, ...]]]]

__all__ = [
    "ELEMENT_BYTES",
    "OWN_MAPPING",
    "Mapped",
    "Row",
    "closed_error",
    "columns",
    "data_order",
    "gc_paused",
    "lazy",
    "lazy_torch",
    "open_source",
    "preadv",
    "resolve_cast",
    "rows",
    "truncated_error",
]

# (name, dtype, shape, begin, end): one tensor, offsets relative to the data region.
Row = tuple[str, str, tuple[int, ...], int, int]

# Bytes per element; 0 for the sub-byte dtypes, which are never "misaligned".
ELEMENT_BYTES: Final = {name: element_bytes(name) or 0 for name in DTYPE_BITS}
# Tensors of at least this many bytes get their own copy-on-write mapping
# (writable numpy) instead of a copy; a batch of tensors spanning less than
# this is read into one buffer instead of being mapped.
OWN_MAPPING: Final = 1 << 20
# Reads into caller-owned memory; None where the platform has no preadv.
preadv: Final[Callable[[int, list[Any], int], int] | None] = getattr(os, "preadv", None)


class Mapped:
    """An open handle's descriptor and mapping; the descriptor closes with the last reference."""

    __slots__ = ("access", "fd", "mm", "size")

    def __init__(self, fd: int, size: int, access: int) -> None:
        self.fd = fd
        self.size = size  # at open
        self.access = access
        self.mm: mmap.mmap | None = None  # made on first use

    def mapping(self) -> mmap.mmap:
        """The mapping of the whole file (as it was at open), made on first use."""
        mm = self.mm
        if mm is None:  # two threads may both map: each uses its own, one is kept
            mm = self.mm = mmap.mmap(self.fd, self.size, access=self.access)
        return mm

    def read(self, out: Any, start: int, path: str) -> Any:  # noqa: ANN401 - a numpy array
        """``out`` (a new array) filled with the file's bytes from ``start``; None when the read comes back short."""
        if preadv is None:
            return None
        try:
            got = preadv(self.fd, [out], start)
        except OSError as exc:
            raise os_error(path, exc) from exc
        return out if got == out.nbytes else None  # short: the caller's size check says why

    def private(self, start: int, nbytes: int) -> tuple[mmap.mmap, int] | None:
        """A new copy-on-write mapping of file bytes [start, start + nbytes) and where ``start`` is in it.

        None when the process is out of mappings.
        """
        base = start - start % mmap.ALLOCATIONGRANULARITY
        try:
            return mmap.mmap(self.fd, start + nbytes - base, access=mmap.ACCESS_COPY, offset=base), start - base
        except OSError:
            return None

    def current_size(self, path: str) -> int:
        """The file's size now (it may have shrunk since it was opened)."""
        try:
            # mmap.size() is fstat of the mapping's own descriptor, without a stat_result.
            return self.mm.size() if self.mm is not None else os.fstat(self.fd).st_size
        except OSError as exc:  # pragma: no cover - fstat of a descriptor we hold
            raise os_error(path, exc) from exc

    def close_now(self) -> None:
        """Close at once: only for a handle that was never handed out (a failed open)."""
        fd, self.fd = self.fd, -1
        if self.mm is not None:
            with contextlib.suppress(BufferError):
                self.mm.close()
        os.close(fd)

    def __del__(self, _close: Callable[[int], None] = os.close) -> None:
        if self.fd >= 0:
            try:  # noqa: SIM105 - no module lookup in __del__, which may run at interpreter shutdown
                _close(self.fd)
            except OSError:  # pragma: no cover - only if someone else closed our descriptor
                pass


def closed_error(path: str) -> LoadError:
    """The error a call on a closed handle raises."""
    return LoadError(f"{path}: the handle is closed")


def truncated_error(path: str, name: str, size: int, end: int) -> LoadError:
    """The error for a tensor that ends past the end of a file that shrank after open."""
    return LoadError(
        f"{path}: the file shrank to {size} bytes after it was opened; tensor {name!r} "
        f"ends at byte {end}, and reading past the end of a mapped file would kill the process (SIGBUS)"
    )


def columns(table: Mapping[str, TensorInfo]) -> Columns:
    """(index, kinds, begins, ends, parse) of a report's tensor table.

    A lookup then costs a dict probe and a parse of the kind, with no
    TensorInfo made per tensor (the loader's hot path).
    """
    # TensorTable keeps these as private columns; it has no public accessor yet.
    return (
        table._index,  # type: ignore[attr-defined]  # noqa: SLF001 - see above
        table._kinds,  # type: ignore[attr-defined]  # noqa: SLF001
        table._begins,  # type: ignore[attr-defined]  # noqa: SLF001
        table._ends,  # type: ignore[attr-defined]  # noqa: SLF001
        table._parse,  # type: ignore[attr-defined]  # noqa: SLF001
    )


def data_order(table: Mapping[str, TensorInfo]) -> list[tuple[str, int]]:
    """(name, row) of every tensor, ordered by data offsets (stable: header order on ties)."""
    index, _, begins, ends, _ = columns(table)
    return sorted(index.items(), key=lambda item: (begins[item[1]], ends[item[1]]))


def rows(table: Mapping[str, TensorInfo], order: list[tuple[str, int]] | None = None) -> list[Row]:
    """Every tensor of ``table`` as a row, in the order of their data."""
    _, kinds, begins, ends, parse = columns(table)
    parsed: dict[Any, tuple[str, tuple[int, ...]]] = {}  # a checkpoint repeats a few (dtype, shape) kinds
    out = []
    for name, row in order or data_order(table):
        kind = kinds[row]
        found = parsed.get(kind)
        if found is None:
            found = parsed[kind] = parse(kind)
        out.append((name, found[0], found[1], begins[row], ends[row]))
    return out


def open_source(source: object) -> tuple[int, os.stat_result, str]:
    """(descriptor, stat, name) for a path or an open file; the caller owns the descriptor."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not isinstance(path, str):
            msg = f"{path!r}: pass the path as str, not bytes"
            raise SourceError(msg)
        fd, st = open_regular(path)
        return fd, st, path
    fileno = getattr(source, "fileno", None)
    if fileno is None:
        msg = f"cannot open a {type(source).__name__}; pass a path or a file opened for reading"
        raise SourceError(msg)
    name = getattr(source, "name", None)
    where = name if isinstance(name, str) else f"<{type(source).__name__}>"
    try:
        fd = os.dup(fileno())
    except (OSError, ValueError) as exc:
        msg = f"{where}: the file object has no usable descriptor ({exc})"
        raise SourceError(msg) from exc
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise os_error(where, exc) from exc
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        msg = f"{where}: not a regular file"
        raise SourceError(msg)
    return fd, st, where


_LAZY: dict[str, Any] = {}


def lazy() -> dict[str, Any]:
    """numpy and its dtype table, imported once, on first use."""
    if "np" not in _LAZY:
        with needs_extra("reading tensors as numpy arrays"):
            import numpy as np  # noqa: PLC0415 - numpy/torch load only when a tensor is read

            from validator.io.dtypes_np import numpy_dtype  # noqa: PLC0415 - numpy/torch load only when a tensor is read

            # safetensors dtype -> numpy dtype, for the byte-sized dtypes.
            dtypes = {name: numpy_dtype(name) for name, size in ELEMENT_BYTES.items() if size}
        _LAZY.update(np=np, numpy_dtype=numpy_dtype, np_dtypes=dtypes)
    return _LAZY


def lazy_torch() -> dict[str, Any]:
    """torch and its dtype table, imported once, on first use."""
    if "torch" not in _LAZY:
        with needs_extra("reading tensors as torch tensors"):
            import torch  # noqa: PLC0415 - numpy/torch load only when a tensor is read

        from validator.io.dtypes_torch import torch_dtype  # noqa: PLC0415 - numpy/torch load only when a tensor is read

        # safetensors dtype -> torch dtype (None where this torch has none), byte-sized dtypes.
        dtypes = {name: torch_dtype(name) for name, size in ELEMENT_BYTES.items() if size}
        _LAZY.update(torch=torch, torch_dtype=torch_dtype, torch_dtypes=dtypes)
    return _LAZY


class gc_paused:  # noqa: N801 - used as a function: `with gc_paused():`
    """Pause garbage collection while many tensors are made."""

    # Many tensors allocate many small, acyclic objects; with a large heap
    # (torch imported) each full collection they trigger costs tens of
    # milliseconds, so collection pauses meanwhile.  A class, not a
    # contextlib generator: it is entered once per open and per batch.

    __slots__ = ("_paused",)

    def __enter__(self) -> None:
        self._paused = gc.isenabled()
        gc.disable()

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        if self._paused:
            gc.enable()


def resolve_cast(cast: Mapping[str, str], framework: str) -> dict[str, tuple[str | None, Any]]:
    """Check a cast policy once, at open: ``{source: (safetensors name or None, target dtype)}``."""
    out: dict[str, tuple[str | None, Any]] = {}
    for source, target in cast.items():
        if source not in DTYPE_BITS:
            msg = f"cast policy names unknown dtype {source!r}"
            raise ValueError(msg)
        if framework == "torch":
            from validator.io.dtypes_torch import parse_cast_target, safetensors_dtype  # noqa: PLC0415 - torch loads only when asked for

            found = parse_cast_target(target)
            out[source] = (safetensors_dtype(found), found)
        else:
            out[source] = (None, _numpy_cast_target(target))
    return out


def _numpy_cast_target(target: str) -> Any:  # noqa: ANN401 - a numpy dtype
    """A numpy cast target given as a safetensors name ("F32") or a numpy name ("float32")."""
    found = lazy()
    if target in DTYPE_BITS and DTYPE_BITS[target] % 8 == 0:
        return found["numpy_dtype"](target)
    with needs_extra("a numpy cast target"):
        import ml_dtypes  # noqa: PLC0415 - numpy names for bfloat16 and the float8 types

    try:
        return found["np"].dtype(getattr(ml_dtypes, target, target) if isinstance(target, str) else target)
    except TypeError:
        msg = f"unknown cast target {target!r}; use a safetensors dtype such as 'F32' or a numpy dtype name"
        raise ValueError(msg) from None
