# Strategy: the cases the OMS conformance suite runs against a verifier,
# made here offline with model_signing 1.1.1 itself (tests/sign_fixtures.py):
# a folder signed with a path left out and no ignore_paths in the signature
# (as the Go client and model_signing before 1.1 sign), verified with
# --ignore-path or the policy's ignore_paths; a single-file model, signed as
# the reference signs a file (its one resource named "."), verified as a file
# and as the folder that holds it; and the signature's record in the JSON,
# SARIF and JUnit reports, and in the library's vet().to_json().
from __future__ import annotations

import base64
import hashlib
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("model_signing")
pytest.importorskip("OpenSSL")

from tests.sign_fixtures import certificates, ec_keys, model_folder, scan, sign_with_certificate, sign_with_key
from validator.cli.main import main

ROOT = Path(__file__).resolve().parent.parent


def scan_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["scan", "--no-config", "--progress", "never", "-j", "1", "--format", "json", *argv])
    return code, json.loads(capsys.readouterr().out)


def _sign_leaving_out(folder: Path, keys, *left_out: str) -> Path:
    """Sign ``folder`` without ``left_out`` and with no ignore_paths in the
    signature: what the Go client and model_signing before 1.1 wrote."""
    from model_signing import manifest

    from tests.test_signature import _sign_manifest

    names = sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and not any(p.relative_to(folder).as_posix().startswith(x) for x in (*left_out, "model.sig"))
    )
    resources = [(n, "sha256", hashlib.sha256((folder / n).read_bytes()).hexdigest()) for n in names]
    _sign_manifest(folder, keys, manifest._FileSerialization("sha256"), resources)
    return folder / "model.sig"


@pytest.fixture
def go_signed(tmp_path, keys):
    """The conformance suite's `simple` model: signme-1, signme-2 and ignore-me, signed without ignore-me."""
    folder = model_folder(tmp_path / "simple")
    (folder / ".gitattributes").unlink()
    (folder / "signme-1").write_bytes(b"signme-1\n")
    (folder / "signme-2").write_bytes(b"signme-2\n")
    (folder / "ignore-me").write_bytes(b"ignore-me\n")
    (folder / "extras").mkdir()
    (folder / "extras" / "notes.txt").write_bytes(b"left out with its folder\n")
    _sign_leaving_out(folder, keys, "ignore-me", "extras")
    return folder


# --- 1. --ignore-path and the policy's ignore_paths --------------------------------------


def test_a_file_the_signer_left_out_is_unsigned_without_ignore_path(capsys, go_signed, keys):
    code, lines, _ = scan(capsys, str(go_signed), "--public-key", str(keys.public))
    assert code == 1
    assert sorted(line.split(" ", 2)[:2] for line in lines) == [
        [f"{go_signed}/extras/notes.txt:", "ST804"],
        [f"{go_signed}/ignore-me:", "ST804"],
    ]


@pytest.mark.parametrize("spelling", ["relative", "absolute", "trailing-slash"])
def test_ignore_path_leaves_files_and_folders_out(capsys, go_signed, keys, spelling):
    paths = {
        "relative": ["ignore-me", "extras"],
        "absolute": [str(go_signed / "ignore-me"), str(go_signed / "extras")],
        "trailing-slash": ["ignore-me", "extras/"],
    }[spelling]
    argv = [a for p in paths for a in ("--ignore-path", p)]
    code, lines, err = scan(capsys, str(go_signed), "--public-key", str(keys.public), *argv)
    assert code == 0, lines
    assert "5 signed files match; 2 left out (extras/notes.txt, ignore-me)" in err


def test_ignore_path_does_not_cover_a_neighbour(capsys, go_signed, keys):
    (go_signed / "ignore-me-too").write_bytes(b"x")
    code, lines, _ = scan(
        capsys,
        str(go_signed),
        "--public-key",
        str(keys.public),
        "--ignore-path",
        "ignore-me",
        "--ignore-path",
        "extras",
    )
    assert code == 1
    assert [line.split(" ", 2)[:2] for line in lines] == [[f"{go_signed}/ignore-me-too:", "ST804"]]


def test_a_signed_file_under_an_ignore_path_is_still_compared(capsys, go_signed, keys):
    (go_signed / "signme-1").write_bytes(b"changed\n")
    code, lines, _ = scan(
        capsys, str(go_signed), "--public-key", str(keys.public), "--ignore-path", "signme-1", "--ignore-path", "."
    )
    assert code == 2  # "." names the whole folder: a usage error
    code, lines, _ = scan(
        capsys,
        str(go_signed),
        "--public-key",
        str(keys.public),
        "--ignore-path",
        "signme-1",
        "--ignore-path",
        "ignore-me",
        "--ignore-path",
        "extras",
    )
    assert code == 1
    assert [line.split(" ", 2)[:2] for line in lines] == [[f"{go_signed}/signme-1:", "ST802"]]


