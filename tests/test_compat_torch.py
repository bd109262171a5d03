# Strategy: validator.compat.torch side by side with safetensors.torch 0.8.0:
# byte-identical saves, the same refusals with the same exception types, the
# shared-storage helpers on the same inputs, and save_model/load_model on
# tied and partially-overlapping weights, compared file for file.
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
import numpy as np  # noqa: E402
import safetensors.torch as ref  # noqa: E402

import validator  # noqa: E402
from validator.compat import SafetensorError, safe_open  # noqa: E402
from validator.compat import torch as ours  # noqa: E402


def header(path) -> dict[str, object]:
    data = path.read_bytes()
    return json.loads(data[8 : 8 + int.from_bytes(data[:8], "little")])


def data_region(path) -> bytes:
    data = path.read_bytes()
    return data[8 + int.from_bytes(data[:8], "little") :]


def test_save_and_load_match_the_reference(tmp_path):
    tensors = {
        "w": torch.randn(3, 4),
        "b": torch.arange(5, dtype=torch.bfloat16),
        "m": torch.tensor([True, False]),
        "c": torch.zeros(2, dtype=torch.complex64),
        "e": torch.zeros(2, 0),
        "f8": torch.tensor([-0.5]).to(torch.float8_e4m3fn),
        "u": torch.arange(3).to(torch.uint32),
    }
    blob = ours.save(tensors, metadata={"k": "v"})
    assert blob == ref.save(tensors, metadata={"k": "v"})
    ours.save_file(tensors, tmp_path / "a.safetensors")
    ref.save_file(tensors, tmp_path / "b.safetensors")
    assert (tmp_path / "a.safetensors").read_bytes() == (tmp_path / "b.safetensors").read_bytes()
    for loaded in (ours.load_file(tmp_path / "a.safetensors"), ours.load(blob)):
        expected = ref.load(blob)
        assert list(loaded) == list(ours.load(blob))
        for name, tensor in expected.items():
            assert loaded[name].dtype == tensor.dtype
            assert loaded[name].shape == tensor.shape
            assert loaded[name].view(torch.uint8).equal(tensor.view(torch.uint8)) if tensor.numel() else True


def test_loaded_tensors_are_writable_and_never_reach_the_file(tmp_path):
    path = tmp_path / "w.safetensors"
    ours.save_file({"w": torch.zeros(4)}, path)
    before = path.read_bytes()
    loaded = ours.load_file(path)
    loaded["w"].add_(1)
    again = ours.load(before)
    again["w"].add_(2)
    assert path.read_bytes() == before
    assert ours.load_file(path)["w"].tolist() == [0.0] * 4
    assert ours._find_shared_tensors(ours.load_file(path)) == [{"w"}]


def _shared_head() -> dict[str, object]:
    a = torch.arange(6.0).reshape(2, 3)
    return {"A": a, "B": a[:1]}


def _shared_tail() -> dict[str, object]:
    a = torch.arange(6.0).reshape(2, 3)
    return {"A": a, "B": a[1:]}


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: {"test": torch.sparse_coo_tensor(size=(2, 3))}, ValueError),
        (lambda: {"test": {"some": "thing"}}, ValueError),
        (lambda: "notadict", ValueError),
        (lambda: {"test": torch.arange(6.0).reshape(2, 3)[:, 1]}, ValueError),
        (_shared_head, RuntimeError),
        (_shared_tail, RuntimeError),
    ],
    ids=["sparse", "bogus", "not-a-dict", "non-contiguous", "shared-head", "shared-tail"],
)
def test_save_refusals_match_the_reference(tmp_path, make, error):
    tensors = make()
    with pytest.raises(error) as theirs:
        ref.save_file(tensors, tmp_path / "x.safetensors")
    with pytest.raises(error) as mine:
        ours.save_file(tensors, tmp_path / "x.safetensors")
    assert isinstance(mine.value, validator.StcheckError)
    if error is ValueError:
        assert str(mine.value) == str(theirs.value)


def test_unknown_dtype_is_a_safetensor_error(tmp_path):
    # The reference raises a bare KeyError from its size table here.
    with pytest.raises(SafetensorError, match='Unknown dtype "complex128"'):
        ours.save_file({"z": torch.zeros(2, dtype=torch.complex128)}, tmp_path / "z.safetensors")


def test_meta_tensor_refused_by_torch_itself(tmp_path):
    with pytest.raises(RuntimeError, match="Cannot copy out of meta tensor"):
        ours.save_file({"m": torch.zeros(2, device="meta")}, tmp_path / "m.safetensors")


