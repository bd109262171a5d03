"""The library's errors name its own fields; `stcheck scan` words the same
errors with its flags, as it always has."""

from __future__ import annotations

import io
import sys

import pytest

import validator
from tests.scan_fixtures import clean_file
from validator.cli.main import main

# (VetOptions, paths, the library's message, the flags, the command's message)
CASES = {
    "chunk-size": (
        {"chunk_size": 1024},
        ["m.safetensors"],
        "chunk_size must be at least 4096",
        ["--chunk-size", "1024"],
        "--chunk-size must be at least 4096",
    ),
    "timeout": (
        {"timeout_per_file": -1.0},
        ["m.safetensors"],
        "timeout_per_file must be a positive number of seconds",
        ["--timeout-per-file", "-1"],
        "--timeout-per-file must be a positive number of seconds",
    ),
    "stdin-deep": (
        {"deep": True},
        ["-"],
        "- (standard input, once) is checked from its header only: deep and digests need a file",
        ["--deep"],
        "- (standard input, once) is checked from its header only: --deep and digests need a file",
    ),
    "nothing": ({}, [], "give at least one path, or hf_cache", [], "give at least one PATH, or --hf-cache"),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_library_names_its_fields_and_the_command_its_flags(tmp_path, capsys, monkeypatch, case):
    options, paths, library, flags, command = case
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.safetensors").write_bytes(clean_file())
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(clean_file())))
    with pytest.raises(validator.VetError) as raised:
        validator.vet(paths, validator.VetOptions(no_config=True, **options))
    assert str(raised.value) == library
    assert main(["scan", "--no-config", *flags, *paths]) == 2
    assert capsys.readouterr().err == f"stcheck scan: {command}\n"


def test_sha256_of_many_files(tmp_path, capsys):
    for name in ("a", "b"):
        (tmp_path / f"{name}.safetensors").write_bytes(clean_file())
    with pytest.raises(
        validator.VetError, match=r"^sha256 names the digest of one file, but 2 files were found; use checksums$"
    ):
        validator.vet([str(tmp_path)], validator.VetOptions(no_config=True, sha256="0" * 64))
    assert main(["scan", "--no-config", "--sha256", "0" * 64, str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == "stcheck scan: --sha256 names the digest of one file, but 2 files were found; use --checksums\n"
