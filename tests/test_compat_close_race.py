# Strategy: `get_tensor` racing `close()` (issue 21, item 4).  Reader threads
# call get_tensor in a loop while the main thread closes the handle and an
# opener thread keeps opening other files, so that a freed descriptor
# number is taken at once by a file whose bytes differ.  Every call must
# either return the opened file's bytes (it started before close) or raise
# what safetensors 0.8.0 raises after close: SafetensorError "File is
# closed" (validator.open: LoadError "the handle is closed").  Another
# file's bytes, or any other exception, is a failure.  Each test runs for a
# bounded time (a few seconds) and stops at the first wrong answer.
from __future__ import annotations

import os
import random
import sys
import threading
import time
from typing import TYPE_CHECKING

import numpy as np
import pytest

import validator
from validator.compat import SafetensorError, safe_open
from validator.compat._errors import CompatLoadError

if TYPE_CHECKING:
    from pathlib import Path

BIG = 1 << 20  # the loader's own-mapping path starts here (mmap of the descriptor)
SMALL = 4096  # the copy path
DEADLINE_S = 3.0
OTHERS = 8
READS = ("big",) * 4 + ("small",) * 2


def write_file(path: Path, fill: int) -> None:
    validator.save(
        {"big": np.full(BIG, fill, np.uint8), "small": np.full(SMALL, fill, np.uint8)},
        path,
    )


@pytest.fixture(autouse=True)
def fast_switching():
    """Switch threads every microsecond (default 5 ms), so that the race is hit in seconds."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


@pytest.fixture
def files(tmp_path):
    mine = tmp_path / "mine.safetensors"
    write_file(mine, 0xAA)
    other = tmp_path / "other.safetensors"
    write_file(other, 0xBB)
    return mine, other


def as_bytes(value: object) -> np.ndarray:
    if hasattr(value, "numpy"):  # a torch tensor
        return value.numpy().reshape(-1).view(np.uint8)  # type: ignore[attr-defined,no-any-return]
    return np.asarray(value).reshape(-1).view(np.uint8)


class Race:
    """Readers, a closer and an opener over a stream of handles; records what went wrong.

    The readers run for the whole test and always use the newest handle;
    the main thread opens a handle, lets the readers at it for up to half a
    millisecond, closes it and opens the next, so that thousands of closes
    a second land in the middle of reads.
    """

    def __init__(self, open_handle, get, closed_error, other: Path) -> None:
        self.open_handle, self.get, self.closed_error, self.other = open_handle, get, closed_error, other
        self.wrong: list[str] = []  # another file's bytes
        self.stray: list[str] = []  # an exception 0.8.0 never raises here
        self.handle = None
        self.done = threading.Event()

    def reader(self, name: str) -> None:
        while not self.done.is_set() and not self.wrong:
            try:
                value = self.get(self.handle, name)
            except Exception as exc:  # noqa: BLE001 - every other exception is the failure recorded
                if not self.closed_error(exc):
                    self.stray.append(f"{name}: {type(exc).__name__}: {exc}")
                continue  # keep reading: the descriptor may be reused next
            got = as_bytes(value)
            low, high = int(got.min()), int(got.max())
            if low != 0xAA or high != 0xAA:
                self.wrong.append(f"{name}: another file's bytes ({low:#x}..{high:#x}, this file's are 0xaa)")

    def opener(self) -> None:
        while not self.done.is_set():
            fds = [os.open(self.other, os.O_RDONLY) for _ in range(OTHERS)]
            time.sleep(0)
            for fd in fds:
                os.close(fd)

    def run(self) -> list[str]:
        rng = random.Random(21)
        self.handle = self.open_handle()
        threads = [threading.Thread(target=self.opener, daemon=True)]
        threads += [threading.Thread(target=self.reader, args=(name,), daemon=True) for name in READS]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + DEADLINE_S
        try:
            while time.monotonic() < deadline and not self.wrong:
                time.sleep(rng.random() * 0.0005)
                old, self.handle = self.handle, self.open_handle()
                old.close()
        finally:
            self.done.set()
            for thread in threads:
                thread.join(5)
            self.handle.close()
        return self.wrong + sorted(set(self.stray))[:3]


class _Compat:
    """safe_open with a close() (the reference's handle closes in __exit__)."""

    def __init__(self, path: Path, framework: str) -> None:
        self.f = safe_open(path, framework)

    def close(self) -> None:
        self.f.__exit__(None, None, None)


def compat_closed(exc: BaseException) -> bool:
    # What `safe_open` raises after __exit__ when no call is racing it.
    return type(exc) is CompatLoadError and isinstance(exc, SafetensorError) and str(exc) == "File is closed"


def loader_closed(exc: BaseException) -> bool:
    return type(exc) is validator.LoadError and str(exc).endswith(": the handle is closed")


@pytest.mark.parametrize("framework", ["np", "pt", pytest.param("flax", marks=pytest.mark.slow)])
def test_compat_get_tensor_racing_close_never_returns_another_files_bytes(files, framework):
    if framework == "pt":
        pytest.importorskip("torch")
    if framework == "flax":
        pytest.importorskip("jax")
    mine, other = files
    race = Race(
        lambda: _Compat(mine, framework),
        lambda handle, name: handle.f.get_tensor(name),
        compat_closed,
        other,
    )
    assert race.run() == []


@pytest.mark.parametrize("framework", ["np", pytest.param("pt", marks=pytest.mark.slow)])
def test_compat_get_tensors_racing_close(files, framework):
    if framework == "pt":
        pytest.importorskip("torch")
    mine, other = files

    def get(handle, name):
        return handle.f.get_tensors()[name]

    race = Race(lambda: _Compat(mine, framework), get, compat_closed, other)
    assert race.run() == []


@pytest.mark.parametrize(
    ("framework", "writable"),
    [
        pytest.param("numpy", False, marks=pytest.mark.slow),
        ("numpy", True),
        pytest.param("torch", False, marks=pytest.mark.slow),
    ],
)
def test_loader_get_racing_close_never_returns_another_files_bytes(files, framework, writable):
    if framework == "torch":
        pytest.importorskip("torch")
    mine, other = files

    def get(handle, name):
        value = handle.get(name)
        return value.copy() if framework == "numpy" else value.clone()

    race = Race(lambda: validator.open(mine, framework=framework, writable=writable), get, loader_closed, other)
    assert race.run() == []
