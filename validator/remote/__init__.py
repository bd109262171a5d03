"""Remote checks: validate safetensors files and sharded checkpoints over
HTTP(S) and ``hf://`` from their headers alone, and download them safely.

Needs the ``remote`` extra: urllib3 for HTTP, huggingface_hub for ``hf://``
addresses.  stcheck is not on PyPI: install the extra from a checkout
(``pip install '/path/to/stcheck[remote]'``), or install those packages;
the error for a missing one prints the command that works where it runs
(``validator.config.install.install_hint``).  ``validator.validate`` keeps
its contract that a ``str`` is a local path; remote sources go through these
functions instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from validator._errors import RemoteError
from validator.remote._check import check_source, default_options, validate_remote_index, validate_url
from validator.remote._download import DownloadRefused, FileDone, download
from validator.remote._http import Options

if TYPE_CHECKING:
    from validator._findings import Report
    from validator.config.settings import Network
    from validator.io.index import IndexReport
    from validator.remote._hub import HubRepo
    from validator.sources.kinds import Other

__all__ = [
    "DownloadRefused",
    "FileDone",
    "Options",
    "RemoteError",
    "check_source",
    "default_options",
    "download",
    "read_source",
    "validate_remote_index",
    "validate_url",
]


def read_source(source: str, *, profile: str, network: Network) -> tuple[list[Report | IndexReport], list[Other]]:
    """The pipeline's entry (validator.pipeline.plan.SourceReader): the
    reports of every file and checkpoint ``source`` names, and a verdict by
    name on every other file of a listed hf:// folder."""
    from validator.remote.listing import remote_others  # noqa: PLC0415 - only for a listed folder

    repos: list[HubRepo] = []
    options = default_options(timeout=network.timeout, concurrency=network.concurrency, headers=network.headers)
    reports = check_source(source, profile=profile, options=options, on_repo=repos.append)
    return reports, (remote_others(source, repos[0]) if repos else [])
