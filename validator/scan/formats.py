# Strategy: one writer per output format, each streaming the same list of
# FileResults to a text stream: text for people, JSON for programs (the
# shape of `spec/report.schema.json`), SARIF 2.1.0 for GitHub code scanning,
# and JUnit XML for CI systems that show test reports.  A writer writes one
# file's part at a time and never builds the whole report in memory; with
# the scan's per-rule cap (validator._check.MAX_PER_RULE) and the grouping of
# per-tensor findings, memory stays bounded whatever the number of findings.
# Suppressed findings are kept in every machine format, marked with the
# policy's reason (SARIF `suppressions`, JUnit <skipped>), and left out of
# the text lines.  Every format names the policy in force.
#
# Hostile file names: a path may hold a newline, control characters or bytes
# that are not UTF-8.  Text escapes them the way `ls -b` does
# (validator._display); JSON writes a path exactly when it is valid Unicode
# and escaped otherwise; SARIF URIs percent-encode the path's raw bytes (RFC
# 3986); JUnit text is escaped so that the XML stays well-formed (XML 1.0
# has no character reference for U+0001, so an escape is the only way).
#
# SARIF notes: a safetensors file is binary, so a result's region carries
# `byteOffset` (and `byteLength` 1 as a point); GitHub code scanning also
# wants a `startLine`, so line 1 is given alongside.  Artifact URIs are
# relative to the current directory (with uriBaseId %SRCROOT%) when the file
# lies below it, which is what code scanning maps onto the repository.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH100, PTH109
from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections import Counter
from typing import IO, TYPE_CHECKING, Any, Final
from urllib.parse import quote

from validator._display import encodable, escape_line, escape_path, finding_line
from validator._findings import REFERENCE_LOADS, strict_only_failure
from validator._rules import RULES, Profile, Severity

if TYPE_CHECKING:
    from collections.abc import Sequence

    from validator.scan.bom import ModelGroup
    from validator.scan.engine import FileResult

# stcheck has no fixed public address: links to the spec are written only
# when STCHECK_SPEC_URL names where SPEC.md is hosted (your mirror's
# .../blob/main/spec/SPEC.md), never to a made-up one.
SPEC_URL_ENV: Final = "STCHECK_SPEC_URL"


def spec_link(anchor: str) -> str | None:
    """``$STCHECK_SPEC_URL#anchor``, or None when the variable is unset."""
    base = os.environ.get(SPEC_URL_ENV, "").strip()
    return f"{base}#{anchor}" if base else None


SARIF_SCHEMA: Final = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FORMATS: Final = ("text", "json", "sarif", "junit", "cyclonedx")  # cyclonedx: scan/bom.py
NO_POLICY: Final = (
    "none (no --policy, and no [tool.stcheck] in a pyproject.toml from the working directory up, "
    "outside the scanned paths)"
)


