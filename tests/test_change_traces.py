# The change traces of issue 36, each shown end to end in this one file:
#   - a new scheme (toy://): one row in validator.sources.schemes.SCHEMES
#     with its capabilities, one module (read_source, and signed_folder
#     because the row says it can be signed), one test;
#   - a new signature method ("toy"): one row in
#     validator.signing.base.METHODS, one module (Verifier), one test;
#   - a new output format: one row in validator.report.formats.OUTPUTS,
#     its writer, one test.
# This module plays each "one module": the rows point at it, and the tests
# add the rows, as a real change would add them to their tables.
from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
from importlib import resources
from pathlib import Path
from typing import IO, TYPE_CHECKING

import pytest
from jsonschema import Draft202012Validator

import validator
from tests.scan_fixtures import clean_file
from tests.sign_fixtures import ec_keys
from validator.cli.main import main
from validator.pipeline.vet import VetError, VetOptions, vet
from validator.report import formats
from validator.signing import base
from validator.signing.base import SignatureRejectedError, Signed, SigningSetupError
from validator.sources import schemes

if TYPE_CHECKING:
    from collections.abc import Sequence

    from validator.report.format_common import Context
    from validator.report.results import FileResult

NAME = __name__  # the rows name this module

# -- the toy signature method: an HMAC over the listed sha256 digests ----------------


def _mac(secret: bytes, files: dict[str, str]) -> str:
    return hmac.new(secret, json.dumps(files, sort_keys=True).encode(), hashlib.sha256).hexdigest()


def toy_signature(secret: bytes, files: dict[str, bytes]) -> bytes:
    digests = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    return json.dumps({"files": digests, "mac": _mac(secret, digests)}).encode()


class Verifier:
    """The toy method's verifier (validator.signing.base.SignatureVerifier)."""

    method = "toy"

    def __init__(self, keys: base.Keys) -> None:
        if keys.public_key is None:
            raise SigningSetupError("the toy method verifies with a key file")
        self.secret = Path(keys.public_key).read_bytes()

    def verify(self, signature: str) -> Signed:
        doc = json.loads(Path(signature).read_bytes())
        if not hmac.compare_digest(doc["mac"], _mac(self.secret, doc["files"])):
            raise SignatureRejectedError("the toy MAC does not match")
        resources = tuple(sorted((name, "sha256", digest) for name, digest in doc["files"].items()))
        return Signed({"method": "files", "hash_type": "sha256"}, resources, "toy model")


# -- the toy scheme: a repository held in memory -------------------------------------

STORE: dict[str, bytes] = {}  # repository path -> bytes
COMMIT = "c0ffee"
PREFIX = f"toy://acme/model@{COMMIT}/"
CALLS: list[str] = []


@dataclasses.dataclass(frozen=True)
class Entry:
    size: int
    sha256: str | None


def read_source(source: str, *, profile: str, network: object) -> tuple[list[validator.Report], list[object]]:
    CALLS.append(source)
    reports = [
        dataclasses.replace(validator.validate(data, profile=profile), path=PREFIX + name)
        for name, data in sorted(STORE.items())
        if name.endswith(".safetensors")
    ]
    return reports, []


@dataclasses.dataclass(frozen=True)
class ToyFolder:
    """The toy scheme's signed folder (validator.pipeline.signatures.RemoteFolder)."""

    source: str
    prefix: str = PREFIX
    commit: str | None = COMMIT
    folder: str = ""

    def files(self) -> dict[str, Entry]:
        # As the hub: a small text file's sha256 is not listed, so it is fetched.
        return {
            name: Entry(len(data), None if name.endswith(".json") else hashlib.sha256(data).hexdigest())
            for name, data in STORE.items()
        }

    def fetch(self, rels: Sequence[str], limit: int = 1 << 20) -> dict[str, bytes | None]:
        return {rel: STORE[rel] if len(STORE[rel]) <= limit else None for rel in rels}

    def pinned(self) -> str:
        return f"toy://acme/model@{COMMIT}"


