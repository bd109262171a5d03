# Strategy: the digests a signature lists, computed in the scan's one read
# and compared after it.  ``with_digests`` adds to each job the digests
# its models' signatures list (and every file's sha256 when a report lists
# them); ``read_rest`` reads, for its digests alone, each signed file the
# scan did not read (an index; a file below .git, .hg or .svn, which the
# walker skips); ``compare_local`` matches what was read with the manifest
# (validator.signing.signature.compare), the folder's odd entries (links,
# special files) included, as model_signing's verify walks them.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH113, PTH114, PTH118
from __future__ import annotations

import os
import stat
from dataclasses import replace
from typing import TYPE_CHECKING

from validator.pipeline.engine import Job, run_jobs
from validator.signing.signature import SINGLE_FILE, Seen, compare
from validator.signing.signhash import WHOLE_SHA256, DigestSpec
from validator.sources.kinds import name_kind
from validator.sources.schemes import is_remote

if TYPE_CHECKING:
    from collections.abc import Sequence

    from validator.pipeline.engine import Options
    from validator.pipeline.signatures._model import SignedModel
    from validator.report.results import FileResult

__all__ = ["compare_local", "read_rest", "with_digests"]


def _specs_of(models: Sequence[SignedModel], probe: FileResult) -> set[DigestSpec]:
    specs = set()
    for model in models:
        manifest = model.manifest
        rel = None if manifest is None else model.rel(probe)
        if manifest is not None and rel is not None and rel in manifest.digests:
            specs.add(manifest.spec)
    return specs


def with_digests(jobs: list[Job], models: Sequence[SignedModel], *, sha256: bool) -> list[Job]:
    """The jobs, each with the digests its models' signatures list, and its
    sha256 when ``sha256`` (a report that lists every file's digest)."""
    from validator.report.results import FileResult  # noqa: PLC0415 - a probe of each name's place

    compared = [m for m in models if m.compared_here]
    if not compared and not sha256:
        return jobs
    out = []
    for job in jobs:
        specs = set(job.digests)
        if job.kind == "file":
            if sha256:
                specs.add(WHOLE_SHA256)
            for display, repo in job.names:
                specs |= _specs_of(compared, FileResult(path=display, model=repo))
        out.append(replace(job, digests=tuple(sorted(specs))) if specs != set(job.digests) else job)
    return out


def read_rest(
    results: list[FileResult], models: Sequence[SignedModel], options: Options, *, sha256: bool
) -> list[FileResult]:
    """Read, for its digests alone, each signed file the scan did not read
    (an index; a file below a folder the walker skips) and, with ``sha256``,
    each index."""
    extra = _unread(results, [m for m in models if m.manifest is not None], sha256=sha256)
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


def _unread(results: list[FileResult], models: Sequence[SignedModel], *, sha256: bool) -> dict[str, set[DigestSpec]]:
    extra: dict[str, set[DigestSpec]] = {}
    for r in results:
        if r.kind == "index" and r.sha256 is None and r.model is None and not is_remote(r.path):
            specs = extra.setdefault(r.path, set())
            if sha256:
                specs.add(WHOLE_SHA256)
            specs |= _specs_of(models, r)
    for model in models:
        if model.manifest is None or model.root is None:
            continue
        present = {model.rel(r) for r in results}
        for rel in model.manifest.digests:
            path = model.display(rel)
            if rel not in present and os.path.isfile(path):
                extra.setdefault(path, set()).add(model.manifest.spec)
    return extra


def _digests(result: FileResult, spec: DigestSpec) -> list[str] | None:
    if spec == WHOLE_SHA256:
        return None if result.sha256 is None else [result.sha256]
    return (result.signed or {}).get(spec.label)


def compare_local(model: SignedModel, results: list[FileResult]) -> None:
    """Compare what the scan read of ``model`` with its signature."""
    manifest = model.manifest
    assert manifest is not None
    present: dict[str, Seen] = {}
    for r in results:
        rel = None if r.kind in {"link", "missing"} else model.rel(r)
        if rel is None:
            continue
        digests = _digests(r, manifest.spec) if rel in manifest.digests else None
        why = None if digests is not None or r.error is not None else "the scan did not read the whole file"
        present[rel] = Seen(r.file_size, digests, why)
    outcome = compare(
        manifest,
        present,
        where=model.where,
        signature_rel=model.signature_rel,
        ignore=model.ignore,
        odd=_odd_entries(model),
    )
    for rel, slug, message in outcome.findings:
        model.flag(rel, slug, message)
    if model.single:
        _read_through(model, results)
    model.matched, model.outcome = outcome.checked, outcome
    if model.findings:
        model.status = "mismatch"


def _read_through(model: SignedModel, results: list[FileResult]) -> None:
    """A single-file signature covers that file alone: every other file the
    scan read because of it (an index's shards; the scan was given that one
    file) is unsigned-file (spec: Signed models)."""
    for r in results:
        if r.kind in {"link", "missing"} or r.path == model.where or model.rel(r) is not None:
            continue
        message = (
            f"read through {model.given}, but {model.where} signs {model.given} alone: "
            "a single-file signature covers no other file (sign the folder)"
        )
        model.flag(None, "unsigned-file", message, display=r.path)


def _odd_entries(model: SignedModel) -> dict[str, str]:
    """What a local signed folder (or the single file given) holds that is
    not a plain file or folder, as model_signing's verify walks it: every
    entry, below .git and the ignore paths too, links not followed
    (path relative to the folder -> "link" or "special")."""
    if model.root is None or model.given is None:
        return {}
    if model.single:
        return {SINGLE_FILE: "link"} if os.path.islink(model.given) else {}
    odd = {SINGLE_FILE: "link"} if os.path.islink(model.given.rstrip(os.sep) or os.sep) else {}
    for top, dirs, files in os.walk(model.root, followlinks=False):
        for name in [*dirs, *files]:
            path = os.path.join(top, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode) or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                rel = os.path.relpath(path, model.root).replace(os.sep, "/")
                odd[rel] = "link" if stat.S_ISLNK(mode) else "special"
    return odd
