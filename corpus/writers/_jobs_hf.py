# Strategy: the jobs of _write.py for the libraries built on torch and the
# hub: diffusers, huggingface_hub, peft, accelerate, sentence-transformers,
# optimum-quanto, and keras-hub's transformers exporter.
from __future__ import annotations

import importlib
import json
import shutil
from typing import TYPE_CHECKING, Any

from _common import DifferError, Out, fresh, gpt2, loaded, same_torch, save_pretrained, tf_loader, tf_state

if TYPE_CHECKING:
    from pathlib import Path

# ------------------------------------------------------------------ diffusers


def job_diffusers(out: Out) -> None:
    import diffusers
    import torch

    def controlnet(seed: int = 0) -> Any:  # noqa: ANN401 - a diffusers model
        torch.manual_seed(seed)
        return diffusers.ControlNetModel(
            in_channels=4,
            block_out_channels=(4, 8),
            down_block_types=("DownBlock2D", "DownBlock2D"),
            layers_per_block=1,
            cross_attention_dim=4,
            attention_head_dim=2,
            norm_num_groups=2,
            conditioning_embedding_out_channels=(2, 4),
        )

    def unet(seed: int = 0) -> Any:  # noqa: ANN401 - a diffusers model
        torch.manual_seed(seed)
        return diffusers.UNet2DModel(
            sample_size=8,
            in_channels=1,
            out_channels=1,
            layers_per_block=1,
            block_out_channels=(4,),
            down_block_types=("DownBlock2D",),
            up_block_types=("UpBlock2D",),
            norm_num_groups=2,
        )

    cases: list[tuple[str, Any, dict[str, Any]]] = [
        ("unet2d", unet, {}),
        ("unet2d_variant_fp16", unet, {"variant": "fp16"}),
        ("controlnet", controlnet, {}),
        ("controlnet_sharded_variant_ema_fp16", controlnet, {"max_shard_size": "2KB", "variant": "ema.fp16"}),
        ("controlnet_sharded", controlnet, {"max_shard_size": "2KB"}),
    ]
    for name, build, kwargs in cases:
        model = build()
        if "variant" in kwargs:
            model = model.to(torch.float16)
        d = fresh(out.root / name)
        call = save_pretrained(model, d, **kwargs)
        expected = tf_state(model)
        cls = type(model)
        load_kwargs: dict[str, Any] = {"variant": kwargs["variant"]} if "variant" in kwargs else {}
        if "variant" in kwargs:
            load_kwargs["torch_dtype"] = torch.float16
        out.folder(name, call, tf_loader(None, cls, d, expected, **load_kwargs))


# ------------------------------------------------------------ huggingface_hub


def job_huggingface_hub(out: Out) -> None:
    import huggingface_hub as hh
    import transformers as tf

    for name, kwargs in (("gpt2_tied_single", {}), ("gpt2_tied_sharded", {"max_shard_size": 1000})):
        model = gpt2(tf)
        d = fresh(out.root / name)
        hh.save_torch_state_dict(model.state_dict(), str(d), **kwargs)
        args = "".join(f", {k}={v!r}" for k, v in kwargs.items())

        def back(d: Path = d, model: Any = model) -> None:  # noqa: ANN401 - a torch module
            other = gpt2(tf, seed=1)
            hh.load_torch_model(other, str(d))
            same_torch(model.state_dict(), other.state_dict())

        out.folder(
            name,
            f"huggingface_hub.save_torch_state_dict(gpt2.state_dict(), d{args})  # wte and lm_head are tied",
            loaded("huggingface_hub.load_torch_model(gpt2, d)", back),
        )


# ----------------------------------------------------------------------- peft


def job_peft(out: Out) -> None:
    import peft
    import transformers as tf

    def build() -> Any:  # noqa: ANN401 - a peft model
        config = peft.LoraConfig(r=2, lora_alpha=4, target_modules=["c_attn"], fan_in_fan_out=True)
        return peft.get_peft_model(gpt2(tf), config)

    model = build()
    d = fresh(out.root / "lora_gpt2")
    model.save_pretrained(str(d))
    expected = {k: v.detach().clone() for k, v in model.state_dict().items() if "lora_" in k}

    def back() -> None:
        got = peft.PeftModel.from_pretrained(gpt2(tf, seed=1), str(d))
        state = {k: v for k, v in got.state_dict().items() if "lora_" in k}
        same_torch(expected, state)

    out.folder(
        "lora_gpt2",
        "peft.get_peft_model(gpt2, LoraConfig(r=2, lora_alpha=4, target_modules=['c_attn'])).save_pretrained(d)",
        loaded("peft.PeftModel.from_pretrained(gpt2, d)", back),
    )


# ----------------------------------------------------------------- accelerate


def job_accelerate(out: Out) -> None:
    import accelerate
    import torch

    def build(seed: int = 0) -> Any:  # noqa: ANN401 - a torch module
        torch.manual_seed(seed)
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8))

    acc = accelerate.Accelerator(cpu=True)
    for name, kwargs in (("mlp", {}), ("mlp_sharded", {"max_shard_size": "1KB"})):
        model = build()
        d = fresh(out.root / name)
        acc.save_model(model, str(d), safe_serialization=True, **kwargs)
        args = "".join(f", {k}={v!r}" for k, v in kwargs.items())

        def back(d: Path = d, model: Any = model) -> None:  # noqa: ANN401 - a torch module
            other = build(seed=1)
            accelerate.load_checkpoint_in_model(other, str(d))
            same_torch(model.state_dict(), other.state_dict())

        out.folder(
            name,
            f"Accelerator(cpu=True).save_model(model, d, safe_serialization=True{args})",
            loaded("accelerate.load_checkpoint_in_model(model, d)", back),
        )


