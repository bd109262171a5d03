# Strategy: one function per output format, each turning the same list of
# FileResults into a string: text for people, JSON for programs (the shape of
# `spec/report.schema.json`), SARIF 2.1.0 for GitHub code scanning, and JUnit
# XML for CI systems that show test reports.  Suppressed findings are kept in
# every machine format, marked with the policy's reason (SARIF
# `suppressions`, JUnit <skipped>), and left out of the text lines.
#
# SARIF notes: a safetensors file is binary, so a result's region carries
# `byteOffset` (and `byteLength` 1 as a point); GitHub code scanning also
# wants a `startLine`, so line 1 is given alongside.  Artifact URIs are
# relative to the current directory (with uriBaseId %SRCROOT%) when the file
# lies below it, which is what code scanning maps onto the repository.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH100, PTH109, PTH110
from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

from validator._rules import RULES, Severity

if TYPE_CHECKING:
    from collections.abc import Sequence

    from validator.scan.engine import FileResult

INFO_URI: Final = "https://github.com/stcheck/stcheck"
SPEC_URI: Final = INFO_URI + "/blob/main/spec/SPEC.md"
SARIF_SCHEMA: Final = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FORMATS: Final = ("text", "json", "sarif", "junit")


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def _models(results: Sequence[FileResult]) -> dict[str, dict[str, int]]:
    """Per hub repository: files, invalid files (the --hf-cache view)."""
    models: dict[str, dict[str, int]] = {}
    for r in results:
        if r.model is not None:
            entry = models.setdefault(r.model, {"files": 0, "invalid": 0})
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
        "blobs": len(results) - len(files),
        "unreadable": [*errors, *(e for e in unreadable if e is not None)],
        "errors": sum(i.severity is Severity.ERROR for r in results for i in r.active),
        "warnings": sum(i.severity is Severity.WARNING for r in results for i in r.active),
        "suppressed": suppressed,
        "findings_by_rule": dict(sorted(by_rule.items())),
        "bytes_scanned": sum(r.bytes_read for r in results),
        "seconds": round(seconds, 3),
        "models": _models(results),
    }


def format_text(results: Sequence[FileResult], errors: Sequence[str], seconds: float, *, warnings: bool = True) -> str:
    lines = []
    for r in results:
        if r.error is not None:
            lines.append(f"{r.path}:: error {r.error}")
        for item in r.active:
            if not warnings and item.severity is Severity.WARNING:
                continue
            line = item.finding.format(r.path)
            if item.reason is not None:
                line += f" [{item.severity.value} by policy: {item.reason}]"
            lines.append(line)
    s = summary(results, errors, seconds)
    rows = [
        ("files", str(s["files"])),
        ("valid", str(s["valid"])),
        ("invalid", str(s["invalid"])),
    ]
    if s["blobs"]:
        rows.append(("other blobs verified", str(s["blobs"])))
    if s["unreadable"]:
        rows.append(("unreadable", str(len(s["unreadable"]))))
    rows.append(("errors / warnings", f"{s['errors']} / {s['warnings']}"))
    if s["suppressed"]:
        rows.append(("suppressed by policy", str(s["suppressed"])))
    rate = s["bytes_scanned"] / seconds if seconds > 0 else 0.0
    rows.append(("bytes scanned", f"{s['bytes_scanned']} ({_human(s['bytes_scanned'])}, {_human(rate)}/s)"))
    rows.extend((f"  {rule}", str(count)) for rule, count in s["findings_by_rule"].items())
    if s["models"]:
        rows.append(("models", str(len(s["models"]))))
        rows.extend((f"  {m}", f"{c['files']} files, {c['invalid']} invalid") for m, c in s["models"].items())
    width = max(len(k) for k, _ in rows)
    lines.append("")
    lines.append("summary")
    lines.extend(f"  {k.ljust(width)}  {v}" for k, v in rows)
    return "\n".join(lines) + "\n"


def to_json_doc(
    results: Sequence[FileResult], errors: Sequence[str], seconds: float, *, profile: str, policy: str | None
) -> dict[str, Any]:
    from validator import __version__  # noqa: PLC0415 - import cycle: validator/__init__ imports the core

    return {
        "tool": "stcheck",
        "version": __version__,
        "command": "scan",
        "profile": profile,
        "policy": policy,
        "files": [r.to_json() for r in results if r.error is None],
        "summary": summary(results, errors, seconds),
    }


def format_json(
    results: Sequence[FileResult], errors: Sequence[str], seconds: float, *, profile: str, policy: str | None
) -> str:
    return json.dumps(to_json_doc(results, errors, seconds, profile=profile, policy=policy), indent=2) + "\n"


def _uri(path: str) -> tuple[str, str | None]:
    """A SARIF artifact URI and its base id for a display path."""
    if not os.path.exists(path):  # a hub-cache display name
        return quote(path, safe="/@"), None
    absolute = os.path.abspath(path)
    here = os.getcwd()
    if absolute == here or absolute.startswith(here.rstrip(os.sep) + os.sep):
        return quote(Path(os.path.relpath(absolute, here)).as_posix(), safe="/"), "%SRCROOT%"
    return Path(absolute).as_uri(), None


