# Strategy: a sharded checkpoint is an index file, `model.safetensors.index.json`
# ({"metadata": {"total_size": N}, "weight_map": {tensor: shard file}}), plus
# the shard files beside it.  The index is read with the C json module (with
# duplicate keys and NaN refused), each shard's header is validated with the
# core, and the two are compared: every listed tensor in exactly its named
# shard, no shard holding a tensor the index does not place there, and
# total_size equal to the sum of the tensors' bytes.  Findings come from the
# rule catalogue's ST5xx rows through the same Checker as the core's.
#
# The index format has no written spec; it is what transformers'
# `save_pretrained` writes and `from_pretrained` reads.  transformers does not
# compare the index with the shards, so a stale index loads silently there.
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any, Final, NoReturn

from validator._check import Checker
from validator._entries import pointer
from validator._errors import InvalidIndexError, SourceError, TensorNotFoundError
from validator._findings import Finding, ReportBase
from validator._source import RegularFile, os_error, read_exact
from validator._validate import _profile, validate

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator, Mapping

    from validator._findings import Report, TensorInfo
    from validator._rules import Profile
    from validator.io.loader import SafetensorsFile, TensorSlice

MAX_INDEX_SIZE: Final = 100_000_000
_INVALID_METADATA: Final[dict[str, Any]] = {}  # identity marks "already reported"


@dataclass(frozen=True)
class IndexReport(ReportBase[Finding]):
    """The result of validating a sharded checkpoint's index and its shards."""

    path: str
    findings: tuple[Finding, ...]
    weight_map: Mapping[str, str] | None = None
    metadata: Mapping[str, Any] | None = None
    shards: Mapping[str, Report] = field(default_factory=dict)
    tensor_bytes: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        return {
            "path": self.path,
            "valid": self.valid,
            "findings": [f.to_json() for f in self.findings],
            "tensor_bytes": self.tensor_bytes,
            "shards": {name: report.to_json() for name, report in self.shards.items()},
        }


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    dupes = []
    for key, value in pairs:
        if key in out:
            dupes.append(key)
        out[key] = value
    if dupes:
        out["\x00duplicates"] = dupes
    return out


def _refuse_constant(token: str) -> NoReturn:
    msg = f"{token} is not a JSON number"
    raise ValueError(msg)


def _read_index(path: str) -> bytes:
    with RegularFile(path) as (fd, st):
        try:
            if st.st_size > MAX_INDEX_SIZE:
                return b"\x00" * (MAX_INDEX_SIZE + 1)
            return read_exact(fd, 0, MAX_INDEX_SIZE + 1)
        except OSError as exc:
            raise os_error(path, exc) from exc


def _unsafe_shard_name(name: str) -> str | None:
    """Why ``name`` may not be joined to the index's directory, or None."""
    if not name:
        return "is empty"
    if "\x00" in name or "\\" in name:
        return "holds a NUL or backslash"
    if PurePosixPath(name).is_absolute() or PureWindowsPath(name).drive:
        return "is an absolute path"
    if ".." in name.split("/"):
        return "climbs out of the index's directory with '..'"
    return None


def _parse(raw: bytes, out: Checker) -> tuple[dict[str, str] | None, dict[str, Any] | None]:
    """The weight map and metadata (_INVALID_METADATA when reported invalid),
    or (None, None) when the index is unusable."""
    if len(raw) > MAX_INDEX_SIZE:
        out.add("index-invalid", f"index is larger than {MAX_INDEX_SIZE} bytes", None)
        return None, None
    try:
        root = json.loads(raw.decode("utf-8"), object_pairs_hook=_pairs, parse_constant=_refuse_constant)
    except UnicodeDecodeError as exc:
        out.add("index-invalid", f"index is not UTF-8 ({exc.reason} at byte {exc.start})", exc.start)
        return None, None
    except RecursionError:
        out.add("index-invalid", "index JSON nests too deeply", None)
        return None, None
    except ValueError as exc:
        out.add("index-invalid", f"index is not valid JSON: {exc}", None)
        return None, None
    if not isinstance(root, dict):
        out.add("index-invalid", f"index is a JSON {type(root).__name__}; it must be an object", None)
        return None, None
    for key in root.pop("\x00duplicates", []):
        out.add("index-invalid", f"top-level key {key!r} appears more than once", None, json_path=pointer(key))
    weight_map = root.get("weight_map")
    if not isinstance(weight_map, dict):
        what = "missing" if weight_map is None else f"a JSON {type(weight_map).__name__}"
        msg = f"weight_map is {what}; it must be an object of tensor names to shard files"
        out.add("index-invalid", msg, None, json_path="/weight_map")
        return None, None
    for name in weight_map.pop("\x00duplicates", []):
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
    if metadata is not None and not isinstance(metadata, dict):
        out.add("index-invalid", "metadata is not an object", None, json_path="/metadata")
        return clean, _INVALID_METADATA
    if isinstance(metadata, dict):
        metadata.pop("\x00duplicates", None)
    return clean, metadata


