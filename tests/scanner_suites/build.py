# Strategy: a recipe names a file as data (the container, then the pickle
# streams inside it), and this module turns that description into bytes with
# its own pickle opcode assembler.  Two ways to say a stream:
#
# - Stream(value, protocol): a value tree (literals, Ref to a global, Call of a
#   callable with arguments, New, Build) spelled the way pickle.dumps spells
#   the object whose __reduce__ gives that tree: GLOBAL below protocol 4,
#   STACK_GLOBAL and one FRAME from 4, `__builtin__` for `builtins` below 3,
#   and the memo (PUT, BINPUT, MEMOIZE, and GETs for a repeated name): the
#   bytes equal pickle.dumps's (a test checks it).
# - Ops(ops): an opcode list, for the hand-assembled cases (bad memo keys, a
#   FRAME that lies, junk after STOP).
# Benign builtin data (Dumps) is written by pickle.dumps itself: its framing
# of large values is what some cases are about, and it calls nothing.
#
# Containers use the standard library only to wrap benign structure around a
# stream (zipfile, gzip, bz2, lzma); the 7z archive and torch.save's layouts
# are written here.  The defects a scanner's case
# plants (flag bits, a renamed member, a broken CRC) are patched in afterwards
# by offset, so what is broken is exactly what the recipe says.
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import math
import pickle
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import Final, TypeAlias

# -- the value tree --------------------------------------------------------------


@dataclass(frozen=True)
class Ref:
    """A global, ``module.name`` (``name`` may be dotted, as pickle 4 allows)."""

    module: str
    name: str


@dataclass(frozen=True)
class Call:
    """``func(*args)``: the func, the args tuple, REDUCE."""

    func: Value
    args: tuple[Value, ...] = ()


@dataclass(frozen=True)
class New:
    """``cls.__new__(cls, *args)`` through NEWOBJ (protocol 2 and up)."""

    cls: Ref
    args: tuple[Value, ...] = ()


@dataclass(frozen=True)
class Build:
    """``obj`` then ``state``, BUILD (``__setstate__`` or a dict update)."""

    obj: Value
    state: Value


@dataclass(frozen=True)
class Persistent:
    """A persistent id (BINPERSID): how torch.save refers to a storage from its pickle."""

    pid: Value


Value: TypeAlias = "bool | int | str | bytes | tuple[Value, ...] | list[Value] | dict[str, Value] | Ref | Call | New | Build | Persistent | None"

# -- streams ---------------------------------------------------------------------


@dataclass(frozen=True)
class Stream:
    """``values`` pickled at ``protocol`` as pickle.dumps lays out one value:
    PROTO, one FRAME from protocol 4, the memo, STOP.  Several values stay on
    the stack at STOP (a pickler that injects objects before the real one);
    ``memo`` and ``frame`` off give the bare layout of a hand-assembled case."""

    value: Value
    protocol: int = 4
    before: tuple[Value, ...] = ()
    memo: bool = True
    frame: bool = True


Op: TypeAlias = "tuple[str] | tuple[str, object]"


@dataclass(frozen=True)
class Ops:
    """An opcode list: ``("PROTO", 4)``, ``("GLOBAL", "os system")``, ``("RAW", b"...")``."""

    ops: tuple[Op, ...]


@dataclass(frozen=True)
class Dumps:
    """``pickle.dumps(value, protocol)`` of builtin data (no globals): for the
    suites' benign cases, whose exact framing (large bytes left out of
    frames) is the point."""

    value: object
    protocol: int = 4


@dataclass(frozen=True)
class Concat:
    """Several streams back to back (pickle.load called again and again)."""

    parts: tuple[Body, ...]


Body: TypeAlias = "Stream | Ops | Dumps | Concat | bytes"

# -- containers ------------------------------------------------------------------


@dataclass(frozen=True)
class Plain:
    """The stream is the whole file."""

    body: Body


@dataclass(frozen=True)
class Zip:
    """A zip of ``(member name, body)``; ``flag_bits`` OR-ed into the first
    member's local and central headers; ``rename_local`` changes the first
    member's name in its local header only; ``corrupt`` replaces the first
    occurrence of bytes in the stored data, leaving the CRC stale."""

    members: tuple[tuple[str, Body], ...]
    compression: int = zipfile.ZIP_STORED
    flag_bits: int = 0
    rename_local: str | None = None
    corrupt: tuple[bytes, bytes] | None = None


