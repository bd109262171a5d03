# Strategy: the signature options as the library names them (the fields of
# validator.pipeline.vet.VetOptions), checked once, here.  An OptionError
# names each option by a placeholder ({public_key}), so the library's
# message says `public_key` and the command line, which knows its own flag
# names (validator.cli.keys), says `--public-key`: one check, two
# vocabularies, and neither layer speaks the other's.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH117
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from validator.pipeline.signatures._model import inside
from validator.signing.base import Keys
from validator.signing.signature import relative_path

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "FIELDS",
    "KeyOptions",
    "OptionError",
    "SignatureOptions",
    "ignore_paths",
    "ignores_for",
    "keys_from_options",
]

# The options an OptionError may name, each by its field name.
FIELDS: Final = (
    "public_key",
    "certificate_chain",
    "identity",
    "issuer",
    "trust_config",
    "signature",
    "signature_method",
    "ignore_paths",
)


class OptionError(ValueError):
    """Signature options that cannot work together.  ``str()`` names them
    as the library does (``public_key``); ``text(names)`` as a caller does."""

    def __init__(self, template: str, **values: str) -> None:
        self.template = template
        self.values = values
        super().__init__(self.text({}))

    def text(self, names: Mapping[str, str]) -> str:
        """The message, each option named by ``names`` (field -> name), else by its field."""
        return self.template.format(**{f: names.get(f, f) for f in FIELDS}, **self.values)


class KeyOptions(Protocol):
    """The options that choose how to verify (validator.pipeline.vet.VetOptions)."""

    @property
    def public_key(self) -> str | None: ...
    @property
    def certificate_chain(self) -> Sequence[str]: ...
    @property
    def identity(self) -> str | None: ...
    @property
    def issuer(self) -> str | None: ...
    @property
    def trust_config(self) -> str | None: ...
    @property
    def signature(self) -> str | None: ...
    @property
    def signature_method(self) -> str: ...
    @property
    def ignore_paths(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class SignatureOptions:
    """The signature options alone, for a caller without a VetOptions (`stcheck download`)."""

    public_key: str | None = None
    certificate_chain: Sequence[str] = ()
    identity: str | None = None
    issuer: str | None = None
    trust_config: str | None = None
    signature: str | None = None
    signature_method: str = "oms"
    ignore_paths: Sequence[str] = ()


_ONE_WAY: Final = "{public_key}, {certificate_chain}, or {identity} with {issuer}"


def keys_from_options(args: KeyOptions) -> Keys | None:
    """The one way to verify the options give, or None; OptionError for a
    combination that cannot work."""
    public_key = args.public_key
    chain = tuple(args.certificate_chain or ())
    identity, issuer = args.identity, args.issuer
    if (public_key is not None) + bool(chain) + (identity is not None or issuer is not None) > 1:
        raise OptionError("give one way to verify: " + _ONE_WAY)
    if (identity is None) != (issuer is None):
        raise OptionError("keyless verification needs both {identity} and {issuer}")
    if args.trust_config is not None and identity is None:
        raise OptionError("{trust_config} is for keyless verification: give {identity} and {issuer} too")
    if public_key is None and not chain and identity is None:
        if args.signature is not None:
            raise OptionError("{signature} needs " + _ONE_WAY)
        if args.ignore_paths:
            raise OptionError("{ignore_paths} needs " + _ONE_WAY)
        return None
    return Keys(public_key, chain, identity, issuer, args.trust_config)


def ignore_paths(paths: Sequence[str]) -> tuple[str, ...]:
    """The ignore paths as given, each checked: an absolute path is kept
    (each folder takes those inside it), a relative one normalised; raise
    OptionError for one that names the folder itself or leads out of it."""
    out = []
    for path in paths:
        if os.path.isabs(path):
            out.append(os.path.normpath(path))
            continue
        rel = relative_path(path.replace(os.sep, "/"))
        if rel is None:
            msg = (
                "{ignore_paths} {path}: give a path inside the signed folder, relative to it "
                "(a folder covers what is below it)"
            )
            raise OptionError(msg, path=path)
        out.append(rel)
    return tuple(dict.fromkeys(out))


def ignores_for(paths: Sequence[str], root: str | None) -> tuple[str, ...]:
    """The ignore paths relative to a folder: an absolute one inside the
    local folder ``root`` (None: a remote folder) made relative, as
    model_signing joins each to the model path; one outside it matches nothing."""
    out = []
    for path in paths:
        if not os.path.isabs(path):
            out.append(path)
        elif root is not None and (rel := inside(path, root)) is not None:
            out.append(rel)
    return tuple(out)
