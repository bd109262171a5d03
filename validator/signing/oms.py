# Strategy: the one place that calls model_signing, the OpenSSF Model
# Signing (OMS) library, pinned exactly (model-signing==1.1.1, the `sign`
# extra).  stcheck never does the cryptography itself: the library checks
# the Sigstore bundle, its DSSE envelope and signature (EC public key,
# certificate chain, or keyless Sigstore identity), and turns the signed
# in-toto statement into a manifest.  What stcheck does not take from the
# library is the hashing of the model: `verifying.Config.verify(model, sig)`
# reads every file again, a second read of a model the scan is already
# reading once.  So verify() below asks the library's verifier for the
# manifest alone and hands back plain data (the serialization parameters and
# each resource's name, algorithm and digest); signing/signature.py compares
# those with the digests the scan computed in its own single read.
#
# Getting the manifest alone needs two names model_signing does not export:
# `Config._verifier` (the verifier a `use_*_verifier` call configured) and
# the bundle readers in `model_signing._signing` (`sign_sigstore_pb`
# for keys and certificates, `sign_sigstore` for keyless), both exactly as
# `Config.verify` uses them in 1.1.1.  That is acceptable only because the
# version is pinned exactly; both are reached in _manifest() alone, and an
# upgrade that moves them is an error naming the version
# (tests/test_signature.py signs and verifies with the library itself, so
# such an upgrade fails there loudly).
#
# What 1.1.1 leaves to the caller, and stcheck adds:
#   - a certificate chain is checked by the library at the signing
#     certificate's notBefore, not now: a certificate that has expired (or is
#     not yet valid) still verifies.  With no trusted timestamp in such a
#     bundle, stcheck also requires every certificate of the bundle's chain
#     to be valid now, as code signing without a timestamp does.
#   - the library prints a warning on stdout for old key bundles and logs
#     one for certificates without an extended key usage; both are kept off
#     stcheck's own output (stdout may be a JSON or SARIF report).
#
# Verification runs before the scan reads any model byte, in this process:
# a key or certificate that cannot be used, or no network for keyless
# verification, is a one-line error before any work.  Importing
# model_signing (and sigstore with it) costs about half a second per run,
# whatever the model's size (tests/benchmarks/README.md).
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import io
import logging
import pathlib
import tempfile
from typing import TYPE_CHECKING, Any, Final

from validator._errors import SourceError
from validator._inputs import KEY_LIMIT, read_input
from validator.config.install import install_hint
from validator.signing.base import Keys, SignatureRejectedError, Signed, Signer, SigningSetupError

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["MAX_SIGNATURE_SIZE", "SUPPORTED_VERSION", "Verifier", "check_inputs", "configure", "read_inputs", "verify"]

SUPPORTED_VERSION: Final = "1.1.1"
MAX_SIGNATURE_SIZE: Final = 100_000_000  # bytes: about half a million resources (some 200 bytes each, in base64)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Keep the library's prints and log records off stcheck's output."""
    logger = logging.getLogger("model_signing")
    saved = logger.disabled
    logger.disabled = True
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        logger.disabled = saved


def _library() -> Any:  # noqa: ANN401 - the model_signing.verifying module
    try:
        from model_signing import verifying  # noqa: PLC0415 - the sign extra loads only for a verification
    except ImportError as exc:
        missing = exc.name or "model_signing"
        msg = f"signature verification needs {missing}, which is not installed: {install_hint('sign')}"
        raise SigningSetupError(msg) from exc
    return verifying


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def configure(keys: Keys, files: Keys | None = None) -> Any:  # noqa: ANN401 - a model_signing.verifying.Config
    """The library's verification config for ``keys``, read from ``files``
    (the same keys, as copies read once: see Verifier); raise SigningSetupError."""
    verifying = _library()
    config = verifying.Config()
    files = files or keys
    try:
        with _quiet():
            if files.public_key is not None:
                return config.use_elliptic_key_verifier(public_key=files.public_key)
            if files.certificate_chain:
                return config.use_certificate_verifier(certificate_chain=list(files.certificate_chain))
            trust = None if files.trust_config is None else pathlib.Path(files.trust_config)
            return config.use_sigstore_verifier(identity=keys.identity, oidc_issuer=keys.issuer, trust_config=trust)
    except (
        Exception
    ) as exc:  # the library raises ValueError, OSError, TUFError, pydantic errors: none can be verified with
        raise SigningSetupError(_setup_reason(keys, exc)) from exc


