# Strategy: one signed (or signable) model as the signatures stage follows
# it: a folder argument, a single file given with its signature, a
# hub-cache snapshot, or a remote folder listed before the scan.  It keeps
# what the verification and the comparison found, names its files as
# reports name them (``rel``, ``display``), and writes the record every
# report carries (``record``; report.schema.json's signatureRecord).
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH100, PTH117, PTH118, PTH119, PTH206
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from validator.signing.signature import SINGLE_FILE
from validator.sources.schemes import is_remote

if TYPE_CHECKING:
    from validator.report.results import FileResult
    from validator.signing.base import Keys, Signed
    from validator.signing.signature import Manifest, Outcome

__all__ = ["MAX_LISTED", "Flagged", "SignedModel", "Status", "inside"]

MAX_LISTED: Final = 100  # files left out that a signature's record names (all are counted)

Status = Literal["none", "not-verified", "missing", "verified", "invalid", "unsupported", "mismatch"]


@dataclass(frozen=True)
class Flagged:
    """A finding against one file of a model: where reports name it, the
    rule's slug, the message, and the file relative to the folder (None:
    the signature itself, or a file outside the folder)."""

    display: str
    slug: str
    message: str
    rel: str | None = None


def inside(path: str, root: str) -> str | None:
    """``path`` relative to the folder ``root`` (both absolute), with ``/``
    separators, or None when it is the folder itself or not below it.  By
    whole components: ``..evil`` is a name inside the folder, ``..`` and
    ``../x`` lead out of it."""
    rel = os.path.relpath(path, root)
    parts = rel.split(os.sep)
    if rel in {".", os.curdir} or parts[0] == os.pardir or os.path.isabs(rel):
        return None
    return "/".join(parts)


@dataclass
class SignedModel:
    """One signed (or signable) model: a local folder or file (``given``,
    ``root``), or a hub snapshot or remote folder (``prefix`` names its files)."""

    name: str
    where: str  # the signature, as reports name it
    signature_rel: str | None  # the signature's path in the folder (None: outside it)
    given: str | None = None  # a local folder or file, as given
    root: str | None = None  # ...and its absolute path
    prefix: str | None = None  # a hub snapshot's or remote folder's display prefix
    model: str | None = None  # a hub snapshot's repository
    single: bool = False  # a single-file model: ``given`` is the file, its one resource "."
    listed: bool = False  # a remote folder: compared with its listing before the scan
    ignore: tuple[str, ...] = ()  # the user's ignore paths, relative to the folder
    source: str | None = None  # a remote folder's address, as given
    commit: str | None = None  # ...and the commit its one listing named
    pinned: str | None = None  # ...and the address at that commit
    signature_size: int | None = None  # ...and the size of the signature fetched from it
    status: Status = "none"
    detail: str | None = None
    manifest: Manifest | None = None
    signed: Signed | None = None  # the verified signature, as the verifier gave it
    outcome: Outcome | None = None  # the comparison
    matched: int = 0  # signed files whose digests matched
    findings: list[Flagged] = field(default_factory=list)

    @property
    def compared_here(self) -> bool:
        """Verified, and compared with what the scan reads (not with a listing)."""
        return self.manifest is not None and not self.listed

    def rel(self, result: FileResult) -> str | None:
        """The result's path relative to the model, or None when outside it."""
        path = result.path
        if self.single:
            same = result.model is None and not is_remote(path) and os.path.abspath(path) == self.root
            return SINGLE_FILE if same else None
        if self.prefix is not None:
            return path[len(self.prefix) :] if path.startswith(self.prefix) and len(path) > len(self.prefix) else None
        if self.root is None or result.model is not None or is_remote(path):
            return None
        return inside(os.path.abspath(path), self.root)

    def display(self, rel: str) -> str:
        """A file of the model as reports name it."""
        if self.prefix is not None:
            return self.prefix + rel
        assert self.given is not None
        return self.given if self.single else os.path.join(self.given, rel)

    def flag(self, rel: str | None, slug: str, message: str, display: str | None = None) -> None:
        """Add a finding against the model's file ``rel`` (None: the signature)."""
        where = display if display is not None else self.where if rel is None else self.display(rel)
        self.findings.append(Flagged(where, slug, message, rel))

    def not_covered(self) -> list[str]:
        """The files the scan found or read that the signature does not
        cover (each has an unsigned-file finding), as reports name them."""
        return [f.display for f in self.findings if f.slug == "unsigned-file"]

    def snapshot_commit(self) -> str | None:
        """A hub-cache snapshot's commit: its folder's name."""
        if self.prefix is None or "/snapshots/" not in self.prefix:
            return None
        return os.path.basename(self.prefix.rstrip("/")) or None

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