@dataclass(frozen=True)
class Npy:
    """A ``.npy``: the header dict's descr and shape, then the body (an object
    array's pickle, or raw element bytes)."""

    descr: str
    shape: tuple[int, ...]
    body: Body


@dataclass(frozen=True)
class Npz:
    """A ``.npz``: ``np.savez``'s zip of ``name.npy`` members."""

    members: tuple[tuple[str, Npy], ...]
    compressed: bool = False


@dataclass(frozen=True)
class TorchZip:
    """``torch.save``'s zip, laid out by torch's own writer: ``{root}/data.pkl``
    beside its byteorder, version, format records and ``{root}/data/{key}``
    storages."""

    data_pkl: Body
    root: str = "archive"
    storages: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True)
class Compressed:
    """A stream under ``gzip``, ``bz2`` or ``xz``."""

    method: str
    body: Body


@dataclass(frozen=True)
class SevenZip:
    """A one-member 7z archive, the member stored with the Copy coder."""

    member: str
    body: Body


@dataclass(frozen=True)
class TorchSave:
    """The file ``torch.save`` writes for a state dict of float32 tensors
    ``(name, shape, values)``: the zip form, or the legacy stream (magic
    number, protocol version, sys_info, the object, the storage keys, then
    each storage as its element count and bytes)."""

    tensors: tuple[tuple[str, tuple[int, ...], tuple[float, ...]], ...] = (
        ("weight", (2, 3), (0.0, 1.0, 2.0, 3.0, 4.0, 5.0)),
        ("bias", (2,), (0.0, 0.0)),
    )
    legacy: bool = False


Container: TypeAlias = "Plain | Zip | Npy | Npz | TorchZip | Compressed | SevenZip | TorchSave"


@dataclass(frozen=True)
class Recipe:
    """One scanner-suite case.

    ``expected`` is what stcheck must say: "error" (a finding at error
    severity: loading runs code, or cannot be judged), "warning" (at least a
    warning: an archive stcheck cannot read), "clean" (no error; a warning
    such as ST705 is allowed).  ``label`` is the suite's own word ("malicious"
    or "safe"); ``reason`` says why stcheck's expectation differs from it, or
    what the case is about when that is not obvious from ``calls``.
    """

    id: str
    suite: str
    provenance: str
    name: str
    container: Container
    calls: str
    label: str
    expected: str
    reason: str = ""
    cli: bool = False


# -- the assembler ---------------------------------------------------------------

_ARG_LINE = frozenset({"INT", "LONG", "FLOAT", "PUT", "GET", "STRING"})  # decimal or repr, then \n


def assemble(ops: tuple[Op, ...]) -> bytes:
    """The bytes of an opcode list (each opcode named as in the pickle module)."""
    out = bytearray()
    for op in ops:
        name, arg = op[0], op[1] if len(op) > 1 else None
        if name == "RAW":
            assert isinstance(arg, bytes)
            out += arg
            continue
        out += getattr(pickle, name)
        out += _operand(name, arg)
    return bytes(out)


def _operand(name: str, arg: object) -> bytes:
    if arg is None:
        return b""
    if name in {"PROTO", "BININT1", "BINPUT", "BINGET"}:
        assert isinstance(arg, int)
        return bytes([arg])
    if name == "BININT2":
        assert isinstance(arg, int)
        return struct.pack("<H", arg)
    if name in {"BININT", "LONG_BINPUT", "LONG_BINGET"}:
        assert isinstance(arg, int)
        return struct.pack("<i" if name == "BININT" else "<I", arg)
    if name == "FRAME":
        assert isinstance(arg, int)
        return struct.pack("<Q", arg)
    if name in {"GLOBAL", "INST"}:
        assert isinstance(arg, str)
        module, name_ = arg.split(" ", 1)
        return f"{module}\n{name_}\n".encode()
    if name == "UNICODE":
        # raw-unicode-escape leaves these bytes as they are, and one of them
        # would end the line early: pickle writes them as \uXXXX escapes.
        assert isinstance(arg, str)
        for char in "\\\0\n\r\x1a":
            arg = arg.replace(char, f"\\u{ord(char):04x}")
        return arg.encode("raw-unicode-escape") + b"\n"
    if name == "STRING":
        return repr(arg).encode() + b"\n"
    if name in _ARG_LINE:
        return str(arg).encode() + b"\n"
    if name == "SHORT_BINUNICODE":
        assert isinstance(arg, str)
        raw = arg.encode()
        return bytes([len(raw)]) + raw
    if name == "BINUNICODE":
        assert isinstance(arg, str)
        raw = arg.encode()
        return struct.pack("<I", len(raw)) + raw
    if name in {"SHORT_BINBYTES", "BINBYTES"}:
        assert isinstance(arg, bytes)
        return (bytes([len(arg)]) if name == "SHORT_BINBYTES" else struct.pack("<I", len(arg))) + arg
    msg = f"no operand encoder for {name}"
    raise ValueError(msg)