# ------------------------------------------------------ sentence-transformers


def job_sentence_transformers(out: Out) -> None:
    import sentence_transformers as st
    import torch
    import transformers as tf

    try:
        modules = importlib.import_module("sentence_transformers.sentence_transformer.modules")
    except ImportError:  # releases before 6 keep them in sentence_transformers.models
        modules = importlib.import_module("sentence_transformers.models")

    base = out.root.parent / ".tmp-bert"
    fresh(base)
    try:
        words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "hello", "world"]
        (base / "vocab.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
        tf.BertTokenizer(str(base / "vocab.txt")).save_pretrained(str(base))
        torch.manual_seed(0)
        config = tf.BertConfig(
            vocab_size=len(words),
            hidden_size=4,
            num_hidden_layers=1,
            num_attention_heads=1,
            intermediate_size=8,
            max_position_embeddings=8,
        )
        tf.BertModel(config).save_pretrained(str(base))
        model = st.SentenceTransformer(
            modules=[modules.Transformer(str(base)), modules.Pooling(4)],
            device="cpu",
        )
        d = fresh(out.root / "bert_mean_pooling")
        model.save(str(d), create_model_card=False)
    finally:
        shutil.rmtree(base)
    expected = tf_state(model)

    def back() -> None:
        got = st.SentenceTransformer(str(d), device="cpu")
        same_torch(expected, tf_state(got))

    out.folder(
        "bert_mean_pooling",
        "SentenceTransformer(modules=[models.Transformer(tiny_bert), models.Pooling(4)])"
        ".save(d, create_model_card=False)",
        loaded("SentenceTransformer(d)", back),
    )


# ------------------------------------------------------------- optimum-quanto


def job_optimum_quanto(out: Out) -> None:
    import torch
    from optimum import quanto
    from safetensors.torch import load_file, save_file

    def build(seed: int = 0) -> Any:  # noqa: ANN401 - a torch module
        torch.manual_seed(seed)
        return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))

    for weights in ("qint8", "qint4"):
        model = build()
        quanto.quantize(model, weights=getattr(quanto, weights))
        quanto.freeze(model)
        d = fresh(out.root / f"mlp_{weights}")
        save_file(model.state_dict(), str(d / "model.safetensors"))
        qmap = quanto.quantization_map(model)
        (d / "quantization_map.json").write_text(json.dumps(qmap, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        x = torch.linspace(-1, 1, 8).reshape(1, 8)
        with torch.no_grad():
            want = model(x)

        def back(d: Path = d, want: Any = want, x: Any = x) -> None:  # noqa: ANN401 - torch tensors
            other = build(seed=1)
            state = load_file(str(d / "model.safetensors"))
            qm = json.loads((d / "quantization_map.json").read_text(encoding="utf-8"))
            quanto.requantize(other, state, qm)
            with torch.no_grad():
                if not torch.equal(other(x), want):
                    raise DifferError("requantized model computes other values")

        out.folder(
            f"mlp_{weights}",
            f"quantize(model, weights={weights}); freeze(model); "
            "safetensors.torch.save_file(model.state_dict(), 'model.safetensors'); quantization_map(model) to JSON",
            loaded("requantize(model, load_file(path), quantization_map)", back),
        )


# ------------------------------------------------------------------ keras-hub


def job_keras_hub(out: Out) -> None:
    import keras
    import keras_hub
    import numpy as np

    export = importlib.import_module("keras_hub.src.utils.transformers.export.hf_exporter")
    backend = keras.config.backend()

    def build(seed: int = 0) -> Any:  # noqa: ANN401 - a keras model
        keras.utils.set_random_seed(seed)
        return keras_hub.models.GPT2Backbone(
            vocabulary_size=16,
            num_layers=1,
            num_heads=1,
            hidden_dim=4,
            intermediate_dim=16,  # 4 x hidden: keras-hub's importer ignores n_inner and assumes that
            max_sequence_length=8,
        )

    backbone = build()
    name = f"gpt2_export_{backend}_backend"
    d = fresh(out.root / name)
    export.export_backbone(backbone, str(d))
    expected = [np.asarray(w.numpy()) for w in backbone.weights]

    def back() -> None:
        got = keras_hub.models.GPT2Backbone.from_preset(str(d))
        values = [np.asarray(w.numpy()) for w in got.weights]
        if len(values) != len(expected) or any(
            a.tobytes() != b.tobytes() for a, b in zip(values, expected, strict=True)
        ):
            raise DifferError("loaded weights differ from the exported ones")

    out.folder(
        name,
        f"KERAS_BACKEND={backend}: "
        "keras_hub.src.utils.transformers.export.hf_exporter.export_backbone(GPT2Backbone(...), d)",
        loaded("keras_hub.models.GPT2Backbone.from_preset(d)", back),
    )
