"""What every subcommand shares: the exit codes.  Imports nothing, so a
subcommand module never imports `validator.cli.main` (which imports it)."""

from __future__ import annotations

from typing import Final

EXIT_OK: Final = 0
EXIT_INVALID: Final = 1
EXIT_ERROR: Final = 2
