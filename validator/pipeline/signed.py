# Strategy: `stcheck scan` of signed models (OpenSSF Model Signing, a
# `model.sig` over a folder, or a signature over a single file) and the
# grouping of results into models for the CycloneDX BOM.  The scan command
# calls, in order:
#   Signing.from_options    the options (one way to verify: --public-key,
#                        --certificate-chain or --identity/--issuer) and the
#                        paths left out (--ignore-path, the policy's
#                        ignore_paths: relative to each signed folder);
#   verify_sources       before any file is read: each folder argument's
#                        signature (DIR/model.sig, or --signature), or a
#                        file argument's (--signature, a single-file model),
#                        is verified by the library (scan/oms.py); an hf://
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
#                        once here, for its digest alone; each signature's
#                        record (FileResult.signature: verified or not, by
#                        whom, files compared and left out) goes on the
#                        signature's own result, which every report writes;
#   models               the BOM's models: a folder argument, a hub-cache
#                        snapshot, an hf:// folder, or a lone file.
# `stcheck download` with a key calls verify_download before it moves the
# staged files into place: the hf:// folder's signature, compared with the
# staged bytes of what was downloaded and the hub's listing for the rest.
# Without a key nothing is verified: a `model.sig` found gets the warning
# signature-not-verified.  model_signing is imported only when a key is given.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH100, PTH112, PTH113, PTH114, PTH116, PTH117, PTH118, PTH119, PTH123, PTH206
from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final, Protocol

from validator._check import make_finding
from validator.config.install import install_hint
from validator.config.policy import apply_policy
from validator.io.names import hub_snapshot
from validator.pipeline.engine import Job, run_jobs
from validator.report.bom import ModelGroup
from validator.report.results import FileResult
from validator.signing.base import Keys, SignatureRejectedError, Signed, SigningSetupError, verifier_for
from validator.signing.oms import MAX_SIGNATURE_SIZE
from validator.signing.signature import (
    SIGNATURE_NAME,
    SINGLE_FILE,
    Manifest,
    Outcome,
    Seen,
    UnsupportedError,
    compare,
    fit,
    relative_path,
    to_manifest,
)
from validator.signing.signhash import WHOLE_SHA256, DigestSpec, SignedDigester
from validator.sources.kinds import name_kind
from validator.sources.schemes import STDIN, is_remote

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from validator.config.policy import Policy
    from validator.config.settings import Network
    from validator.pipeline.engine import Options
    from validator.pipeline.hubcache import HubWalk
    from validator.remote._hub import HubEntry, HubRepo
    from validator.report.results import ResultKind


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
    def ignore_paths(self) -> Sequence[str]: ...
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
        if args.ignore_paths:
            raise ValueError("--ignore-path needs --public-key, --certificate-chain, or --identity with --issuer")
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
    single: bool = False  # a single-file model: ``given`` is the file, its one resource "."
    ignore: tuple[str, ...] = ()  # the user's ignore paths, relative to the folder
    source: str | None = None  # an hf:// folder's address, as given
    commit: str | None = None  # ...and the commit its one listing named
    signed: Signed | None = None  # the verified signature, as the verifier gave it
    outcome: Outcome | None = None  # the comparison

    def record(self, method: str | None, keys: Keys | None) -> dict[str, Any]:
        """What a report says of this signature (FileResult.signature;
        report.schema.json's signatureRecord)."""
        signer = None if self.signed is None else self.signed.signer
        outcome = self.outcome
        left_out = [] if outcome is None else outcome.ignored
        why = {} if outcome is None else outcome.why_ignored
        matched = [] if outcome is None else outcome.matched
        uncovered = self.not_covered()
        return {
            "path": self.where,
            "model": self.name,
            "commit": self.commit if self.commit is not None else self.snapshot_commit(),
            "method": method,
            "kind": None if keys is None else keys.kind,
            "status": self.status,
            "verified": self.status == "verified",
            "signature_valid": self.manifest is not None or self.status in {"verified", "mismatch", "unsupported"},
            "identity": None if signer is None else signer.identity,
            "issuer": None if signer is None else signer.issuer,
            "fingerprint": None if signer is None else signer.fingerprint,
            "digest": None if self.manifest is None else self.manifest.spec.label,
            "files_signed": None if self.manifest is None else len(self.manifest.digests),
            "files_compared": 0 if outcome is None else outcome.compared,
            "files_matched": self.matched,
            "files_ignored": len(left_out),
            "ignored": [self.display(rel) for rel in left_out[:MAX_LISTED]],
            "ignore_paths": list(self.ignore),
            "detail": self.detail,
            "matched": [self.display(rel) for rel in matched[:MAX_LISTED]],
            "left_out": [{"path": self.display(rel), "why": why.get(rel, "")} for rel in left_out[:MAX_LISTED]],
            "files_not_covered": len(uncovered),
            "not_covered": uncovered[:MAX_LISTED],
        }

    def not_covered(self) -> list[str]:
        """The files the scan found or read that the signature does not
        cover (each has an unsigned-file finding), as reports name them."""
        return [display for display, slug, _, _ in self.findings if slug == "unsigned-file"]

    def snapshot_commit(self) -> str | None:
        """A hub-cache snapshot's commit: its folder's name."""
        if self.prefix is None or "/snapshots/" not in self.prefix:
            return None
        return os.path.basename(self.prefix.rstrip("/")) or None

    @property
    def remote(self) -> bool:
        """An hf:// folder: compared with the hub's listing before the scan."""
        return self.prefix is not None and self.prefix.startswith("hf://")

    def rel(self, result: FileResult) -> str | None:
        """The result's path relative to the folder, or None when outside it."""
        path = result.path
        if self.single:
            same = result.model is None and not is_remote(path) and os.path.abspath(path) == self.root
            return SINGLE_FILE if same else None
        if self.prefix is not None:
            return path[len(self.prefix) :] if path.startswith(self.prefix) and len(path) > len(self.prefix) else None
        if self.root is None or result.model is not None or is_remote(path):
            return None
        return _inside(os.path.abspath(path), self.root)

    def display(self, rel: str) -> str:
        if self.prefix is not None:
            return self.prefix + rel
        assert self.given is not None
        return self.given if self.single else os.path.join(self.given, rel)


