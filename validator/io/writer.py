# Strategy: serialise exactly as safetensors 0.8.0 does, then write
# atomically.  Each input (numpy array, torch tensor or a raw
# (dtype, shape, bytes) triple) is first reduced to a dtype name, a shape and
# a contiguous little-endian byte buffer; no tensor data is copied unless the
# input is big-endian, non-contiguous, on a device, or sub-byte and unpacked.
#
# Byte-for-byte rules of the reference serialiser (observed on 0.8.0):
# - tensors are ordered by dtype, the later dtypes of the reference's `Dtype`
#   enum first (U64, I64, F64, C64, F32, ... BOOL last), then by name bytes;
# - data offsets are cumulative in that order, with no gaps;
# - the header is compact JSON, `__metadata__` first, each entry as
#   {"dtype","shape","data_offsets"}, strings escaped as serde_json does
#   (`"`, `\`, control characters; nothing else), and padded with spaces to a
#   multiple of 8.
# Deviations, on purpose: the reference writes `__metadata__` keys in hash
# order, which changes from run to run; we sort them, so output is
# deterministic and equals the reference's whenever metadata has at most one
# key.  The reference writes the invalid header `{},"__metadata__":{}}` for no
# tensors and empty metadata; we write `{"__metadata__":{}}`.  The reference
# writes a tensor named `__metadata__`, which no reader can load; we refuse it.
#
# Before a byte is written, every header is checked for what safetensors
# 0.8.0 would still reject in it (see _check_readable), so the writer never
# produces a file the reference rejects.
#
# The file is written to a temporary file in the target's directory and then
# renamed over the target, so a reader that has the old file mapped keeps
# seeing the old bytes, and nobody ever sees a half-written file.  The
# temporary is named `.NAME.PID.XXXXXXXX.tmp`; a writer killed with SIGKILL
# leaves it behind, and the next save of NAME removes it once no process with
# that PID runs on this machine and it has not been written for a minute.
from __future__ import annotations

import contextlib
import errno
import gc
import json
import os
import re
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from validator._dtypes import DTYPE_BITS, DTYPES
from validator._errors import WriteError, WriteIOError
from validator._rules import MAX_HEADER_SIZE
from validator.io.subbyte import pack_subbyte

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["current_umask", "save", "serialize_items", "to_bytes", "write_file"]

_RANK: Final = {name: i for i, name in enumerate(DTYPES)}
_escape = json.encoder.encode_basestring
# A temporary of a dead writer is removed once it has not changed for this long.
_STALE_SECONDS: Final = 60.0
_U64: Final = 1 << 64


@dataclass(slots=True)
class _Item:
    name: str
    dtype: str
    shape: tuple[int, ...]
    data: Any  # a C-contiguous buffer of exactly nbytes bytes
    nbytes: int
    # (address space, first byte, end byte, layout) of the caller's memory,
    # for the shared-storage check; None when the input cannot alias.  An
    # array that owns its memory gets the space "own" and its id: only the
    # same object can alias it, unless views are saved too (see _shared).
    # The layout is (dtype, shape, byte strides), the same for a numpy array
    # and torch.from_numpy of it.
    extent: tuple[str, int, int, tuple[Any, ...]] | None = None
    source: Any = None


def _check_text(value: object, what: str) -> str:
    if not isinstance(value, str):
        msg = f"{what} must be a str, not {type(value).__name__}"
        raise WriteError(msg)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        msg = f"{what} {value!r} is not valid Unicode (it holds a lone surrogate)"
        raise WriteError(msg) from None
    return value


def _is_torch(value: object) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "untyped_storage")


def _byte_bounds(arr: Any) -> tuple[int, int]:  # noqa: ANN401
    try:
        from numpy.lib.array_utils import byte_bounds  # noqa: PLC0415 - numpy/torch load only when an input needs them
    except ImportError:  # numpy < 2
        import numpy as np  # noqa: PLC0415 - numpy/torch load only when an input needs them

        byte_bounds = np.byte_bounds  # type: ignore[attr-defined]  # noqa: NPY201 - the numpy < 2 spelling
    low, high = byte_bounds(arr)
    return low, high


_NP: dict[str, Any] = {}


def _numpy() -> dict[str, Any]:
    if not _NP:
        import numpy as np  # noqa: PLC0415 - numpy/torch load only when an input needs them

        from validator.io.dtypes_np import SUBBYTE, safetensors_dtype  # noqa: PLC0415 - numpy/torch load only when an input needs them

        _NP.update(
            np=np,
            SUBBYTE=SUBBYTE,
            safetensors_dtype=safetensors_dtype,
            dtypes={},
            ndarray=np.ndarray,
            uint8=np.dtype(np.uint8),
        )
    return _NP


