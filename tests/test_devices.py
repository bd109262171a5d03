# Strategy: the capability table is data plus a pure function of (device
# kind, dtype, OS version), tested here on every machine.  The loader's
# refusal path is driven through the table with a stand-in device ("meta",
# which torch has everywhere), so the error text and the cast policy are
# tested without a GPU.  Real CPU -> device -> CPU round trips run where
# CUDA or MPS is available and are skipped with that reason elsewhere.
from __future__ import annotations

import json

import pytest

import validator
from validator._dtypes import DTYPE_BITS, DTYPES
from validator.io.devices import CAPABILITIES, parse_device, unsupported_reason

BYTE_DTYPES = [d for d in DTYPES if DTYPE_BITS[d] % 8 == 0]
MPS_NEVER = {"F64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "U16", "U32", "U64"}


@pytest.mark.parametrize(
    ("device", "parsed"),
    [
        ("cpu", ("cpu", None)),
        ("mps", ("mps", None)),
        ("cuda", ("cuda", None)),
        ("cuda:0", ("cuda", 0)),
        ("cuda:12", ("cuda", 12)),
    ],
)
def test_parse_device(device, parsed):
    assert parse_device(device) == parsed


@pytest.mark.parametrize(
    "device", ["", "gpu", "CUDA", "cuda:", "cuda:-1", "cuda:x", "mps:0", "cpu:1", "cuda:0 ", None, 0]
)
def test_parse_device_refuses(device):
    with pytest.raises(validator.DeviceError):
        parse_device(device)


@pytest.mark.parametrize("dtype", BYTE_DTYPES)
def test_cpu_and_cuda_hold_every_dtype(dtype):
    assert unsupported_reason("cpu", dtype, None) is None
    assert unsupported_reason("cuda", dtype, None) is None


@pytest.mark.parametrize("dtype", BYTE_DTYPES)
def test_mps_table(dtype):
    new = unsupported_reason("mps", dtype, (15, 2))
    if dtype in MPS_NEVER:
        assert new is not None
        assert new.startswith("MPS has no")
    else:
        assert new is None


@pytest.mark.parametrize("dtype", ["BF16", "C64"])
def test_mps_os_dependent_dtypes(dtype):
    assert unsupported_reason("mps", dtype, (14, 0)) is None
    assert unsupported_reason("mps", dtype, (14, 4, 1)) is None
    assert unsupported_reason("mps", dtype, (13, 6)) == f"{dtype} on MPS needs macOS 14.0 or later, this is 13.6"
    assert "unknown version" in unsupported_reason("mps", dtype, None)


def test_table_names_only_known_dtypes():
    for cap in CAPABILITIES.values():
        assert set(cap.never) <= set(DTYPES)
        assert set(cap.min_os) <= set(DTYPES)


def _file(tmp_path):
    import numpy as np

    tensors = {"d": np.arange(4, dtype=np.float64), "h": np.arange(4, dtype=np.float16)}
    path = tmp_path / "m.safetensors"
    validator.save(tensors, path)
    return path


def _pretend(handle, kind, os_version):
    # Route the device checks through the table for `kind`, but copy to the
    # "meta" device, which every torch build has.
    handle._kind = kind
    handle._os = os_version
    handle.device = "meta"


def test_unsupported_dtype_error_names_tensor_dtype_and_device(tmp_path):
    pytest.importorskip("torch")
    with validator.open(_file(tmp_path), framework="torch") as f:
        _pretend(f, "mps", (15, 0))
        with pytest.raises(validator.DeviceError) as info:
            f.get("d")
        message = str(info.value)
        assert "'d'" in message
        assert "F64" in message
        assert "'meta'" in message
        assert "MPS has no float64" in message
        assert "cast=" in message
        assert f.get("h").device.type == "meta"  # F16 is fine
        with pytest.raises(validator.DeviceError, match="'d' has dtype F64"):
            f.get_slice("d")[:2]


def test_cast_policy_lets_unsupported_dtypes_through(tmp_path):
    torch = pytest.importorskip("torch")
    with validator.open(_file(tmp_path), framework="torch", cast={"F64": "F32"}) as f:
        _pretend(f, "mps", (15, 0))
        d = f.get("d")
        assert d.dtype == torch.float32
        assert d.device.type == "meta"


def test_cast_to_another_unsupported_dtype_is_still_refused(tmp_path):
    pytest.importorskip("torch")
    with validator.open(_file(tmp_path), framework="torch", cast={"F16": "U16"}) as f:
        _pretend(f, "mps", (15, 0))
        with pytest.raises(validator.DeviceError, match="'h' has dtype U16"):
            f.get("h")


def test_unavailable_devices_are_refused_clearly(tmp_path):
    torch = pytest.importorskip("torch")
    path = _file(tmp_path)
    if not torch.cuda.is_available():
        with pytest.raises(validator.DeviceError, match="CUDA is not available"):
            validator.open(path, framework="torch", device="cuda:0")
    if not torch.backends.mps.is_available():
        with pytest.raises(validator.DeviceError, match="MPS is not available"):
            validator.open(path, framework="torch", device="mps")


# -- real devices -------------------------------------------------------------


def _device_round_trip(tmp_path, device):
    """Save every dtype, load it onto ``device``, bring it back, compare bytes."""
    torch = pytest.importorskip("torch")
    from validator.io.devices import platform_facts

    kind, _ = parse_device(device)
    raw = {d: bytes((i * 53 + 7) % 256 for i in range(6 * DTYPE_BITS[d] // 8)) for d in BYTE_DTYPES}
    raw["BOOL"] = bytes([0, 1, 1, 0, 1, 0])
    tensors = {f"t_{d}": (d, [2, 3], raw[d]) for d in BYTE_DTYPES}
    tensors["q_F4"] = ("F4", [4], b"\x21\x43")
    path = tmp_path / "every_dtype.safetensors"
    validator.save(tensors, path)
    results = {}
    with validator.open(path, framework="torch", device=device) as f:
        for name, (dtype, _, data) in tensors.items():
            reason = unsupported_reason(kind, dtype, platform_facts(kind)) if DTYPE_BITS[dtype] % 8 == 0 else None
            if reason is not None:
                with pytest.raises(validator.DeviceError, match=f"'{name}' has dtype {dtype}"):
                    f.get(name)
                results[name] = "refused"
                continue
            t = f.get(name)
            assert t.device.type == kind
            back = t.cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
            assert back == data, f"{name}: bytes changed on the round trip through {device}"
            results[name] = "bit-exact"
    return results


def _cuda_available():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _mps_available():
    try:
        import torch
    except ImportError:
        return False
    return torch.backends.mps.is_available()


@pytest.mark.skipif(not _cuda_available(), reason="CUDA is not available on this machine")
def test_cuda_round_trip_every_dtype(tmp_path):
    results = _device_round_trip(tmp_path, "cuda")
    assert set(results.values()) == {"bit-exact"}, json.dumps(results)


@pytest.mark.skipif(not _mps_available(), reason="MPS is not available on this machine")
def test_mps_round_trip_every_dtype(tmp_path):
    results = _device_round_trip(tmp_path, "mps")
    assert {n for n, r in results.items() if r == "refused"} >= {f"t_{d}" for d in MPS_NEVER}


def test_cpu_round_trip_every_dtype(tmp_path):
    results = _device_round_trip(tmp_path, "cpu")
    assert set(results.values()) == {"bit-exact"}
