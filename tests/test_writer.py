# Strategy: the writer against safetensors 0.8.0 as the oracle.  Hypothesis
# draws tensor dicts over every dtype (name -> (dtype, shape, raw bytes));
# each property checks one direction of the round trip bit for bit:
# our bytes == safetensors.serialize's bytes, ours -> safetensors load,
# safetensors -> ours load, ours -> ours.  Example tests cover the input
# conversions (big-endian, non-contiguous, torch, sub-byte packing), the
# shared-storage refusal, atomic replacement and argument errors.
from __future__ import annotations

import json
import os

import ml_dtypes
import numpy as np
import pytest
import safetensors
from hypothesis import given
from hypothesis import strategies as st
from reference import TORCH_NAMES

import validator
from validator import strategies
from validator._dtypes import DTYPE_BITS, DTYPES

ORACLE_NAMES = TORCH_NAMES


# Tensor dicts come from the project's strategies (validator.strategies):
# name -> Tensor(dtype, shape, raw bytes), a NamedTuple that validator.save
# takes as a raw triple.  safetensors.serialize can only express F4 as
# float4_e2m1fn_x2, whose last dimension is even, and cannot express F6.
def _oracle_can_write(t: strategies.Tensor) -> bool:
    return t.dtype != "F4" or (len(t.shape) > 0 and t.shape[-1] % 2 == 0)


def tensor_dicts(dtypes=DTYPES):
    return strategies.tensor_dicts(tensors=strategies.tensors(dtypes=dtypes).filter(_oracle_can_write), max_size=6)


small_metadata = st.none() | strategies.metadata_dicts(max_size=1)
names = strategies.tensor_names()


def oracle_serialize(tensors, metadata):
    keep = []
    specs = {}
    for name, (dtype, shape, data) in tensors.items():
        buf = np.frombuffer(data, np.uint8) if data else np.zeros(1, np.uint8)
        keep.append(buf)
        spec_shape = list(shape)
        if dtype == "F4":
            spec_shape[-1] //= 2  # TensorSpec doubles the last dim of float4_e2m1fn_x2
        specs[name] = safetensors.TensorSpec(
            dtype=ORACLE_NAMES[dtype], shape=spec_shape, data_ptr=buf.ctypes.data, data_len=len(data)
        )
    return bytes(safetensors.serialize(specs, metadata=metadata))


def saved(tmp_path, tensors, metadata=None, **kw) -> bytes:
    path = tmp_path / "out.safetensors"
    validator.save(tensors, path, metadata, **kw)
    return path.read_bytes()


def get(f, name):
    """f.get(name), or None for an empty tensor whose shape the framework cannot hold."""
    if f.info(name).numel:
        return f.get(name)
    try:
        return f.get(name)
    except validator.LoadError as exc:
        message = str(exc)
    assert "too large" in message
    return None


def raw_of(arr) -> bytes:
    if arr is None:
        return b""
    return np.ascontiguousarray(arr).reshape(-1).view(np.uint8).tobytes()


ORACLE_DTYPES = tuple(d for d in DTYPES if d in ORACLE_NAMES)


@given(tensors=tensor_dicts(ORACLE_DTYPES), metadata=small_metadata)
def test_bytes_identical_to_safetensors_serialize(tmp_path_factory, tensors, metadata):
    # Nonempty metadata, or at least one tensor: the reference writes an
    # invalid header for no tensors with metadata {} (see the test below).
    if not tensors and metadata == {}:
        metadata = None
    ours = saved(tmp_path_factory.mktemp("w"), tensors, metadata)
    assert ours == oracle_serialize(tensors, metadata)


@given(tensors=tensor_dicts(), metadata=small_metadata)
def test_ours_to_safetensors_load_bit_exact(tmp_path_factory, tensors, metadata):
    ours = saved(tmp_path_factory.mktemp("w"), tensors, metadata)
    loaded = dict(safetensors.deserialize(ours))
    assert set(loaded) == set(tensors)
    for name, (dtype, shape, data) in tensors.items():
        assert loaded[name]["dtype"] == dtype
        assert loaded[name]["shape"] == list(shape)
        assert bytes(loaded[name]["data"]) == data


