# Strategy: the one rich progress bar of a scan (files, bytes in binary
# units, throughput, time left), drawn on stderr and gone when it ends; the
# local scan uses it as it is, the Dask client adds a column of workers.
# rich is optional and imported only here, only when a bar is drawn.
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress


def rich_progress(label: str, *extra: str) -> Progress:
    """A stopped rich Progress: ``label``, the bar, bytes (KiB/MiB), speed,
    time left, then a text column for each of ``extra`` (rich templates)."""
    from rich.console import Console  # noqa: PLC0415 - rich is optional and drawn only on a terminal
    from rich.progress import (  # noqa: PLC0415 - rich is optional and drawn only on a terminal
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    return Progress(
        TextColumn(label),
        BarColumn(),
        DownloadColumn(binary_units=True),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        *(TextColumn(text) for text in extra),
        console=Console(file=sys.stderr),
        transient=True,
    )
