# Strategy: the writer side of corpus/writers/generate.py, run INSIDE one
# writer's virtual environment as `python _write.py JOB OUTDIR RECORDS`.
#
# Every job builds tiny models from configs (random init under fixed seeds;
# nothing is downloaded), saves them with the writer's own call, then loads
# them back with the writer's own loader and compares every tensor with what
# was saved.  A load "succeeds" only when it returns without an exception AND
# hands back the saved values: a loader that silently initialises missing
# weights afresh does not count as reading the file.  The records (one per
# file, folder and index, with the exact call) go to RECORDS as JSON; the
# loaders environment measures the rest (_probe.py).
#
# Imports of the writers happen inside the job functions: each environment
# has only its own writers installed.  This file never imports stcheck.
from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import io
import json
import os
import shutil
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore")

SAFE = ".safetensors"
Record = dict[str, Any]


def loaded(call: str, fn: Any) -> dict[str, Any]:  # noqa: ANN401 - any zero-argument callable
    """Run a load-and-compare; the fact recorded in the manifest."""
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            fn()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - whatever the loader raises (a Rust panic too) is the fact
        line = f"{type(exc).__name__}: {exc}".splitlines()[0].replace(f"{Path.cwd()}/", "")[:300]
        return {"call": call, "loads": False, "error": line}
    return {"call": call, "loads": True, "error": None}


class DifferError(AssertionError):
    """The loader returned, but not the values that were saved."""


def same_torch(expected: dict[str, Any], got: dict[str, Any], *, allow_missing: tuple[str, ...] = ()) -> None:
    import torch

    for name, value in expected.items():
        if name not in got:
            if name in allow_missing:
                continue
            raise DifferError(f"loaded model lacks {name}")
        other = got[name]
        if value.shape != other.shape or not torch.equal(value.detach().cpu(), other.detach().cpu().to(value.dtype)):
            raise DifferError(f"{name}: loaded values differ from the saved ones")


def same_numpy(expected: dict[str, Any], got: dict[str, Any]) -> None:
    import numpy as np

    if sorted(expected) != sorted(got):
        raise DifferError(f"names differ: {sorted(expected)} vs {sorted(got)}")
    for name, value in expected.items():
        a, b = np.asarray(value), np.asarray(got[name])
        if a.shape != b.shape or a.dtype != b.dtype or a.tobytes() != b.tobytes():
            raise DifferError(f"{name}: loaded values differ from the saved ones")