def read_inputs(keys: Keys) -> dict[str, bytes]:
    """The key, certificates and trust configuration given, each read once
    (validator._inputs: a regular file, bounded); raise SigningSetupError."""
    named = [
        (keys.public_key, "--public-key {}: cannot use it as an EC public key (PEM)"),
        *((path, "--certificate-chain {}: cannot read it as PEM certificates") for path in keys.certificate_chain),
        (keys.trust_config, "--trust-config {}: not a Sigstore client trust configuration"),
    ]
    texts = {}
    for path, refusal in named:
        if path is None:
            continue
        try:
            texts[path] = read_input(path, "key, certificate or trust configuration", KEY_LIMIT)
        except SourceError as exc:
            why = str(exc).removeprefix(f"{path}: ")
            raise SigningSetupError(f"{refusal.format(path)}: {why}") from exc
    return texts


@contextlib.contextmanager
def _copies(keys: Keys, texts: dict[str, bytes]) -> Iterator[Keys]:
    """``keys`` with each file replaced by a private copy of the bytes read
    (the library opens the files by name: it reads exactly what was checked)."""
    with tempfile.TemporaryDirectory(prefix="stcheck-keys-") as tmp:
        names: dict[str, str] = {}
        for k, (path, data) in enumerate(texts.items()):
            copy = pathlib.Path(tmp, str(k))
            copy.write_bytes(data)
            names[path] = str(copy)
        yield Keys(
            None if keys.public_key is None else names[keys.public_key],
            tuple(names[p] for p in keys.certificate_chain),
            keys.identity,
            keys.issuer,
            None if keys.trust_config is None else names[keys.trust_config],
        )


def check_inputs(keys: Keys, texts: dict[str, bytes] | None = None) -> str | None:
    """Check the key or certificates given (``texts``: as read_inputs read
    them) as the library will, at once; raise SigningSetupError with the
    reason.  Return the public key's fingerprint (``sha256:HEX`` of its DER
    SubjectPublicKeyInfo), or None without one."""
    try:
        from cryptography import x509  # noqa: PLC0415 - a dependency of the sign extra
        from cryptography.hazmat.primitives import serialization  # noqa: PLC0415 - as above
        from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415 - as above
    except ImportError as exc:
        msg = f"signature verification needs {exc.name}, which is not installed: {install_hint('sign')}"
        raise SigningSetupError(msg) from exc
    texts = read_inputs(keys) if texts is None else texts
    try:
        key = None if keys.public_key is None else serialization.load_pem_public_key(texts[keys.public_key])
    except ValueError as exc:
        raise SigningSetupError(_setup_reason(keys, exc)) from exc
    for path in keys.certificate_chain:
        _certificates(x509, path, texts[path])
    if key is not None and not isinstance(key, ec.EllipticCurvePublicKey):
        what = f"{type(key).__name__.removeprefix('_')}: not an elliptic-curve key"
        raise SigningSetupError(f"--public-key {keys.public_key}: cannot use it as an EC public key (PEM): {what}")
    if key is None:
        return None
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(der).hexdigest()


def _certificates(x509: Any, path: str, text: bytes) -> None:  # noqa: ANN401 - the cryptography.x509 module
    try:
        x509.load_pem_x509_certificates(text)
    except ValueError as exc:
        msg = f"--certificate-chain {path}: cannot read it as PEM certificates: {_first_line(exc)}"
        raise SigningSetupError(msg) from exc


