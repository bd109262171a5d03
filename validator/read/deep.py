# Strategy: deep checks of tensor contents, fed by the single streaming pass
# of pipeline/engine.py.  The file is read once, in fixed-size chunks into a reused
# buffer; each chunk is handed to `DeepScanner.feed` together with its
# absolute offset, and the scanner intersects it with the tensors' byte
# ranges, so memory stays bounded whatever the size of a file or a tensor.
# An element cut in two by a chunk boundary is carried (at most 7 bytes) to
# the next chunk.  Only ranges that lie inside the file are ever looked at.
#
# NaN and Inf are found from the bit patterns, on unsigned-integer views: a
# masked-off sign bit, one vectorised max as a fast path, and exact counts
# only when the max says a special value is present.  (F32, F64 and C64 take
# an even faster path first: float min and max, which propagate NaN.)  The encodings are
# those of ml_dtypes (tests compare every 8- and 16-bit pattern):
#   F16, BF16, F32, F64, F8_E5M2: IEEE 754: exponent all ones; a zero
#     mantissa is +-Inf, any other mantissa is NaN.
#   F8_E4M3 (float8_e4m3fn): no Inf; NaN is S.1111.111 (0x7f, 0xff).
#   F8_E4M3FNUZ, F8_E5M2FNUZ: no Inf, no -0; NaN is 0x80 alone.
#   F8_E8M0 (float8_e8m0fnu): unsigned; NaN is 0xff; no Inf.
#   C64: a pair of F32; an element counts as NaN when either part is NaN,
#     else as Inf when either part is infinite.
#   F4 (E2M1) and F6 (E2M3, E3M2) have no NaN or Inf encodings at all, so
#     there is nothing to count.
# numpy is imported here and only here, when a deep scan starts.  ml_dtypes
# is not needed at run time: the tests check the table above against it for
# every 8- and 16-bit pattern.
from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from validator._dtypes import DTYPE_BITS, TABLE

if TYPE_CHECKING:
    from collections.abc import Mapping

    import numpy as np
    import numpy.typing as npt

    from validator._check import Checker
    from validator._findings import TensorInfo

__all__ = [
    "BYTE_DTYPES",
    "LONG_NAME",
    "LONG_VALUE",
    "ZERO_MIN_ELEMENTS",
    "ZERO_TAIL_MIN",
    "DeepScanner",
    "DeepStats",
    "check_names",
    "head_signature",
    "tail_has_eocd",
    "zero_is_suspicious",
]

