# Strategy: the transformers jobs of _write.py (each release saves the same
# tiny GPT-2, GPT-Neo and tied Llama, single, sharded and with variants),
# the folder cases synthesized from their outputs, and the cross-loading
# job that runs one release's loaders on every other job's outputs.
from __future__ import annotations

import json
import shutil
from typing import TYPE_CHECKING, Any

from _common import (
    DifferError,
    Out,
    fresh,
    gpt2,
    loaded,
    safe_kwargs,
    same_torch,
    save_pretrained,
    tf_loader,
    tf_state,
)

if TYPE_CHECKING:
    from pathlib import Path

# --------------------------------------------------------------- transformers


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


def job_transformers(out: Out) -> None:
    import torch
    import transformers as tf

    safe = safe_kwargs(tf)
    cases: list[tuple[str, Any, Any, dict[str, Any]]] = [
        ("gpt2", gpt2, tf.GPT2LMHeadModel, {}),
        ("gpt2_sharded", gpt2, tf.GPT2LMHeadModel, {"max_shard_size": "1KB"}),
        ("gpt2_sharded_first_tensor_over_max", gpt2, tf.GPT2LMHeadModel, {"max_shard_size": 200}),
        ("gpt2_variant_fp16", gpt2, tf.GPT2LMHeadModel, {"variant": "fp16"}),
        ("gpt2_sharded_variant_fp16", gpt2, tf.GPT2LMHeadModel, {"max_shard_size": 400, "variant": "fp16"}),
        ("gpt2_sharded_variant_ema_fp16", gpt2, tf.GPT2LMHeadModel, {"max_shard_size": 400, "variant": "ema.fp16"}),
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
        call = save_pretrained(model, d, **safe, **kwargs)
        expected = tf_state(model)
        load_kwargs = {"variant": kwargs["variant"]} if "variant" in kwargs else {}
        if "variant" in kwargs:
            load_kwargs["torch_dtype" if _old(tf) else "dtype"] = torch.float16
        fact = tf_loader(tf, cls, d, expected, **load_kwargs)
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
    fact = tf_loader(tf, tf.LlamaForCausalLM, d, tf_state(model))
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
    model = gpt2(tf)
    fact = tf_loader(tf, tf.GPT2LMHeadModel, d, tf_state(model))
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
    fact = tf_loader(tf, tf.GPT2LMHeadModel, d, tf_state(model))
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
    expected = tf_state(gpt2(tf).to(torch.float16))
    fact = tf_loader(tf, tf.GPT2LMHeadModel, d, expected, variant="ema.fp16", dtype=torch.float16)
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
    model = gpt2(tf)
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
    fact = tf_loader(tf, tf.GPT2LMHeadModel, d, tf_state(model), use_safetensors=True)
    out.folder(
        d.name,
        f"{src} plus torch.save(model.state_dict(), 'pytorch_model.bin'), "
        "torch.save(TrainingArguments(...), 'training_args.bin') and a modeling_custom.py",
        fact,
        synthesized_from=f"transformers-{tf.__version__}/{src}",
        defect="pickles (pytorch_model.bin, training_args.bin: torch.save ZIP pickles) and custom code "
        "beside the safetensors",
        file_loader=loads[src],
        # pytorch_model.bin is a state dict: weights only, a warning (ST705); training_args.bin
        # imports transformers' own classes to rebuild TrainingArguments: an error naming them.
        error_mentions=["training_args.bin"],
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
            state = tf_state(model)
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