@given(tensors=tensor_dicts(ORACLE_DTYPES), metadata=small_metadata)
def test_safetensors_to_ours_load_bit_exact(tmp_path_factory, tensors, metadata):
    if not tensors and metadata == {}:
        metadata = None
    path = tmp_path_factory.mktemp("r") / "theirs.safetensors"
    path.write_bytes(oracle_serialize(tensors, metadata))
    with validator.open(path) as f:
        assert set(f.keys()) == set(tensors)
        assert f.metadata() == metadata
        for name, (dtype, shape, data) in tensors.items():
            assert raw_of(get(f, name)) == data
            assert f.info(name).shape == tuple(shape)
            assert f.info(name).dtype == dtype


@given(tensors=tensor_dicts(), metadata=st.none() | strategies.metadata_dicts(max_size=4))
def test_ours_to_ours_bit_exact_and_idempotent(tmp_path_factory, tensors, metadata):
    tmp = tmp_path_factory.mktemp("o")
    first = saved(tmp, tensors, metadata)
    with validator.open(tmp / "out.safetensors") as f:
        assert f.metadata() == metadata
        loaded = {name: get(f, name) for name in f}
        for name, (dtype, _, data) in tensors.items():
            assert raw_of(loaded[name]) == data
            assert f.info(name).dtype == dtype
        # Saving what we loaded writes the same bytes (packed sub-byte tensors
        # go back as raw triples, since the packed view has no logical shape).
        again = {
            n: (f.info(n).dtype, list(f.info(n).shape), raw_of(a))
            if a is None or DTYPE_BITS[f.info(n).dtype] % 8
            else a
            for n, a in loaded.items()
        }
        second = saved(tmp_path_factory.mktemp("p"), again, metadata)
    assert first == second


@given(tensors=tensor_dicts([d for d in DTYPES if DTYPE_BITS[d] % 8 == 0]))
def test_torch_ours_to_ours_bit_exact(tmp_path_factory, tensors):
    torch = pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("t")
    saved(tmp, tensors)
    with validator.open(tmp / "out.safetensors", framework="torch") as f:
        loaded = {name: get(f, name) for name in f}
    for name, (_, shape, data) in tensors.items():
        t = loaded[name]
        if t is None:
            loaded[name] = tensors[name]
            continue
        assert tuple(t.shape) == tuple(shape)
        assert bytes(t.contiguous().reshape(-1).view(torch.uint8).numpy()) == data
    # torch tensors go back out to the same bytes.
    assert saved(tmp_path_factory.mktemp("u"), loaded) == saved(tmp_path_factory.mktemp("v"), tensors)


def test_metadata_keys_are_sorted_where_the_reference_uses_hash_order(tmp_path):
    meta = dict.fromkeys("zmab", "v")
    ours = saved(tmp_path, {"t": np.zeros(2, np.float32)}, meta)
    n = int.from_bytes(ours[:8], "little")
    assert ours[8 : 8 + n].startswith(b'{"__metadata__":{"a":"v","b":"v","m":"v","z":"v"},')
    theirs = oracle_serialize({"t": ("F32", [2], bytes(8))}, meta)
    # Same parse, same length, same data; only the metadata key order differs.
    m = int.from_bytes(theirs[:8], "little")
    assert json.loads(ours[8 : 8 + n]) == json.loads(theirs[8 : 8 + m])
    assert len(ours) == len(theirs)
    assert ours[8 + n :] == theirs[8 + m :]


