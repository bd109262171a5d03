# Strategy: what a verified model signature says about a folder, and how the
# files the scan read compare with it.  A method's verifier (validator.signing.
# oms for OMS) has the library verify the signature and hands back its
# content; to_manifest() checks that stcheck can reproduce every digest it
# lists (a serialization "files" or "shards", a hash type of
# validator.signing.signhash, resource names that are plain relative
# paths) and compare() matches the manifest against the files present:
#
#   - a signed file that is not there is signed-file-missing (ST803);
#   - a file whose digest differs is signed-file-changed (ST802), and so
#     is one, signed by shards, whose size or any shard's digest differs;
#   - a file that is there but not signed is unsigned-file (ST804), unless
#     it is ignored exactly as model_signing 1.1.1 ignores it when it
#     verifies: the signature file itself, `.git`, `.gitattributes`,
#     `.github` and `.gitignore` at the top of the folder (the library's
#     `ignore_git_paths`, on by default in its API and its CLI), and the
#     signature's own `ignore_paths` (each a path relative to the folder;
#     a folder covers everything below it), and the user's own ignore paths
#     (`stcheck scan --ignore-path`, the policy's `ignore_paths`), which
#     model_signing's verify takes as `ignore_paths` with the same meaning:
#     the Go client and model_signing before 1.1 left `ignore_paths` out of
#     what they signed, so a file their signer ignored can only be left out
#     by the verifier.  compare() counts what was left out (Outcome.ignored).
#     By shards, an empty file has no shard, so the library signs nothing of
#     it and neither side lists it.
#
# A single-file model (OMS signs a file as well as a folder): model_signing
# names the one resource "." and the model after the file.  fit() turns the
# manifest into the terms of what is verified: "." for a file given alone,
# the file's name (the signature's model name) for a folder that holds it;
# a folder's signature cannot cover a file given alone, nor a file's
# signature a folder of other names.
#
# As `model_signing verify` refuses them, so does compare(): a signed file
# that an ignore path covers (the library leaves it out, then finds it
# missing), a special file anywhere in the folder, and, when the signature
# was made without `allow_symlinks`, every symbolic link anywhere in it
# (``odd``, found by the pipeline's walk of a local folder).
#
# Where stcheck differs from `model_signing verify`, on purpose:
#   - a hub-cache snapshot is all symlinks: compared by what they lead to.
#   - a signed file that the library would ignore (a `.gitattributes` signed
#     with --no-ignore-git-paths) is compared, not reported missing.
#   - a file the walker skips (below `.git`, `.hg` or `.svn`) is read and
#     compared when the signature lists it, and otherwise not reported.

from __future__ import annotations

import importlib.util
import math
import posixpath
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from validator.config.install import install_hint
from validator.signing.signhash import HASH_TYPES, DigestSpec, shard_ranges

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from validator.signing.base import Signed

__all__ = [
    "GIT_PATHS",
    "SIGNATURE_NAME",
    "SINGLE_FILE",
    "Manifest",
    "Outcome",
    "Seen",
    "UnsupportedError",
    "compare",
    "fit",
    "ignored",
    "relative_path",
    "to_manifest",
]

# model_signing.hashing.Config: the paths ignore_git_paths=True adds.
GIT_PATHS: Final = (".git", ".gitattributes", ".github", ".gitignore")
SIGNATURE_NAME: Final = "model.sig"  # the OMS spec's and model_signing CLI's default name


class UnsupportedError(ValueError):
    """The signature lists digests stcheck cannot reproduce."""


@dataclass(frozen=True)
class Manifest:
    """A verified signature's digests, by file, in stcheck's terms."""

    spec: DigestSpec
    digests: dict[str, list[tuple[int, int, str]]]  # relative path -> [(start, end, hex)]; by files: [(0, -1, hex)]
    ignore: tuple[str, ...]  # the signature's own ignore_paths, normalised
    allow_symlinks: bool
    model_name: str

    @property
    def by_shards(self) -> bool:
        return self.spec.shard_size is not None


