# Strategy: the index rules as real writers and loaders see them (issue 20)
# and the index's hostile-input bounds (issue 21).  Each test builds its
# checkpoint folder in tmp_path, named after the defect it holds, and asserts
# the exact findings (rule, severity, tensor, what the message names) or the
# command's exit code and lines.  test_index.py keeps the rule-by-rule tests
# of the index format itself.
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import validator
from validator._check import MAX_PER_RULE
from validator.cli.main import main
from validator.io import index as index_module
from validator.io.index import IndexReport, is_index_name, unsafe_shard_name

W = validator.Severity.WARNING
E = validator.Severity.ERROR
A, B = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"


def f32(n, value=1.0):
    return np.full(n, value, np.float32)


def folder(root, shards, *, index=None, name="model.safetensors.index.json", metadata=None, config=None):
    """Write ``shards`` ({file: {tensor: array}}) and an index naming each
    tensor's shard (or ``index`` verbatim) into ``root``; return the index path."""
    root.mkdir(parents=True, exist_ok=True)
    for shard, tensors in shards.items():
        validator.save(tensors, root / shard, metadata=metadata.get(shard) if isinstance(metadata, dict) else None)
    if index is None:
        weight_map = {t: s for s, ts in shards.items() for t in ts}
        total = sum(a.nbytes for ts in shards.values() for a in ts.values())
        index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    path = root / name
    path.write_text(json.dumps(index))
    if config is not None:
        (root / "config.json").write_text(json.dumps(config))
    return path


def found(report, slug):
    return [f for f in report.findings if f.slug == slug]


