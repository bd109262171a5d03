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
# Arguments matter for some rows, and the reader checks them (_args, _ops):
# the globals that call, import or read something they are given
# (_rebuild_from_type_v2's function, _load_from_bytes's bytes, _reconstruct's
# array type, the codec of _codecs.encode, backward hooks and setattr
# states, numpy.dtype's code) accept only literals of the stream or globals
# named in the tables below, reached directly.  numpy.dtype of the object
# kind ("O") moves a file to the data tier: its elements are pickled in the
# same stream, where the reader checks them like any other value.
#
# A second table, the data tier (_DATA_ROWS), holds library constructors
# that rebuild data and call nothing of the file's choosing: a file that
# needs them is ST710, not ST705.  The weights-only tier is the rows above.
from __future__ import annotations

from types import MappingProxyType
from typing import Final

__all__ = [
    "ALLOWED",
    "CODECS_ENCODE",
    "DATA_TIER",
    "DICT_TYPES",
    "FROM_TYPE",
    "HOOKS_AT",
    "INDEX_TYPES",
    "JOBLIB_OLD_WRAPPERS",
    "JOBLIB_WRAPPER",
    "LIST_TYPES",
    "LOAD_FROM_BYTES",
    "NDARRAY_TYPES",
    "NEW_INDEX",
    "NUMPY_DTYPE",
    "OBJECT_ARRAY",
    "REBUILD_FUNCS",
    "RECONSTRUCT",
    "STATE_AT",
    "TENSOR_TYPES",
    "TORCH_OPCODES",
    "allowed",
    "data_tier",
    "torch_allows",
]

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


# The opcodes torch.load(weights_only=True) reads (torch 2.13,
# torch/_weights_only_unpickler.py Unpickler.load); any other opcode is
# "Unsupported operand": FRAME, MEMOIZE, STACK_GLOBAL, SHORT_BINUNICODE and
# the bytes opcodes of protocols 3 to 5 among them.
_TORCH_OPS: Final = (
    "GLOBAL NEWOBJ REDUCE BUILD APPEND APPENDS SETITEM SETITEMS MARK TUPLE TUPLE1 TUPLE2 TUPLE3 NONE "
    "NEWFALSE NEWTRUE EMPTY_TUPLE EMPTY_LIST EMPTY_DICT EMPTY_SET BININT BININT1 BININT2 BINFLOAT BINUNICODE "
    "SHORT_BINSTRING BINPERSID BINGET LONG_BINGET BINPUT LONG_BINPUT LONG1 PROTO STOP"
)
TORCH_OPCODES: Final = frozenset(_TORCH_OPS.split())


def _table() -> dict[tuple[str, str], tuple[str, bool]]:
    table: dict[tuple[str, str], tuple[str, bool]] = {}
    for module, names, source, torch in _ROWS:
        for name in names.split():
            table[module, name] = (source, torch)
    return table


# (module, name) -> (source, whether torch.load(weights_only=True) accepts it)
ALLOWED: Final = MappingProxyType(_table())

# Rows whose safety depends on their arguments: the reader checks these
# (see _args).  A global that calls, imports or reads something it is given
# is accepted only when that thing is a literal of the stream or a global
# named here, reached directly.
NUMPY_DTYPE: Final = ("numpy", "dtype")
LOAD_FROM_BYTES: Final = ("torch.storage", "_load_from_bytes")
CODECS_ENCODE: Final = ("_codecs", "encode")
JOBLIB_WRAPPER: Final = ("joblib.numpy_pickle", "NumpyArrayWrapper")
JOBLIB_OLD_WRAPPERS: Final = frozenset(
    {("joblib.numpy_pickle", "NDArrayWrapper"), ("joblib.numpy_pickle_compat", "NDArrayWrapper")}
)
FROM_TYPE: Final = ("torch._tensor", "_rebuild_from_type_v2")
NEW_INDEX: Final = ("pandas.core.indexes.base", "_new_Index")
# _rebuild_from_type_v2(func, new_type, args, state) calls func(*args): func
# must be one of torch's tensor rebuild functions (not _load_from_bytes).
REBUILD_FUNCS: Final = frozenset(("torch._utils", n) for n in _REBUILD.split())
# Classes a tensor is made as (new_type, _rebuild_wrapper_subclass's cls).
TENSOR_TYPES: Final = frozenset({("torch", "Tensor"), ("torch.nn.parameter", "Parameter")})
# _reconstruct(subtype, shape, dtype) makes an ndarray of subtype, whose
# __array_finalize__ then runs: subtype must be one of these.
RECONSTRUCT: Final = frozenset(
    {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core._internal", "_reconstruct"),
    }
)
NDARRAY_TYPES: Final = frozenset({("numpy", "ndarray"), ("numpy", "matrix"), ("numpy.matrixlib.defmatrix", "matrix")})
# The types pickle's SETITEM(S) may fill (torch allows dict, OrderedDict and
# Counter; any other target runs its own __setitem__), and APPEND(S).
DICT_TYPES: Final = frozenset({("collections", "OrderedDict"), ("collections", "Counter"), ("builtins", "dict")})
LIST_TYPES: Final = frozenset({("collections", "deque")})
# Argument positions: backward hooks (stored on the tensor, called by
# backward(), expected empty: torch's Note [Don't serialize hooks]) and the
# state that _set_obj_state applies with setattr.
HOOKS_AT: Final = MappingProxyType(
    {
        ("torch._utils", "_rebuild_tensor_v2"): 5,
        ("torch._utils", "_rebuild_tensor_v3"): 5,
        ("torch._utils", "_rebuild_qtensor"): 6,
        ("torch._utils", "_rebuild_parameter"): 2,
        ("torch._utils", "_rebuild_parameter_with_state"): 2,
    }
)
STATE_AT: Final = MappingProxyType({("torch._utils", "_rebuild_parameter_with_state"): 3, FROM_TYPE: 3})

