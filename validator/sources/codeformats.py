# Strategy: the model formats besides pickles whose loading can run code or
# read outside the folder, judged statically, never loaded:
#
# - Keras: a `Lambda` layer carries its function as marshalled Python
#   bytecode, which `keras.models.load_model` (with safe_mode off, as
#   Keras 2 always was) turns back into code and runs.  A `.keras` file is
#   a zip whose `config.json` is the model's configuration; a legacy `.h5`
#   file keeps the same JSON in its root attribute `model_config`.  The
#   `.keras` config is parsed; the `.h5` file is searched (its first
#   _H5_SCAN bytes, where HDF5 keeps a root attribute) for the layer's
#   class name, and the enclosing JSON is decoded when it can be, to name
#   the layer.
# - ONNX: a tensor may keep its bytes in a file named by its
#   `external_data` entry `location`.  onnx's own checker refuses a location
#   that leaves the model's folder (an absolute path, `..`, or a link out of
#   it), as onnxruntime loads whatever it names.  The protobuf is walked
#   field by field over a read-only map, skipping the tensor bytes: ModelProto
#   graph (7) -> GraphProto initializer (5), sparse_initializer (15), node
#   (1) -> AttributeProto t (5), tensors (10), g (6), graphs (11) ->
#   TensorProto external_data (13) -> StringStringEntryProto key (1),
#   value (2).  Nesting and the fields read are bounded.
# Each check returns the findings' (slug, message) pairs; nothing raises on
# bad input, which is simply not judged further.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH117, PTH118, PTH120, PTH123
from __future__ import annotations

import json
import mmap
import os
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["keras_lambda_layers", "onnx_outside_locations"]

_H5_SCAN: Final = 64 << 20  # bytes of a .h5 file searched for its model_config
_CONFIG_MAX: Final = 64 << 20  # the largest .keras config.json read
_MAX_DEPTH: Final = 16  # graphs nested in node attributes
_MAX_FIELDS: Final = 10_000_000  # protobuf fields visited in one file
_ZIP_HEADS: Final = (b"PK\x03\x04", b"PK\x05\x06")
_LAMBDA_MARKERS: Final = (b'"class_name": "Lambda"', b'"class_name":"Lambda"')


def _lambda_names(config: object) -> Iterator[str]:
    """The names of the Lambda layers in a Keras config, depth first (iterative)."""
    stack = [config]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("class_name") == "Lambda":
                inner = node.get("config")
                name = inner.get("name") if isinstance(inner, dict) else None
                yield name if isinstance(name, str) else "(unnamed)"
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))


def _keras_config(fd: int) -> bytes | None:
    """A .keras zip's config.json (the last member of that name, as zipfile
    finds it), through the one ZIP reader; None when absent, too large or
    unreadable (the file's kind check names an archive it cannot open)."""
    from validator.formats import ArchiveError  # noqa: PLC0415 - only for a zip
    from validator.formats._zip import member_bytes, open_zip  # noqa: PLC0415 - as above

    with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as buf:
        try:
            named = [m for m in open_zip(buf).members if m.name == "config.json"]
            if not named or named[-1].size > _CONFIG_MAX:
                return None
            return member_bytes(buf, named[-1])
        except ArchiveError:
            return None


def keras_lambda_layers(path: str) -> list[str] | None:
    """The Lambda layers of a Keras `.keras` or `.h5` file, by name (an empty
    list: none), or None when the file is not a Keras model this can read."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
            if head.startswith(_ZIP_HEADS):
                config = _keras_config(fh.fileno())
                return None if config is None else list(_lambda_names(json.loads(config)))
            head += fh.read(_H5_SCAN - len(head))
    except (OSError, ValueError, RecursionError):
        return None
    if not head.startswith(b"\x89HDF\r\n\x1a\n"):
        return None
    found: list[str] = []
    for marker in _LAMBDA_MARKERS:
        at = head.find(marker)
        while at >= 0:
            found.append(_h5_layer_name(head, at))
            at = head.find(marker, at + 1)
    return found


def _h5_layer_name(head: bytes, at: int) -> str:
    """The name of the layer whose class name starts at ``at``: the JSON object
    opening just before it, decoded when it can be."""
    start = head.rfind(b"{", max(0, at - 64), at + 1)
    if start >= 0:
        try:
            layer, _ = json.JSONDecoder().raw_decode(head[start : start + (1 << 20)].decode("utf-8", "replace"))
        except ValueError:
            layer = None
        if isinstance(layer, dict):
            names = list(_lambda_names(layer))
            if names:
                return names[0]
    return "(unnamed)"


# -- ONNX ------------------------------------------------------------------------


def _varint(buf: memoryview, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def _fields(buf: memoryview) -> Iterator[tuple[int, int, memoryview | int]]:
    """(field number, wire type, value) of one protobuf message; raises ValueError when malformed."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
            yield number, wire, value
        elif wire == 2:
            size, i = _varint(buf, i)
            if i + size > len(buf):
                raise ValueError
            yield number, wire, buf[i : i + size]
            i += size
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError
        if i > len(buf):
            raise ValueError


# message kind -> {field number: kind of the embedded message}
_WALK: Final = {
    "model": {7: "graph"},
    "graph": {1: "node", 5: "tensor", 15: "sparse"},
    "node": {5: "attribute"},
    "attribute": {5: "tensor", 6: "graph", 10: "tensor", 11: "graph", 22: "sparse", 23: "sparse"},
    "sparse": {1: "tensor", 2: "tensor"},
    "tensor": {13: "entry"},
}


def _locations(data: memoryview) -> Iterator[str]:
    """Every external_data location in an ONNX model."""
    stack: list[tuple[str, memoryview, int]] = [("model", data, 0)]
    visited = 0
    while stack:
        kind, buf, depth = stack.pop()
        if kind == "entry":
            entry = {n: bytes(v) for n, w, v in _fields(buf) if w == 2 and isinstance(v, memoryview)}
            if entry.get(1) == b"location" and 2 in entry:
                yield entry[2].decode("utf-8", "replace")
            continue
        for number, wire, value in _fields(buf):
            visited += 1
            if visited > _MAX_FIELDS:
                raise ValueError
            inner = _WALK[kind].get(number)
            if inner is None or wire != 2 or not isinstance(value, memoryview):
                continue
            nested = depth + (inner == "graph")
            if nested > _MAX_DEPTH:
                raise ValueError
            stack.append((inner, value, nested))


def _leaves(folder: str, location: str) -> bool:
    if not location or os.path.isabs(location) or "\\" in location or "\0" in location:
        return True
    norm = os.path.normpath(location)
    if norm == ".." or norm.startswith(".." + os.sep):
        return True
    real = os.path.realpath(os.path.join(folder, norm))
    base = os.path.realpath(folder)
    return os.path.commonpath([real, base]) != base


def onnx_outside_locations(path: str) -> list[str] | None:
    """The external data locations of an ONNX model that leave its folder
    (an empty list: none), or None when the file cannot be read as ONNX."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                return None
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                view = memoryview(mapped)
                try:
                    found = list(dict.fromkeys(_locations(view)))
                finally:
                    view.release()
    except (OSError, ValueError, BufferError):
        return None
    folder = os.path.dirname(path) or "."
    return [loc for loc in found if _leaves(folder, loc)]
