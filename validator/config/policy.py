# Strategy: a scan policy is data read from TOML, either a file given with
# `--policy FILE.toml` or the `[tool.stcheck]` table of a `pyproject.toml`.
# It sets limits (file size, header size, tensor count), the dtypes that are
# allowed or forbidden, the metadata keys that must be present, and per-rule
# severity overrides or ignores, and the paths a model signature's
# verification leaves out (`ignore_paths`).  Every override and every ignore must carry
# a reason, which reports show next to the finding: a suppressed finding is
# kept, marked suppressed, never silently dropped.  A policy with an unknown
# key, an unknown rule or a missing reason is refused (PolicyError) rather
# than half-applied, and so is one that would ignore, or lower to a
# warning, a rule for which safetensors 0.8.0 rejects the file.
#
# Configuration comes from the user, never from what is vetted: without
# --policy, the [tool.stcheck] table of the nearest pyproject.toml from the
# working directory upward applies (the user's own project, as ruff and
# pre-commit users expect).  One that lies inside a scanned path applies only
# where it sits at the root of the user's checkout (`check .` from the
# project's root): a .git or .hg beside it that is not a clone of a model
# hub.  A download (a hub snapshot, a `stcheck download` or `hf download`
# folder, an unpacked archive, a `git clone` of a hub repository) has no such
# root, so it cannot ignore rules for its own files, even when the working
# directory is the download (spec/SPEC.md, "Where the policy comes from").
# --no-config skips discovery.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH100, PTH109, PTH112, PTH113, PTH118, PTH119, PTH120, PTH123
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from validator._display import plural
from validator._dtypes import DTYPE_BITS
from validator._errors import SourceError, StcheckError
from validator._inputs import POLICY_LIMIT, read_input
from validator._rules import Rule, Severity, find_rule, unknown_rule

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from validator._check import Checker
    from validator._findings import Finding, Report

__all__ = [
    "Discovery",
    "Policy",
    "PolicyError",
    "RuleSetting",
    "ScanItem",
    "apply_policy",
    "check_policy",
    "discover_policy",
    "find_pyproject_policy",
    "load_policy",
    "parse_policy",
    "rejected_by_reference",
]


class PolicyError(StcheckError):
    """A policy file is unreadable or malformed."""


@dataclass(frozen=True)
class RuleSetting:
    """What a policy says about one rule."""

    reason: str
    severity: Severity | None = None
    ignore: bool = False


@dataclass(frozen=True)
class Policy:
    """Limits, dtype and metadata requirements, and rule settings."""

    max_file_size: int | None = None
    max_header_size: int | None = None
    max_tensors: int | None = None
    allowed_dtypes: frozenset[str] | None = None
    forbidden_dtypes: frozenset[str] = frozenset()
    required_metadata: tuple[str, ...] = ()
    rules: Mapping[str, RuleSetting] = field(default_factory=dict)  # slug -> setting
    source: str | None = None
    # Paths a model signature's verification leaves out, relative to the
    # signed folder (a folder covers everything below it): `scan --ignore-path`.
    ignore_paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScanItem:
    """A finding as a scan reports it: with the policy's severity applied.

    ``suppressed`` is the policy's reason when the rule is ignored;
    ``reason`` is the policy's reason when it changed the severity.
    """

    finding: Finding
    severity: Severity
    suppressed: str | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        doc = self.finding.to_json()
        doc["severity"] = self.severity.value
        if self.reason is not None:
            doc["policy_reason"] = self.reason
            doc["default_severity"] = self.finding.severity.value
        if self.suppressed is not None:
            doc["suppression"] = {"reason": self.suppressed}
        return doc


_SIZE_UNITS: Final = {
    "": 1,
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}
_KEYS: Final = frozenset(
    {
        "max_file_size",
        "max_header_size",
        "max_tensors",
        "allowed_dtypes",
        "forbidden_dtypes",
        "required_metadata",
        "rules",
        "ignore_paths",
    },
)