def _address(arr: Any) -> tuple[int, int]:  # noqa: ANN401
    if arr.flags.c_contiguous:
        low = arr.__array_interface__["data"][0]
        return low, low + arr.nbytes
    return _byte_bounds(arr)


def _immutable(arr: Any) -> bool:  # noqa: ANN401
    """Whether ``arr`` views a ``bytes`` object: memory nobody can write.

    CPython shares one object for equal one-byte ``bytes``, so two unrelated
    ``np.frombuffer(b"\x05")`` arrays have the same address; saving both is
    no aliasing worth refusing."""
    base = arr.base
    while base is not None and hasattr(base, "base"):
        base = base.base
    return type(base) is bytes


def _from_numpy(name: str, arr: Any, track: bool) -> _Item:  # noqa: ANN401, FBT001
    mod = _numpy()
    dtype = mod["dtypes"].get(arr.dtype)
    if dtype is None:
        dtype = mod["dtypes"][arr.dtype] = mod["safetensors_dtype"](arr.dtype)
        if dtype is None:
            msg = f"tensor {name!r}: numpy dtype {arr.dtype} has no safetensors equivalent"
            raise WriteError(msg)
    shape = arr.shape
    extent = None
    if track and arr.size and not _immutable(arr):
        layout = (dtype, shape, arr.strides)
        if arr.base is None:
            extent = ("own", id(arr), id(arr) + 1, layout)
        else:
            low, high = _address(arr)
            extent = ("cpu", low, high, layout)
    if dtype in mod["SUBBYTE"]:
        if (arr.size * DTYPE_BITS[dtype]) % 8:
            msg = f"tensor {name!r}: {arr.size} {dtype} elements do not fill whole bytes"
            raise WriteError(msg)
        data = pack_subbyte(arr, dtype)
        return _Item(name, dtype, shape, data, data.nbytes, extent, arr)
    data = arr
    if arr.dtype.byteorder == ">":
        data = arr.astype(arr.dtype.newbyteorder("<"))
    elif not arr.flags.c_contiguous:
        data = mod["np"].ascontiguousarray(arr)
    if arr.nbytes >= _SMALL:  # written on its own: as bytes, or file.write copies element by element
        data = data.reshape(-1).view(mod["uint8"])
    return _Item(name, dtype, shape, data, arr.nbytes, extent, arr)


def _from_torch(name: str, tensor: Any) -> _Item:  # noqa: ANN401
    import torch  # noqa: PLC0415 - numpy/torch load only when an input needs them

    from validator.io.dtypes_torch import safetensors_dtype  # noqa: PLC0415 - numpy/torch load only when an input needs them

    if tensor.layout != torch.strided:
        msg = f"tensor {name!r} is sparse ({tensor.layout}); call .to_dense() first"
        raise WriteError(msg)
    dtype = safetensors_dtype(tensor.dtype)
    if dtype is None:
        msg = f"tensor {name!r}: torch dtype {tensor.dtype} has no safetensors equivalent"
        raise WriteError(msg)
    shape = tuple(tensor.shape)
    if dtype == "F4":
        # float4_e2m1fn_x2 packs two F4 values per element (low nibble first).
        shape = (*shape[:-1], shape[-1] * 2) if shape else (2,)
    extent = None
    if tensor.numel():
        span = sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride(), strict=True)) + 1
        low = tensor.data_ptr()
        size = tensor.element_size()
        layout = (dtype, shape, tuple(stride * size for stride in tensor.stride()))
        extent = (str(tensor.device), low, low + span * size, layout)
    if not tensor.numel():
        return _Item(name, dtype, shape, b"", 0, None)
    tensor = tensor.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    tensor = tensor.contiguous()
    data = tensor.reshape(-1).view(torch.uint8).numpy()
    return _Item(name, dtype, shape, data, data.nbytes, extent)