def _digests(result: FileResult, spec: DigestSpec) -> list[str] | None:
    if spec == WHOLE_SHA256:
        return None if result.sha256 is None else [result.sha256]
    return (result.signed or {}).get(spec.label)


def _inside(path: str, root: str) -> str | None:
    """``path`` relative to the folder ``root`` (both absolute), with ``/``
    separators, or None when it is the folder itself or not below it.  By
    whole components: ``..evil`` is a name inside the folder, ``..`` and
    ``../x`` lead out of it."""
    rel = os.path.relpath(path, root)
    parts = rel.split(os.sep)
    if rel in {".", os.curdir} or parts[0] == os.pardir or os.path.isabs(rel):
        return None
    return "/".join(parts)


def _ignore_paths(paths: Sequence[str]) -> tuple[str, ...]:
    """The ignore paths as given, each checked: an absolute path is kept
    (each folder takes those inside it), a relative one normalised; raise
    ValueError for one that names the folder itself or leads out of it."""
    out = []
    for path in paths:
        if os.path.isabs(path):
            out.append(os.path.normpath(path))
            continue
        rel = relative_path(path.replace(os.sep, "/"))
        if rel is None:
            msg = (
                f"--ignore-path {path}: give a path inside the signed folder, relative to it "
                "(a folder covers what is below it)"
            )
            raise ValueError(msg)
        out.append(rel)
    return tuple(dict.fromkeys(out))


def _ignores_for(paths: Sequence[str], root: str | None) -> tuple[str, ...]:
    """The ignore paths relative to a folder: an absolute one inside the
    local folder ``root`` (None: a hub folder) made relative, as
    model_signing joins each to the model path; one outside it matches nothing."""
    out = []
    for path in paths:
        if not os.path.isabs(path):
            out.append(path)
        elif root is not None and (rel := _inside(path, root)) is not None:
            out.append(rel)
    return tuple(out)


