"""The conformance harness: run implementations over the corpus and classify
each result.  The pieces live in their own modules (model: statuses, cases,
implementations and results.jsonl; corpus: finding the corpus and the
implementations; runner: running them; classify: judging one outcome); this
module is the one import point for the command line and the tests."""

from __future__ import annotations

from validator.conformance.classify import Declared, check_data, classify, declared, locate
from validator.conformance.corpus import (
    find_corpus,
    load_cases,
    load_impls,
    materialise_large,
    package_root,
    user_impl,
)
from validator.conformance.model import (
    DEFAULT_MEMORY_MB,
    DEFAULT_TIMEOUT_S,
    FAILING,
    SEVERITY,
    STATUS_TABLE,
    STATUSES,
    Case,
    ConformanceError,
    Impl,
    Raw,
    Result,
    Status,
    impl_json,
    read_jsonl,
    totals,
    worst,
    write_jsonl,
)
from validator.conformance.runner import PROBE_TIMEOUT_S, Server, probe, run_all, run_command, run_impl

__all__ = [
    "DEFAULT_MEMORY_MB",
    "DEFAULT_TIMEOUT_S",
    "FAILING",
    "PROBE_TIMEOUT_S",
    "SEVERITY",
    "STATUSES",
    "STATUS_TABLE",
    "Case",
    "ConformanceError",
    "Declared",
    "Impl",
    "Raw",
    "Result",
    "Server",
    "Status",
    "check_data",
    "classify",
    "declared",
    "find_corpus",
    "impl_json",
    "load_cases",
    "load_impls",
    "locate",
    "materialise_large",
    "package_root",
    "probe",
    "read_jsonl",
    "run_all",
    "run_command",
    "run_impl",
    "totals",
    "user_impl",
    "worst",
    "write_jsonl",
]
