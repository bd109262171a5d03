# Strategy: remote checks against HTTP servers on 127.0.0.1 that the tests
# start (tests/remote_servers.py).  Each test serves bytes named after their
# defect or a hostile behaviour and asserts the exact finding or the one-line
# error, and, where the issue sets a bound, the bytes and requests the server
# saw.  Hub tests point huggingface_hub at a fake endpoint through HF_ENDPOINT.
from __future__ import annotations

import json
import struct

import numpy as np
import pytest

pytest.importorskip("urllib3")

import validator
from tests.remote_servers import FakeHub, HubFile, Server, from_bytes, synthesized
from validator.cli.main import main
from validator.remote import Options, RemoteError, check_source, validate_remote_index, validate_url

KIB = 1024
# Generous limits: a loaded CI machine must not turn a slow answer into a
# retry (tests of timeouts pass their own Options).
FAST = Options(timeout=10.0, deadline=30.0, concurrency=4)


def st_bytes(tensors, tmp_path, name="x.safetensors"):
    validator.save(tensors, tmp_path / name)
    return (tmp_path / name).read_bytes()


def header_file(header: dict, data_len: int) -> bytes:
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw


@pytest.fixture
def server():
    with Server() as s:
        yield s


@pytest.fixture
def valid_bytes(tmp_path):
    return st_bytes({"a": np.arange(8, dtype=np.float32), "b": np.ones(3, np.int16)}, tmp_path)


def test_valid_file_one_request_whole_small_file(server, valid_bytes):
    server.site.resources["/m.safetensors"] = from_bytes(valid_bytes)
    report = validate_url(server.url + "/m.safetensors", options=FAST)
    assert report.valid
    assert report.findings == ()
    assert set(report.tensors) == {"a", "b"}
    assert report.path == server.url + "/m.safetensors"
    assert server.site.log == [("/m.safetensors", "bytes=0-65535")]
    assert server.site.total_sent() == len(valid_bytes)


def test_one_gigabyte_file_transfers_at_most_header_plus_64k(server):
    size = 1 << 30
    head = header_file({"w": {"dtype": "U8", "shape": [size], "data_offsets": [0, size]}}, size)
    server.site.resources["/big.safetensors"] = synthesized(head, len(head) + size)
    report = validate_url(server.url + "/big.safetensors", options=FAST)
    assert report.valid, report.findings
    assert report.file_size == len(head) + size
    assert server.site.total_sent() <= len(head) + 64 * KIB
    assert len(server.site.log) == 1


def test_long_header_takes_a_second_range_request(server):
    tensors = {f"t{i:05d}": {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]} for i in range(3000)}
    head = header_file(tensors, 3000)
    assert len(head) > 64 * KIB
    server.site.resources["/long.safetensors"] = from_bytes(head + bytes(3000))
    report = validate_url(server.url + "/long.safetensors", options=FAST)
    assert report.valid, report.findings[:3]
    assert [r for _, r in server.site.log] == ["bytes=0-65535", f"bytes=65536-{len(head) - 1}"]
    assert server.site.total_sent() == len(head)


def test_range_ignored_stops_after_the_header(server):
    size = 1 << 30
    head = header_file({"w": {"dtype": "U8", "shape": [size], "data_offsets": [0, size]}}, size)
    server.site.resources["/ign.safetensors"] = synthesized(head, len(head) + size, ignore_range=True)
    report = validate_url(server.url + "/ign.safetensors", options=FAST)
    assert report.valid
    assert server.site.total_sent() < 16 << 20  # never the file: at most what sockets buffer


def test_header_over_100mb_refused_before_reading(server):
    head = struct.pack("<Q", 100_000_001) + b"{}"
    server.site.resources["/huge.safetensors"] = synthesized(head, 200_000_000)
    report = validate_url(server.url + "/huge.safetensors", options=FAST)
    assert [f.slug for f in report.findings] == ["header-too-large"]
    assert len(server.site.log) == 1
    assert server.site.total_sent() <= 64 * KIB


