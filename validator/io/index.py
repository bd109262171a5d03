# Strategy: a sharded checkpoint is an index file, `model.safetensors.index.json`
# ({"metadata": {"total_size": N}, "weight_map": {tensor: shard file}}), plus
# the shard files beside it.  The index is read with the C json module (with
# duplicate keys and NaN refused), each shard's header is validated with the
# core, and the two are compared (checkpoint.py): every listed tensor in
# exactly its named shard, no shard holding a tensor the index does not place
# there, and total_size equal to the sum of the tensors' bytes.  Findings come
# from the rule catalogue's ST5xx rows through the same Checker as the core's.
#
# Duplicate keys are recorded on the parsed objects themselves (a dict
# subclass with a `duplicates` slot), never as an in-band key that a hostile
# index could spell.  An index over the size limit is refused from fstat,
# before a byte of it is read.  Shard names are checked twice: as text
# (names.unsafe_shard_name: a plain relative path, nothing hidden, no
# control characters), then on disk (the resolved file must stay in the
# index's directory, or, in a Hugging Face hub cache, in the same
# repository's cache folder, whose snapshots are symlinks into blobs/).  The
# folder is resolved once per index; each shard costs one lstat per path
# component, and a realpath only when a component is a link.
#
# Beside the index, the folder is looked at for what a loader would do
# differently: a stale shard-pattern file that no index there names, and
# the unsharded file of the same name, which transformers loads instead of
# the index.  The model's config.json beside the index is read (bounded,
# regular files only) only to judge a listed tensor that no shard holds: it
# can make that one finding a warning, never hide a finding.  Findings are
# capped per rule like the core's (MAX_PER_RULE), the rest counted.
#
# The index format has no written spec; it is what transformers'
# `save_pretrained` writes and `from_pretrained` reads.  transformers does not
# compare the index with the shards, so a stale index loads silently there.
from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, NoReturn