def test_float4_loads_as_float4_e2m1fn_x2(tmp_path):
    if not hasattr(torch, "float4_e2m1fn_x2"):
        pytest.skip("this torch has no float4_e2m1fn_x2")
    packed = torch.tensor([[0x21, 0x43], [0x65, 0x87]], dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    ours.save_file({"q": packed}, tmp_path / "q.safetensors")
    loaded = ours.load_file(tmp_path / "q.safetensors")["q"]
    assert loaded.dtype == torch.float4_e2m1fn_x2
    assert tuple(loaded.shape) == (2, 2)
    assert loaded.view(torch.uint8).equal(packed.view(torch.uint8))
    assert ours.load((tmp_path / "q.safetensors").read_bytes())["q"].view(torch.uint8).equal(packed.view(torch.uint8))
    with safe_open(tmp_path / "q.safetensors", "pt") as f:
        assert f.get_slice("q")[1:].view(torch.uint8).tolist() == [[0x65, 0x87]]


def test_slices_are_torch_views(tmp_path):
    a = torch.randn(10, 5)
    ours.save_file({"a": a}, tmp_path / "a.safetensors")
    with safe_open(tmp_path / "a.safetensors", "pt") as f:
        sl = f.get_slice("a")
        for index in (
            (slice(None),),
            (),
            (slice(2, None), -1),
            (slice(None), slice(None, 2)),
            ([],),
            (slice(None, None, 2),),
        ):
            assert sl[index].equal(a[index])


# -- the shared-storage helpers ----------------------------------------------


def test_helpers_agree_with_the_reference():
    m = torch.randn(10)
    n = torch.empty([], dtype=m.dtype)
    n.set_(source=m.untyped_storage()[:16])
    big = torch.zeros((16,))
    cases = [
        {"A": (a := torch.zeros((3, 3))), "B": a[:1, :]},
        {"A": a},
        {"B": a[:1, :]},
        {"C": (c := torch.zeros((2, 2), device="meta")), "D": c[:1]},
        {"B": (v := torch.zeros(4))[:2], "C": v[2:]},
        {"B": v[:2], "C": v[1:]},
        {"B": v[:2], "C": v[2:], "D": v[:1]},
        {"m": m, "n": n},
        {"x": (w := torch.zeros(100))[:50], "y": w[10:20], "z": w[30:40]},  # the reference splits z off y
    ]
    for case in cases:
        assert ours._find_shared_tensors(case) == ref._find_shared_tensors(case), case
    for t in (a, a[:1, :], a[::2, :], c, big[::4], torch.zeros(4, dtype=torch.float16)):
        assert ours._is_complete(t) == ref._is_complete(t)
        if t.is_contiguous() or t.dim() == 1:  # the reference's view(-1) fails on the others
            assert ours._end_ptr(t) - t.data_ptr() == ref._end_ptr(t) - t.data_ptr()
        assert ours.storage_ptr(t) == ref.storage_ptr(t)
        assert ours.storage_size(t) == ref.storage_size(t)
    assert ours._end_ptr(a[::2, :]) - a.data_ptr() == (2 * 3 + 3) * 4  # rows 0 and 2: one past the last element
    assert ours._remove_duplicate_names({"A": a, "B": a[:1, :], "C": a}) == ref._remove_duplicate_names(
        {"A": a, "B": a[:1, :], "C": a}
    )
    tied = {"x": a, "y": a}
    for kwargs in ({"preferred_names": ["y"]}, {"discard_names": ["x"]}, {}):
        assert ours._remove_duplicate_names(tied, **kwargs) == ref._remove_duplicate_names(tied, **kwargs)
    with pytest.raises(RuntimeError, match="None is covering the entire storage"):
        ours._remove_duplicate_names({"B": a[:1, :]})


# -- save_model / load_model -------------------------------------------------


class Tied(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = self.a


class Partial(torch.nn.Module):
    """b.weight is the first row of a.weight: a partial view, not an alias."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.register_buffer("head", self.a.weight.data[:1])


class Untied(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = torch.nn.Linear(4, 4)


@pytest.mark.parametrize("model_type", [Tied, Partial, Untied])
def test_save_model_writes_what_the_reference_writes(tmp_path, model_type):
    model = model_type()
    ours.save_model(model, tmp_path / "ours.safetensors")
    ref.save_model(model, tmp_path / "ref.safetensors")
    assert header(tmp_path / "ours.safetensors") == header(tmp_path / "ref.safetensors")
    assert data_region(tmp_path / "ours.safetensors") == data_region(tmp_path / "ref.safetensors")
    fresh = model_type()
    assert ours.load_model(fresh, tmp_path / "ref.safetensors") == ref.load_model(
        model_type(), tmp_path / "ref.safetensors"
    )
    for name, tensor in model.state_dict().items():
        assert fresh.state_dict()[name].equal(tensor), name


def test_save_model_does_not_change_the_callers_metadata(tmp_path):
    metadata = {"k": "v"}
    ours.save_model(Tied(), tmp_path / "m.safetensors", metadata=metadata)
    assert metadata == {"k": "v"}
    with safe_open(tmp_path / "m.safetensors", "pt") as f:
        assert f.metadata() == {"k": "v", "b.weight": "a.weight", "b.bias": "a.bias"}


def test_validator_open_resolves_save_model_aliases(tmp_path):
    model = Tied()
    ours.save_model(model, tmp_path / "m.safetensors")
    with validator.open(tmp_path / "m.safetensors", framework="torch") as f:
        assert f.keys() == ["a.bias", "a.weight"]
        assert f.aliases == {"b.weight": "a.weight", "b.bias": "a.bias"}
        assert f.get("b.weight").equal(model.b.weight.detach())


def test_load_model_strict_reports_like_the_reference(tmp_path):
    ours.save_model(Tied(), tmp_path / "tied.safetensors")
    with pytest.raises(RuntimeError) as mine:
        ours.load_model(Untied(), tmp_path / "tied.safetensors")
    with pytest.raises(RuntimeError) as theirs:
        ref.load_model(Untied(), tmp_path / "tied.safetensors")
    assert str(mine.value) == str(theirs.value)
    assert ours.load_model(Untied(), tmp_path / "tied.safetensors", strict=False) == ref.load_model(
        Untied(), tmp_path / "tied.safetensors", strict=False
    )


def test_save_model_non_contiguous(tmp_path):
    class Transposed(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.nn.Linear(3, 3)
            self.a.weight = torch.nn.Parameter(torch.zeros(3, 3).t())

    with pytest.raises(ValueError, match=r"use save_model\(\.\.\., force_contiguous=True\)"):
        ours.save_model(Transposed(), tmp_path / "t.safetensors", force_contiguous=False)
    ours.save_model(Transposed(), tmp_path / "t.safetensors")
    assert np.array_equal(ours.load_file(tmp_path / "t.safetensors")["a.weight"].numpy(), np.zeros((3, 3)))