def human(n: float) -> str:
    """A byte count in binary units: 512 B, 1.5 KiB, 3.0 MiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def _text(s: str) -> str:
    """A string as a JSON or SARIF value: itself when valid Unicode, else escaped."""
    return s if encodable(s) else escape_line(s)


def _path(s: str) -> str:
    return s if encodable(s) else escape_path(s)


def _models(results: Sequence[FileResult]) -> dict[str, dict[str, int]]:
    """Per hub repository: files, invalid files (the --hf-cache view)."""
    models: dict[str, dict[str, int]] = {}
    for r in results:
        if r.model is not None:
            entry = models.setdefault(_path(r.model), {"files": 0, "invalid": 0})
            entry["files"] += 1
            entry["invalid"] += not r.valid
    return models


def summary(results: Sequence[FileResult], errors: Sequence[str], seconds: float) -> dict[str, Any]:
    """Counts for the summary table and the JSON ``summary`` object."""
    by_rule: Counter[str] = Counter()
    suppressed = 0
    for r in results:
        for item in r.items:
            if item.suppressed is None:
                by_rule[f"{item.finding.code} {item.finding.slug}"] += 1
            else:
                suppressed += 1
    files = [r for r in results if r.kind == "safetensors"]
    unreadable = [r.error for r in results if r.error is not None]
    return {
        "files": len(files),
        "valid": sum(r.valid for r in files),
        "invalid": sum(not r.valid and r.error is None for r in files),
        "reference_loads": sum(_loads(r) for r in files),
        "blobs": sum(r.kind == "blob" for r in results),
        "missing": sum(r.kind == "missing" for r in results),
        "unreadable": [_text(e) for e in [*errors, *(e for e in unreadable if e is not None)]],
        "errors": sum(i.severity is Severity.ERROR for r in results for i in r.active),
        "warnings": sum(i.severity is Severity.WARNING for r in results for i in r.active),
        "suppressed": suppressed,
        "not_listed": sum(r.not_listed for r in results),
        "findings_by_rule": dict(sorted(by_rule.items())),
        "bytes_scanned": sum(r.bytes_read for r in results),
        "seconds": round(seconds, 3),
        "models": _models(results),
        "other_files": _other_kinds(results),
    }


def _other_kinds(results: Sequence[FileResult]) -> dict[str, int]:
    """A folder's other files (and a hub cache's non-safetensors files) per kind."""
    counts: Counter[str] = Counter(r.file_kind for r in results if r.file_kind is not None)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _loads(r: FileResult) -> bool:
    """The strict profile fails the file, safetensors 0.8.0 reads it (REFERENCE_LOADS)."""
    return r.error is None and strict_only_failure(
        r.reference_valid, (i.finding for i in r.active if i.severity is Severity.ERROR)
    )


# -- text -----------------------------------------------------------------------


def write_text(  # noqa: C901, PLR0912 - one branch per line kind of the text report
    out: IO[str],
    results: Sequence[FileResult],
    errors: Sequence[str],
    seconds: float,
    *,
    policies: Sequence[str] = (),
    warnings: bool = True,
) -> None:
    for r in results:
        if r.error is not None:
            out.write(escape_line(f"{escape_path(r.path)}: error {r.error}") + "\n")
        for item in r.active:
            if not warnings and item.severity is Severity.WARNING:
                continue
            line = finding_line(r.path, item.finding)
            if item.reason is not None:
                line += escape_line(f" [{item.severity.value} by policy: {item.reason}]")
            out.write(line + "\n")
        if _loads(r):
            out.write(f"{escape_path(r.path)}: invalid ({REFERENCE_LOADS})\n")
    s = summary(results, errors, seconds)
    rows = [("files", str(s["files"])), ("valid", str(s["valid"])), ("invalid", str(s["invalid"]))]
    if s["reference_loads"]:
        rows.append(("  of them, 0.8.0 loads", f"{s['reference_loads']} (strict-only findings)"))
    if s["blobs"]:
        rows.append(("other blobs verified", str(s["blobs"])))
    if s["other_files"]:
        total = sum(s["other_files"].values())
        kinds = ", ".join(f"{n} {kind}" for kind, n in s["other_files"].items())
        rows.append(("other files", f"{total} ({kinds})"))
    if s["missing"]:
        rows.append(("listed but missing", str(s["missing"])))
    if s["unreadable"]:
        rows.append(("unreadable", str(len(s["unreadable"]))))
    rows.append(("errors / warnings", f"{s['errors']} / {s['warnings']}"))
    if s["suppressed"]:
        rows.append(("suppressed by policy", str(s["suppressed"])))
    if s["not_listed"]:
        rows.append(("not listed", f"{s['not_listed']} (1000 findings per rule and file kept)"))
    if s["bytes_scanned"]:
        rate = s["bytes_scanned"] / seconds if seconds > 0 else 0.0
        rows.append(("bytes scanned", f"{s['bytes_scanned']} ({human(s['bytes_scanned'])}, {human(rate)}/s)"))
    rows.append(("policy", "; ".join(escape_line(p) for p in policies) or NO_POLICY))
    rows.extend((f"  {rule}", str(count)) for rule, count in s["findings_by_rule"].items())
    if s["models"]:
        rows.append(("models", str(len(s["models"]))))
        rows.extend((f"  {m}", f"{c['files']} files, {c['invalid']} invalid") for m, c in s["models"].items())
    width = max(len(k) for k, _ in rows)
    out.write("\nsummary\n")
    out.writelines(f"  {k.ljust(width)}  {v}\n" for k, v in rows)


# -- JSON -------------------------------------------------------------------------


def _file_json(r: FileResult) -> dict[str, Any]:
    doc = r.to_json()
    doc["path"] = _path(r.path)
    doc["model"] = None if r.model is None else _path(r.model)
    for finding in doc["findings"]:
        finding["message"] = _text(finding["message"])
    return doc


def write_json(
    out: IO[str],
    results: Sequence[FileResult],
    errors: Sequence[str],
    seconds: float,
    *,
    profile: str,
    policies: Sequence[str] = (),
) -> None:
    from validator import __version__  # noqa: PLC0415 - import cycle: validator/__init__ imports the core

    head = {
        "tool": "stcheck",
        "version": __version__,
        "command": "scan",
        "profile": profile,
        "policy": policies[0] if len(policies) == 1 else None if not policies else "; ".join(policies),
        "policies": list(policies),
    }
    text = json.dumps(head, indent=2)
    out.write(text[:-2] + ',\n  "files": [')
    first = True
    for r in results:
        if r.error is None:
            out.write(("\n" if first else ",\n") + _indent(json.dumps(_file_json(r), indent=2), 4))
            first = False
    out.write(("]" if first else "\n  ]") + ',\n  "summary": ')
    out.write(_indent(json.dumps(summary(results, errors, seconds), indent=2), 2).lstrip() + "\n}\n")


def _indent(text: str, n: int) -> str:
    pad = " " * n
    return "\n".join(pad + line for line in text.splitlines())


# -- SARIF ------------------------------------------------------------------------


def _uri(path: str) -> tuple[str, str | None]:
    """A SARIF artifact URI and its base id for a display path; the path's
    raw bytes are percent-encoded (RFC 3986), so any file name round-trips."""
    raw = path.encode("utf-8", "surrogateescape")
    if not os.path.lexists(path):  # a hub-cache display name
        return quote(raw, safe="/@"), None
    absolute = os.path.abspath(path)
    here = os.getcwd()
    if absolute == here or absolute.startswith(here.rstrip(os.sep) + os.sep):
        rel = os.path.relpath(absolute, here).replace(os.sep, "/")
        return quote(rel.encode("utf-8", "surrogateescape"), safe="/"), "%SRCROOT%"
    return "file://" + quote(absolute.replace(os.sep, "/").encode("utf-8", "surrogateescape"), safe="/"), None


def _sarif_rules() -> list[dict[str, Any]]:
    return [
        {
            "id": rule.code,
            "name": rule.slug,
            "shortDescription": {"text": rule.title},
            **({"helpUri": link} if (link := spec_link(rule.anchor)) else {}),
            "defaultConfiguration": {"level": "error" if rule.severity is Severity.ERROR else "warning"},
            "properties": {"tags": ["safetensors", rule.region]},
        }
        for rule in RULES
    ]


def _sarif_results(r: FileResult, index: dict[str, int]) -> list[dict[str, Any]]:  # noqa: C901 - one branch per SARIF field
    uri, base = _uri(r.path)
    location: dict[str, Any] = {"uri": uri}
    if base is not None:
        location["uriBaseId"] = base
    found = []
    loads = _loads(r)
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
            "message": {"text": _text(f"{f.slug}: {f.message}{note}")},
            "locations": [{"physicalLocation": {"artifactLocation": location, "region": region}}],
            "partialFingerprints": {"stcheck/v1": _text(f"{f.code}:{f.tensor or ''}:{f.json_path or ''}:{f.offset}")},
        }
        properties: dict[str, Any] = {}
        if f.tensor is not None:
            properties["tensor"] = _text(f.tensor)
        if r.model is not None:
            properties["model"] = _path(r.model)
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


def write_sarif(
    out: IO[str], results: Sequence[FileResult], errors: Sequence[str], *, policies: Sequence[str] = ()
) -> None:
    from validator import __version__  # noqa: PLC0415 - import cycle: validator/__init__ imports the core

    notifications = [
        {"level": "error", "message": {"text": _text(e)}}
        for e in [*errors, *(r.error for r in results if r.error)]
        if e
    ]
    invocation: dict[str, Any] = {
        "executionSuccessful": not notifications,
        "properties": {"policies": list(policies) or [NO_POLICY]},
    }
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "stcheck",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": _sarif_rules(),
            }
        },
        "invocations": [invocation],
        "originalUriBaseIds": {"%SRCROOT%": {"uri": "file://" + _cwd_posix() + "/"}},
        "properties": {"policies": list(policies) or [NO_POLICY]},
        "results": [],
    }
    doc = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    text = json.dumps(doc, indent=2)
    head, tail = text.split('"results": []', 1)
    out.write(head + '"results": [')
    index = {rule.slug: i for i, rule in enumerate(RULES)}
    first = True
    for r in results:
        for result in _sarif_results(r, index):
            out.write(("\n" if first else ",\n") + _indent(json.dumps(result, indent=2), 8))
            first = False
    out.write(("]" if first else "\n      ]") + tail + "\n")


def _cwd_posix() -> str:
    return quote(os.getcwd().replace(os.sep, "/").encode("utf-8", "surrogateescape"), safe="/")


# -- JUnit --------------------------------------------------------------------------


def _xml_text(lines: Sequence[str]) -> str:
    """Lines as XML 1.0 character data: every character XML cannot carry is escaped."""
    return "\n".join(escape_line(line) for line in lines)


def _junit_case(r: FileResult) -> ET.Element:
    case = ET.Element("testcase", classname="stcheck.scan", name=escape_path(r.path), time=f"{r.seconds:.3f}")
    if r.reference_valid is not None:  # whether safetensors 0.8.0 reads the file
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="reference_valid", value=str(r.reference_valid).lower())
    errs = [i for i in r.active if i.severity is Severity.ERROR]
    warns = [i for i in r.active if i.severity is Severity.WARNING]
    if r.error is not None:
        message = escape_line(r.error)
        ET.SubElement(case, "error", message=message, type="unreadable").text = message
    elif errs:
        first = errs[0].finding
        note = f" ({REFERENCE_LOADS})" if _loads(r) else ""
        failure = ET.SubElement(
            case, "failure", message=escape_line(f"{first.code} {first.slug}: {first.message}{note}"), type=first.code
        )
        failure.text = _xml_text([finding_line(r.path, i.finding) for i in errs] + ([note.strip()] if note else []))
    out_lines = [f"warning: {finding_line(r.path, i.finding)}" for i in warns]
    out_lines += [
        f"suppressed ({i.suppressed}): {finding_line(r.path, i.finding)}" for i in r.items if i.suppressed is not None
    ]
    if r.sha256 is not None:
        out_lines.append(f"sha256 {r.sha256}")
    if out_lines:
        ET.SubElement(case, "system-out").text = _xml_text(out_lines)
    return case


def write_junit(
    out: IO[str], results: Sequence[FileResult], errors: Sequence[str], seconds: float, *, policies: Sequence[str] = ()
) -> None:
    """One <testcase> per file: <failure> for errors, <error> when unreadable."""
    failures = sum(1 for r in results if r.error is None and any(i.severity is Severity.ERROR for i in r.active))
    io_errors = sum(r.error is not None for r in results) + len(errors)
    total = len(results) + len(errors)
    counts = {"tests": str(total), "failures": str(failures), "errors": str(io_errors), "time": f"{seconds:.3f}"}
    root = ET.Element("testsuites", {"name": "stcheck", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": "stcheck scan", **counts, "skipped": "0"})
    props = ET.SubElement(suite, "properties")
    for policy in policies or [NO_POLICY]:
        ET.SubElement(props, "property", name="policy", value=escape_line(policy))
    ET.SubElement(suite, "testcase").text = "\0"  # marks where the streamed cases go
    ET.indent(root)
    skeleton = ET.tostring(root, encoding="unicode")
    marker = skeleton.index("<testcase>")
    end = skeleton.index("</testcase>", marker) + len("</testcase>")
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n' + skeleton[:marker])
    pad = skeleton[skeleton.rindex("\n", 0, marker) + 1 : marker]
    first = True
    for r in results:
        out.write(_case_text(_junit_case(r), pad, first=first))
        first = False
    for message in errors:
        case = ET.Element("testcase", classname="stcheck.scan", name=escape_line(message.split(":", 1)[0]), time="0")
        ET.SubElement(case, "error", message=escape_line(message), type="unreadable").text = escape_line(message)
        out.write(_case_text(case, pad, first=first))
        first = False
    out.write(skeleton[end:] + "\n")


def _case_text(case: ET.Element, pad: str, *, first: bool) -> str:
    ET.indent(case, space="  ", level=2)
    return ("" if first else "\n" + pad) + ET.tostring(case, encoding="unicode")


# -- dispatch -----------------------------------------------------------------------


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
    models: Sequence[ModelGroup] | None = None,
) -> None:
    """Stream the report in format ``fmt`` (one of FORMATS) to ``out``;
    ``models`` groups the results for the CycloneDX BOM (one model per
    result when not given)."""
    if fmt == "cyclonedx":
        from validator.scan.bom import ModelGroup, write_bom  # noqa: PLC0415 - the sbom extra loads only for this format

        groups = models if models is not None else [ModelGroup(r.path, r.path, [(r.path, r)]) for r in results]
        write_bom(out, groups, [*errors, *(r.error for r in results if r.error)], profile=profile, policies=policies)
    elif fmt == "json":
        write_json(out, results, errors, seconds, profile=profile, policies=policies)
    elif fmt == "sarif":
        write_sarif(out, results, errors, policies=policies)
    elif fmt == "junit":
        write_junit(out, results, errors, seconds, policies=policies)
    else:
        write_text(out, results, errors, seconds, policies=policies, warnings=warnings)
