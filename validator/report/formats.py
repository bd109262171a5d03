# Strategy: one writer per output format, shared by `stcheck check`,
# `stcheck scan` and `stcheck inspect` (for more than one file): each streams
# the same list of FileResults to a text stream.  Text is for people (one
# line per finding, then one summary line, the same for every command), JSON
# for programs (validator/schemas/report.schema.json, shipped in the
# package), SARIF 2.1.0 for GitHub code scanning (validator.report.sarif), and
# JUnit XML for CI systems that show test reports.  OUTPUTS is the registry:
# a new format is one function of the Writer signature and one row, which
# also says whether the format lists each file's sha256 (the scan then
# computes it in its one read; `check`, which reads headers, never offers
# such a format).  tests/test_change_traces.py adds a toy one.
#
# A writer writes one file's part at a time and never builds the whole report
# in memory; with the per-rule cap (validator._check.MAX_PER_RULE) and the
# grouping of per-tensor findings, memory stays bounded whatever the number
# of findings.  Suppressed findings are kept in every machine format, marked
# with the policy's reason (SARIF `suppressions`, JUnit <skipped>), and left
# out of the text lines.  Every machine format names the policy in force;
# text names it when there is one.
#
# Hostile file names: a path may hold a newline, control characters or bytes
# that are not UTF-8.  Text escapes them the way `ls -b` does
# (validator._display); JSON writes a path exactly when it is valid Unicode
# and escaped otherwise; SARIF URIs percent-encode the path's raw bytes (RFC
# 3986); JUnit text is escaped so that the XML stays well-formed (XML 1.0
# has no character reference for U+0001, so an escape is the only way).
# Colour (--color) wraps text that is already escaped, never a raw name.
# This module imports only the core and the light scan modules: `stcheck
# check FILE` uses it without loading the scan engine.
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Final

from validator._display import encodable, escape_line, escape_path, finding_line, plural
from validator._findings import REFERENCE_LOADS
from validator._rules import Severity
from validator._version import __version__
from validator.report.format_common import (
    BLOB_NAME_SOURCE,
    SPEC_URL_ENV,
    Context,
    Writer,
    human,
    indent,
    json_path,
    json_text,
    policy_names,
    reference_loads,
    spec_link,
    summary,
)
from validator.report.signatures import record_json, records
from validator.sources.kinds import kinds_line

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from validator.report.results import FileResult

__all__ = [
    "FORMATS",
    "OUTPUTS",
    "SPEC_URL_ENV",
    "WRITERS",
    "Context",
    "Output",
    "Writer",
    "checkpoint_line",
    "human",
    "json_document",
    "spec_link",
    "summary",
    "summary_line",
    "write",
]


# -- text -----------------------------------------------------------------------


class _Paint:
    """ANSI colours around text that is already escaped (or nothing)."""

    _CODES: Final = {"bold": "1", "red": "31", "yellow": "33", "green": "32", "dim": "2"}

    def __init__(self, *, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, *styles: str) -> str:
        if not self.on or not text:
            return text
        return f"\x1b[{';'.join(self._CODES[s] for s in styles)}m{text}\x1b[0m"

    def finding(self, path: str, item: Any) -> str:  # noqa: ANN401 - a ScanItem; the protocol is two attributes
        line = finding_line(path, item.finding)
        if not self.on:
            return line
        f = item.finding
        where = (escape_path(path) if path else "<bytes>") + ("" if f.offset is None else f":{f.offset}")
        label = f"{f.code} {f.slug}"
        if not line.startswith(f"{where}: {label} "):  # never colour what we did not lay out
            return line
        colour = "red" if item.severity is Severity.ERROR else "yellow"
        rest = line[len(where) + 2 + len(label) :]
        return f"{self(where, 'bold')}: {self(label, colour, 'bold')}{rest}"


def checkpoint_line(r: FileResult) -> str:
    """``checkpoint PATH: 2 shards, 10 tensors, 1,234 parameters: valid``."""
    c = r.checkpoint or {}
    n = sum(i.severity is Severity.ERROR for i in r.active)
    verdict = "valid" if r.valid else f"invalid ({plural(n, 'error')} in the index)"
    return (
        f"checkpoint {escape_path(r.path)}: {plural(c.get('shards', 0), 'shard')}, "
        f"{plural(c.get('tensors', 0), 'tensor')}, {c.get('parameters', 0):,} parameters: {verdict}"
    )