# dtype -> (kind, bits of the integer view, magnitude mask, first special
# pattern), from the dtype table's NaN/Inf classes (see _dtypes.Dtype.specials).
_FLOAT_CLASSES: Final[Mapping[str, tuple[str, int, int, int]]] = {
    d.name: (d.specials[0], d.bits // 2 if d.kind == "complex" else d.bits, *d.specials[1:])
    for d in TABLE
    if d.specials is not None
}
BYTE_DTYPES: Final = frozenset({"U8", "I8", "BOOL"})

# A trailing run of zeros this long is reported even when it does not cover
# the whole data region: preallocated files whose download stopped look so.
ZERO_TAIL_MIN: Final = 1 << 20
_BLOCK: Final = 1 << 16

# Signatures at the start of a byte tensor.  Pickle is matched on the
# PROTO opcode (0x80, protocol 2..5) plus a plausible second opcode, the
# way torch.save and pickle.dumps begin; protocols 0 and 1 are text and too
# easy to hit by chance.
_HEAD_SIGNATURES: Final = (
    (b"PK\x03\x04", "a ZIP local file header"),
    (b"PK\x05\x06", "a ZIP end-of-central-directory record (empty archive)"),
    (b"PK\x07\x08", "a spanned ZIP archive"),
    (b"\x7fELF", "an ELF executable"),
    (b"\xcf\xfa\xed\xfe", "a Mach-O executable"),
    (b"\xfe\xed\xfa\xcf", "a Mach-O executable"),
    (b"\xca\xfe\xba\xbe", "a Mach-O universal binary or Java class"),
    (b"\x1f\x8b\x08", "a gzip stream"),
    (b"\xfd7zXZ\x00", "an xz stream"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"#!/", "a script with a shebang line"),
)
_PICKLE_NEXT: Final = frozenset(b"\x95}](cqXKJN)\x8c\x88\x89.")
_EOCD: Final = b"PK\x05\x06"
_EOCD_LEN: Final = 22
_TAIL_WINDOW: Final = _EOCD_LEN + 0xFFFF

# tensor-all-zero reports a zeroed weight matrix, not every zero tensor
# (issue 20: it fired on the 13 zero biases of a freshly initialised GPT-2).
# Zero is a normal initial value for biases, norms, gates, tokens and
# scalars (one dimension above 1 at most), for small tensors, and for the
# layers that models zero-initialise by design, matched by name below.  The
# criterion and its reasons are in SPEC.md#tensor-all-zero.
ZERO_MIN_ELEMENTS: Final = 64 * 64
_ZERO_BY_DESIGN: Final = re.compile(
    # LoRA's second factor starts at zero so that a fresh adapter changes
    # nothing: peft lora_B (and lora_embedding_A for embeddings), mlx-lm
    # lora_b, kohya lora_up, diffusers' older <name>_lora.up.
    r"(?:^|[._])(?:lora_B|lora_b|lora_up|lora_embedding_A)(?:[._]|$)|lora\.up(?:\.|$)"
    # ControlNet's zero convolutions (diffusers and the original code).
    r"|(?:^|\.)(?:controlnet_down_blocks|controlnet_mid_block|zero_convs|middle_block_out)(?:\.|$)"
    r"|(?:^|\.)controlnet_cond_embedding\.conv_out(?:\.|$)"
    # DiT-style adaLN-Zero modulation.
    r"|(?:^|\.)adaLN_modulation(?:\.|$)"
)


def zero_is_suspicious(name: str, shape: tuple[int, ...]) -> bool:
    """Whether an all-zero tensor is reported (tensor-all-zero): a weight
    matrix (two or more dimensions above 1) of at least ZERO_MIN_ELEMENTS
    elements whose name is not that of a layer zero-initialised by design."""
    numel = 1
    wide = 0
    for dim in shape:
        numel *= dim
        wide += dim > 1
    return wide >= 2 and numel >= ZERO_MIN_ELEMENTS and _ZERO_BY_DESIGN.search(name) is None


# metadata-suspicious thresholds (characters).
LONG_NAME: Final = 1024
LONG_VALUE: Final = 1 << 20
_TRAVERSAL: Final = re.compile(r"(?:^|[/\\])\.\.(?:[/\\]|$)")
_CONTROL: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def check_names(tensors: Mapping[str, TensorInfo], metadata: Mapping[str, str] | None, out: Checker) -> None:
    """metadata-suspicious: traversal, control characters, huge values.

    Tensor names with control characters are already ST312's; here names
    are checked for path traversal and length only.  Metadata values may
    hold tab, LF and CR (embedded JSON or text), but no other controls.
    """
    for name in tensors:
        if _TRAVERSAL.search(name):
            out.add(
                "metadata-suspicious", f"tensor name {name[:80]!r} contains a '..' path component", None, tensor=name
            )
        if len(name) > LONG_NAME:
            out.add(
                "metadata-suspicious",
                f"tensor name is {len(name)} characters long (limit {LONG_NAME})",
                None,
                tensor=name,
            )
    for key, value in (metadata or {}).items():
        where = "/__metadata__/" + key.replace("~", "~0").replace("/", "~1")
        shown = repr(key[:80])
        if _TRAVERSAL.search(key) or _TRAVERSAL.search(value):
            out.add("metadata-suspicious", f"metadata {shown} contains a '..' path component", None, json_path=where)
        bad = _CONTROL.search(key) or _CONTROL.search(value)
        if bad is not None:
            out.add(
                "metadata-suspicious",
                f"metadata {shown} contains control character {bad.group()!r}",
                None,
                json_path=where,
            )
        if len(key) > LONG_NAME:
            out.add(
                "metadata-suspicious",
                f"metadata key is {len(key)} characters long (limit {LONG_NAME})",
                None,
                json_path=where,
            )
        if len(value) > LONG_VALUE:
            out.add(
                "metadata-suspicious",
                f"metadata {shown} value is {len(value)} characters long (limit {LONG_VALUE})",
                None,
                json_path=where,
            )


def head_signature(head: bytes) -> str | None:
    """What a byte tensor's first bytes announce, or None."""
    if len(head) >= 3 and head[0] == 0x80 and 2 <= head[1] <= 5 and head[2] in _PICKLE_NEXT:
        return f"a pickle stream (protocol {head[1]})"
    for magic, what in _HEAD_SIGNATURES:
        if head.startswith(magic):
            return what
    return None


def tail_has_eocd(tail: bytes) -> int | None:
    """Index of a ZIP end record that ends exactly at the end of ``tail``."""
    start = len(tail)
    while True:
        start = tail.rfind(_EOCD, 0, start)
        if start < 0:
            return None
        if start + _EOCD_LEN <= len(tail):
            (comment,) = struct.unpack_from("<H", tail, start + 20)
            if start + _EOCD_LEN + comment == len(tail):
                return start


@dataclass(slots=True)
class _Tensor:
    name: str
    dtype: str
    begin: int  # absolute
    end: int  # absolute, exclusive
    esize: int
    cls: tuple[str, int, int, int] | None
    shape: tuple[int, ...] = ()
    carry: bytes = b""
    nonzero: bool = False
    nan: int = 0
    inf: int = 0


@dataclass
class DeepStats:
    """Totals of one file's deep scan (the report's ``deep`` object)."""

    tensors_scanned: int = 0
    bytes_scanned: int = 0
    nan: int = 0
    inf: int = 0
    all_zero_tensors: int = 0
    embedded: int = 0
    skipped: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "tensors_scanned": self.tensors_scanned,
            "bytes_scanned": self.bytes_scanned,
            "nan": self.nan,
            "inf": self.inf,
            "all_zero_tensors": self.all_zero_tensors,
            "embedded_payloads": self.embedded,
            "skipped_tensors": self.skipped,
        }