def test_header_beyond_declared_size_refused_before_reading(server):
    head = struct.pack("<Q", 1_000_000) + b"{}"
    server.site.resources["/short.safetensors"] = from_bytes(head + bytes(100))
    report = validate_url(server.url + "/short.safetensors", options=FAST)
    assert [f.slug for f in report.findings] == ["header-length-exceeds-file"]
    assert len(server.site.log) == 1


@pytest.mark.parametrize(("cut", "slug"), [(-1, "buffer-truncated"), (1, "buffer-trailing-bytes")])
def test_exact_length_rule_from_the_served_length(server, valid_bytes, cut, slug):
    data = valid_bytes[:cut] if cut < 0 else valid_bytes + b"\x00" * cut
    server.site.resources["/m.safetensors"] = from_bytes(data)
    report = validate_url(server.url + "/m.safetensors", options=FAST)
    assert [f.slug for f in report.findings] == [slug]


def test_empty_file_416(server):
    server.site.resources["/empty.safetensors"] = from_bytes(b"")
    report = validate_url(server.url + "/empty.safetensors", options=FAST)
    assert [f.slug for f in report.findings] == ["file-too-small"]


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ({"status": 500}, "HTTP 500"),
        ({"encoding": "gzip"}, "'gzip'-encoded body"),
        ({"ignore_range": True, "no_length": True}, "gives no Content-Length"),
        ({"range_total_star": True}, "does not state the file's length"),
        ({"wrong_start": True}, "asked for bytes 0-65535, the server answered bytes 1-"),
        ({"body_cut": 10}, "connection broken"),
        ({"stall": 3.0}, "server sent nothing for 0.5 s (read timeout)"),
    ],
    ids=["http-500", "gzip", "no-length", "total-star", "wrong-start", "body-cut", "stall"],
)
def test_hostile_server_is_a_clear_error(server, valid_bytes, setup, message):
    server.site.resources["/m.safetensors"] = from_bytes(valid_bytes, **setup)
    with pytest.raises(RemoteError) as info:
        validate_url(server.url + "/m.safetensors", options=Options(timeout=0.5, deadline=2.0))
    assert message in str(info.value)
    assert str(info.value).startswith(server.url + "/m.safetensors: ")


def test_slow_drip_hits_the_deadline(server, valid_bytes):
    server.site.resources["/m.safetensors"] = from_bytes(valid_bytes, drip=0.05)
    with pytest.raises(RemoteError, match="did not finish in time"):
        validate_url(server.url + "/m.safetensors", options=Options(timeout=1.0, deadline=0.5))


def test_lying_total_is_judged_by_the_claim(server, valid_bytes):
    # A total larger than the body: the data the header promises is "missing".
    server.site.resources["/m.safetensors"] = from_bytes(valid_bytes, total_override=len(valid_bytes) + 8)
    report = validate_url(server.url + "/m.safetensors", options=FAST)
    assert [f.slug for f in report.findings] == ["buffer-trailing-bytes"]


def test_404_and_redirect_loop(server):
    with pytest.raises(RemoteError, match=r"HTTP 404") as info:
        validate_url(server.url + "/missing.safetensors", options=FAST)
    assert info.value.status == 404
    server.site.redirects["/a.safetensors"] = (302, "/b.safetensors", {})
    server.site.redirects["/b.safetensors"] = (302, "/a.safetensors", {})
    with pytest.raises(RemoteError, match="redirect loop"):
        validate_url(server.url + "/a.safetensors", options=FAST)
    server.site.redirects["/c.safetensors"] = (302, "file:///etc/passwd", {})
    with pytest.raises(RemoteError, match="not an http"):
        validate_url(server.url + "/c.safetensors", options=FAST)


def test_connection_refused_is_a_clear_error():
    with Server() as s:
        url = s.url
    with pytest.raises(RemoteError, match=r"cannot connect|connection"):
        validate_url(url + "/m.safetensors", options=FAST)


# --- remote indexes -----------------------------------------------------------