def to_sarif(results: Sequence[FileResult], errors: Sequence[str]) -> dict[str, Any]:
    from validator import __version__  # noqa: PLC0415 - import cycle: validator/__init__ imports the core

    index = {rule.slug: i for i, rule in enumerate(RULES)}
    rules = [
        {
            "id": rule.code,
            "name": rule.slug,
            "shortDescription": {"text": rule.title},
            "helpUri": f"{SPEC_URI}#{rule.anchor}",
            "defaultConfiguration": {"level": "error" if rule.severity is Severity.ERROR else "warning"},
            "properties": {"tags": ["safetensors", rule.region]},
        }
        for rule in RULES
    ]
    out_results = []
    for r in results:
        uri, base = _uri(r.path)
        location: dict[str, Any] = {"uri": uri}
        if base is not None:
            location["uriBaseId"] = base
        for item in r.items:
            f = item.finding
            region: dict[str, Any] = {"startLine": 1}
            if f.offset is not None:
                region["byteOffset"] = f.offset
                region["byteLength"] = 1
            result: dict[str, Any] = {
                "ruleId": f.code,
                "ruleIndex": index[f.slug],
                "level": "error" if item.severity is Severity.ERROR else "warning",
                "message": {"text": f"{f.slug}: {f.message}"},
                "locations": [{"physicalLocation": {"artifactLocation": location, "region": region}}],
                "partialFingerprints": {"stcheck/v1": f"{f.code}:{f.tensor or ''}:{f.json_path or ''}:{f.offset}"},
            }
            properties: dict[str, Any] = {}
            if f.tensor is not None:
                properties["tensor"] = f.tensor
            if r.model is not None:
                properties["model"] = r.model
            if item.reason is not None:
                properties["policyReason"] = item.reason
            if r.cached:
                properties["cached"] = True  # replayed from the results cache (--cache), not read again
            if properties:
                result["properties"] = properties
            if item.suppressed is not None:
                result["suppressions"] = [{"kind": "external", "status": "accepted", "justification": item.suppressed}]
            out_results.append(result)
    notifications = [
        {"level": "error", "message": {"text": e}} for e in [*errors, *(r.error for r in results if r.error)] if e
    ]
    invocation: dict[str, Any] = {"executionSuccessful": not notifications}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "stcheck",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFO_URI,
                        "rules": rules,
                    }
                },
                "invocations": [invocation],
                "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(os.getcwd()).as_uri() + "/"}},
                "results": out_results,
            }
        ],
    }


def format_sarif(results: Sequence[FileResult], errors: Sequence[str]) -> str:
    return json.dumps(to_sarif(results, errors), indent=2) + "\n"


def format_junit(results: Sequence[FileResult], errors: Sequence[str], seconds: float) -> str:
    """One <testcase> per file: <failure> for errors, <error> when unreadable."""
    suite = ET.Element("testsuite", name="stcheck scan")
    failures = io_errors = skipped = 0
    for r in results:
        case = ET.SubElement(suite, "testcase", classname="stcheck.scan", name=r.path, time=f"{r.seconds:.3f}")
        errs = [i for i in r.active if i.severity is Severity.ERROR]
        warns = [i for i in r.active if i.severity is Severity.WARNING]
        if r.error is not None:
            io_errors += 1
            ET.SubElement(case, "error", message=r.error, type="unreadable").text = r.error
        elif errs:
            failures += 1
            first = errs[0].finding
            failure = ET.SubElement(
                case, "failure", message=f"{first.code} {first.slug}: {first.message}", type=first.code
            )
            failure.text = "\n".join(i.finding.format(r.path) for i in errs)
        out_lines = [f"warning: {i.finding.format(r.path)}" for i in warns]
        out_lines += [
            f"suppressed ({i.suppressed}): {i.finding.format(r.path)}" for i in r.items if i.suppressed is not None
        ]
        if r.sha256 is not None:
            out_lines.append(f"sha256 {r.sha256}")
        if out_lines:
            ET.SubElement(case, "system-out").text = "\n".join(out_lines)
    for message in errors:
        io_errors += 1
        case = ET.SubElement(suite, "testcase", classname="stcheck.scan", name=message.split(":", 1)[0], time="0")
        ET.SubElement(case, "error", message=message, type="unreadable").text = message
    total = len(results) + len(errors)
    suite.set("tests", str(total))
    suite.set("failures", str(failures))
    suite.set("errors", str(io_errors))
    suite.set("skipped", str(skipped))
    suite.set("time", f"{seconds:.3f}")
    root = ET.Element("testsuites", name="stcheck", tests=str(total), failures=str(failures), errors=str(io_errors))
    root.set("time", f"{seconds:.3f}")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render(
    fmt: str,
    results: Sequence[FileResult],
    errors: Sequence[str],
    seconds: float,
    *,
    profile: str,
    policy: str | None,
    warnings: bool = True,
) -> str:
    """The report in format ``fmt`` (one of FORMATS)."""
    if fmt == "json":
        return format_json(results, errors, seconds, profile=profile, policy=policy)
    if fmt == "sarif":
        return format_sarif(results, errors)
    if fmt == "junit":
        return format_junit(results, errors, seconds)
    return format_text(results, errors, seconds, warnings=warnings)
