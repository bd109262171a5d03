# Deep checks of tensor contents: NaN/Inf per encoding, all-zero tensors and
# tails, embedded payloads, suspicious names; streaming across chunk bounds.
from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scan_fixtures import (
    all_zero_file,
    build,
    f32,
    nan_inf_file,
    pickle_in_u8_file,
    write,
    zip_last_tensor_file,
    zip_payload,
)

from validator.pipeline.engine import Job, Options, scan_file
from validator.read.deep import LONG_VALUE, ZERO_TAIL_MIN, head_signature, tail_has_eocd

ROOT = Path(__file__).resolve().parent.parent

ML = {
    "F16": np.float16,
    "BF16": ml_dtypes.bfloat16,
    "F32": np.float32,
    "F64": np.float64,
    "F8_E5M2": ml_dtypes.float8_e5m2,
    "F8_E4M3": ml_dtypes.float8_e4m3fn,
    "F8_E8M0": ml_dtypes.float8_e8m0fnu,
    "F8_E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    "F8_E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def scan(path: Path, *, chunk: int = 1 << 20, deep: bool = True):
    return scan_file(Job(str(path), ((str(path), None),)), Options(deep=deep, chunk_size=chunk))


def found(result) -> list[tuple[str, str | None, int | None]]:
    return [(i.finding.slug, i.finding.tensor, i.finding.offset) for i in result.items]


def all_patterns(dtype: str) -> bytes:
    size = np.dtype(ML[dtype]).itemsize
    if size <= 2:
        return np.arange(1 << (8 * size), dtype=UINT[size]).tobytes()
    rng = np.random.default_rng(size)
    x = rng.integers(0, np.iinfo(UINT[size]).max, 4096, dtype=UINT[size], endpoint=True)
    exp = {4: 0x7F800000, 8: 0x7FF0000000000000}[size]
    sign = {4: 0x80000000, 8: 1 << 63}[size]
    specials = [exp, exp | 1, exp | (exp >> 1), sign | exp, sign | exp | 5, exp - 1, 0, sign]
    return np.concatenate([x, np.array(specials, dtype=UINT[size])]).tobytes()


def expected_counts(dtype: str, raw: bytes) -> tuple[int, int]:
    with np.errstate(invalid="ignore"):
        values = np.frombuffer(raw, dtype=ML[dtype]).astype(np.float64)
    return int(np.isnan(values).sum()), int(np.isinf(values).sum())


@pytest.mark.parametrize("dtype", list(ML))
def test_nan_inf_counts_match_ml_dtypes_for_every_bit_pattern(tmp_path, dtype):
    raw = all_patterns(dtype)
    n = len(raw) // np.dtype(ML[dtype]).itemsize
    path = write(tmp_path / f"{dtype}.safetensors", build([("t", dtype, [n], raw)]))
    nan, inf = expected_counts(dtype, raw)
    assert nan > 0  # every float8 and wider encoding has a NaN
    result = scan(path, chunk=4099)  # odd chunks: elements straddle chunk bounds
    assert result.deep is not None
    assert (result.deep["nan"], result.deep["inf"]) == (nan, inf)
    [item] = [i for i in result.items if i.finding.slug == "tensor-nan-inf"]
    assert f"holds {nan} NaN and {inf} infinite values out of {n}" in item.finding.message


def test_c64_counts_elements_with_a_special_part(tmp_path):
    values = np.array([1 + 1j, complex(np.nan, 0), complex(0, np.inf), complex(np.nan, np.inf), 2j], dtype=np.complex64)
    path = write(tmp_path / "c64.safetensors", build([("c", "C64", [5], values.tobytes())]))
    result = scan(path, chunk=4097)
    assert (result.deep["nan"], result.deep["inf"]) == (2, 1)


@pytest.mark.parametrize("dtype", ["F4", "F6_E2M3", "F6_E3M2"])
def test_subbyte_floats_have_no_special_values(tmp_path, dtype):
    # F4 (E2M1) and F6 encode neither NaN nor Inf: every pattern is finite.
    name = {"F4": "float4_e2m1fn", "F6_E2M3": "float6_e2m3fn", "F6_E3M2": "float6_e3m2fn"}[dtype]
    codes = np.arange(16 if dtype == "F4" else 64, dtype=np.uint8)
    assert not np.isnan(codes.view(getattr(ml_dtypes, name)).astype(np.float32)).any()
    bits = 4 if dtype == "F4" else 6
    n = 8 * 48 // bits
    path = write(tmp_path / "sub.safetensors", build([("s", dtype, [n], bytes(range(1, 49)))]))
    result = scan(path)
    assert result.deep["nan"] == result.deep["inf"] == 0
    assert found(result) == []


def test_nan_inf_fixture_exact_findings(tmp_path):
    data = nan_inf_file()
    path = write(tmp_path / "nan_inf.safetensors", data)
    result = scan(path)
    start = 8 + struct.unpack("<Q", data[:8])[0]
    assert found(result) == [
        ("tensor-nan-inf", "f32", start),
        ("tensor-nan-inf", "f16", start + 24),
        ("tensor-nan-inf", "bf16", start + 32),
    ]
    messages = [i.finding.message for i in result.items]
    assert "holds 2 NaN and 1 infinite values out of 6" in messages[0]
    assert "holds 0 NaN and 1 infinite values out of 4" in messages[1]
    assert "holds 1 NaN and 0 infinite values out of 2" in messages[2]
    assert all(i.severity.value == "warning" for i in result.items)
    assert result.valid


def test_all_zero_file_exact_findings(tmp_path):
    data = all_zero_file()
    path = write(tmp_path / "all_zero.safetensors", data)
    result = scan(path)
    start = 8 + struct.unpack("<Q", data[:8])[0]
    assert found(result) == [
        ("tensor-all-zero", "a", start),
        ("tensor-all-zero", "b", start + 16384),
        ("data-zero-tail", None, start),
    ]
    assert "the whole data region (20480 bytes" in result.items[2].finding.message
    assert result.items[0].finding.message == "tensor 'a' (F32, [64, 64], 16384 bytes) is entirely zero"
    assert result.deep["all_zero_tensors"] == 2


def test_zero_tail_inside_last_tensor(tmp_path):
    # A preallocated download cut short: real bytes, then 1 MiB of zeros.
    body = b"\x01" * 4096 + bytes(ZERO_TAIL_MIN)
    data = build([("w", "F32", [1], f32(1.0)), ("big", "U8", [len(body)], body)])
    path = write(tmp_path / "cut.safetensors", data)
    result = scan(path, chunk=65536 + 3)
    start = 8 + struct.unpack("<Q", data[:8])[0]
    assert found(result) == [("data-zero-tail", None, start + 4 + 4096)]
    assert f"the last {ZERO_TAIL_MIN} bytes" in result.items[0].finding.message


def test_short_zero_run_is_not_reported(tmp_path):
    body = b"\x01" * 100 + bytes(1000)
    path = write(tmp_path / "ok.safetensors", build([("big", "U8", [len(body)], body)]))
    assert found(scan(path)) == []


def test_pickle_in_u8_exact_finding(tmp_path):
    data = pickle_in_u8_file()
    path = write(tmp_path / "pickle_in_u8.safetensors", data)
    result = scan(path)
    start = 8 + struct.unpack("<Q", data[:8])[0]
    assert found(result) == [("tensor-embedded-executable", "blob", start + 8)]
    assert "a pickle stream (protocol 2)" in result.items[0].finding.message


def test_zip_appended_as_last_tensor_exact_finding(tmp_path):
    data = zip_last_tensor_file()
    path = write(tmp_path / "zip_last_tensor.safetensors", data)
    result = scan(path)
    start = 8 + struct.unpack("<Q", data[:8])[0]
    assert found(result) == [("tensor-embedded-executable", "extra", start + 8)]
    assert "a ZIP local file header" in result.items[0].finding.message


def test_zip_behind_junk_found_by_its_end_record(tmp_path):
    body = b"\x05" * 300 + zip_payload()
    path = write(tmp_path / "zip_tail.safetensors", build([("extra", "I8", [len(body)], body)]))
    result = scan(path)
    assert [i.finding.slug for i in result.items] == ["tensor-embedded-executable"]
    assert "end-of-central-directory" in result.items[0].finding.message


def test_elf_and_pe_signatures(tmp_path):
    elf = b"\x7fELF\x02\x01\x01" + bytes(57)
    pe = bytearray(b"MZ" + bytes(126))
    pe[0x3C:0x40] = struct.pack("<I", 64)
    pe[64:68] = b"PE\x00\x00"
    path = write(tmp_path / "exe.safetensors", build([("elf", "U8", [64], elf), ("pe", "U8", [128], bytes(pe))]))
    messages = [(i.finding.tensor, i.finding.message) for i in scan(path).items]
    assert [t for t, _ in messages] == ["elf", "pe"]
    assert "an ELF executable" in messages[0][1]
    assert "a PE (Windows) executable" in messages[1][1]


def test_mz_without_pe_header_is_not_reported(tmp_path):
    body = b"MZ" + b"\x01" * 126
    path = write(tmp_path / "mz.safetensors", build([("t", "U8", [128], body)]))
    assert found(scan(path)) == []


def test_float_tensors_are_not_checked_for_signatures(tmp_path):
    # Only byte tensors (U8, I8, BOOL) are; a float tensor starting 0x80 0x02
    # is an ordinary number.
    raw = b"\x80\x02}q" + f32(1.0)
    path = write(tmp_path / "f.safetensors", build([("t", "F32", [2], raw)]))
    assert found(scan(path)) == []


def test_signature_helpers():
    assert head_signature(b"\x80\x04\x95" + bytes(8)) == "a pickle stream (protocol 4)"
    assert head_signature(b"\x80\x04\x00") is None
    assert head_signature(b"PK\x03\x04") == "a ZIP local file header"
    assert tail_has_eocd(b"xx" + b"PK\x05\x06" + bytes(18)) == 2
    assert tail_has_eocd(b"PK\x05\x06" + bytes(17)) is None  # comment length does not fit


def test_metadata_suspicious(tmp_path):
    metadata = {"source": "../../etc/passwd", "note": "ok\x1b[31m", "big": "x" * (LONG_VALUE + 1), "fine": "line\nline"}
    path = write(tmp_path / "meta.safetensors", build([("a/../b", "F32", [1], f32(1.0))], metadata))
    result = scan(path)
    got = [(i.finding.slug, i.finding.tensor, i.finding.json_path) for i in result.items]
    assert got == [
        ("metadata-suspicious", "a/../b", None),
        ("metadata-suspicious", None, "/__metadata__/source"),
        ("metadata-suspicious", None, "/__metadata__/note"),
        ("metadata-suspicious", None, "/__metadata__/big"),
    ]
    assert "control character '\\x1b'" in result.items[2].finding.message


def test_truncated_file_deep_scan_skips_missing_tensors(tmp_path):
    data = build([("a", "F32", [2], f32(1.0, float("nan"))), ("b", "F32", [4], f32(1, 2, 3, 4))])
    path = write(tmp_path / "truncated.safetensors", data[:-8])
    result = scan(path)
    slugs = [i.finding.slug for i in result.items]
    assert slugs == ["buffer-truncated", "tensor-nan-inf"]
    assert result.deep["skipped_tensors"] == ["b"]
    assert not result.valid


SPECIALS = {
    1: [0x7F, 0xFF, 0x80, 0x7C, 0xFC, 0x7D],
    2: [0x7C00, 0xFC00, 0x7E00, 0x7F80, 0xFF80, 0x7FC0],
    4: [0x7F800000, 0xFF800000, 0x7FC00000],
    8: [0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000],
}


@st.composite
def tensor_bytes(draw, size):
    pattern = st.one_of(st.sampled_from(SPECIALS[size]), st.integers(0, (1 << (8 * size)) - 1), st.just(0))
    values = draw(st.lists(pattern, max_size=120))
    return np.array(values, dtype=UINT[size]).tobytes()


@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from(["F16", "BF16", "F32", "F64", "F8_E5M2", "F8_E4M3", "F8_E4M3FNUZ", "F8_E8M0"]),
    seed=st.data(),
    lead=st.integers(0, 7),
    chunk=st.integers(1, 97),
)
def test_streaming_counts_do_not_depend_on_chunk_bounds(tmp_path_factory, dtype, seed, lead, chunk):
    size = np.dtype(ML[dtype]).itemsize
    data = seed.draw(tensor_bytes(size))
    tensors = [("lead", "U8", [lead], b"\x01" * lead), ("t", dtype, [len(data) // size], data)]
    path = write(tmp_path_factory.mktemp("s") / "t.safetensors", build(tensors, align=1))
    result = scan(path, chunk=chunk)
    nan, inf = expected_counts(dtype, data)
    assert (result.deep["nan"], result.deep["inf"]) == (nan, inf)
    zero = bool(data) and not any(data)
    assert result.deep["all_zero_tensors"] == int(zero)  # a vector: counted, never reported (ST602)
    assert "tensor-all-zero" not in {i.finding.slug for i in result.items}


def test_plain_scan_does_not_import_numpy(tmp_path):
    path = write(tmp_path / "nan_inf.safetensors", nan_inf_file())
    code = (
        "import sys; from validator.cli.main import main; "
        f"rc = main(['scan', '--progress', 'never', '--sha256', '{'0' * 64}', {str(path)!r}]); "
        "assert 'numpy' not in sys.modules, 'numpy imported'; sys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 1, proc.stderr
    assert "ST606 checksum-mismatch" in proc.stdout


@settings(max_examples=60, deadline=None)
@given(
    base=st.sampled_from([nan_inf_file(), zip_last_tensor_file(), all_zero_file(), pickle_in_u8_file()]),
    flips=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=6),
    cut=st.integers(0, 400),
    tail=st.binary(max_size=40),
    chunk=st.integers(1, 64),
)
def test_mutated_files_never_raise(tmp_path_factory, base, flips, cut, tail, chunk):  # noqa: PLR0917 - one per strategy
    data = bytearray(base)
    for where, value in flips:
        if where < len(data):
            data[where] = value
    data = bytes(data[: max(0, len(data) - cut)]) + tail if cut % 3 == 0 else bytes(data) + tail
    path = write(tmp_path_factory.mktemp("m") / "m.safetensors", data)
    result = scan(path, chunk=chunk)
    assert result.error is None
    # The whole file is read exactly once when the header parsed, else not at all.
    assert result.bytes_read == (len(data) if result.deep is not None else 0)
    deep = [i.finding for i in result.items if i.finding.rule.region == "deep"]
    assert all(0 <= f.offset <= len(data) for f in deep if f.offset is not None)


def test_empty_tensors_count_as_scanned(tmp_path):
    data = build([("empty_first", "F32", [0], b""), ("w", "F32", [1], f32(1.0)), ("empty_last", "F16", [2, 0], b"")])
    path = write(tmp_path / "empty.safetensors", data)
    result = scan(path)
    assert result.deep["tensors_scanned"] == 3
    assert found(result) == []


@pytest.mark.parametrize("base", [nan_inf_file(), zip_last_tensor_file(), all_zero_file(), pickle_in_u8_file()])
def test_one_read_and_many_chunks_give_the_same_result(tmp_path, base):
    # A file of at most one chunk is read, hashed and checked in one step
    # (no hashing thread, buffers sized to the file); the report must be
    # that of the chunked pass, sha256 included.
    path = write(tmp_path / "f.safetensors", base)
    options = {"deep": True, "sha256": "0" * 64}
    one = scan_file(Job(str(path), ((str(path), None),)), Options(chunk_size=1 << 24, **options))
    many = scan_file(Job(str(path), ((str(path), None),)), Options(chunk_size=7, **options))
    assert one.bytes_read == many.bytes_read == len(base)
    assert found(one) == found(many)
    assert one.deep == many.deep
    assert one.sha256 == many.sha256
