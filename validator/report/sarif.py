# Strategy: the SARIF 2.1.0 format (validator.report.formats registers it), as
# GitHub code scanning reads it.
#   - Locations: a safetensors file is binary, so a result's region carries
#     `byteOffset` (and `byteLength` 1 as a point); code scanning also wants a
#     `startLine`, so line 1 is given alongside.  A path below the working
#     directory is written relative to it with uriBaseId %SRCROOT% (what code
#     scanning maps onto the repository), whether or not the file exists (a
#     file a checksum list names that is missing has a location too); any
#     other path is an absolute file:// URI; a URL stays itself.
#   - partialFingerprints: code scanning matches alerts across runs by them,
#     so each is a digest of (rule, location URI, tensor, JSON pointer,
#     offset), stable from run to run, plus a counter for results that share
#     all of those: unique within the run.
#   - Rules: the catalogue, each with its title, a full description (what
#     safetensors 0.8.0 does, which profiles), help text and Markdown with
#     the fix `stcheck rules CODE` prints, and a helpUri only where a real
#     address exists (STCHECK_SPEC_URL); stcheck has no public URL.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH100, PTH109
from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from typing import IO, TYPE_CHECKING, Any, Final
from urllib.parse import quote

from validator._findings import REFERENCE_LOADS
from validator._rules import RULES, Profile, Rule, Severity
from validator._version import __version__
from validator.report.format_common import (
    indent,
    json_path,
    json_text,
    profiles_phrase,
    reference_loads,
    reference_phrase,
    spec_base,
    spec_link,
)
from validator.report.signatures import records
from validator.sources.schemes import STDIN_NAME, is_remote

if TYPE_CHECKING:
    from collections.abc import Sequence

    from validator._findings import Finding
    from validator.report.format_common import Context
    from validator.report.results import FileResult

__all__ = ["FINGERPRINT", "SARIF_SCHEMA", "fingerprint", "rules", "uri", "write"]

SARIF_SCHEMA: Final = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT: Final = "stcheck/v2"  # v1 held Python's None and collided across files
_NO_POLICY: Final = "none"


def uri(path: str) -> tuple[str, str | None]:
    """A SARIF artifact URI and its base id for a display path; a local
    path's raw bytes are percent-encoded (RFC 3986), so any name round-trips."""
    if is_remote(path):
        return quote(path.encode("utf-8", "surrogateescape"), safe=":/@?&=%#~+!$,;'()*[]"), None
    if path == STDIN_NAME:
        return quote(path), None
    absolute = os.path.abspath(path)
    here = os.getcwd()
    if absolute == here or absolute.startswith(here.rstrip(os.sep) + os.sep):
        rel = os.path.relpath(absolute, here).replace(os.sep, "/")
        return quote(rel.encode("utf-8", "surrogateescape"), safe="/"), "%SRCROOT%"
    return "file://" + quote(absolute.replace(os.sep, "/").encode("utf-8", "surrogateescape"), safe="/"), None


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _help(rule: Rule) -> dict[str, str]:
    explain = f"stcheck rules {rule.code}"
    link = spec_link(rule.anchor)
    text = [f"{rule.title}: {reference_phrase(rule)}; checked under the {profiles_phrase(rule)}."]
    markdown = [f"**{rule.code} {rule.slug}**: {rule.title}.", "", f"{_sentence(reference_phrase(rule))}."]
    if rule.fix is not None:
        text.append(f"Fix: {rule.fix}")
        markdown += ["", f"**Fix:** {rule.fix}"]
    text.append(f"`{explain}` shows a bad example and what stcheck reports on it.")
    markdown += ["", f"`{explain}` shows a bad example and what stcheck reports on it."]
    if link is not None:
        text.append(f"Specification: {link}")
        markdown += ["", f"[Specification]({link})"]
    return {"text": "\n\n".join(text), "markdown": "\n".join(markdown)}


def rules() -> list[dict[str, Any]]:
    """The catalogue as SARIF reportingDescriptors."""
    return [
        {
            "id": rule.code,
            "name": rule.slug,
            "shortDescription": {"text": rule.title},
            "fullDescription": {
                "text": f"{rule.title}: {reference_phrase(rule)}; checked under the {profiles_phrase(rule)}."
            },
            "help": _help(rule),
            **({"helpUri": link} if (link := spec_link(rule.anchor)) else {}),
            "defaultConfiguration": {"level": "error" if rule.severity is Severity.ERROR else "warning"},
            "properties": {"tags": ["safetensors", rule.region]},
        }
        for rule in RULES
    ]


