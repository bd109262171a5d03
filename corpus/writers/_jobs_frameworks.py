# Strategy: the jobs of _write.py for the framework-level writers:
# safetensors' own save_file/save_model (numpy, torch, flax, paddle), mlx,
# mlx-lm and tinygrad.  Each writer is imported inside its job: every
# environment has only its own writers installed.
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from _common import SAFE, Out, fresh, loaded, same_numpy, same_torch, tied_module

if TYPE_CHECKING:
    from pathlib import Path

# ---------------------------------------------------------------- safetensors


def _arrays() -> dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(0)
    return {
        "weight": rng.standard_normal((3, 4)).astype(np.float32),
        "bias": np.zeros(3, np.float32),
        "half": rng.standard_normal(5).astype(np.float16),
        "index": np.arange(3, dtype=np.int64),
        "mask": np.array([True, False, True]),
    }


def job_safetensors(out: Out) -> None:
    import numpy as np
    import safetensors.numpy as stn

    arrays = _arrays()
    for meta, tag in ((None, "no_metadata"), ({"format": "np"}, "metadata")):
        rel = f"numpy_{tag}{SAFE}"
        stn.save_file(arrays, str(out.path(rel)), metadata=meta)
        call = f"safetensors.numpy.save_file(tensors, path, metadata={meta!r})"
        p = str(out.path(rel))
        out.file(
            rel, call, loaded("safetensors.numpy.load_file(path)", lambda p=p: same_numpy(arrays, stn.load_file(p)))
        )
    _safetensors_torch(out)
    _safetensors_flax(out, np)


def _safetensors_torch(out: Out) -> None:
    import safetensors.torch as stt
    import torch

    torch.manual_seed(0)
    tensors = {
        "weight": torch.randn(3, 4),
        "bias": torch.zeros(3),
        "bf16": torch.randn(5).to(torch.bfloat16),
        "index": torch.arange(3),
        "mask": torch.tensor([True, False, True]),
    }
    for meta, tag in ((None, "no_metadata"), ({"format": "pt"}, "metadata")):
        rel = f"torch_{tag}{SAFE}"
        p = str(out.path(rel))
        stt.save_file(tensors, p, metadata=meta)
        out.file(
            rel,
            f"safetensors.torch.save_file(tensors, path, metadata={meta!r})",
            loaded("safetensors.torch.load_file(path)", lambda p=p: same_torch(tensors, stt.load_file(p))),
        )
    if hasattr(stt, "save_model"):  # shared (tied) tensors: save_model keeps one name
        model = tied_module()
        rel = f"torch_save_model_tied{SAFE}"
        p = str(out.path(rel))
        stt.save_model(model, p)

        def back(p: str = p) -> None:
            other = tied_module(seed=1)
            stt.load_model(other, p)
            same_torch(model.state_dict(), other.state_dict())

        out.file(
            rel, "safetensors.torch.save_model(model_with_tied_weights, path)", loaded("load_model(model, path)", back)
        )


def _safetensors_flax(out: Out, np: Any) -> None:  # noqa: ANN401 - the numpy module
    import jax.numpy as jnp
    import safetensors.flax as stf

    arrays = {k: jnp.asarray(v) for k, v in _arrays().items() if k != "index"}
    arrays["bf16"] = jnp.asarray(np.linspace(-1, 1, 5), dtype=jnp.bfloat16)
    for meta, tag in ((None, "no_metadata"), ({"format": "flax"}, "metadata")):
        rel = f"flax_{tag}{SAFE}"
        p = str(out.path(rel))
        stf.save_file(arrays, p, metadata=meta)
        expected = {k: np.asarray(v) for k, v in arrays.items()}
        out.file(
            rel,
            f"safetensors.flax.save_file(jax_arrays, path, metadata={meta!r})",
            loaded(
                "safetensors.flax.load_file(path)",
                lambda p=p, e=expected: same_numpy(e, {k: np.asarray(v) for k, v in stf.load_file(p).items()}),
            ),
        )


def job_safetensors_paddle(out: Out) -> None:
    import numpy as np
    import paddle
    import safetensors.paddle as stp

    paddle.seed(0)
    arrays = {k: paddle.to_tensor(v) for k, v in _arrays().items()}
    for meta, tag in ((None, "no_metadata"), ({"format": "paddle"}, "metadata")):
        rel = f"paddle_{tag}{SAFE}"
        p = str(out.path(rel))
        expected = {k: v.numpy() for k, v in arrays.items()}
        stp.save_file(dict(arrays), p, metadata=meta)
        out.file(
            rel,
            f"safetensors.paddle.save_file(paddle_tensors, path, metadata={meta!r})",
            loaded(
                "safetensors.paddle.load_file(path)",
                lambda p=p, e=expected: same_numpy(e, {k: np.asarray(v) for k, v in stp.load_file(p).items()}),
            ),
        )


# ------------------------------------------------------------------------ mlx