def _any_nonzero(buf: npt.NDArray[np.uint8], *, backwards: bool = False) -> int | None:
    """Index of the first (or last) nonzero byte, looking block by block."""
    import numpy as np  # noqa: PLC0415 - numpy is imported only when a deep scan runs

    n = len(buf)
    starts = range(0, n, _BLOCK)
    for start in reversed(starts) if backwards else starts:
        block = buf[start : start + _BLOCK]
        if block.any():
            # One bool per byte and an argmax, not an index per nonzero byte.
            if backwards:
                return start + len(block) - 1 - int(np.argmax(block[::-1] != 0))
            return start + int(np.argmax(block != 0))
    return None


class DeepScanner:
    """Streaming deep checks of one file's tensors; feed chunks in order."""

    def __init__(
        self,
        fd: int,
        file_size: int,
        data_start: int,
        tensors: Mapping[str, TensorInfo],
        chunk_size: int,
    ) -> None:
        import numpy as np  # noqa: PLC0415 - numpy is imported only when a deep scan runs

        self._np = np
        self.fd = fd
        self.file_size = file_size
        self.data_start = data_start
        self.stats = DeepStats()
        todo: list[_Tensor] = []
        for name, info in tensors.items():
            begin, end = data_start + info.begin, data_start + info.end
            bits = DTYPE_BITS[info.dtype]
            numel_bits = info.numel * bits
            if end > file_size or info.end < info.begin or numel_bits != 8 * info.nbytes:
                self.stats.skipped.append(name)
                continue
            esize = bits // 8 if bits % 8 == 0 else 1
            if info.dtype == "C64":
                esize = 8
            todo.append(_Tensor(name, info.dtype, begin, end, esize, _FLOAT_CLASSES.get(info.dtype), info.shape))
        todo.sort(key=lambda t: (t.begin, t.end))
        self._todo = todo
        self._next = 0
        self._active: list[_Tensor] = []
        self._done: list[_Tensor] = []
        self._tmp = np.empty(chunk_size + 8, dtype=np.uint8)
        # Absolute offset just past the last nonzero byte seen in the data region.
        self._last_nonzero = data_start

    # -- streaming ---------------------------------------------------------

    def feed(self, chunk: memoryview, offset: int) -> None:
        np = self._np
        c0, c1 = offset, offset + len(chunk)
        arr = np.frombuffer(chunk, dtype=np.uint8)
        lo = max(c0, self.data_start)
        if lo < c1:
            last = _any_nonzero(arr[lo - c0 :], backwards=True)
            if last is not None:
                self._last_nonzero = lo + last + 1
        while self._next < len(self._todo) and self._todo[self._next].begin < c1:
            self._active.append(self._todo[self._next])
            self._next += 1
        still: list[_Tensor] = []
        for t in self._active:
            s, e = max(t.begin, c0), min(t.end, c1)
            if s < e:
                self._piece(t, arr[s - c0 : e - c0])
            if t.end <= c1:
                self._done.append(t)
            else:
                still.append(t)
        self._active = still

    def _piece(self, t: _Tensor, piece: npt.NDArray[np.uint8]) -> None:
        self.stats.bytes_scanned += len(piece)
        if not t.nonzero and piece.any():
            t.nonzero = True
        if t.cls is None or not t.nonzero:
            # An all-zero stretch holds no NaN or Inf in any encoding, but the
            # carry must still advance across it.
            if t.cls is not None:
                t.carry = self._skip_carry(t, len(piece))
            return
        if t.carry:
            need = t.esize - len(t.carry)
            joined = t.carry + piece[:need].tobytes()
            piece = piece[need:]
            if len(joined) == t.esize:
                self._count(t, self._np.frombuffer(joined, dtype=self._np.uint8))
                t.carry = b""
            else:
                t.carry = joined
                return
        whole = len(piece) - len(piece) % t.esize
        if whole:
            self._count(t, piece[:whole])
        t.carry = piece[whole:].tobytes()

    def _skip_carry(self, t: _Tensor, n: int) -> bytes:
        # Zeros only: keep the carry length consistent with element bounds.
        have = (len(t.carry) + n) % t.esize
        return b"\x00" * have

    def _count(self, t: _Tensor, raw: npt.NDArray[np.uint8]) -> None:
        np = self._np
        assert t.cls is not None
        kind, bits, mask, special = t.cls
        itype = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
        x = raw.view(itype)
        if kind == "nan-eq":
            t.nan += int(np.count_nonzero(x == special))
            return
        if bits >= 32:
            # Fast path for F32, C64 and F64: SIMD float min/max propagate
            # NaN and reach +-Inf, so two reductions vouch for a clean block.
            f = raw.view(np.float32 if bits == 32 else np.float64)
            if np.isfinite(f.min()) and np.isfinite(f.max()):
                return
        if mask == (1 << bits) - 1:
            mag = x
        else:
            mag = self._tmp[: len(raw)].view(itype)
            np.bitwise_and(x, itype(mask), out=mag)
        if mag.max() < special:
            return
        if t.dtype == "C64":
            pair = mag.reshape(-1, 2)
            nan = (pair > special).any(axis=1)
            inf = (pair == special).any(axis=1) & ~nan
            t.nan += int(np.count_nonzero(nan))
            t.inf += int(np.count_nonzero(inf))
        elif kind == "ieee":
            t.nan += int(np.count_nonzero(mag > special))
            t.inf += int(np.count_nonzero(mag == special))
        else:
            t.nan += int(np.count_nonzero(mag >= special))

    # -- results -----------------------------------------------------------

    def finish(self, out: Checker) -> DeepStats:
        """Report the findings of every tensor, in offset order."""
        stats = self.stats
        # Empty tensors at the very end are never reached by a chunk; they hold
        # nothing to check.  Other tensors never reached are left out.
        done = self._done + [t for t in self._todo[self._next :] if t.begin == t.end]
        done.sort(key=lambda t: (t.begin, t.end))
        for t in done:
            stats.tensors_scanned += 1
            nbytes = t.end - t.begin
            if nbytes == 0:
                continue
            if t.nan or t.inf:
                stats.nan += t.nan
                stats.inf += t.inf
                numel = nbytes // t.esize if t.esize else nbytes
                out.add(
                    "tensor-nan-inf",
                    f"tensor {t.name!r} ({t.dtype}) holds {t.nan} NaN and {t.inf} infinite values out of {numel}",
                    t.begin,
                    tensor=t.name,
                )
            if not t.nonzero:
                stats.all_zero_tensors += 1  # every one, as a fact; reported only when suspicious
                if zero_is_suspicious(t.name, t.shape):
                    shape = "[" + ", ".join(map(str, t.shape)) + "]"
                    out.add(
                        "tensor-all-zero",
                        f"tensor {t.name!r} ({t.dtype}, {shape}, {nbytes} bytes) is entirely zero",
                        t.begin,
                        tensor=t.name,
                    )
            if t.dtype in BYTE_DTYPES and t.nonzero:
                what = self._payload(t)
                if what is not None:
                    stats.embedded += 1
                    out.add(
                        "tensor-embedded-executable",
                        f"byte tensor {t.name!r} ({t.dtype}, {nbytes} bytes) holds {what}; "
                        "never unpickle, unzip or run it",
                        t.begin,
                        tensor=t.name,
                    )
        self._zero_tail(done, out)
        return stats

    def _pread(self, offset: int, n: int) -> bytes:
        out = []
        while n > 0:
            got = os.pread(self.fd, n, offset)
            if not got:
                break
            out.append(got)
            offset += len(got)
            n -= len(got)
        return b"".join(out)

    def _payload(self, t: _Tensor) -> str | None:
        nbytes = t.end - t.begin
        head = self._pread(t.begin, min(nbytes, 64))
        what = head_signature(head)
        if what is None and head.startswith(b"MZ") and len(head) >= 64:
            # PE: "MZ", then e_lfanew at 0x3c points at "PE\0\0".
            (pe,) = struct.unpack_from("<I", head, 0x3C)
            if 0 < pe <= nbytes - 4 and self._pread(t.begin + pe, 4) == b"PE\x00\x00":
                what = "a PE (Windows) executable"
        if what is None and nbytes >= _EOCD_LEN:
            tail = self._pread(t.end - min(nbytes, _TAIL_WINDOW), min(nbytes, _TAIL_WINDOW))
            if tail_has_eocd(tail) is not None:
                what = "a ZIP archive (its end-of-central-directory record ends the tensor)"
        return what

    def _zero_tail(self, done: list[_Tensor], out: Checker) -> None:
        region = self.file_size - self.data_start
        run = self.file_size - self._last_nonzero
        if region <= 0 or run <= 0:
            return
        # A short region that is all zero is reported only when it holds a
        # weight matrix tensor-all-zero reports: a shard of one zero bias is
        # what a writer makes of a fresh model, not a cut-short download.
        if run < ZERO_TAIL_MIN and (
            run != region or not any(zero_is_suspicious(t.name, t.shape) for t in done if t.end > t.begin)
        ):
            return
        start = self._last_nonzero
        covered = [t.name for t in done if t.end > start and t.end > t.begin]
        names = ", ".join(repr(n) for n in covered[:3]) + (f" and {len(covered) - 3} more" if len(covered) > 3 else "")
        whole = "the whole data region" if run == region else f"the last {run} bytes of the data region"
        out.add(
            "data-zero-tail",
            f"{whole} ({run} bytes from offset {start}) are zero"
            + (f", covering {names}" if names else "")
            + "; the download may have been cut short",
            start,
        )