def fingerprint(f: Finding, location: str, seen: Counter[str]) -> str:
    """Stable across runs, unique within one: a digest of where, plus a counter."""
    key = json.dumps([f.code, location, f.tensor, f.json_path, f.offset], ensure_ascii=True)
    digest = hashlib.sha256(key.encode("ascii")).hexdigest()[:32]
    seen[digest] += 1
    return f"{digest}:{seen[digest]}"


def _results(r: FileResult, index: dict[str, int], seen: Counter[str]) -> list[dict[str, Any]]:  # noqa: C901 - one branch per SARIF field
    where, base = uri(r.path)
    location: dict[str, Any] = {"uri": where}
    if base is not None:
        location["uriBaseId"] = base
    found = []
    loads = reference_loads(r)
    for item in r.items:
        f = item.finding
        region: dict[str, Any] = {"startLine": 1}
        if f.offset is not None:
            region["byteOffset"] = f.offset
            region["byteLength"] = 1
        note = f" ({REFERENCE_LOADS})" if loads and not f.rule.applies_to(Profile.REFERENCE) else ""
        result: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.slug],
            "level": "error" if item.severity is Severity.ERROR else "warning",
            "message": {"text": json_text(f"{f.slug}: {f.message}{note}")},
            "locations": [{"physicalLocation": {"artifactLocation": location, "region": region}}],
            "partialFingerprints": {FINGERPRINT: fingerprint(f, f"{base or ''}{where}", seen)},
        }
        properties: dict[str, Any] = {}
        if f.tensor is not None:
            properties["tensor"] = json_text(f.tensor)
        if r.model is not None:
            properties["model"] = json_path(r.model)
        if item.reason is not None:
            properties["policyReason"] = item.reason
        if r.policy is not None:
            properties["policy"] = r.policy
        if r.cached:
            properties["cached"] = True  # replayed from the results cache (--cache), not read again
        if r.reference_valid is not None:
            properties["referenceValid"] = r.reference_valid  # safetensors 0.8.0 reads the file
        if properties:
            result["properties"] = properties
        if item.suppressed is not None:
            result["suppressions"] = [{"kind": "external", "status": "accepted", "justification": item.suppressed}]
        found.append(result)
    return found


def write(out: IO[str], results: Sequence[FileResult], context: Context) -> None:

    notifications = [
        {"level": "error", "message": {"text": json_text(e)}}
        for e in [*context.errors, *(r.error for r in results if r.error)]
        if e
    ]
    policies = list(context.policies) or [_NO_POLICY]
    invocation: dict[str, Any] = {"executionSuccessful": not notifications, "properties": {"policies": policies}}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    driver: dict[str, Any] = {"name": "stcheck", "version": __version__, "semanticVersion": __version__}
    home = spec_base()
    if home is not None:
        driver["informationUri"] = home
    driver["rules"] = rules()
    run: dict[str, Any] = {
        "tool": {"driver": driver},
        "invocations": [invocation],
        "originalUriBaseIds": {"%SRCROOT%": {"uri": "file://" + _cwd_posix() + "/"}},
        "properties": {"policies": policies, "command": context.command},
        "results": [],
    }
    signatures = records(results)
    if signatures:  # each model signature: verified or not, by whom, files compared and left out
        run["properties"]["signatures"] = signatures
    doc = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    text = json.dumps(doc, indent=2)
    head, tail = text.split('"results": []', 1)
    out.write(head + '"results": [')
    index = {rule.slug: i for i, rule in enumerate(RULES)}
    seen: Counter[str] = Counter()
    first = True
    for r in results:
        for result in _results(r, index, seen):
            out.write(("\n" if first else ",\n") + indent(json.dumps(result, indent=2), 8))
            first = False
    out.write(("]" if first else "\n      ]") + tail + "\n")


def _cwd_posix() -> str:
    return quote(os.getcwd().replace(os.sep, "/").encode("utf-8", "surrogateescape"), safe="/")
