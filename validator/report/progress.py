# Strategy: the one rich progress bar of a scan (files, bytes and
# throughput in binary units, KiB and MiB/s alike, time left), drawn on
# stderr and gone when it ends; the
# local scan uses it as it is, the Dask client adds a column of workers.
# rich is optional and imported only here, only when a bar is drawn.
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from validator.report.format_common import human

if TYPE_CHECKING:
    from rich.progress import Progress

__all__ = ["rich_progress"]


def rich_progress(label: str, *extra: str) -> Progress:
    """A stopped rich Progress: ``label``, the bar, bytes (KiB/MiB), speed
    (KiB/s, MiB/s: rich's own speed column counts in kB/s), time left, then a
    text column for each of ``extra`` (rich templates)."""
    from rich.console import Console  # noqa: PLC0415 - rich is optional and drawn only on a terminal
    from rich.progress import (  # noqa: PLC0415 - rich is optional and drawn only on a terminal
        BarColumn,
        DownloadColumn,
        Progress,
        ProgressColumn,
        Task,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text  # noqa: PLC0415 - as above

    class BinarySpeedColumn(ProgressColumn):
        """Throughput in the units of the byte column: MiB/s beside MiB."""

        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text("?" if speed is None else f"{human(speed)}/s", style="progress.data.speed")

    return Progress(
        TextColumn(label),
        BarColumn(),
        DownloadColumn(binary_units=True),
        BinarySpeedColumn(),
        TimeRemainingColumn(),
        *(TextColumn(text) for text in extra),
        console=Console(file=sys.stderr),
        transient=True,
    )
