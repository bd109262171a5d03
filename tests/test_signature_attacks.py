# Strategy: the attacks of issue 38 that made `stcheck scan` say "signature
# verified" (or say nothing) for bytes the publisher never signed, each fed
# to the real CLI with a folder signed by model_signing 1.1.1 itself
# (tests/sign_fixtures.py), each asserting the exact finding or refusal.
# The moving-branch hub cases are in tests/test_signature_moving_hub.py.
from __future__ import annotations

import io
import json

import pytest

pytest.importorskip("model_signing")

from tests.sign_fixtures import model_folder, scan, sign_with_key
from validator.cli.main import main

# --- names that begin with two dots are inside the folder ---------------------------


@pytest.mark.parametrize("name", ["..evil.safetensors", "..d/model.safetensors", "...", "..\u00e9"])
def test_a_name_beginning_with_two_dots_is_an_unsigned_file(capsys, signed, keys, name):
    added = signed / name
    added.parent.mkdir(exist_ok=True)
    added.write_bytes((signed / "model.safetensors").read_bytes())
    code, lines, err = scan(capsys, str(signed), "--public-key", str(keys.public))
    assert code == 1, err
    assert f"{signed}/{name}: ST804 unsigned-file {signed}/model.sig does not cover this file" in "\n".join(lines)
    assert "signature verified" in err  # the signature itself verifies ...
    assert "1 finding against it above" in err  # ... and the added file is held against it


def test_a_signature_named_with_two_dots_inside_the_folder_is_its_own(capsys, tmp_path, keys):
    folder = model_folder(tmp_path / "model")
    sign_with_key(folder, keys, signature=folder / "..model.sig")
    code, lines, err = scan(
        capsys, str(folder), "--public-key", str(keys.public), "--signature", str(folder / "..model.sig")
    )
    assert code == 0, (lines, err)
    assert "3 signed files match" in err


# --- standard input cannot carry a signature ----------------------------------------------


@pytest.mark.parametrize("signature", ["present", "absent"])
def test_signature_options_with_standard_input_are_refused(capsys, monkeypatch, signed, keys, signature):
    sig = signed / "model.sig" if signature == "present" else signed / "no-such.sig"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO((signed / "model.safetensors").read_bytes())))
    code, lines, err = scan(capsys, "-", "--public-key", str(keys.public), "--signature", str(sig))
    assert code == 2
    assert lines == []
    assert err.strip().splitlines() == [
        "stcheck scan: -: standard input carries no model signature; give the signed folder or file"
    ]


# --- a single-file signature of an index covers the index alone ---------------------------------


def sign_file(path, sig, keys, *, shard_size=None):
    from model_signing import hashing, signing

    config = hashing.Config()
    if shard_size is not None:
        config.use_shard_serialization(shard_size=shard_size)
    signing.Config().use_elliptic_key_signer(private_key=keys.private).set_hashing_config(config).sign(path, sig)
    return sig


@pytest.fixture
def checkpoint(tmp_path):
    import numpy as np

    import validator

    folder = tmp_path / "ckpt"
    folder.mkdir()
    weight_map = {}
    for i in range(2):
        name = f"model-{i + 1:05d}-of-00002.safetensors"
        validator.save({f"w{i}": np.full(4, i, np.float32)}, folder / name)
        weight_map[f"w{i}"] = name
    index = folder / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 32}, "weight_map": weight_map}))
    return index


