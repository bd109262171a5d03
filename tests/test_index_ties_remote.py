# Strategy: a remote index's tie evidence includes the model's config.json
# beside it, as a local index's does; it is fetched only when a listed
# tensor is stored by no shard.  Served by the local test server, plain
# URL and hub alike.
from __future__ import annotations

import json

import pytest

pytest.importorskip("urllib3")

from tests.remote_servers import HubFile, Server, from_bytes
from tests.test_index_rules import A, E, W, f32, folder
from tests.test_remote import FAST, hub  # noqa: F401 - hub is a fixture
from validator.remote import validate_remote_index


@pytest.fixture
def server():
    with Server() as s:
        yield s


def _untied_head(tmp_path):
    """An index listing text.proj_out.weight, which no shard holds and no known tie covers."""
    path = folder(tmp_path, {A: {"text.word_embeddings.weight": f32(8), "text.norm.weight": f32(2)}})
    index = json.loads(path.read_text())
    index["weight_map"]["text.proj_out.weight"] = A
    path.write_text(json.dumps(index))
    return path


def _serve(server, tmp_path, config=None):
    for f in tmp_path.iterdir():
        server.site.resources[f"/ckpt/{f.name}"] = from_bytes(f.read_bytes())
    if config is not None:
        server.site.resources["/ckpt/config.json"] = from_bytes(json.dumps(config).encode())
    return f"{server.url}/ckpt/model.safetensors.index.json"


def test_a_config_beside_a_remote_index_vouches_for_a_tie(server, tmp_path):
    _untied_head(tmp_path)
    url = _serve(server, tmp_path, {"tie_word_embeddings": True})
    report = validate_remote_index(url, options=FAST)
    assert [(f.slug, f.severity, f.tensor) for f in report.findings] == [
        ("index-tensor-tied", W, "text.proj_out.weight")
    ]
    assert "config.json" in report.findings[0].message


def test_without_a_config_the_missing_tensor_stays_an_error(server, tmp_path):
    _untied_head(tmp_path)
    url = _serve(server, tmp_path)  # config.json answers 404: no evidence
    report = validate_remote_index(url, options=FAST)
    assert [(f.slug, f.severity) for f in report.findings] == [("index-tensor-missing", E)]


def test_a_config_that_turns_ties_off_is_read_for_a_hub_index(hub, tmp_path):  # noqa: F811 - hub is the fixture
    from tests.test_index_rules import tied_checkpoint

    path = tied_checkpoint(tmp_path)
    files = [HubFile(f.name, f.read_bytes(), lfs=f.suffix == ".safetensors") for f in tmp_path.iterdir()]
    hub.add("org/tied", files)
    report = validate_remote_index("hf://org/tied/" + path.name, options=FAST)
    assert [f.slug for f in report.findings] == ["index-tensor-tied"]  # the known tie: lm_head from embed_tokens
    hub.add("org/untied", [*files, HubFile("config.json", b'{"tie_word_embeddings": false}', lfs=False)], sha="b" * 40)
    report = validate_remote_index("hf://org/untied/" + path.name, options=FAST)
    assert [(f.slug, f.severity) for f in report.findings] == [("index-tensor-missing", E)]
    assert "tie_word_embeddings" in report.findings[0].message


def test_no_config_is_fetched_when_every_listed_tensor_is_stored(server, tmp_path):
    folder(tmp_path, {A: {"w": f32(4)}})
    url = _serve(server, tmp_path, {"tie_word_embeddings": True})
    assert validate_remote_index(url, options=FAST).valid
    assert not any(path.endswith("config.json") for path, _ in server.site.log)


# -- orphans and single files beside a hub index (from the listing) ---------------


def _hub_folder(hub, tmp_path, repo):  # noqa: F811 - hub is the fixture
    files = [
        HubFile(str(f.relative_to(tmp_path)), f.read_bytes(), lfs=f.suffix == ".safetensors")
        for f in sorted(tmp_path.rglob("*"))
        if f.is_file()
    ]
    hub.add(repo, files, sha=(repo[-1] * 40))
    return f"hf://{repo}/model.safetensors.index.json"


def test_a_stale_shard_beside_a_hub_index_is_an_orphan(hub, tmp_path):  # noqa: F811 - hub is the fixture
    import validator
    from tests.test_index_rules import llama_like

    folder(tmp_path, llama_like())
    source = _hub_folder(hub, tmp_path, "org/clean")
    assert validate_remote_index(source, options=FAST).findings == ()
    validator.save({"old": f32(1)}, tmp_path / "model-00001-of-00099.safetensors")
    source = _hub_folder(hub, tmp_path, "org/stale")
    report = validate_remote_index(source, options=FAST)
    assert [(f.slug, f.severity) for f in report.findings] == [("index-orphan-shard", W)]
    assert "model-00001-of-00099.safetensors" in report.findings[0].message


def test_a_shard_another_hub_index_names_is_no_orphan(hub, tmp_path):  # noqa: F811 - hub is the fixture
    import validator
    from tests.test_index_rules import llama_like

    folder(tmp_path, llama_like())
    validator.save({"old": f32(1)}, tmp_path / "model-00001-of-00099.safetensors")
    other = {"weight_map": {"old": "model-00001-of-00099.safetensors"}, "metadata": {"total_size": 4}}
    (tmp_path / "other.safetensors.index.json").write_text(json.dumps(other))
    report = validate_remote_index(_hub_folder(hub, tmp_path, "org/two"), options=FAST)
    assert report.findings == ()


def test_a_single_file_beside_a_hub_index_is_reported(hub, tmp_path):  # noqa: F811 - hub is the fixture
    import validator
    from tests.test_index_rules import llama_like

    folder(tmp_path, llama_like())
    validator.save({"w": f32(1)}, tmp_path / "model.safetensors")
    report = validate_remote_index(_hub_folder(hub, tmp_path, "org/both"), options=FAST)
    assert [f.slug for f in report.findings] == ["index-beside-single-file"]
    assert "from_pretrained loads 'model.safetensors'" in report.findings[0].message
