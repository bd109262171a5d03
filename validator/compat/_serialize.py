# Strategy: safetensors 0.8.0's raw, framework-free API (TensorSpec,
# serialize, serialize_file, deserialize) on top of stcheck's writer and
# validator.  A TensorSpec names memory by address, as the reference's does;
# it becomes a zero-copy (dtype, shape, buffer) triple for the writer, so the
# bytes written are the writer's, which equal the reference's.  Every
# deserialisation validates first, under the strict profile unless told.
from __future__ import annotations

import ctypes
import mmap
import os
from typing import TYPE_CHECKING, Any, Final

from validator._errors import WriteError
from validator._findings import TensorTable
from validator._validate import validate
from validator.compat._errors import SaveTypeError, SerializeError, as_u64, invalid_file
from validator.io._mapping import OWN_MAPPING, rows
from validator.io.writer import serialize_items, to_bytes, write_file

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from validator._findings import Report
    from validator._rules import Profile
    from validator.io._mapping import Row

__all__ = [
    "DTYPE_CODES",
    "TensorSpec",
    "check_metadata",
    "checked_bytes",
    "copied",
    "deserialize",
    "serialize",
    "serialize_file",
    "write_items",
]

# The dtype names TensorSpec takes (torch's spelling) -> safetensors names.
DTYPE_CODES: Final = {
    "bool": "BOOL",
    "int8": "I8",
    "uint8": "U8",
    "int16": "I16",
    "uint16": "U16",
    "int32": "I32",
    "uint32": "U32",
    "int64": "I64",
    "uint64": "U64",
    "float16": "F16",
    "float32": "F32",
    "float64": "F64",
    "bfloat16": "BF16",
    "float8_e4m3fn": "F8_E4M3",
    "float8_e4m3fnuz": "F8_E4M3FNUZ",
    "float8_e5m2": "F8_E5M2",
    "float8_e5m2fnuz": "F8_E5M2FNUZ",
    "float8_e8m0fnu": "F8_E8M0",
    "float4_e2m1fn_x2": "F4",
    "complex64": "C64",
}
_U64: Final = 1 << 64


class TensorSpec:
    """One tensor for ``serialize``: its dtype, shape and the address and
    length of its contiguous bytes (see safetensors' ``TensorSpec``).

    ``dtype`` is a torch-style name (``"float32"``); ``shape`` is the logical
    shape, except that a ``float4_e2m1fn_x2`` last dimension counts byte
    pairs and is doubled here.  The memory must stay alive and unchanged
    until ``serialize`` returns.
    """

    __slots__ = ("_data_len", "_data_ptr", "_dtype", "_shape")

    def __init__(self, *, dtype: str, shape: Sequence[int], data_ptr: int, data_len: int) -> None:
        if not isinstance(dtype, str):
            msg = f"argument 'dtype': '{type(dtype).__name__}' object is not an instance of 'str'"
            raise SaveTypeError(msg)
        code = DTYPE_CODES.get(dtype)
        if code is None:
            msg = f'Unknown dtype "{dtype}". Supported dtypes: {", ".join(DTYPE_CODES)}'
            raise SerializeError(msg)
        dims = [_unsigned(d) for d in shape]
        if code == "F4" and dims:
            if dims[-1] * 2 >= _U64:
                msg = f"F4 last-dim {dims[-1]} doubled to logical shape overflows usize"
                raise SerializeError(msg)
            dims[-1] *= 2
        self._dtype = code
        self._shape = dims
        self._data_ptr = _unsigned(data_ptr)
        self._data_len = _unsigned(data_len)

    @property
    def dtype(self) -> str:
        """The safetensors dtype code, such as ``"F32"``."""
        return self._dtype

    @property
    def shape(self) -> list[int]:
        """The logical shape written to the header."""
        return list(self._shape)

    @property
    def data_ptr(self) -> int:
        """The address of the tensor's contiguous bytes."""
        return self._data_ptr

    @property
    def data_len(self) -> int:
        """The length of the tensor's bytes."""
        return self._data_len

    def __repr__(self) -> str:
        fields = f"dtype='{self._dtype}', shape={self._shape}, data_ptr={self._data_ptr}, data_len={self._data_len}"
        return f"TensorSpec({fields})"

    def triple(self) -> tuple[str, list[int], Any]:
        """(dtype, shape, zero-copy buffer) for the writer."""
        if not self._data_len:
            return self._dtype, self._shape, b""
        if not self._data_ptr:
            msg = "Error while serializing: a TensorSpec with data_len > 0 has data_ptr 0"
            raise SerializeError(msg)
        return self._dtype, self._shape, (ctypes.c_ubyte * self._data_len).from_address(self._data_ptr)


def _unsigned(value: object) -> int:
    number = value.__index__() if hasattr(value, "__index__") else None
    if number is None:
        msg = f"'{type(value).__name__}' object cannot be interpreted as an integer"
        raise TypeError(msg)
    return as_u64(int(number))


