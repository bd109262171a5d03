"""A hub cache snapshot's index gets the checks a folder's index gets."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

import numpy as np
from safetensors.numpy import save

from validator.cli.main import main

if TYPE_CHECKING:
    from pathlib import Path

SHARD1 = "model-00001-of-00002.safetensors"
SHARD2 = "model-00002-of-00002.safetensors"
REV = "c" * 40


def _blob(repo: Path, name: str, data: bytes) -> None:
    digest = hashlib.sha256(data).hexdigest()
    (repo / "blobs" / digest).write_bytes(data)
    (repo / "snapshots" / REV / name).symlink_to(f"../../blobs/{digest}")


def _sharded_snapshot(root: Path, *, drop_second: bool) -> Path:
    repo = root / "models--acme--sharded"
    (repo / "blobs").mkdir(parents=True)
    (repo / "snapshots" / REV).mkdir(parents=True)
    _blob(repo, SHARD1, save({"a": np.zeros(4, np.float32)}))
    if not drop_second:
        _blob(repo, SHARD2, save({"b": np.ones(4, np.float32)}))
    index = {"metadata": {"total_size": 32}, "weight_map": {"a": SHARD1, "b": SHARD2}}
    _blob(repo, "model.safetensors.index.json", json.dumps(index).encode())
    return repo


def _scan(capsys, root: Path) -> tuple[int, dict]:
    rc = main(["scan", "--hf-cache", str(root), "--format", "json"])
    return rc, json.loads(capsys.readouterr().out)


def test_a_snapshot_index_missing_a_shard_fails_the_scan(tmp_path, capsys):
    _sharded_snapshot(tmp_path, drop_second=True)
    rc, doc = _scan(capsys, tmp_path)
    assert rc == 1
    index = [f for f in doc["files"] if f["kind"] == "index"]
    assert len(index) == 1
    assert index[0]["model"] == "acme/sharded"
    assert index[0]["revision"] == REV
    assert [x["rule"] for x in index[0]["findings"]] == ["index-shard-missing"]
    assert SHARD2 in index[0]["findings"][0]["message"]


def test_a_complete_snapshot_index_is_clean_and_its_blob_still_verified(tmp_path, capsys):
    _sharded_snapshot(tmp_path, drop_second=False)
    rc, doc = _scan(capsys, tmp_path)
    assert rc == 0
    kinds = sorted(f["kind"] for f in doc["files"])
    assert kinds == ["blob", "index", "safetensors", "safetensors"]
    assert all(not f["findings"] for f in doc["files"])
    blob = next(f for f in doc["files"] if f["kind"] == "blob")
    assert blob["path"].endswith("model.safetensors.index.json")
    assert blob["checksum"]["matches"] is True
    assert blob["checksum"]["source"] == "hub cache blob name"
