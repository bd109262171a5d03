"""``safetensors.torch``, validating.

save, save_file, load, load_file, save_model and load_model, with the
helpers other libraries import (storage_ptr, storage_size,
_find_shared_tensors, _remove_duplicate_names, _is_complete, _end_ptr).
Tensors sharing storage are refused by ``save_file`` and resolved by
``save_model``/``load_model`` exactly as safetensors 0.8.0 does.  Every load
validates first; pass ``profile="reference"`` to load what 0.8.0 loads.
"""

# Strategy: the shared-storage rules are the reference's, restated: tensors
# are grouped by (device, storage address, storage size), then each group is
# split where, sorted by address, a tensor starts at or after the end of the
# one before it.  A group of more than one name is refused by save/save_file;
# save_model keeps one name per group that covers its whole storage and
# records every other name in the metadata as {dropped: kept}.
from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Final

from validator._errors import WriteError
from validator._findings import TensorInfo
from validator.compat._errors import (
    CompatLoadError,
    SaveRuntimeError,
    SaveValueError,
    SerializeError,
    non_contiguous,
)
from validator.compat._open import _float4, safe_open
from validator.compat._serialize import DTYPE_CODES, check_metadata, copied, write_items
from validator.io._extras import needs_extra
from validator.io._mapping import ELEMENT_BYTES, gc_paused
from validator.io.dtypes_torch import torch_dtype
from validator.io.writer import to_bytes

with needs_extra("validator.compat.torch"):  # an error that names the extra, not a bare ModuleNotFoundError
    import torch

if TYPE_CHECKING:
    import os

    from validator._rules import Profile
    from validator.io._mapping import Row

# safetensors dtype -> torch dtype, for the byte-sized dtypes this torch has.
_DTYPES: Final = {
    name: found for name, size in ELEMENT_BYTES.items() if size and (found := torch_dtype(name)) is not None
}

__all__ = [
    "load",
    "load_file",
    "load_model",
    "save",
    "save_file",
    "save_model",
    "storage_ptr",
    "storage_size",
]


def storage_ptr(tensor: torch.Tensor) -> int:
    """The address of the storage ``tensor`` views (0 where it has none, as on "meta")."""
    try:
        return int(tensor.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):
        return 0


def storage_size(tensor: torch.Tensor) -> int:
    """The size in bytes of the storage ``tensor`` views."""
    try:
        return int(tensor.untyped_storage().nbytes())
    except (RuntimeError, NotImplementedError):
        return tensor.nelement() * tensor.element_size()


def _end_ptr(tensor: torch.Tensor) -> int:
    """One past the address of ``tensor``'s last element (its start when empty)."""
    if not tensor.nelement():
        return int(tensor.data_ptr())
    last = sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride(), strict=True))
    return int(tensor.data_ptr()) + (last + 1) * tensor.element_size()


def _filter_shared_not_shared(tensors: list[set[str]], state_dict: dict[str, torch.Tensor]) -> list[set[str]]:
    """Split each group of names on one storage where their bytes do not overlap.

    As in safetensors 0.8.0, a tensor starts a new group when it begins at or
    after the end of the tensor sorted just before it.
    """
    out: list[set[str]] = []
    for group in tensors:
        if len(group) < 2:
            out.append(group)
            continue
        areas = sorted((state_dict[name].data_ptr(), _end_ptr(state_dict[name]), name) for name in group)
        previous_stop = None
        for start, stop, name in areas:
            if previous_stop is not None and start < previous_stop:
                out[-1].add(name)
            else:
                out.append({name})
            previous_stop = stop
    return out


def _find_shared_tensors(state_dict: dict[str, torch.Tensor]) -> list[set[str]]:
    """Groups of names whose tensors share memory (singletons included; "meta" left out)."""
    by_storage: dict[tuple[Any, int, int], set[str]] = defaultdict(set)
    meta = torch.device("meta")
    for name, tensor in state_dict.items():
        if tensor.device != meta and storage_ptr(tensor) != 0 and storage_size(tensor) != 0:
            by_storage[(tensor.device, storage_ptr(tensor), storage_size(tensor))].add(name)
    return _filter_shared_not_shared(sorted(by_storage.values()), state_dict)  # type: ignore[type-var,unused-ignore]  # sets, sorted as the reference does


