# Strategy: the containers around pickle streams (validator/fuzz/pickle_mutator.py):
# a file is split into its container (torch zip, tar with and without the
# ustar magic, the legacy stream of pickles, .npy, .npz, joblib and the
# compressed forms) and its streams; one stream or one container field is
# mutated, and the file is put back together, sometimes in another
# container or under another name.
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import struct
import tarfile
import warnings
import zipfile
import zlib
from typing import TYPE_CHECKING, Final

from validator.fuzz._pickle_ops import MAX_INNER, disassemble, op, stream
from validator.fuzz._pickle_streams import bytes_mutation, mutate_stream, payload

if TYPE_CHECKING:
    import random
    from collections.abc import Callable, Sequence

__all__ = ["COMPRESSORS", "magic", "mutate_named", "npy_bytes", "tar_bytes", "zip_bytes", "zip_members"]

# -- containers ----------------------------------------------------------------------------
_EPOCH: Final = (1980, 1, 1, 0, 0, 0)
COMPRESSORS: Final[dict[str, tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]]] = {
    "gzip": (lambda b: gzip.compress(b, mtime=0), gzip.decompress),
    "bz2": (bz2.compress, bz2.decompress),
    "xz": (lzma.compress, lzma.decompress),
    "lzma": (lambda b: lzma.compress(b, format=lzma.FORMAT_ALONE), lzma.decompress),
    "zlib": (zlib.compress, zlib.decompress),
    # joblib's old format (numpy_pickle_compat): "ZF", the length in hex padded to 19, zlib.
    "joblib-zf": (
        lambda b: b"ZF" + f"{len(b):#x}".ljust(19).encode() + zlib.compress(b),
        lambda b: zlib.decompress(b[21:]),
    ),
}
_NAMES: Final = (
    "model.pkl",
    "pytorch_model.bin",
    "model.pt",
    "model.pth",
    "model.ckpt",
    "model.joblib",
    "arr.npy",
    "arrs.npz",
    "data.dat",
    "notes.txt",
    "weights.PT",
    "blob",
    "image.png",
    "model.pkl.gz",
    "model.tar",
)


def magic(data: bytes) -> str:
    """The container ``data`` starts with, by its magic.

    One of zip, npy, gzip, bz2, xz, lzma, joblib-zf, zlib, tar or pickle.
    """
    if data.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if data.startswith(b"\x93NUMPY"):
        return "npy"
    if data.startswith(b"\x1f\x8b"):
        return "gzip"
    if data.startswith(b"BZh"):
        return "bz2"
    if data.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if data.startswith(b"\x5d\x00\x00"):
        return "lzma"
    if data.startswith(b"ZF0x"):
        return "joblib-zf"  # joblib's old zlib format
    if data.startswith(b"x") and len(data) > 2 and (data[0] * 256 + data[1]) % 31 == 0:
        return "zlib"
    if len(data) >= 512 and _tar_checksum_ok(data):
        return "tar"
    return "pickle"


def _tar_checksum_ok(data: bytes) -> bool:
    header = data[:512]
    try:
        stored = int(header[148:156].split(b"\0")[0].strip() or b"-1", 8)
    except ValueError:
        return False
    return stored == sum(header[:148]) + 256 + sum(header[156:512])