class Out:
    """Collects records; paths are relative to the job's folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.records: list[Record] = []

    def path(self, rel: str) -> Path:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def file(self, rel: str, call: str, loader: dict[str, Any], **extra: Any) -> None:  # noqa: ANN401 - JSON values
        self.records.append({"path": rel, "kind": "file", "call": call, "loader": loader, **extra})

    def folder(self, rel: str, call: str, loader: dict[str, Any], **extra: Any) -> None:  # noqa: ANN401 - JSON values
        """The folder, every safetensors file and every index in it.

        A file inside inherits the folder's load fact; a synthesized folder
        passes ``file_loader`` (the load fact of the real folder its files
        were copied from), since its defect is in the folder, not the files.
        """
        file_loader = extra.pop("file_loader", loader)
        base = self.root / rel
        contents = sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file())
        self.records.append(
            {"path": rel, "kind": "folder", "call": call, "loader": loader, "contents": contents, **extra}
        )
        for name in contents:
            sub = {k: v for k, v in extra.items() if k in {"synthesized_from", "defect"}}
            if name.endswith(SAFE):
                via = {**file_loader, "via": "the folder's loader"}
                self.records.append({"path": f"{rel}/{name}", "kind": "file", "call": call, "loader": via, **sub})
            elif ".safetensors.index" in name and name.endswith(".json"):
                rules = {k: v for k, v in extra.items() if k == "error_rules"}
                self.records.append(
                    {"path": f"{rel}/{name}", "kind": "index", "call": call, "loader": loader, **sub, **rules}
                )


def fresh(d: Path) -> Path:
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    return d


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
        model = _tied_module()
        rel = f"torch_save_model_tied{SAFE}"
        p = str(out.path(rel))
        stt.save_model(model, p)

        def back(p: str = p) -> None:
            other = _tied_module(seed=1)
            stt.load_model(other, p)
            same_torch(model.state_dict(), other.state_dict())

        out.file(
            rel, "safetensors.torch.save_model(model_with_tied_weights, path)", loaded("load_model(model, path)", back)
        )


def _tied_module(seed: int = 0) -> Any:  # noqa: ANN401 - a torch module
    import torch

    torch.manual_seed(seed)

    class Tied(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(6, 4)
            self.head = torch.nn.Linear(4, 6, bias=False)
            self.head.weight = self.embed.weight

    return Tied()


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


# --------------------------------------------------------------- transformers


def _gpt2(tf: Any, seed: int = 0) -> Any:  # noqa: ANN401 - transformers objects
    import torch

    torch.manual_seed(seed)
    return tf.GPT2LMHeadModel(
        tf.GPT2Config(vocab_size=16, n_positions=8, n_embd=4, n_layer=1, n_head=1, bos_token_id=0, eos_token_id=0)
    )


def _gpt_neo(tf: Any, seed: int = 0) -> Any:  # noqa: ANN401 - transformers objects
    import torch

    torch.manual_seed(seed)
    config = tf.GPTNeoConfig(
        vocab_size=16,
        max_position_embeddings=8,
        hidden_size=4,
        num_layers=1,
        num_heads=1,
        attention_types=[[["global"], 1]],
        intermediate_size=8,
        window_size=4,
        bos_token_id=0,
        eos_token_id=0,
    )
    return tf.GPTNeoForCausalLM(config)


def _llama_tied(tf: Any, seed: int = 0) -> Any:  # noqa: ANN401 - transformers objects
    import torch

    torch.manual_seed(seed)
    config = tf.LlamaConfig(
        vocab_size=16,
        hidden_size=8,
        intermediate_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,  # no grouped-query attention: transformers 4.30 has none, and cross-loads these
        max_position_embeddings=8,
        tie_word_embeddings=True,
    )
    return tf.LlamaForCausalLM(config)


def _tf_state(model: Any) -> dict[str, Any]:  # noqa: ANN401 - a torch module
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _tf_loader(tf: Any, cls: Any, d: Path, expected: dict[str, Any], **kwargs: Any) -> dict[str, Any]:  # noqa: ANN401
    args = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    call = f"{cls.__name__}.from_pretrained(d{args})"

    def back() -> None:
        got = cls.from_pretrained(str(d), **kwargs)
        same_torch(expected, _tf_state(got))

    del tf
    return loaded(call, back)


def _safe(tf: Any) -> dict[str, Any]:  # noqa: ANN401 - the transformers module
    """safe_serialization=True where the release still defaults to pickles."""
    major, minor = (int(x) for x in tf.__version__.split(".")[:2])
    return {"safe_serialization": True} if (major, minor) < (4, 35) else {}


def _save(model: Any, d: Path, **kwargs: Any) -> str:  # noqa: ANN401 - a transformers model
    model.save_pretrained(str(d), **kwargs)
    args = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    return f"model.save_pretrained(d{args})"


def job_transformers(out: Out) -> None:
    import torch
    import transformers as tf

    safe = _safe(tf)
    cases: list[tuple[str, Any, Any, dict[str, Any]]] = [
        ("gpt2", _gpt2, tf.GPT2LMHeadModel, {}),
        ("gpt2_sharded", _gpt2, tf.GPT2LMHeadModel, {"max_shard_size": "1KB"}),
        ("gpt2_sharded_first_tensor_over_max", _gpt2, tf.GPT2LMHeadModel, {"max_shard_size": 200}),
        ("gpt2_variant_fp16", _gpt2, tf.GPT2LMHeadModel, {"variant": "fp16"}),
        ("gpt2_sharded_variant_fp16", _gpt2, tf.GPT2LMHeadModel, {"max_shard_size": 400, "variant": "fp16"}),
        ("gpt2_sharded_variant_ema_fp16", _gpt2, tf.GPT2LMHeadModel, {"max_shard_size": 400, "variant": "ema.fp16"}),
        ("gpt_neo", _gpt_neo, tf.GPTNeoForCausalLM, {}),
        ("gpt_neo_sharded", _gpt_neo, tf.GPTNeoForCausalLM, {"max_shard_size": "1KB"}),
        ("llama_tied", _llama_tied, tf.LlamaForCausalLM, {}),
        ("llama_tied_sharded", _llama_tied, tf.LlamaForCausalLM, {"max_shard_size": "1KB"}),
    ]
    loads: dict[str, dict[str, Any]] = {}
    for name, build, cls, kwargs in cases:
        model = build(tf)
        if "fp16" in kwargs.get("variant", ""):
            model = model.to(torch.float16)
        d = fresh(out.root / name)
        call = _save(model, d, **safe, **kwargs)
        expected = _tf_state(model)
        load_kwargs = {"variant": kwargs["variant"]} if "variant" in kwargs else {}
        if "variant" in kwargs:
            load_kwargs["torch_dtype" if _old(tf) else "dtype"] = torch.float16
        fact = _tf_loader(tf, cls, d, expected, **load_kwargs)
        loads[name] = fact
        out.folder(name, call, fact)
    if tf.__version__.startswith("5."):
        _synthesized(out, tf, loads)


def _old(tf: Any) -> bool:  # noqa: ANN401 - the transformers module
    return not tf.__version__.startswith("5.")


def _index_of(d: Path) -> Path:
    (index,) = sorted(d.glob("*.safetensors.index*.json"))
    return index


def _rewrite_index(path: Path, change: Any) -> None:  # noqa: ANN401 - a function of the index object
    index = json.loads(path.read_text(encoding="utf-8"))
    change(index)
    path.write_text(json.dumps(index, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _synthesized(out: Out, tf: Any, loads: dict[str, dict[str, Any]]) -> None:  # noqa: ANN401 - transformers module
    """Folder cases seen in the wild, made from this job's real outputs."""
    import torch

    # 1. A hub-conversion index that lists the tied lm_head.weight, which no shard holds.
    src = "llama_tied_sharded"
    d = out.root / "llama_tied_lm_head_listed_not_stored"
    shutil.copytree(out.root / src, d)
    index = _index_of(d)
    first = min(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values())
    _rewrite_index(index, lambda ix: ix["weight_map"].__setitem__("lm_head.weight", first))
    model = _llama_tied(tf)
    fact = _tf_loader(tf, tf.LlamaForCausalLM, d, _tf_state(model))
    out.folder(
        d.name,
        f'{src} with weight_map["lm_head.weight"] = "{first}" added (the tie supplies it)',
        fact,
        synthesized_from=f"transformers-{tf.__version__}/{src}",
        defect="the index lists the tied lm_head.weight, which no shard holds",
        file_loader=loads[src],
    )
    # 2. An orphan, stale shard beside the index (left over from an earlier save).
    src = "gpt2_sharded"
    d = out.root / "gpt2_orphan_stale_shard"
    shutil.copytree(out.root / src, d)
    shards = sorted(d.glob("model-*.safetensors"))
    shutil.copyfile(shards[0], d / "model-00001-of-00099.safetensors")
    model = _gpt2(tf)
    fact = _tf_loader(tf, tf.GPT2LMHeadModel, d, _tf_state(model))
    out.folder(
        d.name,
        f"{src} plus model-00001-of-00099.safetensors (a copy of {shards[0].name}) that the index does not name",
        fact,
        synthesized_from=f"transformers-{tf.__version__}/{src}",
        defect="a stale shard that the index does not reference",
        file_loader=loads[src],
    )
    # 3. An index whose weight_map is empty (and whose total_size, 0, agrees with it).
    d = out.root / "gpt2_index_empty_weight_map"
    shutil.copytree(out.root / src, d)

    def empty(ix: dict[str, Any]) -> None:
        ix["weight_map"] = {}
        ix["metadata"] = {"total_size": 0}

    _rewrite_index(_index_of(d), empty)
    fact = _tf_loader(tf, tf.GPT2LMHeadModel, d, _tf_state(model))
    out.folder(
        d.name,
        f'{src} with the index\'s weight_map replaced by {{}} and its metadata by {{"total_size": 0}}',
        fact,
        synthesized_from=f"transformers-{tf.__version__}/{src}",
        defect="the index's weight_map is empty",
        file_loader=loads[src],
    )
    # 4. A dotted-variant sharded save with one shard deleted.
    src = "gpt2_sharded_variant_ema_fp16"
    d = out.root / "gpt2_variant_ema_fp16_shard_missing"
    shutil.copytree(out.root / src, d)
    shards = sorted(d.glob("*.safetensors"))
    shards[-1].unlink()
    expected = _tf_state(_gpt2(tf).to(torch.float16))
    fact = _tf_loader(tf, tf.GPT2LMHeadModel, d, expected, variant="ema.fp16", dtype=torch.float16)
    out.folder(
        d.name,
        f"{src} with {shards[-1].name} deleted",
        fact,
        synthesized_from=f"transformers-{tf.__version__}/{src}",
        defect="a shard that the (dotted-variant) index names is missing",
        file_loader=loads[src],
        error_rules=["index-shard-missing"],
    )
    # 5. A model folder that also holds pickles and custom code, as hub repositories do.
    _pickle_folder(out, tf, loads)


