# Strategy: a lazy handle over one memory-mapped file.  The file is mapped
# once, and the validator core (`check_buffer`) reads the length prefix and
# the header out of that same mapping, so the bytes that were validated are
# the bytes that are used.  Offsets come from the validated report, never
# from a second parse.  Tensors are created on demand:
#
# - numpy: a read-only zero-copy view (`np.frombuffer`) of an ACCESS_READ
#   mapping; the mapping stays alive as long as any view does.  With
#   `writable=True` each array is the caller's own: a large tensor gets its
#   own copy-on-write mapping (zero-copy until written), a small one a copy.
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
# Truncation.  Touching a mapped page past the end of a file that shrank
# after it was mapped raises SIGBUS, which kills the process (safetensors
# 0.8.0 dies the same way).  The handle keeps its descriptor and re-checks the
# file size before it hands out each tensor; what it cannot guard is a view
# handed out earlier, or a truncation between the check and the first read.
from __future__ import annotations

import contextlib
import gc
import mmap
import os
import stat
import weakref
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from validator._dtypes import DTYPE_BITS, element_bytes
from validator._errors import DeviceError, InvalidFileError, LoadError, SourceError, TensorNotFoundError
from validator._rules import PREFIX_LEN
from validator._source import open_regular, os_error
from validator._validate import _profile, check_buffer
from validator.io.devices import ensure_available, parse_device, platform_facts, unsupported_reason
from validator.io.subbyte import unpack_subbyte

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from validator._findings import Report, TensorInfo
    from validator._rules import Profile

# Bytes per element; 0 for the sub-byte dtypes, which are never "misaligned".
_ELEMENT_BYTES = {name: element_bytes(name) or 0 for name in DTYPE_BITS}
_FRAMEWORKS = {"numpy": "numpy", "np": "numpy", "torch": "torch", "pt": "torch"}
_SUBBYTE_POLICIES = ("packed", "unpack")
# writable=True: tensors of at least this many bytes get their own mapping.
_OWN_MAPPING: Final = 1 << 20


def _open_source(source: object) -> tuple[int, os.stat_result, str]:
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


def _lazy() -> dict[str, Any]:
    """numpy, torch and their dtype tables, imported once, on first use."""
    if "np" not in _LAZY:
        import numpy as np  # noqa: PLC0415 - numpy/torch load only when a tensor is read

        from validator.io.dtypes_np import numpy_dtype  # noqa: PLC0415 - numpy/torch load only when a tensor is read

        _LAZY.update(np=np, numpy_dtype=numpy_dtype, uint8=np.dtype(np.uint8))
    return _LAZY


def _lazy_torch() -> dict[str, Any]:
    if "torch" not in _LAZY:
        import torch  # noqa: PLC0415 - numpy/torch load only when a tensor is read

        from validator.io.dtypes_torch import torch_dtype  # noqa: PLC0415 - numpy/torch load only when a tensor is read

        _LAZY.update(torch=torch, torch_dtype=torch_dtype)
    return _LAZY


