# Strategy: the library call and the command are one pipeline.  For every
# kind of target the grammar names (a file, a folder holding pickles, links
# and an index, standard input, a hub cache, an http:// URL on a local
# server, an hf:// folder on a local fake hub), `validator.vet` and
# `stcheck scan --format json` give the same files, findings, counts and
# exit status.  Then what only the library shows: its errors as VetError,
# its notes, and the typed options.
from __future__ import annotations

import io
import json
import os
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

import validator
from tests.cluster_fixtures import normalised
from tests.scan_fixtures import clean_file, fake_hf_cache
from tests.test_remote import hub, server  # noqa: F401 - fixtures: a local server and a fake hub on it
from validator.cli.main import main


class _Reduce:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def _weights(tmp_path, name: str, **tensors: np.ndarray) -> bytes:
    validator.save(tensors or {"w": np.zeros(4, np.float32)}, tmp_path / "scratch.safetensors")
    return (tmp_path / "scratch.safetensors").read_bytes()


def _folder(tmp_path):
    """A model folder: a sharded checkpoint, a lone file, a code-running
    pickle, a link out of the folder and a config."""
    top = tmp_path / "model"
    top.mkdir()
    weight_map = {}
    for i in range(2):
        name = f"model-{i + 1:05d}-of-00002.safetensors"
        (top / name).write_bytes(_weights(tmp_path, name, **{f"w{i}": np.full(2, i, np.float32)}))
        weight_map[f"w{i}"] = name
    (top / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    (top / "extra.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{}")  # truncated header
    (top / "training_args.bin").write_bytes(pickle.dumps(_Reduce()))
    (top / "config.json").write_text("{}")
    outside = tmp_path / "outside.safetensors"
    outside.write_bytes(clean_file())
    (top / "leak.safetensors").symlink_to(outside)
    return top


def _cli_json(capsys, *argv: str) -> tuple[int, str]:
    code = main(["scan", "--format", "json", "--no-config", "-j", "1", *argv])
    out, _ = capsys.readouterr()
    return code, out


def _same(capsys, paths: list[str], options: validator.VetOptions, *argv: str) -> validator.Vetted:
    code, out = _cli_json(capsys, *argv, *paths)
    vetted = validator.vet(paths, options)
    capsys.readouterr()
    assert vetted.exit_code == code
    assert normalised(json.dumps(vetted.to_json())) == normalised(out)
    return vetted


def _options(**kw) -> validator.VetOptions:
    return validator.VetOptions(no_config=True, jobs=1, **kw)


def test_a_file_valid_and_invalid(tmp_path, capsys):
    good = tmp_path / "good.safetensors"
    good.write_bytes(clean_file())
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(clean_file()[:-1])
    vetted = _same(capsys, [str(good), str(bad)], _options())
    assert vetted.exit_code == 1
    assert [r.valid for r in vetted.results] == [True, False]


def test_a_folder_with_pickles_links_and_an_index(tmp_path, capsys):
    top = _folder(tmp_path)
    vetted = _same(capsys, [str(top)], _options())
    assert vetted.exit_code == 1
    codes = {(Path(r.path).name, f.finding.code) for r in vetted.results for f in r.findings}
    assert ("training_args.bin", "ST701") in codes
    assert ("leak.safetensors", "ST703") in codes
    # One entry per path: the link is one target, not a file and a link.
    paths = [r.path for r in vetted.results]
    assert len(paths) == len(set(paths))
    # A target with an error is never counted as valid.
    summary = vetted.to_json()["summary"]
    # valid: the two shards; invalid: the truncated file and the file the link
    # names (with the link's ST703); failing other targets: the pickle.
    assert (summary["valid"], summary["invalid"], summary["failing_others"]) == (2, 2, 1)


def test_a_folder_deep_with_digests(tmp_path, capsys):
    top = _folder(tmp_path)
    _same(capsys, [str(top)], _options(deep=True), "--deep")


def test_standard_input(tmp_path, capsys, monkeypatch):
    data = clean_file()[:-3]

    def fresh() -> None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))

    fresh()
    code, out = _cli_json(capsys, "-")
    fresh()
    vetted = validator.vet(["-"], _options())
    assert (vetted.exit_code, code) == (1, 1)
    assert normalised(json.dumps(vetted.to_json())) == normalised(out)
    assert vetted.results[0].path == "<stdin>"


def test_a_hub_cache(tmp_path, capsys):
    fake_hf_cache(tmp_path / "hub")
    vetted = _same(capsys, [], _options(hf_cache=str(tmp_path / "hub")), "--hf-cache", str(tmp_path / "hub"))
    assert vetted.exit_code == 1  # the corrupted blob
    assert any(r.revision for r in vetted.results)


