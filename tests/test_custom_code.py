# Strategy: ST702 custom-code names what would run a Python file.
# transformers' trust_remote_code=True runs the modules a config's auto_map
# names, so a folder's config.json (and tokenizer_config.json) is read,
# bounded and tolerant of bad JSON: a mapped file names its auto_map entry,
# any other .py gets the milder text, and an hf:// listing is judged by name.
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import validator
from validator.cli.main import main
from validator.sources.kinds import CONFIG_LIMIT, auto_mapped, custom_code_message


def _folder(root: Path, config: bytes | None, *py: str) -> Path:
    root.mkdir()
    validator.save({"w": np.zeros(4, np.float32)}, root / "model.safetensors")
    if config is not None:
        (root / "config.json").write_bytes(config)
    for name in py:
        (root / name).write_text("import os\n")
    return root


def _code_lines(capsys, folder: Path) -> dict[str, str]:
    main(["scan", "--no-config", "--progress", "never", "-j", "1", str(folder)])
    out = capsys.readouterr().out
    return {
        Path(line.split(": ", 1)[0]).name: line.split(" ST702 custom-code ", 1)[1]
        for line in out.splitlines()
        if " ST702 custom-code " in line
    }


def test_the_auto_map_entry_that_runs_a_file_is_named(capsys, tmp_path):
    config = {"model_type": "tiny", "auto_map": {"AutoModel": "modeling_tiny.TinyModel"}}
    folder = _folder(tmp_path / "m", json.dumps(config).encode(), "modeling_tiny.py", "helpers.py")
    lines = _code_lines(capsys, folder)
    assert lines["modeling_tiny.py"] == (
        "custom code: config.json auto_map AutoModel: modeling_tiny.TinyModel: `trust_remote_code=True` would run it"
    )
    assert lines["helpers.py"] == (
        "a Python file that no auto_map names (config.json read): "
        "`trust_remote_code=True` runs it only if a module an auto_map names imports it"
    )


def test_a_tokenizer_auto_map_and_a_reference_to_another_repository(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(
        json.dumps({"auto_map": {"AutoConfig": "other/repo--configuration_x.XConfig", "AutoModel": "modeling_x.X"}})
    )
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"auto_map": {"AutoTokenizer": ["tokenization_x.XTokenizer", None]}})
    )
    assert auto_mapped(str(folder)) == {
        "modeling_x.py": ["config.json auto_map AutoModel: modeling_x.X"],
        "tokenization_x.py": ["tokenizer_config.json auto_map AutoTokenizer: tokenization_x.XTokenizer"],
    }


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(b"{not json", id="bad_json"),
        pytest.param(b'{"auto_map": 3}', id="auto_map_not_a_table"),
        pytest.param(b"[1, 2]", id="not_an_object"),
        pytest.param(b"\xff\xfe", id="not_utf8"),
        pytest.param(b"[" * 100000, id="deeply_nested"),
    ],
)
def test_a_bad_config_reads_as_no_auto_map(capsys, tmp_path, config):
    folder = _folder(tmp_path / "m", config, "modeling_tiny.py")
    assert auto_mapped(str(folder)) == {}
    assert _code_lines(capsys, folder)["modeling_tiny.py"].startswith("a Python file that no auto_map names")


def test_an_oversized_config_is_not_read(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    body = json.dumps({"auto_map": {"AutoModel": "modeling_tiny.TinyModel"}, "pad": " " * CONFIG_LIMIT})
    (folder / "config.json").write_text(body)
    assert auto_mapped(str(folder)) == {}


def test_no_config_at_all(capsys, tmp_path):
    folder = _folder(tmp_path / "m", None, "modeling_tiny.py")
    assert auto_mapped(str(folder)) is None
    assert _code_lines(capsys, folder)["modeling_tiny.py"] == custom_code_message("modeling_tiny.py", None)
    assert "no config.json here names code to run" in custom_code_message("modeling_tiny.py", None)