def cli(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


# -- item 1: a whole-number float total_size (transformers ~4.30) ---------------


def llama_like():
    return {A: {"model.embed_tokens.weight": f32(8), "model.norm.weight": f32(2)}, B: {"model.layers.0.w": f32(4)}}


def test_whole_float_total_size_is_a_warning_naming_the_true_size(tmp_path):
    # transformers 4.30 wrote "total_size": 1068.0 for GPT-Neo and counted its
    # bool buffers at 1/8 byte, so the value is wrong too; from_pretrained
    # never reads it.
    shards = llama_like()
    path = folder(tmp_path, shards)
    index = json.loads(path.read_text())
    index["metadata"]["total_size"] = 40.0  # the tensors hold 56 bytes
    path.write_text(json.dumps(index))
    report = validator.validate_index(path)
    assert [(f.slug, f.code, f.severity) for f in report.findings] == [("index-total-size-float", "ST512", W)]
    assert "40.0" in report.findings[0].message
    assert "56 bytes" in report.findings[0].message
    assert report.valid


def test_whole_float_total_size_equal_to_the_bytes_says_so(tmp_path):
    path = folder(tmp_path, llama_like())
    index = json.loads(path.read_text())
    index["metadata"]["total_size"] = 56.0
    path.write_text(json.dumps(index))
    report = validator.validate_index(path)
    assert [f.slug for f in report.findings] == ["index-total-size-float"]
    assert "equals the 56 bytes" in report.findings[0].message
    assert report.valid


@pytest.mark.parametrize(
    "value", [56.5, -56.0, True, "56", 1e400], ids=["fraction", "negative-float", "bool", "string", "infinite"]
)
def test_other_non_integer_total_sizes_stay_errors(tmp_path, value):
    path = folder(tmp_path, llama_like())
    index = json.loads(path.read_text())
    index["metadata"]["total_size"] = value
    raw = json.dumps(index).replace("Infinity", "1e400")
    path.write_text(raw)
    report = validator.validate_index(path)
    assert [(f.slug, f.severity) for f in report.findings] == [("index-invalid", E)]
    assert not report.valid


def test_check_passes_the_transformers_float_total_size_index(tmp_path, capsys):
    path = folder(tmp_path, llama_like())
    index = json.loads(path.read_text())
    index["metadata"]["total_size"] = 52.0
    path.write_text(json.dumps(index))
    rc, out, _ = cli(capsys, "check", str(tmp_path))
    assert rc == 0
    assert "ST512 index-total-size-float" in out


# -- item 2: a tensor the index lists that no shard holds ----------------------


def tied_checkpoint(tmp_path, listed="lm_head.weight", **kw):
    shards = llama_like()
    path = folder(tmp_path, shards, **kw)
    index = json.loads(path.read_text())
    index["weight_map"][listed] = A
    path.write_text(json.dumps(index))
    return path


def test_tied_lm_head_listed_but_not_stored_is_a_warning(tmp_path):
    # Hub conversion checkpoints list the tied lm_head.weight that no shard
    # holds; transformers loads them because the tie supplies the tensor.
    report = validator.validate_index(tied_checkpoint(tmp_path))
    assert [(f.slug, f.code, f.severity, f.tensor) for f in report.findings] == [
        ("index-tensor-tied", "ST513", W, "lm_head.weight")
    ]
    assert "model.embed_tokens.weight" in report.findings[0].message
    assert report.valid
    # total_size counts what is stored: it is still compared, and agrees.
    assert report.tensor_bytes == 56


def test_tied_name_whose_source_is_absent_is_an_error(tmp_path):
    shards = {A: {"model.norm.weight": f32(2)}}
    path = folder(tmp_path, shards)
    index = json.loads(path.read_text())
    index["weight_map"]["lm_head.weight"] = A
    path.write_text(json.dumps(index))
    report = validator.validate_index(path)
    assert [(f.slug, f.severity) for f in report.findings] == [("index-tensor-missing", E)]


def test_tied_name_held_by_another_shard_is_an_error(tmp_path):
    shards = llama_like()
    shards[B]["lm_head.weight"] = f32(8)
    path = folder(tmp_path, shards)
    index = json.loads(path.read_text())
    index["weight_map"]["lm_head.weight"] = A  # but shard B holds it
    path.write_text(json.dumps(index))
    report = validator.validate_index(path)
    missing = found(report, "index-tensor-missing")
    assert [(f.severity, f.tensor) for f in missing] == [(E, "lm_head.weight")]
    assert B in missing[0].message
    assert found(report, "index-tensor-tied") == []
    assert not report.valid


def test_a_tie_works_both_ways(tmp_path):
    # transformers 5 ties symmetrically: when the source is the one missing,
    # the target that is present supplies it.
    shards = {A: {"lm_head.weight": f32(8), "model.norm.weight": f32(2)}}
    path = folder(tmp_path, shards)
    index = json.loads(path.read_text())
    index["weight_map"]["model.embed_tokens.weight"] = A
    path.write_text(json.dumps(index))
    report = validator.validate_index(path)
    assert [(f.slug, f.tensor) for f in report.findings] == [("index-tensor-tied", "model.embed_tokens.weight")]


def test_config_that_turns_ties_off_keeps_the_missing_tensor_an_error(tmp_path):
    report = validator.validate_index(tied_checkpoint(tmp_path, config={"tie_word_embeddings": False}))
    assert [(f.slug, f.severity) for f in report.findings] == [("index-tensor-missing", E)]
    assert "tie_word_embeddings" in report.findings[0].message


def test_config_tie_word_embeddings_vouches_for_an_unknown_output_head(tmp_path):
    shards = {A: {"text.word_embeddings.weight": f32(8), "text.norm.weight": f32(2)}}
    path = folder(tmp_path, shards)
    index = json.loads(path.read_text())
    index["weight_map"]["text.proj_out.weight"] = A
    path.write_text(json.dumps(index))
    assert [f.slug for f in validator.validate_index(path).findings] == ["index-tensor-missing"]
    (tmp_path / "config.json").write_text(json.dumps({"tie_word_embeddings": True}))
    report = validator.validate_index(path)
    assert [(f.slug, f.severity, f.tensor) for f in report.findings] == [
        ("index-tensor-tied", W, "text.proj_out.weight")
    ]
    assert "config.json" in report.findings[0].message


def test_config_tie_encoder_decoder_vouches_for_the_decoder_copy(tmp_path):
    shards = {A: {"encoder.embeddings.weight": f32(8), "decoder.lm.weight": f32(2)}}
    path = folder(tmp_path, shards)
    index = json.loads(path.read_text())
    index["weight_map"]["decoder.bert.embeddings.weight"] = A
    path.write_text(json.dumps(index))
    assert [f.slug for f in validator.validate_index(path).findings] == ["index-tensor-missing"]
    (tmp_path / "config.json").write_text(json.dumps({"is_encoder_decoder": True, "tie_encoder_decoder": True}))
    report = validator.validate_index(path)
    assert [(f.slug, f.tensor) for f in report.findings] == [("index-tensor-tied", "decoder.bert.embeddings.weight")]
    assert "encoder.embeddings.weight" in report.findings[0].message


def test_tied_note_in_the_index_metadata_vouches(tmp_path):
    # huggingface_hub's save_torch_state_dict records each dropped shared
    # tensor in the index metadata as {dropped: kept}.
    shards = {A: {"emb": f32(8)}}
    path = folder(tmp_path, shards)
    index = json.loads(path.read_text())
    index["weight_map"]["out_proj"] = A
    path.write_text(json.dumps(index))
    assert [f.slug for f in validator.validate_index(path).findings] == ["index-tensor-missing"]
    index["metadata"]["out_proj"] = "emb"
    path.write_text(json.dumps(index))
    report = validator.validate_index(path)
    assert [(f.slug, f.tensor) for f in report.findings] == [("index-tensor-tied", "out_proj")]
    # A note naming a tensor that no shard holds vouches for nothing.
    index["metadata"]["out_proj"] = "ghost"
    path.write_text(json.dumps(index))
    assert [f.slug for f in validator.validate_index(path).findings] == ["index-tensor-missing"]


def test_tied_note_in_the_shard_metadata_vouches(tmp_path):
    # safetensors.torch.save_model records {dropped: kept} in the file's metadata.
    shards = {A: {"emb": f32(8)}}
    path = folder(tmp_path, shards, metadata={A: {"format": "pt", "out_proj": "emb"}})
    index = json.loads(path.read_text())
    index["weight_map"]["out_proj"] = A
    path.write_text(json.dumps(index))
    assert [f.slug for f in validator.validate_index(path).findings] == ["index-tensor-tied"]


def test_config_beside_the_index_never_silences_a_finding(tmp_path):
    # config.json is part of the download: it may turn the one ST505 finding
    # of a tie into a warning that is still reported, and nothing else.
    config = {"tie_word_embeddings": True, "tie_encoder_decoder": True, "ignore": ["ST505", "ST503"]}
    path = tied_checkpoint(tmp_path, config=config)
    index = json.loads(path.read_text())
    index["weight_map"]["ghost"] = A
    index["weight_map"]["gone"] = "model-00003-of-00003.safetensors"
    path.write_text(json.dumps(index))
    report = validator.validate_index(path)
    assert [(f.slug, f.severity) for f in report.findings] == [
        ("index-shard-missing", E),
        ("index-tensor-tied", W),
        ("index-tensor-missing", E),
    ]


@pytest.mark.parametrize("kind", ["fifo", "directory", "not-json", "array", "huge"])
def test_unusable_config_is_ignored_without_blocking(tmp_path, kind):
    path = tied_checkpoint(tmp_path)
    config = tmp_path / "config.json"
    if kind == "fifo":
        os.mkfifo(config)
    elif kind == "directory":
        config.mkdir()
    elif kind == "not-json":
        config.write_bytes(b"\xff{")
    elif kind == "array":
        config.write_text('[{"tie_word_embeddings": false}]')
    else:
        config.write_bytes(b'{"tie_word_embeddings": false, "x": "' + b"a" * 2_000_000 + b'"}')
    report = validator.validate_index(path)
    assert [f.slug for f in report.findings] == ["index-tensor-tied"]


# -- item 3: an empty weight_map -------------------------------------------------


def test_empty_weight_map_is_an_error_in_the_library(tmp_path):
    path = tmp_path / "model.safetensors.index.json"
    path.write_text('{"metadata": {"total_size": 0}, "weight_map": {}}')
    report = validator.validate_index(path)
    assert [(f.slug, f.code) for f in report.findings] == [("index-invalid", "ST501")]
    assert "names no tensor" in report.findings[0].message
    assert not report.valid


def test_empty_weight_map_is_the_same_error_in_the_cli(tmp_path, capsys):
    path = tmp_path / "model.safetensors.index.json"
    path.write_text('{"metadata": {"total_size": 1392}, "weight_map": {}}')
    rc, out, err = cli(capsys, "check", str(path))
    assert rc == 1
    assert "ST501 index-invalid" in out
    assert "invalid" in out.splitlines()[0]
    assert err == ""


# -- item 4: orphan files beside an index ----------------------------------------


def test_stale_shard_beside_the_index_is_an_orphan_warning(tmp_path):
    path = folder(tmp_path, llama_like())
    validator.save({"old": f32(1)}, tmp_path / "model-00001-of-00099.safetensors")
    report = validator.validate_index(path)
    assert [(f.slug, f.code, f.severity) for f in report.findings] == [("index-orphan-shard", "ST514", W)]
    assert "model-00001-of-00099.safetensors" in report.findings[0].message
    assert report.valid


def test_variant_indexes_in_one_folder_do_not_flag_each_others_shards(tmp_path):
    folder(tmp_path, llama_like())
    folder(
        tmp_path,
        {"model.fp16-00001-of-00001.safetensors": {"w": f32(1)}},
        name="model.safetensors.index.fp16.json",
    )
    folder(
        tmp_path,
        {"model.ema.fp16-00001-of-00001.safetensors": {"w": f32(1)}},
        name="model.safetensors.index.ema.fp16.json",
    )
    for name in ["model.safetensors.index.json", "model.safetensors.index.fp16.json"]:
        assert validator.validate_index(tmp_path / name).findings == ()
    # A stale shard of one variant is that variant's orphan, and only its.
    validator.save({"old": f32(1)}, tmp_path / "model.ema.fp16-00001-of-00003.safetensors")
    assert validator.validate_index(tmp_path / "model.safetensors.index.json").findings == ()
    assert validator.validate_index(tmp_path / "model.safetensors.index.fp16.json").findings == ()
    ema = validator.validate_index(tmp_path / "model.safetensors.index.ema.fp16.json")
    assert [f.slug for f in ema.findings] == ["index-orphan-shard"]


def test_shard_named_by_a_sibling_index_is_not_an_orphan(tmp_path):
    folder(tmp_path, llama_like())
    other = {"weight_map": {"old": "model-00001-of-00099.safetensors"}, "metadata": {"total_size": 4}}
    validator.save({"old": f32(1)}, tmp_path / "model-00001-of-00099.safetensors")
    (tmp_path / "other.safetensors.index.json").write_text(json.dumps(other))
    assert validator.validate_index(tmp_path / "model.safetensors.index.json").findings == ()


def test_unlisted_shard_of_the_same_numbering_is_an_orphan_with_its_own_reason(tmp_path):
    # transformers 4.30 can write an empty first shard that its index does not name.
    path = folder(tmp_path, {B: {"w": f32(1)}})
    validator.save({}, tmp_path / A)
    report = validator.validate_index(path)
    assert [f.slug for f in report.findings] == ["index-orphan-shard"]
    assert "numbered like one of this index's shards" in report.findings[0].message


def test_lone_safetensors_of_another_name_is_not_an_orphan(tmp_path):
    path = folder(tmp_path, llama_like())
    validator.save({"lora": f32(1)}, tmp_path / "adapter_model.safetensors")
    assert validator.validate_index(path).findings == ()


def test_single_file_beside_a_sharded_index_says_transformers_loads_the_file(tmp_path):
    path = folder(tmp_path, llama_like())
    validator.save({"w": f32(1)}, tmp_path / "model.safetensors")
    report = validator.validate_index(path)
    assert [(f.slug, f.code, f.severity) for f in report.findings] == [("index-beside-single-file", "ST515", W)]
    message = report.findings[0].message
    assert "model.safetensors" in message
    assert "transformers" in message
    assert "ignores this index" in message


def test_single_variant_file_beside_a_diffusers_index_says_diffusers_loads_the_index(tmp_path):
    name = "diffusion_pytorch_model.safetensors.index.ema.fp16.json"
    shard = "diffusion_pytorch_model.ema.fp16-00001-of-00001.safetensors"
    path = folder(tmp_path, {shard: {"w": f32(1)}}, name=name)
    validator.save({"w": f32(1)}, tmp_path / "diffusion_pytorch_model.ema.fp16.safetensors")
    report = validator.validate_index(path)
    assert [f.slug for f in report.findings] == ["index-beside-single-file"]
    assert "diffusion_pytorch_model.ema.fp16.safetensors" in report.findings[0].message
    assert "diffusers loads this index" in report.findings[0].message


def test_single_file_the_index_itself_names_is_not_flagged(tmp_path):
    path = folder(tmp_path, {"model.safetensors": {"w": f32(1)}})
    assert validator.validate_index(path).findings == ()


def test_check_dir_shows_the_orphan_warning_and_still_checks_the_orphan(tmp_path, capsys):
    folder(tmp_path, llama_like())
    (tmp_path / "model-00001-of-00099.safetensors").write_bytes(b"\x01")
    rc, out, _ = cli(capsys, "check", str(tmp_path))
    assert rc == 1  # the orphan is checked alone, and it is broken
    assert "ST514 index-orphan-shard" in out
    assert "model-00001-of-00099.safetensors:0: ST101" in out


# -- item 5: index names with any variant ----------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("model.safetensors.index.json", True),
        ("model.safetensors.index.fp16.json", True),
        ("model.safetensors.index.ema.fp16.json", True),
        ("sub/dir/model.safetensors.index.ema.fp16.json", True),
        ("diffusion_pytorch_model.safetensors.index.json", True),
        ("diffusion_pytorch_model.safetensors.index.ema.fp16.json", True),
        ("diffusion_pytorch_model.safetensors.fp16.index.json", True),  # diffusers' legacy variant form
        ("model.safetensors", False),
        ("model.safetensors.index.json.bak", False),
        ("model.index.json", False),
        (".safetensors.index.json", False),
        ("model.safetensors.index..json", False),
        ("model.safetensors.index.fp16..json", False),
        ("config.json", False),
    ],
)
def test_index_names_with_any_variant_are_recognised(name, expected):
    assert is_index_name(name) is expected


