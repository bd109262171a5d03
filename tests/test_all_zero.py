# tensor-all-zero (ST602) that users can trust (issue 20): a freshly
# initialised model has zero biases, zero norm biases, zero LoRA B factors,
# zero ControlNet convolutions and zero adaLN modulation; none of them is a
# finding.  A whole large weight matrix of zeros still is.  Grouping is the
# same in every command.  Each test was seen failing before the fix.
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest
from scan_fixtures import build, write

from validator.pipeline.engine import Job, Options, scan_file
from validator.read.deep import ZERO_MIN_ELEMENTS, zero_is_suspicious

if TYPE_CHECKING:
    from pathlib import Path


def _rand(*shape: int, seed: int = 0) -> bytes:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32).tobytes()


def _zeros(*shape: int) -> bytes:
    return bytes(4 * int(np.prod(shape)))


def _ones(*shape: int) -> bytes:
    return np.ones(shape, dtype=np.float32).tobytes()


def _scan(path: Path):
    return scan_file(Job(str(path), ((str(path), None),)), Options(deep=True))


def _zero_findings(result) -> list[tuple[str | None, str]]:
    return [(i.finding.tensor, i.finding.message) for i in result.items if i.finding.slug == "tensor-all-zero"]


def fresh_gpt2(layers: int = 2, d: int = 64, vocab: int = 512) -> list[tuple[str, str, list[int], bytes]]:
    """A GPT-2 state dict as transformers initialises it: normal weights, zero biases, LayerNorm (1, 0)."""
    t = [("transformer.wte.weight", "F32", [vocab, d], _rand(vocab, d, seed=1))]
    t.append(("transformer.wpe.weight", "F32", [128, d], _rand(128, d, seed=2)))
    for i in range(layers):
        h = f"transformer.h.{i}."
        t += [
            (h + "ln_1.weight", "F32", [d], _ones(d)),
            (h + "ln_1.bias", "F32", [d], _zeros(d)),
            (h + "attn.c_attn.weight", "F32", [d, 3 * d], _rand(d, 3 * d, seed=10 + i)),
            (h + "attn.c_attn.bias", "F32", [3 * d], _zeros(3 * d)),
            (h + "attn.c_proj.weight", "F32", [d, d], _rand(d, d, seed=20 + i)),
            (h + "attn.c_proj.bias", "F32", [d], _zeros(d)),
            (h + "ln_2.weight", "F32", [d], _ones(d)),
            (h + "ln_2.bias", "F32", [d], _zeros(d)),
            (h + "mlp.c_fc.weight", "F32", [d, 4 * d], _rand(d, 4 * d, seed=30 + i)),
            (h + "mlp.c_fc.bias", "F32", [4 * d], _zeros(4 * d)),
            (h + "mlp.c_proj.weight", "F32", [4 * d, d], _rand(4 * d, d, seed=40 + i)),
            (h + "mlp.c_proj.bias", "F32", [d], _zeros(d)),
        ]
    t += [("transformer.ln_f.weight", "F32", [d], _ones(d)), ("transformer.ln_f.bias", "F32", [d], _zeros(d))]
    return t


def test_fresh_gpt2_with_zero_biases_gets_no_all_zero_finding(tmp_path: Path) -> None:
    tensors = fresh_gpt2()
    assert sum(not any(data) for *_, data in tensors) == 13  # the 13 zero biases (2 layers)
    result = _scan(write(tmp_path / "gpt2.safetensors", build(tensors)))
    assert _zero_findings(result) == []
    assert result.deep["all_zero_tensors"] == 13  # counted as a fact, not reported


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("base_model.model.transformer.h.0.attn.c_attn.lora_B.weight", [192, 64]),  # peft
        ("base_model.model.model.layers.0.mlp.down_proj.lora_B.default.weight", [4096, 64]),  # peft, named adapter
        ("base_model.model.model.embed_tokens.lora_embedding_A", [8, 32000]),  # peft embedding LoRA
        ("model.layers.0.self_attn.q_proj.lora_b", [8, 4096]),  # mlx-lm
        ("lora_unet_down_blocks_0_attentions_0_proj_in.lora_up.weight", [320, 64]),  # kohya sd-scripts
        ("unet.down_blocks.0.attentions.0.processor.to_q_lora.up.weight", [320, 64]),  # diffusers (old LoRA)
        ("controlnet_down_blocks.0.weight", [320, 320, 1, 1]),  # diffusers ControlNet
        ("controlnet_mid_block.weight", [1280, 1280, 1, 1]),
        ("controlnet_cond_embedding.conv_out.weight", [320, 256, 3, 3]),
        ("control_model.zero_convs.3.0.weight", [640, 640, 1, 1]),  # original ControlNet
        ("control_model.middle_block_out.0.weight", [1280, 1280, 1, 1]),
        ("blocks.0.adaLN_modulation.1.weight", [6912, 1152]),  # DiT
        ("final_layer.adaLN_modulation.1.weight", [2304, 1152]),
    ],
)
def test_zero_initialised_layers_by_design_are_not_suspicious(name: str, shape: list[int]) -> None:
    assert not zero_is_suspicious(name, tuple(shape))


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("h.0.attn.c_attn.bias", (192,)),  # a bias
        ("h.0.ln_1.weight", (64,)),  # a norm (zero_init_residual zeroes norm weights)
        ("gate_attn", (1,)),  # a tanh gate (Flamingo, Mllama cross-attention)
        ("cls_token", (1, 1, 768)),  # a token: one dimension above 1
        ("mask_token", (1, 768)),
        ("step", ()),  # a scalar
        ("small", (16, 16)),  # a matrix below ZERO_MIN_ELEMENTS
    ],
)
def test_vectors_scalars_and_small_tensors_are_not_suspicious(name: str, shape: tuple[int, ...]) -> None:
    assert not zero_is_suspicious(name, shape)


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("transformer.h.0.attn.c_attn.weight", (64, 192)),
        ("model.layers.0.mlp.gate_proj.weight", (11008, 4096)),  # 'gate' in a name is no exemption
        ("model.embed_tokens.weight", (32000, 4096)),
        ("conv.weight", (64, 64, 3, 3)),
        ("base_model.model.h.0.attn.lora_A.weight", (8, 4096)),  # LoRA A is random at init: zero is broken
        ("up_blocks.0.resnets.0.conv1.weight", (64, 64, 3, 3)),  # 'up' alone is not a LoRA factor
    ],
)
def test_large_weight_matrices_are_suspicious(name: str, shape: tuple[int, ...]) -> None:
    assert zero_is_suspicious(name, shape)


