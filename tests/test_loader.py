# Strategy: the loader against hand-built files whose bytes we know, one
# concern per test: dtype mapping, zero-copy, read-only and copy-on-write
# semantics, misaligned copies, refusal of invalid files, slicing, the
# sub-byte policy, casts and the lazy import.
from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from _stbytes import tensors_file
from reference import TORCH_NAMES

import validator
from validator._dtypes import DTYPE_BITS, DTYPES

BYTE_DTYPES = [d for d in DTYPES if DTYPE_BITS[d] % 8 == 0]
SUBBYTE_DTYPES = [d for d in DTYPES if DTYPE_BITS[d] % 8]

NUMPY_EXPECTED = {
    "BOOL": np.dtype(np.bool_),
    "U8": np.dtype(np.uint8),
    "I8": np.dtype(np.int8),
    "U16": np.dtype("<u2"),
    "I16": np.dtype("<i2"),
    "F16": np.dtype("<f2"),
    "U32": np.dtype("<u4"),
    "I32": np.dtype("<i4"),
    "F32": np.dtype("<f4"),
    "U64": np.dtype("<u8"),
    "I64": np.dtype("<i8"),
    "F64": np.dtype("<f8"),
    "C64": np.dtype("<c8"),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn),
    "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
    "F8_E8M0": np.dtype(ml_dtypes.float8_e8m0fnu),
    "F8_E4M3FNUZ": np.dtype(ml_dtypes.float8_e4m3fnuz),
    "F8_E5M2FNUZ": np.dtype(ml_dtypes.float8_e5m2fnuz),
}


def build(
    entries: dict[str, tuple[str, list[int], bytes]], *, pad_to: int = 8, metadata: dict[str, str] | None = None
) -> bytes:
    """A file with tensors in the given order; the header padded to ``pad_to``."""
    return tensors_file([(name, *spec) for name, spec in entries.items()], metadata, align=pad_to)


