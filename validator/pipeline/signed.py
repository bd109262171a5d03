# Strategy: `stcheck scan` of signed models (OpenSSF Model Signing, a
# `model.sig` over a folder) and the grouping of results into models for the
# CycloneDX BOM.  The scan command calls, in order:
#   Signing.from_options    the options (one way to verify: --public-key,
#                        --certificate-chain or --identity/--issuer);
#   verify_sources       before any file is read: each folder argument's
#                        signature (DIR/model.sig, or --signature) is
#                        verified by the library (scan/oms.py); an hf://
#                        folder's signature is fetched and its signed
#                        digests compared with the hub's listing (the LFS
#                        sha256), before any weight is downloaded;
#   annotate             each scan job of a signed file gets the digests its
#                        signature lists (scan/signhash.py), computed in the
#                        scan's one read; a hub-cache snapshot's signature is
#                        verified here, once the cache is walked;
#   finish               after the scan, the digests are compared
#                        (scan/signature.py) and each finding is attached to
#                        the file it names; a signed file the scan did not
#                        read (an index, a file below .git/.hg/.svn) is read
#                        once here, for its digest alone;
#   models               the BOM's models: a folder argument, a hub-cache
#                        snapshot, an hf:// folder, or a lone file.
# Without a key nothing is verified: a `model.sig` found gets the warning
# signature-not-verified.  model_signing is imported only when a key is given.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH100, PTH112, PTH113, PTH118, PTH119, PTH123
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from validator._check import make_finding
from validator.config.install import install_hint
from validator.config.policy import apply_policy
from validator.io.names import hub_snapshot
from validator.pipeline.engine import Job, run_jobs
from validator.report.bom import ModelGroup
from validator.report.results import FileResult
from validator.signing.base import Keys, SignatureRejectedError, SigningSetupError, verifier_for
from validator.signing.oms import MAX_SIGNATURE_SIZE
from validator.signing.signature import (
    SIGNATURE_NAME,
    Manifest,
    Seen,
    UnsupportedError,
    compare,
    to_manifest,
)
from validator.signing.signhash import WHOLE_SHA256, DigestSpec, SignedDigester
from validator.sources.kinds import name_kind
from validator.sources.schemes import is_remote

if TYPE_CHECKING:
    from collections.abc import Sequence

    from validator.config.policy import Policy
    from validator.config.settings import Network
    from validator.pipeline.engine import Options
    from validator.pipeline.hubcache import HubWalk
    from validator.remote._hub import HubEntry


class KeyOptions(Protocol):
    """The options that choose how to verify (validator.pipeline.vet.VetOptions)."""

    @property
    def public_key(self) -> str | None: ...
    @property
    def certificate_chain(self) -> Sequence[str]: ...
    @property
    def identity(self) -> str | None: ...
    @property
    def issuer(self) -> str | None: ...
    @property
    def trust_config(self) -> str | None: ...
    @property
    def signature(self) -> str | None: ...
    @property
    def bom(self) -> bool: ...


def keys_from_options(args: KeyOptions) -> Keys | None:
    """The one way to verify the options give, or None; ValueError for a
    combination that cannot work."""
    public_key = args.public_key
    chain = tuple(args.certificate_chain or ())
    identity, issuer = args.identity, args.issuer
    trust = args.trust_config
    if (public_key is not None) + bool(chain) + (identity is not None or issuer is not None) > 1:
        raise ValueError("give one way to verify: --public-key, --certificate-chain, or --identity with --issuer")
    if (identity is None) != (issuer is None):
        raise ValueError("keyless verification needs both --identity and --issuer")
    if trust is not None and identity is None:
        raise ValueError("--trust-config is for keyless verification: give --identity and --issuer too")
    if public_key is None and not chain and identity is None:
        if args.signature is not None:
            raise ValueError("--signature needs --public-key, --certificate-chain, or --identity with --issuer")
        return None
    return Keys(public_key, chain, identity, issuer, trust)