@pytest.mark.parametrize("change", ["untouched", "shard replaced"])
def test_a_signature_of_an_index_alone_does_not_cover_its_shards(capsys, tmp_path, keys, checkpoint, change):
    sig = sign_file(checkpoint, tmp_path / "index.sig", keys)
    shard = checkpoint.parent / "model-00002-of-00002.safetensors"
    if change == "shard replaced":
        import numpy as np

        import validator

        validator.save({"w1": np.full(4, 7, np.float32)}, shard)
    code, lines, err = scan(capsys, str(checkpoint), "--public-key", str(keys.public), "--signature", str(sig))
    assert code == 1, err
    unsigned = sorted(line.split(":", 1)[0] for line in lines if " ST804 unsigned-file " in line)
    assert unsigned == [str(checkpoint.parent / f"model-0000{i}-of-00002.safetensors") for i in (1, 2)]
    assert (
        f"{shard}: ST804 unsigned-file read through {checkpoint}, but {sig} signs {checkpoint} alone: "
        "a single-file signature covers no other file (sign the folder)"
    ) in lines
    assert "1 signed file matches; 2 not covered" in err
    assert "signature verified" in err  # the index itself is what was signed ...
    code, doc = scan_json(capsys, str(checkpoint), "--public-key", str(keys.public), "--signature", str(sig))
    (record,) = doc["signatures"]
    assert record["verified"] is False  # ... but not all that was read
    assert record["matched"] == [str(checkpoint)]
    assert record["files_not_covered"] == 2


def scan_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["scan", "--no-config", "--progress", "never", "-j", "1", "--format", "json", *argv])
    return code, json.loads(capsys.readouterr().out)


def test_a_single_file_signed_by_shards_verifies(capsys, tmp_path, keys):
    folder = model_folder(tmp_path / "model", weights=5000)  # about 20 kB: five shards of 4096 bytes
    sig = sign_file(folder / "model.safetensors", tmp_path / "file.sig", keys, shard_size=4096)
    code, lines, err = scan(
        capsys, str(folder / "model.safetensors"), "--public-key", str(keys.public), "--signature", str(sig)
    )
    assert code == 0, (lines, err)
    assert "(sha256-sharded-4096); 1 signed file matches" in err


# --- what model_signing's verify refuses, stcheck does not call verified ------------------------


def test_a_link_in_a_folder_signed_without_allow_symlinks(capsys, tmp_path, signed, keys):
    outside = tmp_path / "config-copy.json"
    outside.write_bytes((signed / "config.json").read_bytes())
    (signed / "config.json").unlink()
    (signed / "config.json").symlink_to(outside)  # the same bytes, through a link
    code, lines, _ = scan(capsys, str(signed), "--public-key", str(keys.public))
    assert code == 1
    assert (
        f"{signed}/config.json: ST804 unsigned-file a symbolic link, and the signature was made without "
        f"allow_symlinks: {signed}/model.sig covers no link"
    ) in lines


def test_a_link_below_a_git_folder_of_a_folder_signed_without_allow_symlinks(capsys, signed, keys):
    (signed / ".git").mkdir()
    (signed / ".git" / "loop").symlink_to(signed)
    code, lines, _ = scan(capsys, str(signed), "--public-key", str(keys.public))
    assert code == 1
    assert [line.split(" ", 2)[:2] for line in lines] == [[f"{signed}/.git/loop:", "ST804"]]


def test_a_signed_file_under_an_ignore_path_does_not_verify(capsys, signed, keys):
    code, lines, _ = scan(capsys, str(signed), "--public-key", str(keys.public), "--ignore-path", "config.json")
    assert code == 1
    assert lines == [
        (
            f"{signed}/config.json: ST803 signed-file-missing {signed}/model.sig signs this file, but the ignore "
            "path config.json leaves it out, and a signed file cannot be left out: drop that ignore path"
        )
    ]


def test_the_record_says_what_was_left_out_and_why(capsys, tmp_path, keys):
    folder = model_folder(tmp_path / "model")
    (folder / "notes.txt").write_text("mine\n")
    sign_with_key(folder, keys, ignore=("notes.txt",))
    (folder / "local.txt").write_text("added\n")
    code, doc = scan_json(capsys, str(folder), "--public-key", str(keys.public), "--ignore-path", "local.txt")
    assert code == 0
    (record,) = doc["signatures"]
    assert record["verified"] is True
    assert record["left_out"] == [
        {"path": f"{folder}/.gitattributes", "why": "a git path, which model_signing leaves out"},
        {"path": f"{folder}/local.txt", "why": "an ignore path given (--ignore-path, the policy's ignore_paths)"},
        {"path": f"{folder}/notes.txt", "why": "the signature's own ignore_paths"},
    ]
    assert record["not_covered"] == []
