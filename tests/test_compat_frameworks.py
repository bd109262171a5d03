# Strategy: the JAX (flax), MLX and paddle modules, where those frameworks
# are installed (CPU wheels: jax/jaxlib, mlx[cpu], paddlepaddle); each test
# skips with the reason elsewhere.  Round trips through save/load and
# save_file/load_file, byte equality with safetensors.numpy for the same
# values, the capability table's refusals, and the reference's own module
# where it works on this platform.
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy

from validator.compat import SafetensorError, safe_open
from validator.io.devices import FRAMEWORK_CAPABILITIES

VALUES = {
    "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
    "bf16": np.arange(4).astype(ml_dtypes.bfloat16),
    "i8": np.array([-1, 2], np.int8),
    "c64": np.array([1 + 2j], np.complex64),
    "empty": np.zeros((2, 0), np.float32),
}


@pytest.fixture
def path(tmp_path):
    target = tmp_path / "v.safetensors"
    safetensors.numpy.save_file(VALUES, target)
    return target


JAX_CHECK = """
import sys
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import safetensors.numpy
from validator.compat import SafetensorError, flax, safe_open
from validator.compat import numpy as cnp

path, out = sys.argv[1], sys.argv[2]
VALUES = safetensors.numpy.load_file(path)
loaded = flax.load_file(path)
for name, array in VALUES.items():
    assert loaded[name].dtype == array.dtype, name
    np.testing.assert_array_equal(np.asarray(loaded[name]), array)
blob = flax.save(loaded)
assert blob == safetensors.numpy.save(VALUES)
assert {k: np.asarray(v).tolist() for k, v in flax.load(blob).items()} == {k: v.tolist() for k, v in VALUES.items()}
arrays = {"x": jnp.ones(3)}
flax.save_file(arrays, out)
assert type(arrays["x"]).__module__.startswith("jax")  # the caller's dict is left alone
with safe_open(out, "flax") as f:
    assert np.asarray(f.get_slice("x")[1:]).tolist() == [1.0, 1.0]
cnp.save_file({"x": np.zeros(4, ml_dtypes.float6_e2m3fn)}, out)
try:
    safe_open(out, "flax").get_tensor("x")
except SafetensorError as exc:
    assert "F6_E2M3 (XLA has no float6 types)" in str(exc), exc
else:
    raise AssertionError("F6 loaded into JAX")
print("ok")
"""


def test_jax_round_trip(tmp_path, path):
    # In a child process: JAX starts threads, and later tests fork.
    pytest.importorskip("jax")
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *sys.path]))
    run = subprocess.run(
        [sys.executable, "-c", JAX_CHECK, str(path), str(tmp_path / "j.safetensors")],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().endswith("ok")


def test_mlx_round_trip(tmp_path, path):
    mx = pytest.importorskip("mlx.core")
    from validator.compat import mlx

    loaded = mlx.load_file(path)
    assert loaded["bf16"].dtype == mx.bfloat16
    assert loaded["f32"].tolist() == VALUES["f32"].tolist()
    assert mlx.save(loaded) == safetensors.numpy.save(VALUES)
    assert mlx.load(mlx.save(loaded))["c64"].dtype == mx.complex64
    mlx.save_file({"x": mx.arange(3)}, tmp_path / "m.safetensors")
    assert mlx.load_file(tmp_path / "m.safetensors")["x"].tolist() == [0, 1, 2]


def test_paddle_round_trip(tmp_path, path):
    paddle = pytest.importorskip("paddle")
    from validator.compat import paddle as cpaddle

    loaded = cpaddle.load_file(path)
    assert loaded["bf16"].dtype == paddle.bfloat16
    assert loaded["f32"].numpy().tolist() == VALUES["f32"].tolist()
    assert cpaddle.save(loaded) == safetensors.numpy.save(VALUES)
    again = cpaddle.load(cpaddle.save(loaded))
    assert again["bf16"].astype(paddle.float32).numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
    f8 = paddle.to_tensor(np.array([0.5, -1.0], ml_dtypes.float8_e4m3fn).view(np.uint8)).view(paddle.float8_e4m3fn)
    cpaddle.save_file({"f8": f8}, tmp_path / "p.safetensors")
    with safe_open(tmp_path / "p.safetensors", "paddle") as f:
        assert f.get_tensor("f8").dtype == paddle.float8_e4m3fn
    with pytest.raises(ValueError, match=r"expected paddle\.Tensor"):
        cpaddle.save({"t": np.zeros(2)})


@pytest.mark.parametrize(
    ("framework", "module", "dtype", "array"),
    [
        ("paddle", "paddle", "U32", np.arange(2, dtype=np.uint32)),
        ("paddle", "paddle", "F8_E8M0", np.array([1.0], ml_dtypes.float8_e8m0fnu)),
        ("mlx", "mlx.core", "F8_E4M3", np.array([1.0], ml_dtypes.float8_e4m3fn)),
    ],
)
def test_capability_table_refuses_what_a_framework_cannot_hold(tmp_path, framework, module, dtype, array):
    pytest.importorskip(module)
    target = tmp_path / "x.safetensors"
    from validator.compat import numpy as cnp

    cnp.save_file({"x": array}, target)
    key = {"flax": "jax"}.get(framework, framework) + ":cpu"
    reason = FRAMEWORK_CAPABILITIES[key].never[dtype]
    with (
        safe_open(target, framework) as f,
        pytest.raises(SafetensorError, match=f"Dtype not understood: {dtype} \\({reason}\\)"),
    ):
        f.get_tensor("x")


def test_capability_table_names_only_known_dtypes():
    from validator._dtypes import DTYPES

    for cap in FRAMEWORK_CAPABILITIES.values():
        assert set(cap.never) | set(cap.narrows) <= set(DTYPES)