def dotted_variant(tmp_path):
    shards = {
        "model.ema.fp16-00001-of-00002.safetensors": {"a": f32(2)},
        "model.ema.fp16-00002-of-00002.safetensors": {"b": f32(2)},
    }
    return folder(tmp_path, shards, name="model.safetensors.index.ema.fp16.json")


def test_check_of_a_dotted_variant_index_checks_it_as_an_index(tmp_path, capsys):
    path = dotted_variant(tmp_path)
    rc, out, _ = cli(capsys, "check", str(path))
    assert rc == 0, out
    assert out.startswith(f"checkpoint {path}: 2 shards, 2 tensors")
    assert "ST102" not in out
    assert "ST118" not in out


def test_check_dir_fails_when_a_dotted_variant_shard_is_missing(tmp_path, capsys):
    dotted_variant(tmp_path)
    (tmp_path / "model.ema.fp16-00002-of-00002.safetensors").unlink()
    rc, out, _ = cli(capsys, "check", str(tmp_path))
    assert rc == 1
    assert "ST503 index-shard-missing" in out


def test_scan_dir_fails_when_a_dotted_variant_shard_is_missing(tmp_path, capsys):
    dotted_variant(tmp_path)
    (tmp_path / "model.ema.fp16-00002-of-00002.safetensors").unlink()
    rc, out, _ = cli(capsys, "scan", "--progress", "never", "--no-config", "--format", "json", str(tmp_path))
    assert rc == 1
    doc = json.loads(out)
    kinds = {Path(f["path"]).name: f.get("kind") for f in doc["files"]}
    assert kinds["model.safetensors.index.ema.fp16.json"] == "index"