@pytest.mark.parametrize("bad", [".", "..", "../outside", "a/../.."])
def test_an_ignore_path_outside_the_folder_is_a_usage_error(capsys, go_signed, keys, bad):
    code, _, err = scan(capsys, str(go_signed), "--public-key", str(keys.public), "--ignore-path", bad)
    assert code == 2
    assert f"--ignore-path {bad}: give a path inside the signed folder" in err


def test_ignore_path_without_a_key_is_a_usage_error(capsys, go_signed):
    code, _, err = scan(capsys, str(go_signed), "--ignore-path", "ignore-me")
    assert code == 2
    assert "--ignore-path needs --public-key" in err


def test_the_policy_ignore_paths(capsys, tmp_path, go_signed, keys):
    policy = tmp_path / "policy.toml"
    policy.write_text('ignore_paths = ["ignore-me", "extras"]\n')
    code = main(
        [
            "scan",
            "--progress",
            "never",
            "-j",
            "1",
            "--policy",
            str(policy),
            str(go_signed),
            "--public-key",
            str(keys.public),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, out
    assert "2 left out" in err
    policy.write_text("ignore_paths = 3\n")
    code = main(
        ["scan", "--progress", "never", "--policy", str(policy), str(go_signed), "--public-key", str(keys.public)]
    )
    assert code == 2
    assert "ignore_paths: expected a list of paths" in capsys.readouterr().err


def test_the_pyproject_table_ignore_paths(capsys, tmp_path, go_signed, keys, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.stcheck]\nignore_paths = ["ignore-me", "extras/"]\n')
    monkeypatch.chdir(project)
    code = main(["scan", "--progress", "never", "-j", "1", str(go_signed), "--public-key", str(keys.public)])
    assert code == 0, capsys.readouterr().out


def test_the_library_takes_ignore_paths(go_signed, keys):
    import validator

    options = validator.VetOptions(no_config=True, jobs=1, public_key=str(keys.public))
    assert validator.vet([str(go_signed)], options).exit_code == 1
    vetted = validator.vet([str(go_signed)], _replace(options, ignore_paths=("ignore-me", "extras")))
    assert vetted.exit_code == 0
    (record,) = vetted.to_json()["signatures"]
    assert record["files_ignored"] == 2
    assert record["ignored"] == [f"{go_signed}/extras/notes.txt", f"{go_signed}/ignore-me"]
    assert record["ignore_paths"] == ["ignore-me", "extras"]


def _replace(options, **kw):
    import dataclasses

    return dataclasses.replace(options, **kw)


# --- 2. single-file models ----------------------------------------------------------------


def _sign_file(path: Path, keys, sig: Path) -> Path:
    """Sign one file as the reference signs it: `model_signing sign` with the file as the model."""
    from model_signing import signing

    signing.Config().use_elliptic_key_signer(private_key=keys.private).sign(path, sig)
    return sig


@pytest.fixture
def single(tmp_path, keys):
    folder = model_folder(tmp_path / "single")
    for name in ("config.json", "tokenizer.json", ".gitattributes"):
        (folder / name).unlink()
    weights = folder / "model.safetensors"
    sig = _sign_file(weights, keys, tmp_path / "weights.sig")
    statement = json.loads(base64.b64decode(json.loads(sig.read_text())["dsseEnvelope"]["payload"]))
    assert [r["name"] for r in statement["predicate"]["resources"]] == ["."]  # the reference's single-file form
    return weights, sig


def test_a_single_file_model_verifies(capsys, single, keys):
    weights, sig = single
    from model_signing import verifying

    verifying.Config().use_elliptic_key_verifier(public_key=keys.public).verify(weights, sig)  # the reference agrees
    code, lines, err = scan(capsys, str(weights), "--public-key", str(keys.public), "--signature", str(sig))
    assert code == 0, lines
    assert f"{sig}: signature verified with public key {keys.public} (sha256); 1 signed file matches" in err


def test_a_changed_single_file_model(capsys, single, keys):
    weights, sig = single
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    code, lines, _ = scan(capsys, str(weights), "--public-key", str(keys.public), "--signature", str(sig))
    assert code == 1
    assert [line.split(" ", 2)[:2] for line in lines] == [[f"{weights}:", "ST802"]]


def test_a_folder_holding_a_single_file_signature(capsys, single, keys):
    weights, sig = single
    folder = weights.parent
    sig.rename(folder / "model.sig")
    code, lines, err = scan(capsys, str(folder), "--public-key", str(keys.public))
    assert code == 0, lines
    assert "1 signed file matches" in err
    (folder / "config.json").write_text("{}\n")  # not covered by a signature over one file
    code, lines, _ = scan(capsys, str(folder), "--public-key", str(keys.public))
    assert code == 1
    assert [line.split(" ", 2)[:2] for line in lines] == [[f"{folder}/config.json:", "ST804"]]


def test_a_single_file_signature_over_another_file_name(capsys, single, keys):
    weights, sig = single
    folder = weights.parent
    weights.rename(folder / "renamed.safetensors")
    sig.rename(folder / "model.sig")
    code, lines, _ = scan(capsys, str(folder), "--public-key", str(keys.public))
    assert code == 1
    assert sorted(line.split(" ", 2)[:2] for line in lines) == [
        [f"{folder}/model.safetensors:", "ST803"],
        [f"{folder}/renamed.safetensors:", "ST804"],
    ]


def test_a_folder_signature_given_for_a_single_file(capsys, tmp_path, keys):
    folder = model_folder(tmp_path / "model")
    sign_with_key(folder, keys)
    code, lines, _ = scan(
        capsys,
        str(folder / "model.safetensors"),
        "--public-key",
        str(keys.public),
        "--signature",
        str(folder / "model.sig"),
    )
    assert code == 1
    assert lines == [
        (
            f"{folder}/model.sig: ST805 signature-unsupported the signature verifies, but it signs a folder "
            "(3 files), not a single file: give the folder"
        )
    ]


def test_a_single_file_with_a_folder_is_one_signature_too_many(capsys, single, tmp_path, keys):
    weights, sig = single
    other = model_folder(tmp_path / "other")
    code, _, err = scan(capsys, str(weights), str(other), "--public-key", str(keys.public), "--signature", str(sig))
    assert code == 2
    assert "--signature names the signature of one model" in err


# --- 3. the signature's record ---------------------------------------------------------------


def _schema(name: str = "report.schema.json") -> dict:
    return json.loads((ROOT / "validator" / "schemas" / name).read_text())


def test_the_json_report_says_a_signature_verified(capsys, tmp_path, keys):
    import jsonschema
    from cryptography.hazmat.primitives import serialization

    folder = model_folder(tmp_path / "model")
    sign_with_key(folder, keys)
    code, doc = scan_json(capsys, str(folder), "--public-key", str(keys.public))
    assert code == 0
    jsonschema.Draft202012Validator(_schema()).validate(doc)
    public = serialization.load_pem_public_key(keys.public.read_bytes())
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    (record,) = doc["signatures"]
    assert record == {
        "path": f"{folder}/model.sig",
        "model": str(folder),
        "method": "oms",
        "kind": "key",
        "status": "verified",
        "verified": True,
        "signature_valid": True,
        "identity": None,
        "issuer": None,
        "fingerprint": "sha256:" + hashlib.sha256(der).hexdigest(),
        "digest": "sha256",
        "files_signed": 3,
        "files_compared": 3,
        "files_matched": 3,
        "files_ignored": 1,  # .gitattributes, a git path
        "ignored": [f"{folder}/.gitattributes"],
        "ignore_paths": [],
        "detail": f"verified with public key {keys.public}",
        # Exactly what was verified: the files matched, those left out and why, none read uncovered.
        "commit": None,
        "matched": [f"{folder}/config.json", f"{folder}/model.safetensors", f"{folder}/tokenizer.json"],
        "left_out": [{"path": f"{folder}/.gitattributes", "why": "a git path, which model_signing leaves out"}],
        "files_not_covered": 0,
        "not_covered": [],
    }
    entry = next(f for f in doc["files"] if f["path"] == f"{folder}/model.sig")
    assert entry["signature"] == record


def test_the_record_of_a_signature_that_does_not_verify(capsys, tmp_path, keys):
    import jsonschema

    folder = model_folder(tmp_path / "model")
    sign_with_key(folder, keys)
    other = ec_keys(tmp_path, "other")
    code, doc = scan_json(capsys, str(folder), "--public-key", str(other.public))
    assert code == 1
    jsonschema.Draft202012Validator(_schema()).validate(doc)
    (record,) = doc["signatures"]
    assert (record["status"], record["verified"], record["signature_valid"], record["fingerprint"]) == (
        "invalid",
        False,
        False,
        None,
    )
    (folder / "config.json").write_text("{}")
    code, doc = scan_json(capsys, str(folder), "--public-key", str(keys.public))
    (record,) = doc["signatures"]
    assert (record["status"], record["verified"], record["signature_valid"]) == ("mismatch", False, True)
    assert (record["files_compared"], record["files_matched"]) == (3, 2)
    code, doc = scan_json(capsys, str(folder))  # no key: found, not verified
    jsonschema.Draft202012Validator(_schema()).validate(doc)
    (record,) = doc["signatures"]
    assert (record["status"], record["method"], record["kind"], record["verified"]) == (
        "not-verified",
        None,
        None,
        False,
    )


def test_the_record_of_a_certificate(capsys, tmp_path):
    from cryptography import x509

    folder = model_folder(tmp_path / "model")
    certs = certificates(tmp_path, "good")
    sign_with_certificate(folder, certs)
    code, doc = scan_json(capsys, str(folder), "--certificate-chain", str(certs.ca))
    assert code == 0
    (record,) = doc["signatures"]
    leaf = x509.load_pem_x509_certificate(certs.leaf.read_bytes())
    from cryptography.hazmat.primitives import hashes

    assert record["kind"] == "certificate"
    assert record["identity"] == "CN=good signer"
    assert record["issuer"] == "CN=good CA"
    assert record["fingerprint"] == "sha256:" + leaf.fingerprint(hashes.SHA256()).hex()


def test_a_single_file_record_and_an_outside_signature(capsys, single, keys):
    import jsonschema

    weights, sig = single
    code, doc = scan_json(capsys, str(weights), "--public-key", str(keys.public), "--signature", str(sig))
    assert code == 0
    jsonschema.Draft202012Validator(_schema()).validate(doc)
    (record,) = doc["signatures"]
    assert (record["path"], record["model"], record["verified"], record["files_compared"]) == (
        str(sig),
        str(weights),
        True,
        1,
    )
    entry = next(f for f in doc["files"] if f["path"] == str(sig))
    assert entry["file_kind"] == "model signature"


def test_the_library_json_is_the_commands(capsys, tmp_path, keys):
    import validator

    folder = model_folder(tmp_path / "model")
    sign_with_key(folder, keys)
    _, doc = scan_json(capsys, str(folder), "--public-key", str(keys.public))
    vetted = validator.vet([str(folder)], validator.VetOptions(no_config=True, jobs=1, public_key=str(keys.public)))
    mine = vetted.to_json()
    assert mine["signatures"] == doc["signatures"]
    assert mine["signatures"][0]["verified"] is True


def test_the_sarif_and_junit_reports_carry_the_record(capsys, tmp_path, keys):
    import jsonschema

    folder = model_folder(tmp_path / "model")
    sign_with_key(folder, keys)
    sarif, junit = tmp_path / "out.sarif", tmp_path / "out.xml"
    code = main(
        [
            "scan",
            "--no-config",
            "-j",
            "1",
            "--sarif",
            str(sarif),
            "--junit",
            str(junit),
            str(folder),
            "--public-key",
            str(keys.public),
        ]
    )
    capsys.readouterr()
    assert code == 0
    report = json.loads(sarif.read_text())
    sarif_schema = json.loads((ROOT / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft4Validator(sarif_schema).validate(report)
    (record,) = report["runs"][0]["properties"]["signatures"]
    assert (record["verified"], record["method"], record["kind"]) == (True, "oms", "key")
    assert record["fingerprint"].startswith("sha256:")
    root = ET.parse(junit).getroot()
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["signature"].startswith(f"{folder}/model.sig: verified (oms, key sha256:")
    assert props["signature"].endswith("3 of 3 signed files match, 1 left out")


# --- 6. the conformance suite's adapter ---------------------------------------------------------


def test_the_conformance_adapter_verifies_as_the_protocol_asks(capsys, tmp_path, go_signed, keys):
    from tests.oms_conformance.verify_model_adapter import main as adapter

    def verify(*extra: str) -> int:
        argv = ["verify-model", "--method", "key", "--model-path", str(go_signed), "--public-key", str(keys.public)]
        code = adapter([*argv, "--bundle", str(go_signed / "model.sig"), *extra])
        capsys.readouterr()
        return code

    assert verify() == 1  # ignore-me and extras/ are not signed
    ignore = ["--ignore-paths", str(go_signed / "ignore-me"), "--ignore-paths", str(go_signed / "extras")]
    assert verify(*ignore) == 0
    (go_signed / "added.bin").write_bytes(b"added")
    assert verify(*ignore) == 1
    assert verify(*ignore, "--ignore-unsigned-files") == 0
    (go_signed / "signme-1").write_bytes(b"changed")
    assert verify(*ignore, "--ignore-unsigned-files") == 1
    # A single-file model, signed by the adapter (the reference signer) and verified by stcheck.
    single = tmp_path / "one.bin"
    single.write_bytes(b"weights")
    bundle = tmp_path / "one.sig"
    argv = ["--method", "key", "--model-path", str(single)]
    assert adapter(["sign-model", *argv, "--output-bundle", str(bundle), "--private-key", str(keys.private)]) == 0
    assert adapter(["verify-model", *argv, "--bundle", str(bundle), "--public-key", str(keys.public)]) == 0
    single.write_bytes(b"weights, changed")
    assert adapter(["verify-model", *argv, "--bundle", str(bundle), "--public-key", str(keys.public)]) == 1
