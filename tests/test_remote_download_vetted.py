# Strategy: what `stcheck download` writes is what it vetted (issue 21,
# items 3, 7, 8's "before any byte" and 13).  Local servers that answer
# differently the second time a file is asked for, a server whose ETag
# changes between the header and the data, hostile shard names in an index
# (escape bytes, CR, LF, bidi controls) and the umask.
from __future__ import annotations

import json
import os
import stat
from urllib.parse import quote

import numpy as np
import pytest

pytest.importorskip("urllib3")

import validator
from tests.remote_servers import Resource, Server, from_bytes
from tests.test_remote import FAST, hub, hub_checkpoint, run_cli, st_bytes  # noqa: F401 - hub is a fixture
from validator.remote import DownloadRefused, RemoteError, _ranged, download


@pytest.fixture
def server():
    with Server() as s:
        yield s


def requests_for(server, path: str) -> int:
    return sum(1 for p, _ in server.site.log if p == path)


def second_answer_differs(server, path: str, first: bytes, later: bytes) -> Resource:
    """A resource that serves ``first`` to the first request for ``path``
    and ``later`` (of the same size) to every request after it."""
    assert len(first) == len(later)

    def read(offset: int, n: int) -> bytes:
        data = first if requests_for(server, path) <= 1 else later
        return data[offset : offset + n]

    return Resource(len(first), read)


def serve_two_shards(server, tmp_path, *, big: bool = False):
    """An index and two shards under /ckpt; returns (index URL, shard 2's
    bytes, a different valid shard of the same size)."""
    n = 40_000 if big else 4  # 160 KB: more than the first 64 KiB range
    one = st_bytes({"layer0.w": np.full(n, 0, np.float32)}, tmp_path, "one")
    two = st_bytes({"layer1.w": np.full(n, 1, np.float32)}, tmp_path, "two")
    other = st_bytes({"layerZ.w": np.full(n, 7, np.float32)}, tmp_path, "other")  # same size, another header
    assert len(two) == len(other)
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    server.site.resources[f"/ckpt/{names[0]}"] = from_bytes(one)
    path = f"/ckpt/{names[1]}"
    server.site.resources[path] = second_answer_differs(server, path, two, other)
    index = {"metadata": {"total_size": 8 * n}, "weight_map": {"layer0.w": names[0], "layer1.w": names[1]}}
    server.site.resources["/ckpt/model.safetensors.index.json"] = from_bytes(json.dumps(index).encode())
    return server.url + "/ckpt/model.safetensors.index.json", two, other


def test_a_shard_that_changes_after_it_was_vetted_is_not_what_is_written(server, tmp_path):
    url, two, _ = serve_two_shards(server, tmp_path)
    out = tmp_path / "out"
    download(url, str(out), options=FAST)
    assert (out / "model-00002-of-00002.safetensors").read_bytes() == two  # the vetted shard, not the other
    assert validator.validate_index(out / "model.safetensors.index.json").findings == ()
    # Its header was fetched once: the vetted bytes are the written bytes.
    assert requests_for(server, "/ckpt/model-00002-of-00002.safetensors") == 1


def test_a_large_shard_whose_etag_changes_before_its_data_is_refused(server, tmp_path, monkeypatch):
    url, _, other = serve_two_shards(server, tmp_path, big=True)
    path = "/ckpt/model-00002-of-00002.safetensors"
    server.site.resources[path].headers["ETag"] = '"v1"'
    real = _ranged.RemoteFile.stream_rest

    def rest_of_another_version(self, sink):
        if self.url.endswith(path):
            server.site.resources[path].headers["ETag"] = '"v2"'
        return real(self, sink)

    monkeypatch.setattr(_ranged.RemoteFile, "stream_rest", rest_of_another_version)
    out = tmp_path / "out"
    with pytest.raises(RemoteError, match=r"the file changed between requests \(ETag \"v1\" then \"v2\"\)"):
        download(url, str(out), options=FAST)
    assert not out.exists() or [p for p in out.rglob("*") if p.is_file()] == []
    assert requests_for(server, path) == 2  # the header once, then the data from where it stopped
    assert other  # the second answer was another shard of the same size


def test_a_hub_shard_that_changes_after_it_was_vetted_is_refused_by_its_digest(hub, server, tmp_path):  # noqa: F811 - hub is the fixture imported above
    files = hub_checkpoint(hub, tmp_path)
    shard = next(f for f in files if f.path == "model-00002-of-00002.safetensors")
    cdn = f"/cdn/{hub.oid(shard)}"
    first = shard.data
    assert isinstance(first, bytes)
    later = st_bytes({"wZ": np.full(2, 9, np.float16)}, tmp_path, "later")
    assert len(later) == len(first)
    server.site.resources[cdn] = second_answer_differs(server, cdn, first, later)
    out = tmp_path / "out"
    done = download("hf://org/model", str(out), options=FAST)
    assert (out / shard.path).read_bytes() == first
    assert {d.expected for d in done} == {"the hub's LFS oid"}
    assert requests_for(server, cdn) == 1


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_downloaded_files_get_the_umask_as_save_does(server, tmp_path, umask):
    data = st_bytes({"w": np.ones(4, np.float32)}, tmp_path)
    server.site.resources["/m.safetensors"] = from_bytes(data)
    url, _, _ = serve_two_shards(server, tmp_path)
    old = os.umask(umask)
    try:
        download(server.url + "/m.safetensors", str(tmp_path / "dl-one"), options=FAST)
        download(url, str(tmp_path / "dl-ckpt"), options=FAST)
        validator.save({"w": np.ones(4, np.float32)}, tmp_path / "saved.safetensors")
    finally:
        os.umask(old)
    want = 0o666 & ~umask
    assert stat.S_IMODE((tmp_path / "saved.safetensors").stat().st_mode) == want
    written = [tmp_path / "dl-one" / "m.safetensors", *(p for p in (tmp_path / "dl-ckpt").iterdir())]
    assert len(written) == 4  # the file, two shards and the index
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in written} == {p.name: want for p in written}


