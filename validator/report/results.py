# Strategy: what `stcheck check` and `stcheck scan` report about one file,
# as plain data that every output format reads (validator.report.formats).
# The scan engine fills a FileResult in its worker processes; `check` builds
# them from the validator's reports in its own process (validator.pipeline.plan),
# and the judge (validator.pipeline.judge) applies the policy to them.
# This module imports only the core and the policy's item type, so that
# `stcheck check FILE` loads neither the scan engine, nor multiprocessing,
# nor numpy (tests/test_layering.py).
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from validator._findings import ReportBase
from validator._rules import Severity
from validator.config.policy import ScanItem

if TYPE_CHECKING:
    from collections.abc import Sequence

    from validator._findings import Finding
    from validator.read.identity import Stamp

__all__ = [
    "EXIT_ERROR",
    "EXIT_INVALID",
    "EXIT_OK",
    "NOT_READ",
    "FailOn",
    "FileResult",
    "ReadRecord",
    "ResultKind",
    "exit_status",
]

# What a result is about: a safetensors file; a hub blob or a file read for
# its digest only; a checkpoint's index; a link the walk flagged; another
# file of a folder; a file a checksum list or a signature names, not on disk.
ResultKind: TypeAlias = Literal["safetensors", "blob", "index", "link", "other", "missing"]
# Which findings fail a run (--fail-on).
FailOn: TypeAlias = Literal["error", "warning", "never"]

# The exit status of every command and of the library's vet().
EXIT_OK: Final = 0  # no failing finding
EXIT_INVALID: Final = 1  # a finding at a failing severity (after the policy)
EXIT_ERROR: Final = 2  # a usage or I/O error: unreadable input, nothing to check


@dataclass(frozen=True, slots=True)
class ReadRecord:
    """Which bytes a verdict is about (validator.read.identity), as the read
    stage saw them: for the results cache, never part of a report."""

    stamp: Stamp | None = None  # the descriptor's fstat at open; None: not read, or changed while read
    header_span: int = 0  # validation read bytes [0, header_span)...
    header_sha256: str | None = None  # ...whose sha256 this is


NOT_READ: Final = ReadRecord()


@dataclass
class FileResult(ReportBase[ScanItem]):
    """Everything a check or a scan learned about one file.

    Its ``findings`` are the items the policy did not suppress."""

    path: str
    model: str | None = None
    kind: ResultKind = "safetensors"
    file_size: int | None = None
    header_size: int | None = None
    tensor_count: int | None = None
    items: list[ScanItem] = field(default_factory=list)
    sha256: str | None = None
    bytes_read: int = 0
    deep: dict[str, Any] | None = None
    error: str | None = None
    seconds: float = 0.0
    profile: str = "strict"
    metadata: dict[str, str] | None = None
    policy: str | None = None  # where the policy in force came from
    not_listed: int = 0  # findings beyond the per-rule cap: counted, not kept
    cached: bool = False  # replayed from a results cache (validator.pipeline.cache), not read
    signed: dict[str, list[str]] | None = None  # the job's `digests`, by label (signing.signhash); never reported
    dtypes: dict[str, list[int]] | None = None  # dtype -> [tensors, parameters], for the CycloneDX BOM
    read: ReadRecord = NOT_READ  # which bytes the verdict is about: for the cache, never reported
    checked: tuple[str, str, str] | None = None  # the digest compared with: (algorithm, hex, source)
    file_kind: str | None = None  # a folder's other file: its kind (sources.kinds), set by pipeline.verdicts
    pickle: dict[str, Any] | None = None  # a pickle's static reading (validator.sources.kinds.pickle_json)
    reference_valid: bool | None = None  # safetensors 0.8.0 reads it (Report.reference_valid); None: not validated
    # What `check` and `inspect` know beyond a scan: the tensor table (JSON
    # form), and for an index its checkpoint's totals, shard paths and, for
    # inspect, its weight_map.  A scan leaves them None (it reports counts).
    tensors: dict[str, Any] | None = None
    checkpoint: dict[str, Any] | None = None
    revision: str | None = None  # --hf-cache: the snapshot's revision (model is the repository id)
    # A model signature's result: what its verification found
    # (validator.pipeline.signatures.SignedModel.record; report.schema.json's signatureRecord).
    signature: dict[str, Any] | None = None
    # Raw findings added after the read (a signature's), judged with the
    # items by the policy, once (validator.pipeline.judge); never reported.
    pending: list[Finding] = field(default_factory=list)

    @property
    def active(self) -> list[ScanItem]:
        """Items that are not suppressed."""
        return [i for i in self.items if i.suppressed is None]

    @property
    def findings(self) -> tuple[ScanItem, ...]:
        """The items that are not suppressed."""
        return tuple(self.active)

    @property
    def valid(self) -> bool:
        """Readable, and no unsuppressed item at error severity."""
        return self.error is None and super().valid

    @property
    def digest_matches(self) -> bool | None:
        """Whether the file's digest equals the one it was checked against
        (--sha256, --checksums, a hub blob's name); None when none was."""
        if self.checked is None:
            return None
        return not any(i.finding.slug == "checksum-mismatch" for i in self.items)

    def to_json(self) -> dict[str, Any]:
        """A readable file's entry: report.schema.json's fileReport plus the
        scan's own fields.  (Unreadable files are listed in the summary's
        ``unreadable``.)  ``tensors`` is null in a scan, which reports
        ``tensor_count`` instead."""
        doc: dict[str, Any] = {
            "path": self.path,
            "valid": self.valid,
            "profile": self.profile,
            "file_size": self.file_size,
            "header_size": self.header_size,
            "findings": [i.to_json() for i in self.items],
            "tensors": self.tensors,
            "metadata": self.metadata,
            "model": self.model,
            "kind": self.kind,
            "tensor_count": self.tensor_count,
            "sha256": self.sha256,
            "bytes_read": self.bytes_read,
            "deep": self.deep,
            "policy": self.policy,
            "suppressed": self.not_listed,
            "reference_valid": self.reference_valid,
        }
        if self.checked is not None:
            algorithm, hexdigest, source = self.checked
            doc["checksum"] = {
                "algorithm": algorithm,
                "expected": hexdigest,
                "source": source,
                "matches": self.digest_matches,
            }
        if self.cached:
            doc["cached"] = True
        if self.file_kind is not None:
            doc["file_kind"] = self.file_kind
        if self.pickle is not None:
            doc["pickle"] = self.pickle
        if self.revision is not None:
            doc["revision"] = self.revision
        if self.checkpoint is not None:
            doc["checkpoint"] = self.checkpoint
        if self.signature is not None:
            doc["signature"] = dict(self.signature)
        return doc


def exit_status(results: Sequence[FileResult], errors: Sequence[str], fail_on: FailOn | str) -> int:
    """0 clean, 1 failing findings (after the policy and ``fail_on``: error,
    warning or never), 2 unreadable input."""
    if errors or any(r.error is not None for r in results):
        return EXIT_ERROR
    if fail_on == "never":
        return EXIT_OK
    failing = {Severity.ERROR} if fail_on == "error" else {Severity.ERROR, Severity.WARNING}
    if any(i.severity in failing for r in results for i in r.active):
        return EXIT_INVALID
    return EXIT_OK