def _snapshot(display: str) -> str | None:
    """The folder prefix of a hub-cache file (``.../models--org--name/
    snapshots/REV/``, as the hub-cache scan names its files) or of an hf://
    display name (``org/name@rev/``), or None."""
    snapshot = hub_snapshot(display)
    if snapshot is not None:
        return snapshot.prefix
    at = display.find("@")
    slash = display.find("/", at) if at >= 0 else -1
    return display[: slash + 1] if slash >= 0 else None


def _model_name(prefix: str, model: str | None) -> str:
    """A snapshot's name in a BOM: ``org/name@revision`` (12 hex digits)
    for a hub-cache snapshot, else the prefix itself."""
    folder = prefix.rstrip("/")
    if model is None or "/snapshots/" not in folder:
        return folder
    return f"{model}@{os.path.basename(folder)[:12]}"


@dataclass
class Target:
    """One signed (or signable) folder: a folder argument, a hub-cache
    snapshot, or an hf:// folder (``prefix`` names its files)."""

    name: str
    where: str  # the signature, as reports name it
    signature_rel: str | None  # the signature's path in the folder (None: outside it)
    given: str | None = None  # a local folder, as given
    root: str | None = None  # ...and its absolute path
    prefix: str | None = None  # a hub snapshot's or hf:// folder's display prefix
    model: str | None = None  # a hub snapshot's repository
    status: str = "none"
    detail: str | None = None
    manifest: Manifest | None = None
    matched: int = 0  # signed files whose digests matched
    findings: list[tuple[str, str, str, str | None]] = field(default_factory=list)  # (display, slug, message, rel)

    @property
    def remote(self) -> bool:
        """An hf:// folder: compared with the hub's listing before the scan."""
        return self.prefix is not None and self.prefix.startswith("hf://")

    def rel(self, result: FileResult) -> str | None:
        """The result's path relative to the folder, or None when outside it."""
        path = result.path
        if self.prefix is not None:
            return path[len(self.prefix) :] if path.startswith(self.prefix) and len(path) > len(self.prefix) else None
        if self.root is None or result.model is not None or is_remote(path):
            return None
        rel = os.path.relpath(os.path.abspath(path), self.root)
        return None if rel == "." or rel.startswith(("..", os.sep)) else rel.replace(os.sep, "/")

    def display(self, rel: str) -> str:
        if self.prefix is not None:
            return self.prefix + rel
        assert self.given is not None
        return os.path.join(self.given, rel)


def _digests(result: FileResult, spec: DigestSpec) -> list[str] | None:
    if spec == WHOLE_SHA256:
        return None if result.sha256 is None else [result.sha256]
    return (result.signed or {}).get(spec.label)


