# Strategy: safetensors 0.8.0's `safe_open` over stcheck's validating loader
# (validator.io.loader.SafetensorsFile).  The loader maps and validates the
# file; this module only speaks the reference's dialect: its framework and
# device names, its method names, its exceptions and messages, its indexing
# rules (see _slicing), and its results:
#
# - torch: zero-copy CPU tensors over one private copy-on-write mapping per
#   handle (as the reference's `UntypedStorage.from_file(shared=False)`:
#   a write is seen by a later get_tensor of the same handle, never by the
#   file); F4 as float4_e2m1fn_x2 with the last dimension halved; other
#   devices get a copy.
# - numpy and the frameworks the reference serves through numpy (JAX/flax,
#   MLX, paddle, TensorFlow): writable arrays that are the caller's own, as
#   the reference's copies are: a small tensor is read straight into a new
#   array, a large one gets its own copy-on-write mapping (see the loader's
#   `writable`).
#
# After close (from any thread) every call raises "File is closed", as the
# reference does: a load that finds the handle closed under it says the
# same (`_Open.failed`), and one already reading finishes with this file's
# bytes (the loader keeps the descriptor until it returns).
from __future__ import annotations

import errno
import os
import re
from typing import TYPE_CHECKING, Any, Final

from validator._errors import InvalidFileError, LoadError, SourceError
from validator.compat import _slicing
from validator.compat._errors import (
    CompatDeviceError,
    CompatError,
    CompatLoadError,
    DeviceValueError,
    FileMissingError,
    MissingTensorError,
    invalid_file,
)
from validator.io._extras import needs_extra
from validator.io.devices import framework_unsupported
from validator.io.loader import SafetensorsFile

if TYPE_CHECKING:
    from types import TracebackType

    from validator._findings import TensorInfo
    from validator._rules import Profile

__all__ = ["SafeSlice", "parse_device", "parse_framework", "safe_open", "to_jax", "to_mlx", "to_paddle"]

_FRAMEWORKS: Final = {
    "pt": "pytorch",
    "torch": "pytorch",
    "pytorch": "pytorch",
    "np": "numpy",
    "numpy": "numpy",
    "tf": "tensorflow",
    "tensorflow": "tensorflow",
    "jax": "flax",
    "flax": "flax",
    "mlx": "mlx",
    "paddle": "paddle",
}
# Device kinds that take an index ("npu" means "npu:0"); "cpu" and "mps" take none.
_INDEXED: Final = ("cuda", "musa", "npu", "xpu", "xla", "mlu", "hpu")
_INDEX: Final = re.compile(r"\+?[0-9]+")
_BACKENDS: Final = ("mmap", "pread")


def parse_framework(framework: object) -> str:
    """The reference's name for a framework argument, or its error."""
    if not isinstance(framework, str):
        msg = f"argument 'framework': '{type(framework).__name__}' object is not an instance of 'str'"
        raise TypeError(msg)
    found = _FRAMEWORKS.get(framework)
    if found is None:
        msg = f"framework {framework} is invalid"
        raise CompatError(msg)
    return found


def parse_device(device: object) -> str | int:
    """The reference's reading of a device argument: "cpu", "mps", "cuda:N" ... or an int.

    An int N is "accelerator N", which torch resolves to the current
    accelerator; ``None`` is the CPU.
    """
    if device is None:
        return "cpu"
    if isinstance(device, str):
        if device in ("cpu", "mps"):
            return device
        if device in _INDEXED:
            return f"{device}:0"
        kind, colon, index = device.partition(":")
        if colon and (kind in _INDEXED or kind == "mps") and ":" not in index:
            if not _INDEX.fullmatch(index):
                msg = "invalid digit found in string" if index else "cannot parse integer from empty string"
                raise DeviceValueError(msg)
            number = int(index)
            if kind != "mps":
                return f"{kind}:{number}"
            if number == 0:
                return "mps"
            msg = f"device {device} is invalid: only mps or mps:0 is supported"
            raise CompatDeviceError(msg)
        msg = f"device {device} is invalid"
        raise CompatDeviceError(msg)
    if isinstance(device, int) and not isinstance(device, bool) and device >= 0:
        return device
    msg = f"device {device!r} is invalid"
    raise CompatDeviceError(msg)