def test_no_tensors_with_empty_metadata_is_valid_unlike_the_reference(tmp_path):
    theirs = oracle_serialize({}, {})
    assert not validator.is_valid(theirs)  # safetensors 0.8.0 writes `{},"__metadata__":{}}`
    ours = saved(tmp_path, {}, {})
    assert ours == b"\x18" + bytes(7) + b'{"__metadata__":{}}     '
    assert validator.is_valid(ours)


def test_numpy_inputs_big_endian_non_contiguous_and_ml_dtypes(tmp_path):
    base = np.arange(12, dtype=">i4").reshape(3, 4)
    tensors = {
        "big": base,
        "strided": np.arange(24, dtype=np.float32).reshape(4, 6)[::2, 1::2],
        "fortran": np.asfortranarray(np.arange(6, dtype=np.int16).reshape(2, 3)),
        "bf16": np.array([1.0, -2.5], dtype=ml_dtypes.bfloat16),
        "f8": np.array([0.5, 448.0], dtype=ml_dtypes.float8_e4m3fn),
    }
    ours = saved(tmp_path, tensors)
    with validator.open(tmp_path / "out.safetensors") as f:
        np.testing.assert_array_equal(f.get("big"), base)
        assert f.get("big").dtype == np.dtype("<i4")
        np.testing.assert_array_equal(f.get("strided"), tensors["strided"])
        np.testing.assert_array_equal(f.get("fortran"), tensors["fortran"])
        assert f.info("bf16").dtype == "BF16"
        assert f.get("bf16").tolist() == [1.0, -2.5]
        assert f.info("f8").dtype == "F8_E4M3"
    contiguous = {k: np.ascontiguousarray(v.astype(v.dtype.newbyteorder("<"))) for k, v in tensors.items()}
    assert ours == saved(tmp_path, contiguous)


