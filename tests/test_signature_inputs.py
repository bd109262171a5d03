# Strategy: every file stcheck reads as input to its own decisions (issue
# 38): a checksum list, a policy, a key, a certificate chain, a trust
# configuration, a signature.  Each is given as a link to /dev/zero (an
# endless file), a FIFO (no writer: a read would block for ever) and a
# directory; each must be refused at once with one line and exit 2 (a
# signature, which is judged, with ST801), never read on or waited for.
# The reader is validator._inputs.read_input, tested at its bound here too.
from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

pytest.importorskip("model_signing")

from tests.sign_fixtures import SCAN
from validator._errors import SourceError
from validator._inputs import read_input
from validator.cli.main import main

if TYPE_CHECKING:
    from pathlib import Path


def not_a_file(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"input-{kind}"
    if kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    return path


KINDS = ["dev-zero", "fifo", "directory"]


def one_line_refusal(capsys, argv: list[str]) -> str:
    code = main([*SCAN, *argv])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert ": ST" not in out
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("kind", KINDS)
def test_a_checksum_list_that_is_not_a_regular_file(capsys, tmp_path, signed, kind):
    bad = not_a_file(tmp_path, kind)
    line = one_line_refusal(capsys, [str(signed / "model.safetensors"), "--checksums", str(bad)])
    assert line == f"stcheck scan: {bad}: not a regular file: a checksum list is read from a file"


@pytest.mark.parametrize("kind", KINDS)
def test_a_policy_that_is_not_a_regular_file(capsys, tmp_path, signed, kind):
    bad = not_a_file(tmp_path, kind)
    code = main(["scan", "--progress", "never", "-j", "1", str(signed / "model.safetensors"), "--policy", str(bad)])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.strip().splitlines() == [f"stcheck scan: {bad}: not a regular file: a policy is read from a file"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("option", "refusal"),
    [
        ("--public-key", "cannot use it as an EC public key (PEM)"),
        ("--certificate-chain", "cannot read it as PEM certificates"),
    ],
    ids=["key", "certificate"],
)
def test_a_key_or_certificate_that_is_not_a_regular_file(capsys, tmp_path, signed, kind, option, refusal):  # noqa: PLR0917 - fixtures and parameters
    bad = not_a_file(tmp_path, kind)
    line = one_line_refusal(capsys, [str(signed), option, str(bad)])
    assert (
        line
        == f"stcheck scan: {option} {bad}: {refusal}: not a regular file: a key, certificate or trust configuration is read from a file"
    )


@pytest.mark.parametrize("kind", KINDS)
def test_a_trust_configuration_that_is_not_a_regular_file(capsys, tmp_path, signed, kind):
    bad = not_a_file(tmp_path, kind)
    argv = [
        str(signed),
        "--identity",
        "me@example.com",
        "--issuer",
        "https://issuer.example",
        "--trust-config",
        str(bad),
    ]
    line = one_line_refusal(capsys, argv)
    assert line.startswith(
        f"stcheck scan: --trust-config {bad}: not a Sigstore client trust configuration: not a regular file"
    )


@pytest.mark.parametrize("kind", KINDS)
def test_a_signature_that_is_not_a_regular_file_is_invalid(capsys, tmp_path, signed, keys, kind):
    bad = not_a_file(tmp_path, kind)
    code = main([*SCAN, str(signed), "--public-key", str(keys.public), "--signature", str(bad)])
    out, _ = capsys.readouterr()
    assert code == 1
    assert (
        f"{bad}: ST801 signature-invalid does not verify with public key {keys.public}: "
        "the signature is not a regular file"
    ) in out


def test_an_input_is_read_to_its_bound_and_no_further(tmp_path):
    path = tmp_path / "list"
    path.write_bytes(b"x" * 100)
    assert read_input(str(path), "list", 100) == b"x" * 100
    with pytest.raises(SourceError, match=r"list: 100 bytes, more than the 99 a list may have$"):
        read_input(str(path), "list", 99)