def _digest_note(r: FileResult) -> str | None:
    """``PATH: sha256 matches (SHA256SUMS:3)`` for a digest the user gave."""
    if r.checked is None or not r.digest_matches or r.checked[2].startswith(BLOB_NAME_SOURCE):
        return None
    algorithm, _, source = r.checked
    return escape_line(f"{escape_path(r.path)}: {algorithm} matches ({source})")


def summary_line(s: dict[str, Any], profile: str, policies: Sequence[str]) -> str:
    """The one summary line of `check` and `scan`: files and verdicts,
    finding counts, then only the facts that apply."""
    parts = [
        f"{plural(s['files'], 'file')} checked ({profile}): {s['valid']} valid, {s['invalid']} invalid"
        + (f" ({s['reference_loads']} of them: {REFERENCE_LOADS})" if s["reference_loads"] else "")
        + (
            f", {s['failing_others']} other {'target fails' if s['failing_others'] == 1 else 'targets fail'}"
            if s.get("failing_others")
            else ""
        ),
        f"{plural(s['errors'], 'error')}, {plural(s['warnings'], 'warning')}",
    ]
    if s["suppressed"]:
        parts.append(f"{s['suppressed']} suppressed by policy")
    if s["not_listed"]:
        n = s["not_listed"]
        parts.append(f"{n} more {'finding' if n == 1 else 'findings'} not listed (1000 per rule and file kept)")
    if s["unreadable"]:
        parts.append(f"{len(s['unreadable'])} unreadable")
    if s["checkpoints"]:
        parts.append(f"{plural(s['checkpoints'], 'checkpoint')}, {s['invalid_checkpoints']} invalid")
    if s["missing"]:
        parts.append(f"{plural(s['missing'], 'listed file')} missing")
    if s["digests_checked"]:
        bad = s["digests_checked"] - s["digests_matched"]
        parts.append(f"{plural(s['digests_checked'], 'digest')} checked: " + (f"{bad} differ" if bad else "all match"))
    if s["blobs"]:
        parts.append(f"{plural(s['blobs'], 'other blob')} verified")
    if s["other_files"]:
        parts.append(kinds_line(s["other_files"]))
    name = policy_names(policies)
    if name is not None:
        parts.append(f"policy {name}")
    return escape_line("; ".join(parts))


def _detail_lines(results: Sequence[FileResult], s: dict[str, Any], context: Context) -> list[str]:
    """What a scan adds below the summary line: bytes read, hub repositories
    (with their revisions), and with --statistics the findings per rule."""
    lines = []
    if s["bytes_scanned"]:
        seconds = context.seconds
        rate = s["bytes_scanned"] / seconds if seconds > 0 else 0.0
        lines.append(f"  read {human(s['bytes_scanned'])} in {seconds:.1f} s ({human(rate)}/s)")
    revisions: dict[str, set[str]] = {}
    for r in results:
        if r.model is not None and r.revision is not None:
            revisions.setdefault(json_path(r.model), set()).add(r.revision[:12])
    for model, c in s["models"].items():
        at = ", ".join(f"{model}@{rev}" for rev in sorted(revisions.get(model, ()))) or model
        lines.append(escape_line(f"  {at}: {plural(c['files'], 'file')}, {c['invalid']} invalid"))
    if context.statistics:
        lines.extend(f"  {count:>6}  {rule}" for rule, count in s["findings_by_rule"].items())
    return lines


def _file_lines(r: FileResult, context: Context, paint: _Paint) -> Iterator[str]:
    """One file's lines: its checkpoint heading, findings and notes.  (A file
    that could not be read is counted in the summary line; the command says
    why on stderr, as it does for a path that could not be opened.)"""
    loud = context.quiet == 0
    if r.checkpoint is not None and loud:
        yield checkpoint_line(r)
    for item in r.active:
        if not context.warnings and item.severity is Severity.WARNING:
            continue
        line = paint.finding(r.path, item)
        if item.reason is not None:
            line += escape_line(f" [{item.severity.value} by policy: {item.reason}]")
        yield line
    if reference_loads(r):
        yield f"{escape_path(r.path)}: invalid ({REFERENCE_LOADS})"
    note = _digest_note(r) if loud else None
    if note is not None:
        yield note


def write_text(out: IO[str], results: Sequence[FileResult], context: Context) -> None:
    if context.quiet >= 2:
        return
    paint = _Paint(on=context.color)
    for r in results:
        out.writelines(line + "\n" for line in _file_lines(r, context, paint))
    if context.quiet:
        return
    s = summary(results, context.errors, context.seconds)
    line = summary_line(s, context.profile, context.policies)
    bad = s["invalid"] or s["errors"] or s["unreadable"]
    out.write(paint(line, "red" if bad else "green") + "\n")
    out.writelines(line + "\n" for line in _detail_lines(results, s, context))


