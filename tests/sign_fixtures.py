# Strategy: signed model folders for the tests, made offline with the real
# signer (model_signing 1.1.1, the `sign` extra): EC keys and a small
# certificate authority generated here with `cryptography`, and a folder
# signed the way the model_signing CLI signs it (the signature itself and
# the git paths ignored).  Each certificate case is named after its defect.
from __future__ import annotations

import datetime as dt
import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import validator
from validator.cli.main import main

DAY = dt.timedelta(days=1)


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


@dataclass(frozen=True)
class KeyPair:
    private: Path
    public: Path


def ec_keys(where: Path, name: str = "signer") -> KeyPair:
    key = ec.generate_private_key(ec.SECP256R1())
    private = where / f"{name}.key.pem"
    public = where / f"{name}.pub.pem"
    private.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return KeyPair(private, public)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _usage(*, sign: bool, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=sign,
        content_commitment=False,
        key_encipherment=not sign and not ca,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


@dataclass(frozen=True)
class Certs:
    ca: Path  # the chain to verify with
    leaf: Path
    key: Path


def certificates(
    where: Path,
    name: str,
    *,
    ca_valid: tuple[dt.datetime, dt.datetime] | None = None,
    leaf_valid: tuple[dt.datetime, dt.datetime] | None = None,
    digital_signature: bool = True,
) -> Certs:
    """A self-made CA and a signing certificate it issued."""
    ca_from, ca_to = ca_valid or (now() - DAY, now() + 365 * DAY)
    leaf_from, leaf_to = leaf_valid or (now() - DAY, now() + 30 * DAY)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(f"{name} CA"))
        .issuer_name(_name(f"{name} CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(ca_from)
        .not_valid_after(ca_to)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_usage(sign=False, ca=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name(f"{name} signer"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(leaf_from)
        .not_valid_after(leaf_to)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(sign=digital_signature, ca=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    out = Certs(where / f"{name}.ca.pem", where / f"{name}.leaf.pem", where / f"{name}.leaf.key.pem")
    out.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    out.leaf.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    out.key.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return out


def model_folder(root: Path, *, weights: int = 3000) -> Path:
    """A small model folder: a safetensors file of ``weights`` F32 values,
    a config, a tokenizer file and a .gitattributes."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    validator.save(
        {"w": rng.standard_normal(weights).astype(np.float32), "b": np.arange(7, dtype=np.int16)},
        root / "model.safetensors",
        metadata={"format": "pt"},
    )
    (root / "config.json").write_text('{"model_type": "tiny"}\n')
    (root / "tokenizer.json").write_text('{"version": "1.0"}\n')
    (root / ".gitattributes").write_text("*.safetensors filter=lfs\n")
    return root


def hashing_config(
    folder: Path,
    *,
    shard_size: int | None = None,
    algorithm: str = "sha256",
    ignore: tuple[str, ...] = (),
    allow_symlinks: bool = False,
    signature: Path | None = None,
):
    """What `model_signing sign` uses: the signature and the git paths ignored."""
    from model_signing import hashing

    config = hashing.Config()
    if shard_size is not None:
        config.use_shard_serialization(hashing_algorithm=algorithm, shard_size=shard_size)
    else:
        config.use_file_serialization(hashing_algorithm=algorithm)
    sig = (signature or folder / "model.sig").resolve()
    paths = [sig, *(folder.resolve() / p for p in ignore)]
    return config.set_ignored_paths(paths=paths, ignore_git_paths=True).set_allow_symlinks(allow_symlinks)


def sign_with_key(folder: Path, keys: KeyPair, *, signature: Path | None = None, **kw) -> Path:
    from model_signing import signing

    sig = signature or folder / "model.sig"
    config = hashing_config(folder, signature=sig, **kw)
    signing.Config().use_elliptic_key_signer(private_key=keys.private).set_hashing_config(config).sign(folder, sig)
    return sig


def sign_with_certificate(folder: Path, certs: Certs, **kw) -> Path:
    from model_signing import signing

    sig = folder / "model.sig"
    signing.Config().use_certificate_signer(
        private_key=certs.key, signing_certificate=certs.leaf, certificate_chain=[certs.ca]
    ).set_hashing_config(hashing_config(folder, **kw)).sign(folder, sig)
    return sig


def flip_byte(path: Path, offset: int = -1) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def as_hub_cache(folder: Path, cache: Path, repo: str = "acme--signed", revision: str = "c" * 40) -> Path:
    """Move a signed folder into a hub cache: each file becomes a blob
    (an LFS file named by its sha256, a small file by its git blob id) and
    the snapshot holds symlinks to the blobs, as huggingface_hub lays it out."""
    base = cache / f"models--{repo}"
    blobs = base / "blobs"
    snap = base / "snapshots" / revision
    blobs.mkdir(parents=True, exist_ok=True)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder)
        data = path.read_bytes()
        name = sha256(data) if path.suffix == ".safetensors" else git_blob_id(data)
        (blobs / name).write_bytes(data)
        link = snap / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(Path(*([".."] * (len(rel.parts) + 1))) / "blobs" / name)
    (base / "refs").mkdir(exist_ok=True)
    (base / "refs" / "main").write_text(revision)
    shutil.rmtree(folder)
    return base


def blob_of(link: Path) -> Path:
    return Path(os.path.realpath(link))


SCAN = ["scan", "--no-config", "--progress", "never", "-j", "1"]


def scan(capsys, *argv: str) -> tuple[int, list[str], str]:
    """``stcheck scan`` as the signature tests run it: (exit code, finding lines, stderr)."""
    code = main([*SCAN, *argv])
    captured = capsys.readouterr()
    return code, [line for line in captured.out.splitlines() if ": ST" in line], captured.err
