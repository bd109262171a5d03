# Strategy: a lazy handle over one memory-mapped file.  The validator core
# (`check_buffer`) reads the length prefix and the header out of the same
# mapping (a writable numpy handle, which maps nothing else, out of one read
# of its descriptor), so the bytes validated are the bytes used; offsets
# come from the validated report, never from a second parse.  Tensors:
#
# - numpy: a read-only zero-copy view (`np.frombuffer`) of an ACCESS_READ
#   mapping; the mapping stays alive as long as any view does.  With
#   `writable=True` each array is the caller's own: a large tensor gets its
#   own copy-on-write mapping (zero-copy until written), a small one is read
#   (`preadv`) straight into a new array.
# - torch: a zero-copy tensor over a private copy-on-write mapping
#   (ACCESS_COPY, MAP_PRIVATE): the buffer is writable, so torch warns about
#   nothing, pages stay shared with the page cache until written, and a write
#   never reaches the file.
#
# A tensor whose absolute start is not a multiple of its element size is
# copied once into aligned memory (see `misaligned`).  Devices other than the
# CPU get a copy of the CPU view, after the capability table has cleared the
# dtype or the caller's cast policy has converted it.
#
# The hot path (`plain`: byte-sized dtype, no cast, CPU) reads the report's
# columns and makes one view or one read; the rest goes through `_cpu` and
# `_finish`.  Every read goes through the handle's `Mapped`, taken once per
# call (see _mapping: a call racing close() never reads another file).
#
# Truncation.  Touching a mapped page past the end of a file that shrank
# after it was mapped raises SIGBUS, which kills the process (safetensors
# 0.8.0 dies the same way).  The handle re-checks the file size before it
# hands out each view (a read into new memory just comes back short); what
# it cannot guard is a view handed out earlier, or a truncation between the
# check and the first read.
from __future__ import annotations

import mmap
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from validator._dtypes import DTYPE_BITS
from validator._errors import DeviceError, InvalidFileError, LoadError, TensorNotFoundError
from validator._findings import TensorInfo, TensorTable
from validator._rules import PREFIX_LEN
from validator._source import os_error, read_exact
from validator._validate import as_profile, check_buffer
from validator.io._mapping import (
    ELEMENT_BYTES,
    OWN_MAPPING,
    Mapped,
    Row,
    closed_error,
    columns,
    data_order,
    gc_paused,
    lazy,
    lazy_torch,
    open_source,
    resolve_cast,
    rows,
    truncated_error,
)
from validator.io.devices import ensure_available, parse_device, platform_facts, unsupported_reason
from validator.io.subbyte import unpack_subbyte

if TYPE_CHECKING:
    import os
    from collections.abc import Iterator, Mapping

    from validator._findings import Report
    from validator._rules import Profile

__all__ = ["SafetensorsFile", "TensorSlice", "gc_paused", "open_file"]

# A writable numpy handle validates from one read of this many bytes (header longer: a second read).
_FIRST_READ: Final = 1 << 16
# dtype -> bytes per element, for the dtypes `plain` may serve (the byte-sized ones).
_DIRECT: Final = {name: size for name, size in ELEMENT_BYTES.items() if size}

_FRAMEWORKS: Final = {"numpy": "numpy", "np": "numpy", "torch": "torch", "pt": "torch"}
_SUBBYTE_POLICIES: Final = ("packed", "unpack")


