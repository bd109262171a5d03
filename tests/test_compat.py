# Strategy: the validator.compat module's safe_open, serialize, deserialize
# and TensorSpec side by side with safetensors 0.8.0.  Each behaviour the upstream suite
# checks (names, return types, exception types and messages) is run through
# both where both accept the input; what only stcheck does (validation,
# profiles, the combined exception hierarchy) is checked on its own.
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import safetensors
import safetensors.numpy

import validator
from validator import compat
from validator.compat import SafetensorError, TensorSpec, _errors, deserialize, safe_open, serialize, serialize_file
from validator.compat import numpy as cnp


def raw_file(header: dict[str, object], data: bytes, *, pad: int = 8) -> bytes:
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % pad)
    return len(text).to_bytes(8, "little") + text + data


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.safetensors"
    tensors = {"b": np.arange(6, dtype=np.float32).reshape(2, 3), "a": np.arange(4, dtype=np.int64)}
    safetensors.numpy.save_file(tensors, path, metadata={"format": "np"})
    return path, tensors


def raised(fn) -> BaseException | None:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - compared between the two libraries
        return exc
    return None


# -- the handle ----------------------------------------------------------------


def test_safe_open_methods_match_the_reference(small):
    path, _ = small
    with safe_open(path, "np") as ours, safetensors.safe_open(path, "np") as theirs:
        assert ours.keys() == theirs.keys() == ["a", "b"]
        assert ours.offset_keys() == theirs.offset_keys()
        assert ours.metadata() == theirs.metadata() == {"format": "np"}
        for name in ("a", "b"):
            mine, ref = ours.get_tensor(name), theirs.get_tensor(name)
            assert type(mine) is type(ref)
            assert mine.dtype == ref.dtype
            np.testing.assert_array_equal(mine, ref)
        got = ours.get_tensors()
        assert list(got) == list(theirs.get_tensors())
        sl = ours.get_slice("b")
        assert sl.get_shape() == theirs.get_slice("b").get_shape() == [2, 3]
        assert sl.get_dtype() == "F32"


def test_every_method_fails_after_exit_and_slices_outlive_it(small):
    path, tensors = small
    with safe_open(path, "np") as f:
        sl = f.get_slice("b")
    for call in (f.keys, f.offset_keys, f.metadata, f.get_tensors, lambda: f.get_tensor("a"), lambda: f.get_slice("a")):
        with pytest.raises(SafetensorError, match="File is closed") as info:
            call()
        assert isinstance(info.value, validator.LoadError)
    np.testing.assert_array_equal(sl[1], tensors["b"][1])  # as in the reference


def test_missing_tensor_is_a_safetensor_error_and_a_key_error(small):
    path, _ = small
    with safe_open(path, "np") as f, pytest.raises(SafetensorError) as info:
        f.get_tensor("nope")
    assert str(info.value) == "File does not contain tensor nope"
    assert isinstance(info.value, KeyError)
    assert isinstance(info.value, validator.StcheckError)
    with safe_open(path, "np") as f, pytest.raises(SafetensorError, match="does not contain tensor nope"):
        f.get_slice("nope")


def test_missing_file_is_file_not_found_with_the_reference_message(tmp_path):
    missing = tmp_path / "notafile"
    with pytest.raises(FileNotFoundError) as ours:
        safe_open(missing, "pt")
    with pytest.raises(FileNotFoundError) as theirs:
        safetensors.safe_open(missing, "pt")
    assert str(ours.value) == str(theirs.value) == f"No such file or directory: {missing}"
    assert isinstance(ours.value, validator.SourceError)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("nope",), {}),
        (("pt",), {"device": "foo"}),
        (("pt",), {"device": "mps:1"}),
        (("pt",), {"device": "cuda:x"}),
        (("np",), {"device": "cuda"}),
        (("np",), {"device": 0}),
        (("pt",), {"backend": "x"}),
        (("pt",), {"device": -1}),
    ],
    ids=["framework", "device", "mps1", "cuda-x", "np-cuda", "np-int", "backend", "negative"],
)
def test_argument_errors_match_the_reference(small, args, kwargs):
    path, _ = small
    theirs = raised(lambda: safetensors.safe_open(path, *args, **kwargs))
    ours = raised(lambda: safe_open(path, *args, **kwargs))
    assert theirs is not None
    assert isinstance(ours, type(theirs)), (ours, theirs)
    assert isinstance(ours, validator.StcheckError)
    assert str(ours) == str(theirs)


