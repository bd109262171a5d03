# Strategy: a lazy handle over one memory-mapped file.  The file is mapped
# once, and the validator core (`check_buffer`) reads the length prefix and
# the header out of that same mapping, so the bytes that were validated are
# the bytes that are used.  Offsets come from the validated report, never
# from a second parse.  Tensors are created on demand:
#
# - numpy: a read-only zero-copy view (`np.frombuffer`) of an ACCESS_READ
#   mapping; the mapping stays alive as long as any view does.
# - torch: a zero-copy tensor over a private copy-on-write mapping
#   (ACCESS_COPY, MAP_PRIVATE): the buffer is writable, so torch warns about
#   nothing, pages stay shared with the page cache until written, and a write
#   never reaches the file.
#
# A tensor whose absolute start is not a multiple of its element size is
# copied once into aligned memory (see `misaligned`).  Devices other than the
# CPU get a copy of the CPU view, after the capability table has cleared the
# dtype or the caller's cast policy has converted it.
from __future__ import annotations

import contextlib
import gc
import mmap
import os
from typing import TYPE_CHECKING, Any

from validator._dtypes import DTYPE_BITS, element_bytes
from validator._errors import DeviceError, InvalidFileError, LoadError, TensorNotFoundError
from validator._prefix import PREFIX_LEN
from validator._source import open_regular, os_error
from validator._validate import _profile, check_buffer
from validator.io.devices import ensure_available, parse_device, platform_facts, unsupported_reason

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from validator._findings import Report, TensorInfo
    from validator._rules import Profile

# Bytes per element; 0 for the sub-byte dtypes, which are never "misaligned".
_ELEMENT_BYTES = {name: element_bytes(name) or 0 for name in DTYPE_BITS}
_FRAMEWORKS = {"numpy": "numpy", "np": "numpy", "torch": "torch", "pt": "torch"}
_SUBBYTE_POLICIES = ("packed", "unpack")


def _map(path: str, *, private: bool) -> tuple[mmap.mmap | None, int]:
    fd, st = open_regular(path)
    try:
        if st.st_size == 0:
            return None, 0
        access = mmap.ACCESS_COPY if private else mmap.ACCESS_READ
        return mmap.mmap(fd, st.st_size, access=access), st.st_size
    except OSError as exc:
        raise os_error(path, exc) from exc
    finally:
        os.close(fd)


