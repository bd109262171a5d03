# Strategy: the file names of a sharded checkpoint, as data and small pure
# functions, in one place for every command (check, scan, inspect, folder
# discovery, download and the remote checks): which names are indexes, what
# a shard of an index is called, and which shard names are safe to join to
# the index's folder and to write there.  Nothing here touches the disk.
#
# Index names.  transformers and diffusers build a variant's name with
# `_add_variant`, which splits the base name at its dots and puts the
# variant before the last part: model.safetensors.index.json with variant
# "ema.fp16" becomes model.safetensors.index.ema.fp16.json (the variant may
# hold dots).  diffusers still reads an older, deprecated form, in which the
# variant comes between `.safetensors` and `.index.json`.  Shards are
# `<stem>[.<variant>]-0000k-of-0000n.safetensors`, and the unsharded file is
# `<stem>[.<variant>].safetensors`.
from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable

__all__ = [
    "HUB_BLOBS",
    "HUB_INCOMPLETE",
    "HUB_KINDS",
    "HUB_SNAPSHOTS",
    "MAX_COMPONENT_BYTES",
    "MAX_NAME_BYTES",
    "SUFFIX",
    "HubSnapshot",
    "IndexName",
    "hub_repo_folder",
    "hub_repo_id",
    "hub_snapshot",
    "is_index_name",
    "orphan_candidates",
    "parse_index_name",
    "shard_family",
    "shard_prefix",
    "unsafe_shard_name",
]

SUFFIX: Final = ".safetensors"

# <stem>.safetensors.index[.<variant>].json, or the legacy
# <stem>.safetensors.<variant>.index.json; a variant is dot-separated
# non-empty parts.  The stem is greedy, so "a.safetensors.b.safetensors.
# index.json" is the index of stem "a.safetensors.b", without a variant.
_PART: Final = r"[^./\\]+"
_INDEX_NAME: Final = re.compile(
    rf"(?P<stem>.+)\.safetensors(?:\.index(?:\.(?P<variant>{_PART}(?:\.{_PART})*))?"
    rf"|\.(?P<legacy>{_PART}(?:\.{_PART})*)\.index)\.json",
    re.DOTALL,
)
# transformers: f"{prefix}-{k:05d}-of-{n:05d}.safetensors" (more digits past 99,999).
_SHARD_NAME: Final = re.compile(r"(?P<prefix>.+)-\d+-of-(?P<count>\d+)\.safetensors", re.DOTALL)


@dataclass(frozen=True)
class IndexName:
    """An index file name, taken apart."""

    stem: str  # "model", "diffusion_pytorch_model"
    variant: str | None  # "ema.fp16", or None

    @property
    def shard_prefix(self) -> str:
        """What its shards are called before ``-0000k-of-0000n.safetensors``."""
        return self.stem if self.variant is None else f"{self.stem}.{self.variant}"

    @property
    def single_file(self) -> str:
        """The unsharded file of the same model and variant: model.fp16.safetensors."""
        return self.shard_prefix + SUFFIX

    @property
    def index_first(self) -> bool:
        """Whether the loader of this name reads the index before the single file.

        transformers' from_pretrained looks for the single file first and
        loads it when present; diffusers' ModelMixin (whose weights are
        diffusion_pytorch_model*) looks for the index first."""
        return self.stem == "diffusion_pytorch_model"


def parse_index_name(name: str) -> IndexName | None:
    """The parts of an index file name (its last path component), or None."""
    m = _INDEX_NAME.fullmatch(os.path.basename(name))  # noqa: PTH119 - names are str throughout
    if m is None:
        return None
    return IndexName(m["stem"], m["variant"] or m["legacy"])


def is_index_name(name: str) -> bool:
    """Whether a file name is a sharded checkpoint's index by its name.

    ``model.safetensors.index.json`` and any variant of it, dots included
    (``model.safetensors.index.ema.fp16.json``), for any stem
    (``diffusion_pytorch_model.safetensors.index.fp16.json``), and diffusers'
    legacy ``<stem>.safetensors.<variant>.index.json``.  Only the last path
    component counts, so URLs and hub paths may be passed whole.
    """
    return parse_index_name(name) is not None


def shard_prefix(name: str) -> str | None:
    """The prefix of a shard-pattern file name (``model`` of
    ``model-00001-of-00002.safetensors``), or None for another name."""
    m = _SHARD_NAME.fullmatch(name)
    return None if m is None else m["prefix"]


def shard_family(name: str) -> tuple[str, str] | None:
    """(prefix, count) of a shard-pattern file name (``("model", "00002")``
    of ``model-00001-of-00002.safetensors``), or None for another name."""
    m = _SHARD_NAME.fullmatch(name)
    return None if m is None else (m["prefix"], m["count"])


# -- shard names that are safe to join and to write ----------------------------

MAX_NAME_BYTES: Final = 1024  # a whole shard name, UTF-8
MAX_COMPONENT_BYTES: Final = 255  # one path component (NAME_MAX on Linux, macOS and NTFS)
# Characters Windows refuses in file names (the backslash is refused earlier).
_WINDOWS_FORBIDDEN: Final = frozenset(':*?"<>|')
# Device names Windows reserves whatever the extension (CON, CON.txt, ...).
_RESERVED: Final = frozenset(
    {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))}
)
# Control characters (Cc), format characters (Cf: bidi overrides, zero-width
# characters, the BOM), surrogates (Cs), line and paragraph separators, and
# every space but U+0020: none may appear in a shard name.
_REFUSED_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp", "Zs"})
_ASCII_REFUSED: Final = re.compile(r'[\x00-\x1f\x7f\\:*?"<>|]')
_DRIVE: Final = re.compile(r"[A-Za-z]:")


