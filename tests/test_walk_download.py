# Strategy: `stcheck download` of a hub repository writes only safetensors
# files and indexes; what it leaves behind gets a verdict too, from the
# hub's listing (nothing of those files is fetched): a line for each pickle
# and Python file, naming the safetensors copy where there is one, and a
# count per kind of the rest.  A single-file source lists nothing else.
from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("urllib3")

from tests.remote_servers import HubFile, Server
from tests.test_remote import hub, run_cli, st_bytes  # noqa: F401 - hub is a fixture


@pytest.fixture
def server():
    with Server() as s:
        yield s


def test_download_lists_what_it_leaves_behind(hub, server, tmp_path, capsys):  # noqa: F811 - hub is the fixture imported above
    weights = st_bytes({"w": np.zeros(2, np.float32)}, tmp_path, "model.safetensors")
    hub.add(
        "org/model",
        [
            HubFile("model.safetensors", weights),
            HubFile("pytorch_model.bin", pickle.dumps({"w": 0})),
            HubFile("training_args.bin", pickle.dumps({"lr": 1})),
            HubFile("modeling_tiny.py", b"import os\n", lfs=False),
            HubFile("config.json", b"{}", lfs=False),
            HubFile("tokenizer.json", b"{}", lfs=False),
            HubFile("sub/\x1b[2Jevil.pt", pickle.dumps(1)),
        ],
    )
    code, out, _ = run_cli(capsys, "download", "hf://org/model", "-d", str(tmp_path / "out"), "--no-deep")
    assert code == 0
    lines = out.splitlines()
    assert lines[-5:] == [
        (
            "modeling_tiny.py: not downloaded: custom code, judged by its name (config.json was not read): "
            "`trust_remote_code=True` runs it if a config's auto_map names it"
        ),
        (
            "pytorch_model.bin: not downloaded: a .bin file (a pickle when torch.save wrote it): loading it can "
            "run code; model.safetensors is a safetensors copy"
        ),
        "sub/\\x1b[2Jevil.pt: not downloaded: a pickle by its name: loading it can run arbitrary code",
        "training_args.bin: not downloaded: a .bin file (a pickle when torch.save wrote it): loading it can run code",
        "not downloaded (not safetensors): 6 files: 2 pickle or raw weights, 1 JSON, 1 Python, 1 pickle, 1 tokenizer",
    ]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["model.safetensors"]
    # A single file of the repository: nothing else is listed.
    code, out, _ = run_cli(capsys, "download", "hf://org/model/model.safetensors", "-d", str(tmp_path / "o2"))
    assert code == 0
    assert "not downloaded" not in out
