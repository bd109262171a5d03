# Strategy: every JSON document a subcommand writes validates against the
# schema that ships inside the package (validator/schemas/, package data),
# for every kind of target: a file, a folder, an index, a folder holding an
# index, a hub cache and remote sources (the local servers of
# tests/remote_servers.py).  The schemas are loaded through
# importlib.resources, as an installed user would find them; spec/ keeps
# byte-identical copies, checked here.  Reports, findings and the summary may
# gain fields (so older readers keep validating), so each report is also
# checked key by key: every field stcheck writes must be declared.
from __future__ import annotations

import io
import json
import struct
from contextlib import redirect_stderr, redirect_stdout
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from scan_fixtures import build, clean_file, f32, fake_hf_cache, pickle_payload, sha256, write

from validator._rules import RULES
from validator.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
PACKAGED = (
    "report.schema.json",
    "header.schema.json",
    "rules.schema.json",
    "conformance-results.schema.json",
    "loader-finding.schema.json",
)


def packaged(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((resources.files("validator") / "schemas" / name).read_text(encoding="utf-8"))
    return doc


def checker(name: str, ref: str | None = None) -> Draft202012Validator:
    schema = packaged(name)
    if ref is not None:
        schema = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": ref}
    return Draft202012Validator(schema)


def undeclared(doc: Any, schema: dict[str, Any] | None = None, node: dict[str, Any] | None = None) -> set[str]:
    """Keys of ``doc`` that its schema (report.schema.json) does not declare."""
    schema = schema or packaged("report.schema.json")
    node = node if node is not None else schema
    while "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
    found: set[str] = set()
    if isinstance(doc, dict):
        props = node.get("properties")
        if props is None:  # a map (tensors, metadata, models, other_files): its values
            extra = node.get("additionalProperties")
            for value in doc.values():
                found |= undeclared(value, schema, extra) if isinstance(extra, dict) else set()
            for option in node.get("oneOf", []):
                if option.get("type") == "object":
                    for value in doc.values():
                        found |= undeclared(value, schema, option.get("additionalProperties") or {})
            return found
        for key, value in doc.items():
            if key not in props:
                found.add(key)
            else:
                found |= undeclared(value, schema, props[key])
    elif isinstance(doc, list):
        items = node.get("items")
        for value in doc:
            found |= undeclared(value, schema, items) if isinstance(items, dict) else set()
    return found


def run(*argv: str) -> tuple[int, Any]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    assert out.getvalue(), err.getvalue()
    return code, json.loads(out.getvalue())


# --- the packaged schemas ------------------------------------------------------


@pytest.mark.parametrize("name", PACKAGED)
def test_schema_ships_in_the_package_and_is_a_2020_12_schema(name: str) -> None:
    schema = packaged(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("name", PACKAGED)
def test_spec_copy_agrees_with_the_packaged_schema(name: str) -> None:
    copy = ROOT / "spec" / name
    if copy.exists():
        assert copy.read_bytes() == (resources.files("validator") / "schemas" / name).read_bytes()


def test_pyproject_ships_the_schemas_as_package_data() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"schemas/*.json"' in text


# --- targets -------------------------------------------------------------------


def _index(folder: Path) -> Path:
    """A valid two-shard checkpoint in ``folder``; returns its index."""
    weight_map = {}
    for i in range(2):
        name = f"model-{i + 1:05d}-of-00002.safetensors"
        write(folder / name, build([(f"layer{i}.w", "F32", [2], f32(1.0, 2.0))], {"format": "pt"}))
        weight_map[f"layer{i}.w"] = name
    index = folder / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 16}, "weight_map": weight_map}))
    return index


@pytest.fixture
def local(tmp_path: Path) -> dict[str, list[str]]:
    """Argument lists naming each kind of local target."""
    file = write(tmp_path / "file" / "model.safetensors", clean_file())
    trailing = write(tmp_path / "file" / "trailing.safetensors", clean_file() + b"\0")
    folder = tmp_path / "folder"
    write(folder / "a.safetensors", clean_file())
    write(folder / "sub" / "b.safetensors", clean_file() + b"\0")
    write(folder / "pytorch_model.bin", pickle_payload())
    write(folder / "modeling.py", b"import os\n")
    write(folder / "config.json", b"{}")
    (folder / "away.safetensors").symlink_to(file)
    index = _index(tmp_path / "ckpt")
    write(tmp_path / "ckpt" / "README.md", b"# a model\n")
    fake_hf_cache(tmp_path / "hub")
    return {
        "file": [str(file), str(trailing)],
        "folder": [str(folder)],
        "index": [str(index)],
        "folder-with-index": [str(tmp_path / "ckpt")],
        "hub-cache": [str(tmp_path / "hub" / "models--acme--tiny")],
    }


