# Strategy: hf:// addresses that the local hub cache can answer are checked
# from it with no network call.  The cache is laid out on disk as
# huggingface_hub lays it out (blobs named by digest, a snapshot of links
# at a 40-hex commit, refs/main), and HF_ENDPOINT points at a listener on
# 127.0.0.1 that counts the connections made to it: "no network call" is a
# count of 0, not a fast answer.  Each check is compared with checking the
# cached file locally.  Then the failures: offline (HF_HUB_OFFLINE, which
# huggingface_hub reads once at import: patched in the process, set in the
# environment of a subprocess) with what the cache does not hold, and a hub
# that cannot be reached, each name the cache or the host and point to
# `scan --hf-cache`.
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("huggingface_hub")

import validator
from tests.scan_fixtures import clean_file
from tests.sign_fixtures import as_hub_cache
from validator.io.index import validate_index
from validator.remote import Options, RemoteError, check_source, validate_remote_index, validate_url

ROOT = Path(__file__).resolve().parent.parent
COMMIT = "0123456789abcdef0123456789abcdef01234567"
FAST = Options(timeout=5.0, deadline=10.0, concurrency=2)
HINT = "stcheck scan --hf-cache checks the files already in the hub cache"


class Listener:
    """A TCP port on 127.0.0.1 that accepts, counts and drops connections."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def listener():
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def cache(tmp_path, monkeypatch, listener):
    """A model (a lone file, a sharded checkpoint, a config) in a hub cache at COMMIT; the hub is the listener."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(clean_file())
    weight_map = {}
    (folder / "ckpt").mkdir()
    for i in range(2):
        name = f"model-{i + 1:05d}-of-00002.safetensors"
        validator.save({f"w{i}": np.full(2, i, np.float32)}, folder / "ckpt" / name)
        weight_map[f"w{i}"] = name
    (folder / "ckpt" / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": weight_map})
    )
    (folder / "config.json").write_text("{}")
    root = tmp_path / "hub"
    as_hub_cache(folder, root, repo="org--model", revision=COMMIT)
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{listener.port}")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return root / "models--org--model" / "snapshots" / COMMIT


@pytest.fixture
def offline(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


def test_a_cached_file_at_a_full_commit_makes_no_network_call(cache, listener):
    report = validate_url(f"hf://org/model@{COMMIT}/model.safetensors", options=FAST)
    assert report == validator.validate(str(cache / "model.safetensors"))
    assert report.valid
    assert listener.connections == 0


def test_offline_a_whole_repository_at_a_full_commit_is_the_snapshot(cache, listener, offline):
    reports = check_source(f"hf://org/model@{COMMIT}", options=FAST)
    assert listener.connections == 0
    index, lone = reports
    assert lone == validator.validate(str(cache / "model.safetensors"))
    local = validate_index(str(cache / "ckpt" / "model.safetensors.index.json"))
    assert index.valid
    assert list(index.shards.values()) == list(local.shards.values())
    assert (index.findings, index.weight_map) == (local.findings, local.weight_map)


def test_offline_a_branch_is_the_commit_the_cache_recorded(cache, listener, offline):
    index = validate_remote_index("hf://org/model/ckpt/model.safetensors.index.json", options=FAST)
    assert index.valid
    assert index.path == f"hf://org/model@{COMMIT[:12]}/ckpt/model.safetensors.index.json"
    assert listener.connections == 0


def test_offline_what_the_cache_lacks_is_an_error_that_says_so(cache, listener, offline, tmp_path):
    with pytest.raises(RemoteError) as caught:
        validate_url(f"hf://org/model@{COMMIT}/other.safetensors", options=FAST)
    assert str(caught.value) == (
        f"hf://org/model@{COMMIT[:12]}/other.safetensors: not in the hub cache at this commit, "
        f"and HF_HUB_OFFLINE is set; {HINT}"
    )
    with pytest.raises(RemoteError) as caught:
        check_source(f"hf://org/model@{COMMIT}/docs", options=FAST)
    assert str(caught.value) == (
        f"hf://org/model@{COMMIT[:12]}/docs: no *.safetensors file or index in the hub cache at this commit "
        "(HF_HUB_OFFLINE is set)"
    )
    (cache / "ckpt" / "model-00002-of-00002.safetensors").unlink()  # a shard never downloaded
    with pytest.raises(RemoteError, match=r"ckpt/model-00002-of-00002\.safetensors: not in the hub cache"):
        check_source(f"hf://org/model@{COMMIT}", options=FAST)
    with pytest.raises(RemoteError) as caught:
        check_source("hf://org/elsewhere", options=FAST)
    assert str(caught.value) == (
        f"hf://org/elsewhere@main/: not in the hub cache ({tmp_path / 'hub'}), and HF_HUB_OFFLINE is set; {HINT}"
    )
    assert listener.connections == 0


def test_a_hub_that_cannot_be_reached_names_its_host(cache, monkeypatch):
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens on it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(RemoteError) as caught:
        check_source("hf://org/model", options=FAST)  # a branch: only the hub knows where it points now
    text = str(caught.value)
    assert text.startswith(f"hf://org/model@main/: cannot reach the hub at 127.0.0.1:{port}: ")
    assert "Connection refused" in text
    assert text.endswith(HINT)


def test_the_command_with_hf_hub_offline_set_makes_no_network_call(cache, listener):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "validator", "check", f"hf://org/model@{COMMIT}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert "3 files checked (strict): 3 valid" in done.stdout
    assert listener.connections == 0
