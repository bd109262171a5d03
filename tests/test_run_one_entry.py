"""One path, one entry: `stcheck check`, `stcheck scan` and `vet()` list each
path once, whatever the folder holds (a link out of it, an index, a pickle
with its safetensors copy beside it) and however it is named (a trailing
slash, as tab completion types it), and a hub cache likewise."""

from __future__ import annotations

import json
import pickle
import xml.etree.ElementTree as ET
from collections import Counter
from typing import TYPE_CHECKING

import pytest

import validator
from tests.scan_fixtures import build, clean_file, f32, fake_hf_cache
from validator.cli.main import main

if TYPE_CHECKING:
    from pathlib import Path

SHARDS = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
ADVICE = "a safetensors copy is here (model.safetensors)"


def _folder(tmp_path: Path) -> Path:
    """A model folder: a safetensors file with a pickle of the same stem, a
    sharded checkpoint with its index, and a link to a text file outside."""
    top = tmp_path / "classic"
    (top / "sharded").mkdir(parents=True)
    (top / "model.safetensors").write_bytes(clean_file())
    (top / "model.pkl").write_bytes(pickle.dumps({"step": 1}))
    weight_map = {}
    for i, name in enumerate(SHARDS):
        (top / "sharded" / name).write_bytes(build([(f"w{i}", "F32", [1], f32(float(i)))], {"format": "pt"}))
        weight_map[f"w{i}"] = name
    index = {"metadata": {}, "weight_map": weight_map}
    (top / "sharded" / "model.safetensors.index.json").write_text(json.dumps(index))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("hello\n")
    (top / "notes.txt").symlink_to(outside / "notes.txt")
    return top


def _expected(top: str) -> list[str]:
    return sorted(
        [
            f"{top}/model.pkl",
            f"{top}/model.safetensors",
            f"{top}/notes.txt",
            f"{top}/sharded/model.safetensors.index.json",
            *(f"{top}/sharded/{name}" for name in SHARDS),
        ]
    )


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--format", "json", "--no-config"])
    return code, json.loads(capsys.readouterr().out)


def _rules(files: list[dict], suffix: str) -> list[str]:
    (entry,) = [f for f in files if f["path"].endswith(suffix)]
    return [x["rule"] for x in entry["findings"]]


def _message(files: list[dict], suffix: str) -> str:
    (entry,) = [f for f in files if f["path"].endswith(suffix)]
    return " ".join(x["message"] for x in entry["findings"])


@pytest.mark.parametrize("slash", ["", "/"], ids=["plain", "trailing-slash"])
@pytest.mark.parametrize("command", ["check", "scan"])
def test_a_folder_lists_each_path_once(tmp_path, capsys, command, slash):
    top = _folder(tmp_path)
    argv = [command, f"{top}{slash}"] + (["-j", "1", "--progress", "never"] if command == "scan" else [])
    code, doc = _json(capsys, *argv)
    assert code == 1  # the link out of the folder is an error
    paths = [f["path"] for f in doc["files"]]
    assert sorted(paths) == _expected(str(top))
    assert _rules(doc["files"], "notes.txt") == ["link-leaves-root"]
    assert _rules(doc["files"], "model.pkl") == ["pickle-weights-only"]
    assert ADVICE in _message(doc["files"], "model.pkl")


@pytest.mark.parametrize("slash", ["", "/"], ids=["plain", "trailing-slash"])
def test_the_library_lists_each_path_once(tmp_path, slash):
    top = _folder(tmp_path)
    vetted = validator.vet([f"{top}{slash}"], validator.VetOptions(no_config=True, jobs=1))
    assert sorted(r.path for r in vetted.results) == _expected(str(top))
    (pkl,) = [r for r in vetted.results if r.path.endswith("model.pkl")]
    assert ADVICE in pkl.findings[0].finding.message
    (link,) = [r for r in vetted.results if r.path.endswith("notes.txt")]
    assert [i.finding.slug for i in link.findings] == ["link-leaves-root"]
    assert link.file_kind == "text"


@pytest.mark.parametrize("command", ["check", "scan"])
def test_the_text_counts_count_the_link_once(tmp_path, capsys, command):
    top = _folder(tmp_path)
    argv = [command, "--no-config", str(top)] + (["-j", "1", "--progress", "never"] if command == "scan" else [])
    main(argv)
    summary = capsys.readouterr().out.splitlines()[-1]
    # model.safetensors and the two shards; the index is a checkpoint line of its own.
    assert "2 other files: 1 pickle, 1 text" in summary


def test_junit_and_cyclonedx_name_each_path_once(tmp_path, capsys):
    pytest.importorskip("cyclonedx")
    top = _folder(tmp_path)
    main(["scan", "--no-config", "-j", "1", "--progress", "never", "--format", "junit", str(top)])
    suite = ET.fromstring(capsys.readouterr().out)
    names = Counter(case.get("name") for case in suite.iter("testcase"))
    assert names, "no test case written"
    assert max(names.values()) == 1, names
    main(["scan", "--no-config", "-j", "1", "--progress", "never", "--format", "cyclonedx", str(top)])
    bom = json.loads(capsys.readouterr().out)
    components = [c for model in bom.get("components", []) for c in model.get("components", [model])]
    names = Counter(c["name"] for c in components)
    assert max(names.values()) == 1, names


def _hub_with_a_link_out(tmp_path: Path) -> tuple[Path, str]:
    hub = tmp_path / "hub"
    fake_hf_cache(hub)
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("not from the hub\n")
    link = hub / "models--acme--tiny" / "snapshots" / ("a" * 40) / "notes.txt"
    link.symlink_to(outside)
    return hub, str(link)


def test_a_hub_cache_lists_each_path_once(tmp_path, capsys):
    hub, link = _hub_with_a_link_out(tmp_path)
    code, doc = _json(capsys, "scan", "-j", "1", "--progress", "never", "--hf-cache", str(hub))
    assert code == 1
    paths = [f["path"] for f in doc["files"]]
    assert len(paths) == len(set(paths)), Counter(paths)
    # The link's finding joins the file's own: a blob whose name is not its digest.
    assert _rules(doc["files"], "notes.txt") == ["link-leaves-root", "checksum-missing"]
    assert link in paths
    vetted = validator.vet([], validator.VetOptions(no_config=True, jobs=1, hf_cache=str(hub)))
    assert [r.path for r in vetted.results] == paths
