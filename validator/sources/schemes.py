# Strategy: the one registry of remote schemes.  An argument that starts
# with a registered prefix is a remote source, read by the module the
# registry names (imported only when such an argument is given, so a local
# check never loads an HTTP client); anything else is a local path, or `-`
# for standard input.  Adding a source (s3://, say) is one module that
# provides `read_source(source, *, profile, network)` as validator.remote
# does (validator.pipeline.plan.SourceReader), plus one row here.
from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["SCHEMES", "STDIN", "STDIN_NAME", "Scheme", "is_remote", "remote_prefixes", "scheme_of"]

STDIN: Final = "-"
STDIN_NAME: Final = "<stdin>"  # how standard input is named in reports


@dataclass(frozen=True)
class Scheme:
    """A remote scheme: its prefix, the module that reads it, the extra that installs that module's needs."""

    prefix: str
    module: str
    extra: str
    what: str


SCHEMES: Final[tuple[Scheme, ...]] = (
    Scheme("http://", "validator.remote", "remote", "a file or index over HTTP (header only, by range requests)"),
    Scheme("https://", "validator.remote", "remote", "a file or index over HTTPS (header only, by range requests)"),
    Scheme("hf://", "validator.remote", "remote", "a Hugging Face hub repository, folder, file or index"),
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
