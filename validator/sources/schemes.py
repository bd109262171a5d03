# Strategy: the one registry of remote schemes.  An argument that starts
# with a registered prefix is a remote source, read by the module the
# registry names (imported only when such an argument is given, so a local
# check never loads an HTTP client); anything else is a local path, or `-`
# for standard input.  A row also says what its scheme can do, so that no
# other module tests a prefix to decide it: whether its folders can carry a
# model signature (``signatures`` names the module whose
# ``signed_folder(source, network, listed)`` lists a folder and fetches its
# signature: validator.pipeline.signatures.RemoteFolders), whether
# `stcheck download` takes it, and whether it has a local cache that a scan
# can read instead (the hub cache).  Adding a source (s3://, say) is one
# module that provides `read_source(source, *, profile, network)` as
# validator.remote does (validator.pipeline.plan.SourceReader), plus one row
# here (tests/test_change_traces.py adds a toy one).
from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["SCHEMES", "STDIN", "STDIN_NAME", "Scheme", "is_remote", "remote_prefixes", "scheme_of", "signable"]

STDIN: Final = "-"
STDIN_NAME: Final = "<stdin>"  # how standard input is named in reports


@dataclass(frozen=True)
class Scheme:
    """A remote scheme: its prefix, the module that reads it, the extra that
    installs that module's needs, and what it can do."""

    prefix: str
    module: str
    extra: str
    what: str
    noun: str = ""  # how a message names one of its addresses ("an http(s) URL"; default "a PREFIX address")
    signatures: str | None = None  # the module that lists a signed folder (None: cannot be signed)
    download: bool = False  # `stcheck download` takes it
    local_cache: bool = False  # its files may be in a local cache (`scan --hf-cache`)

    @property
    def called(self) -> str:
        """How a message names one of its addresses."""
        return self.noun or f"a {self.prefix} address"

    @property
    def can_sign(self) -> bool:
        """Whether a folder of this scheme can carry a model signature that stcheck verifies."""
        return self.signatures is not None


_HTTP: Final = "a file or index over HTTP{s} (header only, by range requests)"

SCHEMES: Final[tuple[Scheme, ...]] = (
    Scheme("http://", "validator.remote", "remote", _HTTP.format(s=""), "an http(s) URL", download=True),
    Scheme("https://", "validator.remote", "remote", _HTTP.format(s="S"), "an http(s) URL", download=True),
    Scheme(
        "hf://",
        "validator.remote",
        "remote",
        "a Hugging Face hub repository, folder, file or index",
        "an hf:// address",
        signatures="validator.remote._signed",
        download=True,
        local_cache=True,
    ),
)


def remote_prefixes() -> tuple[str, ...]:
    """Every registered prefix, for ``str.startswith``."""
    return tuple(s.prefix for s in SCHEMES)


def scheme_of(text: str) -> Scheme | None:
    """The scheme ``text`` starts with, or None for a local path or ``-``."""
    for scheme in SCHEMES:
        if text.startswith(scheme.prefix):
            return scheme
    return None


def is_remote(text: str) -> bool:
    """Whether ``text`` names a remote source."""
    return scheme_of(text) is not None


def signable() -> str:
    """Where a model signature can be, as a message names it: ``a local folder or an hf:// folder``."""
    return " or ".join(["a local folder", *(f"a folder of {s.prefix}" for s in SCHEMES if s.can_sign)])
