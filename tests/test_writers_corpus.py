"""The real-writer corpus (corpus/writers/): stcheck's verdicts on what real libraries write.

The corpus and its manifest are built by corpus/writers/generate.py, which
installs the writers; nothing here needs them.  These tests check that the
manifest is well formed and matches the files on disk, that the reference
profile agrees with safetensors 0.8.0 (the recorded fact and the installed
library) on every file, and pin the verdicts that issue 20 prescribes: no
error in strict on what 0.8.0 and the writer's own loader both read, an
error on a folder with a pickle or one that its loader cannot load.  The
cases that main still gets wrong are listed in the manifest
(``known_wrong_on_main``) and run as strict xfails, so each turns into a
failure the moment its fix lands.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import safetensors

import validator
from validator.cli.main import main as cli

ROOT = Path(__file__).resolve().parent.parent / "corpus" / "writers"
MANIFEST: dict[str, Any] = json.loads((ROOT / "manifest.json").read_text(encoding="utf-8"))
TARGETS: list[dict[str, Any]] = MANIFEST["targets"]
# The corpus folder's own files, which are not targets.
OWN_FILES = {
    "README.md",
    "generate.py",
    "survey.py",
    "_write.py",
    "_common.py",
    "_jobs_frameworks.py",
    "_jobs_hf.py",
    "_jobs_transformers.py",
    "_probe.py",
    "manifest.json",
    "manifest.schema.json",
}
# Which checks run on each kind of target.
CHECKS = {
    "file": ("reference-agrees", "strict"),
    "index": ("strict", "reference", "library-strict", "library-reference"),
    "folder": ("strict", "reference"),
}


def _params(*, agreement: bool) -> list[Any]:
    """(target, check) pairs: the 0.8.0-agreement checks, or the verdict checks."""
    params = []
    for target in TARGETS:
        for check in CHECKS[target["kind"]]:
            if (check == "reference-agrees") != agreement:
                continue
            if check != "reference-agrees" and _expected(target, check)["valid"] is None:
                continue  # the issue's rule decides nothing here
            reason = target.get("known_wrong_on_main", {}).get(check)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(target, check, id=f"{target['path']}::{check}", marks=marks))
    return params


def _expected(target: dict[str, Any], check: str) -> dict[str, Any]:
    profile = "reference" if check.endswith("reference") else "strict"
    verdict: dict[str, Any] = target["expect"][profile]
    return verdict


def test_manifest_matches_its_schema() -> None:
    schema = json.loads((ROOT / "manifest.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(MANIFEST)


def test_every_target_exists_and_nothing_else_is_there() -> None:
    paths = [t["path"] for t in TARGETS]
    assert len(paths) == len(set(paths)), "a target is listed twice"
    listed = set(OWN_FILES)
    for target in TARGETS:
        where = ROOT / target["path"]
        if target["kind"] == "folder":
            assert where.is_dir(), target["path"]
            on_disk = sorted(str(p.relative_to(where)) for p in where.rglob("*") if p.is_file())
            assert on_disk == target["contents"], f"{target['path']}: contents differ from the manifest"
            listed |= {f"{target['path']}/{name}" for name in target["contents"]}
        else:
            assert where.is_file(), target["path"]
            listed.add(target["path"])
    present = {str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert present - listed == set(), "files that no target lists"
    assert listed - present == set(), "listed files that are missing"


def test_every_file_is_the_one_measured() -> None:
    for target in TARGETS:
        if target["kind"] == "file":
            digest = hashlib.sha256((ROOT / target["path"]).read_bytes()).hexdigest()
            assert digest == target["facts"]["sha256"], f"{target['path']} changed since it was measured"


def test_the_corpus_covers_the_cases_issue_20_names() -> None:
    files = [t["facts"] for t in TARGETS if t["kind"] == "file"]
    indexes = [t["facts"] for t in TARGETS if t["kind"] == "index"]
    folders = [t["facts"] for t in TARGETS if t["kind"] == "folder"]
    assert any(f["constructs"].get("metadata") == "null" for f in files), "null metadata"
    assert any(f["total_size_type"] == "float" for f in indexes), "float total_size"
    assert any(f.get("index_name_variant_dotted") for f in indexes), "dotted variant"
    assert any(f["names_listed_not_stored_tie_like"] for f in indexes), "tied name listed, not stored"
    assert any(f["orphan_shards"] for f in indexes), "orphan shard"
    assert any(f["weight_map_empty"] for f in indexes), "empty weight_map"
    assert any(f["pickles"] and f["python_files"] for f in folders), "pickles and code beside safetensors"
    assert any(f["constructs"]["all_zero_tensors"] for f in files), "all-zero tensors of a fresh model"


def _reads_with_0_8_0(path: Path) -> bool:
    try:
        safetensors.deserialize(path.read_bytes())
    except Exception:  # noqa: BLE001 - SafetensorError, or whatever 0.8.0 raises, is its refusal
        return False
    return True


Errors = list[tuple[str, str]]  # (rule slug, the finding's path and message)


def _cli(profile: str, path: Path) -> tuple[int, Errors]:
    """``stcheck check --profile PROFILE --format json PATH``: exit code, errors."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = cli(["check", "--profile", profile, "--format", "json", str(path)])
    try:
        report = json.loads(out.getvalue())
    except json.JSONDecodeError:
        return code, []
    errors: Errors = []

    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            where = node["path"] if isinstance(node.get("path"), str) else where
            if isinstance(node.get("rule"), str) and node.get("severity") == "error":
                errors.append((node["rule"], f"{where}: {node.get('message', '')}"))
            for value in node.values():
                walk(value, where)
        elif isinstance(node, list):
            for value in node:
                walk(value, where)

    walk(report, "")
    return code, errors


