# Strategy: the walker's one rule for links and special files, through every
# command that walks a folder.  A symlinked folder is followed as a
# symlinked file is (an invalid file behind it must fail the run); each
# real folder is walked once (a link to an ancestor, a cycle of links and a
# second link to one folder are cut, with ST704); a link out of the root is
# ST703, and in a hub cache the file it reaches is never a verified blob;
# FIFOs and broken links are listed as unreadable and never opened.
from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from typing import TYPE_CHECKING

import pytest
from scan_fixtures import build, clean_file, f32, fake_hf_cache, sha256, write

from validator.cli.main import main
from validator.io.index import is_index_name
from validator.sources.walk import walk

if TYPE_CHECKING:
    from pathlib import Path

INVALID = b"\x01\x02"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def _scan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    rc, out, _ = _run(capsys, "scan", "--no-config", "--progress", "never", "--format", "json", *argv)
    return rc, json.loads(out)


def test_a_symlinked_folder_is_followed_and_its_link_out_flagged(tmp_path, capsys):
    write(tmp_path / "models" / "a" / "model.safetensors", clean_file())
    write(tmp_path / "elsewhere" / "model.safetensors", INVALID)
    (tmp_path / "models" / "b").symlink_to(tmp_path / "elsewhere")
    models = str(tmp_path / "models")
    rc, out, _ = _run(capsys, "check", models)
    assert rc == 1
    assert f"{models}/b/model.safetensors:0: ST101 file-too-small" in out
    assert f"{models}/b: ST703 link-leaves-root resolves through a symlink to '{tmp_path}/elsewhere'" in out
    assert "2 files checked (strict): 1 valid, 1 invalid" in out
    rc, doc = _scan(capsys, models)
    assert rc == 1
    assert [(f["path"], f["kind"], [x["rule"] for x in f["findings"]]) for f in doc["files"]] == [
        (f"{models}/b", "link", ["link-leaves-root"]),
        (f"{models}/a/model.safetensors", "safetensors", []),
        (f"{models}/b/model.safetensors", "safetensors", ["file-too-small"]),
    ]
    rc, out, _ = _run(capsys, "inspect", models)
    assert rc == 1
    assert f"{models}/b/model.safetensors: 2 bytes" in out
    rc, out, _ = _run(capsys, "check", "--format", "json", models)
    links = [{k: f[k] for k in ("path", "findings")} for f in json.loads(out)["files"] if f["kind"] == "link"]
    assert links == [
        {
            "path": f"{models}/b",
            "findings": [
                {
                    "rule": "link-leaves-root",
                    "code": "ST703",
                    "severity": "error",
                    "offset": None,
                    "tensor": None,
                    "json_path": None,
                    "message": f"resolves through a symlink to '{tmp_path}/elsewhere', outside '{models}': "
                    "what it points to is still checked, but it is not part of what was given",
                }
            ],
        }
    ]


def test_json_reports_of_links_and_other_files_validate(tmp_path, capsys):
    from jsonschema import Draft202012Validator

    schema = json.loads((resources.files("validator") / "schemas" / "report.schema.json").read_text())
    root = tmp_path / "m"
    write(root / "model.safetensors", clean_file())
    write(root / "training_args.bin", b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00}\x94.")
    write(root / "modeling.py", b"")
    (root / "out").symlink_to(tmp_path)
    (root / "sub").mkdir()
    (root / "sub" / "up").symlink_to("..")
    rc, out, _ = _run(capsys, "check", "--format", "json", str(root))
    assert rc == 1
    doc = json.loads(out)
    Draft202012Validator(schema).validate(doc)
    links = [f for f in doc["files"] if f["kind"] == "link"]
    assert [link["findings"][0]["rule"] for link in links] == ["link-leaves-root", "link-loop"]
    rc, doc = _scan(capsys, str(root))
    assert rc == 1
    Draft202012Validator(schema).validate(doc)
    assert sorted(f["kind"] for f in doc["files"]) == ["link", "link", "other", "other", "safetensors"]


def test_a_link_inside_the_root_is_not_flagged(tmp_path, capsys):
    write(tmp_path / "m" / "real" / "model.safetensors", clean_file())
    (tmp_path / "m" / "model.safetensors").symlink_to("real/model.safetensors")
    rc, out, _ = _run(capsys, "check", str(tmp_path / "m"))
    assert rc == 0, out
    assert "ST703" not in out


def test_the_folder_given_may_itself_be_a_link(tmp_path, capsys):
    write(tmp_path / "store" / "model.safetensors", clean_file())
    (tmp_path / "m").symlink_to(tmp_path / "store")
    rc, out, _ = _run(capsys, "check", str(tmp_path / "m"))
    assert rc == 0, out


def test_loops_are_cut_and_each_folder_walked_once(tmp_path, capsys):
    root = tmp_path / "m"
    write(root / "a" / "x.safetensors", clean_file())
    write(root / "b" / "y.safetensors", clean_file())
    (root / "a" / "up").symlink_to("..")  # a link to an ancestor
    (root / "a" / "to_b").symlink_to("../b")  # a cycle: a -> b -> a
    (root / "b" / "to_a").symlink_to("../a")
    (root / "a" / "self").symlink_to(".")
    tree = walk(str(root), is_index=is_index_name)
    assert [f.path for f in tree.found] == [f"{root}/a/x.safetensors", f"{root}/b/y.safetensors"]
    messages = {os.path.relpath(p, root): f.message for p, f in tree.links}
    assert {p: f.slug for p, f in tree.links} == dict.fromkeys(
        (f"{root}/a/self", f"{root}/a/to_b", f"{root}/a/up", f"{root}/b/to_a"), "link-loop"
    )
    assert messages["a/up"] == f"links back to '{root}', a folder that holds it (a loop): not walked again"
    assert messages["a/self"].startswith(f"links back to '{root}/a'")
    rc, out, _ = _run(capsys, "check", str(root))
    assert rc == 0  # loops are warnings
    assert out.count("ST704 link-loop") == 4
    assert "2 files checked (strict): 2 valid, 0 invalid; 0 errors, 4 warnings" in out


