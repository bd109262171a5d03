# Strategy: `stcheck rules CODE|SLUG`, the way `ruff rule` explains one
# rule.  The text comes from the catalogue (validator._rules) and the bad
# examples with their fixes (validator._explain); for a rule checked on one
# file's bytes the example is validated here and then, so the "stcheck says"
# lines are what the validator really reports, not a copy that could drift.
from __future__ import annotations

import json
import sys

from validator._display import finding_line
from validator._explain import EXAMPLES
from validator._rules import BY_CODE, BY_SLUG, Profile, Rule, Severity
from validator._validate import validate
from validator.cli._common import EXIT_ERROR, EXIT_OK
from validator.scan.formats import spec_link

_SHOWN_BYTES = 160


def _lookup(key: str) -> Rule | None:
    return BY_SLUG.get(key) or BY_CODE.get(key.upper())


def _profiles(rule: Rule) -> str:
    return "strict and reference profiles" if len(rule.profiles) == 2 else "strict profile only"


def _reference(rule: Rule) -> str:
    if rule.reference_error is not None:
        return f"safetensors 0.8.0 rejects such a file with {rule.reference_error}"
    if rule.profiles == {Profile.STRICT}:
        if rule.severity is Severity.WARNING:
            return "safetensors 0.8.0 accepts such a file; the strict profile warns about it"
        return "safetensors 0.8.0 accepts such a file; only the strict profile refuses it"
    if rule.region == "format":
        return "safetensors 0.8.0 rejects such a file at the length prefix"
    return "not a check safetensors 0.8.0 makes"


def _shown(data: bytes) -> str:
    cut = data[:_SHOWN_BYTES]
    text = repr(cut)
    return text + (f" ... ({len(data)} bytes)" if len(data) > len(cut) else f" ({len(data)} bytes)")


def explain(key: str, fmt: str = "text") -> int:
    """Print one rule's explanation; 2 when ``key`` names no rule."""
    rule = _lookup(key)
    if rule is None:
        sys.stderr.write(f"stcheck: unknown rule {key!r}; `stcheck rules` lists them\n")
        return EXIT_ERROR
    example = EXAMPLES.get(rule.slug)
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
        "fix": None if example is None else example.fix,
        "spec": spec_link(rule.anchor) or f"spec/SPEC.md#{rule.anchor}",
    }
    if fmt == "json":
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return EXIT_OK
    out = [
        f"{rule.code} {rule.slug}: {rule.title}",
        "",
        f"Severity: {rule.severity.value}, under the {_profiles(rule)}; {_reference(rule)}.",
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
        out += ["", "Fix:", f"    {example.fix}"]
    link = spec_link(rule.anchor)
    out += ["", f"Spec: spec/SPEC.md#{rule.anchor}" + (f" ({link})" if link else "")]
    sys.stdout.write("\n".join(out) + "\n")
    return EXIT_OK