def _check_total_size(metadata: dict[str, Any] | None, total: int | None, out: Checker) -> None:
    if metadata is _INVALID_METADATA:
        return
    declared = None if metadata is None else metadata.get("total_size")
    if declared is None:
        # transformers' save_pretrained always writes it; without it a
        # truncated download cannot be told from a complete one.
        out.add("index-invalid", "metadata.total_size is missing", None, json_path="/metadata/total_size")
        return
    if type(declared) is not int or declared < 0:
        msg = f"metadata.total_size is {declared!r}; it must be a non-negative integer"
        out.add("index-invalid", msg, None, json_path="/metadata/total_size")
        return
    if total is not None and declared != total:
        out.add(
            "index-total-size-mismatch",
            f"metadata.total_size is {declared} but the listed tensors hold {total} bytes ({declared - total:+d})",
            None,
            json_path="/metadata/total_size",
        )


def validate_index(
    path: str | os.PathLike[str],
    *,
    profile: Profile | str = "strict",
    expected_keys: Collection[str] | None = None,
) -> IndexReport:
    """Validate a ``model.safetensors.index.json`` and the shards it names.

    Every tensor in ``weight_map`` must be in exactly the shard it names, no
    shard may hold a tensor the index does not place there, each shard must
    pass validation under ``profile``, and ``metadata.total_size`` must equal
    the sum of the tensors' bytes.  With ``expected_keys``, names the index
    lacks are ``index-key-missing`` findings and extra names are
    ``index-key-unexpected`` ones.  Only the shards' headers are read.
    Raises SourceError when the index itself cannot be read.
    """
    prof = _profile(profile)
    where = os.fspath(path)
    out = Checker()
    weight_map, metadata = _parse(_read_index(where), out)
    if weight_map is None:
        return IndexReport(where, tuple(out.findings))
    base = os.path.dirname(where)  # noqa: PTH120
    reports: dict[str, Report] = {}
    usable: dict[str, Mapping[str, TensorInfo]] = {}
    for shard in sorted(set(weight_map.values())):
        first = min(n for n, s in weight_map.items() if s == shard)
        at = pointer("weight_map", first)
        problem = _unsafe_shard_name(shard)
        if problem is not None:
            out.add("index-shard-path", f"shard file name {shard!r} {problem}", None, json_path=at)
            continue
        try:
            report = validate(os.path.join(base, shard), profile=prof)  # noqa: PTH118
        except SourceError as exc:
            out.add("index-shard-missing", f"shard {shard!r}: {exc}", None, json_path=at)
            continue
        reports[shard] = report
        if not report.valid:
            first_error = report.first_error
            detail = first_error.format(shard) if first_error is not None else shard
            out.add("index-shard-invalid", f"shard {shard!r} is invalid: {detail}", None, json_path=at)
            continue
        usable[shard] = report.tensors or {}
    holders: dict[str, list[str]] = {}
    for shard, tensors in usable.items():
        for name in tensors:
            holders.setdefault(name, []).append(shard)
    total: int | None = 0
    for name, shard in weight_map.items():
        held = usable.get(shard)
        if held is None:
            total = None  # unknowable: the shard is missing or invalid
            continue
        if name not in held:
            elsewhere = [s for s in holders.get(name, []) if s != shard]
            hint = f"; it is in {', '.join(map(repr, elsewhere))}" if elsewhere else ""
            out.add(
                "index-tensor-missing",
                f"tensor {name!r} is listed in shard {shard!r}, which does not hold it{hint}",
                None,
                tensor=name,
                json_path=pointer("weight_map", name),
            )
            total = None
            continue
        if total is not None:
            total += held[name].nbytes
    for name in sorted(holders):
        shards = holders[name]
        if len(shards) > 1:
            out.add(
                "index-tensor-duplicated",
                f"tensor {name!r} is held by {len(shards)} shards: {', '.join(map(repr, shards))}",
                None,
                tensor=name,
            )
            continue
        listed = weight_map.get(name)
        if listed != shards[0]:
            placed = "does not list it" if listed is None else f"places it in {listed!r}"
            out.add(
                "index-tensor-unlisted",
                f"shard {shards[0]!r} holds tensor {name!r}, but the index {placed}",
                None,
                tensor=name,
            )
    _check_total_size(metadata, total, out)
    if expected_keys is not None:
        expected = set(expected_keys)
        for name in sorted(expected - weight_map.keys()):
            out.add("index-key-missing", f"expected tensor {name!r} is not in the index", None, tensor=name)
        for name in sorted(weight_map.keys() - expected):
            msg = f"the index lists {name!r}, which was not expected"
            out.add("index-key-unexpected", msg, None, tensor=name, json_path=pointer("weight_map", name))
    return IndexReport(where, tuple(out.findings), weight_map, metadata, reports, total)


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