class SafetensorsFile:
    """A validated, memory-mapped safetensors file (``validator.open``): map,
    validate and open a safetensors file for lazy loading.

    ``path`` is a path or a file object opened for reading (its descriptor
    is used, not its name).  The file is validated from the bytes the
    handle reads (its mapping, or with ``writable`` one read of the header
    through the same descriptor); a file with any error finding under ``profile`` is refused
    with ``InvalidFileError`` (``.report`` holds the findings).
    ``profile="reference"`` also opens files that only safetensors 0.8.0
    accepts.

    ``framework``: ``"numpy"`` gives read-only zero-copy arrays (ml_dtypes for
    BF16 and the float8 types, complex64 for C64); ``"torch"`` gives zero-copy
    CPU tensors over a private copy-on-write mapping (writes never reach the
    file).  A tensor whose start is misaligned for its element size is copied
    once; ``handle.misaligned`` names them.  ``writable=True`` (numpy) gives
    writable arrays, each independent of the file and of every other array:
    large tensors get their own copy-on-write mapping, small ones are read
    into memory of their own.

    ``device``: ``"cpu"``, ``"mps"``, ``"cuda"`` or ``"cuda:N"`` (torch only).
    A dtype the device cannot hold raises ``DeviceError``, unless ``cast``
    maps it to another, e.g. ``cast={"F64": "F32", "F8_E4M3": "BF16"}``
    (targets: safetensors or framework dtype names, checked at open).

    ``subbyte`` (F4, F6_E2M3, F6_E3M2): ``"packed"`` (default) returns the
    raw bytes as a 1-D uint8 array (``info(name).shape`` is the logical
    shape); ``"unpack"`` (numpy only) returns one ml_dtypes element per byte
    in the logical shape (bit order: see ``validator.io.subbyte``).

    Names that ``save(..., dedupe=True)`` or ``save_model`` dropped as
    aliases resolve to the tensor they share (see ``aliases``).  Before each
    tensor is handed out the file's size is checked again: a file truncated
    since it was opened raises ``LoadError`` instead of crashing the process.
    Views handed out earlier are not protected (see the README).

    After ``close()`` (any thread) a running call completes with this file's
    bytes; every later one raises ``LoadError``: "the handle is closed".

    >>> import validator
    >>> with validator.open("model.safetensors") as f:  # doctest: +SKIP
    ...     w = f.get("weight")
    ...     head = f.get_slice("embed")[:8]
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | BinaryIO,
        *,
        framework: str = "numpy",
        device: str = "cpu",
        profile: Profile | str = "strict",
        cast: Mapping[str, str] | None = None,
        subbyte: str = "packed",
        writable: bool = False,
    ) -> None:
        fw = _FRAMEWORKS.get(framework)
        if fw is None:
            msg = f"unknown framework {framework!r}; use 'numpy' or 'torch'"
            raise ValueError(msg)
        if subbyte not in _SUBBYTE_POLICIES:
            msg = f"unknown subbyte policy {subbyte!r}; use 'packed' or 'unpack'"
            raise ValueError(msg)
        if fw == "torch" and subbyte != "packed":
            msg = "torch has no one-element-per-byte float4/float6 dtypes; use subbyte='packed'"
            raise ValueError(msg)
        kind = "cpu" if device == "cpu" else parse_device(device)[0]
        if fw == "numpy" and kind != "cpu":
            msg = f"numpy arrays live on the CPU; device {device!r} needs framework='torch'"
            raise DeviceError(msg)
        self.framework = fw
        self.subbyte = subbyte
        self.writable = writable
        self._cast = resolve_cast(cast, fw) if cast else {}
        self.device = ensure_available(device) if fw == "torch" else "cpu"
        self._kind = parse_device(self.device)[0] if fw == "torch" else "cpu"
        self._os = platform_facts(self._kind)
        self._tables: tuple[Any, ...] | None = None  # the framework's functions and dtypes, on first use
        self._order: list[tuple[str, int]] | None = None  # (name, row) in the order of the data, on first use
        prof = as_profile(profile)
        fd, st, self.path = open_source(path)
        self._live: Mapped | None = None
        live = Mapped(fd, st.st_size, mmap.ACCESS_COPY if fw == "torch" else mmap.ACCESS_READ)  # owns fd from here
        self._size = st.st_size
        try:
            report = self._validate(live, prof)
        except OSError as exc:
            live.close_now()
            raise os_error(self.path, exc) from exc
        except BaseException:
            live.close_now()
            raise
        if not report.valid:
            live.close_now()
            raise InvalidFileError(report)
        self._live = live
        self.report: Report = report
        """The validation report of the bytes the handle reads (warnings included)."""
        self._tensors: Mapping[str, TensorInfo] = report.tensors or TensorTable.of({})
        self._index, self._kinds, self._begins, self._ends, self._parse = columns(self._tensors)
        self._parsed: dict[Any, tuple[str, tuple[int, ...]]] = {}  # kind -> (dtype, shape)
        self._data_start: int = report.data_start or 0
        # `plain` serves a dtype directly unless the cast policy converts it or the device is not the CPU.
        self._direct = _DIRECT if not self._cast else {d: n for d, n in _DIRECT.items() if d not in self._cast}

    def _validate(self, live: Mapped, profile: Profile) -> Report:
        """Validate the bytes the handle will read: its mapping, or its descriptor when it needs no mapping."""
        size = self._size
        if not size:
            return check_buffer(b"", bytes, 0, profile, self.path)
        if self.writable and self.framework == "numpy":
            # Each array is read or mapped on its own: a shared mapping would only serve the header.
            fd = live.fd
            head = read_exact(fd, 0, min(size, _FIRST_READ))  # the prefix and, mostly, the whole header

            def header(n: int) -> bytes:
                return (
                    head[PREFIX_LEN : PREFIX_LEN + n] if PREFIX_LEN + n <= len(head) else read_exact(fd, PREFIX_LEN, n)
                )

            return check_buffer(head[:PREFIX_LEN], header, size, profile, self.path)
        view = live.mapping()
        return check_buffer(view[:PREFIX_LEN], lambda n: view[PREFIX_LEN : PREFIX_LEN + n], size, profile, self.path)

    # -- the mapping -------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._live is None

    def close(self) -> None:
        """Release the descriptor and the mapping once nothing uses them any more.

        Arrays and tensors already handed out stay valid: they keep the
        mapping alive, and it is unmapped when the last of them goes.  A call
        running in another thread finishes with this file's bytes; the
        descriptor is closed when it returns.
        """
        # Dropping the reference is the whole of it (see _mapping.Mapped).
        # torch.frombuffer keeps a reference to the mapping object but no
        # buffer export, so mmap.close() would unmap memory that live tensors
        # point into: the mapping is never closed explicitly.
        self._live = None

    def _mapped(self) -> Mapped:
        live = self._live
        if live is None:
            raise closed_error(self.path)
        return live

    def __enter__(self) -> SafetensorsFile:  # noqa: PYI034 - not meant to be subclassed
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the header ------------------------------------------------------

    def keys(self) -> list[str]:
        """Tensor names, sorted."""
        return sorted(self._index)

    def offset_keys(self) -> list[str]:
        """Tensor names in the order of their data in the file."""
        return [name for name, _ in self._data_order()]

    def _data_order(self) -> list[tuple[str, int]]:
        """(name, row) of every tensor, ordered by data offsets (stable: header order on ties)."""
        order = self._order
        if order is None:
            order = self._order = data_order(self._tensors)
        return order

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def metadata(self) -> dict[str, str] | None:
        """The ``__metadata__`` map, or None when the header has none."""
        meta = self.report.metadata
        return None if meta is None else dict(meta)

    @property
    def aliases(self) -> dict[str, str]:
        """Names saved once under another name: ``{alias: stored tensor}``.

        ``validator.save(..., dedupe=True)`` and ``save_model`` store shared
        tensors once and record each dropped name in the metadata as
        ``{dropped: kept}``; ``get``, ``info`` and ``get_slice`` resolve such a
        name to the stored tensor.  A metadata entry counts as an alias only
        when its key is not a tensor and its value is one.
        """
        meta = self.report.metadata or {}
        return {key: value for key, value in meta.items() if key not in self._index and value in self._index}

    def info(self, name: str) -> TensorInfo:
        """The header entry of tensor ``name`` (or of the tensor it aliases)."""
        found = self._tensors.get(name)
        if found is not None:
            return found
        target = (self.report.metadata or {}).get(name)
        if target is not None and target in self._index:
            return self._tensors[target]
        msg = f"{self.path}: no tensor named {name!r}"
        raise TensorNotFoundError(msg)

    @property
    def misaligned(self) -> frozenset[str]:
        """Names of tensors whose start is not a multiple of their element size.

        Each is copied once into aligned memory when loaded; every other
        tensor is a zero-copy view of the mapping.
        """
        return frozenset(name for name, info in self._tensors.items() if self._is_misaligned(info))

    def _is_misaligned(self, info: TensorInfo) -> bool:
        size = ELEMENT_BYTES[info.dtype]
        return size > 1 and (self._data_start + info.begin) % size != 0 and info.numel > 0

    # -- tensors ---------------------------------------------------------

    def get(self, name: str) -> Any:  # noqa: ANN401 - numpy array or torch tensor
        """Tensor ``name`` as a numpy array or torch tensor on the handle's device."""
        if type(name) is str:
            value = self.plain(name)
            if value is not None:
                return value
        info = self.info(name)
        return self._finish(name, info, self._cpu(name, info))

    def __getitem__(self, name: str) -> Any:  # noqa: ANN401 - numpy array or torch tensor
        return self.get(name)

    def _framework(self) -> tuple[Any, ...]:
        """(np.empty, np.frombuffer, dtypes) or (None, torch.frombuffer, dtypes), imported on first use."""
        tables = self._tables
        if tables is None:
            if self.framework == "torch":
                found = lazy_torch()
                tables = (None, found["torch"].frombuffer, found["torch_dtypes"])
            else:
                found = lazy()
                tables = (found["np"].empty, found["np"].frombuffer, found["np_dtypes"])
            self._tables = tables
        return tables

    def plain(self, name: str) -> Any:  # noqa: ANN401 - numpy array or torch tensor
        """Tensor ``name`` by the direct path, or None where it needs the general one.

        The direct path serves a tensor (not an alias) of a byte-sized dtype
        with data, on the CPU, with no cast: one view of the mapping, or for
        a small writable array one read into new memory.  The caller then
        has the result ``get`` would give.
        """
        row = self._index.get(name)
        if row is None:
            return None
        kind = self._kinds[row]
        parsed = self._parsed.get(kind)  # a checkpoint repeats a few (dtype, shape) kinds
        if parsed is None:
            parsed = self._parsed[kind] = self._parse(kind)
        dtype, shape = parsed
        size = self._direct.get(dtype) if self._kind == "cpu" else None
        begin = self._begins[row]
        nbytes = self._ends[row] - begin
        if not size or not nbytes:
            return None
        live = self._live
        if live is None:
            raise closed_error(self.path)
        empty, frombuffer, dtypes = self._tables or self._framework()
        start = self._data_start + begin
        if self.writable:
            return live.read(empty(shape, dtypes[dtype]), start, self.path) if nbytes < OWN_MAPPING else None
        if start % size:
            return None
        if live.current_size(self.path) < start + nbytes:
            raise truncated_error(self.path, name, live.current_size(self.path), start + nbytes)
        if empty is None:  # torch
            torch_dtype = dtypes[dtype]
            if torch_dtype is None:
                return None
            flat = frombuffer(live.mapping(), dtype=torch_dtype, count=nbytes // size, offset=start)
            return flat if len(shape) == 1 else flat.reshape(shape)
        return frombuffer(live.mapping(), dtypes[dtype], nbytes // size, start).reshape(shape)

    def entries(self) -> list[tuple[str, TensorInfo]]:
        """(name, header entry) of every tensor, in the order of their data."""
        tensors = self._tensors
        with gc_paused():
            return [(name, tensors[name]) for name, _ in self._data_order()]

    def load(self, entries: list[tuple[str, TensorInfo]]) -> dict[str, Any]:
        """The tensors of ``entries`` (from ``entries()``), after one size check for all of them.

        With ``writable``, a batch of several tensors is served from memory
        of its own (one new copy-on-write mapping, or one read for a small
        batch): zero-copy, and independent of every other load.
        """
        batch = [(name, info.dtype, info.shape, *info.data_offsets) for name, info in entries]
        return self._batch(batch, dict(entries))

    def load_all(self, *, unless: frozenset[str] = frozenset()) -> dict[str, Any] | None:
        """Every tensor, in the order of their data (as ``load(entries())``).

        None, before anything is loaded, when a tensor has one of the
        dtypes in ``unless``.
        """
        with gc_paused():
            batch = rows(self._tensors, self._data_order())
            if unless and any(row[1] in unless for row in batch):
                return None
            return self._batch(batch, None)

    def _batch(self, batch: list[Row], infos: dict[str, TensorInfo] | None) -> dict[str, Any]:
        """The tensors of ``batch``: the direct ones as views of one buffer, the others one by one."""
        if not batch:
            return {}
        live = self._mapped()
        data_start = self._data_start
        end = data_start + max(row[4] for row in batch)
        buf, base = None, 0  # else one by one: the per-tensor size check names the first tensor cut off
        if self.writable and len(batch) > 1:
            buf, base = self._own_batch(live, min(row[3] for row in batch), end)
        elif not self.writable and live.current_size(self.path) >= end:
            buf = live.mapping()
        empty, frombuffer, dtypes = self._tables or self._framework()
        direct = self._direct if self._kind == "cpu" else {}
        out: dict[str, Any] = {}
        with gc_paused():
            for name, dtype, shape, begin, stop in batch:
                size = direct.get(dtype)
                start = data_start + begin - base
                if buf is not None and size and stop > begin and not start % size:
                    count = (stop - begin) // size
                    if empty is not None:
                        out[name] = frombuffer(buf, dtypes[dtype], count, start).reshape(shape)
                        continue
                    if dtypes[dtype] is not None:
                        flat = frombuffer(buf, dtype=dtypes[dtype], count=count, offset=start)
                        out[name] = flat if len(shape) == 1 else flat.reshape(shape)
                        continue
                info = infos[name] if infos is not None else TensorInfo(dtype, shape, (begin, stop))
                out[name] = self._finish(name, info, self._cpu(name, info))
        return out

    def _own_batch(self, live: Mapped, first: int, end: int) -> tuple[Any, int]:
        """(buffer, its file offset) of a writable batch: memory of its own holding file bytes [.., end)."""
        start = self._data_start + first
        if end - start < OWN_MAPPING:
            np = lazy()["np"]
            buf = live.read(np.empty(end - start, np.uint8), start, self.path)
            return (buf, start) if buf is not None else (None, 0)
        own = live.private(0, self._size) if live.current_size(self.path) >= end else None
        return (own[0], 0) if own is not None else (None, 0)  # cut off, or out of mappings: one by one

    def get_slice(self, name: str) -> TensorSlice:
        """A lazy slice proxy: ``handle.get_slice("w")[:, 0:8]`` reads only the
        selected part, on the CPU view, before any cast or device copy."""
        info = self.info(name)
        if DTYPE_BITS[info.dtype] % 8 and self.subbyte == "packed":
            msg = (
                f"tensor {name!r} is {info.dtype}, loaded as packed bytes; slicing needs "
                "subbyte='unpack' (numpy) so that indices count elements"
            )
            raise LoadError(msg)
        return TensorSlice(self, name, info)

    def _buffer(self, live: Mapped, name: str, info: TensorInfo) -> mmap.mmap:
        end = self._data_start + info.end
        size = live.current_size(self.path)
        if size < end:
            raise truncated_error(self.path, name, size, end)
        return live.mapping()

    def _cpu(self, name: str, info: TensorInfo) -> Any:  # noqa: ANN401
        live = self._mapped()
        start = self._data_start + info.begin
        if self.framework == "torch":
            return self._cpu_torch(live, name, info, start)
        return self._cpu_numpy(live, name, info, start)

    def _cpu_numpy(self, live: Mapped, name: str, info: TensorInfo, start: int) -> Any:  # noqa: ANN401
        found = lazy()
        np = found["np"]
        if not ELEMENT_BYTES[info.dtype]:
            if not info.nbytes:
                raw = np.empty(0, np.uint8)
            elif self.writable and self.subbyte == "packed":
                return self._own(live, name, info, start, np.dtype(np.uint8))
            else:
                raw = np.frombuffer(self._buffer(live, name, info), np.uint8, info.nbytes, start)
            if self.subbyte == "packed":
                return raw
            out = unpack_subbyte(raw, info.dtype, info.numel).reshape(info.shape)
            out.flags.writeable = self.writable
            return out
        dtype = found["numpy_dtype"](info.dtype)
        if info.numel == 0:
            try:
                out = np.empty(info.shape, dtype)
            except (ValueError, OverflowError):
                raise self._unrepresentable(name, info, "numpy") from None
        elif self._is_misaligned(info):
            raw = np.frombuffer(self._buffer(live, name, info), np.uint8, info.nbytes, start)
            out = raw.copy().view(dtype).reshape(info.shape)
        elif self.writable:
            return self._own(live, name, info, start, dtype).reshape(info.shape)
        else:
            return np.frombuffer(self._buffer(live, name, info), dtype, info.numel, start).reshape(info.shape)
        out.flags.writeable = self.writable
        return out

    def _own(self, live: Mapped, name: str, info: TensorInfo, start: int, dtype: Any) -> Any:  # noqa: ANN401
        """A writable array of the caller's own: a private mapping, or a copy when small."""
        np = lazy()["np"]
        count = info.nbytes // dtype.itemsize
        if info.nbytes >= OWN_MAPPING:
            self._buffer(live, name, info)  # the size check
            own = live.private(start, info.nbytes)
            if own is not None:  # else out of mappings: copy instead
                return np.frombuffer(own[0], dtype, count, own[1])
        out = live.read(np.empty(count, dtype), start, self.path)
        return out if out is not None else np.frombuffer(self._buffer(live, name, info), dtype, count, start).copy()

    def _cpu_torch(self, live: Mapped, name: str, info: TensorInfo, start: int) -> Any:  # noqa: ANN401
        found = lazy_torch()
        torch = found["torch"]
        if not ELEMENT_BYTES[info.dtype]:
            if not info.nbytes:
                return torch.empty(0, dtype=torch.uint8)
            buf = self._buffer(live, name, info)
            return torch.frombuffer(buf, dtype=torch.uint8, count=info.nbytes, offset=start)
        dtype = found["torch_dtype"](info.dtype)
        if dtype is None:
            msg = f"tensor {name!r}: this torch ({torch.__version__}) has no dtype for {info.dtype}"
            raise LoadError(msg)
        if info.numel == 0:
            try:
                return torch.empty(info.shape, dtype=dtype)
            except (RuntimeError, TypeError, OverflowError):
                pass
            try:
                # A zero-sized shape with huge other sides is valid safetensors,
                # but its contiguous strides overflow int64: use zero strides.
                return torch.empty_strided(info.shape, (0,) * len(info.shape), dtype=dtype)
            except (RuntimeError, TypeError, OverflowError):
                raise self._unrepresentable(name, info, "torch") from None
        buf = self._buffer(live, name, info)
        if self._is_misaligned(info):
            raw = torch.frombuffer(buf, dtype=torch.uint8, count=info.nbytes, offset=start)
            return raw.clone().view(dtype).reshape(info.shape)
        flat = torch.frombuffer(buf, dtype=dtype, count=info.numel, offset=start)
        return flat if len(info.shape) == 1 else flat.reshape(info.shape)

    def _unrepresentable(self, name: str, info: TensorInfo, framework: str) -> LoadError:
        shape = list(info.shape)
        return LoadError(
            f"tensor {name!r} is empty but its shape {shape} is too large for {framework} (sizes overflow 64 bits)"
        )

    def _finish(self, name: str, info: TensorInfo, value: Any) -> Any:  # noqa: ANN401
        """Apply the cast policy, check the device can hold the result, move it."""
        dtype = info.dtype
        target = self._cast.get(dtype)
        if self.framework == "numpy":
            if target is None:
                return value
            out = value.astype(target[1])
            out.flags.writeable = self.writable
            return out
        if target is not None:
            value = value.to(target[1])
            dtype = target[0] or dtype
        if self._kind == "cpu":
            return value
        if DTYPE_BITS[dtype] % 8 == 0:
            reason = unsupported_reason(self._kind, dtype, self._os)
            if reason is not None:
                msg = (
                    f"tensor {name!r} has dtype {dtype}, which device {self.device!r} cannot hold ({reason}); "
                    f"pass cast={{{dtype!r}: ...}} to convert it, e.g. to 'F32'"
                )
                raise DeviceError(msg)
        return value.to(self.device)


class TensorSlice:
    """A lazy view of one tensor; index it to read part of the tensor."""

    def __init__(self, handle: SafetensorsFile, name: str, info: TensorInfo) -> None:
        self._handle = handle
        self.name = name
        self.info = info

    @property
    def shape(self) -> tuple[int, ...]:
        """The tensor's logical shape."""
        return self.info.shape

    @property
    def dtype(self) -> str:
        """The tensor's safetensors dtype."""
        return self.info.dtype

    def __getitem__(self, index: Any) -> Any:  # noqa: ANN401 - any numpy/torch index
        full = self._handle._cpu(self.name, self.info)  # noqa: SLF001 - the proxy is part of the handle
        return self._handle._finish(self.name, self.info, full[index])  # noqa: SLF001


# `validator.open`: the class itself, so the signature is written once.
open_file = SafetensorsFile
