# Strategy: name what a file really is when it is not a safetensors file at
# all.  A download tool that saved an error page, a `git clone` without
# `git lfs pull`, or a pickle renamed `.safetensors` all fail the length
# prefix check; the prefix message alone ("declared header length ...")
# would describe parser internals and echo the file's first bytes as a
# number.  identify() looks at the first SNIFF_LEN bytes and the file size
# (no I/O) and recognises a format by its magic bytes and, where a magic is
# short or textual, by its structure.  It is only consulted after the
# prefix check failed, so it costs a valid file nothing.
#
# The table is data: (rule slug, test, description, advice).  A test either
# matches bytes at an offset, or is a function of the head.  Formats are
# tried in order; the first match wins.
from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["FORMATS", "SNIFF_LEN", "Identified", "identify", "pickle_protocol"]

SNIFF_LEN: Final = 4096


@dataclass(frozen=True)
class Identified:
    """A recognised foreign format: the rule to report and what to tell the user."""

    slug: str
    what: str  # "a pickle (protocol 4)"
    advice: str  # "loading it can run code; ..."

    @property
    def message(self) -> str:
        return f"this is {self.what}, not a safetensors file: {self.advice}"


# -- pickle ------------------------------------------------------------------
# A pickle of protocol 2 or later starts with PROTO (0x80, protocol byte).
# Protocols 0 and 1 have no magic; they are recognised by decoding the first
# opcodes with pickletools (which decodes, never executes) and requiring a
# typical opening (MARK, GLOBAL, an empty container) and a memo store.
# torch.save's legacy stream at any protocol: PROTO n, then LONG1 of 10 bytes
# holding its magic number (pickle_protocol=3 writes "\x80\x03...").
_TORCH_LEGACY: Final = re.compile(rb"\x80[\x02-\x05]\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19")
_OPENERS: Final = frozenset({"MARK", "GLOBAL", "EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE", "PROTO"})
_MEMO: Final = frozenset({"PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE", "STOP"})


def pickle_protocol(head: bytes) -> int | None:
    """The protocol of a pickle stream starting at ``head``, or None."""
    if len(head) >= 2 and head[0] == 0x80:
        return head[1] if 2 <= head[1] <= 5 and _decodes_as_pickle(head) else None
    if head[:1] in (b"(", b"c", b"}", b"]", b")") and _decodes_as_pickle(head):
        return 0
    return None


def _decodes_as_pickle(head: bytes) -> bool:
    import pickletools  # noqa: PLC0415 - only when a file failed the prefix check

    names: list[str] = []
    try:
        for opcode, _arg, _pos in pickletools.genops(head):
            names.append(opcode.name)
            if len(names) >= 8 or opcode.name == "STOP":
                break
    except (ValueError, UnicodeDecodeError, struct.error):
        # genops raises on the first byte that is not an opcode, and on an
        # argument cut off by the end of the head; what parsed so far counts.
        pass
    return len(names) >= 3 and names[0] in _OPENERS and bool(_MEMO.intersection(names))


def _pickle(head: bytes, _size: int) -> tuple[str, str] | None:
    if _TORCH_LEGACY.match(head):
        return "a legacy PyTorch checkpoint (a pickle written by torch.save)", (
            "loading it can run arbitrary code; do not pass it to torch.load unless you trust its source"
        )
    protocol = pickle_protocol(head)
    if protocol is None:
        return None
    which = "protocol 0 or 1" if protocol == 0 else f"protocol {protocol}"
    return f"a Python pickle ({which})", (
        "loading it can run arbitrary code; do not pass it to torch.load or pickle.load"
    )


# -- ZIP and what is inside ----------------------------------------------------
_ZIP_LOCAL: Final = b"PK\x03\x04"


def _zip_names(head: bytes) -> list[bytes]:
    """The member names of the local file headers found in ``head``."""
    names: list[bytes] = []
    at = 0
    while at + 30 <= len(head) and head.startswith(_ZIP_LOCAL, at) and len(names) < 16:
        compressed, _, name_len, extra_len = struct.unpack_from("<IIHH", head, at + 18)
        names.append(head[at + 30 : at + 30 + name_len])
        at += 30 + name_len + extra_len + compressed
    return names


