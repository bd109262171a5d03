# Strategy: turning one signature file into what a SignedModel knows.  A
# local signature is verified where it lies; a remote folder's is fetched
# through the module its scheme's row names (validator.sources.schemes:
# ``signatures``, whose ``signed_folder`` lists the folder at one commit
# and fetches small files), written to a temporary file, verified there,
# and its digests compared with the listing (a large file's published
# sha256) and the small files' bytes, or, for a download, with the staged
# copies, before any weight is read or kept.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH118, PTH123, PTH116
from __future__ import annotations

import importlib
import os
import tempfile
from typing import TYPE_CHECKING, Protocol

from validator.config.install import install_hint
from validator.pipeline.signatures._model import SignedModel
from validator.signing.base import SignatureRejectedError, SigningSetupError
from validator.signing.oms import MAX_SIGNATURE_SIZE
from validator.signing.signature import SIGNATURE_NAME, Seen, UnsupportedError, compare, fit, to_manifest
from validator.signing.signhash import WHOLE_SHA256, DigestSpec, SignedDigester

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from validator.config.settings import Network
    from validator.signing.base import Keys, SignatureVerifier
    from validator.sources.schemes import Scheme

__all__ = ["Listed", "RemoteFolder", "remote_model", "verify_file"]


class Listed(Protocol):
    """What a listing says of one file: its size, and its sha256 when published."""

    @property
    def size(self) -> int | None: ...
    @property
    def sha256(self) -> str | None: ...


class RemoteFolder(Protocol):
    """A remote folder at one commit, as a signable scheme's module lists it
    (``signed_folder(source, network, listed)``; validator.remote._signed)."""

    @property
    def prefix(self) -> str: ...  # how reports name its files: the prefix of each, ending in "/"
    @property
    def commit(self) -> str | None: ...
    @property
    def folder(self) -> str: ...  # the folder's path in its repository ("" for the whole of it)
    def files(self) -> Mapping[str, Listed]: ...  # every file, by path relative to the folder
    def fetch(self, rels: Sequence[str], limit: int = ...) -> Mapping[str, bytes | None]: ...  # None: over limit
    def pinned(self) -> str: ...  # the address at the commit listed


def verify_file(model: SignedModel, verifier: SignatureVerifier, keys: Keys, path: str | None) -> None:
    """Verify the signature at ``path`` (None: there is none) for ``model``."""
    if path is None or not os.path.lexists(path):
        model.status = "missing"
        model.flag(None, "signature-missing", "no model signature here: sign the folder, or give --signature PATH")
        return
    try:
        model.signed = verifier.verify(path)
        model.manifest = fit(to_manifest(model.signed), single_file=model.single)
        model.status, model.detail = "verified", f"verified with {keys.describe()}"
    except SignatureRejectedError as exc:
        model.status, model.detail = "invalid", str(exc)
        model.flag(None, "signature-invalid", f"does not verify with {keys.describe()}: {exc}")
    except UnsupportedError as exc:
        model.status, model.detail = "unsupported", str(exc)
        model.flag(None, "signature-unsupported", f"the signature verifies, but {exc}")


def _folder(scheme: Scheme, source: str, network: Network, listed: object) -> RemoteFolder:
    assert scheme.signatures is not None
    try:
        module = importlib.import_module(scheme.signatures)
    except ImportError as exc:
        msg = f"{source}: remote checks need {exc.name}, which is not installed: {install_hint(scheme.extra)}"
        raise SigningSetupError(msg) from exc
    found: RemoteFolder = module.signed_folder(source, network, listed)
    return found