def _triples(tensor_dict: object, metadata: object) -> dict[str, tuple[str, list[int], Any]]:
    if not isinstance(tensor_dict, dict):
        msg = f"argument 'tensor_dict': '{type(tensor_dict).__name__}' object cannot be converted to 'PyDict'"
        raise SaveTypeError(msg)
    out = {}
    for name, spec in tensor_dict.items():
        if not isinstance(name, str):
            msg = f"argument 'tensor_dict': '{type(name).__name__}' object is not an instance of 'str'"
            raise SaveTypeError(msg)
        if not isinstance(spec, TensorSpec):
            msg = f"argument 'tensor_dict': '{type(spec).__name__}' object is not an instance of 'TensorSpec'"
            raise SaveTypeError(msg)
        out[name] = spec.triple()
    check_metadata(metadata)
    return out


def check_metadata(metadata: object) -> None:
    """Refuse metadata that is not a dict of str to str, with the reference's TypeError."""
    if metadata is None:
        return
    if not isinstance(metadata, dict):
        msg = f"argument 'metadata': '{type(metadata).__name__}' object cannot be converted to 'PyDict'"
        raise SaveTypeError(msg)
    for key, value in metadata.items():
        for item in (key, value):
            if not isinstance(item, str):
                msg = f"argument 'metadata': '{type(item).__name__}' object is not an instance of 'str'"
                raise SaveTypeError(msg)


def serialize(tensor_dict: dict[str, TensorSpec], metadata: dict[str, str] | None = None) -> bytes:
    """The safetensors file of ``tensor_dict`` as bytes (see ``TensorSpec``)."""
    triples = _triples(tensor_dict, metadata)
    try:
        return to_bytes(triples, metadata, check_shared=False)
    except WriteError as exc:
        raise SerializeError(f"Error while serializing: {exc}") from exc


def serialize_file(
    tensor_dict: dict[str, TensorSpec],
    filename: str | os.PathLike[str],
    metadata: dict[str, str] | None = None,
) -> None:
    """Write the safetensors file of ``tensor_dict`` to ``filename``, atomically."""
    triples = _triples(tensor_dict, metadata)
    write_items(triples, filename, metadata, check_shared=False)


def write_items(
    tensors: Mapping[str, object],
    filename: object,
    metadata: Mapping[str, str] | None,
    *,
    check_shared: bool,
) -> None:
    """Serialise with stcheck's writer and write atomically, errors as the reference's."""
    if not isinstance(filename, (str, os.PathLike)):
        msg = f"argument 'filename': '{type(filename).__name__}' object cannot be converted to 'PyString'"
        raise SaveTypeError(msg)
    try:
        head, items, _ = serialize_items(tensors, metadata, dedupe=False, check_shared=check_shared)
        write_file(os.fspath(filename), head, items)
    except WriteError as exc:
        raise SerializeError(f"Error while serializing: {exc}") from exc


def checked_bytes(data: object, profile: Profile | str, context: str) -> tuple[Report, memoryview]:
    """Validate an in-memory file; return its report and a byte view of it."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        msg = f"argument 'bytes': '{type(data).__name__}' object is not an instance of 'bytes'"
        raise TypeError(msg)
    view = memoryview(data).cast("B") if memoryview(data).c_contiguous else memoryview(bytes(data))
    report = validate(view, profile=profile)
    if not report.valid:
        raise invalid_file(report, context)
    return report, view


def deserialize(bytes: bytes, *, profile: Profile | str = "strict") -> list[tuple[str, dict[str, Any]]]:  # noqa: A002 - the reference's parameter name
    """Validate a file held in memory and return its tensors, in file order, as
    ``[(name, {"shape": [...], "dtype": "F32", "data": bytearray}), ...]``."""
    report, view = checked_bytes(bytes, profile, "Error while deserializing")
    tensors = report.tensors or {}
    start = report.data_start or 0
    out = []
    for name in sorted(tensors, key=lambda n: tensors[n].data_offsets):
        info = tensors[name]
        data = bytearray(view[start + info.begin : start + info.end])
        out.append((name, {"shape": list(info.shape), "dtype": info.dtype, "data": data}))
    return out


def copied(data: object, profile: Profile | str) -> tuple[list[Row], Any]:
    """Validate an in-memory file; its tensors as rows in file order and one copy of its data region.

    The copy (a numpy uint8 array) is the only one: each tensor is a view of it.
    """
    import numpy as np  # noqa: PLC0415 - numpy loads only when used

    report, view = checked_bytes(data, profile, "Error while deserializing")
    start = report.data_start or 0
    size = len(view) - start
    if size >= OWN_MAPPING:
        # An anonymous mapping, not np.empty: numpy asks for transparent huge
        # pages on large arrays, and the kernel may then stall to compact memory.
        # MAP_POPULATE: the kernel provides every page at once rather than one fault at a time.
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_POPULATE", 0)
        buffer = np.frombuffer(mmap.mmap(-1, size, flags=flags), np.uint8)
    else:
        buffer = np.empty(size, np.uint8)  # a few pages: a mapping would cost more than the copy
    np.copyto(buffer, np.frombuffer(view, np.uint8, size, start))
    return rows(report.tensors or TensorTable.of({})), buffer