class Signing:
    """The signed-model checks of one `stcheck scan` run (see the strategy)."""

    def __init__(self, keys: Keys | None, signature: str | None, *, bom: bool) -> None:
        self.keys = keys
        self.signature = signature
        self.bom = bom
        self.verifier = None if keys is None else verifier_for(keys)
        self.targets: list[Target] = []

    @classmethod
    def from_options(cls, options: KeyOptions) -> Signing:
        """Raise ValueError for bad options, SigningSetupError when the keys cannot be used."""
        return cls(keys_from_options(options), options.signature, bom=options.bom)

    # -- before the scan ---------------------------------------------------------

    def verify_sources(self, paths: Sequence[str], network: Network, *, hf_cache: bool) -> None:
        """Verify the signature of each folder and hf:// argument; ValueError
        for an argument no signature can cover."""
        folders = [p for p in paths if not is_remote(p) and os.path.isdir(p)]
        if self.keys is None:
            self.targets = [
                Target(p, os.path.join(p, SIGNATURE_NAME), SIGNATURE_NAME, p, os.path.abspath(p)) for p in folders
            ]
            return
        for path in paths:
            if is_remote(path) and not path.startswith("hf://"):
                raise ValueError(f"{path}: an http(s) URL carries no model signature; give an hf:// folder")
            if not is_remote(path) and path not in folders and os.path.lexists(path):
                raise ValueError(f"{path}: a model signature covers a folder; give the folder, not a file in it")
        hubs = [p for p in paths if p.startswith("hf://")]
        absent = [p for p in paths if not is_remote(p) and not os.path.lexists(p)]
        if not folders and not hubs and not hf_cache and not absent:  # (an absent path is the scan's error)
            raise ValueError("--public-key, --certificate-chain and --identity verify a folder: give DIR")
        if self.signature is not None and len(folders) + len(hubs) + hf_cache > 1:
            raise ValueError("--signature names the signature of one folder, but several were given")
        for folder in folders:
            sig = self.signature or os.path.join(folder, SIGNATURE_NAME)
            root = os.path.abspath(folder)
            rel = os.path.relpath(os.path.abspath(sig), root)
            inside = None if rel.startswith("..") else rel.replace(os.sep, "/")
            target = Target(folder, sig, inside, folder, root)
            self._verify(target, sig)
            self.targets.append(target)
        for source in hubs:
            self.targets.append(self._remote(source, network))

    def _verify(self, target: Target, path: str | None) -> None:
        assert self.verifier is not None
        assert self.keys is not None
        if path is None or not os.path.lexists(path):
            target.status = "missing"
            why = "no model signature here: sign the folder, or give --signature PATH"
            target.findings.append((target.where, "signature-missing", why, None))
            return
        try:
            target.manifest = to_manifest(self.verifier.verify(path))
            target.status, target.detail = "verified", f"verified with {self.keys.describe()}"
        except SignatureRejectedError as exc:
            target.status, target.detail = "invalid", str(exc)
            target.findings.append(
                (target.where, "signature-invalid", f"does not verify with {self.keys.describe()}: {exc}", None)
            )
        except UnsupportedError as exc:
            target.status, target.detail = "unsupported", str(exc)
            target.findings.append((target.where, "signature-unsupported", f"the signature verifies, but {exc}", None))

    def _remote(self, source: str, network: Network) -> Target:
        try:
            from validator.remote import default_options  # noqa: PLC0415 - the remote extra loads only for hf://
            from validator.remote._signed import fetch_files, hub_folder  # noqa: PLC0415 - as above
        except ImportError as exc:
            msg = f"{source}: remote checks need {exc.name}, which is not installed: {install_hint('remote')}"
            raise SigningSetupError(msg) from exc
        opts = default_options(
            timeout=network.timeout,
            concurrency=network.concurrency,
            headers=network.headers,
        )
        found = hub_folder(source, opts)
        prefix = found.display("x")[:-1]
        files = found.files()
        target = Target(
            prefix.rstrip("/"), self.signature or prefix + SIGNATURE_NAME, None if self.signature else SIGNATURE_NAME
        )
        target.prefix = prefix
        if self.signature is not None:
            self._verify(target, self.signature)
        elif SIGNATURE_NAME not in files:
            self._verify(target, None)
        else:
            data = fetch_files(found, [SIGNATURE_NAME], opts, limit=MAX_SIGNATURE_SIZE)[SIGNATURE_NAME]
            with tempfile.TemporaryDirectory(prefix="stcheck-sig-") as tmp:
                path = os.path.join(tmp, SIGNATURE_NAME)
                with open(path, "wb") as fh:
                    fh.write(data or b"")
                if data is None:
                    target.status = "invalid"
                    why = f"the signature is larger than the {MAX_SIGNATURE_SIZE} bytes stcheck reads"
                    target.findings.append((target.where, "signature-invalid", why, None))
                else:
                    self._verify(target, path)
        manifest = target.manifest
        if manifest is None:
            return target
        small = sorted(rel for rel, e in files.items() if rel in manifest.digests and e.sha256 is None)
        fetched = fetch_files(found, small, opts) if small else {}
        seen = {
            rel: _remote_seen(manifest.spec, entry, fetched.get(rel))
            if rel in manifest.digests
            else Seen(entry.size, None)
            for rel, entry in files.items()
        }
        outcome = compare(manifest, seen, where=target.where, signature_rel=target.signature_rel)
        target.findings.extend((target.display(rel), slug, message, None) for rel, slug, message in outcome.findings)
        target.matched = outcome.checked
        if outcome.findings:
            target.status = "mismatch"
        return target

    def annotate(self, jobs: list[Job], hub: HubWalk) -> list[Job]:
        """The jobs, each with the digests its signatures list (and its
        sha256 for a BOM); hub-cache snapshots' signatures are verified here."""
        if self.keys is not None or self.bom:
            self._hub_targets(hub)
        if self.keys is None and not self.bom:
            return jobs
        signed = [t for t in self.targets if t.manifest is not None and not t.remote]
        out = []
        for job in jobs:
            specs = set(job.digests)
            if job.kind == "file":
                if self.bom:
                    specs.add(WHOLE_SHA256)
                for display, model in job.names:
                    probe = FileResult(path=display, model=model)
                    for target in signed:
                        rel = None if target.manifest is None else target.rel(probe)
                        if rel is not None and target.manifest is not None and rel in target.manifest.digests:
                            specs.add(target.manifest.spec)
            out.append(replace(job, digests=tuple(sorted(specs))) if specs != set(job.digests) else job)
        return out

    def _hub_targets(self, hub: HubWalk) -> None:
        blobs: dict[str, str] = {}
        models: dict[str, str | None] = {}
        for job in hub.jobs:
            if job.kind != "file":
                continue
            for display, model in job.names:
                prefix = _snapshot(display)
                if prefix is not None:
                    models.setdefault(prefix, model)
                    if display == prefix + SIGNATURE_NAME:
                        blobs[prefix] = job.path
        if self.keys is not None and self.signature is not None and len(models) + len(self.targets) > 1:
            raise ValueError("--signature names the signature of one folder, but several were given")
        for prefix, model in sorted(models.items()):
            where = self.signature or prefix + SIGNATURE_NAME
            target = Target(
                _model_name(prefix, model), where, None if self.signature else SIGNATURE_NAME, prefix=prefix
            )
            target.model = model
            if self.keys is not None:
                self._verify(target, self.signature or blobs.get(prefix))
            self.targets.append(target)

    # -- after the scan --------------------------------------------------------------

    def finish(self, results: list[FileResult], options: Options, policy: Policy | None) -> list[FileResult]:
        """Compare, attach every finding to the file it names, and return
        the results (with a result for each file named but not scanned)."""
        if self.keys is None:
            self._unverified(results, policy)
        if self.keys is None and not self.bom:
            return results
        results = self._read_rest(results, options)
        for target in self.targets:
            if target.manifest is not None and not target.remote:
                self._compare(target, results)
            self._attach(target, results, policy)
        return results

    def _unverified(self, results: list[FileResult], policy: Policy | None) -> None:
        for r in results:
            if os.path.basename(r.path) == SIGNATURE_NAME and r.kind in {"other", "blob"} and r.error is None:
                message = "signed, but not verified: pass --public-key or --certificate-chain (or --identity)"
                r.items.extend(apply_policy([make_finding("signature-not-verified", message)], policy))
                for target in self.targets:
                    if target.rel(r) is not None:
                        target.status = "not-verified"

    def _read_rest(self, results: list[FileResult], options: Options) -> list[FileResult]:
        """Read, for its digests alone, each signed file the scan did not read
        (an index; a file below a folder the walker skips) and, for a BOM,
        each index."""
        extra = self._unread(results)
        jobs = [Job(p, ((p, None),), validate=False, digests=tuple(sorted(s))) for p, s in extra.items() if s]
        if not jobs:
            return results
        plain = replace(options, deep=False, sha256=None, checksums=None)
        by_path = {r.path: r for r in results if r.kind == "index"}
        for read in run_jobs(jobs, plain, workers=1):
            index = by_path.get(read.path)
            if index is not None:
                index.sha256, index.signed, index.bytes_read = read.sha256, read.signed, read.bytes_read
                index.error = index.error or read.error
            else:
                read.kind, read.file_kind = "other", name_kind(read.path) or "other"
                results.append(read)
        return results

    def _unread(self, results: list[FileResult]) -> dict[str, set[DigestSpec]]:
        extra: dict[str, set[DigestSpec]] = {}
        for r in results:
            if r.kind == "index" and r.sha256 is None and r.model is None and not is_remote(r.path):
                specs = extra.setdefault(r.path, set())
                if self.bom:
                    specs.add(WHOLE_SHA256)
                for target in self.targets:
                    rel = target.rel(r) if target.manifest is not None else None
                    if rel is not None and target.manifest is not None and rel in target.manifest.digests:
                        specs.add(target.manifest.spec)
        for target in self.targets:
            if target.manifest is None or target.root is None:
                continue
            present = {target.rel(r) for r in results}
            for rel in target.manifest.digests:
                path = target.display(rel)
                if rel not in present and os.path.isfile(path):
                    extra.setdefault(path, set()).add(target.manifest.spec)
        return extra

    def _compare(self, target: Target, results: list[FileResult]) -> None:
        manifest = target.manifest
        assert manifest is not None
        present: dict[str, Seen] = {}
        for r in results:
            rel = None if r.kind in {"link", "missing"} else target.rel(r)
            if rel is None:
                continue
            digests = _digests(r, manifest.spec) if rel in manifest.digests else None
            why = None if digests is not None or r.error is not None else "the scan did not read the whole file"
            present[rel] = Seen(r.file_size, digests, why)
        outcome = compare(manifest, present, where=target.where, signature_rel=target.signature_rel)
        target.findings.extend((target.display(rel), slug, message, rel) for rel, slug, message in outcome.findings)
        target.matched = outcome.checked
        if outcome.findings:
            target.status = "mismatch"

    def _attach(self, target: Target, results: list[FileResult], policy: Policy | None) -> None:
        by_path = {r.path: r for r in results if r.kind != "link"}
        by_rel = {} if target.remote else {target.rel(r): r for r in results if r.kind not in {"link", "missing"}}
        for display, slug, message, rel in target.findings:
            items = apply_policy([make_finding(slug, message)], policy)
            result = (None if rel is None else by_rel.get(rel)) or by_path.get(display)
            if result is None:
                kind = "missing" if slug in {"signed-file-missing", "signature-missing"} else "other"
                result = FileResult(
                    path=display,
                    model=target.model,
                    kind=kind,
                    file_size=0,
                    file_kind=None if kind == "missing" else "model signature" if display == target.where else None,
                    policy=None if policy is None else policy.source,
                )
                results.append(result)
                by_path[display] = result
            result.items.extend(items)

    def notes(self) -> list[str]:
        """One line per verified signature, for stderr: what was checked."""
        lines = []
        for t in self.targets:
            if t.status in {"verified", "mismatch"} and t.manifest is not None:
                files = f"{t.matched} signed file{'s match' if t.matched != 1 else ' matches'}"
                bad = len(t.findings)
                tail = f"; {bad} finding{'s' if bad != 1 else ''} against it above" if bad else ""
                lines.append(f"{t.where}: signature {t.detail} ({t.manifest.spec.label}); {files}{tail}")
        return lines

    # -- the BOM -------------------------------------------------------------------------

    def models(self, results: Sequence[FileResult]) -> list[ModelGroup]:
        """The results grouped into the BOM's models, in order of first appearance."""
        groups: dict[str, ModelGroup] = {}
        for r in results:
            target = next((t for t in self.targets if t.rel(r) is not None), None)
            if target is not None:
                key, name, inner = target.name, target.name, target.rel(r) or r.path
            elif (prefix := _snapshot(r.path)) is not None and (r.model is not None or r.path.startswith("hf://")):
                key, name, inner = prefix, _model_name(prefix, r.model), r.path[len(prefix) :]
            else:
                key, name, inner = r.path, os.path.basename(r.path) or r.path, r.path
            group = groups.get(key)
            if group is None:
                group = groups[key] = ModelGroup(name, key)
                if target is not None:
                    group.signature, group.signature_detail = target.status, target.detail
            group.files.append((inner, r))
        return list(groups.values())


def _remote_seen(spec: DigestSpec, entry: HubEntry, data: bytes | None) -> Seen:
    """What the hub says of a signed file: its LFS sha256, or a small file's bytes."""
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
