# Strategy: the options every command that reads remote sources shares
# (--network-timeout, --concurrency, -H/--header), and the signed-model
# options of scan, defined once; network_of turns them into the settings
# the pipeline takes.  The library names its own fields in its errors
# (`ignore ST10: ...`); rule_flags_problem checks --select/--ignore first, so
# a command-line user reads the flag they typed.
from __future__ import annotations

import argparse
import re
from typing import Final

from validator.config.policy import PolicyError
from validator.config.resolve import FLAG_NAMES, selection
from validator.config.settings import DEFAULT_CONCURRENCY, DEFAULT_NETWORK_TIMEOUT, Network

__all__ = [
    "add_remote_options",
    "add_scale_options",
    "add_signature_options",
    "header_arg",
    "network_of",
    "rule_flags_problem",
]


def add_remote_options(parser: argparse.ArgumentParser) -> None:
    """--network-timeout (also spelt --timeout, its old name) and --concurrency, for remote sources."""
    group = parser.add_argument_group("remote sources (http(s)://, hf://)")
    group.add_argument(
        "--network-timeout",
        dest="timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds per network connect and per read (default 30)",
    )
    group.add_argument("--timeout", dest="timeout", type=float, help=argparse.SUPPRESS)  # the old name
    group.add_argument(
        "--concurrency", type=int, default=16, metavar="N", help="header fetches in flight at once (default 16)"
    )
    group.add_argument(
        "-H",
        "--header",
        dest="headers",
        action="append",
        type=header_arg,
        default=[],
        metavar="'NAME: VALUE'",
        help="an HTTP request header for a private server, as curl -H (repeatable; sent to the URL's origin only)",
    )


# RFC 9110 5.1: a field name is a token; 5.5: a value holds no CR, LF or NUL.
_FIELD_NAME: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_RESERVED: Final = frozenset({"host", "range", "accept-encoding", "content-length", "transfer-encoding", "connection"})


def header_arg(text: str) -> tuple[str, str]:
    """``NAME: VALUE`` (curl -H's form) as a pair; argparse reports the reason."""
    name, colon, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not colon or not _FIELD_NAME.fullmatch(name):
        msg = "expected 'NAME: VALUE' with NAME a header field name, such as 'Authorization: Bearer TOKEN'"
        raise argparse.ArgumentTypeError(msg)
    if name.lower() in _RESERVED:
        msg = f"{name} is set by stcheck itself (it reads files by Range requests)"
        raise argparse.ArgumentTypeError(msg)
    if any(c in value for c in "\r\n\0"):
        msg = f"the value of {name} holds a line break or NUL"
        raise argparse.ArgumentTypeError(msg)
    return name, value


def add_signature_options(parser: argparse.ArgumentParser) -> None:
    """The signed-model options of `stcheck scan`."""
    g = parser.add_argument_group(
        "signed models (OpenSSF Model Signing, a model.sig over the folder or a file; needs the sign extra)"
    )
    g.add_argument("--public-key", metavar="PEM", help="verify DIR/model.sig with this EC public key (offline)")
    g.add_argument(
        "--certificate-chain",
        metavar="PEM",
        action="append",
        default=[],
        help="verify DIR/model.sig signed with a certificate issued by this chain (offline; repeatable)",
    )
    g.add_argument(
        "--signature",
        metavar="PATH",
        help="the signature to verify (default: DIR/model.sig; needed for a single-file model: FILE)",
    )
    g.add_argument(
        "--ignore-path",
        dest="ignore_paths",
        metavar="PATH",
        action="append",
        default=[],
        help="leave PATH out of the verification, as the signer did: relative to the signed folder (or absolute, "
        "inside it); a folder covers everything below it (repeatable; also the policy's ignore_paths)",
    )
    g.add_argument(
        "--identity",
        metavar="ID",
        help="keyless Sigstore: the signer's identity, with --issuer (needs the network, or --trust-config)",
    )
    g.add_argument("--issuer", metavar="URL", help="keyless Sigstore: the OIDC issuer of --identity")
    g.add_argument(
        "--trust-config", metavar="FILE", help="keyless Sigstore: a client trust configuration instead of the network"
    )


def network_of(args: argparse.Namespace) -> Network:
    """The remote settings of ``args`` (a later -H of a name replaces an earlier)."""
    return Network(
        timeout=args.timeout if args.timeout is not None else DEFAULT_NETWORK_TIMEOUT,
        concurrency=args.concurrency or DEFAULT_CONCURRENCY,
        headers=dict(args.headers or []),
    )


def add_scale_options(parser: argparse.ArgumentParser) -> None:
    """The scan command's options for caching, clusters and time limits."""
    parser.add_argument(
        "--cache",
        metavar="FILE|URL",
        help="results cache: a SQLite file (created if missing) or a postgresql:// URL; "
        "unchanged files are not read again",
    )
    parser.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="run on Dask: tcp://HOST:PORT of a running scheduler, or local:N to start N local workers",
    )
    parser.add_argument(
        "--timeout-per-file",
        type=float,
        metavar="SECONDS",
        help="report a file whose scan takes longer as ST620 scan-timeout",
    )


def rule_flags_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with --select and --ignore, named by their flags, else None."""
    try:
        selection(args.select, args.ignore, spelling=FLAG_NAMES)
    except PolicyError as exc:
        return str(exc)
    return None
