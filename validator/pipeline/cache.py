# Strategy: a results cache for `stcheck scan --cache`, so that re-scanning
# a model store after a small change reads only what changed.  A row is
# keyed by two strings:
#   identity: what the file is.  A local file: its absolute path, size,
#     mtime_ns, ctime_ns, device and inode (ctime cannot be set back by a
#     user, so a rewrite that restores the mtime still misses).  A remote
#     file: its URL plus the server's ETag or the hub's blob id.  The
#     identity stored is that of the descriptor that was read, and only
#     when the path named the same file before and after the scan
#     (validator/read/identity.py); the value holds the sha256 of the
#     prefix and header that were judged, re-read and compared on every hit.
#   context: how it was scanned.  A sha256 over the tool version, a digest
#     of the rule catalogue, the profile, the policy's content, the deep
#     flag, and the digest the file was checked against (--sha256,
#     --checksums, a hub blob name), so any change of rules or settings
#     misses instead of replaying stale findings.
# The value is the file's FileResult as JSON.  An unreadable file and a
# timed-out scan are never stored: both may succeed next time.  What it says
# about the run rather than the file (the policy file's name) is filled in
# from the run that replays it.
#
# Writers: the process that drives a scan writes each result as it arrives,
# in a transaction of its own, so a killed run keeps everything it finished
# and a re-run resumes.  The stores (SQLite, PostgreSQL) are in
# validator/pipeline/cache_stores.py.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH100, PTH116
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from validator._findings import Finding
from validator._rules import BY_CODE, RULES, Severity
from validator._version import __version__
from validator.config.policy import ScanItem
from validator.pipeline.cache_stores import (
    SCHEMA,
    CacheError,
    Key,
    PostgresCache,
    ResultCache,
    SqliteCache,
    open_cache,
)
from validator.pipeline.engine import choose_expected, job_options
from validator.read.identity import same_file, stamp_of, still_judged
from validator.read.integrity import lookup
from validator.report.results import FileResult, ReadRecord

if TYPE_CHECKING:
    from collections.abc import Sequence

    from validator.config.policy import Policy
    from validator.pipeline.engine import Job, Options
    from validator.read.identity import Stamp
    from validator.read.integrity import Expected

__all__ = [
    "SCHEMA",
    "UNCACHEABLE_RULES",
    "CacheError",
    "Key",
    "Lookup",
    "PostgresCache",
    "ResultCache",
    "SqliteCache",
    "cacheable",
    "decode",
    "encode",
    "file_identity",
    "job_context",
    "local_identity",
    "open_cache",
    "policy_hash",
    "remote_identity",
    "scan_context",
]

# Findings that describe the run rather than the file: never stored.
UNCACHEABLE_RULES: Final = frozenset({"scan-timeout"})


# -- keys --------------------------------------------------------------------


def local_identity(path: str) -> str | None:
    """A local file's identity, or None when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return file_identity(path, stamp_of(st))


def file_identity(path: str, stamp: Stamp) -> str:
    """The identity of the file ``path`` names, from its stamp."""
    size, mtime_ns, ctime_ns, inode, device = stamp
    # The same text as _text() of the list [kind, path, size, mtime, ctime,
    # device, inode] (existing caches stay valid), spelt out: it is made once
    # per file of every scan through the cache.
    return f'["file",{json.dumps(os.path.abspath(path))},{size},{mtime_ns},{ctime_ns},{device},{inode}]'


def _stamp_in(identity: str) -> Stamp | None:
    """The stamp a local file's identity was made from; None for a remote one."""
    if not identity.startswith('["file",'):
        return None
    # The five numbers end the list (the path before them may hold commas):
    # split from the right rather than parse the JSON, once per file of a warm scan.
    size, mtime_ns, ctime_ns, device, inode = map(int, identity[:-1].rsplit(",", 5)[1:])
    return (size, mtime_ns, ctime_ns, inode, device)


def remote_identity(url: str, *, etag: str | None = None, blob_id: str | None = None) -> str | None:
    """A remote file's identity from its ETag or hub blob id; None without either.

    A weak ETag (``W/"..."``) promises equivalent, not identical, bytes, so
    it is not an identity: such a file is always scanned.
    """
    if blob_id:
        return _text(["blob", url, blob_id])
    if etag and not etag.startswith("W/"):
        return _text(["etag", url, etag])
    return None


def _text(doc: object) -> str:
    # JSON, ASCII only: unambiguous for any path (a file name that is not
    # UTF-8 arrives as lone surrogates, escaped here), and storable as TEXT
    # in SQLite and PostgreSQL alike (which refuses NUL in text).
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _digest(doc: object) -> str:
    return hashlib.sha256(_text(doc).encode()).hexdigest()


