# Strategy: `stcheck download SOURCE -d DIR`, the command form of
# validator.remote.download: every header is vetted before any tensor data is
# fetched, then each file is streamed once (written, hashed, deep-checked)
# and renamed into place only when everything passed.  Progress goes to
# stderr: a redrawn line on a terminal, else one line every few seconds.
# The folder is -d/--dest, as in `pip download` (-o names a report FILE in
# check and scan); -o/--output, its old name, still works with a note.
#
# With --public-key, --certificate-chain or --identity/--issuer, the hf://
# folder's model signature is verified against the staged files (and the
# hub's listing for what is not downloaded) before they are moved into
# place (validator.pipeline.signatures.Signatures.verify_download): a file
# that does not match is never in DIR.  Which sources can be downloaded, and
# which signed, is their scheme's row (validator.sources.schemes).
#
# Exit codes: 0 downloaded, 1 refused (findings printed), 2 usage, network or
# I/O error.  Every line goes through validator._display: shard and file
# names come from the index or the hub listing, so they may hold ESC, CR, LF
# or bidi controls, and are written escaped.
# ruff: noqa: T201
from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from validator._check import make_finding
from validator._display import escape_line, escape_path, plural
from validator._errors import SourceError, StcheckError
from validator._rules import Profile
from validator.cli._common import EXIT_ERROR, EXIT_INVALID, EXIT_OK
from validator.cli.keys import flag_message, signature_options
from validator.cli.options import add_remote_options, add_signature_options, network_of
from validator.config.install import install_hint
from validator.report.group import group_per_tensor
from validator.sources.schemes import SCHEMES, scheme_of

if TYPE_CHECKING:
    from validator._findings import Finding
    from validator.config.settings import Network
    from validator.pipeline.signatures import Signatures
    from validator.remote._download import Verify
    from validator.remote._hub import HubRepo

__all__ = ["register", "run_download"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "download",
        help="vet a remote file or checkpoint from its headers, then download it with sha256 and deep checks",
        description=(
            "Check every header of SOURCE (an http(s) URL or hf:// address of a file, an index, or a repository) "
            "before any tensor data is fetched; then stream each file once, computing its sha256 and running the "
            "deep checks, and rename it into DIR only when everything passed."
        ),
        epilog="Exit codes: 0 downloaded, 1 refused (findings), 2 usage, network or I/O error.",
    )
    p.add_argument("source", metavar="SOURCE", help="http(s):// URL or hf://NAMESPACE/NAME[@REVISION][/PATH]")
    p.add_argument(
        "-d",
        "--dest",
        metavar="DIR",
        help="directory to download into (pip download's name; -o FILE means a report file in check and scan)",
    )
    p.add_argument("-o", "--output", dest="old_output", metavar="DIR", help=argparse.SUPPRESS)  # the old name
    p.add_argument("--sha256", metavar="HEX", help="expected sha256 of the file (one file only)")
    p.add_argument("--profile", choices=[p.value for p in Profile], default="strict", help="rule set (default strict)")
    p.add_argument("--no-deep", action="store_true", help="skip the deep checks of tensor contents")
    p.add_argument(
        "--progress", choices=["auto", "always", "never"], default="auto", help="progress on stderr (default auto)"
    )
    add_remote_options(p)  # --network-timeout, --concurrency, -H/--header: as check, scan and inspect
    add_signature_options(p)  # verify an hf:// folder's signature before anything is kept: as scan
    p.set_defaults(run=run_download)


class _Progress:
    def __init__(self, mode: str) -> None:
        tty = sys.stderr.isatty()
        self.on = mode == "always" or (mode == "auto" and tty)
        self.tty = tty
        self.last = 0.0

    def __call__(self, name: str, seen: int, size: int) -> None:
        if not self.on:
            return
        now = time.monotonic()
        done = seen >= size
        if not done and now - self.last < (0.2 if self.tty else 5.0):
            return
        self.last = now
        pct = 100.0 if size == 0 else 100.0 * seen / size
        line = f"{escape_path(name)}: {seen / 2**20:,.1f} / {size / 2**20:,.1f} MiB ({pct:.0f}%)"
        sys.stderr.write(("\r" + line + ("\n" if done else "")) if self.tty else line + "\n")
        sys.stderr.flush()