# -- JSON -------------------------------------------------------------------------


def _file_json(r: FileResult) -> dict[str, Any]:
    doc = r.to_json()
    doc["path"] = json_path(r.path)
    doc["model"] = None if r.model is None else json_path(r.model)
    if r.signature is not None:
        doc["signature"] = record_json(r.signature)
    for finding in doc["findings"]:
        finding["message"] = json_text(finding["message"])
        if finding["tensor"] is not None:
            finding["tensor"] = json_text(finding["tensor"])
    if doc["tensors"] is not None and not all(encodable(name) for name in doc["tensors"]):
        doc["tensors"] = {json_text(name): entry for name, entry in doc["tensors"].items()}
    return doc


def _json_head(context: Context) -> dict[str, Any]:
    return {
        "tool": "stcheck",
        "version": __version__,
        "command": context.command,
        "profile": context.profile,
        "policy": policy_names(context.policies),
        "policies": list(context.policies),
    }


def json_document(results: Sequence[FileResult], context: Context) -> dict[str, Any]:
    """The JSON report as one value (write_json streams the same document)."""
    signatures = records(results)
    return {
        **_json_head(context),
        "files": [_file_json(r) for r in results if r.error is None],
        **({"signatures": signatures} if signatures else {}),
        "summary": summary(results, context.errors, context.seconds),
    }


def write_json(out: IO[str], results: Sequence[FileResult], context: Context) -> None:
    text = json.dumps(_json_head(context), indent=2)
    out.write(text[:-2] + ',\n  "files": [')
    first = True
    for r in results:
        if r.error is None:
            out.write(("\n" if first else ",\n") + indent(json.dumps(_file_json(r), indent=2), 4))
            first = False
    out.write("]" if first else "\n  ]")
    signatures = records(results)
    if signatures:
        out.write(',\n  "signatures": ' + indent(json.dumps(signatures, indent=2), 2).lstrip())
    out.write(',\n  "summary": ')
    out.write(indent(json.dumps(summary(results, context.errors, context.seconds), indent=2), 2).lstrip() + "\n}\n")


# -- SARIF, JUnit -------------------------------------------------------------------


def write_sarif(out: IO[str], results: Sequence[FileResult], context: Context) -> None:
    from validator.report.sarif import write  # noqa: PLC0415 - loaded only for this format

    write(out, results, context)


def write_junit(out: IO[str], results: Sequence[FileResult], context: Context) -> None:
    from validator.report.junit import write  # noqa: PLC0415 - loaded only for this format (xml.etree)

    write(out, results, context)


def write_cyclonedx(out: IO[str], results: Sequence[FileResult], context: Context) -> None:
    from validator.report.bom import models, write_bom  # noqa: PLC0415 - the sbom extra loads only for this format

    groups = models(results, context.sources)
    errors = [*context.errors, *(r.error for r in results if r.error)]
    write_bom(out, groups, errors, profile=context.profile, policies=context.policies)


# -- dispatch -----------------------------------------------------------------------


@dataclass(frozen=True)
class Output:
    """An output format: its writer, what it needs of the run, and its help."""

    writer: Writer
    sha256: bool = False  # lists every file's sha256: scan computes it in its one read; check does not offer it
    help: str = ""  # said of it in --format's help


OUTPUTS: Final[dict[str, Output]] = {
    "text": Output(write_text),
    "json": Output(write_json),
    "sarif": Output(write_sarif),
    "junit": Output(write_junit),
    "cyclonedx": Output(write_cyclonedx, sha256=True, help="a CycloneDX 1.6 ML-BOM (the sbom extra)"),
}
# The writers and names of the formats at import (OUTPUTS is the registry).
WRITERS: Final[dict[str, Writer]] = {name: o.writer for name, o in OUTPUTS.items()}
FORMATS: Final = tuple(OUTPUTS)


def write(
    fmt: str,
    out: IO[str],
    results: Sequence[FileResult],
    errors: Sequence[str],
    seconds: float,
    *,
    profile: str,
    policies: Sequence[str] = (),
    warnings: bool = True,
    command: str = "scan",
    sources: Sequence[str] = (),
) -> None:
    """Stream the report in format ``fmt`` (a key of OUTPUTS) to ``out``;
    ``sources``, the arguments as given, group the results into the BOM's models."""
    context = Context(
        command=command,
        profile=profile,
        policies=tuple(policies),
        errors=tuple(errors),
        seconds=seconds,
        warnings=warnings,
        sources=tuple(sources),
    )
    OUTPUTS[fmt].writer(out, results, context)
