# Strategy: signed models on the hub, against the fake hub of
# tests/remote_servers.py (huggingface_hub pointed at it with HF_ENDPOINT).
# A folder is signed locally with model_signing, then served as a repository
# (safetensors files in LFS, the rest as small git files); `stcheck scan
# hf://...` must compare every signed digest with the hub's listing (the LFS
# sha256) or with a small file's bytes, and download no weight: the server's
# byte counts prove that the weights were read no further than their header.
from __future__ import annotations

import pytest

pytest.importorskip("model_signing")
pytest.importorskip("urllib3")

from tests.remote_servers import HubFile, Server
from tests.sign_fixtures import ec_keys, model_folder, sha256, sign_with_key
from tests.test_remote import hub  # noqa: F401 - the fake hub fixture
from validator.cli.main import main

REPO = "org/signed"
COMMIT = "d" * 40
AT = f"hf://{REPO}@{COMMIT[:12]}"
HEADER_READ = 64 << 10  # what a header check asks for first


def scan(capsys, *argv: str) -> tuple[int, list[str], str]:
    code = main(["scan", "--no-config", "--progress", "never", "-j", "1", "--timeout", "10", *argv])
    captured = capsys.readouterr()
    return code, [line for line in captured.out.splitlines() if ": ST" in line], captured.err


@pytest.fixture
def server():
    with Server() as s:
        yield s