def test_remote_checks_recognise_a_dotted_variant_index(tmp_path, monkeypatch):
    pytest.importorskip("urllib3")
    from tests.remote_servers import HubFile, Server
    from tests.test_remote import FAST
    from validator.remote import check_source

    shard = "model.ema.fp16-00001-of-00002.safetensors"
    validator.save({"a": f32(2)}, tmp_path / shard)
    index = {"metadata": {"total_size": 16}, "weight_map": {"a": shard, "b": shard.replace("00001", "00002")}}
    files = [
        HubFile(shard, (tmp_path / shard).read_bytes()),
        HubFile("model.safetensors.index.ema.fp16.json", json.dumps(index).encode(), lfs=False),
    ]
    with Server() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
        monkeypatch.delenv("HF_TOKEN", raising=False)
        server.hub().add("org/model", files)
        results = check_source("hf://org/model", options=FAST)
    checkpoints = [r for r in results if isinstance(r, IndexReport)]
    assert [c.path.rsplit("/", 1)[-1] for c in checkpoints] == ["model.safetensors.index.ema.fp16.json"]
    assert [f.slug for f in checkpoints[0].findings] == ["index-shard-missing"]


# -- item 6: what a shard may be called -------------------------------------------


@pytest.mark.parametrize(
    ("shard", "problem"),
    [
        (".git/config", "hidden"),
        ("sub/.hidden.safetensors", "hidden"),
        (".model.safetensors", "hidden"),
        ("./model.safetensors", "hidden"),
        ("a//model.safetensors", "empty path component"),
        ("a/", "empty path component"),
        ("model\x1b[2K.safetensors", "control"),
        ("model\r.safetensors", "control"),
        ("model\n.safetensors", "control"),
        ("model\x7f.safetensors", "control"),
        ("model\u202egnp.safetensors", "control"),  # right-to-left override
        ("model\u200b.safetensors", "control"),  # zero-width space
        ("model\u00a0x.safetensors", "control"),  # no-break space
        ("model\ud800.safetensors", "control"),  # a lone surrogate
        ("x/a:b.safetensors", "character"),
        ("a*b.safetensors", "character"),
        ("nul.safetensors", "reserved"),
        ("sub/COM1.x.safetensors", "reserved"),
        ("model.safetensors ", "ends in"),
        ("config.json", "does not end in .safetensors"),
        ("tokenizer.model", "does not end in .safetensors"),
        ("x" * 250 + ".safetensors", "longer than"),
        ("/".join(["d"] * 600) + "/m.safetensors", "longer than"),
    ],
)
def test_unsafe_shard_names_are_refused(tmp_path, shard, problem):
    shards = {A: {"a": f32(1)}}
    index = {"metadata": {"total_size": 4}, "weight_map": {"a": A, "b": shard}}
    path = folder(tmp_path, shards, index=index)
    report = validator.validate_index(path)
    bad = found(report, "index-shard-path")
    assert len(bad) == 1, report.findings
    assert bad[0].code == "ST502"
    assert problem in bad[0].message
    assert bad[0].json_path == "/weight_map/b"