def _is_complete(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` covers its whole storage, from its first byte."""
    return tensor.data_ptr() == storage_ptr(tensor) and tensor.nelement() * tensor.element_size() == storage_size(
        tensor
    )


def _remove_duplicate_names(
    state_dict: dict[str, torch.Tensor],
    *,
    preferred_names: list[str] | None = None,
    discard_names: list[str] | None = None,
) -> dict[str, list[str]]:
    """For each group of names sharing memory: ``{kept: [dropped, ...]}``.

    The kept name covers the whole storage: the first in sorted order, among
    ``preferred_names`` if any qualifies, else among the names not in
    ``discard_names`` if any.  A group where no name covers the storage
    raises RuntimeError.
    """
    preferred = set(preferred_names or [])
    discard = set(discard_names or [])
    to_remove: dict[str, list[str]] = defaultdict(list)
    for shared in _find_shared_tensors(state_dict):
        complete = {name for name in shared if _is_complete(state_dict[name])}
        if not complete:
            msg = (
                "Error while trying to find names to remove to save state dict, but found no suitable name to keep"
                f" for saving amongst: {shared}. None is covering the entire storage.Refusing to save/load the model"
                " since you could be storing much more memory than needed. Please refer to"
                " https://huggingface.co/docs/safetensors/torch_shared_tensors for more information. Or open an"
                " issue."
            )
            raise SaveRuntimeError(msg)
        candidates = (preferred & complete) or (complete - discard) or complete
        keep = min(candidates)
        to_remove[keep].extend(name for name in sorted(shared) if name != keep)
    return to_remove


def _check_for_save(tensors: object) -> dict[str, torch.Tensor]:  # noqa: C901 - one branch per refusal the reference makes, in its order
    if not isinstance(tensors, dict):
        msg = f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}"
        raise SaveValueError(msg)
    sparse = []
    for name, value in tensors.items():
        if not isinstance(value, torch.Tensor):
            msg = f"Key `{name}` is invalid, expected torch.Tensor but received {type(value)}"
            raise SaveValueError(msg)
        if value.layout != torch.strided:
            sparse.append(name)
    if sparse:
        msg = (
            f"You are trying to save a sparse tensors: `{sparse}` which this library does not support."
            " You can make it a dense tensor before saving with `.to_dense()` but be aware this might"
            " make a much larger file than needed."
        )
        raise SaveValueError(msg)
    failing = [names for names in _find_shared_tensors(tensors) if len(names) > 1]
    if failing:
        msg = (
            "Some tensors share memory, this will lead to duplicate memory on disk and potential differences "
            f"when loading them again: {failing}. A potential way to correctly save your model is to use "
            "`save_model`. More information at https://huggingface.co/docs/safetensors/torch_shared_tensors"
        )
        raise SaveRuntimeError(msg)
    for name, value in tensors.items():
        if not value.is_contiguous():
            raise SaveValueError(non_contiguous(name))
        if value.device.type == "meta":
            value.to("cpu")  # raises torch's own "Cannot copy out of meta tensor", as the reference does
        dtype = str(value.dtype).split(".")[-1]
        if dtype not in DTYPE_CODES:
            msg = f'Unknown dtype "{dtype}". Supported dtypes: {", ".join(DTYPE_CODES)}'
            raise SerializeError(msg)
    return tensors


def save(tensors: dict[str, torch.Tensor], metadata: dict[str, str] | None = None) -> bytes:
    """The safetensors file of ``tensors`` as bytes (contiguous, dense, unshared tensors)."""
    checked = _check_for_save(tensors)
    check_metadata(metadata)
    try:
        return to_bytes(checked, metadata, check_shared=False)
    except WriteError as exc:
        raise SerializeError(f"Error while serializing: {exc}") from exc


def save_file(
    tensors: dict[str, torch.Tensor],
    filename: str | os.PathLike[str],
    metadata: dict[str, str] | None = None,
) -> None:
    """Write ``tensors`` to ``filename`` as a safetensors file, atomically."""
    checked = _check_for_save(tensors)
    check_metadata(metadata)
    write_items(checked, filename, metadata, check_shared=False)


def load_file(
    filename: str | os.PathLike[str],
    device: str | int = "cpu",
    *,
    backend: str = "mmap",
    profile: Profile | str = "strict",
) -> dict[str, torch.Tensor]:
    """Validate ``filename`` and load every tensor (zero-copy on the CPU)."""
    with safe_open(filename, framework="pt", device=device, backend=backend, profile=profile) as f:
        return f.get_tensors()


def load(data: bytes, *, profile: Profile | str = "strict") -> dict[str, torch.Tensor]:
    """Validate a file held in memory and return its tensors (writable, one copy in all)."""
    with gc_paused():
        return _tensors(*copied(data, profile))


def _tensors(batch: list[Row], buffer: Any) -> dict[str, torch.Tensor]:  # noqa: ANN401 - a numpy array
    frombuffer, dtypes, out = torch.frombuffer, _DTYPES, {}
    for name, code, shape, begin, end in batch:
        dtype = dtypes.get(code)
        size = ELEMENT_BYTES[code]
        if dtype is not None and end > begin and not begin % size:
            flat = frombuffer(buffer, dtype=dtype, count=(end - begin) // size, offset=begin)
            out[name] = flat if len(shape) == 1 else flat.reshape(shape)
        else:
            out[name] = _tensor(name, buffer, TensorInfo(code, shape, (begin, end)))
    return out


def _tensor(name: str, buffer: Any, info: TensorInfo) -> torch.Tensor:  # noqa: ANN401 - a numpy uint8 array
    if info.bits % 8:
        if info.dtype != "F4":
            msg = f"Dtype not understood: {info.dtype}"
            raise CompatLoadError(msg)
        raw = torch.frombuffer(buffer, dtype=torch.uint8, count=info.nbytes, offset=info.begin)
        return _float4(raw, info)  # type: ignore[no-any-return]
    dtype = torch_dtype(info.dtype)
    if dtype is None:
        msg = f"tensor {name!r}: this torch ({torch.__version__}) has no dtype for {info.dtype}"
        raise CompatLoadError(msg)
    if info.numel == 0:
        try:
            return torch.empty(info.shape, dtype=dtype)
        except (RuntimeError, TypeError, OverflowError):
            msg = f"tensor {name!r} is empty but its shape {list(info.shape)} is too large for a torch tensor"
            raise CompatLoadError(msg) from None
    raw = torch.frombuffer(buffer, dtype=torch.uint8, count=info.nbytes, offset=info.begin)
    return raw.clone().view(dtype).reshape(info.shape)  # misaligned: an aligned copy


def save_model(
    model: torch.nn.Module,
    filename: str | os.PathLike[str],
    metadata: dict[str, str] | None = None,
    force_contiguous: bool = True,  # noqa: FBT001, FBT002 - the reference's signature
) -> None:
    """Save ``model``'s state dict, storing tensors that share memory once.

    Each dropped name is recorded in the metadata as ``{dropped: kept}``
    (keys the caller set are kept); ``validator.open`` resolves those names.
    The caller's ``metadata`` dict is not modified.
    """
    state_dict = model.state_dict()
    merged = dict(metadata) if metadata is not None else None
    for kept, dropped in _remove_duplicate_names(state_dict).items():
        for name in dropped:
            if merged is None:
                merged = {}
            merged.setdefault(name, kept)
            del state_dict[name]
    if force_contiguous:
        state_dict = {name: tensor.contiguous() for name, tensor in state_dict.items()}
    try:
        save_file(state_dict, filename, metadata=merged)
    except ValueError as exc:
        msg = f"{exc} Or use save_model(..., force_contiguous=True), read the docs for potential caveats."
        raise SaveValueError(msg) from exc


def load_model(
    model: torch.nn.Module,
    filename: str | os.PathLike[str],
    strict: bool = True,  # noqa: FBT001, FBT002 - the reference's signature
    device: str | int = "cpu",
    *,
    backend: str = "mmap",
    profile: Profile | str = "strict",
) -> tuple[list[str], list[str]]:
    """Load a file into ``model``; return ``(missing, unexpected)`` names.

    Names the model shares with a name found in the file count as loaded.
    With ``strict``, any missing or unexpected name raises RuntimeError.
    """
    state_dict = load_file(filename, device=device, backend=backend, profile=profile)
    to_removes = _remove_duplicate_names(model.state_dict(), preferred_names=list(state_dict))
    missing_list, unexpected = model.load_state_dict(state_dict, strict=False)
    missing = set(missing_list)
    for dropped in to_removes.values():
        for name in dropped:
            if name in missing:
                missing.remove(name)
            else:
                unexpected.append(name)
    if strict and (missing or unexpected):
        error = f"Error(s) in loading state_dict for {model.__class__.__name__}:"
        if missing:
            error += "\n    Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(missing))
        if unexpected:
            error += "\n    Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(unexpected))
        raise RuntimeError(error)
    return missing, unexpected  # type: ignore[return-value]  # a set, as the reference returns
