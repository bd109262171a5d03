# Strategy: `stcheck download` against local servers: a good file lands with
# its digest checked, and every way to fail (a bad header, a bad shard, a
# digest mismatch, a deep-check error, a network error mid-stream) leaves no
# file and no temporary behind; a bad header is refused before any tensor
# data is asked for.
from __future__ import annotations

import hashlib

import numpy as np
import pytest

pytest.importorskip("urllib3")

import validator
from tests.remote_servers import Server, from_bytes
from tests.test_remote import FAST, hub, hub_checkpoint, run_cli, serve_checkpoint, st_bytes  # noqa: F401 - hub is a fixture
from validator.remote import DownloadRefused, RemoteError, download


@pytest.fixture
def server():
    with Server() as s:
        yield s


def big_valid(tmp_path):
    rng = np.random.default_rng(0)
    return st_bytes({"w": rng.standard_normal(300_000).astype(np.float32), "b": np.ones(7, np.int8)}, tmp_path)


def test_download_plain_url(server, tmp_path, capsys):
    data = big_valid(tmp_path)
    server.site.resources["/m.safetensors"] = from_bytes(data)
    out = tmp_path / "out"
    done = download(server.url + "/m.safetensors", str(out), options=FAST)
    assert (out / "m.safetensors").read_bytes() == data
    assert done[0].sha256 == hashlib.sha256(data).hexdigest()
    assert done[0].expected is None
    assert list(out.iterdir()) == [out / "m.safetensors"]
    # The data is streamed once: the whole file, no byte twice.
    assert server.site.total_sent() == len(data)


def test_download_refuses_a_bad_header_before_any_data(server, tmp_path, capsys):
    data = big_valid(tmp_path)
    server.site.resources["/bad.safetensors"] = from_bytes(data[:-1])
    out = tmp_path / "out"
    code, stdout, err = run_cli(capsys, "download", server.url + "/bad.safetensors", "-d", str(out))
    assert code == 1
    assert "ST407 buffer-truncated" in stdout
    assert "refused before downloading any tensor data" in err
    assert not out.exists() or list(out.iterdir()) == []
    assert server.site.total_sent() <= 64 * 1024


def test_download_sha256_mismatch_leaves_nothing(server, tmp_path, capsys):
    data = big_valid(tmp_path)
    server.site.resources["/m.safetensors"] = from_bytes(data)
    out = tmp_path / "out"
    code, stdout, _ = run_cli(capsys, "download", server.url + "/m.safetensors", "-d", str(out), "--sha256", "0" * 64)
    assert code == 1
    assert "ST606 checksum-mismatch" in stdout
    assert list(out.iterdir()) == []
    code, stdout, _ = run_cli(
        capsys, "download", server.url + "/m.safetensors", "-d", str(out), "--sha256", hashlib.sha256(data).hexdigest()
    )
    assert code == 0, stdout
    assert "sha256 checked against --sha256" in stdout


def test_download_connection_cut_mid_stream_leaves_nothing(server, tmp_path):
    data = big_valid(tmp_path)
    server.site.resources["/m.safetensors"] = from_bytes(data)
    out = tmp_path / "out"
    # The header request is served whole; the data request is cut after 1000 bytes.
    from validator.remote import _ranged

    real_take = _ranged.RemoteFile.stream_rest

    def stream_rest(self, sink):
        server.site.resources["/m.safetensors"].body_cut = 1000
        return real_take(self, sink)

    _ranged.RemoteFile.stream_rest = stream_rest
    try:
        with pytest.raises(RemoteError):
            download(server.url + "/m.safetensors", str(out), options=FAST)
    finally:
        _ranged.RemoteFile.stream_rest = real_take
    assert list(out.iterdir()) == []


def test_download_sharded_checkpoint_as_a_whole(server, tmp_path):
    url, weight_map = serve_checkpoint(server, tmp_path, n=3)
    out = tmp_path / "out"
    done = download(url, str(out), options=FAST)
    assert len(done) == 3
    assert sorted(p.name for p in out.iterdir()) == sorted([*set(weight_map.values()), "model.safetensors.index.json"])
    assert validator.validate_index(out / "model.safetensors.index.json").findings == ()


def test_download_sharded_checkpoint_with_a_bad_shard_writes_nothing(server, tmp_path):
    url, _ = serve_checkpoint(server, tmp_path, n=2)
    shard = server.site.resources["/ckpt/model-00002-of-00002.safetensors"]
    good = shard.read(0, shard.size)
    server.site.resources["/ckpt/model-00002-of-00002.safetensors"] = from_bytes(good + b"\x00")
    out = tmp_path / "out"
    with pytest.raises(DownloadRefused) as info:
        download(url, str(out), options=FAST)
    assert {f.slug for _, f in info.value.findings} == {"index-shard-invalid", "buffer-trailing-bytes"}
    assert not out.exists()


def test_download_hub_checks_the_lfs_oid(hub, server, tmp_path):  # noqa: F811 - hub is the fixture imported above
    files = hub_checkpoint(hub, tmp_path)
    out = tmp_path / "out"
    done = download("hf://org/model", str(out), options=FAST)
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [
        "extra/lone.safetensors",
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "model.safetensors.index.json",
    ]
    assert {d.expected for d in done} == {"the hub's LFS oid"}
    # A hub that announces another digest than the bytes it serves is refused.
    hub.oid_override["extra/lone.safetensors"] = "f" * 64
    hub.add("org/model", files, sha="c" * 40)
    out2 = tmp_path / "out2"
    with pytest.raises(DownloadRefused) as info:
        download("hf://org/model/extra/lone.safetensors", str(out2), options=FAST)
    assert [f.slug for _, f in info.value.findings] == ["checksum-mismatch"]
    assert "the hub's LFS oid expects " + "f" * 64 in info.value.findings[0][1].message
    assert list(out2.rglob("*.safetensors")) == []
    assert list(out2.rglob("*.part")) == []


def test_download_deep_check_warnings_are_reported(server, tmp_path, capsys):
    data = st_bytes({"z": np.zeros((64, 64), np.float32), "n": np.array([np.nan, 1.0], np.float32)}, tmp_path)
    server.site.resources["/m.safetensors"] = from_bytes(data)
    code, stdout, _ = run_cli(capsys, "download", server.url + "/m.safetensors", "-d", str(tmp_path / "o"))
    assert code == 0
    assert "ST602 tensor-all-zero" in stdout
    assert "ST601 tensor-nan-inf" in stdout