@pytest.mark.parametrize(
    "shard",
    [
        "model-00001-of-00002.safetensors",
        "model.ema.fp16-00001-of-00002.safetensors",
        "unet/diffusion_pytorch_model.safetensors",
        "modèle-ünïcode_权重.safetensors",
        "my model.safetensors",
        "a+b=c,(1)@2~3.safetensors",
    ],
)
def test_safe_shard_names_are_allowed(shard):
    assert unsafe_shard_name(shard) is None


def test_download_refuses_a_hidden_shard_name_before_fetching_any_shard(tmp_path):
    pytest.importorskip("urllib3")
    from tests.remote_servers import Server, from_bytes
    from tests.test_remote import FAST
    from validator.remote import DownloadRefused, download

    validator.save({"a": f32(1)}, tmp_path / A)
    index = {"metadata": {"total_size": 8}, "weight_map": {"a": A, "b": ".git/config"}}
    with Server() as server:
        server.site.resources[f"/ckpt/{A}"] = from_bytes((tmp_path / A).read_bytes())
        server.site.resources["/ckpt/.git/config"] = from_bytes((tmp_path / A).read_bytes())
        server.site.resources["/ckpt/model.safetensors.index.json"] = from_bytes(json.dumps(index).encode())
        out = tmp_path / "out"
        with pytest.raises(DownloadRefused) as info:
            download(server.url + "/ckpt/model.safetensors.index.json", str(out), options=FAST)
        asked = [p for p, _ in server.site.log]
    assert [f.slug for _, f in info.value.findings] == ["index-shard-path"]
    assert "hidden" in info.value.findings[0][1].message
    assert "/ckpt/.git/config" not in asked
    assert not out.exists()