def serve_checkpoint(server, tmp_path, *, index=None, n=2):
    weight_map = {}
    for i in range(n):
        name = f"model-{i + 1:05d}-of-{n:05d}.safetensors"
        data = st_bytes({f"layer{i}.w": np.full(4, i, np.float32)}, tmp_path, name)
        server.site.resources[f"/ckpt/{name}"] = from_bytes(data)
        weight_map[f"layer{i}.w"] = name
    index = index or {"metadata": {"total_size": 16 * n}, "weight_map": weight_map}
    server.site.resources["/ckpt/model.safetensors.index.json"] = from_bytes(json.dumps(index).encode())
    return server.url + "/ckpt/model.safetensors.index.json", weight_map


def test_remote_index_and_shards(server, tmp_path):
    url, _ = serve_checkpoint(server, tmp_path, n=3)
    report = validate_remote_index(url, options=FAST)
    assert report.valid, report.findings
    assert report.findings == ()
    assert report.tensor_bytes == 48
    assert len(report.shards) == 3
    shard_requests = [r for p, r in server.site.log if p.endswith(".safetensors")]
    assert shard_requests == ["bytes=0-65535"] * 3


def test_remote_index_findings(server, tmp_path):
    url, weight_map = serve_checkpoint(server, tmp_path)
    index = {"weight_map": {**weight_map, "ghost": "model-00003-of-00003.safetensors", "x": "../evil.safetensors"}}
    server.site.resources["/ckpt/model.safetensors.index.json"] = from_bytes(json.dumps(index).encode())
    report = validate_remote_index(url, options=FAST)
    assert [f.slug for f in report.findings] == [
        "index-shard-path",
        "index-shard-missing",
        "index-total-size-missing",
    ]
    assert "HTTP 404" in report.findings[1].message
    assert not any(p.endswith("evil.safetensors") for p, _ in server.site.log)


def test_remote_index_shard_network_error_is_an_error(server, tmp_path):
    url, _ = serve_checkpoint(server, tmp_path)
    server.site.resources["/ckpt/model-00002-of-00002.safetensors"].status = 503
    with pytest.raises(RemoteError, match="HTTP 503"):
        validate_remote_index(url, options=FAST)


def test_remote_index_too_large_refused_unread(server):
    server.site.resources["/i/model.safetensors.index.json"] = synthesized(b"{", 100_000_001)
    report = validate_remote_index(server.url + "/i/model.safetensors.index.json", options=FAST)
    assert [f.slug for f in report.findings] == ["index-invalid"]
    assert "100000001 bytes" in report.findings[0].message
    # The server counts what it wrote, which includes what loopback's socket
    # buffers took (a few MiB under load) before the client's close arrived;
    # reading the body would have sent all 100 MB.
    assert server.site.total_sent() < 16 << 20


# --- the CLI ------------------------------------------------------------------


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_check_url_exit_codes(server, valid_bytes, tmp_path, capsys):
    server.site.resources["/ok.safetensors"] = from_bytes(valid_bytes)
    server.site.resources["/bad.safetensors"] = from_bytes(valid_bytes[:-1])
    code, out, _ = run_cli(capsys, "check", server.url + "/ok.safetensors")
    assert code == 0
    assert "1 file checked (strict): 1 valid" in out
    code, out, _ = run_cli(capsys, "check", server.url + "/bad.safetensors")
    assert code == 1
    assert f"{server.url}/bad.safetensors:" in out
    assert "ST407 buffer-truncated" in out
    code, _, err = run_cli(capsys, "check", server.url + "/nope.safetensors")
    assert code == 2
    assert f"{server.url}/nope.safetensors: HTTP 404" in err


def test_cli_check_and_inspect_remote_index(server, tmp_path, capsys):
    url, _ = serve_checkpoint(server, tmp_path)
    code, out, _ = run_cli(capsys, "check", url)
    assert code == 0, out
    assert f"checkpoint {url}: 2 shards, 2 tensors, 8 parameters: valid" in out
    code, out, _ = run_cli(capsys, "inspect", url)
    assert code == 0
    assert "F32: 2 tensors, 8 parameters" in out
    code, out, _ = run_cli(capsys, "scan", url, "--no-config")
    assert code == 0, out


# --- hf:// through a fake hub -----------------------------------------------------