def _pickle_folder(out: Out, tf: Any, loads: dict[str, dict[str, Any]]) -> None:  # noqa: ANN401 - transformers module
    import torch

    src = "gpt2"
    d = out.root / "gpt2_folder_with_pickles_and_code"
    shutil.copytree(out.root / src, d)
    model = _gpt2(tf)
    torch.save(model.state_dict(), d / "pytorch_model.bin")  # what save_pretrained(safe_serialization=False) wrote
    import inspect

    wanted = {"output_dir": "out", "logging_dir": "out/runs", "report_to": [], "use_cpu": True, "seed": 0}
    accepted = inspect.signature(tf.TrainingArguments).parameters
    args = tf.TrainingArguments(**{k: v for k, v in wanted.items() if k in accepted})
    torch.save(args, d / "training_args.bin")  # what Trainer writes beside every checkpoint
    (d / "modeling_custom.py").write_text(
        '"""Custom modeling code, as trust_remote_code repositories carry (benign)."""\n\n'
        "from transformers import GPT2LMHeadModel\n\n\n"
        "class CustomModel(GPT2LMHeadModel):\n"
        '    """A subclass that changes nothing."""\n',
        encoding="utf-8",
    )
    fact = _tf_loader(tf, tf.GPT2LMHeadModel, d, _tf_state(model), use_safetensors=True)
    out.folder(
        d.name,
        f"{src} plus torch.save(model.state_dict(), 'pytorch_model.bin'), "
        "torch.save(TrainingArguments(...), 'training_args.bin') and a modeling_custom.py",
        fact,
        synthesized_from=f"transformers-{tf.__version__}/{src}",
        defect="pickles (pytorch_model.bin, training_args.bin: torch.save ZIP pickles) and custom code "
        "beside the safetensors",
        file_loader=loads[src],
        error_mentions=["pytorch_model.bin", "training_args.bin"],
    )


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
        call = _save(model, d, **kwargs)
        expected = _tf_state(model)
        cls = type(model)
        load_kwargs: dict[str, Any] = {"variant": kwargs["variant"]} if "variant" in kwargs else {}
        if "variant" in kwargs:
            load_kwargs["torch_dtype"] = torch.float16
        out.folder(name, call, _tf_loader(None, cls, d, expected, **load_kwargs))