def _zip(head: bytes, _size: int) -> tuple[str, str] | None:
    # Tried after the PyTorch and NumPy entries, which name their archives.
    if not head.startswith((_ZIP_LOCAL, b"PK\x05\x06", b"PK\x07\x08")):
        return None
    return "a ZIP archive", "do not unpack or load it blindly; check what it holds and where it came from"


def _torch_zip(head: bytes, _size: int) -> tuple[str, str] | None:
    if not head.startswith(_ZIP_LOCAL):
        return None
    names = _zip_names(head)
    if any(n.endswith(b"/data.pkl") or n == b"data.pkl" for n in names) or b"/data.pkl" in head:
        return "a PyTorch checkpoint (the ZIP archive torch.save writes, with a pickle inside)", (
            "loading it can run arbitrary code; do not pass it to torch.load unless you trust its source, "
            "and convert trusted checkpoints to safetensors"
        )
    return None


def _numpy(head: bytes, _size: int) -> tuple[str, str] | None:
    advice = "load it with numpy.load(path, allow_pickle=False), never with allow_pickle=True from an unknown source"
    if head.startswith(b"\x93NUMPY") and len(head) >= 8:
        return f"a NumPy .npy array (format {head[6]}.{head[7]})", advice
    names = _zip_names(head) if head.startswith(_ZIP_LOCAL) else []
    if names and all(n.endswith(b".npy") for n in names):
        return "a NumPy .npz archive", advice
    return None


# -- text formats --------------------------------------------------------------
_LFS: Final = b"version https://git-lfs.github.com/spec/"
_LFS_OID: Final = re.compile(rb"^oid sha256:([0-9a-f]{64})$", re.MULTILINE)
_LFS_SIZE: Final = re.compile(rb"^size (\d{1,20})$", re.MULTILINE)


def _text_start(head: bytes) -> bytes:
    return head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")


def _git_lfs(head: bytes, _size: int) -> tuple[str, str] | None:
    if not head.startswith(_LFS):
        return None
    oid = _LFS_OID.search(head)
    size = _LFS_SIZE.search(head)
    real = ""
    if oid is not None and size is not None:
        real = f" (the real file has {int(size.group(1)):,} bytes and sha256 {oid.group(1)[:12].decode()}...)"
    return f"a Git LFS pointer{real}", "the file itself was never downloaded; run `git lfs pull` in the repository"


def _html(head: bytes, _size: int) -> tuple[str, str] | None:
    start = _text_start(head)[:1024].lower()
    if start.startswith((b"<!doctype html", b"<html", b"<head", b"<body")) or (
        start.startswith((b"<!--", b"<?xml")) and b"<html" in start
    ):
        return "an HTML page", (
            "a download saved the server's page (an error or a login page) instead of the file; "
            "download it again and check the URL and the access token"
        )
    return None


def _xml(head: bytes, _size: int) -> tuple[str, str] | None:
    start = _text_start(head)
    if not start.startswith(b"<?xml") and re.match(rb"<[A-Za-z]", start) is None:
        return None
    if b"<Error>" in start[:1024]:
        return "an XML error response (from a storage server)", (
            "a download saved the error instead of the file; download it again and check the URL and the access token"
        )
    return "an XML document", "a download may have saved a server response instead of the file; download it again"


def _json(head: bytes, _size: int) -> tuple[str, str] | None:
    start = _text_start(head)
    if not start.startswith((b"{", b"[")) or not _is_text(head):
        return None
    if b'"weight_map"' in head:
        return "a JSON document", (
            "it has a weight_map, so it is a sharded checkpoint's index (model.safetensors.index.json); "
            "validate it with validator.validate_index, which also checks the shards it names"
        )
    return "a JSON document", (
        "a download may have saved an API response (such as an error) instead of the file; download it again"
    )


