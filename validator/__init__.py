"""stcheck: a strict validator for safetensors files.

>>> import validator
>>> report = validator.validate(b"\\x02\\x00\\x00\\x00\\x00\\x00\\x00\\x00{}")
>>> report.valid, report.tensors
(True, {})
"""

from __future__ import annotations

from validator._errors import InvalidFileError, SourceError, StcheckError
from validator._findings import Finding, Report, TensorInfo
from validator._rules import REFERENCE_ERRORS, RULES, Profile, Rule, Severity, rule
from validator._dtypes import DTYPES, DTYPE_BITS
from validator._validate import ensure_valid, is_valid, validate

__version__ = "0.1.0"

__all__ = [
    "DTYPES",
    "DTYPE_BITS",
    "REFERENCE_ERRORS",
    "RULES",
    "Finding",
    "InvalidFileError",
    "Profile",
    "Report",
    "Rule",
    "Severity",
    "SourceError",
    "StcheckError",
    "TensorInfo",
    "__version__",
    "ensure_valid",
    "is_valid",
    "rule",
    "validate",
]
