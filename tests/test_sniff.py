# Strategy: files that are not safetensors files at all, made by the tools
# that make them (torch.save, pickle, numpy.save, zipfile, gzip) or written
# out as they appear on disk (Git LFS pointers, error pages).  Each keeps the
# reference's verdict and error class (the prefix finding comes first) and
# gets a second finding that names the format and says what to do.  The
# prefix message never quotes the foreign bytes as a number.
from __future__ import annotations

import gzip
import pickle
import zipfile
from typing import TYPE_CHECKING

import pytest

import validator
from validator._sniff import SNIFF_LEN, identify, pickle_protocol
from validator.cli.main import main

if TYPE_CHECKING:
    from pathlib import Path


def _lfs() -> bytes:
    return b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"ab" * 32 + b"\nsize 123456789\n"


def _torch_zip(path: Path) -> None:
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.zeros(3)}, path)


def _torch_legacy(path: Path) -> None:
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.zeros(3)}, path, _use_new_zipfile_serialization=False)


def _npy(path: Path) -> None:
    np = pytest.importorskip("numpy")
    with path.open("wb") as f:
        np.save(f, np.zeros(3))


def _npz(path: Path) -> None:
    np = pytest.importorskip("numpy")
    with path.open("wb") as f:
        np.savez(f, a=np.zeros(3))


def _bytes(data: bytes):
    return lambda path: path.write_bytes(data)


def _zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("readme.txt", "hello")


# (id, maker, slug, words the message must hold)
CASES = [
    ("torch-zip", _torch_zip, "file-is-pytorch-zip", ("PyTorch checkpoint", "torch.load")),
    ("torch-legacy", _torch_legacy, "file-is-pickle", ("legacy PyTorch checkpoint", "arbitrary code")),
    *[
        (f"pickle-{p}", _bytes(pickle.dumps({"w": [1.0, 2.0]}, protocol=p)), "file-is-pickle", ("pickle", "torch.load"))
        for p in range(6)
    ],
    ("git-lfs", _bytes(_lfs()), "file-is-git-lfs-pointer", ("Git LFS pointer", "git lfs pull", "123,456,789 bytes")),
    (
        "html",
        _bytes(b"<!DOCTYPE html>\n<html><head><title>404</title></head><body>gone</body></html>\n"),
        "file-is-html",
        ("HTML page", "download it again"),
    ),
    ("html-bom", _bytes(b"\xef\xbb\xbf\n  <html><body>denied</body></html>"), "file-is-html", ("HTML page",)),
    (
        "xml-error",
        _bytes(b'<?xml version="1.0"?>\n<Error><Code>AccessDenied</Code></Error>'),
        "file-is-xml",
        ("XML error response",),
    ),
    ("json", _bytes(b'{"error": "Repository not found"}'), "file-is-json", ("JSON document", "download it again")),
    (
        "json-index",
        _bytes(b'{\n "metadata": {"total_size": 8},\n "weight_map": {"w": "a.safetensors"}\n}'),
        "file-is-json",
        ("JSON document", "not a safetensors file", "index", "validate_index"),
    ),
    ("gguf", _bytes(b"GGUF\x03\x00\x00\x00" + bytes(16)), "file-is-gguf", ("GGUF", "version 3")),
    ("npy", _npy, "file-is-numpy", (".npy", "allow_pickle=False")),
    ("npz", _npz, "file-is-numpy", (".npz", "allow_pickle=False")),
    ("hdf5", _bytes(b"\x89HDF\r\n\x1a\n" + bytes(88)), "file-is-hdf5", ("HDF5", "h5py")),
    ("tflite", _bytes(b"\x1c\x00\x00\x00TFL3" + bytes(24)), "file-is-tflite", ("TensorFlow Lite",)),
    ("gzip", _bytes(gzip.compress(b"x" * 100, mtime=0)), "file-is-archive", ("gzip",)),
    ("xz", _bytes(b"\xfd7zXZ\x00" + bytes(26)), "file-is-archive", ("xz",)),
    ("zip", _zip, "file-is-zip", ("ZIP archive",)),
    ("elf", _bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(56)), "file-is-executable", ("ELF", "do not run it")),
    ("shebang", _bytes(b"#!/bin/sh\nrm -rf /\n"), "file-is-text", ("script", "do not run it")),
    ("passwd", _bytes(b"root:x:0:0:root:/root:/bin/bash\n"), "file-is-text", ("text file",)),
]