from validator._check import MAX_PER_RULE, Checker
from validator._entries import pointer
from validator._errors import InvalidIndexError, SourceError, TensorNotFoundError
from validator._findings import Finding, ReportBase
from validator._source import RegularFile, os_error, read_exact
from validator._validate import as_profile, validate
from validator.io.checkpoint import ParsedIndex, ShardProblem, cross_check, shard_names
from validator.io.names import (
    hub_repo_folder,
    is_index_name,
    orphan_candidates,
    parse_index_name,
    shard_family,
    unsafe_shard_name,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterator, Mapping

    from validator._findings import Report, TensorInfo
    from validator._rules import Profile
    from validator.io.loader import SafetensorsFile, TensorSlice

__all__ = [
    "MAX_INDEX_SIZE",
    "IndexReport",
    "ShardedFile",
    "escaping_link",
    "is_index_name",
    "open_index",
    "parse_index",
    "read_index",
    "unsafe_shard_name",
    "validate_index",
]

MAX_INDEX_SIZE: Final = 100_000_000
MAX_CONFIG_SIZE: Final = 1 << 20  # a config.json larger than this is not read
# A hub cache repository folder: <cache>/models--org--name (or datasets--, spaces--).


@dataclass(frozen=True)
class IndexReport(ReportBase[Finding]):
    """The result of validating a sharded checkpoint's index and its shards."""

    path: str
    findings: tuple[Finding, ...]
    weight_map: Mapping[str, str] | None = None
    metadata: Mapping[str, Any] | None = None
    shards: Mapping[str, Report] = field(default_factory=dict)
    tensor_bytes: int | None = None
    suppressed: int = 0
    """The index's findings not kept because a rule fired more than 1000 times."""

    def __post_init__(self) -> None:
        if any(f.path is None for f in self.findings):
            # As Report: the index names its file, so do its findings, for str(finding).
            named = tuple(
                f if f.path is not None else Finding(f.rule, f.message, f.offset, f.tensor, f.json_path, self.path)
                for f in self.findings
            )
            object.__setattr__(self, "findings", named)

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        return {
            "path": self.path,
            "valid": self.valid,
            "findings": [f.to_json() for f in self.findings],
            "tensor_bytes": self.tensor_bytes,
            "shards": {name: report.to_json() for name, report in self.shards.items()},
            "suppressed": self.suppressed,
        }


def index_checker() -> Checker:
    """The checker an index's findings go to: capped per rule, like the core's."""
    return Checker(limit=MAX_PER_RULE)


def index_report(
    where: str,
    out: Checker,
    parsed: ParsedIndex | None = None,
    reports: Mapping[str, Report] | None = None,
    total: int | None = None,
) -> IndexReport:
    """The IndexReport of what ``out`` collected (with the count of the findings it dropped)."""
    suppressed = sum(out.dropped.values())
    if parsed is None:
        return IndexReport(where, tuple(out.findings), suppressed=suppressed)
    return IndexReport(
        where, tuple(out.findings), parsed.weight_map, parsed.metadata, reports or {}, total, suppressed=suppressed
    )


class _Object(dict[str, Any]):
    """A parsed JSON object that remembers the keys it saw twice."""

    __slots__ = ("duplicates",)

    def __init__(self) -> None:
        super().__init__()
        self.duplicates: list[str] = []


def _pairs(pairs: list[tuple[str, Any]]) -> _Object:
    out = _Object()
    for key, value in pairs:
        if key in out:
            out.duplicates.append(key)
        out[key] = value
    return out


def _duplicates(obj: dict[str, Any]) -> list[str]:
    return obj.duplicates if isinstance(obj, _Object) else []


def _refuse_constant(token: str) -> NoReturn:
    msg = f"{token} is not a JSON number"
    raise ValueError(msg)


def read_index(path: str) -> tuple[bytes | None, int]:
    """(the index's bytes, its size); the bytes are None when it is too large.

    Raises SourceError when the file cannot be opened or is not a regular file.
    """
    with RegularFile(path) as (fd, st):
        if st.st_size > MAX_INDEX_SIZE:
            return None, st.st_size
        try:
            raw = read_exact(fd, 0, MAX_INDEX_SIZE + 1)
        except OSError as exc:
            raise os_error(path, exc) from exc
        return raw, len(raw)


def parse_index(raw: bytes | None, size: int, out: Checker) -> ParsedIndex | None:  # noqa: C901 - one branch per index rule, in file order
    """The usable content of an index, or None when it is unusable (reported)."""
    if raw is None or len(raw) > MAX_INDEX_SIZE:
        out.add("index-invalid", f"index is {size} bytes, larger than the limit of {MAX_INDEX_SIZE} bytes", None)
        return None
    try:
        root = json.loads(raw.decode("utf-8"), object_pairs_hook=_pairs, parse_constant=_refuse_constant)
    except UnicodeDecodeError as exc:
        out.add("index-invalid", f"index is not UTF-8 ({exc.reason} at byte {exc.start})", exc.start)
        return None
    except RecursionError:
        out.add("index-invalid", "index JSON nests too deeply", None)
        return None
    except ValueError as exc:
        out.add("index-invalid", f"index is not valid JSON: {exc}", None)
        return None
    if not isinstance(root, dict):
        out.add("index-invalid", f"index is a JSON {type(root).__name__}; it must be an object", None)
        return None
    for key in _duplicates(root):
        out.add("index-invalid", f"top-level key {key!r} appears more than once", None, json_path=pointer(key))
    weight_map = root.get("weight_map")
    if not isinstance(weight_map, dict):
        what = "missing" if weight_map is None else f"a JSON {type(weight_map).__name__}"
        msg = f"weight_map is {what}; it must be an object of tensor names to shard files"
        out.add("index-invalid", msg, None, json_path="/weight_map")
        return None
    if not weight_map:
        # Every transformers release refuses to load such an index.
        msg = "weight_map is empty: the index names no tensor and no shard, so there is nothing to load"
        out.add("index-invalid", msg, None, json_path="/weight_map")
        return None
    for name in _duplicates(weight_map):
        out.add(
            "index-tensor-duplicated",
            f"tensor {name!r} is listed more than once in weight_map; JSON readers keep the last shard",
            None,
            tensor=name,
            json_path=pointer("weight_map", name),
        )
    clean: dict[str, str] = {}
    for name, shard in weight_map.items():
        if not isinstance(shard, str):
            msg = f"weight_map entry for {name!r} is not a file name"
            out.add("index-invalid", msg, None, tensor=name, json_path=pointer("weight_map", name))
            continue
        clean[name] = shard
    metadata = root.get("metadata")
    metadata_ok = metadata is None or isinstance(metadata, dict)
    if not metadata_ok:
        out.add("index-invalid", "metadata is not an object", None, json_path="/metadata")
    return ParsedIndex(clean, metadata if metadata_ok else None, metadata_ok, shard_names(clean))


def _allowed_root(real_base: str) -> str:
    """The folder a shard may resolve into: the index's own directory, or the
    hub cache repository folder that holds it (snapshots link into blobs/)."""
    return hub_repo_folder(real_base) or real_base


class _Confinement:
    """Where one index's shards may resolve; the folder is resolved once."""

    __slots__ = ("_base_prefix", "_root_prefix", "real_base", "root")

    def __init__(self, base: str) -> None:
        self.real_base = os.path.realpath(base or ".")
        self.root = _allowed_root(self.real_base)
        self._base_prefix = self.real_base.rstrip(os.sep) + os.sep
        self._root_prefix = self.root.rstrip(os.sep) + os.sep

    def _resolve(self, shard: str) -> tuple[str, FileNotFoundError | None]:
        # The name passed unsafe_shard_name: no "", "." or ".." component.
        # Walk it with lstat; only a link needs the full realpath.  A
        # component that does not exist ends the walk: nothing is followed
        # below it, and the shard is missing (returned, so that the caller
        # need not try to open it).
        path = self.real_base.rstrip(os.sep)
        parts = shard.split("/")
        for i, part in enumerate(parts):
            path = path + os.sep + part
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError as exc:
                return os.path.join(path, *parts[i + 1 :]), exc  # noqa: PTH118
            except OSError:
                return os.path.join(path, *parts[i + 1 :]), None  # noqa: PTH118 - the open reports it
            if stat.S_ISLNK(mode):
                return os.path.realpath(os.path.join(path, *parts[i + 1 :])), None  # noqa: PTH118
        return path, None

    def escape(self, shard: str) -> str | None:
        return self.check(shard)[0]

    def check(self, shard: str) -> tuple[str | None, FileNotFoundError | None]:
        """(why the shard resolves outside the checkpoint, or None; the error
        if a component of its path does not exist, or None)."""
        target, missing = self._resolve(shard)
        if target.startswith((self._base_prefix, self._root_prefix)) or target in {self.real_base, self.root}:
            return None, missing
        return f"resolves through a symlink to {target!r}, outside the checkpoint directory", None


def escaping_link(base: str, shard: str) -> str | None:
    """Why the shard file, followed through symlinks, lies outside the
    checkpoint, or None; ``shard`` is a name that passed unsafe_shard_name.
    (A link swapped after this check and before the open is not caught: the
    check and the open are two system calls.)"""
    return _Confinement(base).escape(shard)


def _read_config(base: str) -> dict[str, Any] | None:
    """The config.json beside the index, or None when it is absent, not a
    regular file, larger than MAX_CONFIG_SIZE, or not a JSON object."""
    path = os.path.join(base, "config.json")  # noqa: PTH118
    try:
        with RegularFile(path) as (fd, st):
            if st.st_size > MAX_CONFIG_SIZE:
                return None
            raw = read_exact(fd, 0, MAX_CONFIG_SIZE + 1)
    except (SourceError, OSError):
        return None
    return parse_config(raw)


def parse_config(raw: bytes | None) -> dict[str, Any] | None:
    """A config.json's bytes as a dict, or None when they are missing, larger
    than MAX_CONFIG_SIZE, not JSON or not a JSON object."""
    if raw is None or len(raw) > MAX_CONFIG_SIZE:
        return None
    try:
        config = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return None
    return config if isinstance(config, dict) else None


def _named_by(index: str) -> set[str]:
    """The shard names another index lists (empty when it cannot be read)."""
    try:
        raw, size = read_index(index)
    except SourceError:
        return set()
    parsed = parse_index(raw, size, Checker())
    return set() if parsed is None else set(parsed.first_name)


def _check_neighbours(where: str, base: str, listed: Collection[str], out: Checker) -> None:
    """Warn about files beside the index that change what a loader reads:
    stale shards no index names (index-orphan-shard), and the unsharded file
    of the same name and variant (index-beside-single-file)."""
    try:
        with os.scandir(base or ".") as it:
            entries = [e.name for e in it if not e.is_dir()]
    except OSError:
        return
    name = os.path.basename(where)  # noqa: PTH119
    neighbour_findings(name, entries, listed, lambda sibling: _named_by(os.path.join(base, sibling)), out)  # noqa: PTH118


def neighbour_findings(
    name: str, entries: Collection[str], listed: Collection[str], named_by: Callable[[str], set[str]], out: Checker
) -> None:
    """index-orphan-shard and index-beside-single-file for the index ``name``
    among the file names ``entries`` of its folder (local or a hub listing);
    ``named_by(sibling)`` gives the shards another index of the folder lists
    (asked only when there are orphan candidates)."""
    orphans = orphan_candidates(name, listed, entries)
    if orphans:
        named: set[str] = set()
        for sibling in sorted(e for e in entries if e != name and is_index_name(e)):
            named |= named_by(sibling)
        families = {shard_family(shard) for shard in listed}
        for orphan in orphans:
            if orphan in named:
                continue
            if shard_family(orphan) in families:
                why = "is numbered like one of this index's shards, but the index lists no tensor in it"
            else:
                why = "is named like a shard, but no index in this folder names it (left from an earlier save?)"
            out.add("index-orphan-shard", f"{orphan!r} beside the index {why}; loaders never read it", None)
    own = parse_index_name(name)
    if own is not None and own.single_file in entries and own.single_file not in listed:
        single = own.single_file
        if own.index_first:
            msg = f"{single!r} is beside this sharded index; diffusers loads this index and ignores {single!r}"
        else:
            msg = (
                f"{single!r} is beside this sharded index; transformers' from_pretrained loads {single!r} "
                "and ignores this index"
            )
        out.add("index-beside-single-file", msg, None)


def validate_index(
    path: str | os.PathLike[str],
    *,
    profile: Profile | str = "strict",
    expected_keys: Collection[str] | None = None,
) -> IndexReport:
    """Validate a ``model.safetensors.index.json`` and the shards it names.

    Every tensor in ``weight_map`` must be in exactly the shard it names
    (one that no shard holds and that a tie supplies is a warning), no shard
    may hold a tensor the index does not place there, each shard must pass
    validation under ``profile``, and ``metadata.total_size``, when present,
    must equal the sum of the tensors' bytes (when absent, or a whole-number
    float, it is a warning).  Shard names must be safe relative
    ``*.safetensors`` paths that stay inside the index's directory, also
    through symlinks (a hub cache's links into its blobs/ are allowed).
    Stale shards and the unsharded file beside the index are warnings.
    Findings are capped at 1,000 per rule; ``suppressed`` counts the rest.
    With ``expected_keys``, names the index lacks are ``index-key-missing``
    findings and extra names are ``index-key-unexpected`` ones.  Only the
    shards' headers are read.  Raises SourceError when the index itself
    cannot be read.
    """
    prof = as_profile(profile)
    where = os.fspath(path)
    out = index_checker()
    raw, size = read_index(where)
    parsed = parse_index(raw, size, out)
    if parsed is None:
        return index_report(where, out)
    base = os.path.dirname(where)  # noqa: PTH120
    confinement = _Confinement(base)
    outcomes: dict[str, Report | ShardProblem] = {}
    for shard in parsed.first_name:
        problem = unsafe_shard_name(shard)
        missing = None
        if problem is None:
            problem, missing = confinement.check(shard)
        if problem is not None:
            outcomes[shard] = ShardProblem("index-shard-path", f"shard file name {shard!r} {problem}")
            continue
        full = os.path.join(base, shard)  # noqa: PTH118
        try:
            if missing is not None:
                raise os_error(full, missing)
            outcomes[shard] = validate(full, profile=prof)
        except SourceError as exc:
            outcomes[shard] = ShardProblem("index-shard-missing", f"shard {shard!r}: {exc}")
    reports, total = cross_check(
        parsed, outcomes, out, expected_keys=expected_keys, config=lambda: _read_config(base or ".")
    )
    _check_neighbours(where, base, parsed.first_name, out)
    return index_report(where, out, parsed, reports, total)


class ShardedFile:
    """A validated sharded checkpoint; shards are opened on first use."""

    def __init__(self, report: IndexReport, options: dict[str, Any]) -> None:
        self.report = report
        self._weight_map: Mapping[str, str] = report.weight_map or {}
        self._options = options
        self._base = os.path.dirname(report.path)  # noqa: PTH120
        self._open: dict[str, SafetensorsFile] = {}

    def keys(self) -> list[str]:
        """Tensor names, sorted."""
        return sorted(self._weight_map)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._weight_map)

    def __contains__(self, name: object) -> bool:
        return name in self._weight_map

    def metadata(self) -> dict[str, Any] | None:
        """The index's ``metadata`` object."""
        return None if self.report.metadata is None else dict(self.report.metadata)

    def shard(self, name: str) -> SafetensorsFile:
        """The handle of the shard holding tensor ``name`` (opened on first use)."""
        from validator.io.loader import SafetensorsFile  # noqa: PLC0415 - the loader loads only when a shard is opened

        try:
            shard = self._weight_map[name]
        except KeyError:
            msg = f"{self.report.path}: no tensor named {name!r}"
            raise TensorNotFoundError(msg) from None
        handle = self._open.get(shard)
        if handle is None:
            # Opening validates the shard again, from the bytes it maps.
            handle = SafetensorsFile(os.path.join(self._base, shard), **self._options)  # noqa: PTH118
            self._open[shard] = handle
        if name not in handle:
            tie = next((f for f in self.report.findings if f.slug == "index-tensor-tied" and f.tensor == name), None)
            if tie is not None:
                # Listed, stored by no shard, and supplied by a tie (ST513):
                # loaders that tie weights fill it in; this one reads bytes.
                msg = f"{self.report.path}: {name!r} is stored in no shard: {tie.message}"
                raise TensorNotFoundError(msg)
        return handle

    def info(self, name: str) -> TensorInfo:
        """The header entry of tensor ``name``."""
        return self.shard(name).info(name)

    def get(self, name: str) -> Any:  # noqa: ANN401 - numpy array or torch tensor
        """Tensor ``name`` from its shard."""
        return self.shard(name).get(name)

    def __getitem__(self, name: str) -> Any:  # noqa: ANN401
        return self.get(name)

    def get_slice(self, name: str) -> TensorSlice:
        """A lazy slice proxy of tensor ``name``."""
        return self.shard(name).get_slice(name)

    def close(self) -> None:
        """Close every opened shard."""
        for handle in self._open.values():
            handle.close()
        self._open.clear()

    def __enter__(self) -> ShardedFile:  # noqa: PYI034 - not meant to be subclassed
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_index(
    path: str | os.PathLike[str],
    *,
    expected_keys: Collection[str] | None = None,
    framework: str = "numpy",
    device: str = "cpu",
    profile: Profile | str = "strict",
    cast: Mapping[str, str] | None = None,
    subbyte: str = "packed",
) -> ShardedFile:
    """Validate a sharded checkpoint (see ``validate_index``) and open it.

    Raises ``InvalidIndexError`` (``.report`` holds the findings) when the
    index or any shard is invalid.  The other options are those of
    ``validator.open`` and apply to every shard.
    """
    report = validate_index(path, profile=profile, expected_keys=expected_keys)
    if not report.valid:
        raise InvalidIndexError(report)
    options = {"framework": framework, "device": device, "profile": profile, "cast": cast, "subbyte": subbyte}
    return ShardedFile(report, options)