def value_ops(value: Value, proto: int, *, memoise: bool = True) -> tuple[Op, ...]:
    """The opcodes that push ``value`` at protocol ``proto`` (no PROTO, FRAME or STOP),
    memoised where pickle.dumps memoises (strings, bytes, containers, globals, call results)."""
    return tuple(_Writer(proto, memoise=memoise).push(value))


class _Writer:
    """pickle.dumps's layout of a value tree, with its memo numbering.  pickle
    reuses a memo entry for the same object; here equal strings and globals
    count as the same object, as they are in the suites' objects (interned
    names, one function object)."""

    def __init__(self, proto: int, *, memoise: bool = True) -> None:
        self.proto = proto
        self.memoise = memoise
        self.next = 0
        self.seen: dict[object, int] = {}

    def memo_get(self, key: object) -> list[Op] | None:
        at = self.seen.get(key)
        if at is None:
            return None
        if self.proto == 0:
            return [("GET", at)]
        return [("BINGET", at) if at < 256 else ("LONG_BINGET", at)]

    def remember(self, key: object, ops: list[Op]) -> list[Op]:
        if self.memoise:
            self.seen[key] = self.next - 1
        return ops

    def memo(self) -> tuple[Op, ...]:
        if not self.memoise:
            return ()
        at, self.next = self.next, self.next + 1
        if self.proto >= 4:
            return (("MEMOIZE",),)
        if self.proto >= 1:
            return ((("BINPUT", at) if at < 256 else ("LONG_BINPUT", at)),)
        return (("PUT", at),)

    def push(self, value: Value) -> list[Op]:
        proto = self.proto
        if value is None:
            return [("NONE",)]
        if isinstance(value, bool):
            return [("NEWTRUE",) if value else ("NEWFALSE",)] if proto >= 2 else [("INT", "01" if value else "00")]
        if isinstance(value, int):
            if proto == 0:
                return [("INT", value)]
            if 0 <= value < 256:
                return [("BININT1", value)]
            if 0 <= value < 65536:
                return [("BININT2", value)]
            return [("BININT", value)]
        if isinstance(value, str):
            again = self.memo_get(("str", value))
            if again is not None:
                return again
            if proto == 0:
                op: Op = ("UNICODE", value)
            elif proto >= 4 and len(value.encode()) < 256:
                op = ("SHORT_BINUNICODE", value)
            else:
                op = ("BINUNICODE", value)
            return self.remember(("str", value), [op, *self.memo()])
        if isinstance(value, bytes):
            assert proto >= 3, "bytes need protocol 3"
            again = self.memo_get(("bytes", value))
            if again is not None:
                return again
            op = ("SHORT_BINBYTES" if len(value) < 256 else "BINBYTES", value)
            return self.remember(("bytes", value), [op, *self.memo()])
        if isinstance(value, tuple):
            if not value:
                return [("EMPTY_TUPLE",)] if proto >= 1 else [("MARK",), ("TUPLE",)]
            items = [op for item in value for op in self.push(item)]
            if proto >= 2 and len(value) <= 3:
                return [*items, (("TUPLE1", "TUPLE2", "TUPLE3")[len(value) - 1],), *self.memo()]
            return [("MARK",), *items, ("TUPLE",), *self.memo()]
        if isinstance(value, list):
            return self._container([(item,) for item in value], ("EMPTY_LIST",), ("LIST",), "APPEND")
        if isinstance(value, dict):
            return self._container(list(value.items()), ("EMPTY_DICT",), ("DICT",), "SETITEM")
        if isinstance(value, Ref):
            again = self.memo_get(value)
            if again is not None:
                return again
            if proto >= 4:
                ops = [*self.push(value.module), *self.push(value.name), ("STACK_GLOBAL",), *self.memo()]
                return self.remember(value, ops)
            module = "__builtin__" if value.module == "builtins" and proto < 3 else value.module
            return self.remember(value, [("GLOBAL", f"{module} {value.name}"), *self.memo()])
        if isinstance(value, Persistent):
            assert proto >= 1, "BINPERSID needs protocol 1"
            return [*self.push(value.pid), ("BINPERSID",)]
        if isinstance(value, Call):
            return [*self.push(value.func), *self.push(value.args), ("REDUCE",), *self.memo()]
        if isinstance(value, New):
            assert proto >= 2, "NEWOBJ needs protocol 2"
            return [*self.push(value.cls), *self.push(value.args), ("NEWOBJ",), *self.memo()]
        if isinstance(value, Build):
            return [*self.push(value.obj), *self.push(value.state), ("BUILD",)]
        msg = f"cannot pickle {value!r}"
        raise TypeError(msg)

    def _container(self, items: list[tuple[Value, ...]], empty: Op, marked: Op, add: str) -> list[Op]:
        # The container is memoised while empty, then filled: one item with
        # APPEND/SETITEM, more in one MARK ... APPENDS/SETITEMS batch
        # (protocol 0 adds them one by one).
        head: list[Op] = [("MARK",), marked, *self.memo()] if self.proto == 0 else [empty, *self.memo()]
        pushed = [[op for part in item for op in self.push(part)] for item in items]
        if self.proto == 0:
            return [*head, *(op for item in pushed for op in (*item, (add,)))]
        if len(pushed) == 1:
            return [*head, *pushed[0], (add,)]
        if pushed:
            return [*head, ("MARK",), *(op for item in pushed for op in item), (add + "S",)]
        return head


