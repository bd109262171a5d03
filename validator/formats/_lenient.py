# Strategy: the second opinion behind a forgiven read.  A stream read from
# byte 0 that fails before it imports anything is forgiven (pickle cannot
# call what it has not imported), but the opcode reader is stricter than
# pickle: it refuses a FRAME that an opcode straddles, a stack or memo it
# cannot follow.  "The reader failed first" is therefore not yet "pickle
# fails first".  pickletools.genops walks opcodes as pickle's file reader
# consumes bytes (across frame boundaries, with no stack or memo to fail
# on), so it stops only where pickle itself must stop (an unknown opcode, an
# argument cut short or malformed, STOP), never earlier.  If it meets an
# import on the way, pickle may resolve that global: the read is not
# forgiven.
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import mmap

    Buffer = bytes | mmap.mmap

__all__ = ["IMPORTS", "MAX_LINE", "MAX_OPS", "may_import"]

# Every opcode that makes pickle resolve a global (find_class).
IMPORTS: Final = frozenset({"GLOBAL", "INST", "STACK_GLOBAL", "EXT1", "EXT2", "EXT4"})
MAX_OPS: Final = 1_000_000
MAX_LINE: Final = 1 << 20
_LEGACY_MORE: Final = 4  # torch's legacy stream: version, sys_info, the object, the storage keys


class _TooFarError(Exception):
    """Past what is followed here: assume the worst."""


class _View:
    """read, readline and tell over a buffer, each bounded by what is left (genops' file protocol)."""

    def __init__(self, buf: Buffer) -> None:
        self._buf = buf
        self._pos = 0

    def tell(self) -> int:
        return self._pos

    def read(self, n: int = -1) -> bytes:
        end = len(self._buf) if n < 0 else min(len(self._buf), self._pos + n)
        data = bytes(self._buf[self._pos : end])
        self._pos = end
        return data

    def readline(self) -> bytes:
        at = self._buf.find(b"\n", self._pos, self._pos + MAX_LINE + 1)
        if at < 0:
            if len(self._buf) - self._pos > MAX_LINE:
                raise _TooFarError
            at = len(self._buf) - 1
        return self.read(at + 1 - self._pos)


def may_import(buf: Buffer) -> bool:
    """Whether a loader's ``pickle.load`` of ``buf`` might resolve a global before it fails or stops.

    torch.load reads four more streams when the first one's value is its
    magic number: whenever the first stream ends, they are walked too.
    """
    import pickletools  # noqa: PLC0415 - only once a byte-0 read failed: check's start-up stays light

    view = _View(buf)
    budget = MAX_OPS
    streams, first = 1, True
    try:
        while streams:
            streams -= 1
            pushed = 0  # ops that pushed anything: never less than the stack's depth
            for op, _, _ in pickletools.genops(view):  # type: ignore[arg-type]  # read, readline and tell suffice
                budget -= 1
                if op.name == "STACK_GLOBAL" and pushed < 2:
                    return False  # pickle raises "unpickling stack underflow" here (an .npy's first byte)
                if op.name in IMPORTS or budget <= 0:
                    return True
                pushed += bool(op.stack_after)
            if first:  # it may have left torch's magic number on top, however it got there
                streams = _LEGACY_MORE
            first = False
    except _TooFarError:
        return True
    except (ValueError, struct.error, OverflowError, EOFError, IndexError):
        return False
    return False