def signed_folder(source: str, network: object, listed: object = None) -> ToyFolder:
    return ToyFolder(source)


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The toy scheme and method registered; the key file's path."""
    toy_row = schemes.Scheme("toy://", NAME, "remote", "an in-memory toy repository", signatures=NAME)
    plain_row = schemes.Scheme("plain://", NAME, "remote", "an in-memory toy file")  # cannot be signed nor downloaded
    monkeypatch.setattr(schemes, "SCHEMES", (*schemes.SCHEMES, toy_row, plain_row))
    monkeypatch.setitem(base.METHODS, "toy", NAME)
    key = tmp_path / "toy.key"
    key.write_bytes(b"toy secret")
    weights = clean_file()
    STORE.clear()
    STORE.update({"model.safetensors": weights, "config.json": b'{"model_type": "toy"}\n'})
    STORE["model.sig"] = toy_signature(b"toy secret", dict(STORE))
    CALLS.clear()
    return key


def _toy_options(key: Path, **kw: object) -> VetOptions:
    return VetOptions(no_config=True, public_key=str(key), signature_method="toy", **kw)  # type: ignore[arg-type]


def test_a_toy_scheme_is_signed_and_read_at_the_commit_listed(toy: Path) -> None:
    vetted = vet(["toy://acme/model"], _toy_options(toy))
    assert [f"toy://acme/model@{COMMIT}"] == CALLS  # read pinned to the commit whose signature was compared
    (record,) = [r.signature for r in vetted.results if r.signature is not None]
    assert (record["status"], record["method"], record["files_matched"]) == ("verified", "toy", 2)
    assert record["path"] == PREFIX + "model.sig"
    assert vetted.exit_code == 0
    assert any(n.startswith(f"{PREFIX}model.sig: signature verified with public key") for n in vetted.notes)
    schema = json.loads((resources.files("validator") / "schemas" / "report.schema.json").read_text("utf-8"))
    Draft202012Validator(schema).validate(vetted.to_json())  # a new method's record is a report's like any other


def test_a_toy_scheme_file_that_differs_from_its_signature_is_st802(toy: Path) -> None:
    STORE["config.json"] = b'{"model_type": "not toy"}\n'  # after signing
    vetted = vet(["toy://acme/model"], _toy_options(toy))
    found = {(r.path, i.finding.code, i.finding.slug) for r in vetted.results for i in r.items}
    assert (PREFIX + "config.json", "ST802", "signed-file-changed") in found
    assert vetted.exit_code == 1


def test_a_scheme_whose_row_cannot_sign_is_refused_in_each_vocabulary(toy: Path, capsys) -> None:
    with pytest.raises(VetError, match=r"plain://x: a plain:// address carries no model signature; give a local"):
        vet(["plain://x"], _toy_options(toy))
    pem = ec_keys(toy.parent).public  # the command line verifies with the default method, OMS
    assert main(["scan", "--no-config", "--public-key", str(pem), "plain://x"]) == 2
    assert "plain://x: a plain:// address carries no model signature" in capsys.readouterr().err


