# Strategy: the argument checks of the allowed globals whose safety depends
# on what they are given.  One function per kind of check, one table from
# (module, name) to its check.  A check returns why the call is refused, or
# None.  The rule for every row: whatever the global calls, imports or reads
# must be a literal of the stream or a global named in _allow, reached
# directly; anything computed, mutated after it was made, or reached through
# indirection is refused.  torch.storage._load_from_bytes, which reads a
# nested stream, is checked in _ops (it needs the reader).
from __future__ import annotations

from typing import TYPE_CHECKING, Final

from validator.pickles import _allow
from validator.pickles._dtypes import NUMPY_DTYPE, parse_code
from validator.pickles._values import Bytes, Call, Dict, Ref

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["check", "literal_bytes", "object_dtype", "plain_dict", "plain_state"]


def _arg(args: object, i: int) -> object:
    return args[i] if isinstance(args, tuple) and len(args) > i else None


def _is(value: object, keys: frozenset[tuple[str, str]]) -> bool:
    return isinstance(value, Ref) and value.rec.reason is None and value.rec.key in keys


def plain_dict(value: object) -> bool:
    """A dict whose every key is a plain, non-dunder name (setattr of it cannot change methods)."""
    if isinstance(value, Dict):
        return value.plain
    return (
        isinstance(value, Call)
        and value.func is not None
        and value.func.key in _allow.DICT_TYPES
        and value.plain
        and not value.built
        and (value.args == () or value.args is None)
    )


def plain_state(state: object) -> bool:
    """A state pickle's BUILD (or torch's _set_obj_state) may apply with setattr and __dict__ updates."""
    if state is None:
        return True
    if isinstance(state, tuple) and len(state) == 2:  # (dict state, slot state)
        return all(part is None or plain_dict(part) for part in state)
    return plain_dict(state)


def _empty(value: object) -> bool:
    # backward hooks: None, {} or OrderedDict() with nothing added
    if value is None:
        return True
    if isinstance(value, Dict):
        return not value.items and value.complete
    return plain_dict(value) and isinstance(value, Call) and not value.filled


def _dtype(args: object) -> str | None:
    code = _arg(args, 0)
    if not isinstance(code, str):
        return "its argument is not a plain dtype code"
    if parse_code(code) is None:
        return "a dtype code this reader does not know"
    return None


def _from_type(args: object) -> str | None:
    # torch._tensor._rebuild_from_type_v2(func, new_type, args, state): func(*args)
    if not _is(_arg(args, 0), _allow.REBUILD_FUNCS):
        return "its function argument is not one of torch's tensor rebuild functions named directly"
    if not _is(_arg(args, 1), _allow.TENSOR_TYPES):
        return "its type argument is not torch.Tensor or torch.nn.Parameter"
    if not isinstance(_arg(args, 2), tuple):
        return "its arguments are not a literal tuple"
    return None


def _tensor_class(args: object) -> str | None:
    # _rebuild_wrapper_subclass(cls, ...) makes an instance of cls
    return None if _is(_arg(args, 0), _allow.TENSOR_TYPES) else "its class is not torch.Tensor or torch.nn.Parameter"


def _reconstruct(args: object) -> str | None:
    # _reconstruct(subtype, shape, dtype): ndarray.__new__(subtype, ...), then subtype.__array_finalize__
    return None if _is(_arg(args, 0), _allow.NDARRAY_TYPES) else "its array type is not numpy.ndarray or numpy.matrix"


def _frombuffer(args: object) -> str | None:
    # numpy's _frombuffer(buf, dtype, shape, order): frombuffer(buf, dtype=dtype)
    dtype = _arg(args, 1)
    if not isinstance(dtype, Call) or dtype.func is None or dtype.func.key != NUMPY_DTYPE:
        return "its dtype is not a numpy.dtype call"
    return None


def _new_index(args: object) -> str | None:
    # pandas' _new_Index(cls, d): cls.__new__(cls, **d)
    if not _is(_arg(args, 0), _allow.INDEX_TYPES):
        return "its class is not pandas.Index or pandas.RangeIndex"
    return None if isinstance(_arg(args, 1), Dict) and plain_dict(_arg(args, 1)) else "its keywords are not a dict"


def _encode(args: object) -> str | None:
    if isinstance(args, tuple) and len(args) == 2 and isinstance(args[0], str) and args[1] in {"latin1", "latin-1"}:
        return None
    return "its arguments are not (text, 'latin1'): a codec of the stream's choosing"


def _hooks_and_state(key: tuple[str, str]) -> Callable[[object], str | None]:
    hooks, state = _allow.HOOKS_AT.get(key), _allow.STATE_AT.get(key)

    def check(args: object) -> str | None:
        if hooks is not None and not _empty(_arg(args, hooks)):
            return "its backward hooks are not empty: callables of the stream's choosing set on the tensor"
        if state is not None and not plain_state(_arg(args, state)):
            return "its state is not a dict of plain attribute names"
        return None

    return check


def _both(
    first: Callable[[object], str | None], then: Callable[[object], str | None]
) -> Callable[[object], str | None]:
    return lambda args: first(args) or then(args)


_CHECKS: Final[dict[tuple[str, str], Callable[[object], str | None]]] = {
    NUMPY_DTYPE: _dtype,
    _allow.CODECS_ENCODE: _encode,
    ("torch._utils", "_rebuild_wrapper_subclass"): _tensor_class,
    ("numpy._core.numeric", "_frombuffer"): _frombuffer,
    ("numpy.core.numeric", "_frombuffer"): _frombuffer,
    _allow.NEW_INDEX: _new_index,
    **dict.fromkeys(_allow.RECONSTRUCT, _reconstruct),
    **{key: _hooks_and_state(key) for key in {*_allow.HOOKS_AT, *_allow.STATE_AT}},
}
_CHECKS[_allow.FROM_TYPE] = _both(_from_type, _hooks_and_state(_allow.FROM_TYPE))


def check(key: tuple[str, str], args: object) -> str | None:
    """Why calling the allowed global ``key`` with ``args`` is refused, or None."""
    fn = _CHECKS.get(key)
    return None if fn is None else fn(args)


def object_dtype(args: object) -> bool:
    """Whether numpy.dtype(*args) is the object kind (its array's elements are pickled in the stream)."""
    code = _arg(args, 0)
    parsed = parse_code(code) if isinstance(code, str) else None
    return parsed is not None and parsed[0] == "O"


def literal_bytes(value: object) -> bool:
    """Immutable bytes written in the stream (not a bytearray, which SETITEMS can change)."""
    return isinstance(value, Bytes) and not value.mutable