def _size(where: str, value: object) -> int:
    if isinstance(value, bool):
        raise PolicyError(f"{where}: expected a size, got a boolean")
    if isinstance(value, int):
        if value < 0:
            raise PolicyError(f"{where}: a size cannot be negative")
        return value
    if isinstance(value, str):
        text = value.strip().upper().replace(" ", "").replace("_", "")
        digits = text.rstrip("KMGTIB")
        unit = text[len(digits) :]
        if digits.isdigit() and unit in _SIZE_UNITS:
            return int(digits) * _SIZE_UNITS[unit]
    raise PolicyError(f"{where}: expected a byte count or a size such as '20 GB' or '512 MiB', got {value!r}")


def _dtypes(where: str, value: object) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PolicyError(f"{where}: expected a list of dtype names")
    unknown = [v for v in value if v not in DTYPE_BITS]
    if unknown:
        raise PolicyError(f"{where}: unknown dtype {unknown[0]!r}; the names are {', '.join(DTYPE_BITS)}")
    return frozenset(value)


def rejected_by_reference(rule: Rule) -> bool:
    """Whether a file that breaks ``rule`` is one safetensors 0.8.0 refuses to load.

    Such a finding may never be ignored or lowered to a warning: a policy
    must not turn a file the reference rejects into a pass.
    """
    return rule.reference_error is not None or rule.region == "format"


def _rule_settings(where: str, value: object) -> dict[str, RuleSetting]:  # noqa: C901 - one branch per policy key
    if not isinstance(value, dict):
        raise PolicyError(f"{where}: expected a table of rules")
    out: dict[str, RuleSetting] = {}
    for key, body in value.items():
        here = f"{where}.{key}"
        found = find_rule(key)
        if found is None:
            raise PolicyError(f"{here}: {unknown_rule(key)}")
        if not isinstance(body, dict):
            raise PolicyError(f"{here}: expected a table with 'reason' and 'severity' or 'ignore'")
        extra = set(body) - {"reason", "severity", "ignore"}
        if extra:
            raise PolicyError(f"{here}: unknown key {min(extra)!r}")
        reason = body.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise PolicyError(f"{here}: every override needs a non-empty 'reason'")
        ignore = body.get("ignore", False)
        if not isinstance(ignore, bool):
            raise PolicyError(f"{here}.ignore: expected true or false")
        severity = None
        if "severity" in body:
            try:
                severity = Severity(body["severity"])
            except ValueError:
                raise PolicyError(f"{here}.severity: expected 'error' or 'warning'") from None
        if severity is None and not ignore:
            raise PolicyError(f"{here}: give 'severity' or 'ignore = true'")
        if rejected_by_reference(found) and (ignore or severity is Severity.WARNING):
            raise PolicyError(
                f"{here}: safetensors 0.8.0 rejects every file that breaks {found.code} {found.slug}; "
                "a policy cannot ignore it or lower it to a warning"
            )
        out[found.slug] = RuleSetting(reason.strip(), severity, ignore)
    return out


def parse_policy(doc: Mapping[str, Any], source: str) -> Policy:
    """Build a Policy from a parsed TOML table; raise PolicyError on mistakes."""
    extra = set(doc) - _KEYS
    if extra:
        raise PolicyError(f"{source}: unknown policy key {min(extra)!r}; known keys: {', '.join(sorted(_KEYS))}")
    required = doc.get("required_metadata", [])
    if not isinstance(required, list) or not all(isinstance(v, str) for v in required):
        raise PolicyError(f"{source}: required_metadata: expected a list of strings")
    max_tensors = doc.get("max_tensors")
    if max_tensors is not None and (
        isinstance(max_tensors, bool) or not isinstance(max_tensors, int) or max_tensors < 0
    ):
        raise PolicyError(f"{source}: max_tensors: expected a non-negative integer")
    ignore_paths = doc.get("ignore_paths", [])
    if not isinstance(ignore_paths, list) or not all(isinstance(v, str) and v.strip() for v in ignore_paths):
        raise PolicyError(f"{source}: ignore_paths: expected a list of paths (relative to the signed folder)")
    return Policy(
        max_file_size=None if "max_file_size" not in doc else _size(f"{source}: max_file_size", doc["max_file_size"]),
        max_header_size=None
        if "max_header_size" not in doc
        else _size(f"{source}: max_header_size", doc["max_header_size"]),
        max_tensors=max_tensors,
        allowed_dtypes=None
        if "allowed_dtypes" not in doc
        else _dtypes(f"{source}: allowed_dtypes", doc["allowed_dtypes"]),
        forbidden_dtypes=_dtypes(f"{source}: forbidden_dtypes", doc.get("forbidden_dtypes", [])),
        required_metadata=tuple(required),
        rules=_rule_settings(f"{source}: rules", doc.get("rules", {})),
        source=source,
        ignore_paths=tuple(ignore_paths),
    )