def test_a_download_over_an_existing_file_keeps_its_mode(server, tmp_path):
    data = st_bytes({"w": np.ones(4, np.float32)}, tmp_path)
    server.site.resources["/m.safetensors"] = from_bytes(data)
    target = tmp_path / "out" / "m.safetensors"
    target.parent.mkdir()
    target.write_bytes(b"old")
    target.chmod(0o640)
    download(server.url + "/m.safetensors", str(tmp_path / "out"), options=FAST)
    assert target.read_bytes() == data
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


HOSTILE = [
    "evil\x1b[2J\x1b[31m.safetensors",  # ESC: clear the screen, turn red
    "evil\rFORGED.safetensors",  # CR: overwrite the line
    "evil\nFORGED: 0 errors.safetensors",  # LF: a line of its own
    "evil\u202etxt.safetensors",  # a bidi override
]


def assert_no_raw_control(text: str) -> None:
    for line in text.split("\n"):
        assert line.isprintable(), repr(line)
        assert not line.startswith("FORGED"), repr(line)


@pytest.mark.parametrize("name", HOSTILE, ids=["esc", "cr", "lf", "bidi"])
@pytest.mark.parametrize("progress", ["always", "never"])
def test_hostile_shard_names_never_reach_the_terminal_raw(server, tmp_path, capsys, name, progress):
    data = st_bytes({"w": np.ones(4, np.float32)}, tmp_path)
    server.site.resources[f"/ckpt/{quote(name)}"] = from_bytes(data)
    index = {"metadata": {"total_size": 16}, "weight_map": {"w": name}}
    server.site.resources["/ckpt/model.safetensors.index.json"] = from_bytes(json.dumps(index).encode())
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(
        capsys, "download", server.url + "/ckpt/model.safetensors.index.json", "-d", str(out), "--progress", progress
    )
    assert code in {0, 1}, stderr
    assert_no_raw_control(stdout)
    assert_no_raw_control(stderr)
    if code == 0:  # the name was accepted: it is printed escaped
        assert "\\x1b" in stdout or "\\r" in stdout or "\\n" in stdout or "\\u202e" in stdout


def test_hostile_hub_file_names_never_reach_the_terminal_raw(hub, server, tmp_path, capsys):  # noqa: F811 - hub is the fixture imported above
    from tests.remote_servers import HubFile

    files = [
        HubFile(f"sub/{name}", st_bytes({"w": np.ones(2, np.float32)}, tmp_path, f"h{k}"))
        for k, name in enumerate(HOSTILE)
    ]
    hub.add("org/evil", files, sha="e" * 40)
    code, stdout, stderr = run_cli(
        capsys, "download", "hf://org/evil", "-d", str(tmp_path / "out"), "--progress", "always"
    )
    # unsafe_shard_name refuses names with control characters before any byte
    # is fetched: a usage error (exit 2) whose one line is escaped.
    assert code == 2, stderr
    assert "refusing to write" in stderr
    assert not (tmp_path / "out").exists()
    assert_no_raw_control(stdout)
    assert_no_raw_control(stderr)


def test_an_unsafe_name_is_refused_before_any_byte_is_downloaded(hub, server, tmp_path):  # noqa: F811 - hub is the fixture imported above
    from tests.remote_servers import HubFile

    good = st_bytes({"w": np.ones(2, np.float32)}, tmp_path, "good")
    # A loose file of the repository whose name unsafe_shard_name refuses (`..` after normalising is
    # refused by the hub address parser, so a backslash stands for the unsafe names here).
    hub.add("org/two", [HubFile("a.safetensors", good), HubFile("b\\evil.safetensors", good)], sha="d" * 40)
    with pytest.raises(validator.SourceError, match=r"refusing to write 'b\\\\evil.safetensors'"):
        download("hf://org/two", str(tmp_path / "out"), options=FAST)
    assert not any(p.startswith("/cdn/") for p, _ in server.site.log)  # not a byte of either file
    assert not (tmp_path / "out").exists()
    assert DownloadRefused  # the refusal of a name is a usage error (exit 2), not a finding


def test_an_output_that_cannot_be_written_is_one_line_and_exit_2(server, tmp_path, capsys):
    data = st_bytes({"w": np.ones(4, np.float32)}, tmp_path)
    server.site.resources["/m.safetensors"] = from_bytes(data)
    afile = tmp_path / "afile"
    afile.write_text("x")
    url = server.url + "/m.safetensors"
    code, out, err = run_cli(capsys, "download", url, "-d", str(afile), "--progress", "never")
    assert (code, out, err) == (2, "", f"stcheck download: {afile}: not a directory\n")
    assert not any(p == "/m.safetensors" for p, _ in server.site.log)  # refused before any byte
    code, out, err = run_cli(capsys, "download", url, "-d", str(afile / "sub"), "--progress", "never")
    assert (code, out) == (2, "")
    assert err == f"stcheck download: {afile / 'sub'}: cannot write the download: Not a directory\n"
    assert afile.read_text() == "x"