def _check_backend(backend: object) -> None:
    # Both backends are served from the mapping: the bytes are the same, and
    # "pread" exists in the reference to save host memory on MPS.
    if not isinstance(backend, str):
        msg = f"argument 'backend': '{type(backend).__name__}' object is not an instance of 'str'"
        raise TypeError(msg)
    if backend not in _BACKENDS:
        msg = f'backend "{backend}" is invalid (expected one of: "mmap", "pread")'
        raise CompatError(msg)


def _open_handle(source: Any, framework: str, profile: Profile | str) -> SafetensorsFile:  # noqa: ANN401 - a path or a file object
    torch = framework == "pytorch"
    try:
        return SafetensorsFile(
            source,
            framework="torch" if torch else "numpy",
            profile=profile,
            subbyte="packed" if torch else "unpack",
            writable=not torch,
        )
    except InvalidFileError as exc:
        raise invalid_file(exc.report, "Error while deserializing header") from None
    except SourceError as exc:
        if exc.errno in {None, errno.EISDIR}:  # a directory: the reference's own OSError, not FileNotFoundError
            raise
        where = os.fspath(source) if isinstance(source, (str, os.PathLike)) else (exc.filename or str(exc))
        text = "No such file or directory" if exc.errno == errno.ENOENT else os.strerror(exc.errno)
        err = FileMissingError(f"{text}: {where}")
        err.errno, err.filename = exc.errno, where
        raise err from None


class _Open:
    """An open file: the loader's handle plus the reference's framework and device."""

    def __init__(self, source: Any, framework: object, device: object, backend: object, profile: Profile | str) -> None:  # noqa: ANN401
        self.framework = parse_framework(framework)
        self.device = parse_device(device)
        _check_backend(backend)
        self.handle = _open_handle(source, self.framework, profile)
        if self.device != "cpu" and self.framework not in ("pytorch", "paddle"):
            self.handle.close()
            msg = f"Device {self.device} is not supported for framework {self.framework}"
            raise CompatError(msg)
        self.tensors = self.handle.report.tensors or {}
        # The loader's result is final: a numpy array, or a torch tensor on the CPU.
        self.raw = self.framework == "numpy" or (self.framework == "pytorch" and self.device == "cpu")

    def info(self, name: object) -> TensorInfo:
        if not isinstance(name, str):
            msg = f"argument 'name': '{type(name).__name__}' object is not an instance of 'str'"
            raise TypeError(msg)
        found = self.tensors.get(name)
        if found is None:
            msg = f"File does not contain tensor {name}"
            raise MissingTensorError(msg)
        return found

    def failed(self, exc: LoadError) -> CompatLoadError:
        """The reference's error for a load that failed: "File is closed" once the handle is."""
        return CompatLoadError("File is closed" if self.handle.closed else str(exc))

    def cpu(self, name: str, info: TensorInfo) -> Any:  # noqa: ANN401 - a framework tensor
        """The CPU tensor in its framework's dtype (not yet moved or converted)."""
        if self.framework == "pytorch" and info.dtype in ("F6_E2M3", "F6_E3M2"):
            msg = f"Dtype not understood: {info.dtype}"
            raise CompatLoadError(msg)
        try:
            value = self.handle.load([(name, info)])[name]
        except LoadError as exc:
            raise self.failed(exc) from exc
        if self.framework == "pytorch" and info.dtype == "F4":
            return _float4(value, info)
        return value

    def get_all(self) -> dict[str, Any]:
        torch = self.framework == "pytorch"
        try:
            values = self.handle.load_all(unless=_TORCH_SUBBYTE if torch else frozenset())
        except LoadError as exc:
            raise self.failed(exc) from exc
        if values is None:  # torch and F4/F6: one by one, as get_tensor
            return {name: self.finish(self.cpu(name, info), info) for name, info in self.handle.entries()}
        if self.raw:
            return values
        tensors = self.tensors
        return {name: self.finish(value, tensors[name]) for name, value in values.items()}

    def finish(self, value: Any, info: TensorInfo) -> Any:  # noqa: ANN401 - a framework tensor
        """Move a CPU tensor to the device, or convert an array to the framework."""
        if self.framework == "pytorch":
            return value if self.device == "cpu" else value.to(self.device)
        return _CONVERT[self.framework](value, info, self.device)

    def get(self, name: object) -> Any:  # noqa: ANN401 - a framework tensor
        if type(name) is str:
            # The direct path: a view of the mapping or one read (see the loader's `plain`).
            try:
                value = self.handle.plain(name)
            except LoadError as exc:
                raise self.failed(exc) from exc
            if value is not None:
                return value if self.raw else self.finish(value, self.tensors[name])
        info = self.info(name)
        return self.finish(self.cpu(str(name), info), info)