def _streams(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each consecutive pickle stream at the front of ``data`` (a legacy torch file has five)."""
    spans: list[tuple[int, int]] = []
    at = 0
    while at < len(data) and len(spans) < 8:
        ops, end = disassemble(data, at)
        if not ops or ops[-1].name != "STOP":
            if ops:
                spans.append((at, end))
            break
        spans.append((at, end))
        at = end
    return spans


def _mutate_pickleish(data: bytes, rng: random.Random, splice: Sequence[bytes]) -> bytes:
    spans = _streams(data)
    if not spans:
        return bytes_mutation(data, rng)
    start, end = rng.choice(spans)
    return data[:start] + mutate_stream(data[start:end], rng, splice) + data[end:]


def zip_members(data: bytes) -> list[tuple[zipfile.ZipInfo, bytes]] | None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()[:64]
            if sum(i.file_size for i in infos) > MAX_INNER:
                return None
            return [(i, archive.read(i)) for i in infos]
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError, zlib.error):
        return None
    except (lzma.LZMAError, KeyError, IndexError, struct.error, UnicodeDecodeError, OverflowError):
        return None


def zip_bytes(members: Sequence[tuple[str, bytes, int]]) -> bytes:
    out = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(out, "w") as archive:
        warnings.simplefilter("ignore")  # a duplicate member name is a mutation, not a mistake
        for name, data, method in members:
            info = zipfile.ZipInfo(name, _EPOCH)
            info.compress_type = method
            archive.writestr(info, data)
    return out.getvalue()


_METHODS: Final = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)


def _mutate_zip(data: bytes, rng: random.Random, splice: Sequence[bytes]) -> bytes:  # noqa: C901
    read = zip_members(data)
    if read is None:
        return bytes_mutation(data, rng)
    members = [(i.filename, body, i.compress_type) for i, body in read]
    if not members:
        return zip_bytes([("archive/data.pkl", stream([op("NONE")]), zipfile.ZIP_STORED)])
    choice = rng.randrange(9)
    i = rng.randrange(len(members))
    name, body, method = members[i]
    if choice <= 2:  # a member's stream (pickles first)
        picks = [j for j, m in enumerate(members) if m[0].lower().endswith((".pkl", ".npy"))] or [i]
        i = rng.choice(picks)
        name, body, method = members[i]
        if name.lower().endswith(".npy"):
            members[i] = (name, _mutate_npy(body, rng, splice), method)
        else:
            members[i] = (name, _mutate_pickleish(body, rng, splice), method)
    elif choice == 3:  # the name's case, or a name torch or numpy still finds
        new = rng.choice((name.upper(), name.lower(), name.removesuffix(".npy"), name + ".npy", "../" + name))
        members[i] = (new, body, method)
    elif choice == 4:
        rng.shuffle(members)
    elif choice == 5:
        members[i] = (name, body, rng.choice(_METHODS))
    elif choice == 6:  # a second pickle member beside the first
        extra = stream([*payload(rng), op("NONE")])
        where = name.rsplit("/", 1)[0] + "/" if "/" in name else ""
        members.insert(rng.randrange(len(members) + 1), (where + rng.choice(("DATA.PKL", "other.pkl", "x")), extra, 0))
    elif choice == 7:  # an object .npy member under some name
        obj = npy_bytes("|O", "(1,)", stream([*payload(rng), op("NONE")]))
        members.append((rng.choice(("obj.npy", "obj", "OBJ.NPY")), obj, rng.choice(_METHODS)))
    else:
        del members[i]
    packed = zip_bytes(members)
    if rng.random() < 0.1:  # a flag bit set in the first local header (encryption, 0x20, 0x40)
        flags = rng.choice((1, 0x20, 0x40))
        packed = packed[:6] + struct.pack("<H", flags) + packed[8:]
    return packed


def npy_bytes(descr: str, shape: str, body: bytes, version: int = 1) -> bytes:
    header = f"{{'descr': {descr!r}, 'fortran_order': False, 'shape': {shape}, }}".encode()
    size = 4 if version >= 2 else 2
    header += b" " * (63 - (8 + size + len(header)) % 64) + b"\n"
    fmt = "<I" if version >= 2 else "<H"
    return b"\x93NUMPY" + bytes([version, 0]) + struct.pack(fmt, len(header)) + header + body


_DESCRS: Final = ("|O", "O", "object", "<O", "|O8", "<f4", "<U1", "|b1", "[('a', '|O')]", "[('a', '<f4'), ('b', 'O')]")


def _mutate_npy(data: bytes, rng: random.Random, splice: Sequence[bytes]) -> bytes:
    if len(data) < 10:
        return bytes_mutation(data, rng)
    version = data[6]
    size = 4 if version >= 2 else 2
    (length,) = struct.unpack_from("<I" if size == 4 else "<H", data, 8)
    start = 8 + size
    header, body = data[start : start + length], data[start + length :]
    choice = rng.randrange(5)
    if choice == 0:
        descr = rng.choice(_DESCRS)
        shape = rng.choice(("(1,)", "(2,)", "()", "(0,)"))
        if descr.startswith("["):  # a structured dtype: written as a list literal, not a string
            text = f"{{'descr': {descr}, 'fortran_order': False, 'shape': {shape}, }}".encode()
            text += b" " * (63 - (8 + size + len(text)) % 64) + b"\n"
            fmt = "<I" if size == 4 else "<H"
            return data[:6] + bytes([version, 0]) + struct.pack(fmt, len(text)) + text + body
        return npy_bytes(descr, shape, body, version if version in {1, 2, 3} else 1)
    if choice == 1:
        new_version = rng.choice((1, 2, 3))
        return npy_bytes("|O", "(1,)", body, new_version)
    if choice == 2:
        return data[:start] + header + _mutate_pickleish(body, rng, splice)
    if choice == 3:
        return data[:start] + header + body + rng.choice((b"\n", b"\x00", stream(payload(rng))))
    return bytes_mutation(data, rng)


def _tar_members(data: bytes) -> list[tuple[str, bytes]] | None:
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            out = []
            for info in archive.getmembers()[:32]:
                f = archive.extractfile(info) if info.isfile() and info.size <= MAX_INNER else None
                out.append((info.name, f.read() if f is not None else b""))
            return out
    except (tarfile.TarError, OSError, ValueError, EOFError, UnicodeDecodeError, OverflowError):
        return None


def tar_bytes(members: Sequence[tuple[str, bytes]], *, ustar: bool = True) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT if ustar else tarfile.USTAR_FORMAT) as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            archive.addfile(info, io.BytesIO(data))
    raw = bytearray(out.getvalue())
    if not ustar:  # old-style headers: no magic, the checksum still right
        at = 0
        while at + 512 <= len(raw) and any(raw[at : at + 512]):
            header = raw[at : at + 512]
            size = int(header[124:136].split(b"\0")[0].strip() or b"0", 8)
            raw[at + 257 : at + 265] = bytes(8)
            raw[at + 148 : at + 156] = b" " * 8
            checksum = sum(raw[at : at + 512])
            raw[at + 148 : at + 156] = f"{checksum:06o}\0 ".encode()
            at += 512 + (size + 511) // 512 * 512
    return bytes(raw)


def _mutate_tar(data: bytes, rng: random.Random, splice: Sequence[bytes]) -> bytes:
    members = _tar_members(data)
    if not members:
        return bytes_mutation(data, rng)
    choice = rng.randrange(4)
    i = rng.randrange(len(members))
    name, body = members[i]
    if choice <= 1:
        members[i] = (name, _mutate_pickleish(body, rng, splice))
    elif choice == 2:
        members.insert(0, ("storages", stream([*payload(rng), op("NONE")])))
    else:
        rng.shuffle(members)
    return tar_bytes(members, ustar=rng.random() < 0.5)


def mutate_named(
    name: str, data: bytes, rng: random.Random, corpus: Sequence[tuple[str, bytes]] = ()
) -> tuple[str, bytes]:
    """A mutant of the file ``name`` holding ``data``: its container or one of its streams, sometimes its name.

    ``corpus`` provides streams to splice from and files to wrap.  Never
    raises on any bytes.
    """
    splice = [d for _, d in rng.sample(list(corpus), min(4, len(corpus)))] if corpus else []
    roll = rng.random()
    if roll < 0.08:
        return rng.choice(_NAMES), data
    if roll < 0.16:
        return _wrap(name, data, rng)
    return name, _mutate_inner(data, rng, splice, 0)


def _mutate_inner(data: bytes, rng: random.Random, splice: Sequence[bytes], depth: int) -> bytes:
    kind = magic(data)
    if kind == "zip":
        return _mutate_zip(data, rng, splice)
    if kind == "npy":
        return _mutate_npy(data, rng, splice)
    if kind == "tar":
        return _mutate_tar(data, rng, splice)
    if kind in COMPRESSORS and depth < 2:
        compress, decompress = COMPRESSORS[kind]
        try:
            inner = decompress(data)
        except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error):
            return bytes_mutation(data, rng)
        if len(inner) > MAX_INNER:
            return bytes_mutation(data, rng)
        mutated = _mutate_inner(inner, rng, splice, depth + 1)
        if rng.random() < 0.2:
            compress = COMPRESSORS[rng.choice(list(COMPRESSORS))][0]
        return compress(mutated)
    return _mutate_pickleish(data, rng, splice)


def _wrap(name: str, data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """``data`` (taken as a pickle) put into another container."""
    choice = rng.randrange(6)
    if choice == 0:
        return "pytorch_model.bin", zip_bytes([("archive/data.pkl", data, 0), ("archive/version", b"3\n", 0)])
    if choice == 1:
        return "arr.npy", npy_bytes(rng.choice(("|O", "object", "O")), "(1,)", data)
    if choice == 2:
        method = rng.choice(("gzip", "bz2", "xz", "lzma", "zlib", "joblib-zf"))
        ext = {"gzip": ".gz", "bz2": ".bz2", "xz": ".xz", "lzma": ".lzma"}.get(method, ".joblib")
        return name + ext, COMPRESSORS[method][0](data)
    if choice == 3:
        return "model.tar", tar_bytes(
            [("storages", data), ("tensors", stream([op("EMPTY_LIST")]))], ustar=rng.random() < 0.5
        )
    if choice == 4:
        return "arrs.npz", zip_bytes([("a.npy", npy_bytes("|O", "(1,)", data), rng.choice(_METHODS))])
    return "pytorch_model.bin", b"\x80\x02" + b"N0" * rng.randrange(1, 5) + data
