# Strategy: the attacks of issue 38 that made `stcheck scan` say "signature
# verified" (or say nothing) for bytes the publisher never signed, each fed
# to the real CLI with a folder signed by model_signing 1.1.1 itself
# (tests/sign_fixtures.py), each asserting the exact finding or refusal.
# The moving-branch hub cases are in tests/test_signature_moving_hub.py.
from __future__ import annotations

import io

import pytest

pytest.importorskip("model_signing")

from tests.sign_fixtures import ec_keys, model_folder, sign_with_key
from validator.cli.main import main


def scan(capsys, *argv: str) -> tuple[int, list[str], str]:
    code = main(["scan", "--no-config", "--progress", "never", "-j", "1", *argv])
    captured = capsys.readouterr()
    return code, [line for line in captured.out.splitlines() if ": ST" in line], captured.err


@pytest.fixture
def keys(tmp_path):
    return ec_keys(tmp_path)


@pytest.fixture
def signed(tmp_path, keys):
    folder = model_folder(tmp_path / "model")
    sign_with_key(folder, keys)
    return folder


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