def policy_hash(policy: Policy | None) -> str | None:
    """A digest of what a policy decides (its file name left out)."""
    if policy is None:
        return None
    return _digest(
        {
            "max_file_size": policy.max_file_size,
            "max_header_size": policy.max_header_size,
            "max_tensors": policy.max_tensors,
            "allowed_dtypes": None if policy.allowed_dtypes is None else sorted(policy.allowed_dtypes),
            "forbidden_dtypes": sorted(policy.forbidden_dtypes),
            "required_metadata": list(policy.required_metadata),
            "rules": {
                slug: [s.reason, None if s.severity is None else s.severity.value, s.ignore]
                for slug, s in sorted(policy.rules.items())
            },
        }
    )


def _catalogue() -> str:
    return _digest([[r.code, r.slug, r.severity.value, sorted(p.value for p in r.profiles)] for r in RULES])


def scan_context(options: Options) -> dict[str, Any]:
    """What every file of one scan shares in its cache key."""

    return {
        "schema": SCHEMA,
        "version": __version__,
        "rules": _catalogue(),
        "profile": options.profile.value,
        "policy": policy_hash(options.policy),
        "deep": options.deep,
    }


def job_context(
    base: dict[str, Any], job: Job, options: Options, listed: Expected | None, memo: dict[Any, str] | None = None
) -> str:
    """The context part of one job's key: the scan's settings plus the digest
    this file is checked against, exactly as the engine chooses it.
    ``listed`` is the --checksums line for the job, looked up once by the
    caller, so that the key and the check compared after the scan are made
    from the same line.

    ``memo``, shared by the calls of one scan (same ``base`` and
    ``options``), holds the digests already made: most files share their
    context, and a digest of the whole rule catalogue per file was most of
    a warm re-scan's time.
    """
    listed_fields = None if listed is None else listed.fields()
    expected = None if job.expected is None else job.expected.fields()
    memo = {} if memo is None else memo
    policy = base["policy"]
    if job.policy is not None:  # alive as long as the job: its id is a safe key meanwhile
        policy = memo.get(("policy", id(job.policy))) or policy_hash(job.policy) or ""
        memo[("policy", id(job.policy))] = policy
    # The digests a model signature asks for are part of how the file was
    # read: a row without them must not answer a scan that compares them.
    digests = [[d.algorithm, d.shard_size] for d in sorted(job.digests)]
    fields = (policy, job.validate, job.checksum_required, expected, listed_fields, repr(digests))
    known = memo.get(fields)
    if known is not None:
        return known
    memo[fields] = made = _digest(
        {
            **base,
            "policy": policy,
            "validate": job.validate,
            "checksum_required": job.checksum_required,
            "expected": None if expected is None else list(expected),
            "sha256": options.sha256,
            "checksums": options.checksums is not None,
            "listed": None if listed_fields is None else list(listed_fields),
            **({"digests": digests} if digests else {}),
        }
    )
    return made


# -- values ------------------------------------------------------------------


def cacheable(result: FileResult) -> bool:
    """Whether a result describes the file (not the run) and may be stored."""
    return result.error is None and not any(i.finding.slug in UNCACHEABLE_RULES for i in result.items)


def encode(result: FileResult) -> str:
    """A result as the JSON text stored in the cache."""
    items = [
        [
            i.finding.code,
            i.finding.message,
            i.finding.offset,
            i.finding.tensor,
            i.finding.json_path,
            i.severity.value,
            i.suppressed,
            i.reason,
        ]
        for i in result.items
    ]
    doc = {
        "kind": result.kind,
        "file_size": result.file_size,
        "header_size": result.header_size,
        "tensor_count": result.tensor_count,
        "sha256": result.sha256,
        "bytes_read": result.bytes_read,
        "deep": result.deep,
        "profile": result.profile,
        "metadata": result.metadata,
        "policy": result.policy,
        "not_listed": result.not_listed,
        "signed": result.signed,
        "dtypes": result.dtypes,
        "header_span": result.read.header_span,
        "header_sha256": result.read.header_sha256,
        "reference_valid": result.reference_valid,
        "items": items,
    }
    return _text(doc)