def test_unpacked_subbyte_arrays_are_packed_as_the_loader_unpacks_them(tmp_path):
    rng = np.random.default_rng(0)
    for dtype, np_type, numel in (
        ("F4", ml_dtypes.float4_e2m1fn, 6),
        ("F6_E2M3", ml_dtypes.float6_e2m3fn, 8),
        ("F6_E3M2", ml_dtypes.float6_e3m2fn, 4),
    ):
        codes = rng.integers(0, 1 << DTYPE_BITS[dtype], size=numel, dtype=np.uint8)
        values = codes.view(np_type).reshape(2, numel // 2)
        saved(tmp_path, {"s": values})
        with validator.open(tmp_path / "out.safetensors", subbyte="unpack") as f:
            assert f.info("s").dtype == dtype
            assert f.get("s").view(np.uint8).tolist() == codes.reshape(2, -1).tolist()
        with pytest.raises(validator.WriteError, match="whole bytes"):
            validator.save({"s": values.reshape(-1)[:1]}, tmp_path / "odd.safetensors")


def test_torch_inputs_non_contiguous_float8_and_float4(tmp_path):
    torch = pytest.importorskip("torch")
    import safetensors.torch

    tensors = {
        "t": torch.arange(12, dtype=torch.float32).reshape(3, 4).t(),
        "f8": torch.tensor([1.0, -2.0]).to(torch.float8_e5m2),
        "u32": torch.arange(3).to(torch.uint32),
        "grad": torch.ones(2, requires_grad=True),
    }
    ours = saved(tmp_path, tensors)
    assert ours == safetensors.torch.save({k: v.detach().contiguous() for k, v in tensors.items()})
    if hasattr(torch, "float4_e2m1fn_x2"):
        packed = torch.tensor([[0x21, 0x43]], dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
        validator.save({"q": packed}, tmp_path / "f4.safetensors")
        with validator.open(tmp_path / "f4.safetensors") as f:
            assert f.info("q").dtype == "F4"
            assert f.info("q").shape == (1, 4)
            assert f.get("q").tobytes() == b"\x21\x43"


def test_shared_and_overlapping_storage_refused_or_deduplicated(tmp_path):
    a = np.arange(8, dtype=np.float32)
    with pytest.raises(validator.WriteError, match="'a', 'b' are the same tensor"):
        validator.save({"a": a, "b": a}, tmp_path / "x.safetensors")
    with pytest.raises(validator.WriteError, match="overlap in memory"):
        validator.save({"a": a[:5], "b": a[4:]}, tmp_path / "x.safetensors")
    with pytest.raises(validator.WriteError, match="overlap in memory"):
        validator.save({"a": a[:5], "b": a[4:]}, tmp_path / "x.safetensors", dedupe=True)
    with pytest.raises(validator.WriteError, match="overlap in memory"):
        validator.save({"a": a, "b": a[::2]}, tmp_path / "x.safetensors", dedupe=True)
    assert not (tmp_path / "x.safetensors").exists()
    # Disjoint views of one buffer are fine.
    validator.save({"a": a[:4], "b": a[4:]}, tmp_path / "x.safetensors")
    dropped = validator.save({"a": a, "b": a, "c": a, "d": a[:0]}, tmp_path / "d.safetensors", {"k": "v"}, dedupe=True)
    assert dropped == {"b": "a", "c": "a"}
    with validator.open(tmp_path / "d.safetensors") as f:
        assert f.keys() == ["a", "d"]
        assert f.metadata() == {"k": "v", "b": "a", "c": "a"}


def test_shared_torch_storage_refused(tmp_path):
    torch = pytest.importorskip("torch")
    w = torch.ones(4, 4)
    with pytest.raises(validator.WriteError, match="overlap in memory"):
        validator.save({"w": w, "row": w[1]}, tmp_path / "x.safetensors")
    assert validator.save({"w": w, "tied": w}, tmp_path / "x.safetensors", dedupe=True) == {
        "w": "tied"
    }  # the smallest name is kept


@pytest.mark.parametrize(
    ("tensors", "metadata", "match"),
    [
        ({"__metadata__": np.zeros(1)}, None, "cannot be named '__metadata__'"),
        ({"bad\ud800": np.zeros(1)}, None, "lone surrogate"),
        ({1: np.zeros(1)}, None, "tensor name must be a str"),
        ({"x": np.zeros(1, np.complex128)}, None, "no safetensors equivalent"),
        ({"x": np.array(["s"])}, None, "no safetensors equivalent"),
        ({"x": [1, 2]}, None, "cannot save a list"),
        ({"x": ("F32", [2], b"1234")}, None, "needs 8 bytes, got 4"),
        ({"x": ("F3", [1], b"1")}, None, "unknown dtype"),
        ({"x": ("F4", [3], b"12")}, None, "needs 1.5 bytes"),
        ({"x": ("U8", [-1], b"")}, None, "non-negative"),
        ({"x": np.zeros(1)}, {"k": 1}, "must be a str"),
        ({"x": np.zeros(1)}, ["k"], "metadata must be a mapping"),
    ],
    ids=[
        "name-metadata",
        "name-surrogate",
        "name-not-str",
        "complex128",
        "unicode",
        "list",
        "raw-short",
        "raw-dtype",
        "raw-subbyte",
        "raw-shape",
        "meta-value",
        "meta-list",
    ],
)
def test_bad_inputs_raise_write_error(tmp_path, tensors, metadata, match):
    with pytest.raises(validator.WriteError, match=match):
        validator.save(tensors, tmp_path / "x.safetensors", metadata)
    assert list(tmp_path.iterdir()) == []


def test_atomic_replace_keeps_old_mapping_intact(tmp_path):
    path = tmp_path / "model.safetensors"
    old = np.arange(1024, dtype=np.int32)
    validator.save({"w": old}, path)
    with validator.open(path) as f:
        view = f.get("w")
        validator.save({"w": np.full(1024, -1, dtype=np.int32)}, path)
        np.testing.assert_array_equal(view, old)  # the old inode is still mapped
    with validator.open(path) as f:
        assert (f.get("w") == -1).all()
    assert [p.name for p in tmp_path.iterdir()] == ["model.safetensors"]


def test_failed_write_leaves_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "model.safetensors"
    validator.save({"w": np.zeros(4)}, path)
    before = path.read_bytes()

    def broken(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(validator.WriteError, match="No space left") as caught:
        validator.save({"w": np.ones(4)}, path)
    # An I/O failure is also an OSError, with its errno, as SourceError is.
    assert isinstance(caught.value, OSError)
    assert isinstance(caught.value, validator.WriteIOError)
    assert caught.value.errno == 28
    assert str(caught.value) == f"{path}: No space left on device"
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["model.safetensors"]


def test_write_into_a_missing_directory_is_an_oserror(tmp_path):
    with pytest.raises(OSError) as caught:
        validator.save({"w": np.ones(4)}, tmp_path / "no" / "such" / "m.safetensors")
    assert isinstance(caught.value, validator.WriteError)
    assert caught.value.errno == 2


def test_file_mode_and_fsync(tmp_path):
    path = tmp_path / "m.safetensors"
    validator.save({"w": np.zeros(2)}, path, fsync=True)
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask
    path.chmod(0o600)
    validator.save({"w": np.ones(2)}, path)
    assert path.stat().st_mode & 0o777 == 0o600


def test_output_is_deterministic_and_valid(tmp_path):
    tensors = {"b": np.ones(3, np.float16), "a": np.ones(2, np.float64), "c": np.ones(5, np.bool_)}
    first = saved(tmp_path, tensors, {"y": "1", "x": "2"})
    second = saved(tmp_path, dict(reversed(tensors.items())), {"x": "2", "y": "1"})
    assert first == second
    assert validator.validate(first).valid
    assert validator.validate(first).findings == ()


# -- refusing files the reference rejects; durability; temporaries (issues 12, 15)


def test_header_over_the_reference_limit_is_refused(tmp_path):
    with pytest.raises(validator.WriteError, match="over the 100,000,000-byte limit"):
        validator.save({"x": np.zeros(1)}, tmp_path / "big.safetensors", {"k": "v" * 100_000_000})
    assert list(tmp_path.iterdir()) == []


def test_element_count_overflow_is_refused_like_the_reference(tmp_path):
    # Zero elements, but the reference multiplies the sides left to right and
    # overflows 64 bits before it meets the 0 (ValidationOverflow).
    tensors = {"e": ("U8", [2**40, 2**40, 0], b"")}
    with pytest.raises(validator.WriteError, match=r"safetensors 0\.8\.0 would reject this file.*size-overflow"):
        validator.save(tensors, tmp_path / "e.safetensors")
    assert list(tmp_path.iterdir()) == []
    validator.save({"e": ("U8", [0, 2**40, 2**40], b"")}, tmp_path / "ok.safetensors")
    with safetensors.safe_open(tmp_path / "ok.safetensors", "np") as f:
        assert f.keys() == ["e"]


@pytest.mark.parametrize(
    "shape",
    [
        [2**32, 2**32, 0],
        [0, 2**63, 2**63],
        [2**63, 2, 0],
        [2**64 - 1, 0],
        [2**64, 0],
        [0, 2**64],
        [2**61, 8, 0],
        [2**60, 8, 0],
    ],
)
@pytest.mark.parametrize("dtype", ["U8", "F32", "F4"])
def test_refuses_exactly_the_empty_shapes_the_reference_rejects(tmp_path, dtype, shape):
    path = tmp_path / "e.safetensors"
    try:
        validator.save({"e": (dtype, shape, b"")}, path)
    except validator.WriteError:
        refused = True
        header = json.dumps(
            {"e": {"dtype": dtype, "shape": shape, "data_offsets": [0, 0]}}, separators=(",", ":")
        ).encode()
        path.write_bytes(len(header).to_bytes(8, "little") + header)
    else:
        refused = False
    try:
        safetensors.safe_open(path, "np").keys()
    except safetensors.SafetensorError:
        rejected = True
    else:
        rejected = False
    assert refused == rejected


def test_fsync_syncs_the_file_and_its_directory(tmp_path, monkeypatch):
    import stat

    synced = []
    real = os.fsync

    def spy(fd):
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    validator.save({"w": np.zeros(2)}, tmp_path / "m.safetensors", fsync=True)
    assert synced == ["file", "dir"]
    synced.clear()
    validator.save({"w": np.zeros(2)}, tmp_path / "m.safetensors")
    assert synced == []


KILLED_WRITER = """
import os, signal, sys, numpy as np, validator
from validator.io import writer
real = writer._write_data
def die(out, items):
    out.write(b"partial" * 1000)
    out.flush()
    os.kill(os.getpid(), signal.SIGKILL)
writer._write_data = die
validator.save({"w": np.zeros(1000)}, sys.argv[1])
"""


def test_temporary_of_a_killed_writer_is_removed_by_the_next_save(tmp_path):
    import subprocess
    import sys

    target = tmp_path / "m.safetensors"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(target)], env=env, check=False)
    assert run.returncode == -9
    (left,) = tmp_path.iterdir()
    assert left.name.startswith(".m.safetensors.")
    assert left.name.endswith(".tmp")
    # Other files that must survive: a live writer's temporary, a fresh one, foreign names.
    live = tmp_path / f".m.safetensors.{os.getpid()}.abcdefgh.tmp"
    dead_pid = 2**22 + 7  # above the largest PID Linux hands out
    fresh = tmp_path / f".m.safetensors.{dead_pid}.abcdefgh.tmp"
    other = tmp_path / ".m.safetensors.backup.tmp"
    for keep in (live, fresh, other):
        keep.write_bytes(b"x")
    old = left.stat().st_mtime - 3600
    for stale in (left, live, other):
        os.utime(stale, (old, old))
    validator.save({"w": np.ones(3)}, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["m.safetensors", live.name, fresh.name, other.name])


# -- aliasing that is no aliasing, and aliasing across libraries (issue 15) ---


def test_interned_one_byte_buffers_are_not_the_same_tensor(tmp_path):
    a = np.frombuffer(b"\x05", np.uint8)
    b = np.frombuffer(b"\x05", np.uint8)
    assert a.ctypes.data == b.ctypes.data  # CPython shares the one-byte bytes object
    validator.save({"a": a, "b": b}, tmp_path / "x.safetensors")
    with validator.open(tmp_path / "x.safetensors") as f:
        assert f.get("a").tolist() == f.get("b").tolist() == [5]


def test_numpy_array_and_torch_from_numpy_of_it_dedupe(tmp_path):
    torch = pytest.importorskip("torch")
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    tensors = {"np": arr, "pt": torch.from_numpy(arr)}
    with pytest.raises(validator.WriteError, match="are the same tensor"):
        validator.save(tensors, tmp_path / "x.safetensors")
    assert validator.save(tensors, tmp_path / "x.safetensors", dedupe=True) == {"pt": "np"}
    with validator.open(tmp_path / "x.safetensors") as f:
        np.testing.assert_array_equal(f.get("pt"), arr)


def test_subbyte_pack_round_trips_in_chunks(tmp_path, monkeypatch):
    from validator.io import subbyte

    monkeypatch.setattr(subbyte, "CHUNK", 3)  # several chunks, one partial
    rng = np.random.default_rng(1)
    for dtype, np_type, numel in (("F4", ml_dtypes.float4_e2m1fn, 14), ("F6_E2M3", ml_dtypes.float6_e2m3fn, 28)):
        codes = rng.integers(0, 1 << DTYPE_BITS[dtype], numel, dtype=np.uint8)
        validator.save({"s": codes.view(np_type)}, tmp_path / "s.safetensors")
        with validator.open(tmp_path / "s.safetensors", subbyte="unpack") as f:
            assert f.get("s").view(np.uint8).tolist() == codes.tolist()