@pytest.mark.parametrize(("maker", "slug", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_foreign_format_is_named(tmp_path: Path, maker, slug: str, words: tuple[str, ...]) -> None:
    path = tmp_path / "model.safetensors"
    maker(path)
    data = path.read_bytes()
    for profile in ("strict", "reference"):
        report = validator.validate(path, profile=profile)
        assert not report.valid
        # One finding, the diagnosis (issue 20: no ST102 before it); the
        # reference class does not change, and the message says it.
        (second,) = report.findings
        assert report.reference_error in {"HeaderTooLarge", "InvalidHeaderLength"}
        assert report.reference_valid is False
        assert (second.slug, second.offset, second.severity) == (slug, 0, validator.Severity.ERROR)
        assert "not a safetensors file" in second.message or "not the file" in second.message
        assert f"safetensors 0.8.0 refuses it with {report.reference_error}" in second.message
        for word in words:
            assert word in second.message, (word, second.message)
        # The first 8 bytes are never echoed as a number.
        assert str(int.from_bytes(data[:8], "little")) not in second.message
    # The same answer from bytes, a stream and a path.
    assert [f.slug for f in validator.validate(data).findings] == [f.slug for f in report.findings]


def test_leak_of_passwd_bytes_as_a_number_is_gone(tmp_path: Path) -> None:
    # issue 15 s.2: a shard symlinked to /etc/passwd said "declared header length 3475222254926655346".
    path = tmp_path / "x.safetensors"
    path.write_bytes(b"root:x:0:0:root:/root:/bin/bash\n")
    text = " ".join(f.message for f in validator.validate(path).findings)
    assert "3475222254926655346" not in text
    assert "plain text" in validator.rule("file-is-text").title


def test_unrecognised_huge_prefix_gives_only_its_magnitude() -> None:
    blob = bytes(range(0x90, 0x98)) + bytes(8)
    report = validator.validate(blob, profile="reference")
    assert [f.slug for f in report.findings] == ["header-too-large"]
    assert str(int.from_bytes(blob[:8], "little")) not in report.findings[0].message
    assert "2^63 or more" in report.findings[0].message


def test_small_declared_length_is_still_quoted() -> None:
    # A length below 2^32 is a length, not another format's bytes.
    blob = (100_000_001).to_bytes(8, "little") + b"{}"
    assert "declared header length 100000001 exceeds" in validator.validate(blob).findings[0].message


def test_valid_file_is_never_sniffed() -> None:
    blob = b"\x08\x00\x00\x00\x00\x00\x00\x00{}      "
    assert validator.validate(blob).findings == ()


@pytest.mark.parametrize(
    "head",
    [
        b"hello world, this is text\n" * 3,  # text, but not a pickle: 'h' is not an opening opcode
        b"cat\nfoo\n",  # GLOBAL-like, too short to be a pickle
        b"\x80\x09\x95",  # protocol 9 does not exist
        bytes(64),
    ],
)
def test_pickle_detection_needs_structure(head: bytes) -> None:
    assert pickle_protocol(head) is None


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_a_legacy_torch_save_is_named_at_every_protocol(protocol: int) -> None:
    # torch.save(..., pickle_protocol=3, _use_new_zipfile_serialization=False) starts "\x80\x03" (issue 35).
    magic = (0x1950A86A20F9469CFC6C).to_bytes(10, "little")
    found = identify(bytes([0x80, protocol, 0x8A, 0x0A]) + magic + b"." + bytes(64), 4096)
    assert found is not None
    assert found.what.startswith("a legacy PyTorch checkpoint")


def test_sniff_reads_a_bounded_head(tmp_path: Path) -> None:
    # A large text file is identified from its first SNIFF_LEN bytes only.
    path = tmp_path / "big.safetensors"
    path.write_bytes(b"a" * (SNIFF_LEN * 4))
    found = identify(path.read_bytes()[:SNIFF_LEN], path.stat().st_size)
    assert found is not None
    assert found.slug == "file-is-text"


def test_check_cli_names_the_pickle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(pickle.dumps({"w": 1}, protocol=4))
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "ST111 file-is-pickle this is a Python pickle (protocol 4), not a safetensors file" in out
    assert "do not pass it to torch.load" in out


def test_check_on_an_index_file_is_not_only_st102(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 12: `stcheck check model.safetensors.index.json` said only
    # "ST102 header-too-large declared header length 2336927755350992246...".
    # Since issue 14 an index is checked as a checkpoint; a JSON index saved
    # under a .safetensors name is named for what it is.
    index = tmp_path / "model.safetensors.index.json"
    index.write_text('{\n  "metadata": {"total_size": 8},\n  "weight_map": {"w": "model-00001.safetensors"}\n}\n')
    assert main(["check", str(index)]) == 1
    out = capsys.readouterr().out
    assert "2336927755350992246" not in out
    assert "ST102" not in out
    assert "ST503 index-shard-missing shard 'model-00001.safetensors'" in out
    renamed = tmp_path / "model.safetensors"
    renamed.write_bytes(index.read_bytes())
    assert main(["check", str(renamed)]) == 1
    out = capsys.readouterr().out
    assert "2336927755350992246" not in out
    assert "ST118 file-is-json this is a JSON document, not a safetensors file" in out
    assert "sharded checkpoint's index" in out
    assert "validator.validate_index" in out