def framed(ops: tuple[Op, ...], protocol: int = 4) -> Ops:
    """PROTO, one FRAME holding ``ops`` and STOP, as a pickler at ``protocol`` frames them."""
    body = assemble((*ops, ("STOP",)))
    return Ops((("PROTO", protocol), ("FRAME", len(body)), ("RAW", body)))


def stream_bytes(stream: Stream) -> bytes:
    """``stream`` as pickle.dumps lays out its object: PROTO, one FRAME from protocol 4, STOP."""
    writer = _Writer(stream.protocol, memoise=stream.memo)
    ops = [op for value in (*stream.before, stream.value) for op in writer.push(value)]
    body = assemble((*ops, ("STOP",)))
    if stream.protocol < 2:
        return body
    head = assemble((("PROTO", stream.protocol),))
    if stream.frame and stream.protocol >= 4 and len(body) >= 4:  # pickle frames any body of 4 bytes or more
        head += assemble((("FRAME", len(body)),))
    return head + body


def body_bytes(body: Body) -> bytes:
    """The bytes of a stream, an opcode list, a concatenation, or raw bytes."""
    if isinstance(body, bytes):
        return body
    if isinstance(body, Stream):
        return stream_bytes(body)
    if isinstance(body, Ops):
        return assemble(body.ops)
    if isinstance(body, Dumps):
        return pickle.dumps(body.value, protocol=body.protocol)
    return b"".join(body_bytes(part) for part in body.parts)


# -- containers ------------------------------------------------------------------

_FIXED_TIME = (2020, 1, 1, 0, 0, 0)