def _from_raw(name: str, value: tuple[Any, ...]) -> _Item:
    if len(value) != 3:
        msg = f"tensor {name!r}: a raw tensor is a (dtype, shape, bytes) triple"
        raise WriteError(msg)
    dtype, shape, data = value
    if dtype not in DTYPE_BITS:
        msg = f"tensor {name!r}: unknown dtype {dtype!r}"
        raise WriteError(msg)
    if not all(type(d) is int and d >= 0 for d in shape):
        msg = f"tensor {name!r}: shape {shape!r} is not a sequence of non-negative ints"
        raise WriteError(msg)
    numel = 1
    for d in shape:
        numel *= d
    bits = numel * DTYPE_BITS[dtype]
    try:
        view = memoryview(data).cast("B")
    except TypeError as exc:
        msg = f"tensor {name!r}: data must be a contiguous bytes-like object ({exc})"
        raise WriteError(msg) from None
    if bits % 8 or len(view) != bits // 8:
        msg = f"tensor {name!r}: shape {list(shape)} of {dtype} needs {bits / 8:g} bytes, got {len(view)}"
        raise WriteError(msg)
    return _Item(name, dtype, tuple(shape), view, len(view))


def _item(name: str, value: object, track: bool) -> _Item:  # noqa: FBT001
    if _NP and isinstance(value, _NP["ndarray"]):
        return _from_numpy(name, value, track)
    if isinstance(value, tuple):
        return _from_raw(name, value)
    if _is_torch(value):
        return _from_torch(name, value)
    if type(value).__module__ == "numpy" or hasattr(value, "__array_interface__"):
        import numpy as np  # noqa: PLC0415 - numpy/torch load only when an input needs them

        if isinstance(value, np.ndarray):
            _numpy()
            return _from_numpy(name, value, track)
    msg = (
        f"tensor {name!r}: cannot save a {type(value).__name__}; "
        "pass a numpy array, a torch tensor or a (dtype, shape, bytes) triple"
    )
    raise WriteError(msg)


def _shared(items: list[_Item], *, dedupe: bool) -> dict[str, str]:
    """Find inputs whose memory overlaps; return dropped -> kept on dedupe."""
    spaces = {i.extent[0] for i in items if i.extent is not None}
    if "own" in spaces and "cpu" in spaces:
        # Views are saved too: they may look into an owner, so compare owners
        # by address after all.
        for i in items:
            if i.extent is not None and i.extent[0] == "own":
                low, high = _address(i.source)
                i.extent = ("cpu", low, high, i.extent[3])
    placed = sorted(((i.extent, i.name) for i in items if i.extent is not None), key=lambda p: (p[0][0], p[0][1]))
    dropped: dict[str, str] = {}
    groups: list[list[tuple[tuple[str, int, int, tuple[Any, ...]], str]]] = []
    end = -1
    space = ""
    for extent, name in placed:
        if groups and extent[0] == space and extent[1] < end:
            groups[-1].append((extent, name))
            end = max(end, extent[2])
        else:
            groups.append([(extent, name)])
            space, end = extent[0], extent[2]
    for group in groups:
        if len(group) < 2:
            continue
        names = sorted(n for _, n in group)
        identical = all(e == group[0][0] for e, _ in group)
        if not dedupe or not identical:
            how = "are the same tensor" if identical else "overlap in memory"
            hint = "; pass dedupe=True to save one and record the others in metadata" if identical else ""
            listed = ", ".join(map(repr, names))
            msg = f"tensors {listed} {how}, so saving them would duplicate or split shared storage{hint}"
            raise WriteError(msg)
        for other in names[1:]:
            dropped[other] = names[0]
    return dropped


def _header(items: list[_Item], metadata: Mapping[str, str] | None) -> bytearray:
    """The length prefix and the padded header, built in place (one copy of the text)."""
    out = bytearray(b"\0\0\0\0\0\0\0\0{")
    sep = ""
    if metadata is not None:
        inner = ",".join(f"{_escape(k)}:{_escape(metadata[k])}" for k in sorted(metadata))
        out += f'"__metadata__":{{{inner}}}'.encode()
        sep = ","
    offset = 0
    for item in items:
        shape = ",".join(map(str, item.shape))
        end = offset + item.nbytes
        entry = (
            f'{sep}{_escape(item.name)}:{{"dtype":"{item.dtype}","shape":[{shape}],"data_offsets":[{offset},{end}]}}'
        )
        out += entry.encode()
        sep, offset = ",", end
    out += b"}"
    out += b" " * (-(len(out) - 8) % 8)
    out[:8] = (len(out) - 8).to_bytes(8, "little")
    return out


def current_umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:  # noqa: PTH123
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def serialize_items(
    tensors: Mapping[str, object],
    metadata: Mapping[str, str] | None,
    *,
    dedupe: bool,
    check_shared: bool = True,
) -> tuple[bytearray, list[_Item], dict[str, str]]:
    """Header bytes (prefix included), the ordered items and the dropped names.

    ``check_shared=False`` skips the shared-storage check (the caller has
    its own rule, as safetensors.numpy has none).  Raises WriteError for any
    input whose file safetensors 0.8.0 would reject.
    """
    # Many tensors make many small objects; see the same pause in the loader.
    paused = gc.isenabled()
    gc.disable()
    try:
        return _serialize(tensors, metadata, dedupe=dedupe, check_shared=check_shared)
    finally:
        if paused:
            gc.enable()


