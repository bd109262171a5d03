# Strategy: the signature options in the command line's own words.  The
# library checks them once and names each by its field (public_key,
# ignore_paths: validator.pipeline.signatures.OptionError); this module
# alone knows the flags those fields are set by, and writes the library's
# message with them (--public-key, --ignore-path).  `scan` and `download`
# both go through it, so a combination is refused in the same words by each.
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import argparse

    from validator.pipeline.signatures import SignatureOptions

__all__ = ["FLAGS", "flag_message", "signature_fields", "signature_options"]

# field of validator.pipeline.signatures.KeyOptions -> the flag that sets it
FLAGS: Final = {
    "public_key": "--public-key",
    "certificate_chain": "--certificate-chain",
    "identity": "--identity",
    "issuer": "--issuer",
    "trust_config": "--trust-config",
    "signature": "--signature",
    "ignore_paths": "--ignore-path",
}


def flag_message(exc: BaseException) -> str:
    """The error's message, with the options it names as flags when the
    library raised it (an OptionError, or a VetError raised from one)."""
    from validator.pipeline.signatures import OptionError  # noqa: PLC0415 - the stage loads only on an error

    for error in (exc, exc.__cause__):
        if isinstance(error, OptionError):
            return error.text(FLAGS)
    return str(exc)


def signature_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The signature flags (validator.cli.options.add_signature_options), by the library's field names."""
    return {
        "public_key": args.public_key,
        "certificate_chain": tuple(args.certificate_chain),
        "identity": args.identity,
        "issuer": args.issuer,
        "trust_config": args.trust_config,
        "signature": args.signature,
        "ignore_paths": tuple(args.ignore_paths),
    }


def signature_options(args: argparse.Namespace) -> SignatureOptions:
    """The signature flags as the library takes them."""
    from validator.pipeline.signatures import SignatureOptions  # noqa: PLC0415 - only with a signature flag

    return SignatureOptions(**signature_fields(args))