class SafetensorsFile:
    """A validated, memory-mapped safetensors file; see ``validator.open``."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        framework: str = "numpy",
        device: str = "cpu",
        profile: Profile | str = "strict",
        cast: Mapping[str, str] | None = None,
        subbyte: str = "packed",
    ) -> None:
        self.path = os.fspath(path)
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
        self._cast = dict(cast or {})
        for source in self._cast:
            if source not in DTYPE_BITS:
                msg = f"cast policy names unknown dtype {source!r}"
                raise ValueError(msg)
        self.device = ensure_available(device) if fw == "torch" else "cpu"
        self._kind = kind
        self._os = platform_facts(kind)
        prof = _profile(profile)
        mm, size = _map(self.path, private=fw == "torch")
        self._mm = mm
        # A header of many tensors allocates many small, acyclic containers;
        # with a large heap (torch imported) each full collection they trigger
        # costs tens of milliseconds, so collection pauses while validating.
        paused = gc.isenabled()
        gc.disable()
        try:
            if mm is None:
                report = check_buffer(b"", bytes, 0, prof, self.path)
            else:
                view = mm
                report = check_buffer(
                    view[:PREFIX_LEN],
                    lambda n: view[PREFIX_LEN : PREFIX_LEN + n],
                    size,
                    prof,
                    self.path,
                )
        finally:
            if paused:
                gc.enable()
        if not report.valid:
            self.close()
            raise InvalidFileError(report)
        self.report: Report = report
        """The validation report of the mapped bytes (warnings included)."""
        self._tensors: Mapping[str, TensorInfo] = report.tensors or {}
        self._data_start: int = report.data_start or 0

    # -- the mapping -------------------------------------------------------

    def close(self) -> None:
        """Release the mapping once no array or tensor uses it any more.

        Arrays and tensors already handed out stay valid: they keep the
        mapping alive, and it is unmapped when the last of them goes.
        """
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

    def info(self, name: str) -> TensorInfo:
        """The header entry of tensor ``name``: dtype, shape and offsets."""
        try:
            return self._tensors[name]
        except KeyError:
            msg = f"{self.path}: no tensor named {name!r}"
            raise TensorNotFoundError(msg) from None

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

    def _buffer(self) -> mmap.mmap:
        if self._mm is None or self._mm.closed:
            msg = f"{self.path}: the handle is closed"
            raise LoadError(msg)
        return self._mm

    def _cpu(self, name: str, info: TensorInfo) -> Any:  # noqa: ANN401
        start = self._data_start + info.begin
        if self.framework == "torch":
            return self._cpu_torch(name, info, start)
        return self._cpu_numpy(name, info, start)

    def _cpu_numpy(self, name: str, info: TensorInfo, start: int) -> Any:  # noqa: ANN401
        import numpy as np  # noqa: PLC0415 - numpy/torch load only when a tensor is read

        from validator.io.dtypes_np import numpy_dtype, unpack  # noqa: PLC0415 - numpy/torch load only when a tensor is read

        if not _ELEMENT_BYTES[info.dtype]:
            raw = np.frombuffer(self._buffer(), np.uint8, info.nbytes, start) if info.nbytes else np.empty(0, np.uint8)
            if self.subbyte == "packed":
                return raw
            out = unpack(raw, info.dtype, info.numel).reshape(info.shape)
            out.flags.writeable = False
            return out
        dtype = numpy_dtype(info.dtype)
        if info.numel == 0:
            try:
                out = np.empty(info.shape, dtype)
            except (ValueError, OverflowError):
                raise self._unrepresentable(name, info, "numpy") from None
        elif self._is_misaligned(info):
            raw = np.frombuffer(self._buffer(), np.uint8, info.nbytes, start)
            out = raw.copy().view(dtype).reshape(info.shape)
        else:
            return np.frombuffer(self._buffer(), dtype, info.numel, start).reshape(info.shape)
        out.flags.writeable = False
        return out

    def _cpu_torch(self, name: str, info: TensorInfo, start: int) -> Any:  # noqa: ANN401
        import torch  # noqa: PLC0415 - numpy/torch load only when a tensor is read

        from validator.io.dtypes_torch import torch_dtype  # noqa: PLC0415 - numpy/torch load only when a tensor is read

        if not _ELEMENT_BYTES[info.dtype]:
            if not info.nbytes:
                return torch.empty(0, dtype=torch.uint8)
            return torch.frombuffer(self._buffer(), dtype=torch.uint8, count=info.nbytes, offset=start)
        dtype = torch_dtype(info.dtype)
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
            raw = torch.frombuffer(self._buffer(), dtype=torch.uint8, count=info.nbytes, offset=start)
            return raw.clone().view(dtype).reshape(info.shape)
        flat = torch.frombuffer(self._buffer(), dtype=dtype, count=info.numel, offset=start)
        return flat if len(info.shape) == 1 else flat.reshape(info.shape)

    def _unrepresentable(self, name: str, info: TensorInfo, framework: str) -> LoadError:
        msg = (
            f"tensor {name!r} is empty but its shape {list(info.shape)} has sides too large "
            f"for a {framework} array (sizes overflow 64 bits)"
        )
        return LoadError(msg)

    def _finish(self, name: str, info: TensorInfo, value: Any) -> Any:  # noqa: ANN401
        """Apply the cast policy, check the device can hold the result, move it."""
        dtype = info.dtype
        target = self._cast.get(dtype)
        if self.framework == "numpy":
            if target is None:
                return value
            from validator.io.dtypes_np import numpy_dtype  # noqa: PLC0415 - numpy/torch load only when a tensor is read

            out = value.astype(numpy_dtype(target))
            out.flags.writeable = False
            return out
        if target is not None:
            from validator.io.dtypes_torch import parse_cast_target, safetensors_dtype  # noqa: PLC0415 - numpy/torch load only when a tensor is read

            cast_to = parse_cast_target(target)
            value = value.to(cast_to)
            dtype = safetensors_dtype(cast_to) or dtype
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


def open_file(
    path: str | os.PathLike[str],
    *,
    framework: str = "numpy",
    device: str = "cpu",
    profile: Profile | str = "strict",
    cast: Mapping[str, str] | None = None,
    subbyte: str = "packed",
) -> SafetensorsFile:
    """Map, validate and open a safetensors file for lazy loading.

    The file is validated from the mapped bytes themselves; a file with any
    error finding under ``profile`` is refused with ``InvalidFileError``
    (``.report`` holds the findings).  ``profile="reference"`` also opens files
    that only safetensors 0.8.0 accepts.

    ``framework``: ``"numpy"`` gives read-only zero-copy arrays (ml_dtypes for
    BF16 and the float8 types, complex64 for C64); ``"torch"`` gives zero-copy
    CPU tensors over a private copy-on-write mapping (writes never reach the
    file).  A tensor whose start is misaligned for its element size is copied
    once; ``handle.misaligned`` names them.

    ``device``: ``"cpu"``, ``"mps"``, ``"cuda"`` or ``"cuda:N"`` (torch only).
    A dtype the device cannot hold raises ``DeviceError`` naming the tensor,
    the dtype and the device, unless ``cast`` maps that dtype to another, e.g.
    ``cast={"F64": "F32", "F8_E4M3": "BF16"}``.  ``cast`` applies on every
    device, before the copy to the device.

    ``subbyte`` (F4, F6_E2M3, F6_E3M2): ``"packed"`` (default) returns the
    tensor's raw bytes as a 1-D uint8 array, ``info(name).shape`` giving the
    logical shape; ``"unpack"`` (numpy only) returns one ml_dtypes
    float4_e2m1fn / float6_e2m3fn / float6_e3m2fn element per byte, in the
    logical shape, reading element i from bits [w*i, w*(i+1)) of the bytes as
    a little-endian bit stream (for F4: element 0 in the low nibble).

    >>> import validator
    >>> with validator.open("model.safetensors") as f:  # doctest: +SKIP
    ...     w = f.get("weight")
    ...     head = f.get_slice("embed")[:8]
    """
    return SafetensorsFile(path, framework=framework, device=device, profile=profile, cast=cast, subbyte=subbyte)
