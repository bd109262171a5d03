# Strategy: `check` and `scan` of an hf:// folder give every file of the
# hub's listing a verdict, as a local folder's walk does, judged by name
# alone (nothing of those files is fetched): a pickle (or a .bin file) is
# pickle-file, a Python file custom-code, a model.sig without a key is
# signed-but-not-verified (scan), the rest are counted by kind.
from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

pytest.importorskip("urllib3")

from tests.remote_servers import HubFile, Server
from tests.test_remote import hub, run_cli, st_bytes  # noqa: F401 - hub is a fixture

AT = "hf://org/model@" + "a" * 12


@pytest.fixture
def server():
    with Server() as s:
        yield s


def _repo(hub, tmp_path, *extra: HubFile) -> None:  # noqa: F811 - hub is the fixture imported above
    weights = st_bytes({"w": np.zeros(2, np.float32)}, tmp_path, "model.safetensors")
    hub.add(
        "org/model",
        [
            HubFile("model.safetensors", weights),
            HubFile("config.json", b"{}", lfs=False),
            HubFile("tokenizer.json", b"{}", lfs=False),
            *extra,
        ],
    )


def test_a_hub_folder_with_a_pickle_beside_its_safetensors_fails(hub, server, tmp_path, capsys):  # noqa: F811
    _repo(
        hub,
        tmp_path,
        HubFile("pytorch_model.bin", pickle.dumps({"w": 0})),
        HubFile("modeling_tiny.py", b"import os\n", lfs=False),
    )
    for command in ("check", "scan"):
        code, out, _ = run_cli(capsys, command, "--no-config", "hf://org/model")
        assert code == 1, out
        lines = out.splitlines()
        assert (
            f"{AT}/pytorch_model.bin: ST701 pickle-file a .bin file (a pickle when torch.save wrote it): loading it "
            "can run code (judged by name: its content was not read); a safetensors copy is here (model.safetensors): "
            "use it (load with "
            "use_safetensors=True), not this file"
        ) in lines
        assert (
            f"{AT}/modeling_tiny.py: ST702 custom-code custom code, judged by its name (config.json was not read): "
            "`trust_remote_code=True` runs it if a config's auto_map names it"
        ) in lines
        assert lines[-1] == (
            "1 file checked (strict): 1 valid, 0 invalid, 1 other target fails; 1 error, 1 warning; "
            "4 other files: 1 JSON, 1 Python, 1 pickle or raw weights, 1 tokenizer"
        )
    # Nothing of those files was fetched: the weights' header only.
    assert not any(path.startswith("/org/model/resolve") and "pytorch_model" in path for path, _ in server.site.log)


def test_a_clean_hub_folder_counts_its_other_files(hub, server, tmp_path, capsys):  # noqa: F811
    _repo(hub, tmp_path)
    code, out, _ = run_cli(capsys, "check", "--no-config", "--format", "json", "hf://org/model")
    assert code == 0
    doc = json.loads(out)
    others = {f["path"]: f for f in doc["files"] if f["kind"] == "other"}
    assert set(others) == {f"{AT}/config.json", f"{AT}/tokenizer.json"}
    assert all(f["findings"] == [] for f in others.values())


def test_a_single_hub_file_lists_nothing_else(hub, server, tmp_path, capsys):  # noqa: F811
    _repo(hub, tmp_path, HubFile("pytorch_model.bin", pickle.dumps({"w": 0})))
    code, out, _ = run_cli(capsys, "check", "--no-config", "hf://org/model/model.safetensors")
    assert code == 0
    assert "ST701" not in out


def test_scan_without_a_key_says_a_hub_folder_is_signed_but_not_verified(hub, server, tmp_path, capsys):  # noqa: F811
    _repo(hub, tmp_path, HubFile("model.sig", b'{"mediaType": "x"}', lfs=False))
    code, out, _ = run_cli(capsys, "scan", "--no-config", "hf://org/model")
    assert code == 0  # a warning
    assert any(
        line.startswith(f"{AT}/model.sig: ST806 ") and "signed, but not verified" in line for line in out.splitlines()
    ), out