def serve(hub, tmp_path, keys, *, shard_size=None, change=None, drop=(), add=None, oids=None) -> dict[str, bytes]:  # noqa: F811 - hub is the fixture
    """Sign a local folder, then serve it (changed as asked) as REPO@COMMIT."""
    folder = model_folder(tmp_path / "model", weights=300_000)  # about 1.2 MB of weights
    sign_with_key(folder, keys, shard_size=shard_size)
    files = {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
    files.update(change or {})
    files.update(add or {})
    for name in drop:
        del files[name]
    hub.oid_override.update(oids or {})
    hub.add(REPO, [HubFile(n, d, lfs=n.endswith(".safetensors")) for n, d in files.items()], sha=COMMIT)
    return files


def weight_bytes_sent(server, files) -> int:
    return server.site.sent.get(f"/cdn/{sha256(files['model.safetensors'])}", 0)


def test_a_signed_hub_folder_verifies_from_its_listing(capsys, hub, server, tmp_path, keys):  # noqa: F811 - hub is the fixture
    files = serve(hub, tmp_path, keys)
    code, lines, err = scan(capsys, f"hf://{REPO}", "--public-key", str(keys.public))
    assert code == 0, (lines, err)
    assert (
        f"{AT}/model.sig: signature verified with public key {keys.public} at commit {COMMIT} (sha256); "
        "3 signed files match; 1 left out (.gitattributes)"
    ) in err
    assert len(files["model.safetensors"]) > 10 * HEADER_READ
    assert 0 < weight_bytes_sent(server, files) <= HEADER_READ  # the header check's read, no more


def test_an_lfs_sha256_that_is_not_the_signed_one_is_found_before_any_download(capsys, hub, server, tmp_path, keys):  # noqa: F811 - hub is the fixture
    served = "e" * 64  # the hub claims another file than the one signed
    files = serve(hub, tmp_path, keys, oids={"model.safetensors": served})
    code, lines, _ = scan(capsys, f"hf://{REPO}", "--public-key", str(keys.public))
    assert code == 1
    signed_digest = sha256(files["model.safetensors"])
    assert lines == [
        (
            f"{AT}/model.safetensors: ST802 signed-file-changed the file changed since it was signed: "
            f"the hub's LFS sha256 is {served}, but {AT}/model.sig signed {signed_digest}"
        )
    ]
    assert server.site.sent.get(f"/cdn/{served}", 0) <= HEADER_READ


def test_a_changed_small_file_on_the_hub(capsys, hub, tmp_path, keys):  # noqa: F811 - hub is the fixture
    serve(hub, tmp_path, keys, change={"config.json": b'{"model_type": "evil"}\n'})
    code, lines, _ = scan(capsys, f"hf://{REPO}", "--public-key", str(keys.public))
    assert code == 1
    assert [line.split(" ", 2)[:2] for line in lines] == [[f"{AT}/config.json:", "ST802"]]


def test_files_added_to_and_removed_from_the_hub(capsys, hub, tmp_path, keys):  # noqa: F811 - hub is the fixture
    serve(hub, tmp_path, keys, drop=("tokenizer.json",), add={"modeling_x.py": b"import os\n"})
    code, lines, _ = scan(capsys, f"hf://{REPO}", "--public-key", str(keys.public))
    assert code == 1
    assert sorted(line.split(" ", 2)[:2] for line in lines) == [
        [f"{AT}/modeling_x.py:", "ST702"],  # custom code, as in a local folder, judged by its name
        [f"{AT}/modeling_x.py:", "ST804"],
        [f"{AT}/tokenizer.json:", "ST803"],
    ]


def test_shards_the_hub_cannot_give_are_reported(capsys, hub, server, tmp_path, keys):  # noqa: F811 - hub is the fixture
    files = serve(hub, tmp_path, keys, shard_size=1 << 20)  # the weights are two shards; the rest one each
    code, lines, _ = scan(capsys, f"hf://{REPO}", "--public-key", str(keys.public))
    assert code == 1
    assert lines == [
        (
            f"{AT}/model.safetensors: ST805 signature-unsupported not compared with {AT}/model.sig: the hub publishes "
            "a whole-file sha256 only, not sha256-sharded-1048576: download it, then scan the folder"
        )
    ]
    assert weight_bytes_sent(server, files) <= HEADER_READ


def test_no_signature_on_the_hub(capsys, hub, tmp_path, keys):  # noqa: F811 - hub is the fixture
    serve(hub, tmp_path, keys, drop=("model.sig",))
    code, lines, _ = scan(capsys, f"hf://{REPO}", "--public-key", str(keys.public))
    assert code == 1
    assert [line.split(" ", 2)[:2] for line in lines] == [[f"{AT}/model.sig:", "ST807"]]


def test_a_wrong_key_for_a_hub_folder(capsys, hub, tmp_path, keys):  # noqa: F811 - hub is the fixture
    serve(hub, tmp_path, keys)
    other = ec_keys(tmp_path, "other")
    code, lines, _ = scan(capsys, f"hf://{REPO}", "--public-key", str(other.public))
    assert code == 1
    assert [line.split(" ", 2)[:2] for line in lines] == [[f"{AT}/model.sig:", "ST801"]]


def test_a_single_hub_file_is_not_a_signed_folder(capsys, hub, tmp_path, keys):  # noqa: F811 - hub is the fixture
    serve(hub, tmp_path, keys)
    code, _, err = scan(capsys, f"hf://{REPO}/model.safetensors", "--public-key", str(keys.public))
    assert code == 2
    assert "a model signature covers a folder; give the repository or a folder of it, not one file" in err


def test_the_bom_of_a_hub_folder(capsys, hub, tmp_path, keys):  # noqa: F811 - hub is the fixture
    pytest.importorskip("cyclonedx")
    import json

    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    serve(hub, tmp_path, keys)
    code = main(
        ["scan", "--no-config", "-j", "1", "--format", "cyclonedx", f"hf://{REPO}", "--public-key", str(keys.public)]
    )
    text = capsys.readouterr().out
    assert code == 0
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    (model,) = json.loads(text)["components"]
    assert model["name"] == AT
    props = {p["name"]: p["value"] for p in model["properties"]}
    assert props["stcheck:signature"] == "verified"
    # Every file of the hub's listing; only the safetensors files' headers were read, and nothing hashed.
    by_name = {c["name"]: c for c in model["components"]}
    assert set(by_name) == {f.path for files in hub.repos[REPO].values() for f in files}
    assert not any("hashes" in c for c in model["components"])
    weights = by_name["model.safetensors"]
    assert {p["name"]: p["value"] for p in weights["properties"]}["stcheck:sha256"].startswith(
        "unknown: only the header"
    )


# --- stcheck download with a key: verified against the staged bytes before the move ---------


def download(capsys, tmp_path, *argv: str) -> tuple[int, str, str]:
    code = main(["download", f"hf://{REPO}", "-d", str(tmp_path / "out"), "--progress", "never", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_download_verifies_the_staged_files_before_keeping_them(capsys, hub, server, tmp_path, keys):  # noqa: F811 - hub is the fixture
    # By shards: the hub publishes a whole-file sha256 only, so the staged bytes are what is compared.
    files = serve(hub, tmp_path, keys, shard_size=1 << 18)
    code, out, err = download(capsys, tmp_path, "--public-key", str(keys.public))
    assert code == 0, (out, err)
    assert (tmp_path / "out" / "model.safetensors").read_bytes() == files["model.safetensors"]
    assert (
        f"{AT}/model.sig: signature verified with public key {keys.public} at commit {COMMIT} (sha256-sharded-262144)"
    ) in out


def test_download_never_keeps_bytes_the_signature_refuses(capsys, hub, server, tmp_path, keys):  # noqa: F811 - hub is the fixture
    folder = model_folder(tmp_path / "signed", weights=300_000)
    weights = bytearray((folder / "model.safetensors").read_bytes())
    weights[-1] ^= 1  # a data byte: still a valid file, with its own LFS sha256
    serve(hub, tmp_path, keys, shard_size=1 << 18, change={"model.safetensors": bytes(weights)})
    code, out, err = download(capsys, tmp_path, "--public-key", str(keys.public))
    assert code == 1, (out, err)
    assert f"{AT}/model.safetensors: ST802 signed-file-changed the file changed since it was signed: bytes [" in out
    assert "the model signature refuses the download (1 findings): nothing was kept" in err
    out_dir = tmp_path / "out"
    assert not out_dir.exists() or not [p for p in out_dir.rglob("*") if p.is_file()]


def test_download_with_a_wrong_key_keeps_nothing(capsys, hub, server, tmp_path, keys):  # noqa: F811 - hub is the fixture
    serve(hub, tmp_path, keys)
    other = ec_keys(tmp_path, "other")
    code, out, _ = download(capsys, tmp_path, "--public-key", str(other.public))
    assert code == 1
    assert f"{AT}/model.sig: ST801 signature-invalid does not verify with public key {other.public}" in out
    assert not (tmp_path / "out" / "model.safetensors").exists()


def test_download_of_an_http_url_with_a_key_is_a_usage_error(capsys, tmp_path, keys):
    code = main(
        ["download", "https://example.com/x.safetensors", "-d", str(tmp_path), "--public-key", str(keys.public)]
    )
    assert code == 2
    assert "an http(s) URL carries no model signature" in capsys.readouterr().err