def _zip(members: tuple[tuple[str, bytes], ...], compression: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, data in members:
            info = zipfile.ZipInfo(name, _FIXED_TIME)
            info.compress_type = compression
            zf.writestr(info, data)
    return buf.getvalue()


def _npz(spec: Npz) -> bytes:
    # np.savez streams each member through ZipFile.open(..., force_zip64=True):
    # a zip64 extra field in each local header, and a data descriptor.
    buf = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if spec.compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name, npy in spec.members:
            info = zipfile.ZipInfo(f"{name}.npy", _FIXED_TIME)
            info.compress_type = method
            with zf.open(info, "w", force_zip64=True) as member:
                member.write(npy_bytes(npy))
    return buf.getvalue()


def _patch_zip(data: bytes, spec: Zip) -> bytes:
    out = bytearray(data)
    if spec.flag_bits:
        local = out.index(b"PK\x03\x04")
        central = out.index(b"PK\x01\x02")
        for at in (local + 6, central + 8):  # general purpose bit flag
            (flags,) = struct.unpack_from("<H", out, at)
            struct.pack_into("<H", out, at, flags | spec.flag_bits)
    if spec.rename_local is not None:
        local = out.index(b"PK\x03\x04")
        (n,) = struct.unpack_from("<H", out, local + 26)
        new = spec.rename_local.encode()
        assert len(new) == n, "the local name keeps its length"
        out[local + 30 : local + 30 + n] = new
    if spec.corrupt is not None:
        old, new = spec.corrupt
        assert len(old) == len(new)
        at = out.index(old)
        out[at : at + len(old)] = new
    return bytes(out)


def npy_bytes(npy: Npy) -> bytes:
    """A version 1.0 ``.npy``: magic, header dict padded to 64 bytes with a newline, body."""
    shape = f"({npy.shape[0]},)" if len(npy.shape) == 1 else "(" + ", ".join(map(str, npy.shape)) + ")"
    header = f"{{'descr': {npy.descr!r}, 'fortran_order': False, 'shape': {shape}, }}"
    total = 10 + len(header) + 1
    header += " " * (-total % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin-1") + body_bytes(npy.body)


def _torch_zip(spec: TorchZip) -> bytes:
    members = (
        (f"{spec.root}/data.pkl", body_bytes(spec.data_pkl)),
        (f"{spec.root}/.format_version", b"1"),
        (f"{spec.root}/.storage_alignment", b"64"),
        (f"{spec.root}/byteorder", b"little"),
        *((f"{spec.root}/data/{key}", raw) for key, raw in spec.storages),
        (f"{spec.root}/version", b"3\n"),
        (f"{spec.root}/.data/serialization_id", b"0" * 40),
    )
    return _torch_writer(members)


# torch.save's own zip writer (PyTorchStreamWriter over miniz), as its files
# show it: every member stored, flags 0x0808 (UTF-8 names, data descriptor),
# zero CRC and sizes in the local header, an "FB" extra field of 'Z' bytes
# that puts each member's data at a multiple of 64, a data descriptor after
# the data, then the central directory, a zip64 end record and its locator,
# and the classic end record.
_LOCAL = struct.Struct("<4sHHHHHIIIHH")
_DESCRIPTOR = struct.Struct("<4sIII")
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")
_END64 = struct.Struct("<4sQHHIIQQQQ")
_LOCATOR64 = struct.Struct("<4sIQI")
_END = struct.Struct("<4sHHHHIIH")


def _torch_writer(members: tuple[tuple[str, bytes], ...]) -> bytes:
    out = bytearray()
    central = bytearray()
    for name, data in members:
        raw_name = name.encode()
        at = len(out)
        pad = -(at + _LOCAL.size + len(raw_name) + 4) % 64
        extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
        out += _LOCAL.pack(b"PK\x03\x04", 0, 0x808, 0, 0, 0, 0, 0, 0, len(raw_name), len(extra)) + raw_name + extra
        out += data
        crc = zlib.crc32(data)
        out += _DESCRIPTOR.pack(b"PK\x07\x08", crc, len(data), len(data))
        central += _CENTRAL.pack(
            b"PK\x01\x02", 0, 0, 0x808, 0, 0, 0, crc, len(data), len(data), len(raw_name), 0, 0, 0, 0, 0, at
        )
        central += raw_name
    directory_at = len(out)
    out += central
    end64_at = len(out)
    count = len(members)
    out += _END64.pack(b"PK\x06\x06", 44, 0x31E, 45, 0, 0, count, count, len(central), directory_at)
    out += _LOCATOR64.pack(b"PK\x06\x07", 0, end64_at, 1)
    out += _END.pack(b"PK\x05\x06", 0, 0, count, count, len(central), directory_at, 0)
    return bytes(out)


def _compressed(spec: Compressed) -> bytes:
    raw = body_bytes(spec.body)
    if spec.method == "gzip":
        return gzip.compress(raw, mtime=0)
    if spec.method == "bz2":
        return bz2.compress(raw)
    if spec.method == "xz":
        return lzma.compress(raw)
    msg = f"unknown compression {spec.method}"
    raise ValueError(msg)


def _number(n: int) -> bytes:
    # 7z's variable-length NUMBER; the recipes' sizes stay below 0x4000.
    assert n < 0x4000
    return bytes([n]) if n < 0x80 else bytes([0x80 | (n >> 8), n & 0xFF])


def _seven_zip(spec: SevenZip) -> bytes:
    data = body_bytes(spec.body)
    name = spec.member.encode("utf-16-le") + b"\x00\x00"
    header = b"".join(
        (
            b"\x01",  # Header
            b"\x04",  # MainStreamsInfo
            b"\x06\x00\x01\x09",  # PackInfo: pack position 0, 1 stream, Size
            _number(len(data)),
            b"\x00",  # End (PackInfo)
            b"\x07\x0b\x01\x00",  # UnpackInfo, Folder, 1 folder, not external
            b"\x01\x01\x00",  # 1 coder: id size 1, id 00 (Copy)
            b"\x0c",  # CodersUnpackSize
            _number(len(data)),
            b"\x00",  # End (UnpackInfo)
            b"\x00",  # End (MainStreamsInfo)
            b"\x05\x01",  # FilesInfo, 1 file
            b"\x11",  # Name
            _number(len(name) + 1),
            b"\x00",  # not external
            name,
            b"\x00",  # End (FilesInfo)
            b"\x00",  # End (Header)
        )
    )
    start = struct.pack("<QQI", len(data), len(header), zlib.crc32(header))
    return b"7z\xbc\xaf\x27\x1c\x00\x04" + struct.pack("<I", zlib.crc32(start)) + start + data + header


# torch's legacy format opens with this number.
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_SYS_INFO: Final[dict[str, Value]] = {
    "protocol_version": 1001,
    "little_endian": True,
    "type_sizes": {"short": 2, "int": 4, "long": 4},
}


def _torch_save(spec: TorchSave) -> bytes:
    state: dict[str, Value] = {}
    keys: list[str] = []
    storages: list[bytes] = []
    for index, (name, shape, values) in enumerate(spec.tensors):
        key = str(140000000000000 + index) if spec.legacy else str(index)
        pid: tuple[Value, ...] = ("storage", Ref("torch", "FloatStorage"), key, "cpu", len(values))
        stride = tuple(math.prod(shape[i + 1 :]) for i in range(len(shape)))
        hooks = Call(Ref("collections", "OrderedDict"), ())
        args = (Persistent((*pid, None) if spec.legacy else pid), 0, shape, stride, False, hooks)
        state[name] = Call(Ref("torch._utils", "_rebuild_tensor_v2"), args)
        keys.append(key)
        storages.append(struct.pack(f"<{len(values)}f", *values))
    obj = Stream(state, 2)
    if not spec.legacy:
        return _torch_zip(TorchZip(obj, storages=tuple(zip(keys, storages, strict=True))))
    magic = assemble((("PROTO", 2), ("LONG1", None), ("RAW", _long1(_LEGACY_MAGIC)), ("STOP",)))
    head = magic + stream_bytes(Stream(1001, 2)) + stream_bytes(Stream(_LEGACY_SYS_INFO, 2))
    data = b"".join(struct.pack("<q", len(raw) // 4) + raw for raw in storages)
    return head + stream_bytes(obj) + stream_bytes(Stream(list[Value](keys), 2)) + data


def _long1(n: int) -> bytes:
    raw = n.to_bytes((n.bit_length() + 8) // 8, "little", signed=True)
    return bytes([len(raw)]) + raw


def build(container: Container) -> bytes:
    """The bytes of the file a recipe's container describes."""
    if isinstance(container, Plain):
        return body_bytes(container.body)
    if isinstance(container, Zip):
        members = tuple((name, body_bytes(body)) for name, body in container.members)
        return _patch_zip(_zip(members, container.compression), container)
    if isinstance(container, Npy):
        return npy_bytes(container)
    if isinstance(container, Npz):
        return _npz(container)
    if isinstance(container, TorchZip):
        return _torch_zip(container)
    if isinstance(container, Compressed):
        return _compressed(container)
    if isinstance(container, SevenZip):
        return _seven_zip(container)
    return _torch_save(container)