# -- the data tier ----------------------------------------------------------------
# Library constructors that rebuild data and call nothing taken from the
# file.  Unpickling a file that needs them runs that library's own code (so
# it is not "weights only", and torch.load(weights_only=True) refuses it),
# but no code of the file's choosing.  Each row was reviewed for its argument
# surface; a constructor that can call a callable taken from the stream does
# not belong here (functools.partial, copyreg._reconstructor,
# numpy.core._ufunc_reconstruct, pandas' _new_PeriodIndex are not).
_NP_MATRIX: Final = (
    "numpy/matrixlib/defmatrix.py matrix: an ndarray subclass, pickled by ndarray.__reduce__ as _reconstruct's subtype"
)
_NP_OLD: Final = "numpy/core/_internal.py _reconstruct: the name in pickles of ndarrays made before numpy 1.0"
_NP_BUFFER: Final = "numpy/_core/numeric.py _frombuffer: ndarray.__reduce_ex__ for pickle protocol 5"
_JOBLIB_OLD: Final = (
    "joblib/numpy_pickle_compat.py NDArrayWrapper.read: joblib < 0.10, the array is a sibling .npy (numpy.load)"
)
_PD_FRAME: Final = "pandas/core/generic.py NDFrame.__setstate__: object.__reduce_ex__ then BUILD with a dict"
_PD_INDEX: Final = "pandas/core/indexes/base.py Index.__reduce__ -> _new_Index(cls, d): cls.__new__(cls, **d)"
_PD_BLOCKS: Final = "pandas/_libs/internals.pyx BlockManager.__reduce__ and SharedBlock.__reduce__ -> _unpickle_block"
_SCIPY: Final = "scipy/sparse/_*.py: object.__reduce_ex__, then BUILD that updates __dict__ (coo: __setstate__)"
_BUILTIN_DATA: Final = (
    "builtin containers: dict and collections.deque.__reduce__ (Objects/dictobject.c, Modules/_collectionsmodule.c)"
)

_SPARSE_KINDS: Final = ("csr", "csc", "coo", "bsr", "dia", "lil")

# (module, space-separated names, what it rebuilds, source)
_DATA_ROWS: Final[tuple[tuple[str, str, str, str], ...]] = (
    ("numpy", "matrix", "numpy.matrix", _NP_MATRIX),
    ("numpy.matrixlib.defmatrix", "matrix", "numpy.matrix", _NP_MATRIX),
    ("numpy.core._internal", "_reconstruct", "numpy.ndarray", _NP_OLD),
    ("numpy._core.numeric", "_frombuffer", "numpy.ndarray", _NP_BUFFER),
    ("numpy.core.numeric", "_frombuffer", "numpy.ndarray", _NP_BUFFER),
    ("joblib.numpy_pickle", "NDArrayWrapper", "joblib.NDArrayWrapper", _JOBLIB_OLD),
    ("joblib.numpy_pickle_compat", "NDArrayWrapper", "joblib.NDArrayWrapper", _JOBLIB_OLD),
    ("pandas.core.frame", "DataFrame", "pandas.DataFrame", _PD_FRAME),
    ("pandas.core.series", "Series", "pandas.Series", _PD_FRAME),
    ("pandas.core.indexes.base", "_new_Index Index", "pandas.Index", _PD_INDEX),
    ("pandas.core.indexes.range", "RangeIndex", "pandas.RangeIndex", _PD_INDEX),
    ("pandas.core.internals.managers", "BlockManager SingleBlockManager", "pandas.DataFrame", _PD_BLOCKS),
    ("pandas._libs.internals", "_unpickle_block", "pandas.DataFrame", _PD_BLOCKS),
    *((f"scipy.sparse._{k}", f"{k}_matrix {k}_array", f"scipy.sparse.{k}_matrix", _SCIPY) for k in _SPARSE_KINDS),
    *((f"scipy.sparse.{k}", f"{k}_matrix", f"scipy.sparse.{k}_matrix", _SCIPY) for k in _SPARSE_KINDS),
    ("builtins", "dict", "dict", _BUILTIN_DATA),
    ("collections", "deque", "collections.deque", _BUILTIN_DATA),
)

# pandas index classes _new_Index may be given.
INDEX_TYPES: Final = frozenset({("pandas.core.indexes.base", "Index"), ("pandas.core.indexes.range", "RangeIndex")})
# What an object-dtype numpy array rebuilds: its elements are pickled in the stream.
OBJECT_ARRAY: Final = "numpy object array"


def _data_table() -> dict[tuple[str, str], tuple[str, str]]:
    table: dict[tuple[str, str], tuple[str, str]] = {}
    for module, names, rebuilds, source in _DATA_ROWS:
        for name in names.split():
            table[module, name] = (rebuilds, source)
    return table


# (module, name) -> (what it rebuilds, source)
DATA_TIER: Final = MappingProxyType(_data_table())


def data_tier(module: str, name: str) -> str | None:
    """What (module, name) rebuilds when it is a row of the data tier, else None."""
    row = DATA_TIER.get((module, name))
    return None if row is None else row[0]


def allowed(module: str, name: str) -> bool:
    """Whether (module, name) is a row of the allowlist."""
    return (module, name) in ALLOWED


def torch_allows(module: str, name: str) -> bool:
    """Whether torch.load(weights_only=True) accepts (module, name)."""
    row = ALLOWED.get((module, name))
    return row is not None and row[1]