def write(tmp_path, name: str, content: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(content)
    return str(path)


def sample(dtype: str, numel: int = 6) -> bytes:
    nbytes = numel * DTYPE_BITS[dtype] // 8
    raw = bytes((i * 37 + 11) % 256 for i in range(nbytes))
    if dtype == "BOOL":
        raw = bytes(i % 2 for i in range(nbytes))
    return raw


@pytest.mark.parametrize("dtype", BYTE_DTYPES)
def test_numpy_dtype_map_and_zero_copy_view(tmp_path, dtype):
    raw = sample(dtype)
    path = write(tmp_path, f"one_{dtype}.safetensors", build({"t": (dtype, [2, 3], raw)}))
    with validator.open(path) as f:
        arr = f.get("t")
        assert arr.dtype == NUMPY_EXPECTED[dtype]
        assert arr.shape == (2, 3)
        assert arr.tobytes() == raw
        assert not arr.flags.writeable
        assert not arr.flags.owndata  # a view of the mapping, not a copy
        assert f.misaligned == frozenset()
        # Two loads view the same mapped memory.
        assert np.shares_memory(arr, f.get("t"))


def test_numpy_view_cannot_be_made_writable(tmp_path):
    path = write(tmp_path, "f32.safetensors", build({"t": ("F32", [4], sample("F32", 4))}))
    with validator.open(path) as f:
        arr = f.get("t")
        with pytest.raises(ValueError):
            arr.flags.writeable = True
        with pytest.raises(ValueError):
            arr[0] = 1


def test_metadata_keys_len_contains(tmp_path):
    entries = {"b": ("F32", [1], sample("F32", 1)), "a": ("I8", [2], b"\x01\x02")}
    path = write(tmp_path, "meta.safetensors", build(entries, metadata={"format": "np"}))
    with validator.open(path) as f:
        assert f.keys() == ["a", "b"]
        assert list(f) == ["a", "b"]
        assert len(f) == 2
        assert "a" in f
        assert "zz" not in f
        assert f.metadata() == {"format": "np"}
        assert f.info("a").shape == (2,)
        assert f["a"].tolist() == [1, 2]
        with pytest.raises(validator.LoadError, match="no tensor named 'zz'"):
            f.get("zz")
    path = write(tmp_path, "nometa.safetensors", build(entries))
    with validator.open(path) as f:
        assert f.metadata() is None


def test_zero_sized_and_scalar_tensors(tmp_path):
    entries = {"empty": ("F32", [0, 3], b""), "scalar": ("F64", [], sample("F64", 1)), "e2": ("BF16", [2, 0], b"")}
    path = write(tmp_path, "zero_and_scalar.safetensors", build(entries))
    with validator.open(path) as f:
        assert f.get("empty").shape == (0, 3)
        assert f.get("e2").dtype == ml_dtypes.bfloat16
        assert f.get("scalar").shape == ()
        assert f.get("scalar").tobytes() == sample("F64", 1)
    with validator.open(path, framework="torch") as f:
        assert tuple(f.get("empty").shape) == (0, 3)
        assert tuple(f.get("scalar").shape) == ()


def test_empty_tensor_with_huge_sides(tmp_path):
    # Valid safetensors (0 elements), but no numpy array has this shape; the
    # reference's numpy loader raises a bare ValueError here.
    path = write(tmp_path, "empty_huge_sides.safetensors", build({"e": ("F32", [0, 2**62, 2**62], b"")}))
    with validator.open(path) as f, pytest.raises(validator.LoadError, match="'e' is empty but its shape"):
        f.get("e")
    torch = pytest.importorskip("torch")
    with validator.open(path, framework="torch") as f:
        assert tuple(f.get("e").shape) == (0, 2**62, 2**62)
        assert f.get("e").dtype == torch.float32
    path = write(tmp_path, "empty_u64_side.safetensors", build({"e": ("F32", [0, 2**64 - 1], b"")}))
    with validator.open(path, framework="torch") as f, pytest.raises(validator.LoadError, match="sizes overflow"):
        f.get("e")


def test_misaligned_tensor_is_copied_once_and_reported(tmp_path):
    # A 1-byte tensor first, then an F32 at data offset 1: misaligned by 1.
    raw = sample("F32", 3)
    content = build({"a": ("U8", [1], b"\x07"), "b": ("F32", [3], raw), "c": ("U8", [3], b"abc")})
    path = write(tmp_path, "tensor_unaligned.safetensors", content)
    assert [w.slug for w in validator.validate(path).warnings] == ["tensor-unaligned"]
    with validator.open(path) as f:
        assert f.misaligned == frozenset({"b"})
        assert any(w.slug == "tensor-unaligned" for w in f.report.warnings)
        arr = f.get("b")
        assert arr.tobytes() == raw
        assert arr.flags.owndata or (arr.base is not None and arr.base.flags.owndata)
        assert arr.ctypes.data % 4 == 0
        assert not arr.flags.writeable
        assert not np.shares_memory(arr, f.get("a"))
    torch = pytest.importorskip("torch")
    with validator.open(path, framework="torch") as f:
        t = f.get("b")
        assert t.dtype == torch.float32
        assert t.data_ptr() % 4 == 0
        assert t.numpy().tobytes() == raw


def test_unaligned_header_loads_with_warning(tmp_path):
    raw = sample("F16", 2)
    path = write(tmp_path, "header_unaligned.safetensors", build({"h": ("F16", [2], raw)}, pad_to=1))
    with validator.open(path) as f:
        assert any(w.slug == "header-unaligned" for w in f.report.warnings)
        assert f.get("h").tobytes() == raw


def test_invalid_file_refused_with_findings(tmp_path):
    content = build({"t": ("F32", [4], sample("F32", 4))})
    path = write(tmp_path, "buffer_truncated.safetensors", content[:-3])
    with pytest.raises(validator.InvalidFileError) as info:
        validator.open(path)
    assert [f.slug for f in info.value.report.errors] == ["buffer-truncated"]
    assert info.value.report.path == path


def test_empty_and_tiny_files_refused(tmp_path):
    for name, content in (("empty.safetensors", b""), ("three_bytes.safetensors", b"abc")):
        path = write(tmp_path, name, content)
        with pytest.raises(validator.InvalidFileError) as info:
            validator.open(path)
        assert info.value.report.first_error.slug == "file-too-small"


def test_strict_refuses_what_reference_profile_loads(tmp_path):
    # Duplicate tensor name: the reference keeps the last definition.
    text = b'{"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"t":{"dtype":"I8","shape":[1],"data_offsets":[0,1]}}'
    text += b" " * (-len(text) % 8)
    path = write(tmp_path, "duplicate_key.safetensors", len(text).to_bytes(8, "little") + text + b"\xff")
    with pytest.raises(validator.InvalidFileError) as info:
        validator.open(path)
    assert info.value.report.first_error.slug == "duplicate-key"
    with validator.open(path, profile="reference") as f:
        assert f.get("t").dtype == np.int8
        assert f.get("t").tolist() == [-1]


def test_validation_reads_the_mapped_bytes(tmp_path, monkeypatch):
    # The handle must validate the mapping it uses, not re-read the path.
    path = write(tmp_path, "ok.safetensors", build({"t": ("U8", [2], b"\x01\x02")}))
    calls = []
    from validator.io import loader

    real = loader.check_buffer

    def spy(prefix, read_header, size, profile, where):
        calls.append(type(read_header(2)))
        return real(prefix, read_header, size, profile, where)

    monkeypatch.setattr(loader, "check_buffer", spy)
    monkeypatch.setattr(validator._validate, "_from_fd", lambda *a: pytest.fail("re-read the file"))
    with validator.open(path) as f:
        assert f.get("t").tolist() == [1, 2]
    assert calls == [bytes]


def test_missing_path_and_directory_are_source_errors(tmp_path):
    with pytest.raises(validator.SourceError):
        validator.open(tmp_path / "missing.safetensors")
    with pytest.raises(validator.SourceError, match="not a regular file"):
        validator.open(tmp_path)


def test_slicing_numpy(tmp_path):
    values = np.arange(24, dtype=np.float32).reshape(4, 6)
    path = write(tmp_path, "slice.safetensors", build({"w": ("F32", [4, 6], values.tobytes())}))
    with validator.open(path) as f:
        sl = f.get_slice("w")
        assert sl.shape == (4, 6)
        assert sl.dtype == "F32"
        part = sl[1:3, ::2]
        np.testing.assert_array_equal(part, values[1:3, ::2])
        assert np.shares_memory(part, f.get("w"))  # basic slicing stays zero-copy


def test_close_keeps_handed_out_arrays_valid(tmp_path):
    path = write(tmp_path, "close.safetensors", build({"t": ("I32", [3], sample("I32", 3))}))
    f = validator.open(path)
    arr = f.get("t")
    f.close()
    assert arr.tobytes() == sample("I32", 3)
    with pytest.raises(validator.LoadError, match="closed"):
        f.get("t")
    f.close()  # closing twice is harmless


def test_close_keeps_handed_out_torch_tensors_valid(tmp_path):
    # torch.frombuffer holds the mapping object but no buffer export, so an
    # mmap.close() would unmap memory under live tensors (a segfault).
    pytest.importorskip("torch")
    path = write(tmp_path, "close_torch.safetensors", build({"t": ("I32", [3], sample("I32", 3))}))
    f = validator.open(path, framework="torch")
    t = f.get("t")
    f.close()
    assert bytes(t.numpy()) == sample("I32", 3)
    with pytest.raises(validator.LoadError, match="closed"):
        f.get("t")


def test_subbyte_packed_default(tmp_path):
    # 3 F4 values fill 1.5 bytes: invalid; 4 values fill 2 bytes.
    path = write(
        tmp_path, "f4.safetensors", build({"q": ("F4", [2, 2], b"\x21\x43"), "s": ("F6_E2M3", [4], b"\x01\x02\x03")})
    )
    with validator.open(path) as f:
        q = f.get("q")
        assert q.dtype == np.uint8
        assert q.shape == (2,)
        assert q.tobytes() == b"\x21\x43"
        assert f.info("q").shape == (2, 2)
        assert f.get("s").tobytes() == b"\x01\x02\x03"
        with pytest.raises(validator.LoadError, match="packed bytes"):
            f.get_slice("q")
    torch = pytest.importorskip("torch")
    with validator.open(path, framework="torch") as f:
        assert f.get("q").dtype == torch.uint8
        assert bytes(f.get("q").numpy()) == b"\x21\x43"


def test_subbyte_unpack_f4_low_nibble_first(tmp_path):
    path = write(tmp_path, "f4.safetensors", build({"q": ("F4", [2, 2], b"\x21\x4b")}))
    with validator.open(path, subbyte="unpack") as f:
        q = f.get("q")
        assert q.dtype == ml_dtypes.float4_e2m1fn
        assert q.shape == (2, 2)
        # Codes 1, 2, 0xb, 4: +0.5, +1.0, -1.5, +2.0 in e2m1.
        assert q.astype(np.float32).tolist() == [[0.5, 1.0], [-1.5, 2.0]]
        assert f.get_slice("q")[1].astype(np.float32).tolist() == [-1.5, 2.0]


def test_subbyte_unpack_f6_little_endian_bit_stream(tmp_path):
    # Four 6-bit codes c0..c3 in 3 bytes: bits [6i, 6i+6) of the stream.
    codes = [0b000001, 0b100000, 0b011111, 0b110011]
    stream = sum(c << (6 * i) for i, c in enumerate(codes)).to_bytes(3, "little")
    for dtype, np_type in (("F6_E2M3", ml_dtypes.float6_e2m3fn), ("F6_E3M2", ml_dtypes.float6_e3m2fn)):
        path = write(tmp_path, f"{dtype}.safetensors", build({"s": (dtype, [4], stream)}))
        with validator.open(path, subbyte="unpack") as f:
            s = f.get("s")
            assert s.dtype == np_type
            assert s.view(np.uint8).tolist() == codes


def test_cast_policy_numpy(tmp_path):
    values = np.array([1.5, -2.25, 3.0], dtype="<f8")
    path = write(tmp_path, "f64.safetensors", build({"d": ("F64", [3], values.tobytes())}))
    with validator.open(path, cast={"F64": "F32"}) as f:
        d = f.get("d")
        assert d.dtype == np.float32
        assert d.tolist() == [1.5, -2.25, 3.0]
    with pytest.raises(ValueError, match="unknown dtype"):
        validator.open(path, cast={"float64": "F32"})


def test_bad_arguments(tmp_path):
    path = write(tmp_path, "ok.safetensors", build({"t": ("U8", [1], b"\x01")}))
    with pytest.raises(ValueError, match="framework"):
        validator.open(path, framework="jax")
    with pytest.raises(ValueError, match="subbyte"):
        validator.open(path, subbyte="bits")
    with pytest.raises(validator.DeviceError, match="needs framework='torch'"):
        validator.open(path, device="cuda")
    with pytest.raises(validator.DeviceError, match="unknown device"):
        validator.open(path, device="gpu")


TORCH_EXPECTED = {k: v for k, v in TORCH_NAMES.items() if k != "F4"}  # F4 loads packed, checked apart


def torch_bytes(t) -> bytes:
    import torch

    return bytes(t.contiguous().reshape(-1).view(torch.uint8).numpy())


def test_torch_every_dtype_zero_copy_without_warnings(tmp_path):
    torch = pytest.importorskip("torch")
    entries = {f"t_{d}": (d, [2, 3], sample(d)) for d in BYTE_DTYPES}
    path = write(tmp_path, "every_dtype.safetensors", build(entries))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with validator.open(path, framework="torch") as f:
            for d in BYTE_DTYPES:
                t = f.get(f"t_{d}")
                assert t.dtype == getattr(torch, TORCH_EXPECTED[d]), d
                assert tuple(t.shape) == (2, 3)
                assert torch_bytes(t) == sample(d), d
                # Zero-copy: a second load sees the same mapped memory.
                assert f.get(f"t_{d}").data_ptr() == t.data_ptr()


def test_torch_copy_on_write_never_reaches_the_file(tmp_path):
    torch = pytest.importorskip("torch")
    content = build({"w": ("F32", [4], np.arange(4, dtype="<f4").tobytes())})
    path = write(tmp_path, "cow.safetensors", content)
    before = Path(path).stat().st_mtime_ns
    with validator.open(path, framework="torch") as f:
        t = f.get("w")
        t.add_(10)  # writes the private copy of the page
        assert t.tolist() == [10.0, 11.0, 12.0, 13.0]
        assert f.get("w").tolist() == [10.0, 11.0, 12.0, 13.0]  # same private mapping
    assert Path(path).read_bytes() == content
    assert Path(path).stat().st_mtime_ns == before
    with validator.open(path, framework="torch") as f:
        assert f.get("w").tolist() == [0.0, 1.0, 2.0, 3.0]
    assert torch.float32 == t.dtype


def _anon_kib() -> int:
    with open("/proc/self/status") as status:  # noqa: PTH123
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    raise AssertionError


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to read anonymous RSS")
@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_loading_does_not_copy_into_private_memory(tmp_path, framework):
    if framework == "torch":
        pytest.importorskip("torch")
    size = 32 << 20
    path = write(tmp_path, "big.safetensors", build({"big": ("U8", [size], b"\x01" * size)}))
    with validator.open(path, framework=framework) as f:
        before = _anon_kib()
        big = f.get("big")
        total = int(big[::4096].sum())  # touch every page
        growth = _anon_kib() - before
    assert total == size // 4096
    assert growth < 4096, f"anonymous memory grew by {growth} KiB for a {size >> 10} KiB tensor"


def test_torch_slicing_and_cast(tmp_path):
    torch = pytest.importorskip("torch")
    values = np.arange(12, dtype="<f8").reshape(3, 4)
    path = write(tmp_path, "f64.safetensors", build({"d": ("F64", [3, 4], values.tobytes())}))
    with validator.open(path, framework="torch", cast={"F64": "float32"}) as f:
        assert f.get("d").dtype == torch.float32
        part = f.get_slice("d")[1:, 2]
        assert part.dtype == torch.float32
        assert part.tolist() == [6.0, 10.0]


def test_torch_refuses_unpack_policy(tmp_path):
    pytest.importorskip("torch")
    path = write(tmp_path, "ok.safetensors", build({"t": ("U8", [1], b"\x01")}))
    with pytest.raises(ValueError, match="packed"):
        validator.open(path, framework="torch", subbyte="unpack")


def test_import_validator_stays_free_of_numpy_and_torch():
    code = (
        "import sys, validator\n"
        "assert 'numpy' not in sys.modules and 'torch' not in sys.modules, sorted(sys.modules)\n"
        "assert callable(validator.open) and callable(validator.save)\n"
        "assert 'torch' not in sys.modules\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


# -- file objects, aliases, writable arrays, casts (issues 12, 13, 15) -------


def test_open_from_a_file_object_uses_its_descriptor(tmp_path):
    path = write(tmp_path, "fileobj.safetensors", build({"t": ("I16", [2], sample("I16", 2))}))
    with open(path, "rb") as raw, validator.open(raw) as f:  # noqa: PTH123
        assert f.path == path
        assert f.get("t").tobytes() == sample("I16", 2)
    with open(path) as text, validator.open(text) as f:  # noqa: PTH123 - a text-mode object has a descriptor too
        assert f.keys() == ["t"]
    with pytest.raises(validator.SourceError, match="cannot open a list"):
        validator.open([])


def test_alias_metadata_from_dedupe_resolves(tmp_path):
    embed = np.arange(6, dtype=np.float32).reshape(2, 3)
    path = tmp_path / "tied.safetensors"
    validator.save({"embed": embed, "lm_head": embed}, path, {"format": "np"}, dedupe=True)
    with validator.open(path) as f:
        assert f.keys() == ["embed"]
        assert f.aliases == {"lm_head": "embed"}
        np.testing.assert_array_equal(f.get("lm_head"), embed)
        assert f.info("lm_head").shape == (2, 3)
        np.testing.assert_array_equal(f.get_slice("lm_head")[1], embed[1])
        with pytest.raises(KeyError, match="no tensor named 'format'"):
            f.get("format")  # a metadata value that names no tensor is no alias


def test_writable_arrays_are_independent_and_never_reach_the_file(tmp_path):
    big = np.arange(1 << 19, dtype=np.float32)  # 2 MiB: its own copy-on-write mapping
    small = np.arange(4, dtype=np.int64)
    path = tmp_path / "w.safetensors"
    validator.save({"big": big, "small": small}, path)
    content = path.read_bytes()
    with validator.open(path, writable=True) as f:
        a, b = f.get("big"), f.get("small")
        assert a.flags.writeable
        assert b.flags.writeable
        a[:] = -1
        b[:] = -1
        np.testing.assert_array_equal(f.get("big"), big)  # a second load is not the first
        np.testing.assert_array_equal(f.get("small"), small)
    assert path.read_bytes() == content


def test_numpy_cast_accepts_numpy_names_and_checks_at_open(tmp_path):
    values = np.array([1.5, -2.25], dtype="<f8")
    path = write(tmp_path, "f64.safetensors", build({"d": ("F64", [2], values.tobytes())}))
    with validator.open(path, cast={"F64": "float32"}) as f:
        assert f.get("d").dtype == np.float32
        assert f.get("d").tolist() == [1.5, -2.25]
    with validator.open(path, cast={"F64": "bfloat16"}) as f:
        assert f.get("d").dtype == ml_dtypes.bfloat16
    with pytest.raises(ValueError, match="unknown cast target 'float99'"):
        validator.open(path, cast={"F64": "float99"})


# -- a file truncated after open (issue 15) ----------------------------------

TRUNCATE_SCRIPT = """
import os, sys, validator
path = sys.argv[1]
f = validator.open(path, framework=sys.argv[2])
os.truncate(path, 100)
try:
    print("read", int(f.get("big")[-1]))  # touches the last page
except validator.LoadError as exc:
    print("refused:", exc)
"""


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_truncated_after_open_is_refused_not_sigbus(tmp_path, framework):
    if framework == "torch":
        pytest.importorskip("torch")
    size = 1 << 20
    path = write(tmp_path, "shrinks.safetensors", build({"big": ("U8", [size], b"\x01" * size)}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run(
        [sys.executable, "-c", TRUNCATE_SCRIPT, path, framework], capture_output=True, text=True, env=env, check=False
    )
    assert run.returncode == 0, f"killed by signal {-run.returncode}" if run.returncode < 0 else run.stderr
    assert "refused:" in run.stdout
    assert "shrank to 100 bytes" in run.stdout


# -- sub-byte unpacking stays bounded (issue 15) -----------------------------


def test_subbyte_unpack_peak_memory_is_bounded(tmp_path):
    import tracemalloc

    packed = 16 << 20  # 16 MiB of F4: 32 Mi elements, one byte each when unpacked
    raw = np.random.default_rng(0).integers(0, 256, packed, dtype=np.uint8).tobytes()
    path = write(tmp_path, "f4_big.safetensors", build({"q": ("F4", [2 * packed], raw)}))
    with validator.open(path, subbyte="unpack") as f:
        tracemalloc.start()
        q = f.get("q")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        codes = q.view(np.uint8)
        assert codes[:4].tolist() == [raw[0] & 15, raw[0] >> 4, raw[1] & 15, raw[1] >> 4]
        assert codes[-1] == raw[-1] >> 4
    assert peak < 2 * packed + (8 << 20), f"unpacking {packed >> 20} MiB of F4 peaked at {peak >> 20} MiB"


def test_source_error_message_is_readable(tmp_path):
    # errno and filename are set for callers; the message stays "path: reason".
    missing = tmp_path / "missing.safetensors"
    with pytest.raises(validator.SourceError) as info:
        validator.open(missing)
    assert str(info.value) == f"{missing}: No such file or directory"
    assert info.value.errno == 2


@pytest.mark.parametrize(("framework", "writable"), [("numpy", False), ("numpy", True), ("torch", False)])
def test_batch_load_equals_one_by_one(tmp_path, framework, writable):
    if framework == "torch":
        pytest.importorskip("torch")
    entries = {
        "a": ("U8", [1], b"\x07"),
        "b": ("F32", [3], sample("F32", 3)),  # misaligned: starts at data offset 1
        "c": ("F16", [2, 0], b""),
        "d": ("BF16", [2, 2], sample("BF16", 4)),
        "e": ("F4", [4], b"\x21\x43"),
        "f": ("I64", [2], sample("I64", 2)),
    }
    path = write(tmp_path, "mixed.safetensors", build(entries))
    with validator.open(path, framework=framework, writable=writable) as f:
        batch = f.load(f.entries())
        assert list(batch) == f.offset_keys()
        for name in entries:
            one = f.get(name)
            got = batch[name]
            assert type(got) is type(one)
            assert got.dtype == one.dtype
            assert tuple(got.shape) == tuple(one.shape)
            if framework == "torch":
                assert torch_bytes(got) == torch_bytes(one)
            else:
                assert got.tobytes() == one.tobytes()
                assert got.flags.writeable == one.flags.writeable == writable
        if framework == "numpy" and writable:
            batch["f"][0] = -1
            assert f.get("f")[0] != -1  # a batch is the caller's own