def _load_toml(path: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib  # noqa: PLC0415 - tomllib/tomli is chosen by Python version
    else:  # pragma: no cover - exercised on 3.10 only
        try:
            import tomli as tomllib  # noqa: PLC0415 - tomllib/tomli is chosen by Python version
        except ImportError:
            raise PolicyError("reading a policy on Python 3.10 needs the 'tomli' package (pip install tomli)") from None
    try:
        doc: dict[str, Any] = tomllib.loads(read_input(path, "policy", POLICY_LIMIT).decode("utf-8"))
    except SourceError as exc:  # a regular file, bounded (validator._inputs)
        raise PolicyError(str(exc)) from exc
    except UnicodeDecodeError as exc:
        raise PolicyError(f"{path}: not valid TOML: not UTF-8: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(f"{path}: not valid TOML: {exc}") from exc
    return doc


def load_policy(path: str) -> Policy:
    """Read a policy file; a pyproject.toml contributes its [tool.stcheck]."""
    doc = _load_toml(path)
    if os.path.basename(path) == "pyproject.toml" or "tool" in doc:
        table = doc.get("tool", {}).get("stcheck", {})
        return parse_policy(table, f"{path} [tool.stcheck]")
    return parse_policy(doc, path)


@dataclass(frozen=True)
class Discovery:
    """The policy found for a scan, and the candidates passed over."""

    policy: Policy | None
    passed_over: tuple[str, ...] = ()  # pyproject.toml files naming stcheck that lie inside a scanned path


def _inside_any(path: str, scanned: Sequence[str]) -> bool:
    real = os.path.realpath(path)
    for given in scanned:
        top = os.path.realpath(given)
        if real == top:
            return True
        try:
            if os.path.isdir(top) and os.path.commonpath([real, top]) == top:
                return True
        except ValueError:  # different drives
            continue
    return False


def _names_stcheck(path: str) -> bool:
    """Whether a file mentions stcheck at all (read as bytes, bounded, never parsed)."""
    try:
        with open(path, "rb") as fh:
            return b"stcheck" in fh.read(1 << 20)
    except OSError:
        return False


# The hosts a `git clone` of a model hub's repository names as its remote
# (and the user's $HF_ENDPOINT, a mirror of the hub).
_HUB_HOSTS: Final = ("huggingface.co", "hf.co")


def _hub_remote(hosts: Sequence[str]) -> re.Pattern[bytes]:
    names = b"|".join(re.escape(h.encode("utf-8", "surrogateescape")) for h in hosts)
    return re.compile(rb"(?mi)^\s*url\s*=\s*\S*?(?:[/@.]|^)(?:" + names + rb")(?:[:/]|$)")


def _hub_hosts() -> tuple[str, ...]:
    from urllib.parse import urlsplit  # noqa: PLC0415 - only for a pyproject.toml inside a checked path

    from validator.config.settings import environment  # noqa: PLC0415 - as above

    endpoint = environment().hf_endpoint
    mirror = urlsplit(endpoint).hostname if endpoint else None
    return (*_HUB_HOSTS, mirror) if mirror else _HUB_HOSTS


def _users_checkout(folder: str) -> bool:
    """Whether ``folder`` is the root of a checkout of the user's own: a .git
    or .hg beside its pyproject.toml, and no model hub (nor $HF_ENDPOINT) as a remote.

    Git writes .git/config at clone time, and nothing in the cloned
    repository can change its remote; a hub snapshot, a downloaded folder or
    an unpacked archive has no .git at all."""
    git = os.path.join(folder, ".git")
    if os.path.isdir(git):
        try:
            with open(os.path.join(git, "config"), "rb") as fh:
                config = fh.read(1 << 16)
        except OSError:
            config = b""
        return _hub_remote(_hub_hosts()).search(config) is None
    return os.path.isfile(git) or os.path.isdir(os.path.join(folder, ".hg"))  # a worktree or submodule; Mercurial


def discover_policy(scanned: Sequence[str] = (), start: str | None = None) -> Discovery:
    """The user's policy: the [tool.stcheck] table of the nearest
    pyproject.toml from ``start`` (default: the working directory) upward
    that has one, passing over every candidate that lies inside one of the
    ``scanned`` paths, unless it sits at the root of the user's own checkout
    (a .git or .hg beside it, not cloned from a model hub): `check .` from
    a project's root applies the project's policy.

    Configuration comes from the user, never from what is vetted: a
    downloaded repository's own pyproject.toml is not read (not even parsed),
    whatever the working directory.  Candidates passed over that mention
    stcheck are listed, so the command can say so.
    """
    here = os.path.abspath(start or os.getcwd())
    passed: list[str] = []
    while True:
        candidate = os.path.join(here, "pyproject.toml")
        if os.path.isfile(candidate):
            if _inside_any(candidate, scanned) and not _users_checkout(here):
                if _names_stcheck(candidate):
                    passed.append(candidate)
            else:
                table = _load_toml(candidate).get("tool", {}).get("stcheck")
                if table is not None:
                    return Discovery(parse_policy(table, f"{candidate} [tool.stcheck]"), tuple(passed))
        parent = os.path.dirname(here)
        if parent == here:
            return Discovery(None, tuple(passed))
        here = parent


def find_pyproject_policy(start: str = ".", *, scanned: Sequence[str] = ()) -> Policy | None:
    """The [tool.stcheck] policy of the nearest pyproject.toml from ``start``
    upward that has one and lies inside none of the ``scanned`` paths
    (see discover_policy)."""
    return discover_policy(scanned, start).policy


def check_policy(report: Report, policy: Policy, out: Checker) -> None:
    """Limits, dtypes and required metadata of one validated file."""
    if policy.max_file_size is not None and report.file_size > policy.max_file_size:
        out.add(
            "policy-file-too-large", f"file is {report.file_size} bytes; the policy allows {policy.max_file_size}", None
        )
    if (
        policy.max_header_size is not None
        and report.header_size is not None
        and report.header_size > policy.max_header_size
    ):
        out.add(
            "policy-header-too-large",
            f"header is {report.header_size} bytes; the policy allows {policy.max_header_size}",
            0,
        )
    if report.tensors is None:
        return
    if policy.max_tensors is not None and len(report.tensors) > policy.max_tensors:
        out.add(
            "policy-too-many-tensors",
            f"file has {plural(len(report.tensors), 'tensor')}; the policy allows {policy.max_tensors}",
            None,
        )
    for name, info in report.tensors.items():
        forbidden = info.dtype in policy.forbidden_dtypes
        if forbidden or (policy.allowed_dtypes is not None and info.dtype not in policy.allowed_dtypes):
            why = "forbids" if forbidden else "does not allow"
            out.add(
                "policy-dtype-forbidden",
                f"tensor {name!r} is {info.dtype}, which the policy {why}",
                None,
                tensor=name,
                json_path="/" + name.replace("~", "~0").replace("/", "~1") + "/dtype",
            )
    metadata = report.metadata or {}
    for key in policy.required_metadata:
        if key not in metadata:
            out.add("policy-metadata-missing", f"metadata key {key!r} is required by the policy but absent", None)


def apply_policy(findings: Iterable[Finding], policy: Policy | None) -> list[ScanItem]:
    """Attach effective severities and suppressions to findings."""
    items = []
    for finding in findings:
        setting = None if policy is None else policy.rules.get(finding.slug)
        if setting is None:
            items.append(ScanItem(finding, finding.severity))
        elif setting.ignore:
            items.append(ScanItem(finding, setting.severity or finding.severity, suppressed=setting.reason))
        else:
            severity = setting.severity or finding.severity
            items.append(ScanItem(finding, severity, reason=setting.reason))
    return items
