# Strategy: integrity of whole files.  An expected digest comes from
# `--sha256 HEX`, from a `sha256sum`-format list (`--checksums FILE`), or, in a
# Hugging Face hub cache, from the blob's own file name: the hub stores an LFS
# file under its sha256 (64 hex digits) and a plain git file under its git
# blob id, the sha1 of `b"blob <size>\0" + content` (40 hex digits).  The
# Digester is fed the file's bytes in order, chunk by chunk, by the same loop
# that runs the deep checks, so a file is read once; hashlib releases the GIL
# on large updates, which lets the caller hash in a worker thread.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH100, PTH117, PTH118, PTH119, PTH120
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from validator._errors import SourceError
from validator._inputs import CHECKSUMS_LIMIT, read_input

if TYPE_CHECKING:
    from validator._check import Checker

__all__ = [
    "Checksums",
    "Digester",
    "Expected",
    "check_digest",
    "checksum_key",
    "from_blob_name",
    "lookup",
    "normalise_sha256",
    "read_checksums",
]

_HEX64: Final = re.compile(r"[0-9a-fA-F]{64}")
_HEX40: Final = re.compile(r"[0-9a-fA-F]{40}")
# sha256sum output: "<hex>  <name>" (text mode) or "<hex> *<name>" (binary
# mode); a line starting with "\" has its name escaped (\\ and \n).
_LINE: Final = re.compile(r"(\\?)([0-9a-fA-F]{64}) [ *](.+)")


@dataclass(frozen=True)
class Expected:
    """The digest a file should have and where that claim came from."""

    algorithm: str  # "sha256" or "git-sha1"
    hexdigest: str
    source: str

    def fields(self) -> tuple[str, str, str]:
        """(algorithm, hexdigest, source): what a cache key and a result record of it."""
        return (self.algorithm, self.hexdigest, self.source)


def normalise_sha256(text: str) -> str:
    """Check and lower-case a 64-digit hex sha256; raise ValueError otherwise."""
    text = text.strip()
    if _HEX64.fullmatch(text) is None:
        msg = f"not a sha256 digest (64 hex digits): {text!r}"
        raise ValueError(msg)
    return text.lower()


def _unescape(name: str) -> str:
    out = []
    i = 0
    while i < len(name):
        c = name[i]
        if c == "\\" and i + 1 < len(name):
            nxt = name[i + 1]
            out.append("\n" if nxt == "n" else "\r" if nxt == "r" else nxt)
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def checksum_key(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


class Checksums(dict[str, Expected]):
    """realpath -> Expected, plus the listed files that are not on disk.

    ``missing`` holds (name, "FILE:LINE") for every line whose file exists
    under none of the names it may have: `sha256sum -c` reports those as
    failures, and so does a scan (checksum-file-missing).  The name is the
    one a reader can find: a relative name joined to the checksum file's
    folder as the user spelt it (relative when they gave a relative path,
    like every other path of the report).
    """

    def __init__(self) -> None:
        super().__init__()
        self.missing: list[tuple[str, str]] = []


def read_checksums(path: str) -> Checksums:
    """Parse a sha256sum-format file into realpath -> Expected.

    Relative names are resolved against the directory of the checksum file,
    where such lists usually sit (``SHA256SUMS`` beside the files), and also
    against the current directory, as ``sha256sum -c`` does.  Raises
    SourceError for an unreadable file, a malformed line, or two lines that
    give one existing file different digests.
    """
    data = read_input(path, "checksum list", CHECKSUMS_LIMIT)  # a regular file, bounded: never /dev/zero or a FIFO
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        msg = f"{path}: cannot read checksums: {exc}"
        raise SourceError(msg) from exc
    base = os.path.dirname(os.path.abspath(path))
    table = Checksums()
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            msg = f"{path}:{number}: not a sha256sum line ('<64 hex digits>  <file name>')"
            raise SourceError(msg)
        escaped, digest, name = match.groups()
        if escaped:
            name = _unescape(name)
        expected = Expected("sha256", digest.lower(), f"{path}:{number}")
        candidates = [name] if os.path.isabs(name) else [os.path.join(base, name), name]
        for candidate in candidates:
            key = checksum_key(candidate)
            known = table.setdefault(key, expected)
            # `sha256sum -c` checks every line: two lines that give one file
            # two digests cannot both hold, so the list itself is wrong.
            # (Identical lines are fine; so are names of missing files.)
            if known.hexdigest != expected.hexdigest and os.path.lexists(candidate):
                same = os.path.normpath(candidate)
                msg = f"{known.source} and {expected.source} give different sha256 digests for the same file {same}"
                raise SourceError(msg)
        if not any(os.path.lexists(candidate) for candidate in candidates):
            shown = name if os.path.isabs(name) else os.path.normpath(os.path.join(os.path.dirname(path), name))
            table.missing.append((shown, expected.source))
    return table


def lookup(table: dict[str, Expected], path: str) -> Expected | None:
    """The expected digest listed for ``path``, or None."""
    return table.get(checksum_key(path))


def from_blob_name(blob: str) -> Expected | None:
    """The digest a hub-cache blob's name promises, or None for other names."""
    name = os.path.basename(blob)
    if _HEX64.fullmatch(name):
        return Expected("sha256", name.lower(), "hub cache blob name")
    if _HEX40.fullmatch(name):
        return Expected("git-sha1", name.lower(), "hub cache blob name (git blob id)")
    return None


class Digester:
    """sha256 of a whole file, plus the git blob id when one is expected."""

    __slots__ = ("_git", "_sha256")

    def __init__(self, size: int, *, git_blob: bool = False) -> None:
        self._sha256 = hashlib.sha256()
        self._git = None
        if git_blob:
            self._git = hashlib.sha1(f"blob {size}\0".encode(), usedforsecurity=False)

    def update(self, data: memoryview) -> None:
        self._sha256.update(data)
        if self._git is not None:
            self._git.update(data)

    def sha256(self) -> str:
        return self._sha256.hexdigest()

    def digest(self, algorithm: str) -> str | None:
        if algorithm == "sha256":
            return self._sha256.hexdigest()
        return None if self._git is None else self._git.hexdigest()


def check_digest(digester: Digester, expected: Expected | None, out: Checker, *, required: bool) -> None:
    """Compare with the expected digest; report a mismatch, or a missing one."""
    if expected is None:
        if required:
            out.add("checksum-missing", "no expected sha256 is listed for this file", None)
        return
    actual = digester.digest(expected.algorithm)
    if actual != expected.hexdigest:
        out.add(
            "checksum-mismatch",
            f"{expected.algorithm} is {actual} but {expected.source} expects {expected.hexdigest}",
            None,
        )