MAX_LISTED: Final = 100  # files left out that a signature's record names (all are counted)


class Signing:
    """The signed-model checks of one `stcheck scan` run (see the strategy)."""

    def __init__(
        self, keys: Keys | None, signature: str | None, *, bom: bool, ignore_paths: Sequence[str] = ()
    ) -> None:
        self.keys = keys
        self.signature = signature
        self.bom = bom
        self.ignore_paths = _ignore_paths(ignore_paths)
        self.verifier = None if keys is None else verifier_for(keys)
        self.targets: list[Target] = []

    @classmethod
    def from_options(cls, options: KeyOptions, policy: Policy | None = None) -> Signing:
        """Raise ValueError for bad options, SigningSetupError when the keys
        cannot be used.  The policy's ignore_paths add to the options'."""
        keys = keys_from_options(options)
        ignore = [*options.ignore_paths, *(() if policy is None else policy.ignore_paths)]
        return cls(keys, options.signature, bom=options.bom, ignore_paths=ignore)

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
        files = [p for p in paths if not is_remote(p) and p not in folders and os.path.isfile(p)]
        self._check_paths(paths, folders, files)
        hubs = [p for p in paths if p.startswith("hf://")]
        absent = [p for p in paths if not is_remote(p) and not os.path.lexists(p)]
        if (
            not folders and not files and not hubs and not hf_cache and not absent
        ):  # (an absent path is the scan's error)
            raise ValueError("--public-key, --certificate-chain and --identity verify a folder: give DIR")
        if self.signature is not None and len(folders) + len(files) + len(hubs) + hf_cache > 1:
            raise ValueError("--signature names the signature of one model, but several were given")
        for folder in folders:
            sig = self.signature or os.path.join(folder, SIGNATURE_NAME)
            root = os.path.abspath(folder)
            inside = _inside(os.path.abspath(sig), root)
            target = Target(folder, sig, inside, folder, root, ignore=_ignores_for(self.ignore_paths, root))
            self._verify(target, sig)
            self.targets.append(target)
        for file in files:
            assert self.signature is not None
            target = Target(file, self.signature, None, file, os.path.abspath(file), single=True)
            self._verify(target, self.signature)
            self.targets.append(target)
        for source in hubs:
            self.targets.append(self._remote(source, network))

    def _check_paths(self, paths: Sequence[str], folders: Sequence[str], files: Sequence[str]) -> None:
        """Refuse, with a key given, an argument no signature can cover."""
        for path in paths:
            if path == STDIN:
                raise ValueError(f"{STDIN}: standard input carries no model signature; give the signed folder or file")
            if is_remote(path) and not path.startswith("hf://"):
                raise ValueError(f"{path}: an http(s) URL carries no model signature; give an hf:// folder")
            if not is_remote(path) and path not in folders and path not in files and os.path.lexists(path):
                raise ValueError(f"{path}: a model signature covers a folder or a regular file")
            if path in files and self.signature is None:
                msg = (
                    f"{path}: a single-file model's signature is given with --signature PATH "
                    f"(a folder's is DIR/{SIGNATURE_NAME})"
                )
                raise ValueError(msg)

    def _verify(self, target: Target, path: str | None) -> None:
        assert self.verifier is not None
        assert self.keys is not None
        if path is None or not os.path.lexists(path):
            target.status = "missing"
            why = "no model signature here: sign the folder, or give --signature PATH"
            target.findings.append((target.where, "signature-missing", why, None))
            return
        try:
            target.signed = self.verifier.verify(path)
            target.manifest = fit(to_manifest(target.signed), single_file=target.single)
            target.status, target.detail = "verified", f"verified with {self.keys.describe()}"
        except SignatureRejectedError as exc:
            target.status, target.detail = "invalid", str(exc)
            target.findings.append(
                (target.where, "signature-invalid", f"does not verify with {self.keys.describe()}: {exc}", None)
            )
        except UnsupportedError as exc:
            target.status, target.detail = "unsupported", str(exc)
            target.findings.append((target.where, "signature-unsupported", f"the signature verifies, but {exc}", None))

    def verify_download(
        self, source: str, network: Network, staged: Mapping[str, str], listed: HubRepo | None = None
    ) -> list[tuple[str, str, str, str | None]]:
        """`stcheck download`'s check before its final move: the signature of
        the hf:// folder ``source`` verified, and its digests compared with
        the files staged (repository path -> the staged copy, read here) and,
        for the files not downloaded, with the hub's listing ``listed``, the
        one the download was made from (None: listed here).  Return the
        findings (an empty list: the download may be kept)."""
        if not source.startswith("hf://"):
            raise ValueError(f"{source}: an http(s) URL carries no model signature; give an hf:// folder")
        target = self._remote(source, network, staged, listed)
        self.targets.append(target)
        return target.findings

    def pinned(self, paths: Sequence[str]) -> list[str]:
        """The paths, each hf:// one whose signature verify_sources checked
        pinned to the commit it listed: the scan reads the files of the
        commit that was compared, never the branch's next answer."""
        commits = {t.source: t.commit for t in self.targets if t.source is not None and t.commit is not None}
        if not commits:
            return list(paths)
        from validator.remote._signed import pinned  # noqa: PLC0415 - the remote extra loads only for hf://

        return [pinned(p, commits[p]) if p in commits else p for p in paths]

    def _remote(
        self, source: str, network: Network, staged: Mapping[str, str] | None = None, listed: HubRepo | None = None
    ) -> Target:
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
        found = hub_folder(source, opts, listed)
        prefix = found.display("x")[:-1]
        files = found.files()
        base = found.folder + "/" if found.folder else ""
        local = {p[len(base) :]: path for p, path in (staged or {}).items() if p.startswith(base)}
        target = Target(
            prefix.rstrip("/"),
            self.signature or prefix + SIGNATURE_NAME,
            None if self.signature else SIGNATURE_NAME,
            ignore=_ignores_for(self.ignore_paths, None),
        )
        target.prefix, target.source, target.commit = prefix, source, found.repo.commit
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
        small = sorted(
            rel for rel, e in files.items() if rel in manifest.digests and e.sha256 is None and rel not in local
        )
        fetched = fetch_files(found, small, opts) if small else {}
        seen = {
            rel: _staged_seen(manifest.spec, local[rel])
            if rel in local and rel in manifest.digests
            else _remote_seen(manifest.spec, entry, fetched.get(rel))
            if rel in manifest.digests
            else Seen(entry.size, None)
            for rel, entry in files.items()
        }
        outcome = compare(manifest, seen, where=target.where, signature_rel=target.signature_rel, ignore=target.ignore)
        target.findings.extend((target.display(rel), slug, message, None) for rel, slug, message in outcome.findings)
        target.matched, target.outcome = outcome.checked, outcome
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
                _model_name(prefix, model),
                where,
                None if self.signature else SIGNATURE_NAME,
                prefix=prefix,
                ignore=_ignores_for(self.ignore_paths, None),
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
            self._records(results, policy)
            return results
        results = self._read_rest(results, options)
        for target in self.targets:
            if target.manifest is not None and not target.remote:
                self._compare(target, results)
            self._attach(target, results, policy)
        self._records(results, policy)
        return results

    def _records(self, results: list[FileResult], policy: Policy | None) -> None:
        """Each signature's record, on the signature's own result (one made
        for a signature outside what was scanned)."""
        method = None if self.verifier is None else self.verifier.method
        by_path = {r.path: r for r in results if r.kind != "link"}
        for target in self.targets:
            if target.status == "none":
                continue
            result = by_path.get(target.where)
            if result is None:
                result = FileResult(
                    path=target.where,
                    model=target.model,
                    kind="other",
                    file_size=None if target.remote else _size(target.where),
                    file_kind="model signature",
                    policy=None if policy is None else policy.source,
                )
                results.append(result)
                by_path[target.where] = result
            result.signature = target.record(method, self.keys)

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
        outcome = compare(
            manifest,
            present,
            where=target.where,
            signature_rel=target.signature_rel,
            ignore=target.ignore,
            odd=_odd_entries(target),
        )
        target.findings.extend((target.display(rel), slug, message, rel) for rel, slug, message in outcome.findings)
        if target.single:
            target.findings.extend(_read_through(target, results))
        target.matched, target.outcome = outcome.checked, outcome
        if target.findings:
            target.status = "mismatch"

    def _attach(self, target: Target, results: list[FileResult], policy: Policy | None) -> None:
        by_path = {r.path: r for r in results if r.kind != "link"}
        by_rel = {} if target.remote else {target.rel(r): r for r in results if r.kind not in {"link", "missing"}}
        for display, slug, message, rel in target.findings:
            items = apply_policy([make_finding(slug, message)], policy)
            result = (None if rel is None else by_rel.get(rel)) or by_path.get(display)
            if result is None:
                kind: ResultKind = "missing" if slug in {"signed-file-missing", "signature-missing"} else "other"
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
                left = [] if t.outcome is None else t.outcome.ignored
                if left:
                    shown = ", ".join(left[:3]) + (f" and {len(left) - 3} more" if len(left) > 3 else "")
                    files += f"; {len(left)} left out ({shown})"
                uncovered = t.not_covered()
                if uncovered:
                    shown = ", ".join(uncovered[:3]) + (f" and {len(uncovered) - 3} more" if len(uncovered) > 3 else "")
                    files += f"; {len(uncovered)} not covered ({shown})"
                bad = len(t.findings)
                tail = f"; {bad} finding{'s' if bad != 1 else ''} against it above" if bad else ""
                commit = t.commit or t.snapshot_commit()
                at = f" at commit {commit}" if commit else ""
                lines.append(f"{t.where}: signature {t.detail}{at} ({t.manifest.spec.label}); {files}{tail}")
        return lines

    # -- the BOM -------------------------------------------------------------------------

    def models(self, results: Sequence[FileResult]) -> list[ModelGroup]:
        """The results grouped into the BOM's models, in order of first appearance."""
        groups: dict[str, ModelGroup] = {}
        for r in results:
            target = next((t for t in self.targets if t.rel(r) is not None), None)
            if target is not None:
                rel = target.rel(r)
                inner = os.path.basename(r.path) if rel == SINGLE_FILE else rel or r.path
                key, name = target.name, target.name
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