def test_a_scheme_whose_row_cannot_download_is_refused(toy: Path, tmp_path: Path, capsys) -> None:
    assert main(["download", "plain://x", "-d", str(tmp_path / "out")]) == 2
    assert "plain://x: not a source stcheck downloads (http://, https://, hf://)" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_toy_signature_method_verifies_a_local_folder(toy: Path, tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    files = {"model.safetensors": STORE["model.safetensors"], "config.json": b"{}\n"}
    for name, data in files.items():
        (folder / name).write_bytes(data)
    (folder / "model.sig").write_bytes(toy_signature(b"toy secret", files))
    vetted = vet([str(folder)], _toy_options(toy))
    (record,) = [r.signature for r in vetted.results if r.signature is not None]
    assert (record["status"], record["method"], record["files_matched"]) == ("verified", "toy", 2)
    assert vetted.exit_code == 0

    (folder / "model.sig").write_bytes(toy_signature(b"another secret", files))
    vetted = vet([str(folder)], _toy_options(toy))
    sig = next(r for r in vetted.results if r.path == str(folder / "model.sig"))
    assert [i.finding.slug for i in sig.items] == ["signature-invalid"]
    assert "the toy MAC does not match" in sig.items[0].finding.message


# -- the toy output format -----------------------------------------------------------

SEEN: list[tuple[str, str | None]] = []


def write_toy(out: IO[str], results: Sequence[FileResult], context: Context) -> None:
    for r in results:
        SEEN.append((r.path, r.sha256))
        out.write(f"{r.path} {r.sha256}\n")


def test_a_toy_output_format_that_lists_digests_is_a_scan_format(monkeypatch, tmp_path: Path, capsys) -> None:
    monkeypatch.setitem(formats.OUTPUTS, "toy", formats.Output(write_toy, sha256=True, help="one line per file"))
    data = clean_file()
    (tmp_path / "a.safetensors").write_bytes(data)
    SEEN.clear()
    assert main(["scan", "--no-config", "--format", "toy", str(tmp_path)]) == 0
    assert [(str(tmp_path / "a.safetensors"), hashlib.sha256(data).hexdigest())] == SEEN
    assert capsys.readouterr().out == f"{tmp_path / 'a.safetensors'} {hashlib.sha256(data).hexdigest()}\n"
    # check reads headers only: it cannot offer a format that lists digests
    assert main(["check", "--no-config", "--format", "toy", str(tmp_path)]) == 2
    assert "invalid choice: 'toy'" in capsys.readouterr().err


# -- what moved out of the signatures stage ------------------------------------------


def test_the_library_names_its_own_fields_and_the_cli_its_flags(tmp_path: Path, capsys) -> None:
    (tmp_path / "a.safetensors").write_bytes(clean_file())
    with pytest.raises(VetError) as error:
        vet([str(tmp_path)], VetOptions(no_config=True, signature="S"))
    assert str(error.value) == "signature needs public_key, certificate_chain, or identity with issuer"
    with pytest.raises(VetError) as error:
        vet([str(tmp_path)], VetOptions(no_config=True, public_key="K", ignore_paths=["../x"]))
    assert str(error.value).startswith("ignore_paths ../x: give a path inside the signed folder")
    assert main(["scan", "--no-config", "--signature", "S", str(tmp_path)]) == 2
    assert "--signature needs --public-key, --certificate-chain, or --identity with --issuer" in capsys.readouterr().err


def test_the_bom_models_are_built_by_the_report_from_the_results(tmp_path: Path) -> None:
    from validator.report.bom import models

    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "a.safetensors").write_bytes(clean_file())
    (folder / "model.sig").write_bytes(b"{}")
    lone = tmp_path / "b.safetensors"
    lone.write_bytes(clean_file())
    vetted = vet([str(folder), str(lone)], VetOptions(no_config=True))
    assert not hasattr(vetted, "models")
    groups = models(vetted.results, [str(folder), str(lone)])
    assert [(g.name, g.signature, sorted(n for n, _ in g.files)) for g in groups] == [
        (str(folder), "not-verified", ["a.safetensors", "model.sig"]),
        ("b.safetensors", "none", [str(lone)]),
    ]


def test_signature_findings_wait_in_pending_for_the_judge(tmp_path: Path) -> None:
    from validator.pipeline.engine import Options
    from validator.pipeline.signatures import Signatures, arguments
    from validator.report.results import FileResult

    (tmp_path / "model.sig").write_bytes(b"{}")
    stage = Signatures(None, None)
    stage.verify_sources(arguments([str(tmp_path)]), network=None, hf_cache=False)  # type: ignore[arg-type]
    result = FileResult(path=str(tmp_path / "model.sig"), kind="other")
    (out,) = stage.finish([result], Options())
    assert out.items == []  # the stage applies no policy
    assert [f.slug for f in out.pending] == ["signature-not-verified"]
    assert out.signature is not None
    assert out.signature["status"] == "not-verified"