KINDS = ("file", "folder", "index", "folder-with-index", "hub-cache")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("profile", ["strict", "reference"])
def test_check_json_validates(kind: str, profile: str, local: dict[str, list[str]]) -> None:
    code, doc = run("check", "--no-config", "--format", "json", "--profile", profile, *local[kind])
    checker("report.schema.json").validate(doc)
    assert undeclared(doc) == set()
    assert doc["command"] == "check"
    assert code in {0, 1}
    assert doc["files"]


@pytest.mark.parametrize("kind", KINDS)
def test_scan_json_validates(kind: str, local: dict[str, list[str]]) -> None:
    argv = ["--hf-cache", local[kind][0]] if kind == "hub-cache" else local[kind]
    code, doc = run("scan", "--no-config", "--progress", "never", "-j", "1", "--format", "json", *argv)
    checker("report.schema.json").validate(doc)
    assert undeclared(doc) == set()
    assert doc["command"] == "scan"
    assert code in {0, 1}


def test_scan_json_of_a_folder_holding_an_index_gives_the_index_its_size(local: dict[str, list[str]]) -> None:
    # Issue 24: the index entry said "file_size": null, which the schema rejects.
    _, doc = run(
        "scan", "--no-config", "--progress", "never", "-j", "1", "--format", "json", *local["folder-with-index"]
    )
    (entry,) = [f for f in doc["files"] if f["kind"] == "index"]
    assert entry["file_size"] == Path(entry["path"]).stat().st_size
    assert entry["checkpoint"]["shards"] == 2


@pytest.mark.parametrize("deep", [False, True])
def test_scan_json_with_digests_validates(tmp_path: Path, deep: bool) -> None:
    data = clean_file()
    write(tmp_path / "m" / "a.safetensors", data)
    sums = write(
        tmp_path / "m" / "SHA256SUMS", f"{sha256(data)}  a.safetensors\n{'0' * 64}  gone.safetensors\n".encode()
    )
    argv = ["scan", "--no-config", "--progress", "never", "-j", "1", "--format", "json", "--checksums", str(sums)]
    code, doc = run(*argv, *(["--deep"] if deep else []), str(tmp_path / "m"))
    checker("report.schema.json").validate(doc)
    assert undeclared(doc) == set()
    assert code == 1  # the listed file that is missing
    (entry,) = [f for f in doc["files"] if f["path"].endswith("a.safetensors")]
    assert entry["checksum"]["matches"] is True


@pytest.mark.parametrize("kind", ["file", "folder", "index", "folder-with-index", "hub-cache"])
def test_inspect_json_validates(kind: str, local: dict[str, list[str]]) -> None:
    code, doc = run("inspect", "--format", "json", local[kind][0])
    assert code in {0, 1}
    if kind == "file":
        # One file: the fileReport alone (Report.to_json()), as the README says.
        checker("report.schema.json", "#/$defs/fileReport").validate(doc)
        assert doc["tensors"]
    else:
        # Anything else: the report document check writes, with the tensor
        # tables, and an index's weight_map.
        checker("report.schema.json").validate(doc)
        assert doc["command"] == "inspect"
    assert undeclared(doc, node={"$ref": "#/$defs/fileReport"} if kind == "file" else None) == set()


def test_inspect_json_of_an_index_names_its_weight_map(local: dict[str, list[str]]) -> None:
    # Issue 24: it printed {"checkpoints": ..., "files": ...}, matching no schema.
    _, doc = run("inspect", "--format", "json", *local["index"])
    (entry,) = [f for f in doc["files"] if f["kind"] == "index"]
    assert entry["checkpoint"]["weight_map"] == {
        "layer0.w": "model-00001-of-00002.safetensors",
        "layer1.w": "model-00002-of-00002.safetensors",
    }
    shards = [f for f in doc["files"] if f["kind"] == "safetensors"]
    assert [sorted(f["tensors"]) for f in shards] == [["layer0.w"], ["layer1.w"]]


def test_the_key_check_sees_an_undeclared_field() -> None:
    doc = {"tool": "stcheck", "files": [{"path": "x", "findings": [{"rule": "r", "extra": 1}], "new": 2}]}
    assert undeclared(doc) == {"extra", "new"}
    assert undeclared({"files": [{"tensors": {"w": {"dtype": "F32", "odd": 1}}}]}) == {"odd"}


