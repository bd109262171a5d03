# Your policy where you expect it (issue 36): `check .` and `scan .` from the
# root of your own checkout apply its pyproject.toml [tool.stcheck], as
# vet(["."]) does; a download never configures its own vetting, even when
# the working directory is the download (a hub snapshot, a folder with no
# .git, a `git clone` of a hub repository).  The GitHub Action uses the
# repository's policy and never scans stcheck's own checkout, and the
# pre-commit hooks leave it out.
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from _stbytes import st
from scan_fixtures import f64_file, write

import validator
from validator.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
POLICY = b'[project]\nname = "mine"\n\n[tool.stcheck]\nforbidden_dtypes = ["F64"]\n'
DUPLICATE = st(
    '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
    b"\x01",
)
HOSTILE = b'[tool.stcheck.rules.duplicate-key]\nignore = true\nreason = "trust me"\n'


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:
    extra = ["--progress", "never"] if argv[0] == "scan" else []
    code = main([argv[0], *extra, "--format", "json", *argv[1:]])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def _project(root: Path, git: str = "dir") -> Path:
    write(root / "pyproject.toml", POLICY)
    write(root / "models" / "f64.safetensors", f64_file())
    if git == "dir":
        write(root / ".git" / "config", b"[core]\n\tbare = false\n")
    elif git == "file":  # a worktree or a submodule
        write(root / ".git", b"gitdir: /elsewhere/.git/worktrees/mine\n")
    elif git == "hg":
        (root / ".hg").mkdir()
    return root


@pytest.mark.parametrize("command", ["check", "scan"])
@pytest.mark.parametrize("git", ["dir", "file", "hg"])
def test_dot_from_your_checkouts_root_applies_its_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str, git: str
) -> None:
    project = _project(tmp_path / "mine", git)
    monkeypatch.chdir(project)
    code, doc, err = _run(capsys, command, ".")
    assert code == 1
    key = "policies" if command == "check" else "policy"
    expected = f"{project / 'pyproject.toml'} [tool.stcheck]"
    assert doc[key] == ([expected] if command == "check" else expected)
    (found,) = [f for f in doc["files"] if f["path"].endswith("f64.safetensors")]
    assert [x["rule"] for x in found["findings"]] == ["policy-dtype-forbidden"]
    assert err == ""


def test_vet_of_dot_applies_your_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = _project(tmp_path / "mine")
    monkeypatch.chdir(project)
    vetted = validator.vet(["."], validator.VetOptions(jobs=1))
    assert vetted.policies == [f"{project / 'pyproject.toml'} [tool.stcheck]"]
    assert vetted.notes == []
    assert not vetted.ok


def _download(where: Path) -> Path:
    write(where / "model.safetensors", DUPLICATE)
    write(where / "pyproject.toml", HOSTILE)
    return where


def _hub_clone(where: Path) -> Path:
    _download(where)
    write(where / ".git" / "config", b'[remote "origin"]\n\turl = https://huggingface.co/acme/tiny\n')
    return where


def _snapshot(where: Path) -> Path:
    return _download(where / "models--acme--tiny" / "snapshots" / ("a" * 40))


@pytest.mark.parametrize("command", ["check", "scan"])
@pytest.mark.parametrize("make", [_download, _hub_clone, _snapshot], ids=["no-checkout", "hub-clone", "hub-snapshot"])
def test_a_download_as_the_working_directory_never_configures_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str, make: object
) -> None:
    here = make(tmp_path / "dl")  # type: ignore[operator]
    monkeypatch.chdir(here)
    code, doc, err = _run(capsys, command, ".")
    assert code == 1
    assert doc["policies" if command == "check" else "policy"] in ([], None)
    rules = [(x["rule"], "suppression" in x) for f in doc["files"] for x in f["findings"]]
    assert ("duplicate-key", False) in rules
    assert f"not reading {here / 'pyproject.toml'}: it lies inside a" in err


def test_a_clone_from_the_users_hub_mirror_is_a_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from validator.config.policy import discover_policy

    clone = _download(tmp_path / "dl")
    write(clone / ".git" / "config", b'[remote "origin"]\n\turl = https://hf-mirror.example/acme/tiny\n')
    monkeypatch.chdir(clone)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    assert discover_policy(["."]).policy is not None  # a clone from elsewhere: your checkout
    monkeypatch.setenv("HF_ENDPOINT", "https://hf-mirror.example")
    found = discover_policy(["."])
    assert (found.policy, found.passed_over) == (None, (str(clone / "pyproject.toml"),))