# -- item 7: index findings under the per-rule cap --------------------------------


def many_missing(tmp_path, n=5000):
    shards = {A: {"a": f32(1)}}
    index = {"metadata": {"total_size": 4}, "weight_map": {"a": A, **{f"t{i:05d}": A for i in range(n)}}}
    return folder(tmp_path, shards, index=index)


def test_index_findings_are_capped_per_rule_and_the_rest_counted(tmp_path):
    report = validator.validate_index(many_missing(tmp_path))
    assert len(found(report, "index-tensor-missing")) == MAX_PER_RULE
    assert report.suppressed == 5000 - MAX_PER_RULE
    assert report.to_json()["suppressed"] == 5000 - MAX_PER_RULE


def test_check_lists_the_capped_index_findings_and_counts_the_rest(tmp_path, capsys):
    many_missing(tmp_path)
    rc, out, _ = cli(capsys, "check", str(tmp_path))
    assert rc == 1
    assert out.count("ST505 index-tensor-missing") == MAX_PER_RULE
    assert f"{5000 - MAX_PER_RULE} more findings not listed" in out.splitlines()[-1]
    rc, out, _ = cli(capsys, "check", "--format", "json", str(tmp_path))
    doc = json.loads(out)
    assert doc["summary"]["not_listed"] == 5000 - MAX_PER_RULE  # as scan counts them


