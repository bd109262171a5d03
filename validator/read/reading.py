# Strategy: one sequential pass over a whole file, in fixed-size chunks
# into two reused buffers.  Each chunk goes to the digester (sha256, and the
# digests a model signature lists) in a worker thread, since hashlib releases
# the GIL, and at the same time to the deep checks in the calling thread, so
# a file is read from disk once and memory stays at two chunks per process.
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import io
    from collections.abc import Callable
    from concurrent.futures import Future

    from validator.read.integrity import Digester

__all__ = ["read_pass"]


def _read_once(
    fh: io.FileIO,
    chunk_size: int,
    digester: Digester | None,
    feed: Callable[[memoryview, int], None] | None,
    progress: Callable[[int], None] | None,
) -> int:
    """read_pass for a file of one chunk: hash and check in this thread."""
    buf = bytearray(chunk_size)
    got = fh.readinto(buf) or 0
    view = memoryview(buf)[:got]
    if digester is not None:
        digester.update(view)
    if feed is not None and got:
        feed(view, 0)
    if progress is not None and got:
        progress(got)
    return got


def read_pass(
    fh: io.FileIO,
    size: int,
    chunk_size: int,
    digester: Digester | None,
    feed: Callable[[memoryview, int], None] | None,
    *,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Read the whole file once, in order; return the bytes read."""
    fh.seek(0)
    if size <= chunk_size:  # one read: no later chunk to hash beside, so no thread
        return _read_once(fh, chunk_size, digester, feed, progress)
    buffers = [bytearray(chunk_size), bytearray(chunk_size)]
    pending: list[Future[None] | None] = [None, None]
    offset = 0
    with ThreadPoolExecutor(max_workers=1) as hasher:
        i = 0
        while offset < size:
            slot = i % 2
            waiting = pending[slot]
            if waiting is not None:
                waiting.result()  # the buffer is free only once it is hashed
            view = memoryview(buffers[slot])[: min(chunk_size, size - offset)]
            got = fh.readinto(view)
            if not got:
                break
            view = view[:got]
            if digester is not None:
                pending[slot] = hasher.submit(digester.update, view)
            if feed is not None:
                feed(view, offset)
            if progress is not None:
                progress(got)
            offset += got
            i += 1
        for waiting in pending:
            if waiting is not None:
                waiting.result()
    return offset
