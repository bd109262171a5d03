# Strategy: a model signature's record (FileResult.signature, made by
# validator.pipeline.signatures: verified or not, by what and whom, the files
# compared and left out) as each report writes it.  JSON writes it whole on
# the signature's file entry and in the top-level `signatures` list
# (report.schema.json's signatureRecord), SARIF in the run's properties,
# JUnit as one `signature` property of the suite, in one line (phrase).
# A record says exactly what was verified: the model (folder, file, or hub
# commit), the files compared and matched, those left out and why, and
# those the scan found or read that the signature does not cover.
# Paths in a record are escaped as every path of a report is.
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from validator.report.format_common import json_path, json_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from validator.report.results import FileResult

__all__ = ["phrase", "record_json", "records"]


def record_json(record: dict[str, Any]) -> dict[str, Any]:
    """A record as JSON and SARIF write it: paths and text valid Unicode."""
    doc = dict(record)
    doc["path"] = json_path(record["path"])
    doc["model"] = json_path(record["model"])
    doc["ignored"] = [json_path(p) for p in record["ignored"]]
    doc["ignore_paths"] = [json_path(p) for p in record["ignore_paths"]]
    doc["matched"] = [json_path(p) for p in record["matched"]]
    doc["left_out"] = [{"path": json_path(e["path"]), "why": e["why"]} for e in record["left_out"]]
    doc["not_covered"] = [json_path(p) for p in record["not_covered"]]
    if record["detail"] is not None:
        doc["detail"] = json_text(record["detail"])
    return doc


def records(results: Sequence[FileResult]) -> list[dict[str, Any]]:
    """Every signature's record, in the order of the results."""
    return [record_json(r.signature) for r in results if r.signature is not None]


def phrase(record: dict[str, Any]) -> str:
    """``PATH: verified (oms, key sha256:...) at commit C; 3 of 3 signed files match, 1 left out, 1 not covered``."""
    how = " ".join(str(x) for x in (record["kind"], record["identity"] or record["fingerprint"]) if x is not None)
    who = ", ".join(x for x in (record["method"], how) if x)
    head = f"{record['path']}: {record['status']}" + (f" ({who})" if who else "")
    if record["commit"]:
        head += f" at commit {record['commit']}"
    if record["files_signed"] is None:
        return head + (f"; {record['detail']}" if record["detail"] and not record["verified"] else "")
    counts = f"{record['files_matched']} of {record['files_signed']} signed files match"
    if record["files_ignored"]:
        counts += f", {record['files_ignored']} left out"
    if record["files_not_covered"]:
        counts += f", {record['files_not_covered']} not covered"
    return f"{head}; {counts}"
