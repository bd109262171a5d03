# Strategy: `stcheck scan --format cyclonedx`, validated against the
# CycloneDX 1.6 schema by cyclonedx-python-lib's own JSON validator, and read
# back for what it must say: one machine-learning-model per model (a folder,
# a hub-cache snapshot, an hf:// folder, a lone file), one file component
# per file with the SHA-256 the scan computed in its one read, and stcheck's
# verdict, rule ids, counts, dtypes and signature status as properties.
from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest

pytest.importorskip("cyclonedx")
pytest.importorskip("model_signing")

from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

import validator
from tests.sign_fixtures import as_hub_cache, ec_keys, flip_byte, model_folder, sign_with_key
from validator.cli.main import main


def bom(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["scan", "--no-config", "--progress", "never", "-j", "1", "--format", "cyclonedx", *argv])
    text = capsys.readouterr().out
    errors = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)
    assert errors is None, errors
    return code, json.loads(text)


def props(component: dict) -> dict[str, str]:
    return {p["name"]: p["value"] for p in component.get("properties", [])}


def files_of(model: dict) -> dict[str, dict]:
    return {c["name"]: c for c in model.get("components", [])}


def test_the_validator_refuses_a_broken_bom():
    # The check above can fail: a component without its required type.
    broken = json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.6", "components": [{"name": "x"}]})
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(broken) is not None


def test_a_verified_folder(capsys, tmp_path):
    keys = ec_keys(tmp_path)
    folder = model_folder(tmp_path / "model")
    sign_with_key(folder, keys)
    code, doc = bom(capsys, str(folder), "--public-key", str(keys.public))
    assert code == 0
    assert doc["specVersion"] == "1.6"
    assert [t["name"] for t in doc["metadata"]["tools"]["components"]] == ["stcheck"]
    (model,) = doc["components"]
    assert model["type"] == "machine-learning-model"
    assert model["name"] == str(folder)
    p = props(model)
    assert p["stcheck:verdict"] == "valid"
    assert p["stcheck:profile"] == "strict"
    assert p["stcheck:signature"] == "verified"
    assert p["stcheck:signature_detail"] == f"verified with public key {keys.public}"
    assert p["stcheck:tensor_count"] == "2"
    assert p["stcheck:parameter_count"] == "3007"
    assert p["stcheck:dtypes"] == "F32=3000, I16=7"
    assert "stcheck:rules" not in p
    files = files_of(model)
    assert sorted(files) == [".gitattributes", "config.json", "model.safetensors", "model.sig", "tokenizer.json"]
    for name, component in files.items():
        assert component["type"] == "file"
        want = hashlib.sha256((folder / name).read_bytes()).hexdigest()
        assert component["hashes"] == [{"alg": "SHA-256", "content": want}], name
    weights = props(files["model.safetensors"])
    assert weights["stcheck:kind"] == "safetensors"
    assert weights["stcheck:tensor_count"] == "2"
    assert weights["stcheck:parameter_count"] == "3007"
    assert weights["stcheck:dtypes"] == "F32, I16"
    assert props(files["config.json"])["stcheck:kind"] == "other (JSON)"


def test_a_tampered_folder_says_so(capsys, tmp_path):
    keys = ec_keys(tmp_path)
    folder = model_folder(tmp_path / "model")
    sign_with_key(folder, keys)
    flip_byte(folder / "model.safetensors")
    (folder / "tokenizer.json").unlink()
    code, doc = bom(capsys, str(folder), "--public-key", str(keys.public))
    assert code == 1
    (model,) = doc["components"]
    p = props(model)
    assert p["stcheck:signature"] == "mismatch"
    assert p["stcheck:verdict"] == "invalid"
    assert p["stcheck:rules"] == "ST802 signed-file-changed, ST803 signed-file-missing"
    assert "tokenizer.json" not in files_of(model)  # a missing file has no bytes to list
    assert props(files_of(model)["model.safetensors"])["stcheck:rules"] == "ST802 signed-file-changed"


def test_unsigned_and_unverified_folders(capsys, tmp_path):
    keys = ec_keys(tmp_path)
    signed = model_folder(tmp_path / "signed")
    sign_with_key(signed, keys)
    plain = model_folder(tmp_path / "plain")
    code, doc = bom(capsys, str(signed), str(plain))
    assert code == 0
    status = {m["name"]: props(m)["stcheck:signature"] for m in doc["components"]}
    assert status == {str(signed): "not-verified", str(plain): "none"}


def test_every_file_is_hashed_without_deep(capsys, tmp_path):
    # The scan reads only headers unless a digest is wanted: a BOM wants every file's.
    path = tmp_path / "lone.safetensors"
    validator.save({"x": np.ones(5, np.float16)}, path)
    code, doc = bom(capsys, str(path))
    assert code == 0
    (model,) = doc["components"]
    assert model["name"] == "lone.safetensors"
    assert props(model)["stcheck:signature"] == "none"
    (component,) = model["components"]
    assert component["hashes"][0]["content"] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_checkpoint_index_is_hashed(capsys, tmp_path):
    folder = tmp_path / "sharded"
    folder.mkdir()
    weight_map = {}
    for i in range(2):
        name = f"model-{i + 1:05d}-of-00002.safetensors"
        validator.save({f"w{i}": np.full(4, i, np.float32)}, folder / name)
        weight_map[f"w{i}"] = name
    index = folder / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 32}, "weight_map": weight_map}))
    code, doc = bom(capsys, str(folder))
    assert code == 0
    (model,) = doc["components"]
    files = files_of(model)
    assert files[index.name]["hashes"][0]["content"] == hashlib.sha256(index.read_bytes()).hexdigest()
    assert props(model)["stcheck:tensor_count"] == "2"  # the shards' tensors, not the index's count again


def test_a_hub_cache_gives_one_model_per_snapshot(capsys, tmp_path):
    keys = ec_keys(tmp_path)
    folder = model_folder(tmp_path / "model")
    sign_with_key(folder, keys)
    repo = as_hub_cache(folder, tmp_path / "hub")
    code, doc = bom(capsys, "--hf-cache", str(repo), "--public-key", str(keys.public))
    assert code == 0
    (model,) = doc["components"]
    assert model["name"] == "acme/signed@cccccccccccc"
    assert props(model)["stcheck:signature"] == "verified"
    assert "model.safetensors" in files_of(model)


def test_hostile_file_names_stay_valid(capsys, tmp_path):
    folder = tmp_path / "names"
    folder.mkdir()
    validator.save({"x": np.ones(2, np.float32)}, folder / "ok.safetensors")
    (folder / os.fsdecode(b"bad\nname\xff.json")).write_bytes(b"{}")
    code, doc = bom(capsys, str(folder))
    assert code == 0
    names = sorted(files_of(doc["components"][0]))
    assert names == ["bad\\nname\\xff.json", "ok.safetensors"]


def test_no_sbom_extra_is_a_one_line_error(capsys, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cyclonedx" else real(name, *a))
    path = tmp_path / "x.safetensors"
    validator.save({"x": np.ones(2, np.float32)}, path)
    code = main(["scan", "--no-config", "--format", "cyclonedx", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    from validator.config.install import install_hint

    assert err == f"stcheck scan: --format cyclonedx needs cyclonedx-python-lib: {install_hint('sbom')}\n"