def _destination(args: argparse.Namespace) -> str | None:
    """-d/--dest DIR; -o/--output DIR, its old name, still works with a note."""
    if args.old_output is not None:
        if args.dest is not None and args.dest != args.old_output:
            _error("give the folder once: -d/--dest DIR (-o/--output is its old name)")
            return None
        print("stcheck download: -o/--output DIR is now -d/--dest DIR; the old name still works", file=sys.stderr)
        return str(args.old_output)
    if args.dest is None:
        _error("name the folder to download into: -d/--dest DIR")
    return None if args.dest is None else str(args.dest)


def run_download(args: argparse.Namespace) -> int:  # noqa: C901, PLR0912 - one branch per outcome
    dest = _destination(args)
    if dest is None:
        return EXIT_ERROR
    scheme = scheme_of(args.source)
    if scheme is None or not scheme.download:
        takes = ", ".join(s.prefix for s in SCHEMES if s.download)
        return _error(f"{args.source}: not a source stcheck downloads ({takes})")
    try:
        from validator.remote import DownloadRefused, default_options, download  # noqa: PLC0415 - the remote extra
        from validator.remote.listing import listing_lines  # noqa: PLC0415 - as above
    except ImportError as exc:
        return _error(f"needs {exc.name}, which is not installed: {install_hint('remote')}")
    sha256 = None
    if args.sha256:
        from validator.read.integrity import normalise_sha256  # noqa: PLC0415 - only with --sha256

        try:
            sha256 = normalise_sha256(args.sha256)
        except ValueError as exc:
            return _error(str(exc))
    network = network_of(args)
    options = default_options(timeout=network.timeout, concurrency=network.concurrency, headers=network.headers)
    listed: list[str] = []  # the repository's files (hook: validator.remote.listing.listing_lines)
    try:
        signing = _signing(args)
    except (ValueError, StcheckError) as exc:
        return _error(flag_message(exc))
    verify = None if signing is None else _verifier(signing, args.source, network)
    try:
        done = download(
            args.source,
            dest,
            profile=args.profile,
            sha256=sha256,
            deep=not args.no_deep,
            options=options,
            progress=_Progress(args.progress),
            listing=listed.extend,
            verify=verify,
        )
    except DownloadRefused as exc:
        for where, finding in exc.findings:
            print(finding.format(where))
        _error(str(exc))
        return EXIT_INVALID
    except (SourceError, ValueError) as exc:
        return _error(flag_message(exc))
    for item in done:
        for finding in group_per_tensor(item.findings):  # grouped as check and scan group them
            print(finding.format(item.path))
        checked = f"sha256 checked against {item.expected}" if item.expected else "no expected digest known"
        print(escape_line(f"{escape_path(item.path)}: {item.size:,} bytes, sha256 {item.sha256} ({checked})"))
    print(f"{plural(len(done), 'file')} downloaded into {escape_path(dest)}")
    for line in [] if signing is None else signing.notes():
        print(escape_line(line))
    for line in listing_lines(listed, args.source):
        print(line)
    return EXIT_OK


def _signing(args: argparse.Namespace) -> Signatures | None:
    """The signature check the options ask for, or None; raise OptionError
    or SigningSetupError (a key that cannot be used) before any download."""
    from validator.pipeline.signatures import OptionError, Signatures  # noqa: PLC0415 - only with a key

    signing = Signatures.from_options(signature_options(args))
    if signing.keys is None:
        return None
    scheme = scheme_of(args.source)
    if scheme is not None and not scheme.can_sign:
        raise OptionError("{path}: {noun} carries no model signature", path=args.source, noun=scheme.called)
    return signing


def _verifier(signing: Signatures, source: str, network: Network) -> Verify:
    def verify(staged: dict[str, str], listed: HubRepo | None) -> list[tuple[str, Finding]]:
        found = signing.verify_download(source, network, staged, listed)  # the download's own listing
        return [(f.display, make_finding(f.slug, f.message)) for f in found]

    return verify


def _error(message: str) -> int:
    """One escaped line on stderr; the exit code of an error."""
    print(escape_line(f"stcheck download: {message}"), file=sys.stderr)
    return EXIT_ERROR