def test_rules_json_validates() -> None:
    code, doc = run("rules", "--format", "json")
    assert code == 0
    checker("rules.schema.json").validate(doc)
    assert [r["code"] for r in doc] == [r.code for r in RULES]


@pytest.mark.parametrize("rule", [r.code for r in RULES])
def test_rule_explanation_json_validates(rule: str) -> None:
    code, doc = run("rules", "--format", "json", rule)
    assert code == 0
    checker("rules.schema.json").validate(doc)


def test_conformance_results_jsonl_validates(tmp_path: Path) -> None:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main(
            [
                "conformance",
                "--only",
                "stcheck-strict",
                "--files",
                "n_prefix_*",
                "--files",
                "y_dtype_f32*",
                "--out",
                str(tmp_path),
                "--quiet",
            ]
        )
    assert code == 0
    lines = (tmp_path / "results.jsonl").read_text(encoding="utf-8").splitlines()
    check = checker("conformance-results.schema.json")
    for line in lines:
        check.validate(json.loads(line))
    assert {json.loads(line)["type"] for line in lines} == {"implementation", "result"}


def test_the_shipped_conformance_results_validate() -> None:
    check = checker("conformance-results.schema.json")
    for line in (ROOT / "corpus" / "results" / "results.jsonl").read_text(encoding="utf-8").splitlines():
        check.validate(json.loads(line))


def test_conformance_schema_lists_every_status() -> None:
    from validator.conformance.model import STATUSES

    schema = packaged("conformance-results.schema.json")
    assert tuple(schema["$defs"]["result"]["properties"]["status"]["enum"]) == STATUSES


def test_loader_finding_sidecar_validates(tmp_path: Path) -> None:
    from validator.fuzz.loader_under_test import record

    record(str(tmp_path), "crash:KeyError", "KeyError: 'data_offsets'", b"\x08" + bytes(7) + b"{}")
    (sidecar,) = tmp_path.glob("*.json")
    checker("loader-finding.schema.json").validate(json.loads(sidecar.read_text(encoding="utf-8")))


# --- remote sources ----------------------------------------------------------------


@pytest.fixture
def remote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    pytest.importorskip("urllib3")
    from tests.remote_servers import HubFile, Server, from_bytes

    with Server() as server:
        server.site.resources["/m.safetensors"] = from_bytes(clean_file())
        server.site.resources["/bad.safetensors"] = from_bytes(clean_file() + b"\0")
        weight_map = {}
        for i in range(2):
            name = f"model-{i + 1:05d}-of-00002.safetensors"
            server.site.resources[f"/ckpt/{name}"] = from_bytes(build([(f"l{i}", "F32", [2], f32(1.0, 2.0))]))
            weight_map[f"l{i}"] = name
        index = json.dumps({"metadata": {"total_size": 16}, "weight_map": weight_map}).encode()
        server.site.resources["/ckpt/model.safetensors.index.json"] = from_bytes(index)
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
        monkeypatch.delenv("HF_TOKEN", raising=False)
        monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
        server.hub().add(
            "org/model",
            [HubFile("model.safetensors", clean_file()), HubFile("config.json", b"{}", lfs=False)],
            sha="c" * 40,
        )
        yield {
            "file": [server.url + "/m.safetensors", server.url + "/bad.safetensors"],
            "index": [server.url + "/ckpt/model.safetensors.index.json"],
            "hub": ["hf://org/model"],
        }


@pytest.mark.parametrize("kind", ["file", "index", "hub"])
@pytest.mark.parametrize("command", ["check", "scan", "inspect"])
def test_remote_json_validates(command: str, kind: str, remote: dict[str, list[str]]) -> None:
    extra = ["--progress", "never"] if command == "scan" else []
    paths = remote[kind][:1] if command == "inspect" else remote[kind]
    code, doc = run(command, *([] if command == "inspect" else ["--no-config"]), *extra, "--format", "json", *paths)
    assert code in {0, 1}
    checker("report.schema.json").validate(doc)
    assert undeclared(doc) == set()
    assert doc["files"]


def test_stdin_json_validates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = clean_file() + b"\0"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, doc = run("check", "--no-config", "--format", "json", "-")
    assert code == 1
    checker("report.schema.json").validate(doc)
    assert undeclared(doc) == set()
    assert doc["files"][0]["path"] == "<stdin>"
    assert doc["files"][0]["file_size"] == len(data)
    assert struct.unpack("<Q", data[:8])[0] == doc["files"][0]["header_size"]