def test_scan_counts_the_capped_index_findings(tmp_path, capsys):
    many_missing(tmp_path)
    rc, out, _ = cli(capsys, "scan", "--progress", "never", "--no-config", "--format", "json", str(tmp_path))
    assert rc == 1
    doc = json.loads(out)
    entry = next(f for f in doc["files"] if f["path"].endswith(".index.json"))
    assert len(entry["findings"]) == MAX_PER_RULE
    assert entry["suppressed"] == 5000 - MAX_PER_RULE
    rc, out, _ = cli(capsys, "scan", "--progress", "never", "--no-config", "--format", "sarif", str(tmp_path))
    sarif = json.loads(out)
    results = sarif["runs"][0]["results"]
    assert sum(r["ruleId"] == "ST505" for r in results) == MAX_PER_RULE


# -- item 8: many distinct shard names --------------------------------------------


def test_the_index_folder_is_resolved_once_not_per_shard(tmp_path, monkeypatch):
    n = 2000
    index = {"weight_map": {f"t{i}": f"model-{i:05d}-of-{n:05d}.safetensors" for i in range(n)}}
    path = folder(tmp_path, {}, index=index)
    calls = []
    real = os.path.realpath

    def counting(p, *a, **kw):
        calls.append(p)
        return real(p, *a, **kw)

    monkeypatch.setattr(index_module.os.path, "realpath", counting)
    report = validator.validate_index(path)
    assert len(found(report, "index-shard-missing")) == MAX_PER_RULE
    assert report.suppressed == n - MAX_PER_RULE
    assert len(calls) <= 2, f"{len(calls)} realpath calls for {n} shards"


def test_a_shard_link_is_still_resolved(tmp_path):
    # Resolving the folder once must not stop following each shard's own link.
    outside = tmp_path / "outside"
    outside.mkdir()
    validator.save({"a": f32(1)}, outside / "real.safetensors")
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / A).symlink_to(outside / "real.safetensors")
    path = folder(ckpt, {}, index={"metadata": {"total_size": 4}, "weight_map": {"a": A}})
    report = validator.validate_index(path)
    assert [f.slug for f in report.findings] == ["index-shard-path"]
    assert "outside the checkpoint directory" in report.findings[0].message


def test_scan_of_a_remote_header_caps_policy_findings_and_counts_the_rest(tmp_path, capsys):
    # The same class as item 7, found while looking for it: a remote header's
    # policy findings (one per tensor of a forbidden dtype) were not capped,
    # and the core's own count of dropped findings was not passed on.
    pytest.importorskip("urllib3")
    from tests.remote_servers import Server, from_bytes

    n = MAX_PER_RULE + 500
    validator.save({f"t{i:05d}": f32(1) for i in range(n)}, tmp_path / "many.safetensors")
    (tmp_path / "policy.toml").write_text('forbidden_dtypes = ["F32"]\n')
    with Server() as server:
        server.site.resources["/many.safetensors"] = from_bytes((tmp_path / "many.safetensors").read_bytes())
        rc, out, _ = cli(
            capsys,
            *("scan", "--progress", "never", "--format", "json", "--policy", str(tmp_path / "policy.toml")),
            server.url + "/many.safetensors",
        )
    assert rc == 1
    (entry,) = json.loads(out)["files"]
    # Grouped, as a local scan and check group them: one finding naming them all.
    (finding,) = [f for f in entry["findings"] if f["rule"] == "policy-dtype-forbidden"]
    assert finding["message"].startswith(f"{n} tensors ('t00000', 't00001', 't00002' and {n - 3} more)")
    assert entry["suppressed"] == 500


def test_loading_a_tied_name_says_it_is_stored_in_no_shard_and_what_supplies_it(tmp_path):
    with validator.open_index(tied_checkpoint(tmp_path)) as ckpt:
        assert "lm_head.weight" in ckpt  # the index lists it
        with pytest.raises(KeyError) as exc:  # TensorNotFoundError, a LoadError and a KeyError
            ckpt.get("lm_head.weight")
        assert "'lm_head.weight' is stored in no shard" in str(exc.value)
        assert "model.embed_tokens.weight" in str(exc.value)
        assert ckpt.get("model.norm.weight").shape == (2,)