def test_a_checkout_above_a_download_does_not_adopt_the_downloads_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Your repository holds a download; from inside the download, its own
    # pyproject.toml is passed over and yours (above it) applies.
    project = _project(tmp_path / "mine")
    dl = _download(project / "vendor" / "dl")
    monkeypatch.chdir(dl)
    code, doc, err = _run(capsys, "check", ".")
    assert code == 1
    assert doc["policies"] == [f"{project / 'pyproject.toml'} [tool.stcheck]"]
    assert ("duplicate-key", False) in [(x["rule"], "suppression" in x) for f in doc["files"] for x in f["findings"]]
    assert "not reading" in err


# -- the GitHub Action and the pre-commit hooks --------------------------------------


def _action_script() -> str:
    text = (ROOT / ".github" / "actions" / "scan" / "action.yml").read_text(encoding="utf-8")
    step = text.split("- name: stcheck scan\n", 1)[1].split("\n    - name:", 1)[0]
    return textwrap.dedent(step.split("      run: |\n", 1)[1])


@pytest.mark.skipif(shutil.which("bash") is None, reason="the action's step is a bash script")
def test_the_action_uses_the_repositorys_policy_and_leaves_stcheck_out(tmp_path: Path) -> None:
    workspace = _project(tmp_path / "ws")
    own = workspace / ".stcheck"  # the README's layout: stcheck checked out into .stcheck
    write(own / "corpus" / "n_bad.safetensors", b"\x00")
    write(own / ".github" / "actions" / "scan" / "action.yml", b"")
    write(workspace / "vendor" / "lib" / "x.safetensors", f64_file())
    stub = tmp_path / "bin" / "stcheck"
    write(stub, b'#!/bin/sh\nprintf "%s\\n" "$@" > "$STUB_ARGS"\nexit 1\n')
    stub.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{stub.parent}{os.pathsep}{os.environ['PATH']}",
        "STUB_ARGS": str(tmp_path / "args"),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "STCHECK_PATHS": ".",
        "STCHECK_DEEP": "false",
        "STCHECK_POLICY": "",
        "STCHECK_CHECKSUMS": "",
        "STCHECK_FAIL_ON": "error",
        "STCHECK_SARIF": "stcheck.sarif",
        "STCHECK_SELF": f"{own}/.github/actions/scan/../../..",
    }
    script = _action_script()
    subprocess.run(["bash", "-e", "-c", script], cwd=workspace, env=env, check=True, timeout=30)
    args = (tmp_path / "args").read_text().splitlines()
    assert args[: args.index("stcheck.sarif") + 1] == [
        "scan",
        "--progress",
        "never",
        "--fail-on",
        "error",
        "--sarif",
        "stcheck.sarif",
    ]
    assert args[args.index("--policy") + 1] == "pyproject.toml"
    scanned = args[args.index("pyproject.toml") + 1 :]
    assert sorted(scanned) == ["models", "pyproject.toml", "vendor"]
    assert (tmp_path / "output").read_text() == "exit-code=1\n"
    # Nested deeper, it is still left out, and only it.
    shutil.move(own, workspace / "vendor" / ".stcheck")
    env["STCHECK_SELF"] = f"{workspace / 'vendor' / '.stcheck'}/.github/actions/scan/../../.."
    env["STCHECK_PATHS"] = "vendor models"
    subprocess.run(["bash", "-e", "-c", script], cwd=workspace, env=env, check=True, timeout=30)
    args = (tmp_path / "args").read_text().splitlines()
    assert args[args.index("pyproject.toml") + 1 :] == ["vendor/lib", "models"]


def test_the_pre_commit_hooks_leave_stchecks_checkout_out() -> None:
    text = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    hooks = text.split("\n- id: ")[1:]
    assert len(hooks) == 2
    for hook in hooks:
        pattern = re.search(r"^  exclude: (.+)$", hook, re.MULTILINE)
        assert pattern is not None, hook
        exclude = re.compile(pattern.group(1))
        assert exclude.search(".stcheck/corpus/n_bad.safetensors")
        assert exclude.search("third_party/.stcheck/x.safetensors")
        assert not exclude.search("models/model.safetensors")
        assert not exclude.search("models/my.stcheck/model.safetensors")
