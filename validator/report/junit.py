# Strategy: the JUnit XML format (validator.report.formats registers it): one
# <testcase> per file, <failure> for errors, <error> when unreadable, the
# warnings, suppressions and digests in <system-out>; each model signature's
# record is a `signature` property of the suite.  Cases are streamed one
# at a time into a skeleton built by ElementTree.  XML 1.0 has no character
# reference for U+0001, so every string goes through validator._display's
# escaper: the XML stays well-formed whatever a file is called.
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import IO, TYPE_CHECKING

from validator._display import escape_line, escape_path, finding_line
from validator._findings import REFERENCE_LOADS
from validator._rules import Severity
from validator.report.format_common import reference_loads
from validator.report.signatures import phrase

if TYPE_CHECKING:
    from collections.abc import Sequence

    from validator.report.format_common import Context
    from validator.report.results import FileResult

__all__ = ["write"]

_NO_POLICY = "none"


def _xml_text(lines: Sequence[str]) -> str:
    """Lines as XML 1.0 character data: every character XML cannot carry is escaped."""
    return "\n".join(escape_line(line) for line in lines)


def _case(r: FileResult, command: str) -> ET.Element:
    case = ET.Element("testcase", classname=f"stcheck.{command}", name=escape_path(r.path), time=f"{r.seconds:.3f}")
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
        note = f" ({REFERENCE_LOADS})" if reference_loads(r) else ""
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
    if r.checked is not None and r.digest_matches:
        out_lines.append(f"{r.checked[0]} matches ({r.checked[2]})")
    if out_lines:
        ET.SubElement(case, "system-out").text = _xml_text(out_lines)
    return case


def write(out: IO[str], results: Sequence[FileResult], context: Context) -> None:
    """One <testcase> per file: <failure> for errors, <error> when unreadable."""
    failures = sum(1 for r in results if r.error is None and any(i.severity is Severity.ERROR for i in r.active))
    io_errors = sum(r.error is not None for r in results) + len(context.errors)
    total = len(results) + len(context.errors)
    counts = {
        "tests": str(total),
        "failures": str(failures),
        "errors": str(io_errors),
        "time": f"{context.seconds:.3f}",
    }
    root = ET.Element("testsuites", {"name": "stcheck", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": f"stcheck {context.command}", **counts, "skipped": "0"})
    props = ET.SubElement(suite, "properties")
    for policy in context.policies or [_NO_POLICY]:
        ET.SubElement(props, "property", name="policy", value=escape_line(policy))
    for r in results:  # each model signature: verified or not, by whom, files compared and left out
        if r.signature is not None:
            ET.SubElement(props, "property", name="signature", value=escape_line(phrase(r.signature)))
    ET.SubElement(suite, "testcase").text = "\0"  # marks where the streamed cases go
    ET.indent(root)
    skeleton = ET.tostring(root, encoding="unicode")
    marker = skeleton.index("<testcase>")
    end = skeleton.index("</testcase>", marker) + len("</testcase>")
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n' + skeleton[:marker])
    pad = skeleton[skeleton.rindex("\n", 0, marker) + 1 : marker]
    first = True
    for r in results:
        out.write(_case_text(_case(r, context.command), pad, first=first))
        first = False
    for message in context.errors:
        case = ET.Element(
            "testcase", classname=f"stcheck.{context.command}", name=escape_line(message.split(":", 1)[0]), time="0"
        )
        ET.SubElement(case, "error", message=escape_line(message), type="unreadable").text = escape_line(message)
        out.write(_case_text(case, pad, first=first))
        first = False
    out.write(skeleton[end:] + "\n")


def _case_text(case: ET.Element, pad: str, *, first: bool) -> str:
    ET.indent(case, space="  ", level=2)
    return ("" if first else "\n" + pad) + ET.tostring(case, encoding="unicode")