def test_deep_trees_do_not_recurse(tmp_path):
    here = tmp_path / "m"
    for _ in range(300):
        here = here / "d"
    write(here / "model.safetensors", clean_file())
    tree = walk(str(tmp_path / "m"), is_index=is_index_name)
    assert [f.kind for f in tree.found] == ["safetensors"]


def test_only_the_top_git_folder_is_skipped(tmp_path, capsys):
    write(tmp_path / "m" / "model.safetensors", clean_file())
    write(tmp_path / "m" / ".git" / "objects" / "pack.pack", b"PACK")
    rc, out, _ = _run(capsys, "check", str(tmp_path / "m"))
    assert rc == 0
    assert "other file" not in out
    # Any other version-control folder is judged like anything else.
    write(tmp_path / "m" / ".hg" / "hgrc", b"[hooks]\n")
    write(tmp_path / "m" / "sub" / ".git" / "hooks" / "post-checkout.py", b"import os\n")
    write(tmp_path / "m" / ".svn" / "entries", b"12\n")
    tree = walk(str(tmp_path / "m"), is_index=is_index_name)
    rel = sorted(os.path.relpath(f.path, tmp_path / "m") for f in tree.found)
    assert rel == [".hg/hgrc", ".svn/entries", "model.safetensors", "sub/.git/hooks/post-checkout.py"]
    assert tree.skipped == [str(tmp_path / "m" / ".git")]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("command", ["check", "scan", "inspect"])
def test_special_files_and_broken_links_are_unreadable_and_never_opened(tmp_path, command):
    root = tmp_path / "m"
    write(root / "model.safetensors", clean_file())
    os.mkfifo(root / "pipe")  # no writer: an open for reading without O_NONBLOCK would hang
    os.mkfifo(root / "fifo.safetensors")
    (root / "gone.safetensors").symlink_to(tmp_path / "nowhere")
    (root / "loop").symlink_to("loop")
    argv = [command, str(root)] if command != "scan" else [command, "--no-config", "--progress", "never", str(root)]
    done = subprocess.run(
        [sys.executable, "-m", "validator", *argv], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2, done.stdout + done.stderr
    err = done.stderr
    assert f"{root}/pipe: not a regular file (a FIFO)" in err
    assert f"{root}/fifo.safetensors: not a regular file (a FIFO)" in err
    assert f"{root}/gone.safetensors: a broken symlink (to '{tmp_path}/nowhere')" in err
    assert f"{root}/loop: " in err


# --- hub cache -------------------------------------------------------------------------


def _snapshot(root: Path) -> Path:
    return root / "models--acme--tiny" / "snapshots" / ("a" * 40)


def test_hf_cache_follows_a_symlinked_folder_in_a_snapshot(tmp_path, capsys):
    fake_hf_cache(tmp_path, corrupt=False)
    repo = tmp_path / "models--acme--tiny"
    bad = INVALID
    write(repo / "blobs" / sha256(bad), bad)
    inner = repo / "extra" / "inner"
    inner.mkdir(parents=True)
    (inner / "model.safetensors").symlink_to(f"../../blobs/{sha256(bad)}")
    (_snapshot(tmp_path) / "sub").symlink_to("../../extra")  # a folder link, inside the repository
    rc, doc = _scan(capsys, "--hf-cache", str(tmp_path))
    assert rc == 1
    found = {f["path"]: [x["rule"] for x in f["findings"]] for f in doc["files"]}
    assert found[str(_snapshot(tmp_path) / "sub" / "inner" / "model.safetensors")] == ["file-too-small"]
    assert not any("link-leaves-root" in rules for rules in found.values())


def test_hf_cache_snapshot_link_out_of_the_cache_is_not_a_verified_blob(tmp_path, capsys):
    fake_hf_cache(tmp_path / "hub", corrupt=False)
    outside = build([("x", "F32", [1], f32(1.0))])
    evil = write(tmp_path / "evil" / sha256(outside), outside)  # named by its own sha256
    (_snapshot(tmp_path / "hub") / "evil.safetensors").symlink_to(evil)
    rc, doc = _scan(capsys, "--hf-cache", str(tmp_path / "hub"))
    assert rc == 1
    found = {f["path"]: (f["kind"], [x["rule"] for x in f["findings"]]) for f in doc["files"]}
    name = str(_snapshot(tmp_path / "hub") / "evil.safetensors")
    # One entry per path (issue 28): the link's finding joins the file's own
    # entry, whose name is no digest.
    assert found[name] == ("safetensors", ["link-leaves-root", "checksum-missing"])
    assert [f["path"] for f in doc["files"]].count(name) == 1
    assert [f for f in doc["files"] if f["kind"] == "link"] == []
    assert doc["summary"]["invalid"] == 1


def test_a_hub_snapshot_folder_checked_directly_is_not_flagged(tmp_path, capsys):
    fake_hf_cache(tmp_path, corrupt=False)
    rc, out, _ = _run(capsys, "check", str(_snapshot(tmp_path)))
    assert rc == 0, out
    assert "ST703" not in out
    assert "1 other file: 1 JSON" in out