class SafetensorsFile:
    """A validated, memory-mapped safetensors file (``validator.open``): map,
    validate and open a safetensors file for lazy loading.

    ``path`` is a path or a file object opened for reading (its descriptor
    is used, not its name).  The file is validated from the mapped bytes
    themselves; a file with any error finding under ``profile`` is refused
    with ``InvalidFileError`` (``.report`` holds the findings).
    ``profile="reference"`` also opens files that only safetensors 0.8.0
    accepts.

    ``framework``: ``"numpy"`` gives read-only zero-copy arrays (ml_dtypes for
    BF16 and the float8 types, complex64 for C64); ``"torch"`` gives zero-copy
    CPU tensors over a private copy-on-write mapping (writes never reach the
    file).  A tensor whose start is misaligned for its element size is copied
    once; ``handle.misaligned`` names them.  ``writable=True`` (numpy) gives
    writable arrays, each independent of the file and of every other array:
    large tensors get their own copy-on-write mapping, small ones are copied.

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
        kind, _ = parse_device(device)
        if fw == "numpy" and kind != "cpu":
            msg = f"numpy arrays live on the CPU; device {device!r} needs framework='torch'"
            raise DeviceError(msg)
        self.framework = fw
        self.subbyte = subbyte
        self.writable = writable
        self._cast = _resolve_cast(cast or {}, fw)
        self.device = ensure_available(device) if fw == "torch" else "cpu"
        self._kind = parse_device(self.device)[0]
        self._os = platform_facts(self._kind)
        prof = _profile(profile)
        self._mm: mmap.mmap | None = None
        self._batch: int | None = None  # the file size checked for a batch of tensors
        self._private: mmap.mmap | None = None  # a batch's own copy-on-write mapping
        fd, st, self.path = _open_source(path)
        self._fd = fd
        self._closer = weakref.finalize(self, os.close, fd)
        self._size = st.st_size
        try:
            if st.st_size:
                access = mmap.ACCESS_COPY if fw == "torch" else mmap.ACCESS_READ
                self._mm = mmap.mmap(fd, st.st_size, access=access)
        except OSError as exc:
            self._closer()
            raise os_error(self.path, exc) from exc
        report = self._validate(prof)
        if not report.valid:
            self.close()
            raise InvalidFileError(report)
        self.report: Report = report
        """The validation report of the mapped bytes (warnings included)."""
        self._tensors: Mapping[str, TensorInfo] = report.tensors or {}
        self._data_start: int = report.data_start or 0

    def _validate(self, profile: Profile) -> Report:
        with gc_paused():
            view = self._mm
            if view is None:
                return check_buffer(b"", bytes, 0, profile, self.path)
            return check_buffer(
                view[:PREFIX_LEN],
                lambda n: view[PREFIX_LEN : PREFIX_LEN + n],
                self._size,
                profile,
                self.path,
            )

    # -- the mapping -------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return not self._closer.alive

    def close(self) -> None:
        """Release the mapping once no array or tensor uses it any more.

        Arrays and tensors already handed out stay valid: they keep the
        mapping alive, and it is unmapped when the last of them goes.
        """
        self._closer()
        mm, self._mm = self._mm, None
        if mm is None:
            return
        if self.framework == "torch":
            # torch.frombuffer keeps a reference to the mapping object but no
            # buffer export, so mmap.close() would not refuse: it would unmap
            # memory that live tensors point into.  Drop our reference only;
            # the mapping is unmapped when the last tensor goes.
            return
        # numpy views still export the buffer: then garbage collection unmaps it.
        with contextlib.suppress(BufferError):
            mm.close()

    def __enter__(self) -> SafetensorsFile:  # noqa: PYI034 - not meant to be subclassed
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the header ------------------------------------------------------

    def keys(self) -> list[str]:
        """Tensor names, sorted."""
        return sorted(self._tensors)

    def offset_keys(self) -> list[str]:
        """Tensor names in the order of their data in the file."""
        return [name for name, _ in self.entries()]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._tensors)

    def __contains__(self, name: object) -> bool:
        return name in self._tensors

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
        return {key: value for key, value in meta.items() if key not in self._tensors and value in self._tensors}

    def info(self, name: str) -> TensorInfo:
        """The header entry of tensor ``name`` (or of the tensor it aliases)."""
        found = self._tensors.get(name)
        if found is not None:
            return found
        target = (self.report.metadata or {}).get(name)
        if target is not None and target in self._tensors:
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
        size = _ELEMENT_BYTES[info.dtype]
        return size > 1 and (self._data_start + info.begin) % size != 0 and info.numel > 0

    # -- tensors ---------------------------------------------------------

    def get(self, name: str) -> Any:  # noqa: ANN401 - numpy array or torch tensor
        """Tensor ``name`` as a numpy array or torch tensor on the handle's device."""
        info = self.info(name)
        return self._finish(name, info, self._cpu(name, info))

    def __getitem__(self, name: str) -> Any:  # noqa: ANN401 - numpy array or torch tensor
        return self.get(name)

    def entries(self) -> list[tuple[str, TensorInfo]]:
        """(name, header entry) of every tensor, in the order of their data."""
        with gc_paused():
            return sorted(self._tensors.items(), key=lambda entry: entry[1].data_offsets)

    def load(self, entries: list[tuple[str, TensorInfo]]) -> dict[str, Any]:
        """The tensors of ``entries`` (from ``entries()``), after one size check for all of them.

        With ``writable``, a batch of several tensors is served from one new
        copy-on-write mapping: zero-copy, and independent of every other load.
        """
        end = max((info.end for _, info in entries), default=0)
        self._batch = _current_size(self._fd, self.path) if entries and not self.closed else None
        try:
            if self._batch is not None and self._batch < self._data_start + end:
                self._batch = None  # let the per-tensor check name the first one cut off
            if self.writable and self._batch is not None and len(entries) > 1:
                with contextlib.suppress(OSError):  # out of mappings: one copy per tensor
                    self._private = mmap.mmap(self._fd, self._size, access=mmap.ACCESS_COPY)
            with gc_paused():
                return self._views(entries)
        finally:
            self._batch = self._private = None

    def _views(self, entries: list[tuple[str, TensorInfo]]) -> dict[str, Any]:
        """The batch's tensors: plain aligned ones as direct views (the common case, made cheap)."""
        torch = self.framework == "torch"
        buf = self._mm if torch or not self.writable else self._private
        plain = buf is not None and self._kind == "cpu"
        lazy = _lazy_torch() if torch else _lazy()
        frombuffer, to_dtype = (lazy["torch"].frombuffer, lazy["torch_dtype"]) if torch else (None, lazy["numpy_dtype"])
        np_frombuffer, start, cast, out = _lazy()["np"].frombuffer, self._data_start, self._cast, {}
        for name, info in entries:
            begin, end = info.data_offsets
            size = _ELEMENT_BYTES[info.dtype]
            if plain and size and end > begin and not (start + begin) % size and info.dtype not in cast:
                dtype = to_dtype(info.dtype)
                if frombuffer is None:
                    out[name] = np_frombuffer(buf, dtype, (end - begin) // size, start + begin).reshape(info.shape)
                    continue
                if dtype is not None:
                    flat = frombuffer(buf, dtype=dtype, count=(end - begin) // size, offset=start + begin)
                    out[name] = flat if len(info.shape) == 1 else flat.reshape(info.shape)
                    continue
            out[name] = self._finish(name, info, self._cpu(name, info))
        return out

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

    def _buffer(self, name: str, info: TensorInfo) -> mmap.mmap:
        if self._mm is None or self._mm.closed or self.closed:
            msg = f"{self.path}: the handle is closed"
            raise LoadError(msg)
        end = self._data_start + info.end
        size = self._batch if self._batch is not None else _current_size(self._fd, self.path)
        if size < end:
            msg = (
                f"{self.path}: the file shrank to {size} bytes after it was opened; tensor {name!r} "
                f"ends at byte {end}, and reading past the end of a mapped file would kill the process (SIGBUS)"
            )
            raise LoadError(msg)
        return self._mm

    def _cpu(self, name: str, info: TensorInfo) -> Any:  # noqa: ANN401
        start = self._data_start + info.begin
        if self.framework == "torch":
            return self._cpu_torch(name, info, start)
        return self._cpu_numpy(name, info, start)

    def _cpu_numpy(self, name: str, info: TensorInfo, start: int) -> Any:  # noqa: ANN401
        lazy = _lazy()
        np = lazy["np"]
        if not _ELEMENT_BYTES[info.dtype]:
            if not info.nbytes:
                raw = np.empty(0, np.uint8)
            elif self.writable and self.subbyte == "packed":
                return self._own(name, info, start, np.dtype(np.uint8), info.nbytes)
            else:
                raw = np.frombuffer(self._buffer(name, info), np.uint8, info.nbytes, start)
            if self.subbyte == "packed":
                return raw
            out = unpack_subbyte(raw, info.dtype, info.numel).reshape(info.shape)
            out.flags.writeable = self.writable
            return out
        dtype = lazy["numpy_dtype"](info.dtype)
        if info.numel == 0:
            try:
                out = np.empty(info.shape, dtype)
            except (ValueError, OverflowError):
                raise self._unrepresentable(name, info, "numpy") from None
        elif self._is_misaligned(info):
            raw = np.frombuffer(self._buffer(name, info), np.uint8, info.nbytes, start)
            out = raw.copy().view(dtype).reshape(info.shape)
        elif self.writable:
            return self._own(name, info, start, dtype, info.numel).reshape(info.shape)
        else:
            return np.frombuffer(self._buffer(name, info), dtype, info.numel, start).reshape(info.shape)
        out.flags.writeable = self.writable
        return out

    def _own(self, name: str, info: TensorInfo, start: int, dtype: Any, count: int) -> Any:  # noqa: ANN401
        """A writable array of the caller's own: a private mapping, or a copy when small."""
        np = _lazy()["np"]
        shared = self._buffer(name, info)
        if self._private is not None:
            return np.frombuffer(self._private, dtype, count, start)
        if info.nbytes >= _OWN_MAPPING:
            base = start - start % mmap.ALLOCATIONGRANULARITY
            with contextlib.suppress(OSError):  # out of mappings: copy instead
                own = mmap.mmap(self._fd, start + info.nbytes - base, access=mmap.ACCESS_COPY, offset=base)
                return np.frombuffer(own, dtype, count, start - base)
        return np.frombuffer(shared, dtype, count, start).copy()

    def _cpu_torch(self, name: str, info: TensorInfo, start: int) -> Any:  # noqa: ANN401
        lazy = _lazy_torch()
        torch = lazy["torch"]
        if not _ELEMENT_BYTES[info.dtype]:
            if not info.nbytes:
                return torch.empty(0, dtype=torch.uint8)
            return torch.frombuffer(self._buffer(name, info), dtype=torch.uint8, count=info.nbytes, offset=start)
        dtype = lazy["torch_dtype"](info.dtype)
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
        if self._is_misaligned(info):
            raw = torch.frombuffer(self._buffer(name, info), dtype=torch.uint8, count=info.nbytes, offset=start)
            return raw.clone().view(dtype).reshape(info.shape)
        flat = torch.frombuffer(self._buffer(name, info), dtype=dtype, count=info.numel, offset=start)
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


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause garbage collection while many tensors are made."""
    # Many tensors allocate many small, acyclic objects; with a large heap
    # (torch imported) each full collection they trigger costs tens of
    # milliseconds, so collection pauses meanwhile.
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _current_size(fd: int, path: str) -> int:
    try:
        return os.fstat(fd).st_size
    except OSError as exc:  # pragma: no cover - fstat of an open descriptor
        raise os_error(path, exc) from exc


def _resolve_cast(cast: Mapping[str, str], framework: str) -> dict[str, tuple[str | None, Any]]:
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
    lazy = _lazy()
    if target in DTYPE_BITS and DTYPE_BITS[target] % 8 == 0:
        return lazy["numpy_dtype"](target)
    import ml_dtypes  # noqa: PLC0415 - numpy names for bfloat16 and the float8 types

    try:
        return lazy["np"].dtype(getattr(ml_dtypes, target, target) if isinstance(target, str) else target)
    except TypeError:
        msg = f"unknown cast target {target!r}; use a safetensors dtype such as 'F32' or a numpy dtype name"
        raise ValueError(msg) from None


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