_TORCH_SUBBYTE: Final = frozenset(("F4", "F6_E2M3", "F6_E3M2"))


def _float4(value: Any, info: TensorInfo) -> Any:  # noqa: ANN401 - torch tensors
    import torch  # noqa: PLC0415 - torch loads only when used

    shape = list(info.shape)
    if shape[-1] % 2:
        msg = f"f4_x2 dtype requires that the last dim be divisible by 2 in torch: got {shape}"
        raise CompatLoadError(msg)
    dtype = getattr(torch, "float4_e2m1fn_x2", None)
    if dtype is None:
        msg = f"this torch ({torch.__version__}) has no float4_e2m1fn_x2 dtype for F4"
        raise CompatLoadError(msg)
    shape[-1] //= 2
    return value.view(dtype).reshape(shape)


def _check(key: str, info: TensorInfo) -> None:
    reason = framework_unsupported(key, info.dtype)
    if reason is not None:
        msg = f"Dtype not understood: {info.dtype} ({reason})"
        raise CompatLoadError(msg)


def to_jax(value: Any, info: TensorInfo, device: str | int = "cpu") -> Any:  # noqa: ANN401, ARG001 - no device: the reference's jnp.array(array)
    """A numpy array as a JAX array (64-bit types narrow unless jax_enable_x64)."""
    with needs_extra("JAX arrays"):
        import jax.numpy as jnp  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415 - JAX loads only when used

    _check("jax:cpu", info)
    return jnp.array(value)


def to_mlx(value: Any, info: TensorInfo, device: str | int = "cpu") -> Any:  # noqa: ANN401, ARG001 - MLX picks its device
    """A numpy array as an MLX array (bfloat16 through a uint16 view)."""
    with needs_extra("MLX arrays"):
        import mlx.core as mx  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415 - MLX loads only when used

    _check(f"mlx:{mx.default_device().type.name}", info)
    if info.dtype == "BF16":
        return mx.array(value.view("<u2")).view(mx.bfloat16)
    return mx.array(value)


def _to_tensorflow(value: Any, info: TensorInfo, device: str | int) -> Any:  # noqa: ANN401, ARG001
    with needs_extra("TensorFlow tensors"):
        import tensorflow as tf  # type: ignore[import-untyped,import-not-found,unused-ignore]  # noqa: PLC0415 - TensorFlow loads only when used

    return tf.convert_to_tensor(value)


_PADDLE_VIEWS: Final = {
    "BF16": ("<u2", "bfloat16"),
    "F8_E4M3": ("u1", "float8_e4m3fn"),
    "F8_E5M2": ("u1", "float8_e5m2"),
}


def to_paddle(value: Any, info: TensorInfo, device: str | int = "cpu") -> Any:  # noqa: ANN401
    """A numpy array as a paddle tensor on ``device`` ("cuda:N" is paddle's "gpu:N")."""
    with needs_extra("paddle tensors"):
        import paddle  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415 - paddle loads only when used

    _check("paddle:cpu", info)
    place = str(device)
    if place.startswith("cuda:"):
        place = "gpu:" + place[5:]
    view = _PADDLE_VIEWS.get(info.dtype)
    if view is None:
        return paddle.to_tensor(value, place=place)
    tensor = paddle.to_tensor(value.view(view[0]), place=place)
    return tensor if info.dtype == "BF16" else tensor.view(getattr(paddle, view[1]))


_CONVERT: Final = {
    "numpy": lambda value, _info, _device: value,
    "flax": to_jax,
    "mlx": to_mlx,
    "tensorflow": _to_tensorflow,
    "paddle": to_paddle,
}