def _verdict(target: dict[str, Any], check: str) -> tuple[int | None, Errors]:
    """Run one check: the CLI's exit code (None for the library) and the errors."""
    path = ROOT / target["path"]
    profile = "reference" if check.endswith("reference") else "strict"
    if target["kind"] == "file" or check.startswith("library-"):
        report = (validator.validate if target["kind"] == "file" else validator.validate_index)(path, profile=profile)
        return None, [(f.slug, f"{path}: {f.message}") for f in report.findings if f.severity.value == "error"]
    return _cli(profile, path)


@pytest.mark.parametrize(("target", "check"), _params(agreement=True))
def test_reference_profile_agrees_with_safetensors_0_8_0(target: dict[str, Any], check: str) -> None:
    del check  # always "reference-agrees": the id names it, and known_wrong_on_main can key on it
    path = ROOT / target["path"]
    recorded = target["facts"]["safetensors_0_8_0"]["reads"]
    assert safetensors.__version__ == "0.8.0"
    assert _reads_with_0_8_0(path) == recorded, "the installed safetensors 0.8.0 disagrees with the recorded fact"
    assert validator.validate(path, profile="reference").valid == recorded
    assert recorded == target["expect"]["reference"]["valid"]


@pytest.mark.parametrize(("target", "check"), _params(agreement=False))
def test_verdicts(target: dict[str, Any], check: str) -> None:
    expected = _expected(target, check)
    code, errors = _verdict(target, check)
    slugs = sorted({slug for slug, _ in errors})
    if expected["valid"]:
        assert slugs == [], f"errors on what its loaders read: {errors}"
        assert code in {None, 0}, f"exit code {code}"
        return
    assert errors, f"no error (exit code {code})"
    assert code in {None, 1}, f"exit code {code}"
    for wanted in expected.get("error_rules", []):
        assert set(wanted.split("|")) & set(slugs), f"none of {wanted} among {slugs}"
    for name in expected.get("error_mentions", []):
        assert any(name in text for _, text in errors), f"no error names {name}: {errors}"


def test_known_wrong_entries_name_checks_that_run() -> None:
    for target in TARGETS:
        for check in target.get("known_wrong_on_main", {}):
            assert check in CHECKS[target["kind"]], f"{target['path']}: no check {check!r} runs on a {target['kind']}"
            assert check == "reference-agrees" or _expected(target, check)["valid"] is not None, target["path"]


def test_readme_carries_the_survey_as_computed() -> None:
    spec = importlib.util.spec_from_file_location("writers_survey", ROOT / "survey.py")
    assert spec is not None
    assert spec.loader is not None
    survey = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(survey)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert survey.render() in readme, "README.md's survey is stale: run python corpus/writers/survey.py --write"