# ------------------------------------------------------------ huggingface_hub


def job_huggingface_hub(out: Out) -> None:
    import huggingface_hub as hh
    import transformers as tf

    for name, kwargs in (("gpt2_tied_single", {}), ("gpt2_tied_sharded", {"max_shard_size": 1000})):
        model = _gpt2(tf)
        d = fresh(out.root / name)
        hh.save_torch_state_dict(model.state_dict(), str(d), **kwargs)
        args = "".join(f", {k}={v!r}" for k, v in kwargs.items())

        def back(d: Path = d, model: Any = model) -> None:  # noqa: ANN401 - a torch module
            other = _gpt2(tf, seed=1)
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
        return peft.get_peft_model(_gpt2(tf), config)

    model = build()
    d = fresh(out.root / "lora_gpt2")
    model.save_pretrained(str(d))
    expected = {k: v.detach().clone() for k, v in model.state_dict().items() if "lora_" in k}

    def back() -> None:
        got = peft.PeftModel.from_pretrained(_gpt2(tf, seed=1), str(d))
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
    expected = _tf_state(model)

    def back() -> None:
        got = st.SentenceTransformer(str(d), device="cpu")
        same_torch(expected, _tf_state(got))

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


# ------------------------------------------------------------ cross-loading

# Folders whose index construct is disputed; loaded with each transformers release.
CROSS_FOLDERS = (
    "transformers-4.30.2/gpt_neo_sharded",  # float total_size, bool buffers at 1/8 byte
    "transformers-4.30.2/gpt2_sharded_first_tensor_over_max",  # an empty shard the index does not name
    "transformers-5.24.0/llama_tied_sharded",  # the control for the next one
    "transformers-5.24.0/llama_tied_lm_head_listed_not_stored",
    "transformers-5.24.0/gpt2_sharded",  # the control for the next three
    "transformers-5.24.0/gpt2_orphan_stale_shard",
    "transformers-5.24.0/gpt2_index_empty_weight_map",
    "transformers-5.24.0/gpt2_variant_ema_fp16_shard_missing",
    "transformers-4.30.2/gpt2_sharded_variant_ema_fp16",
    "transformers-5.24.0/gpt2_sharded_variant_ema_fp16",
    "diffusers/controlnet_sharded_variant_ema_fp16",
)