def job_mlx(out: Out) -> None:
    import mlx.core as mx
    import numpy as np

    mx.random.seed(0)
    arrays = {
        "weight": mx.random.normal((3, 4)),
        "bias": mx.zeros((3,)),
        "bf16": mx.random.normal((5,)).astype(mx.bfloat16),
        "f16": mx.random.normal((5,)).astype(mx.float16),
        "index": mx.arange(3, dtype=mx.int32),
        "mask": mx.array([True, False, True]),
        "scalar": mx.array(2.5),
    }
    mx.eval(arrays)

    def as_bytes(values: dict[str, Any]) -> dict[str, Any]:
        return {k: np.array(v.reshape(-1).view(mx.uint8)) for k, v in values.items()}

    expected = as_bytes(arrays)
    for meta, tag in ((None, "no_metadata"), ({}, "metadata_empty"), ({"format": "mlx"}, "metadata")):
        rel = f"save_safetensors_{tag}{SAFE}"
        p = str(out.path(rel))
        if meta is None:
            mx.save_safetensors(p, arrays)
            call = "mx.save_safetensors(path, arrays)"
        else:
            mx.save_safetensors(p, arrays, metadata=meta)
            call = f"mx.save_safetensors(path, arrays, metadata={meta!r})"

        def back(p: str = p) -> None:
            got, _meta = mx.load(p, return_metadata=True)
            same_numpy(expected, as_bytes(got))

        out.file(rel, call, loaded("mx.load(path, return_metadata=True)", back))


def _mlx_llama(seed: int = 0) -> Any:  # noqa: ANN401 - an mlx module
    import mlx.core as mx
    from mlx_lm.models import llama

    mx.random.seed(seed)
    args = llama.ModelArgs(
        model_type="llama",
        hidden_size=8,
        num_hidden_layers=1,
        intermediate_size=16,
        num_attention_heads=2,
        rms_norm_eps=1e-5,
        vocab_size=16,
        num_key_value_heads=1,
        tie_word_embeddings=True,
    )
    model = llama.Model(args)
    mx.eval(model.parameters())
    return model, args


def job_mlx_lm(out: Out) -> None:
    import mlx.core as mx
    import numpy as np
    from mlx.utils import tree_flatten
    from mlx_lm.tuner.utils import linear_to_lora_layers, load_adapters

    def flat(params: Any) -> dict[str, Any]:  # noqa: ANN401 - an mlx parameter tree
        return {k: np.array(v.astype(mx.float32)) for k, v in tree_flatten(params)}

    lora = {"rank": 2, "scale": 10.0, "dropout": 0.0}
    for fine_tune_type in ("lora", "dora"):
        model, _args = _mlx_llama()
        model.freeze()
        linear_to_lora_layers(model, 1, lora, use_dora=fine_tune_type == "dora")
        weights = dict(tree_flatten(model.trainable_parameters()))
        mx.eval(weights)
        d = fresh(out.root / f"{fine_tune_type}_adapter")
        mx.save_safetensors(str(d / "adapters.safetensors"), weights)  # what mlx_lm's trainer writes
        config = {"fine_tune_type": fine_tune_type, "num_layers": 1, "lora_parameters": lora}
        (d / "adapter_config.json").write_text(json.dumps(config, indent=4) + "\n", encoding="utf-8")
        expected = flat(model.trainable_parameters())

        def back(d: Path = d, expected: dict[str, Any] = expected) -> None:
            other, _ = _mlx_llama(seed=1)
            other = load_adapters(other, str(d))
            got = {k: v for k, v in flat(other.parameters()).items() if k in expected}
            same_numpy(expected, got)

        out.folder(
            d.name,
            "linear_to_lora_layers(model, 1, {'rank': 2, 'scale': 10.0, 'dropout': 0.0}"
            f"{', use_dora=True' if fine_tune_type == 'dora' else ''}); "
            "mx.save_safetensors('adapters.safetensors', dict(tree_flatten(model.trainable_parameters())))",
            loaded("mlx_lm.tuner.utils.load_adapters(model, d)", back),
        )
    _mlx_lm_model(out, flat)


def _mlx_lm_model(out: Out, flat: Any) -> None:  # noqa: ANN401 - the flattening helper
    from mlx_lm import utils

    model, args = _mlx_llama()
    d = fresh(out.root / "llama_save_model")
    utils.save_model(d, model)
    cfg = {k: v for k, v in vars(args).items() if not k.startswith("_")}
    (d / "config.json").write_text(json.dumps(cfg, indent=4, sort_keys=True, default=str) + "\n", encoding="utf-8")
    expected = flat(model.parameters())

    def back() -> None:
        other = utils.load_model(d)
        other = other[0] if isinstance(other, tuple) else other
        same_numpy(expected, flat(other.parameters()))

    out.folder("llama_save_model", "mlx_lm.utils.save_model(d, model)", loaded("mlx_lm.utils.load_model(d)", back))


# ------------------------------------------------------------------- tinygrad


def job_tinygrad(out: Out) -> None:
    import numpy as np
    from tinygrad import Tensor, dtypes, nn
    from tinygrad.nn.state import get_state_dict, safe_load, safe_save

    Tensor.manual_seed(0)

    class Net:
        def __init__(self) -> None:
            self.l1 = nn.Linear(4, 3)
            self.emb = nn.Embedding(6, 4)
            self.norm = nn.LayerNorm(4)

    net = Net()
    state = get_state_dict(net)
    state["half"] = Tensor([1.0, -2.0, 0.5], dtype=dtypes.float16)
    expected = {k: v.numpy() for k, v in state.items()}
    for meta, tag in ((None, "no_metadata"), ({"format": "tinygrad"}, "metadata")):
        rel = f"safe_save_{tag}{SAFE}"
        p = str(out.path(rel))
        if meta is None:
            safe_save(state, p)
            call = "safe_save(get_state_dict(net), path)"
        else:
            safe_save(state, p, metadata=meta)
            call = f"safe_save(get_state_dict(net), path, metadata={meta!r})"

        def back(p: str = p) -> None:
            same_numpy(expected, {k: np.asarray(v.numpy()) for k, v in safe_load(p).items()})

        out.file(rel, call, loaded("safe_load(path)", back))
