# Strategy: the allowlist is one data table.  A global is allowed when its
# (module, qualified name) is a row here, exactly: no prefix, no wildcard,
# no attribute path.  Each row names where the fact comes from, so that a
# reader can check it against its source.  Rows marked TORCH are the globals
# torch.load(weights_only=True) itself accepts (torch 2.13,
# torch/_weights_only_unpickler.py, _get_allowed_globals and
# _tensor_rebuild_functions); the others are values that construct data and
# run no code of the file's choosing, but that torch's own unpickler refuses,
# so a file that uses them is "no code runs" yet not "loads with
# weights_only=True".
#
# Arguments matter for two rows, and the reader checks them (see _ops):
# - numpy.dtype of the object kind ("O") makes an object array, whose
#   elements are arbitrary pickled objects: refused.
# - torch.storage._load_from_bytes(b) runs torch.load(b, weights_only=False):
#   allowed only when b is literal bytes that themselves read as an allowed
#   legacy torch.save stream (pickle.dumps of a tensor writes this).
from __future__ import annotations

from types import MappingProxyType
from typing import Final

_TORCH_SOURCE: Final = "torch.load weights_only=True: torch 2.13 torch/_weights_only_unpickler.py _get_allowed_globals"
_TORCH_REBUILD: Final = (
    "torch.load weights_only=True: torch 2.13 torch/_weights_only_unpickler.py _tensor_rebuild_functions"
)
_NUMPY: Final = "numpy array reconstruction: ndarray.__reduce__ (numpy/_core/src/multiarray/methods.c array_reduce)"
_NUMPY_SCALAR: Final = "numpy scalar reconstruction: generic.__reduce__ (numpy/_core/src/multiarray/scalartypes.c)"
_BUILTIN: Final = "builtin value constructors: pickle's own reduction of these types (copyreg, Objects/*.c __reduce__)"
_JOBLIB: Final = "joblib.load: joblib/numpy_pickle.py NumpyArrayWrapper (the array bytes follow in the stream)"
_FROM_BYTES: Final = "pickle.dumps of a tensor: torch/storage.py TypedStorage.__reduce__ -> _load_from_bytes"

_TYPED: Final = "BFloat16 Bool Byte Char Double Float Half Int Long Short"
_STORAGES: Final = " ".join(f"{t}Storage" for t in (*_TYPED.split(), "ComplexDouble", "ComplexFloat"))
_TENSORS: Final = " ".join(f"{t}Tensor" for t in _TYPED.split())
_SPARSE: Final = " ".join(f"{t}Tensor" for t in _TYPED.split() if t != "Bool")

_QSTORAGES: Final = "QInt32Storage QInt8Storage QUInt2x4Storage QUInt4x2Storage QUInt8Storage"
_DTYPES: Final = (
    "bfloat16 bits16 bits1x8 bits2x4 bits4x2 bits8 bool complex128 complex32 complex64 float16 float32 "
    "float4_e2m1fn_x2 float64 float8_e4m3fn float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz float8_e8m0fnu "
    "int1 int2 int3 int4 int5 int6 int7 int8 int16 int32 int64 qint32 qint8 quint2x4 quint4x2 quint8 "
    "uint1 uint2 uint3 uint4 uint5 uint6 uint7 uint8 uint16 uint32 uint64"
)
_QSCHEMES: Final = (
    "per_tensor_affine per_tensor_symmetric per_channel_affine per_channel_symmetric per_channel_affine_float_qparams"
)
_REBUILD: Final = (
    "_rebuild_parameter _rebuild_parameter_with_state _rebuild_qtensor _rebuild_tensor _rebuild_tensor_v2 "
    "_rebuild_tensor_v3 _rebuild_sparse_tensor _rebuild_meta_tensor_no_storage _rebuild_nested_tensor "
    "_rebuild_wrapper_subclass _rebuild_device_tensor_from_numpy _rebuild_device_tensor_from_cpu_tensor"
)

# (module, space-separated names, source, in torch's own allowlist)
_ROWS: Final[tuple[tuple[str, str, str, bool], ...]] = (
    ("collections", "OrderedDict Counter", _TORCH_SOURCE, True),
    ("torch.nn.parameter", "Parameter", _TORCH_SOURCE, True),
    ("torch.serialization", "_get_layout", _TORCH_SOURCE, True),
    ("torch", "Size Tensor device", _TORCH_SOURCE, True),
    ("_codecs", "encode", _TORCH_SOURCE, True),
    ("builtins", "bytearray set complex", _TORCH_SOURCE, True),
    # dtypes: _dtype_to_storage_type_map, _new_dtypes, uint1..7, int1..7
    ("torch", _DTYPES, _TORCH_SOURCE, True),
    # torch._tensor_classes and torch._storage_classes
    ("torch", f"{_STORAGES} {_QSTORAGES} {_TENSORS}", _TORCH_SOURCE, True),
    ("torch.cuda", f"{_STORAGES} {_TENSORS}", _TORCH_SOURCE, True),
    ("torch.sparse", _SPARSE, _TORCH_SOURCE, True),
    ("torch.cuda.sparse", _SPARSE, _TORCH_SOURCE, True),
    ("torch.storage", "TypedStorage UntypedStorage", _TORCH_SOURCE, True),
    ("torch", _QSCHEMES, _TORCH_SOURCE, True),
    ("torch._utils", _REBUILD, _TORCH_REBUILD, True),
    ("torch._tensor", "_rebuild_from_type_v2", _TORCH_SOURCE, True),
    ("torch.storage", "_load_from_bytes", _FROM_BYTES, False),
    ("numpy.core.multiarray", "_reconstruct", _NUMPY, False),
    ("numpy._core.multiarray", "_reconstruct", _NUMPY, False),
    ("numpy", "ndarray dtype", _NUMPY, False),
    ("numpy.core.multiarray", "scalar", _NUMPY_SCALAR, False),
    ("numpy._core.multiarray", "scalar", _NUMPY_SCALAR, False),
    ("builtins", "frozenset slice range", _BUILTIN, False),
    ("joblib.numpy_pickle", "NumpyArrayWrapper", _JOBLIB, False),
)


def _table() -> dict[tuple[str, str], tuple[str, bool]]:
    table: dict[tuple[str, str], tuple[str, bool]] = {}
    for module, names, source, torch in _ROWS:
        for name in names.split():
            table[module, name] = (source, torch)
    return table


# (module, name) -> (source, whether torch.load(weights_only=True) accepts it)
ALLOWED: Final = MappingProxyType(_table())

# The two rows whose arguments the reader checks.
NUMPY_DTYPE: Final = ("numpy", "dtype")
LOAD_FROM_BYTES: Final = ("torch.storage", "_load_from_bytes")
CODECS_ENCODE: Final = ("_codecs", "encode")
JOBLIB_WRAPPER: Final = ("joblib.numpy_pickle", "NumpyArrayWrapper")


def allowed(module: str, name: str) -> bool:
    """Whether (module, name) is a row of the allowlist."""
    return (module, name) in ALLOWED


def torch_allows(module: str, name: str) -> bool:
    """Whether torch.load(weights_only=True) accepts (module, name)."""
    row = ALLOWED.get((module, name))
    return row is not None and row[1]
