# Strategy: what any signature method gives the pipeline, so that a second
# method (a GPG detached signature, a vendor's manifest) is one module that
# implements SignatureVerifier plus one row in METHODS.  A verifier is built
# from the user's Keys before any byte of the model is read (a key that
# cannot be used is a SigningSetupError, a one-line exit 2), and turns one
# signature file into Signed: plain data, the signed resources and their
# digests, which validator.signing.signature compares with the digests the
# scan computed in its one read.  OpenSSF Model Signing (validator.signing.
# oms) is the first method.  A run picks one by name
# (validator.pipeline.vet.VetOptions.signature_method, "oms" by default);
# tests/test_change_traces.py adds a toy one this way.
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from validator._errors import StcheckError

__all__ = [
    "METHODS",
    "Keys",
    "SignatureRejectedError",
    "SignatureVerifier",
    "Signed",
    "Signer",
    "SigningSetupError",
    "verifier_for",
]


class SigningSetupError(StcheckError):
    """Verification cannot start: a key or certificate that cannot be read,
    the `sign` extra missing, no trust root for keyless verification."""


class SignatureRejectedError(StcheckError):
    """The signature does not verify; the message says why."""


@dataclass(frozen=True)
class Keys:
    """What to verify with: an EC public key, a certificate chain, or a
    keyless Sigstore identity and its OIDC issuer."""

    public_key: str | None = None
    certificate_chain: tuple[str, ...] = ()
    identity: str | None = None
    issuer: str | None = None
    trust_config: str | None = None

    @property
    def kind(self) -> str:
        """key, certificate or keyless: how a report names the way of verifying."""
        if self.public_key is not None:
            return "key"
        return "certificate" if self.certificate_chain else "keyless"

    def describe(self) -> str:
        """How the signature was verified, for reports."""
        if self.public_key is not None:
            return f"public key {self.public_key}"
        if self.certificate_chain:
            return "certificate chain " + ", ".join(self.certificate_chain)
        return f"Sigstore identity {self.identity} (issuer {self.issuer})"


@dataclass(frozen=True)
class Signer:
    """Who signed, as a report names it: how (``kind``: key, certificate or
    keyless), the identity (a certificate's subject, a Sigstore identity)
    and its issuer, and a fingerprint (``sha256:HEX`` of the public key's
    DER SubjectPublicKeyInfo, or of the signing certificate's DER)."""

    kind: Literal["key", "certificate", "keyless"]
    identity: str | None = None
    issuer: str | None = None
    fingerprint: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"kind": self.kind, "identity": self.identity, "issuer": self.issuer, "fingerprint": self.fingerprint}


@dataclass(frozen=True)
class Signed:
    """A verified signature's content, as plain data."""

    serialization: dict[str, Any]  # method, hash_type, allow_symlinks, ignore_paths, shard_size
    resources: tuple[tuple[str, str, str], ...]  # (name, algorithm, hex digest), sorted by name
    model_name: str
    signer: Signer | None = None  # who signed (None: a method that cannot say)


class SignatureVerifier(Protocol):
    """A signature method: built from Keys, it verifies one signature file."""

    method: str  # its name in METHODS and in reports

    def verify(self, signature: str) -> Signed:
        """The signed content; raise SignatureRejectedError when it does not verify."""
        ...


# method -> the module whose ``Verifier(keys)`` implements it
METHODS: Final = {"oms": "validator.signing.oms"}


def verifier_for(keys: Keys, method: str = "oms") -> SignatureVerifier:
    """The verifier of ``method`` for ``keys``; raise SigningSetupError when
    the keys cannot be used (or the method is unknown)."""
    module = METHODS.get(method)
    if module is None:
        msg = f"unknown signature method {method!r}: {', '.join(METHODS)}"
        raise SigningSetupError(msg)
    verifier: SignatureVerifier = importlib.import_module(module).Verifier(keys)
    return verifier