def _serialize(
    tensors: Mapping[str, object],
    metadata: Mapping[str, str] | None,
    *,
    dedupe: bool,
    check_shared: bool,
) -> tuple[bytearray, list[_Item], dict[str, str]]:
    if not hasattr(tensors, "items"):
        msg = f"tensors must be a mapping of names to tensors, not {type(tensors).__name__}"
        raise WriteError(msg)
    if metadata is not None:
        if not hasattr(metadata, "items"):
            msg = f"metadata must be a mapping of str to str, not {type(metadata).__name__}"
            raise WriteError(msg)
        for key, text in metadata.items():
            _check_text(key, "metadata key")
            _check_text(text, f"metadata value for {key!r}")
    items = []
    for raw_name, value in tensors.items():
        name = _check_text(raw_name, "tensor name")
        if name == "__metadata__":
            msg = "a tensor cannot be named '__metadata__': readers take that key for the metadata map"
            raise WriteError(msg)
        items.append(_item(name, value, check_shared))
    dropped = _shared(items, dedupe=dedupe) if check_shared else {}
    if dropped:
        items = [i for i in items if i.name not in dropped]
        merged = dict(metadata or {})
        for name, kept in dropped.items():
            merged.setdefault(name, kept)
        metadata = merged
    items.sort(key=lambda i: (-_RANK[i.dtype], i.name.encode("utf-8")))
    head = _header(items, metadata)
    _check_readable(head, items)
    return head, items, dropped


def _check_readable(head: bytearray, items: list[_Item]) -> None:
    """Refuse what safetensors 0.8.0 would reject in a header this writer made.

    The header is canonical by construction (names and metadata are valid
    Unicode, offsets are contiguous, each span matches its shape), so what is
    left of the reference's checks (read_metadata) is: the 100,000,000-byte
    limit, numbers that fit in 64 bits, and the element count and bit count,
    multiplied out left to right, that must not overflow 64 bits.
    """
    n = len(head) - 8
    if n > MAX_HEADER_SIZE:
        msg = (
            f"the header would be {n:,} bytes, over the {MAX_HEADER_SIZE:,}-byte limit of safetensors "
            "readers; save fewer tensors or less metadata per file (shard the checkpoint)"
        )
        raise WriteError(msg)
    end = 0
    for item in items:
        numel = 1
        for side in item.shape:
            numel *= side
            if numel >= _U64 or side >= _U64:
                msg = (
                    f"tensor {item.name!r}: safetensors 0.8.0 would reject this file: the element count of shape "
                    f"{list(item.shape)} overflows 64 bits (ST403 size-overflow)"
                )
                raise WriteError(msg)
        end += item.nbytes
        if numel * DTYPE_BITS[item.dtype] >= _U64 or end >= _U64:
            msg = (
                f"tensor {item.name!r}: safetensors 0.8.0 would reject this file: "
                "its size overflows 64 bits (ST403 size-overflow)"
            )
            raise WriteError(msg)


def to_bytes(
    tensors: Mapping[str, object],
    metadata: Mapping[str, str] | None = None,
    *,
    dedupe: bool = False,
    check_shared: bool = True,
) -> bytes:
    """The file ``save`` would write, as bytes (one copy of the tensor data)."""
    head, items, _ = serialize_items(tensors, metadata, dedupe=dedupe, check_shared=check_shared)
    return b"".join([head, *(i.data for i in items if i.nbytes)])


_SMALL: Final = 1 << 16
_CHUNK: Final = 1 << 20


def _write_data(out: Any, items: list[_Item]) -> None:  # noqa: ANN401 - a binary file
    """Write the tensors' bytes in order; small ones are joined into ~1 MiB chunks."""
    pending: list[Any] = []
    size = 0
    for item in items:
        if item.nbytes >= _SMALL:
            if pending:
                out.write(b"".join(pending))
                pending.clear()
                size = 0
            out.write(item.data)
        elif item.nbytes:
            pending.append(item.data)
            size += item.nbytes
            if size >= _CHUNK:
                out.write(b"".join(pending))
                pending.clear()
                size = 0
    if pending:
        out.write(b"".join(pending))