def _relative(name: str) -> str | None:
    """``name`` when it is a plain relative POSIX path inside the folder, else None."""
    norm = posixpath.normpath(name)
    if not name or name != norm or norm == "." or norm.startswith(("/", "../")) or norm == ".." or "\0" in name:
        return None
    return norm


SINGLE_FILE: Final = "."  # model_signing's name for the one resource of a single-file model


def relative_path(name: str) -> str | None:
    """``name`` (a POSIX path, trailing slash allowed) as a plain relative
    path inside the folder, or None when it is absolute, leads out or names
    the folder itself."""
    return _relative(posixpath.normpath(name.rstrip("/") or "."))


def _shard_size(value: object) -> int:
    # model_signing 1.1.1 writes the shard size through a protobuf Struct,
    # so it reads back as a float (1000000000.0).
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UnsupportedError(f"the shard size {value!r} is not a number")
    if not math.isfinite(value) or value != int(value) or value <= 0:
        raise UnsupportedError(f"the shard size {value!r} is not a positive whole number of bytes")
    return int(value)


def _spec(serialization: Mapping[str, object]) -> DigestSpec:
    method = serialization.get("method")
    hash_type = serialization.get("hash_type")
    if hash_type not in HASH_TYPES:
        raise UnsupportedError(f"hash type {hash_type!r}: stcheck computes {', '.join(HASH_TYPES)}")
    assert isinstance(hash_type, str)
    if hash_type == "blake3" and importlib.util.find_spec("blake3") is None:
        raise UnsupportedError(f"hash type 'blake3' needs the blake3 package: {install_hint('sign')}")
    if method == "files":
        return DigestSpec(hash_type)
    if method == "shards":
        return DigestSpec(hash_type, _shard_size(serialization.get("shard_size")))
    raise UnsupportedError(f"serialization method {method!r}: stcheck reproduces 'files' and 'shards'")


def _ignore(paths: object) -> tuple[str, ...]:
    if paths is None:
        return ()
    if not isinstance(paths, (list, tuple)) or not all(isinstance(p, str) for p in paths):
        raise UnsupportedError(f"ignore_paths {paths!r} is not a list of paths")
    # As model_signing: each is relative to the folder; one that is absolute
    # or leads out of it matches nothing inside.
    return tuple(sorted({r for p in paths if (r := _relative(posixpath.normpath(p.rstrip("/") or "."))) is not None}))


def to_manifest(signed: Signed) -> Manifest:
    """The manifest of a verified signature; raise UnsupportedError when stcheck
    cannot reproduce its digests."""
    spec = _spec(signed.serialization)
    digests: dict[str, list[tuple[int, int, str]]] = {}
    # A single file's one resource is ".", or by shards each of its shards ".:START:END".
    single = bool(signed.resources) and all(
        name.partition(":")[0] == SINGLE_FILE if spec.shard_size is not None else name == SINGLE_FILE
        for name, _, _ in signed.resources
    )
    if single and spec.shard_size is None and len(signed.resources) != 1:
        raise UnsupportedError(f"it lists the single file {SINGLE_FILE!r} {len(signed.resources)} times")
    for name, algorithm, digest in signed.resources:
        if algorithm != spec.label:
            raise UnsupportedError(
                f"{name!r} is hashed with {algorithm!r}, not the {spec.label!r} its serialization names"
            )
        if spec.shard_size is None:
            path, start, end = name, 0, -1
        else:
            path, _, span = name.partition(":")
            begin, sep, stop = span.partition(":")
            if not sep or not begin.isdigit() or not stop.isdigit() or int(begin) >= int(stop):
                raise UnsupportedError(f"{name!r} is not a shard name PATH:START:END")
            start, end = int(begin), int(stop)
        rel = SINGLE_FILE if single else _relative(path)
        if rel is None:
            raise UnsupportedError(f"{name!r} is not a relative path inside the folder")
        digests.setdefault(rel, []).append((start, end, digest.lower()))
    for shards in digests.values():
        shards.sort()
    return Manifest(
        spec,
        digests,
        _ignore(signed.serialization.get("ignore_paths")),
        signed.serialization.get("allow_symlinks") in {True, "true"},
        signed.model_name,
    )