def test_devices_accepted_like_the_reference(small):
    path, _ = small
    for device in ("cpu", None, "mps:0", "cuda:3", 0, "npu", "xpu:1"):
        with safe_open(path, "pt", device=device) as f:
            assert f.keys() == ["a", "b"]


def test_file_object_handle(small):
    path, tensors = small
    with open(path) as text, compat._safe_open_handle(text, framework="np") as f:  # noqa: PTH123 - a text-mode object, as upstream
        np.testing.assert_array_equal(f.get_tensor("b"), tensors["b"])
    with pytest.raises(AttributeError):
        compat._safe_open_handle(object(), framework="np")


def test_both_backends_give_the_same_bytes(small):
    path, _ = small
    with safe_open(path, "pt", backend="mmap") as a, safe_open(path, "pt", backend="pread") as b:
        for name in a.offset_keys():
            assert a.get_tensor(name).equal(b.get_tensor(name))


# -- validation first ------------------------------------------------------------


def test_a_file_both_reject_is_refused_with_the_reference_phrase(tmp_path):
    path = tmp_path / "buffer_truncated.safetensors"
    path.write_bytes(raw_file({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\x00" * 12))
    with pytest.raises(SafetensorError) as ours:
        safe_open(path, "np")
    with pytest.raises(safetensors.SafetensorError) as theirs:
        safetensors.safe_open(path, "np")
    assert "incomplete metadata, file not fully covered" in str(theirs.value)
    assert str(ours.value).startswith("Error while deserializing header: incomplete metadata, file not fully covered")
    assert "ST407 buffer-truncated" in str(ours.value)
    assert isinstance(ours.value, validator.InvalidFileError)
    assert ours.value.report.errors[0].slug == "buffer-truncated"


def test_strict_refusal_says_the_reference_would_load_it(tmp_path):
    # An unknown field in a tensor entry: safetensors 0.8.0 ignores it.
    path = tmp_path / "tensor_field_unknown.safetensors"
    path.write_bytes(raw_file({"t": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "x": 1}}, b"\x07"))
    with safetensors.safe_open(path, "np") as f:
        assert f.get_tensor("t").tolist() == [7]
    with pytest.raises(SafetensorError) as info:
        safe_open(path, "np")
    message = str(info.value)
    assert "(safetensors 0.8.0 loads it: strict-only findings)" in message
    assert 'profile="reference"' in message
    with safe_open(path, "np", profile="reference") as f:
        assert f.get_tensor("t").tolist() == [7]
    with pytest.raises(SafetensorError, match=r"safetensors 0\.8\.0 loads it"):
        deserialize(path.read_bytes())
    assert deserialize(path.read_bytes(), profile="reference")[0][1]["data"] == bytearray(b"\x07")
    with pytest.raises(SafetensorError, match=r"safetensors 0\.8\.0 loads it"):
        cnp.load_file(path)
    assert cnp.load(path.read_bytes(), profile="reference")["t"].tolist() == [7]


def test_errors_pickle():
    err = _errors.MissingTensorError("File does not contain tensor x")
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is type(err)
    assert str(again) == str(err)


def test_safetensor_error_is_the_installed_class():
    assert SafetensorError is safetensors.SafetensorError
    assert _errors.REFERENCE_IS_INSTALLED


def test_stand_in_safetensor_error_without_safetensors():
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'safetensors' or name.startswith('safetensors.'):\n"
        "            raise ImportError('blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import importlib, validator\n"
        "from validator.compat import SafetensorError, safe_open\n"
        "assert SafetensorError.__name__ == 'SafetensorError', SafetensorError\n"
        "assert SafetensorError.__module__ == 'validator.compat._errors'\n"
        "importlib.import_module(SafetensorError.__module__)\n"
        "try:\n"
        "    safe_open(sys.argv[1], 'np').get_tensor('zz')\n"
        "except SafetensorError as exc:\n"
        "    assert isinstance(exc, validator.LoadError)\n"
        "    print('ok', exc)\n"
    )
    corpus = Path(__file__).resolve().parents[1] / "corpus"
    sample = next(p for p in sorted(corpus.iterdir()) if p.name.startswith("y_") and p.suffix == ".safetensors")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run(
        [sys.executable, "-c", code, str(sample)], capture_output=True, text=True, env=env, check=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("ok File does not contain tensor zz")


# -- serialize, serialize_file, deserialize, TensorSpec ---------------------------


def spec(arr: np.ndarray, dtype: str | None = None) -> TensorSpec:
    return TensorSpec(dtype=dtype or arr.dtype.name, shape=arr.shape, data_ptr=arr.ctypes.data, data_len=arr.nbytes)


def ref_spec(arr: np.ndarray, dtype: str | None = None) -> safetensors.TensorSpec:
    return safetensors.TensorSpec(
        dtype=dtype or arr.dtype.name, shape=arr.shape, data_ptr=arr.ctypes.data, data_len=arr.nbytes
    )


def test_serialize_bytes_equal_the_reference(tmp_path):
    arrays = {"x": np.arange(6, dtype=np.float16).reshape(3, 2), "y": np.ones(3, np.uint8), "z": np.zeros(0, np.int32)}
    ours = serialize({k: spec(v) for k, v in arrays.items()}, metadata={"m": "1"})
    theirs = safetensors.serialize({k: ref_spec(v) for k, v in arrays.items()}, metadata={"m": "1"})
    assert isinstance(ours, bytes)
    assert ours == theirs
    serialize_file({k: spec(v) for k, v in arrays.items()}, tmp_path / "s.safetensors", metadata={"m": "1"})
    assert (tmp_path / "s.safetensors").read_bytes() == theirs


def test_tensor_spec_matches_the_reference():
    for kwargs in (
        {"dtype": "float4_e2m1fn_x2", "shape": [2, 3], "data_ptr": 0, "data_len": 0},
        {"dtype": "bfloat16", "shape": (4,), "data_ptr": 8, "data_len": 8},
    ):
        ours, theirs = TensorSpec(**kwargs), safetensors.TensorSpec(**kwargs)
        assert (ours.dtype, ours.shape, ours.data_ptr, ours.data_len) == (
            theirs.dtype,
            theirs.shape,
            theirs.data_ptr,
            theirs.data_len,
        )
        assert repr(ours) == repr(theirs)
    for kwargs, error in (
        ({"dtype": "nonsense", "shape": [1], "data_ptr": 0, "data_len": 0}, SafetensorError),
        ({"dtype": "float32", "shape": [-1], "data_ptr": 0, "data_len": 0}, OverflowError),
    ):
        with pytest.raises(error):
            TensorSpec(**kwargs)
        with pytest.raises(safetensors.SafetensorError if error is SafetensorError else error):
            safetensors.TensorSpec(**kwargs)
    with pytest.raises(TypeError):
        TensorSpec("float32", [1], 0, 0)  # keyword-only, as the reference


def test_serialize_refuses_what_the_reference_refuses():
    short = np.ones(1, np.float32)
    bad = {"a": TensorSpec(dtype="float32", shape=[2], data_ptr=short.ctypes.data, data_len=4)}
    with pytest.raises(SafetensorError, match="Error while serializing"):
        serialize(bad)
    with pytest.raises(TypeError):
        serialize({"test": {"dtype": "float32", "shape": [1], "data_ptr": 0, "data_len": 0}})
    with pytest.raises(TypeError):
        serialize({}, metadata={"a": 1})


def test_deserialize_matches_the_reference():
    data = safetensors.numpy.save({"b": np.ones(2), "a": np.arange(3, dtype=np.int8)}, metadata={"k": "v"})
    ours = deserialize(data)
    theirs = safetensors.deserialize(data)
    assert sorted(ours) == sorted(theirs)
    assert all(type(entry["data"]) is bytearray for _, entry in ours)
    with pytest.raises(SafetensorError, match=r"^Error while deserializing: "):
        deserialize(b"\x00" * 8)
    with pytest.raises(TypeError):
        deserialize("text")