def job_crossload(out: Out) -> None:
    """This release's loaders on the other jobs' outputs (writes no file).

    Every safetensors file goes through ``transformers.modeling_utils.
    load_state_dict``, the per-file loader of ``from_pretrained``, compared
    with ``safetensors.torch.load_file``; the folders above go through
    ``AutoModelForCausalLM.from_pretrained``, compared with the tensors
    their shards hold.
    """
    import safetensors.torch as stt
    import transformers as tf
    from transformers import modeling_utils

    name = f"transformers-{tf.__version__}"
    for file in sorted(out.root.glob("*/**/*.safetensors")):
        rel = str(file.relative_to(out.root))
        if rel.startswith("crossload"):
            continue

        def back(file: Path = file) -> None:
            got = modeling_utils.load_state_dict(str(file))
            same_torch(stt.load_file(str(file)), got)

        fact = loaded("transformers.modeling_utils.load_state_dict(path)", back)
        out.records.append({"path": rel, "kind": "cross", "loader_name": name, "fact": fact})
    for rel in CROSS_FOLDERS:
        d = out.root / rel
        if not d.is_dir() or "diffusers" in rel:
            continue
        index = next(iter(sorted(d.glob("*.safetensors.index*.json"))), None)
        variant = (
            index.name.split(".safetensors.index.")[1][: -len(".json")] if index and ".index." in index.name else None
        )
        kwargs: dict[str, Any] = {"variant": variant} if variant else {}

        def load(d: Path = d, kwargs: dict[str, Any] = kwargs) -> None:
            model = tf.AutoModelForCausalLM.from_pretrained(str(d), **kwargs)
            state = _tf_state(model)
            stored: dict[str, Any] = {}
            for shard in sorted(d.glob("*.safetensors")):
                stored.update(stt.load_file(str(shard)))
            # Buffers a release no longer keeps (GPT-Neo's bool masks) are not compared.
            same_torch({k: v for k, v in stored.items() if k in state}, state)
            tied = {"lm_head.weight"} if model.config.tie_word_embeddings else set()
            fresh = sorted(n for n, _ in model.named_parameters() if n not in stored and n not in tied)
            if fresh:
                raise DifferError(f"not loaded from the checkpoint: {fresh[:3]}")

        args = "".join(f", {k}={v!r}" for k, v in kwargs.items())
        fact = loaded(f"AutoModelForCausalLM.from_pretrained(d{args})", load)
        out.records.append({"path": rel, "kind": "cross", "loader_name": name, "fact": fact})


JOBS = {
    "safetensors": job_safetensors,
    "safetensors-paddle": job_safetensors_paddle,
    "transformers": job_transformers,
    "diffusers": job_diffusers,
    "huggingface_hub": job_huggingface_hub,
    "peft": job_peft,
    "accelerate": job_accelerate,
    "sentence-transformers": job_sentence_transformers,
    "optimum-quanto": job_optimum_quanto,
    "mlx": job_mlx,
    "mlx-lm": job_mlx_lm,
    "tinygrad": job_tinygrad,
    "keras-hub": job_keras_hub,
    "crossload": job_crossload,
}


def _kind(job: str) -> str:
    if job.startswith("safetensors-"):
        return "safetensors-paddle" if job.endswith("-paddle") else "safetensors"
    if job.startswith("transformers-"):
        return "transformers"
    if job.startswith("keras-hub-"):
        return "keras-hub"
    if job.startswith("crossload-"):
        return "crossload"
    return job


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("job")
    parser.add_argument("out", type=Path)
    parser.add_argument("records", type=Path)
    parser.add_argument("--package", action="append", default=[])
    args = parser.parse_args()
    os.chdir(args.out)
    out = Out(args.out)
    kind = _kind(args.job)
    try:
        JOBS[kind](out)
    except Exception:  # noqa: BLE001 - the job failed: say why, and exit 1 for generate.py to record
        traceback.print_exc()
        return 1
    versions = {package: _version(package) for package in args.package}
    if kind.startswith("safetensors"):
        import safetensors  # the --target copy: its metadata may be absent

        versions["safetensors"] = getattr(safetensors, "__version__", None) or versions.get("safetensors")
    versions["python"] = sys.version.split()[0]
    writer = kind.removesuffix("-paddle")
    result = {"job": args.job, "writer": writer, "versions": versions, "records": out.records}
    args.records.write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
