# Strategy: what every output format shares: the report's Context, the
# summary counts, how strings and paths become JSON values, and how a rule is
# described in words.  The writers (validator.report.formats, .sarif, .junit)
# import this module and never each other, so a format loads only when it
# is chosen (xml.etree for JUnit alone).  Imports only the core.
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Final, Protocol

from validator._display import encodable, escape_line, escape_path
from validator._findings import strict_only_failure
from validator._rules import Profile, Rule, Severity
from validator.config import settings
from validator.sources.kinds import count_kinds

if TYPE_CHECKING:
    from collections.abc import Sequence

    from validator.report.results import FileResult

__all__ = [
    "BLOB_NAME_SOURCE",
    "SPEC_URL_ENV",
    "Context",
    "Writer",
    "human",
    "indent",
    "json_path",
    "json_text",
    "policy_names",
    "profiles_phrase",
    "reference_loads",
    "reference_phrase",
    "spec_base",
    "spec_link",
    "summary",
]

# stcheck has no fixed public address: links to the spec are written only
# when STCHECK_SPEC_URL names where SPEC.md is hosted (your mirror's
# .../blob/main/spec/SPEC.md), never to a made-up one.
SPEC_URL_ENV: Final = settings.SPEC_URL_ENV
# integrity.from_blob_name's source: a hub blob checked against its own name
# is counted in the summary, not given a line of its own per file.
BLOB_NAME_SOURCE: Final = "hub cache blob name"
# How a file read from standard input (`stcheck check -`) is named.


def spec_base() -> str | None:
    """Where SPEC.md is hosted ($STCHECK_SPEC_URL), or None."""
    return settings.environment().spec_url


def spec_link(anchor: str) -> str | None:
    """``$STCHECK_SPEC_URL#anchor``, or None when the variable is unset."""
    base = spec_base()
    return f"{base}#{anchor}" if base else None


def profiles_phrase(rule: Rule) -> str:
    """Under which profiles a rule is checked, in words."""
    return "strict and reference profiles" if len(rule.profiles) == 2 else "strict profile only"


def reference_phrase(rule: Rule) -> str:
    """What safetensors 0.8.0 does with a file that breaks ``rule``, in words."""
    if rule.reference_error is not None:
        return f"safetensors 0.8.0 rejects such a file with {rule.reference_error}"
    if rule.profiles == {Profile.STRICT}:
        if rule.severity is Severity.WARNING:
            return "safetensors 0.8.0 accepts such a file; the strict profile warns about it"
        return "safetensors 0.8.0 accepts such a file; only the strict profile refuses it"
    if rule.region == "format":
        return "safetensors 0.8.0 rejects such a file at the length prefix"
    return "not a check safetensors 0.8.0 makes"


def human(n: float) -> str:
    """A byte count in binary units: 512 B, 1.5 KiB, 3.0 MiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


@dataclass(frozen=True)
class Context:
    """What a report says besides its results: the command, the profile and
    policies in force, the paths that could not be read, the time taken,
    and how text is shown."""

    command: str = "scan"
    profile: str = "strict"
    policies: Sequence[str] = ()
    errors: Sequence[str] = ()
    seconds: float = 0.0
    warnings: bool = True  # text: show warnings
    quiet: int = 0  # text: 1, the finding lines only (nothing on success); 2, nothing
    color: bool = False  # text: ANSI colours
    statistics: bool = False  # text: finding counts per rule after the summary
    sources: Sequence[str] = ()  # the arguments as given: a BOM makes each folder one model (report.bom.models)


class Writer(Protocol):
    def __call__(self, out: IO[str], results: Sequence[FileResult], context: Context) -> None: ...


def json_text(s: str) -> str:
    """A string as a JSON or SARIF value: itself when valid Unicode, else escaped."""
    return s if encodable(s) else escape_line(s)


def json_path(s: str) -> str:
    return s if encodable(s) else escape_path(s)


def _models(results: Sequence[FileResult]) -> dict[str, dict[str, int]]:
    """Per hub repository: files, invalid files (the --hf-cache view)."""
    models: dict[str, dict[str, int]] = {}
    for r in results:
        if r.model is not None:
            entry = models.setdefault(json_path(r.model), {"files": 0, "invalid": 0})
            entry["files"] += 1
            entry["invalid"] += not r.valid
    return models


def summary(results: Sequence[FileResult], errors: Sequence[str], seconds: float) -> dict[str, Any]:
    """Counts for the summary line and the JSON ``summary`` object."""
    by_rule: Counter[str] = Counter()
    suppressed = 0
    for r in results:
        for item in r.items:
            if item.suppressed is None:
                by_rule[f"{item.finding.code} {item.finding.slug}"] += 1
            else:
                suppressed += 1
    files = [r for r in results if r.kind == "safetensors"]
    indexes = [r for r in results if r.kind == "index"]
    digests = [r.digest_matches for r in results if r.digest_matches is not None]
    unreadable = [r.error for r in results if r.error is not None]
    return {
        "files": len(files),
        "valid": sum(r.valid for r in files),
        "invalid": sum(not r.valid and r.error is None for r in files),
        # A target that is neither a safetensors file nor an index (another
        # file, a link, a blob) with an error: never counted as valid.
        "failing_others": sum(
            r.kind not in {"safetensors", "index", "missing"} and r.error is None and not r.valid for r in results
        ),
        "reference_loads": sum(reference_loads(r) for r in files),
        "checkpoints": len(indexes),
        "invalid_checkpoints": sum(not r.valid for r in indexes),
        "blobs": sum(r.kind == "blob" for r in results),
        "missing": sum(r.kind == "missing" for r in results),
        "unreadable": [json_text(e) for e in [*errors, *(e for e in unreadable if e is not None)]],
        "errors": sum(i.severity is Severity.ERROR for r in results for i in r.active),
        "warnings": sum(i.severity is Severity.WARNING for r in results for i in r.active),
        "suppressed": suppressed,
        "not_listed": sum(r.not_listed for r in results),
        "digests_checked": len(digests),
        "digests_matched": sum(digests),
        "findings_by_rule": dict(sorted(by_rule.items())),
        "bytes_scanned": sum(r.bytes_read for r in results),
        "seconds": round(seconds, 3),
        "models": _models(results),
        "other_files": _other_kinds(results),
    }


def _other_kinds(results: Sequence[FileResult]) -> dict[str, int]:
    """A folder's other files (and a hub cache's non-safetensors files) per kind."""
    return count_kinds(r.file_kind for r in results if r.file_kind is not None)


def reference_loads(r: FileResult) -> bool:
    """The strict profile fails the file, safetensors 0.8.0 reads it (REFERENCE_LOADS)."""
    return r.error is None and strict_only_failure(
        r.reference_valid, (i.finding for i in r.active if i.severity is Severity.ERROR)
    )


def policy_names(policies: Sequence[str]) -> str | None:
    """The policies in force as one string, or None when there is none."""
    return "; ".join(policies) if policies else None


def indent(text: str, n: int) -> str:
    """Every line of ``text`` indented by ``n`` spaces (the streamed JSON writers)."""
    pad = " " * n
    return "\n".join(pad + line for line in text.splitlines())
