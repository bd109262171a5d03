# Strategy: one resolution per hf:// address (issue 38).  A branch can move
# between two listings of one address (a long download; a mirror behind
# HF_ENDPOINT that answers what it likes), so the fake hub here answers
# successive listings of `main` with successive commits: SIGNED, a folder
# signed by model_signing, and TAMPERED, the same files plus a shard and an
# index the publisher never signed.  Whatever the order, `download` keeps no
# unsigned file and `scan` reports verified only the commit whose files it
# read, and the record names that commit.
from __future__ import annotations

import json

import pytest

pytest.importorskip("model_signing")
pytest.importorskip("urllib3")

import numpy as np

from tests._stbytes import tensors_file
from tests.remote_servers import HubFile, Server
from tests.sign_fixtures import model_folder, sign_with_key
from tests.test_remote import hub  # noqa: F401 - the fake hub fixture
from validator.cli.main import main

REPO = "org/moving"
SIGNED = "5" * 40
TAMPERED = "7" * 40


class MovingRefs(dict):
    """The hub's refs, where each listing of ``main`` answers the next
    commit of ``answers`` (the last one for ever after)."""

    def __init__(self, answers: list[str]) -> None:
        super().__init__()
        self.answers = list(answers)
        self.listed: list[str] = []

    def get(self, key, default=None):
        if key != (REPO, "main"):
            return default
        sha = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        self.listed.append(sha)
        return sha


@pytest.fixture
def server():
    with Server() as s:
        yield s


@pytest.fixture
def moving(hub, tmp_path, keys):  # noqa: F811 - hub is the fixture
    """Serve REPO at SIGNED and at TAMPERED; return a function that sets
    the order in which listings of `main` answer them."""
    folder = model_folder(tmp_path / "model", weights=2000)
    sign_with_key(folder, keys)
    signed = {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
    evil = tensors_file([("evil", "F32", (4,), np.ones(4, np.float32).tobytes())])
    index = json.dumps({"metadata": {}, "weight_map": {"evil": "evil-00001-of-00001.safetensors"}}).encode()
    tampered = {**signed, "evil-00001-of-00001.safetensors": evil, "evil.safetensors.index.json": index}

    def served(files: dict[str, bytes]) -> list[HubFile]:
        return [HubFile(n, d, lfs=n.endswith(".safetensors")) for n, d in files.items()]

    hub.add(REPO, served(signed), sha=SIGNED)
    hub.add(REPO, served(tampered), sha=TAMPERED)

    def order(*answers: str) -> MovingRefs:
        hub.refs = MovingRefs(list(answers))
        return hub.refs

    return order


def download(capsys, tmp_path, keys) -> tuple[int, str, str]:
    out = tmp_path / "out"
    code = main(["download", f"hf://{REPO}", "-d", str(out), "--progress", "never", "--public-key", str(keys.public)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def kept(tmp_path) -> list[str]:
    out = tmp_path / "out"
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) if out.exists() else []


def test_a_download_listed_at_the_tampered_commit_is_refused_whole(capsys, tmp_path, keys, moving):
    refs = moving(TAMPERED, SIGNED)  # the download lists TAMPERED; a second listing would answer SIGNED
    code, out, err = download(capsys, tmp_path, keys)
    assert code == 1, (out, err)
    at = f"hf://{REPO}@{TAMPERED[:12]}"
    assert f"{at}/evil-00001-of-00001.safetensors: ST804 unsigned-file {at}/model.sig does not cover this file" in out
    assert "nothing was kept" in err
    assert kept(tmp_path) == []
    assert refs.listed == [TAMPERED]  # one listing


def test_a_download_listed_at_the_signed_commit_is_kept(capsys, tmp_path, keys, moving):
    refs = moving(SIGNED, TAMPERED)
    code, out, err = download(capsys, tmp_path, keys)
    assert code == 0, (out, err)
    assert f"hf://{REPO}@{SIGNED[:12]}/model.sig: signature verified with public key" in out
    assert kept(tmp_path) == ["model.safetensors"]
    assert refs.listed == [SIGNED]


def scan_json(capsys, keys) -> tuple[int, dict]:
    argv = ["scan", "--no-config", "--progress", "never", "-j", "1", "--timeout", "10", "--format", "json"]
    code = main([*argv, f"hf://{REPO}", "--public-key", str(keys.public)])
    return code, json.loads(capsys.readouterr().out)


def test_a_scan_reads_the_commit_its_signature_was_compared_with(capsys, keys, moving):
    refs = moving(SIGNED, TAMPERED)  # the signature's listing answers SIGNED, the next would answer TAMPERED
    code, doc = scan_json(capsys, keys)
    assert code == 0, doc
    paths = [f["path"] for f in doc["files"]]
    assert not [p for p in paths if "evil" in p], paths
    assert all(p.startswith(f"hf://{REPO}@{SIGNED[:12]}/") for p in paths), paths
    (record,) = doc["signatures"]
    assert record["verified"] is True
    assert record["commit"] == SIGNED
    assert set(refs.listed) == {SIGNED}


def test_a_scan_listed_at_the_tampered_commit_is_not_verified(capsys, keys, moving):
    moving(TAMPERED, SIGNED)
    code, doc = scan_json(capsys, keys)
    assert code == 1
    (record,) = doc["signatures"]
    assert record["verified"] is False
    assert record["commit"] == TAMPERED
    evil = f"hf://{REPO}@{TAMPERED[:12]}/evil-00001-of-00001.safetensors"
    findings = {f["path"]: [i["code"] for i in f["findings"]] for f in doc["files"]}
    assert "ST804" in findings[evil]