def test_threshold_is_a_64_by_64_matrix() -> None:
    assert ZERO_MIN_ELEMENTS == 64 * 64
    assert zero_is_suspicious("w", (64, 64))
    assert not zero_is_suspicious("w", (63, 64))


def test_fresh_lora_adapter_gets_no_finding_but_a_zeroed_weight_does(tmp_path: Path) -> None:
    lora = []
    for i in range(2):
        p = f"base_model.model.transformer.h.{i}.attn.c_attn."
        lora += [
            (p + "lora_A.weight", "F32", [8, 64], _rand(8, 64, seed=i)),
            (p + "lora_B.weight", "F32", [192, 8], _zeros(192, 8)),
        ]
    result = _scan(write(tmp_path / "adapter_model.safetensors", build(lora)))
    assert _zero_findings(result) == []
    broken = fresh_gpt2()
    at = [t[0] for t in broken].index("transformer.h.0.attn.c_attn.weight")
    broken[at] = (broken[at][0], "F32", [64, 192], _zeros(64, 192))  # a whole weight matrix zeroed
    result = _scan(write(tmp_path / "broken.safetensors", build(broken)))
    (finding,) = [i.finding for i in result.items if i.finding.slug == "tensor-all-zero"]
    assert finding.tensor == "transformer.h.0.attn.c_attn.weight"
    assert (
        finding.message == "tensor 'transformer.h.0.attn.c_attn.weight' (F32, [64, 192], 49152 bytes) is entirely zero"
    )
    assert finding.severity.value == "warning"


def _zeroed_layers(n: int) -> bytes:
    tensors = [(f"h.{i}.mlp.c_fc.weight", "F32", [64, 256], _zeros(64, 256)) for i in range(n)]
    return build([*tensors, ("h.ok.weight", "F32", [64, 64], _rand(64, 64))])


def test_download_groups_per_tensor_findings_as_scan_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("urllib3")
    from tests.remote_servers import Server, from_bytes
    from validator.cli.main import main

    data = _zeroed_layers(5)
    path = write(tmp_path / "m.safetensors", data)
    assert main(["scan", "--no-config", "--deep", "--progress", "never", str(path)]) == 0
    scanned = [line for line in capsys.readouterr().out.splitlines() if ": ST602 " in line]
    with Server() as server:
        server.site.resources["/m.safetensors"] = from_bytes(data)
        assert main(["download", server.url + "/m.safetensors", "-d", str(tmp_path / "o"), "--progress", "never"]) == 0
    downloaded = [line for line in capsys.readouterr().out.splitlines() if ": ST602 " in line]
    assert len(scanned) == len(downloaded) == 1  # was 5 lines in download
    assert "5 tensors ('h.0.mlp.c_fc.weight', 'h.1.mlp.c_fc.weight', 'h.2.mlp.c_fc.weight' and 2 more)" in downloaded[0]
    assert scanned[0].split(": ST602 ", 1)[1] == downloaded[0].split(": ST602 ", 1)[1]


def test_a_shard_of_one_zero_bias_is_no_zero_tail(tmp_path: Path) -> None:
    # transformers shards a fresh GPT-2 so that one shard holds only
    # transformer.h.0.mlp.c_fc.bias: 64 zero bytes, the whole data region.
    # data-zero-tail (ST603) said "the download may have been cut short".
    path = write(tmp_path / "model-00006-of-00008.safetensors", build([("h.0.mlp.c_fc.bias", "F32", [16], _zeros(16))]))
    result = _scan(path)
    assert [i.finding.slug for i in result.items] == []
    assert result.deep["all_zero_tensors"] == 1


def test_a_whole_zero_region_holding_a_weight_matrix_is_still_a_zero_tail(tmp_path: Path) -> None:
    path = write(
        tmp_path / "m.safetensors", build([("b", "F32", [16], _zeros(16)), ("w", "F32", [64, 64], _zeros(64, 64))])
    )
    result = _scan(path)
    assert [(i.finding.slug, i.finding.tensor) for i in result.items] == [
        ("tensor-all-zero", "w"),
        ("data-zero-tail", None),
    ]