class safe_open:  # noqa: N801 - the safetensors name
    """Open a safetensors file lazily, after validating it (see safetensors' ``safe_open``).

    ``framework``: "pt"/"torch", "np"/"numpy", "flax"/"jax", "mlx", "paddle",
    "tf".  ``device``: "cpu", "cuda", "cuda:N", "mps", an int N, ... (torch
    and paddle only).  ``backend``: "mmap" or "pread" (both served from the
    mapping).  ``profile``: "strict" (default) or "reference" (accept what
    safetensors 0.8.0 accepts); a refused file raises ``SafetensorError``
    that is also a ``validator.InvalidFileError``.
    """

    def __init__(
        self,
        filename: str | os.PathLike[str],
        framework: str,
        device: str | int | None = "cpu",
        *,
        backend: str = "mmap",
        profile: Profile | str = "strict",
    ) -> None:
        self._inner: _Open | None = None
        if not isinstance(filename, (str, os.PathLike)) or not isinstance(os.fspath(filename), str):
            msg = f"argument 'filename': '{type(filename).__name__}' object is not an instance of 'str'"
            raise TypeError(msg)
        self._inner = _Open(filename, framework, device, backend, profile)

    def _open(self) -> _Open:
        if self._inner is None:
            msg = "File is closed"
            raise CompatLoadError(msg)
        return self._inner

    def metadata(self) -> dict[str, str] | None:
        """The free-form ``__metadata__`` map, or None."""
        return self._open().handle.metadata()

    def keys(self) -> list[str]:
        """The tensor names, sorted."""
        return sorted(self._open().tensors)

    def offset_keys(self) -> list[str]:
        """The tensor names in the order of their data."""
        return self._open().handle.offset_keys()

    def get_tensor(self, name: str) -> Any:  # noqa: ANN401 - a framework tensor
        """The whole tensor ``name`` in the handle's framework, on its device."""
        inner = self._inner
        if inner is None:
            msg = "File is closed"
            raise CompatLoadError(msg)
        return inner.get(name)

    def get_tensors(self) -> dict[str, Any]:
        """Every tensor, by name, in the order of their data."""
        return self._open().get_all()

    def get_slice(self, name: str) -> SafeSlice:
        """A slice object: index it to read part of tensor ``name``."""
        inner = self._open()
        info = inner.info(name)
        return SafeSlice(inner, info, inner.cpu(name, info))

    def __enter__(self) -> safe_open:  # noqa: PYI034 - the reference's signature
        return self

    def __exit__(
        self,
        _exc_type: type[BaseException] | None,
        _exc_value: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        inner, self._inner = self._inner, None
        if inner is not None:
            inner.handle.close()


class _safe_open_handle(safe_open):  # noqa: N801 - the safetensors name
    """``safe_open`` over an open file object (its descriptor is used)."""

    def __init__(
        self,
        f: Any,  # noqa: ANN401 - a file object with fileno()
        framework: str,
        device: str | int | None = "cpu",
        *,
        backend: str = "mmap",
        profile: Profile | str = "strict",
    ) -> None:
        self._inner = None
        f.fileno  # noqa: B018 - AttributeError for an object without a descriptor, as the reference
        self._inner = _Open(f, framework, device, backend, profile)


class SafeSlice:
    """One tensor of an open file, to be indexed (safetensors' ``PySafeSlice``)."""

    def __init__(self, inner: _Open, info: TensorInfo, full: Any) -> None:  # noqa: ANN401
        self._inner = inner
        self._info = info
        self._full = full

    def get_shape(self) -> list[int]:
        """The full tensor's shape."""
        return list(self._info.shape)

    def get_dtype(self) -> str:
        """The full tensor's safetensors dtype, such as "F32"."""
        return self._info.dtype

    def __getitem__(self, index: object) -> Any:  # noqa: ANN401 - a framework tensor
        if self._inner.framework == "pytorch":
            return self._inner.finish(self._full[index], self._info)
        import numpy as np  # noqa: PLC0415 - numpy loads only when used

        shape = self._info.shape
        chosen = _slicing.select(_slicing.parse(index, shape), shape)
        return self._inner.finish(np.array(self._full[chosen], copy=True, order="C"), self._info)