def _bad_character(name: str) -> str | None:
    """The first character a shard name may not hold, or None."""
    if name.isascii():
        m = _ASCII_REFUSED.search(name)
        return None if m is None else m.group()
    for ch in name:
        if ch in _WINDOWS_FORBIDDEN or ch == "\\" or (ch != " " and unicodedata.category(ch) in _REFUSED_CATEGORIES):
            return ch
    return None


def unsafe_shard_name(name: str) -> str | None:  # noqa: C901, PLR0912 - one return per refusal, in the order documented in SPEC.md (ST502)
    """Why ``name`` may not be joined to the index's folder and written there, or None.

    A safe name is a relative path of at most 1,024 UTF-8 bytes whose
    components are separated by ``/`` and are each 1 to 255 bytes long,
    do not begin with a dot (no hidden files or folders, no ``.`` or ``..``),
    do not end with a space or a dot, are not Windows device names (``NUL``,
    ``COM1.x``), and hold no control, format (bidi, zero-width), separator or
    non-ASCII space character, no backslash and none of ``: * ? " < > |``.
    The last component ends in ``.safetensors`` (or is an index name).
    """
    if not name:
        return "is empty"
    if name.startswith("/") or _DRIVE.match(name):
        return "is an absolute path"
    parts = name.split("/")
    if ".." in parts:
        return "climbs out of the index's directory with '..'"
    bad = _bad_character(name)
    if bad is not None:
        if bad in "\x00\\":
            return "holds a NUL or backslash"
        if bad in _WINDOWS_FORBIDDEN:
            return f"holds the character {bad!r}, which Windows does not allow in file names"
        return f"holds a control or invisible character (U+{ord(bad):04X})"
    ascii_only = name.isascii()
    if (len(name) if ascii_only else len(name.encode("utf-8"))) > MAX_NAME_BYTES:
        return f"is longer than {MAX_NAME_BYTES} bytes"
    for part in parts:
        if not part:
            return "has an empty path component"
        if part[0] == ".":
            return f"has a hidden path component {part!r}"
        if (len(part) if ascii_only else len(part.encode("utf-8"))) > MAX_COMPONENT_BYTES:
            return f"has a path component longer than {MAX_COMPONENT_BYTES} bytes"
        if part.endswith((" ", ".")):
            return f"has a path component {part!r} that ends in a space or a dot"
        if part.split(".", 1)[0].upper() in _RESERVED:
            return f"has a path component {part!r} that is a reserved Windows device name"
    if not (name.endswith(SUFFIX) or is_index_name(name)):
        return "does not end in .safetensors"
    return None


def orphan_candidates(index_file: str, listed: Collection[str], entries: Iterable[str]) -> list[str]:
    """The names among ``entries`` (the files beside an index) that look like
    shards of this index (the shard pattern, with the prefix of the index's
    own name or of a shard it lists) and that it does not list; sorted."""
    own = parse_index_name(index_file)
    prefixes = {p for p in map(shard_prefix, listed) if p is not None}
    if own is not None:
        prefixes.add(own.shard_prefix)
    named = set(listed)
    return sorted(n for n in entries if n not in named and shard_prefix(n) in prefixes)


# -- the Hugging Face hub cache's layout ---------------------------------------
# huggingface_hub keeps <cache>/<kind>s--<org>--<name>/snapshots/<revision>/
# <path>, each file a link into the repository's own blobs/ folder (named by
# the file's sha256, or its git blob id for a small file).  Every command
# that meets a hub cache (the walk, index confinement, the hub-cache scan,
# revisions in reports, signatures) reads the layout here.

HUB_KINDS: Final = ("models", "datasets", "spaces")
HUB_SNAPSHOTS: Final = "snapshots"
HUB_BLOBS: Final = "blobs"
HUB_INCOMPLETE: Final = ".incomplete"  # huggingface_hub's name for a blob still downloading


def hub_repo_id(dirname: str) -> str | None:
    """``org/name`` for a hub-cache repository folder name (``models--org--name``;
    ``datasets/org/name`` for a data set), or None for any other name."""
    kind, sep, rest = dirname.partition("--")
    if not sep or not rest or f"{kind}" not in HUB_KINDS:
        return None
    repo = rest.replace("--", "/")
    return repo if kind == "models" else f"{kind}/{repo}"


@dataclass(frozen=True)
class HubSnapshot:
    """Where a path lies in a hub cache: its repository folder, id and revision."""

    repo_folder: str  # <cache>/models--org--name
    repo_id: str  # org/name
    revision: str  # the snapshot folder's name
    prefix: str  # <repo_folder>/snapshots/<revision>/, as the path spells it


def hub_snapshot(path: str) -> HubSnapshot | None:
    """The snapshot ``path`` lies in (as spelt, not resolved), or None."""
    parts = path.split("/")  # POSIX paths, and hf:// display names
    for k in range(len(parts) - 2, 0, -1):
        if parts[k] == HUB_SNAPSHOTS and k + 1 < len(parts) and parts[k + 1]:
            repo = hub_repo_id(parts[k - 1])
            if repo is not None:
                folder = "/".join(parts[:k])
                return HubSnapshot(folder, repo, parts[k + 1], "/".join(parts[: k + 2]) + "/")
    return None


def hub_repo_folder(real: str) -> str | None:
    """The repository folder of a resolved path inside a hub snapshot (where
    its links may point: the snapshot's files link into ``blobs/``), or None."""
    found = hub_snapshot(real)
    return None if found is None else found.repo_folder
