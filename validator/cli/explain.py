# Strategy: `stcheck rules CODE|SLUG`, the way `ruff rule` explains one
# rule.  The text, the bad example and the fix come from the rule's row of
# the catalogue (validator._rules); for a rule checked on one file's bytes
# the example is validated here and then, so the "stcheck says" lines are
# what the validator really reports, not a copy that could drift.
from __future__ import annotations

import json
import sys

from validator._display import escape_line, finding_line
from validator._rules import Profile, find_rule, unknown_rule
from validator._validate import validate
from validator.cli._common import EXIT_ERROR, EXIT_OK
from validator.report.format_common import profiles_phrase, reference_phrase, spec_link

__all__ = ["explain"]

_SHOWN_BYTES = 160
# Where the full text is for someone who installed stcheck: SPEC.md is not
# in the package, so `spec/SPEC.md` would name nothing on their disk.
_SPEC_TEXT = "the section #{anchor} of SPEC.md, in stcheck's source tree (set STCHECK_SPEC_URL to link it)"


def _shown(data: bytes) -> str:
    cut = data[:_SHOWN_BYTES]
    text = repr(cut)
    return text + (f" ... ({len(data)} bytes)" if len(data) > len(cut) else f" ({len(data)} bytes)")


def explain(key: str, fmt: str = "text") -> int:
    """Print one rule's explanation; 2 when ``key`` names no rule."""
    rule = find_rule(key)
    if rule is None:
        sys.stderr.write(escape_line(f"stcheck rules: {unknown_rule(key)}") + "\n")
        return EXIT_ERROR
    example = rule.example
    data = None if example is None else example.file()
    said = []
    if data is not None:
        report = validate(data, profile="strict" if Profile.STRICT in rule.profiles else "reference")
        said = [finding_line("example.safetensors", f) for f in report.findings]
    doc = {
        "code": rule.code,
        "slug": rule.slug,
        "title": rule.title,
        "severity": rule.severity.value,
        "profiles": sorted(p.value for p in rule.profiles),
        "reference_error": rule.reference_error,
        "example": None if example is None else (example.text if data is None else data.hex()),
        "stcheck_says": said,
        "fix": rule.fix,
        "anchor": rule.anchor,
        "spec": spec_link(rule.anchor),
    }
    if fmt == "json":
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return EXIT_OK
    out = [
        f"{rule.code} {rule.slug}: {rule.title}",
        "",
        f"Severity: {rule.severity.value}, under the {profiles_phrase(rule)}; {reference_phrase(rule)}.",
    ]
    if example is not None:
        out += ["", "Bad example:"]
        if data is None:
            out.append(f"    {example.text}")
        elif example.header is not None:
            header = example.header + (
                " " * (-len(example.header.encode("utf-8", "surrogatepass")) % 8) if example.pad else ""
            )
            out.append(f"    header (after the 8-byte length prefix): {header!r}")
            out.append(f"    data region: {example.data} zero bytes")
        else:
            out.append(f"    {_shown(data)}")
        if said:
            out += ["", "stcheck says:"]
            out += [f"    {line}" for line in said]
    if rule.fix is not None:
        out += ["", "Fix:", f"    {rule.fix}"]
    link = spec_link(rule.anchor)
    out += ["", f"Spec: {link or _SPEC_TEXT.format(anchor=rule.anchor)}"]
    sys.stdout.write("\n".join(out) + "\n")
    return EXIT_OK