def _is_text(head: bytes) -> bool:
    if not head or b"\x00" in head:
        return False
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # only a character cut by the end of the head is forgiven
            return False
        text = head[: exc.start].decode("utf-8")
    controls = sum(1 for c in text if ord(c) < 32 and c not in "\t\n\r\f")
    return controls * 100 <= len(text)


def _text(head: bytes, _size: int) -> tuple[str, str] | None:
    if not _is_text(head):
        return None
    if head.startswith(b"#!"):
        return "a script (it starts with a #! line)", "do not run it; a model file is never a script"
    return "a text file", "the model's bytes were never written here; download or copy the file again"


# -- binary magics -------------------------------------------------------------
def _magic(offset: int, magic: bytes, what: str, advice: str) -> Callable[[bytes, int], tuple[str, str] | None]:
    def test(head: bytes, _size: int) -> tuple[str, str] | None:
        return (what, advice) if head.startswith(magic, offset) else None

    return test


def _gguf(head: bytes, _size: int) -> tuple[str, str] | None:
    if not head.startswith(b"GGUF") or len(head) < 8:
        return None
    (version,) = struct.unpack_from("<I", head, 4)
    return f"a GGUF model file (version {version})", "load it with llama.cpp or the gguf package"


def _pe(head: bytes, _size: int) -> tuple[str, str] | None:
    if not head.startswith(b"MZ") or len(head) < 64:
        return None
    (pe,) = struct.unpack_from("<I", head, 0x3C)
    if head[pe : pe + 4] == b"PE\x00\x00":
        return "a Windows (PE) executable", "do not run it; a model file is never a program"
    return None


_UNPACK: Final = "decompress or unpack it and check what it holds"
_NO_RUN: Final = "do not run it; a model file is never a program"

# (rule slug, test) in the order they are tried.
FORMATS: Final[tuple[tuple[str, Callable[[bytes, int], tuple[str, str] | None]], ...]] = (
    ("file-is-git-lfs-pointer", _git_lfs),
    ("file-is-pytorch-zip", _torch_zip),
    ("file-is-numpy", _numpy),
    ("file-is-zip", _zip),
    ("file-is-pickle", _pickle),
    ("file-is-gguf", _gguf),
    ("file-is-hdf5", _magic(0, b"\x89HDF\r\n\x1a\n", "an HDF5 file (such as Keras .h5 weights)", "read it with h5py")),
    ("file-is-tflite", _magic(4, b"TFL3", "a TensorFlow Lite model", "load it with the TensorFlow Lite interpreter")),
    ("file-is-archive", _magic(0, b"\x1f\x8b", "a gzip stream", _UNPACK)),
    ("file-is-archive", _magic(0, b"\xfd7zXZ\x00", "an xz stream", _UNPACK)),
    ("file-is-archive", _magic(0, b"\x28\xb5\x2f\xfd", "a zstd stream", _UNPACK)),
    ("file-is-archive", _magic(0, b"BZh", "a bzip2 stream", _UNPACK)),
    ("file-is-archive", _magic(0, b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", _UNPACK)),
    ("file-is-archive", _magic(0, b"Rar!\x1a\x07", "a RAR archive", _UNPACK)),
    ("file-is-archive", _magic(257, b"ustar", "a tar archive", _UNPACK)),
    ("file-is-executable", _magic(0, b"\x7fELF", "an ELF executable or shared library", _NO_RUN)),
    ("file-is-executable", _pe),
    ("file-is-executable", _magic(0, b"\xcf\xfa\xed\xfe", "a Mach-O executable", _NO_RUN)),
    ("file-is-executable", _magic(0, b"\xfe\xed\xfa\xcf", "a Mach-O executable", _NO_RUN)),
    ("file-is-html", _html),
    ("file-is-xml", _xml),
    ("file-is-json", _json),
    ("file-is-text", _text),
)


def identify(head: bytes, file_size: int) -> Identified | None:
    """What a file that is not a safetensors file is, from its first bytes.

    ``head`` is the start of the file (up to SNIFF_LEN bytes).  Returns None
    when no format is recognised.
    """
    for slug, test in FORMATS:
        found = test(head, file_size)
        if found is not None:
            return Identified(slug, *found)
    return None