def fit(manifest: Manifest, *, single_file: bool) -> Manifest:
    """The manifest in the terms of what is verified: a single file (its
    resource named ".") or a folder (a single-file signature's resource
    named after the file, the signature's model name); raise
    UnsupportedError when the signature covers the other kind of model."""
    single = set(manifest.digests) == {SINGLE_FILE}
    if single_file:
        if not single:
            n = len(manifest.digests)
            msg = f"it signs a folder ({n} file{'s' if n != 1 else ''}), not a single file: give the folder"
            raise UnsupportedError(msg)
        return manifest
    if not single:
        return manifest
    name = _relative(manifest.model_name)
    if name is None or "/" in name:
        msg = f"it signs a single file, named {manifest.model_name!r}, which is not a file name"
        raise UnsupportedError(msg)
    return Manifest(manifest.spec, {name: manifest.digests[SINGLE_FILE]}, (), manifest.allow_symlinks, name)


def ignored(rel: str, paths: Iterable[str]) -> bool:
    """Whether ``rel`` is one of ``paths`` or lies below one (pathlib's
    is_relative_to, as model_signing tests it)."""
    return any(rel == p or rel.startswith(p + "/") for p in paths)


@dataclass(frozen=True)
class Seen:
    """A file present in the signed folder, as the scan found it."""

    size: int | None
    digests: list[str] | None  # the manifest's digest set from the scan's read; None: not computed
    why_not: str | None = None  # when digests is None: why it could not be compared (None: say nothing)
    source: str | None = None  # where the digests come from when not from the scan's read ("the hub's LFS")


@dataclass
class Outcome:
    """compare()'s findings: (relative path, slug, message)."""

    findings: list[tuple[str, str, str]] = field(default_factory=list)
    checked: int = 0  # signed files whose digests matched
    compared: int = 0  # signed files present and compared (matched or not)
    ignored: list[str] = field(default_factory=list)  # files present and left out: git paths, ignore paths
    why_ignored: dict[str, str] = field(default_factory=dict)  # ...and why each was left out
    matched: list[str] = field(default_factory=list)  # signed files whose digests matched

    @property
    def not_covered(self) -> list[str]:
        """Files present that the signature does not cover (unsigned-file)."""
        return [rel for rel, slug, _ in self.findings if slug == "unsigned-file"]

    def add(self, rel: str, slug: str, message: str) -> None:
        self.findings.append((rel, slug, message))


def _changed(manifest: Manifest, signed: list[tuple[int, int, str]], seen: Seen, where: str) -> str | None:
    """Why a present signed file does not match, or None when it does."""
    assert seen.digests is not None
    label = manifest.spec.label
    if manifest.spec.shard_size is None:
        actual, want = seen.digests[0], signed[0][2]
        said = f"{label} is {actual}" if seen.source is None else f"{seen.source} {label} is {actual}"
        return None if actual == want else f"{said}, but {where} signed {want}"
    ranges = [(start, end) for start, end, _ in signed]
    size = seen.size or 0
    if shard_ranges(size, manifest.spec.shard_size) != ranges or len(seen.digests) != len(ranges):
        covered = ranges[-1][1] if ranges else 0
        return f"the file is {size} bytes, but {where} signed {covered} bytes in {len(ranges)} shards"
    bad = [k for k, (_, _, want) in enumerate(signed) if seen.digests[k] != want]
    if not bad:
        return None
    start, end, want = signed[bad[0]]
    more = f" (and {len(bad) - 1} more of its {len(signed)} shards)" if len(bad) > 1 else ""
    return f"bytes [{start}, {end}) have {label} {seen.digests[bad[0]]}, but {where} signed {want}{more}"