def remote_model(
    scheme: Scheme,
    source: str,
    network: Network,
    verify: tuple[SignatureVerifier, Keys],
    *,
    signature: str | None,
    ignore: tuple[str, ...],
    staged: Mapping[str, str] | None = None,
    listed: object = None,
) -> SignedModel:
    """The remote folder ``source``'s signature verified and compared with
    its listing (and the staged copies, repository path -> local file)."""
    found = _folder(scheme, source, network, listed)
    prefix = found.prefix
    files = found.files()
    base = found.folder + "/" if found.folder else ""
    local = {p[len(base) :]: path for p, path in (staged or {}).items() if p.startswith(base)}
    model = SignedModel(
        prefix.rstrip("/"),
        signature or prefix + SIGNATURE_NAME,
        None if signature else SIGNATURE_NAME,
        prefix=prefix,
        listed=True,
        ignore=ignore,
        source=source,
        commit=found.commit,
        pinned=found.pinned(),
    )
    verifier, keys = verify
    if signature is not None:
        verify_file(model, verifier, keys, signature)
    elif SIGNATURE_NAME not in files:
        verify_file(model, verifier, keys, None)
    else:
        _verify_fetched(model, verifier, keys, found.fetch([SIGNATURE_NAME], MAX_SIGNATURE_SIZE)[SIGNATURE_NAME])
    manifest = model.manifest
    if manifest is None:
        return model
    small = sorted(rel for rel, e in files.items() if rel in manifest.digests and e.sha256 is None and rel not in local)
    fetched = found.fetch(small) if small else {}
    seen = {
        rel: _staged_seen(manifest.spec, local[rel])
        if rel in local and rel in manifest.digests
        else _listed_seen(manifest.spec, entry, fetched.get(rel))
        if rel in manifest.digests
        else Seen(entry.size, None)
        for rel, entry in files.items()
    }
    outcome = compare(manifest, seen, where=model.where, signature_rel=model.signature_rel, ignore=model.ignore)
    for rel, slug, message in outcome.findings:
        model.flag(rel, slug, message)
    model.matched, model.outcome = outcome.checked, outcome
    if outcome.findings:
        model.status = "mismatch"
    return model


def _verify_fetched(model: SignedModel, verifier: SignatureVerifier, keys: Keys, data: bytes | None) -> None:
    if data is None:
        model.status = "invalid"
        model.flag(
            None, "signature-invalid", f"the signature is larger than the {MAX_SIGNATURE_SIZE} bytes stcheck reads"
        )
        return
    model.signature_size = len(data)
    with tempfile.TemporaryDirectory(prefix="stcheck-sig-") as tmp:
        path = os.path.join(tmp, SIGNATURE_NAME)
        with open(path, "wb") as fh:
            fh.write(data)
        verify_file(model, verifier, keys, path)


def _staged_seen(spec: DigestSpec, path: str) -> Seen:
    """A downloaded file's digests, from its staged copy (read once here)."""
    size = os.stat(path).st_size
    digester = SignedDigester(size, [spec])
    with open(path, "rb") as fh:
        while chunk := fh.read(8 << 20):
            digester.update(memoryview(chunk))
    return Seen(size, digester.signed()[spec.label])


def _listed_seen(spec: DigestSpec, entry: Listed, data: bytes | None) -> Seen:
    """What the listing says of a signed file: its published sha256, or a small file's bytes."""
    if data is not None:
        digester = SignedDigester(len(data), [spec])
        digester.update(memoryview(data))
        return Seen(len(data), digester.signed()[spec.label])
    size = entry.size
    if entry.sha256 is None:
        return Seen(size, None, "a file outside LFS larger than 16 MiB: download it, then scan the folder")
    lfs = "the hub's LFS"  # its listing: nothing of the file is downloaded
    if spec == WHOLE_SHA256:
        return Seen(size, [entry.sha256], source=lfs)
    if spec.algorithm == "sha256" and spec.shard_size is not None and size is not None and size <= spec.shard_size:
        return Seen(size, [entry.sha256] if size else [], source=lfs)  # one shard: the whole file
    return Seen(
        size, None, f"the hub publishes a whole-file sha256 only, not {spec.label}: download it, then scan the folder"
    )
