# Strategy: what the loader's direct path (issue 22) must not change.  The
# direct path serves a byte-sized, aligned-or-not tensor with one view of the
# mapping or one read into new memory, from the report's columns; writable
# handles validate from reads of their descriptor and map nothing unless a
# tensor needs it; a small writable batch is one read.  Each test pins one
# behaviour those shortcuts could break: results equal to safetensors 0.8.0
# (dtype, shape, bytes), arrays that are writable and the caller's own,
# truncation refused with the same error, one validation from the handle's
# own descriptor, the platform without preadv, and the descriptor's lifetime.
from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest
import safetensors
import safetensors.numpy
from _stbytes import tensors_file

import validator
from validator.compat import SafetensorError, safe_open
from validator.compat import numpy as cnp
from validator.io import _mapping, loader

# Every byte-sized dtype numpy has, scalars, empty tensors, shapes repeated
# and shapes of their own, a misaligned tensor (F32 after a 1-byte tensor),
# and one tensor large enough for its own copy-on-write mapping.
BIG = 1 << 20
LAYOUT = [
    ("a_u8", "U8", [1], b"\x07"),
    ("b_misaligned_f32", "F32", [3], struct.pack("<3f", 1.5, -2.0, 3.25)),
    ("c_pad", "U8", [3], b"\x01\x02\x03"),
    ("d_f64", "F64", [2, 2], struct.pack("<4d", 1, 2, 3, 4)),
    ("e_f64_same_shape", "F64", [2, 2], struct.pack("<4d", 5, 6, 7, 8)),
    ("e_f64_same_size_other_shape", "F64", [4], struct.pack("<4d", 9, 10, 11, 12)),
    ("f_scalar", "I64", [], struct.pack("<q", -9)),
    ("g_empty", "F16", [2, 0], b""),
    ("h_i8", "I8", [4], bytes([0x80, 0x7F, 0, 1])),
    ("i_bool", "BOOL", [2], b"\x00\x01"),
    ("j_u16", "U16", [2, 1], struct.pack("<2H", 1, 65535)),
    ("k_i16", "I16", [3], struct.pack("<3h", -1, 2, -3)),
    ("l_f16", "F16", [2], struct.pack("<2e", 0.5, -1.0)),
    ("m_u32", "U32", [1, 1, 2], struct.pack("<2I", 7, 2**32 - 1)),
    ("n_i32", "I32", [2], struct.pack("<2i", -7, 7)),
    ("o_u64", "U64", [1], struct.pack("<Q", 2**64 - 1)),
    ("p_big", "U8", [BIG], bytes(range(256)) * (BIG // 256)),
]


# A file as safetensors writes it (aligned, compact header: stcheck's
# canonical fast path, whose kinds are parsed once per distinct shape), with
# shapes repeated, and the same size under another shape.
CANONICAL = {
    "a": np.arange(4, dtype="<f8").reshape(2, 2),
    "b": np.arange(4, 8, dtype="<f8").reshape(2, 2),
    "c": np.arange(8, 12, dtype="<f8"),
    "d": np.arange(4, dtype="<f4").reshape(2, 2),
    "e": np.arange(4, dtype="<f4"),
    "f": np.arange(6, dtype="<i4").reshape(1, 2, 3),
}


@pytest.fixture(params=["small", "with-big", "canonical"])
def layout(request, tmp_path: Path) -> Path:
    """Every layout: small tensors only (one read per batch), one large tensor too, and the canonical form."""
    path = tmp_path / f"{request.param}.safetensors"
    if request.param == "canonical":
        safetensors.numpy.save_file(CANONICAL, path)
        return path
    entries = LAYOUT if request.param == "with-big" else LAYOUT[:-1]
    path.write_bytes(tensors_file(entries, {"format": "np"}))
    return path


def expected(path: Path) -> dict[str, bytes]:
    if path.name.startswith("canonical"):
        return {name: array.tobytes() for name, array in CANONICAL.items()}
    return {name: raw for name, _, _, raw in LAYOUT if path.name.startswith("with-big") or name != "p_big"}


def same(ours: np.ndarray, theirs: np.ndarray) -> None:
    assert type(ours) is np.ndarray
    assert ours.dtype == theirs.dtype
    assert ours.shape == theirs.shape
    assert ours.tobytes() == theirs.tobytes()
    assert ours.flags.writeable  # the caller's own, as the reference's copies are


def test_every_load_equals_the_reference(layout):
    with safe_open(layout, "np") as ours, safetensors.safe_open(layout, "np") as theirs:
        for name in theirs.keys():  # noqa: SIM118 - safe_open is not iterable
            same(ours.get_tensor(name), theirs.get_tensor(name))
        mine, ref = ours.get_tensors(), theirs.get_tensors()
    assert list(mine) == list(ref)
    for name in ref:
        same(mine[name], ref[name])
    mine, ref = cnp.load_file(layout), safetensors.numpy.load_file(layout)
    assert list(mine) == list(ref)
    for name in ref:
        same(mine[name], ref[name])
    mine, ref = cnp.load(layout.read_bytes()), safetensors.numpy.load(layout.read_bytes())
    with safetensors.safe_open(layout, "np") as theirs:
        assert list(mine) == theirs.offset_keys()  # file order; the reference's is hash order
    assert sorted(mine) == sorted(ref)
    for name in ref:
        same(mine[name], ref[name])


def test_every_torch_load_equals_the_reference(layout):
    torch = pytest.importorskip("torch")
    import safetensors.torch

    import validator.compat.torch as ctorch

    with safe_open(layout, "pt") as ours, safetensors.safe_open(layout, "pt") as theirs:
        pairs = [(ours.get_tensor(name), theirs.get_tensor(name)) for name in theirs.keys()]  # noqa: SIM118
    pairs += list(zip(ctorch.load_file(layout).values(), safetensors.torch.load_file(layout).values(), strict=True))
    for mine, ref in pairs:
        assert mine.dtype == ref.dtype
        assert mine.shape == ref.shape
        assert torch.equal(mine, ref)


def _loads(path: Path) -> list[dict[str, np.ndarray]]:
    """Every way the numpy family loads a file: each get_tensor, get_tensors, load_file, load."""
    with safe_open(path, "np") as f:
        one = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118 - safe_open is not iterable
        again = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118
        every, every_again = f.get_tensors(), f.get_tensors()
    with validator.open(path, writable=True) as f:
        handle = {name: f.get(name) for name in f}
        batch, batch_again = f.load(f.entries()), f.load(f.entries())
    data = path.read_bytes()
    return [
        one,
        again,
        every,
        every_again,
        handle,
        batch,
        batch_again,
        cnp.load_file(path),
        cnp.load(data),
        cnp.load(data),
    ]


def test_arrays_are_writable_the_callers_own_and_never_reach_the_file(layout):
    before = layout.read_bytes()
    loads = _loads(layout)
    arrays = [array for load in loads for array in load.values() if array.nbytes]
    for i, array in enumerate(arrays):
        assert array.flags.writeable
        for other in arrays[i + 1 :]:
            assert not np.shares_memory(array, other)
    for array in arrays:
        array.reshape(-1).view(np.uint8)[:] = 0xEE
    assert layout.read_bytes() == before
    for load in _loads(layout):  # a later load sees the file, not the writes
        assert {name: array.tobytes() for name, array in load.items()} == expected(layout)


def test_load_of_bytes_is_independent_of_the_callers_buffer(layout):
    data = bytearray(layout.read_bytes())
    arrays = cnp.load(data)
    data[:] = bytes(len(data))
    assert {name: array.tobytes() for name, array in arrays.items()} == expected(layout)


def test_validator_open_still_gives_read_only_zero_copy_views(layout):
    with validator.open(layout) as f:
        aligned = [name for name in f if name not in f.misaligned and f.info(name).nbytes]
        one, two = f.get(aligned[-1]), f.get(aligned[-1])
        assert not one.flags.writeable
        assert np.shares_memory(one, two)  # both views of the one mapping


# -- truncation: a read that comes back short names the tensor --------------


@pytest.mark.parametrize("call", ["get_tensor", "get_tensors", "validator.open", "validator.load"])
def test_small_tensors_of_a_file_truncated_after_open_are_refused(tmp_path, call):
    path = tmp_path / "shrinks.safetensors"
    path.write_bytes(tensors_file([("x", "F32", [4], bytes(16)), ("y", "F32", [1024], bytes(4096))]))
    size = path.stat().st_size
    with safe_open(path, "np") as f, validator.open(path, writable=True) as g:
        calls = {
            "get_tensor": lambda: f.get_tensor("y"),
            "get_tensors": f.get_tensors,
            "validator.open": lambda: g.get("y"),
            "validator.load": lambda: g.load(g.entries()),
        }
        os.truncate(path, size - 100)
        with pytest.raises((SafetensorError, validator.LoadError), match=f"shrank to {size - 100} bytes.*tensor 'y'"):
            calls[call]()
        assert f.get_tensor("x").tolist() == [0, 0, 0, 0]  # the part still there loads


# -- validation: once, from the handle's own descriptor ----------------------


@pytest.mark.parametrize("metadata_bytes", [0, 100_000], ids=["one-read", "header-past-the-first-read"])
def test_a_writable_handle_validates_once_from_its_descriptor(tmp_path, monkeypatch, metadata_bytes):
    path = tmp_path / "ok.safetensors"
    metadata = {"blob": "x" * metadata_bytes} if metadata_bytes else None
    path.write_bytes(tensors_file([("t", "U8", [2], b"\x01\x02")], metadata))
    header_len = struct.unpack("<Q", path.read_bytes()[:8])[0]
    seen = []
    real = loader.check_buffer

    def spy(prefix, read_header, size, profile, where):
        header = read_header(header_len)
        seen.append((prefix, len(header), json.loads(header)["t"]["dtype"]))
        return real(prefix, read_header, size, profile, where)

    monkeypatch.setattr(loader, "check_buffer", spy)
    monkeypatch.setattr(validator._validate, "_from_fd", lambda *a: pytest.fail("re-read the file"))
    with safe_open(path, "np") as f:
        assert f.get_tensor("t").tolist() == [1, 2]
        assert f.metadata() == metadata
    assert seen == [(struct.pack("<Q", header_len), header_len, "U8")]


def test_without_preadv_the_same_arrays_come_from_the_mapping(layout, monkeypatch):
    expected = [{name: array.tobytes() for name, array in load.items()} for load in _loads(layout)]
    monkeypatch.setattr(_mapping, "preadv", None)
    loads = _loads(layout)
    assert [{name: array.tobytes() for name, array in load.items()} for load in loads] == expected
    arrays = [array for load in loads for array in load.values() if array.nbytes]
    assert all(array.flags.writeable for array in arrays)
    assert not any(np.shares_memory(a, b) for i, a in enumerate(arrays) for b in arrays[i + 1 :])


# -- the descriptor's lifetime ------------------------------------------------


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


@pytest.mark.parametrize(("framework", "writable"), [("numpy", False), ("numpy", True), ("torch", False)])
def test_close_releases_the_descriptor_at_once_unless_a_call_holds_it(layout, framework, writable):
    if framework == "torch":
        pytest.importorskip("torch")
    handle = validator.open(layout, framework=framework, writable=writable)
    name = handle.keys()[-1]
    kept = handle.get(name)
    fd = handle._live.fd
    handle.close()
    assert not _is_open(fd)  # nothing else ran in between: the number was not reused
    assert bytes(kept.numpy() if framework == "torch" else kept) == expected(layout)[name]  # handed out: still valid
    with pytest.raises(validator.LoadError, match="the handle is closed"):
        handle.get(name)
    again = validator.open(layout, framework=framework, writable=writable)
    in_flight = again._live  # what a get() running in another thread holds
    fd = in_flight.fd
    again.close()
    assert _is_open(fd)  # a running call still reads this file ...
    assert os.fstat(fd).st_ino == layout.stat().st_ino
    del in_flight
    assert not _is_open(fd)  # ... and the descriptor goes with it


def test_a_refused_file_leaves_no_descriptor_open(tmp_path):
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc/self/fd")
    path = tmp_path / "bad.safetensors"
    path.write_bytes(tensors_file([("t", "U8", [3], b"\x01\x02")]))  # 2 bytes for 3 elements
    before = len(list(Path("/proc/self/fd").iterdir()))
    for writable in (False, True):
        with pytest.raises(validator.InvalidFileError):
            validator.open(path, writable=writable)
        with pytest.raises(SafetensorError):
            safe_open(path, "np")
    assert len(list(Path("/proc/self/fd").iterdir())) == before
