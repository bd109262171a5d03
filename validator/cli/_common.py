"""What every subcommand shares: the exit codes (validator.report.results
defines them for the library and the commands alike).  A subcommand module
never imports `validator.cli.main` (which imports this)."""

from __future__ import annotations

from validator.report.results import EXIT_ERROR, EXIT_INVALID, EXIT_OK

__all__ = ["EXIT_ERROR", "EXIT_INVALID", "EXIT_OK"]