def decode(text: str, job: Job, options: Options) -> FileResult | None:
    """A stored result, named as ``job`` names it, under this run's policy
    file; None if it does not parse (or predates the header digest).

    It is marked ``cached``, and ``bytes_read`` is 0: nothing was read."""
    policy = job_options(job, options).policy
    try:
        doc = json.loads(text)
        span, digest = doc["header_span"], doc["header_sha256"]
        if not isinstance(span, int) or (span and not isinstance(digest, str)):
            return None
        items = [
            ScanItem(
                Finding(BY_CODE[code], message, offset, tensor, json_path),
                Severity(severity),
                suppressed=suppressed,
                reason=reason,
            )
            for code, message, offset, tensor, json_path, severity, suppressed, reason in doc["items"]
        ]
        display, model = job.names[0]
        return FileResult(
            path=display,
            model=model,
            kind=doc["kind"],
            file_size=doc["file_size"],
            header_size=doc["header_size"],
            tensor_count=doc["tensor_count"],
            items=items,
            sha256=doc["sha256"],
            bytes_read=0,
            deep=doc["deep"],
            profile=doc["profile"],
            metadata=doc["metadata"],
            # The policy's content is part of the key, its file name is not:
            # two files of the same content share rows, and a hit names the
            # file in force for this run, never the one of the run that stored it.
            policy=None if policy is None else policy.source,
            not_listed=doc.get("not_listed", 0),
            signed=doc.get("signed"),
            dtypes=doc.get("dtypes"),
            cached=True,
            read=ReadRecord(header_span=span, header_sha256=digest),
            reference_valid=doc.get("reference_valid"),
        )
    except (ValueError, KeyError, TypeError):
        return None


# -- a scan through the cache ------------------------------------------------


class Lookup:
    """The cache's answer for a list of jobs: the results it holds, and the
    keys under which the others are to be stored once scanned.

    A stored row is a hit only when the path still names the file of its
    identity and that file's prefix and header are still the bytes judged
    (re-read and compared by sha256).  A fresh result is stored only when
    the bytes read are the ones its key names: the stat before the scan,
    the descriptor's stamp at open and when the read was done, and the stat
    after the scan agree, and the digest checked is the one in the key.
    ``same_host=False`` (results from cluster workers) leaves the device
    number out of the comparison with the workers' stamps."""

    def __init__(
        self,
        cache: ResultCache,
        jobs: Sequence[Job],
        options: Options,
        identities: Sequence[str | None],
        *,
        same_host: bool = True,
    ) -> None:
        self.cache = cache
        self.jobs = jobs
        self.same_host = same_host
        base = scan_context(options)
        memo: dict[Any, str] = {}
        self.keys: list[Key | None] = []
        self.expected: list[tuple[str, str, str] | None] = []  # the digest each key was made with
        for job, identity in zip(jobs, identities, strict=True):
            listed = None if options.checksums is None or identity is None else lookup(options.checksums, job.path)
            expected, _ = choose_expected(job, options, listed)
            self.expected.append(None if expected is None else expected.fields())
            self.keys.append(None if identity is None else (identity, job_context(base, job, options, listed, memo)))
        stored = cache.get_many([k for k in self.keys if k is not None])
        self.hits: dict[int, FileResult] = {}
        for i, (job, key) in enumerate(zip(jobs, self.keys, strict=True)):
            text = None if key is None else stored.get(key)
            result = None if text is None else decode(text, job, options)
            if result is not None and self._still_judged(i, result):
                # The digest checked is part of the key: a hit was checked against this one.
                self.hits[i] = replace(result, checked=self.expected[i])
        self.stored = 0
        self.changed = 0  # fresh results not stored: the path named other bytes at some point

    def _still_judged(self, index: int, result: FileResult) -> bool:
        key = self.keys[index]
        stamp = None if key is None else _stamp_in(key[0])
        path = self.jobs[index].path
        return stamp is not None and still_judged(path, stamp, result.read.header_span, result.read.header_sha256)

    def _same_bytes(self, index: int, result: FileResult) -> bool:
        key = self.keys[index]
        before = None if key is None else _stamp_in(key[0])
        if before is None or result.read.stamp is None or result.checked != self.expected[index]:
            return False
        if not same_file(result.read.stamp, before, device=self.same_host):
            return False
        try:
            after = stamp_of(os.stat(self.jobs[index].path))
        except OSError:
            return False
        return same_file(after, before)

    def record(self, index: int, result: FileResult) -> None:
        """Store a fresh result of job ``index`` (if it describes the file,
        and the bytes it describes are the ones the key names)."""
        key = self.keys[index]
        if key is None or not cacheable(result):
            return
        if not self._same_bytes(index, result):
            self.changed += 1
            return
        self.cache.put(key, _text(json.loads(key[0])[:2]), encode(replace(result, cached=False)))
        self.stored += 1