def compare(
    manifest: Manifest,
    present: Mapping[str, Seen],
    *,
    where: str,
    signature_rel: str | None,
    ignore: Iterable[str] = (),
    odd: Mapping[str, str] = MappingProxyType({}),
) -> Outcome:
    """Match the files present (by path relative to the signed folder)
    against the manifest; ``where`` names the signature in messages,
    ``signature_rel`` is its own path in the folder (None when outside),
    ``ignore`` the user's ignore paths (relative to the folder), and ``odd``
    what the folder holds that is not a plain file or folder (path ->
    "link" or "special")."""
    out = Outcome()
    ignore = tuple(ignore)
    for rel, signed in sorted(manifest.digests.items()):
        seen = present.get(rel)
        if seen is None:
            out.add(rel, "signed-file-missing", f"{where} signs this file, but it is not in the folder")
        elif seen.digests is None:
            if seen.why_not is not None:
                out.add(rel, "signature-unsupported", f"not compared with {where}: {seen.why_not}")
        elif (why := _changed(manifest, signed, seen, where)) is not None:
            out.add(rel, "signed-file-changed", f"the file changed since it was signed: {why}")
        elif (left := _left_out(rel, (*manifest.ignore, *ignore))) is not None:
            # model_signing's verify leaves it out of what it hashes, then
            # finds a signed file missing: the folder does not verify.
            out.add(
                rel,
                "signed-file-missing",
                f"{where} signs this file, but the ignore path {left} leaves it out, and a signed file "
                "cannot be left out: drop that ignore path",
            )
        else:
            out.checked += 1
            out.matched.append(rel)
        if seen is not None and seen.digests is not None:
            out.compared += 1
    _odd(manifest, odd, out, where=where)
    skip = {
        **dict.fromkeys(ignore, "an ignore path given (--ignore-path, the policy's ignore_paths)"),
        **dict.fromkeys(manifest.ignore, "the signature's own ignore_paths"),
        **dict.fromkeys(GIT_PATHS, "a git path, which model_signing leaves out"),
    }
    _unsigned(manifest, present, out, where=where, skip=skip, own=signature_rel)
    return out


def _left_out(rel: str, paths: Iterable[str]) -> str | None:
    return next((p for p in paths if rel == p or rel.startswith(p + "/")), None)


def _odd(manifest: Manifest, odd: Mapping[str, str], out: Outcome, *, where: str) -> None:
    """What model_signing's verify refuses a folder for, wherever it lies
    (below .git and the ignore paths too): a special file always, a
    symbolic link unless the signature was made with allow_symlinks."""
    for rel, kind in sorted(odd.items()):
        if kind == "special":
            out.add(rel, "unsigned-file", f"not a regular file or folder: {where} cannot cover it")
        elif not manifest.allow_symlinks:
            why = "a symbolic link, and the signature was made without allow_symlinks"
            out.add(rel, "unsigned-file", f"{why}: {where} covers no link")


def _unsigned(
    manifest: Manifest,
    present: Mapping[str, Seen],
    out: Outcome,
    *,
    where: str,
    skip: Mapping[str, str],
    own: str | None,
) -> None:
    """Each file present that the manifest does not list: left out (``skip``:
    path -> why; counted) or unsigned-file; ``own`` is the signature itself."""
    for rel, seen in sorted(present.items()):
        if rel in manifest.digests or rel == own:
            continue
        left = _left_out(rel, skip)
        if left is not None:
            out.ignored.append(rel)
            out.why_ignored[rel] = skip[left]
            continue
        if manifest.by_shards and seen.size == 0:
            continue  # no shard: the library signs nothing of an empty file
        out.add(rel, "unsigned-file", f"{where} does not cover this file (a file added after signing)")
