# The dtype table (validator/_dtypes.py) against the libraries it names: each
# numpy/ml_dtypes and torch type exists and has the table's width and kind.
from __future__ import annotations

import pytest

from validator._dtypes import BY_NAME, DTYPE_BITS, DTYPES, SUBBYTE, TABLE
from validator.io import dtypes_np, dtypes_torch

NUMPY_KIND = {"bool": "b", "uint": "u", "int": "i", "complex": "c"}


def test_table_is_the_reference_order_with_unique_names():
    assert [d.name for d in TABLE] == list(DTYPES) == list(DTYPE_BITS) == list(BY_NAME)
    assert {"F4", "F6_E2M3", "F6_E3M2"} == SUBBYTE


@pytest.mark.parametrize("dtype", [d for d in TABLE if d.name not in SUBBYTE], ids=lambda d: d.name)
def test_numpy_type_has_the_table_width_and_kind(dtype):
    found = dtypes_np.numpy_dtype(dtype.name)
    assert found.itemsize * 8 == dtype.bits
    assert found.kind == NUMPY_KIND.get(dtype.kind, found.kind)
    assert dtypes_np.safetensors_dtype(found) == dtype.name


@pytest.mark.parametrize("dtype", sorted(SUBBYTE))
def test_subbyte_types_unpack_to_one_byte(dtype):
    assert dtypes_np.unpacked_dtype(dtype).itemsize == 1
    assert dtypes_np.safetensors_dtype(dtypes_np.unpacked_dtype(dtype)) == dtype


@pytest.mark.parametrize("dtype", [d for d in TABLE if d.torch is not None], ids=lambda d: d.name)
def test_torch_type_has_the_table_width(dtype):
    torch = pytest.importorskip("torch")
    found = getattr(torch, dtype.torch, None)
    if found is None:
        pytest.skip(f"torch {torch.__version__} has no {dtype.torch}")
    per_byte = 8 // dtype.bits if dtype.name in SUBBYTE else 1
    assert found.itemsize * 8 == dtype.bits * per_byte
    assert dtypes_torch.safetensors_dtype(found) == dtype.name
    assert found.is_floating_point == (dtype.kind == "float")


def test_special_values_only_for_floats():
    for d in TABLE:
        if d.specials is not None:
            assert d.kind in {"float", "complex"}
            kind, mask, first = d.specials
            assert kind in {"ieee", "nan-from", "nan-eq"}
            assert 0 < first <= mask < 1 << (d.bits // 2 if d.kind == "complex" else d.bits)
