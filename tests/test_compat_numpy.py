# Strategy: validator.compat.numpy side by side with safetensors.numpy 0.8.0:
# byte-identical saves, equal loads, and the semantics of the arrays handed
# out (writable, independent, never written back), plus what only stcheck
# does: zero-copy loading, ml_dtypes types, correct bytes for strided input.
from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy as ref

from validator.compat import SafetensorError, safe_open
from validator.compat import numpy as ours


def test_save_load_match_the_reference(tmp_path):
    tensors = {
        "a": np.zeros((2, 2)),
        "b": np.zeros((2, 3), dtype=np.uint8),
        "c": np.asarray(False),
        "d": np.arange(3, dtype=">i4"),
    }
    blob = ours.save(tensors, metadata={"framework": "np"})
    assert blob == ref.save(tensors, metadata={"framework": "np"})
    ours.save_file(tensors, tmp_path / "o.safetensors")
    ref.save_file(tensors, tmp_path / "r.safetensors")
    assert (tmp_path / "o.safetensors").read_bytes() == (tmp_path / "r.safetensors").read_bytes()
    for loaded in (ours.load(blob), ours.load_file(tmp_path / "o.safetensors")):
        expected = ref.load(blob)
        assert loaded.keys() == expected.keys()
        for name, array in expected.items():
            assert loaded[name].dtype == array.dtype
            np.testing.assert_array_equal(loaded[name], array)


def test_large_arrays_save_file_matches_the_reference(tmp_path):
    rng = np.random.default_rng(0)
    tensors = {
        "w": rng.standard_normal((512, 600), dtype=np.float32),
        "b": rng.standard_normal(70_000).astype(np.float64),
    }
    ours.save_file(tensors, tmp_path / "o.safetensors")
    ref.save_file(tensors, tmp_path / "r.safetensors")
    assert (tmp_path / "o.safetensors").read_bytes() == (tmp_path / "r.safetensors").read_bytes()


def test_the_same_array_under_two_names_is_written_twice_as_the_reference_does():
    x = np.arange(4.0)
    assert ours.save({"a": x, "b": x}) == ref.save({"a": x, "b": x})


def test_strided_input_is_written_as_its_values():
    strided = np.arange(6, dtype=np.int64).reshape(2, 3)[:, 1]
    loaded = ours.load(ours.save({"a": strided}))
    assert loaded["a"].tolist() == [1, 4]  # safetensors 0.8.0 writes the first 16 bytes of memory instead


def test_arrays_are_writable_independent_and_never_reach_the_file(tmp_path):
    path = tmp_path / "w.safetensors"
    ours.save_file({"big": np.zeros(1 << 19, np.float32), "small": np.zeros(3)}, path)
    before = path.read_bytes()
    first = ours.load_file(path)
    for array in first.values():
        assert array.flags.writeable
        array[...] = 1
    second = ours.load_file(path)
    assert not second["big"].any()
    assert not second["small"].any()
    with safe_open(path, "np") as f:
        one, two = f.get_tensor("big"), f.get_tensor("big")
        one[0] = 5
        assert two[0] == 0  # each get_tensor is the caller's own, as the reference's copies are
    blob = ours.load(before)
    blob["small"][0] = 7
    assert path.read_bytes() == before


def _anon_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise AssertionError


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to read anonymous RSS")
def test_load_file_does_not_copy(tmp_path):
    path = tmp_path / "big.safetensors"
    size = 32 << 20
    ours.save_file({"big": np.ones(size, np.uint8)}, path)
    before = _anon_kib()
    big = ours.load_file(path)["big"]
    total = int(big[::4096].sum())  # touch every page
    growth = _anon_kib() - before
    assert total == size // 4096
    assert growth < 4096, f"anonymous memory grew by {growth} KiB for a {size >> 10} KiB tensor"


def test_dtypes_numpy_lacks_load_as_ml_dtypes(tmp_path):
    values = {
        "bf": np.arange(3).astype(ml_dtypes.bfloat16),
        "f8": np.array([0.5, -1.0], dtype=ml_dtypes.float8_e4m3fn),
        "f4": np.array([0.5, 1.0, -1.5, 2.0], dtype=ml_dtypes.float4_e2m1fn),
    }
    blob = ours.save(values)
    for loaded in (ours.load(blob), ours.load_file(_write(tmp_path, blob))):
        for name, array in values.items():
            assert loaded[name].dtype == array.dtype
            np.testing.assert_array_equal(loaded[name].astype(np.float32), array.astype(np.float32))
    with pytest.raises(KeyError):
        ref.load(blob)  # the reference's numpy module has no BF16


def _write(tmp_path, blob: bytes) -> Path:
    path = tmp_path / "blob.safetensors"
    path.write_bytes(blob)
    return path


def test_refusals(tmp_path):
    with pytest.raises(SafetensorError, match="no safetensors equivalent"):
        ours.save({"s": np.array(["x"])})
    with pytest.raises(TypeError):
        ours.save({"a": np.zeros(1)}, metadata={"k": 1})
    with pytest.raises(TypeError):
        ours.save({"a": [1, 2]})
    with pytest.raises(SafetensorError, match="Error while serializing"):
        ours.save_file({"a": np.zeros(1)}, tmp_path / "missing" / "x.safetensors")
    with pytest.raises(TypeError):
        ours.load_file(tmp_path / "x.safetensors", device="cpu")  # numpy's load_file takes no device, as the reference