class Verifier:
    """OMS verification (validator.signing.base.SignatureVerifier): the
    library's verifier for one set of keys, read and checked at once."""

    method = "oms"

    def __init__(self, keys: Keys) -> None:
        texts = read_inputs(keys)
        self.fingerprint = check_inputs(keys, texts)
        self.keys = keys
        with _copies(keys, texts) as files:
            self._config = configure(keys, files)  # the library reads its copies here, once

    def verify(self, signature: str) -> Signed:
        """Verify one signature file; raise SignatureRejectedError, or
        SigningSetupError when the library is not the version pinned."""
        signed = verify(self._config, self.keys, signature)
        if self.keys.public_key is not None and signed.signer is not None:
            signed = dataclasses.replace(
                signed, signer=dataclasses.replace(signed.signer, fingerprint=self.fingerprint)
            )
        return signed


def _setup_reason(keys: Keys, exc: BaseException) -> str:
    if keys.public_key is not None:
        return f"--public-key {keys.public_key}: cannot use it as an EC public key (PEM): {_first_line(exc)}"
    if keys.certificate_chain:
        return f"--certificate-chain: cannot read the certificates (PEM): {_first_line(exc)}"
    if keys.trust_config is not None:
        return f"--trust-config {keys.trust_config}: not a Sigstore client trust configuration: {_first_line(exc)}"
    return (
        "keyless verification (--identity) needs the network to fetch Sigstore's trust root, "
        f"or a --trust-config FILE: {_first_line(exc)}"
    )


def verify(config: Any, keys: Keys, signature: str) -> Signed:  # noqa: ANN401 - a model_signing.verifying.Config
    """Verify the signature file ``signature`` with ``config`` (from
    configure); raise SignatureRejectedError with the reason when it does not
    verify, SigningSetupError when the library is not the version pinned."""
    try:
        data = read_input(signature, "model signature", MAX_SIGNATURE_SIZE)
    except SourceError as exc:
        why = str(exc).removeprefix(f"{signature}: ")
        if why.startswith("not a regular file"):
            raise SignatureRejectedError("the signature is not a regular file") from exc
        raise SignatureRejectedError(f"cannot read the signature: {why}") from exc
    # The library reads a bundle by name: it gets a private copy of the bytes read here.
    with tempfile.TemporaryDirectory(prefix="stcheck-sig-") as tmp:
        copy = pathlib.Path(tmp, "model.sig")
        copy.write_bytes(data)
        return _manifest(config, keys, copy)


def _manifest(config: Any, keys: Keys, path: pathlib.Path) -> Signed:  # noqa: ANN401 - a model_signing.verifying.Config
    # The private names (see the strategy): reached here and nowhere else.
    try:
        if keys.identity is not None:
            from model_signing._signing import sign_sigstore as bundles  # noqa: PLC0415 - see the strategy
        else:
            from model_signing._signing import sign_sigstore_pb as bundles  # type: ignore[no-redef]  # noqa: PLC0415 - see the strategy
        verifier = config._verifier  # noqa: SLF001 - see the strategy: model_signing 1.1.1, pinned exactly
        read = bundles.Signature.read
    except (ImportError, AttributeError) as exc:
        raise SigningSetupError(_version_note(exc)) from exc
    try:
        with _quiet():
            bundle = read(path)
            _check_kind(keys, bundle)
            manifest = verifier.verify(bundle)
            resources = tuple(
                (rd.identifier, rd.digest.algorithm, rd.digest.digest_hex) for rd in manifest.resource_descriptors()
            )
            serialization = dict(manifest.serialization_type)
            name = str(manifest.model_name)
    except SignatureRejectedError:
        raise
    except Exception as exc:  # a bad bundle, key, chain or payload raises one of many types: all mean "does not verify"
        raise SignatureRejectedError(_first_line(exc)) from exc
    if keys.certificate_chain:
        _valid_now(bundle)
    return Signed(serialization, resources, name, _signer(keys, bundle))