def save(
    tensors: Mapping[str, object],
    path: str | os.PathLike[str],
    metadata: Mapping[str, str] | None = None,
    *,
    dedupe: bool = False,
    fsync: bool = False,
) -> dict[str, str]:
    """Write ``tensors`` to ``path`` as a safetensors file, atomically.

    Values are numpy arrays (ml_dtypes types included; unpacked
    float4_e2m1fn / float6 arrays are packed as ``validator.open`` unpacks
    them), torch tensors (on any device), or raw ``(dtype, shape, bytes)``
    triples for any dtype, F4 and F6 included.  Big-endian and non-contiguous
    inputs are converted.  The bytes equal those of safetensors 0.8.0's
    ``serialize`` for the same input, except that ``metadata`` keys are
    sorted (the reference writes them in hash order).  Input that would make
    a file safetensors 0.8.0 rejects (a header over 100,000,000 bytes, an
    element count that overflows 64 bits) raises ``WriteError`` before
    anything is written.

    The file is written next to ``path`` and renamed over it, so readers of
    the old file (mappings included) are never corrupted; ``fsync=True``
    flushes the file to disk before the rename and the directory after it,
    so the new name survives a crash too.  A temporary left by a writer that
    was killed (``.NAME.PID.XXXXXXXX.tmp``) is removed by the next save of
    the same NAME once its process is gone and it is a minute old.

    Tensors that share or overlap memory raise ``WriteError``; with
    ``dedupe=True``, exact aliases are saved once and each dropped name is
    recorded in the metadata as ``{dropped: kept}``, as
    ``safetensors.torch.save_model`` does (``validator.open`` resolves those
    names).  Returns that ``{dropped: kept}`` map (empty when nothing was
    dropped).
    """
    head, items, dropped = serialize_items(tensors, metadata, dedupe=dedupe)
    write_file(os.fspath(path), head, items, fsync=fsync)
    return dropped


def write_file(target: str, head: bytes | bytearray, items: list[_Item], *, fsync: bool = False) -> None:
    """Write a serialised file atomically (see ``save``)."""
    directory = os.path.dirname(os.path.abspath(target))  # noqa: PTH100, PTH120
    base = os.path.basename(target)  # noqa: PTH119
    _remove_stale(directory, base)
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{base}.{os.getpid()}.", suffix=".tmp")
    except OSError as exc:
        msg = f"{target}: {exc.strerror or exc}"
        raise WriteIOError(msg, exc) from exc
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as out:
            out.write(head)
            _write_data(out, items)
            out.flush()
            try:
                mode = Path(target).stat().st_mode & 0o7777
            except FileNotFoundError:
                mode = 0o666 & ~current_umask()
            os.fchmod(out.fileno(), mode)
            if fsync:
                os.fsync(out.fileno())
        Path(tmp).replace(target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        msg = f"{target}: {exc.strerror or exc}"
        raise WriteIOError(msg, exc) from exc
    except BaseException:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        raise
    if fsync:
        _sync_directory(directory, target)


def _sync_directory(directory: str, target: str) -> None:
    """fsync the directory, so that the rename itself is on disk."""
    try:
        dfd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        msg = f"{target}: written, but its directory could not be opened to sync it: {exc.strerror or exc}"
        raise WriteIOError(msg, exc) from exc
    try:
        os.fsync(dfd)
    except OSError as exc:
        # Some file systems cannot sync a directory (EINVAL); nothing more can be done there.
        if exc.errno != errno.EINVAL:
            msg = f"{target}: written, but its directory could not be synced: {exc.strerror or exc}"
            raise WriteIOError(msg, exc) from exc
    finally:
        os.close(dfd)


def _pid_running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, as another user
        return True
    return True


def _remove_stale(directory: str, base: str) -> None:
    """Remove temporaries of ``base`` left by writers that were killed.

    Only names of our own pattern (``.BASE.PID.XXXXXXXX.tmp``), only regular
    files of this user, only when no process PID runs here and the file has
    not changed for a minute (on a file system shared by several machines a
    PID says nothing about another machine's writer; a live writer keeps its
    file's mtime fresh).
    """
    pattern = re.compile(re.escape(f".{base}.") + r"(\d+)\.[a-z0-9_]{8}\.tmp")
    try:
        entries = [e for e in os.scandir(directory) if e.name.startswith(f".{base}.") and e.name.endswith(".tmp")]
    except OSError:
        return
    now = time.time()
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None or _pid_running(int(match.group(1))):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and now - st.st_mtime >= _STALE_SECONDS:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)  # noqa: PTH108 - a DirEntry path
