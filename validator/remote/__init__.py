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

from validator._errors import RemoteError
from validator.remote._check import check_source, default_options, validate_remote_index, validate_url
from validator.remote._download import DownloadRefused, FileDone, download
from validator.remote._http import Options

__all__ = [
    "DownloadRefused",
    "FileDone",
    "Options",
    "RemoteError",
    "check_source",
    "default_options",
    "download",
    "validate_remote_index",
    "validate_url",
]