def _signer(keys: Keys, bundle: Any) -> Signer:  # noqa: ANN401 - a model_signing Signature
    """Who signed a bundle that verified: the key (its fingerprint is the
    Verifier's), or the signing certificate's subject, issuer and sha256."""
    if keys.public_key is not None:
        return Signer("key")
    from cryptography import x509  # noqa: PLC0415 - a dependency of the sign extra
    from cryptography.hazmat.primitives import hashes  # noqa: PLC0415 - as above

    fingerprint: str | None
    subject: str | None
    issuer: str | None
    try:
        if keys.certificate_chain:
            raw = bundle.bundle.verification_material.x509_certificate_chain.certificates[0].raw_bytes
            cert = x509.load_der_x509_certificate(raw)
        else:
            cert = bundle.bundle.signing_certificate
        fingerprint = "sha256:" + cert.fingerprint(hashes.SHA256()).hex()
        subject, issuer = cert.subject.rfc4514_string(), cert.issuer.rfc4514_string()
    except Exception:  # noqa: BLE001 - the bundle verified; a certificate it does not expose only leaves the record shorter
        fingerprint = subject = issuer = None
    if keys.certificate_chain:
        return Signer("certificate", subject, issuer, fingerprint)
    return Signer("keyless", keys.identity, keys.issuer, fingerprint)


def _check_kind(keys: Keys, bundle: Any) -> None:  # noqa: ANN401 - a model_signing Signature
    """Refuse a bundle that cannot be verified the way ``keys`` asks (the
    library fails on one with an AttributeError)."""
    if keys.identity is not None:
        return
    material = bundle.bundle.verification_material
    if keys.public_key is not None and material.public_key is None:
        raise SignatureRejectedError(
            "it was signed with a certificate, not a bare key: verify with --certificate-chain"
        )
    if keys.certificate_chain and material.x509_certificate_chain is None:
        raise SignatureRejectedError("it was signed with a key, not a certificate: verify with --public-key")


def _version_note(exc: BaseException) -> str:
    try:
        from model_signing import __version__  # noqa: PLC0415 - only to name the version in the message
    except ImportError:
        __version__ = "unknown"
    return (
        f"model_signing {__version__} is installed, but stcheck verifies with model_signing {SUPPORTED_VERSION} "
        f"({install_hint('sign')}): {_first_line(exc)}"
    )


def _valid_now(bundle: Any) -> None:  # noqa: ANN401 - a sign_sigstore_pb.Signature
    """Every certificate of the bundle's chain must be valid now (see the strategy)."""
    from cryptography import x509  # noqa: PLC0415 - a dependency of the sign extra

    now = dt.datetime.now(dt.timezone.utc)
    try:
        chain = bundle.bundle.verification_material.x509_certificate_chain.certificates
        certificates = [x509.load_der_x509_certificate(c.raw_bytes) for c in chain]
    except Exception as exc:  # the library read this chain already; anything odd here means it cannot be trusted
        raise SignatureRejectedError(f"cannot read the certificate chain: {_first_line(exc)}") from exc
    for k, cert in enumerate(certificates):
        which = "the signing certificate" if k == 0 else f"certificate {k + 1} of the chain"
        subject = cert.subject.rfc4514_string()
        if cert.not_valid_after_utc < now:
            raise SignatureRejectedError(
                f"{which} ({subject}) expired on {cert.not_valid_after_utc:%Y-%m-%d}, and the signature carries "
                "no trusted timestamp that would date it before then"
            )
        if cert.not_valid_before_utc > now:
            raise SignatureRejectedError(
                f"{which} ({subject}) is not valid before {cert.not_valid_before_utc:%Y-%m-%d}"
            )