def test_an_http_url_on_a_local_server(server, capsys):  # noqa: F811 - server is a fixture
    from tests.remote_servers import from_bytes

    server.site.resources["/ok.safetensors"] = from_bytes(clean_file())
    server.site.resources["/bad.safetensors"] = from_bytes(clean_file()[:-1])
    urls = [server.url + "/ok.safetensors", server.url + "/bad.safetensors"]
    vetted = _same(capsys, urls, _options())
    assert vetted.exit_code == 1


def test_an_hf_folder_on_a_local_fake_hub(hub, capsys):  # noqa: F811 - hub is a fixture
    from tests.remote_servers import HubFile

    hub.add(
        "org/model",
        [
            HubFile("model.safetensors", clean_file()),
            HubFile("pytorch_model.bin", pickle.dumps({"w": 1})),
            HubFile("config.json", b"{}", lfs=False),
        ],
    )
    vetted = _same(capsys, ["hf://org/model"], _options())
    assert vetted.exit_code == 1  # the pickle, judged by name
    assert any(f.finding.code == "ST701" for r in vetted.results for f in r.findings)


def test_the_library_raises_what_the_command_prints(tmp_path, capsys):
    vetted = validator.vet([str(tmp_path)], _options())  # an empty folder is an error, never a pass
    assert vetted.exit_code == 2
    assert vetted.errors == [f"{tmp_path}: no *.safetensors file in this directory or below it"]
    assert main(["scan", "--no-config", str(tmp_path)]) == 2
    assert vetted.errors[0] in capsys.readouterr().err
    with pytest.raises(validator.VetError, match="give at least one path, or hf_cache"):
        validator.vet([], _options())
    with pytest.raises(validator.VetError, match="standard input"):
        validator.vet(["-"], _options(deep=True))


def test_a_missing_path_is_an_error_with_exit_2(tmp_path, capsys):
    good = tmp_path / "good.safetensors"
    good.write_bytes(clean_file())
    vetted = _same(capsys, [str(good), str(tmp_path / "nope")], _options())
    assert vetted.exit_code == 2
    assert vetted.errors == [f"{tmp_path / 'nope'}: no such file or directory"]


def test_a_single_string_is_one_path(tmp_path):
    good = tmp_path / "good.safetensors"
    good.write_bytes(clean_file())
    vetted = validator.vet(str(good), _options())
    assert vetted.ok
    assert [r.path for r in vetted.results] == [str(good)]


def test_a_policy_found_inside_the_scanned_folder_is_a_note_not_a_policy(tmp_path, monkeypatch):
    top = tmp_path / "model"
    top.mkdir()
    (top / "model.safetensors").write_bytes(clean_file())
    (top / "pyproject.toml").write_text("[tool.stcheck]\nmax_tensors = 0\n")
    monkeypatch.chdir(top)
    seen: list[str] = []
    vetted = validator.vet([str(top)], validator.VetOptions(jobs=1), on_note=seen.append)
    assert vetted.policies == []
    assert vetted.notes == seen
    assert seen[0].startswith(f"not reading {top / 'pyproject.toml'}: it lies inside a scanned path")


def test_a_new_scheme_is_one_module_and_one_row(tmp_path, monkeypatch, capsys):
    # The registry names the module that reads a scheme; check, inspect, scan
    # and vet() all reach it through resolve() and the plan.
    from validator.sources import schemes

    module = tmp_path / "stcheck_mem_source.py"
    module.write_text(
        "from validator import validate\n"
        "BLOBS = {}\n"
        "def read_source(source, *, profile, network):\n"
        "    return [validate(BLOBS[source], profile=profile)], []\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import stcheck_mem_source

    stcheck_mem_source.BLOBS["mem://bad"] = clean_file()[:-1]
    row = schemes.Scheme("mem://", "stcheck_mem_source", "remote", "an in-memory test source")
    monkeypatch.setattr(schemes, "SCHEMES", (*schemes.SCHEMES, row))
    assert main(["check", "--no-config", "mem://bad"]) == 1
    assert "ST407" in capsys.readouterr().out
    assert main(["inspect", "mem://bad"]) == 1
    capsys.readouterr()
    vetted = _same(capsys, ["mem://bad"], _options())
    assert vetted.exit_code == 1


def test_inspect_reads_standard_input_as_check_does(monkeypatch, capsys):
    data = clean_file()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["inspect", "-"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"<stdin>: {len(data)} bytes, header ")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data[:-1])))
    assert main(["inspect", "--format", "json", "-"]) == 1
    assert json.loads(capsys.readouterr().out)["valid"] is False