@pytest.fixture
def hub(server, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    return server.hub()


def hub_checkpoint(hub: FakeHub, tmp_path, repo="org/model"):
    files = []
    weight_map = {}
    for i in range(2):
        name = f"model-{i + 1:05d}-of-00002.safetensors"
        files.append(HubFile(name, st_bytes({f"w{i}": np.full(2, i, np.float16)}, tmp_path, name)))
        weight_map[f"w{i}"] = name
    index = json.dumps({"metadata": {"total_size": 8}, "weight_map": weight_map}).encode()
    files.append(HubFile("model.safetensors.index.json", index, lfs=False))
    files.append(HubFile("extra/lone.safetensors", st_bytes({"z": np.zeros(1, np.uint8)}, tmp_path, "lone")))
    files.append(HubFile("config.json", b"{}", lfs=False))
    hub.add(repo, files, sha="c" * 40)
    return files


def test_hf_whole_repository(hub, server, tmp_path):
    hub_checkpoint(hub, tmp_path)
    results = check_source("hf://org/model", options=FAST)
    kinds = sorted(type(r).__name__ for r in results)
    assert kinds == ["IndexReport", "Report"]
    index = next(r for r in results if type(r).__name__ == "IndexReport")
    assert index.valid
    assert index.findings == ()
    assert index.path == "hf://org/model@cccccccccccc/model.safetensors.index.json"
    lone = next(r for r in results if type(r).__name__ == "Report")
    assert lone.path == "hf://org/model@cccccccccccc/extra/lone.safetensors"
    # Every file is addressed at the resolved commit, and LFS files come from the CDN.
    resolves = [p for p, _ in server.site.log if "/resolve/" in p]
    assert resolves
    assert all("/resolve/" + "c" * 40 + "/" in p for p in resolves)
    assert not any("config.json" in p for p, _ in server.site.log)


def test_hf_single_file_revision_and_missing(hub, tmp_path):
    hub_checkpoint(hub, tmp_path)
    report = validate_url("hf://org/model@main/extra/lone.safetensors", options=FAST)
    assert report.valid
    with pytest.raises(RemoteError, match="no such file in the repository"):
        validate_url("hf://org/model/nope.safetensors", options=FAST)
    with pytest.raises(RemoteError, match="404"):
        validate_url("hf://org/unknown/x.safetensors", options=FAST)


def test_hf_token_is_sent_to_the_hub_only(hub, server, tmp_path, monkeypatch):
    hub_checkpoint(hub, tmp_path)
    hub.token = "hf_secret"
    with pytest.raises(RemoteError, match="401"):
        check_source("hf://org/model", options=FAST)
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    results = check_source("hf://org/model", options=FAST)
    assert all(r.valid for r in results)


def test_hf_cached_file_is_checked_without_the_network(hub, server, tmp_path):
    files = hub_checkpoint(hub, tmp_path)
    cache = tmp_path / "hf-cache" / "models--org--model" / "snapshots" / ("c" * 40) / "extra"
    cache.mkdir(parents=True)
    (cache / "lone.safetensors").write_bytes(files[3].data)
    report = validate_url("hf://org/model/extra/lone.safetensors", options=FAST)
    assert report.valid
    assert report.path == str(cache / "lone.safetensors")
    assert not any(p.endswith("lone.safetensors") or p.startswith("/cdn/") for p, _ in server.site.log)


def test_hf_listing_and_served_size_disagree(hub, tmp_path):
    files = hub_checkpoint(hub, tmp_path)
    hub.site.resources[f"/cdn/{hub.oid(files[3])}"] = from_bytes(files[3].data + b"\x00")
    size = len(files[3].data)
    with pytest.raises(RemoteError, match=f"the hub lists {size} bytes but the server serves {size + 1}"):
        validate_url("hf://org/model/extra/lone.safetensors", options=FAST)


def test_hf_malformed_address(capsys):
    code, _, err = run_cli(capsys, "check", "hf://only-one-part")
    assert code == 2
    assert "expected hf://NAMESPACE/NAME" in err


def test_refused_connection_is_not_called_a_timeout():
    import socket

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens on it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(RemoteError) as caught:
        validate_url(f"http://127.0.0.1:{port}/m.safetensors", options=FAST)
    assert "cannot connect" in str(caught.value)
    assert "Connection refused" in str(caught.value)
    assert "timeout" not in str(caught.value)