def _read_through(target: Target, results: list[FileResult]) -> list[tuple[str, str, str, str | None]]:
    """A single-file signature covers that file alone: every other file the
    scan read because of it (an index's shards; the scan was given that one
    file) is unsigned-file (spec: Signed models)."""
    out: list[tuple[str, str, str, str | None]] = []
    for r in results:
        if r.kind in {"link", "missing"} or r.path == target.where or target.rel(r) is not None:
            continue
        message = (
            f"read through {target.given}, but {target.where} signs {target.given} alone: "
            "a single-file signature covers no other file (sign the folder)"
        )
        out.append((r.path, "unsigned-file", message, None))
    return out


def _odd_entries(target: Target) -> dict[str, str]:
    """What a local signed folder (or the single file given) holds that is
    not a plain file or folder, as model_signing's verify walks it: every
    entry, below .git and the ignore paths too, links not followed
    (path relative to the folder -> "link" or "special")."""
    if target.root is None or target.given is None:
        return {}
    if target.single:
        return {SINGLE_FILE: "link"} if os.path.islink(target.given) else {}
    odd = {SINGLE_FILE: "link"} if os.path.islink(target.given.rstrip(os.sep) or os.sep) else {}
    for top, dirs, files in os.walk(target.root, followlinks=False):
        for name in [*dirs, *files]:
            path = os.path.join(top, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode) or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                rel = os.path.relpath(path, target.root).replace(os.sep, "/")
                odd[rel] = "link" if stat.S_ISLNK(mode) else "special"
    return odd


def _size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _staged_seen(spec: DigestSpec, path: str) -> Seen:
    """A downloaded file's digests, from its staged copy (read once here)."""
    size = os.stat(path).st_size
    digester = SignedDigester(size, [spec])
    with open(path, "rb") as fh:
        while chunk := fh.read(8 << 20):
            digester.update(memoryview(chunk))
    return Seen(size, digester.signed()[spec.label])


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
