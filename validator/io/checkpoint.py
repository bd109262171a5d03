# Strategy: the checks that compare a sharded checkpoint's index with its
# shards, separated from where the bytes come from.  The local reader
# (index.py) and the remote one (validator.remote) both parse the index with
# index.parse_index, obtain one outcome per shard name (a validated header
# Report, or the reason the shard could not be used), and hand both here.
# Nothing in this module does I/O (the model's config.json, which may vouch
# for a tie, comes through a callable, called at most once and only when a
# listed tensor is missing), and every pass is linear in the number of
# weight_map entries plus the tensors the shards hold: shards are keyed by
# name once, never rescanned per shard.
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from validator._entries import pointer
from validator.io.ties import tie_evidence

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping

    from validator._check import Checker
    from validator._findings import Report, TensorInfo

__all__ = ["ParsedIndex", "ShardProblem", "Summary", "cross_check", "shard_names", "summarize"]


@dataclass(frozen=True)
class ParsedIndex:
    """An index's usable content: the weight map and what is known of metadata."""

    weight_map: dict[str, str]
    metadata: dict[str, Any] | None
    metadata_ok: bool  # False: metadata is present but not an object (already reported)
    first_name: dict[str, str]  # shard -> its smallest tensor name (where findings point)


@dataclass(frozen=True)
class ShardProblem:
    """Why a shard named by the index could not be validated."""

    slug: str  # index-shard-path or index-shard-missing
    message: str


def shard_names(weight_map: Mapping[str, str]) -> dict[str, str]:
    """Each distinct shard name -> its smallest tensor name, in one pass."""
    first: dict[str, str] = {}
    for name, shard in weight_map.items():
        seen = first.get(shard)
        if seen is None or name < seen:
            first[shard] = name
    return first


def cross_check(  # noqa: C901, PLR0912 - one branch per index-versus-shard rule
    parsed: ParsedIndex,
    outcomes: Mapping[str, Report | ShardProblem],
    out: Checker,
    *,
    expected_keys: Collection[str] | None = None,
    config: Callable[[], Mapping[str, Any] | None] | None = None,
) -> tuple[dict[str, Report], int | None]:
    """Compare the index with its shards' headers; return (reports, total bytes).

    ``outcomes`` holds one entry per shard name of ``parsed.first_name``.
    Findings are added in a stable order: the shards' own problems by shard
    name, then weight_map entries in index order, then tensors by name.
    ``config`` reads the model's config.json (or gives None); it is asked
    only when a listed tensor is missing, at most once.  A tensor that no
    shard holds and that a tie supplies (ties.tie_evidence) is the
    index-tensor-tied warning and is left out of the total.
    """
    weight_map = parsed.weight_map
    reports: dict[str, Report] = {}
    usable: dict[str, Mapping[str, TensorInfo]] = {}
    for shard in sorted(outcomes):
        outcome = outcomes[shard]
        at = pointer("weight_map", parsed.first_name[shard])
        if isinstance(outcome, ShardProblem):
            out.add(outcome.slug, outcome.message, None, json_path=at)
            continue
        reports[shard] = outcome
        if not outcome.valid:
            first_error = outcome.first_error
            detail = first_error.format(shard) if first_error is not None else shard
            out.add("index-shard-invalid", f"shard {shard!r} is invalid: {detail}", None, json_path=at)
            continue
        usable[shard] = outcome.tensors or {}
    holders: dict[str, list[str]] = {}
    for shard, tensors in usable.items():
        for name in tensors:
            holders.setdefault(name, []).append(shard)
    total: int | None = 0
    missing = _Missing(parsed, holders, reports, config, out)
    for name, shard in weight_map.items():
        held = usable.get(shard)
        if held is None:
            total = None  # unknowable: the shard is missing, unsafe or invalid
            continue
        if name not in held:
            if not missing.tied(name, shard):
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
    _check_total_size(parsed, total, out)
    if expected_keys is not None:
        expected = set(expected_keys)
        for name in sorted(expected - weight_map.keys()):
            out.add("index-key-missing", f"expected tensor {name!r} is not in the index", None, tensor=name)
        for name in sorted(weight_map.keys() - expected):
            msg = f"the index lists {name!r}, which was not expected"
            out.add("index-key-unexpected", msg, None, tensor=name, json_path=pointer("weight_map", name))
    return reports, total


class _Missing:
    """Judges a listed tensor that its shard does not hold: ST505, or the
    ST513 warning when no shard holds it and a tie supplies it."""

    __slots__ = ("_config", "_holders", "_index_notes", "_loaded", "_out", "_reports")

    def __init__(
        self,
        parsed: ParsedIndex,
        holders: Mapping[str, list[str]],
        reports: Mapping[str, Report],
        config: Callable[[], Mapping[str, Any] | None] | None,
        out: Checker,
    ) -> None:
        self._index_notes: Mapping[str, Any] = parsed.metadata or {}
        self._holders, self._reports, self._config, self._out = holders, reports, config, out
        self._loaded: list[Mapping[str, Any] | None] = []

    def _model_config(self) -> Mapping[str, Any] | None:
        if not self._loaded:
            self._loaded.append(None if self._config is None else self._config())
        return self._loaded[0]

    def tied(self, name: str, shard: str) -> bool:
        """Report ``name`` (listed in ``shard``, which lacks it); True when a tie supplies it."""
        elsewhere = [s for s in self._holders.get(name, []) if s != shard]
        hint = f"; it is in {', '.join(map(repr, elsewhere))}" if elsewhere else ""
        at = pointer("weight_map", name)
        if not elsewhere:
            notes = (self._reports[shard].metadata or {}, self._index_notes)
            why, denied = tie_evidence(name, self._holders, config=self._model_config(), notes=notes)
            if why is not None:
                msg = (
                    f"tensor {name!r} is listed in shard {shard!r}, which does not hold it, and no shard does; "
                    f"{why}, so a loader that ties weights supplies it"
                )
                self._out.add("index-tensor-tied", msg, None, tensor=name, json_path=at)
                return True
            hint = f"; no shard holds it ({denied})" if denied is not None else ""
        msg = f"tensor {name!r} is listed in shard {shard!r}, which does not hold it{hint}"
        self._out.add("index-tensor-missing", msg, None, tensor=name, json_path=at)
        return False


def _check_total_size(parsed: ParsedIndex, total: int | None, out: Checker) -> None:
    if not parsed.metadata_ok:
        return
    declared = None if parsed.metadata is None else parsed.metadata.get("total_size")
    if declared is None:
        # transformers reads only weight_map, so the index loads without it;
        # but without it a truncated download cannot be told from a whole one.
        msg = "metadata.total_size is missing; the shards' total size cannot be checked against the index"
        out.add("index-total-size-missing", msg, None, json_path="/metadata/total_size")
        return
    if type(declared) is float and declared.is_integer() and declared >= 0:
        # transformers around 4.30 writes a float (it counts bool tensors at
        # 1/8 byte, so the value can be wrong too); from_pretrained never
        # reads total_size, so the index loads: a portability warning.
        if total is None:
            size = "the listed tensors' size is unknown"
        elif int(declared) == total:
            size = f"it equals the {total} bytes the listed tensors hold"
        else:
            size = f"the listed tensors hold {total} bytes ({int(declared) - total:+d})"
        msg = f"metadata.total_size is {declared!r}, a float where an integer is meant; {size}"
        out.add("index-total-size-float", msg, None, json_path="/metadata/total_size")
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


@dataclass(frozen=True)
class Summary:
    """What a checkpoint holds, from its shards' headers."""

    shards: int
    tensors: int
    parameters: int
    data_bytes: int
    file_bytes: int
    dtypes: dict[str, tuple[int, int]]  # dtype -> (tensors, parameters)

    def to_json(self) -> dict[str, Any]:
        return {
            "shards": self.shards,
            "tensors": self.tensors,
            "parameters": self.parameters,
            "data_bytes": self.data_bytes,
            "file_bytes": self.file_bytes,
            "dtypes": {k: {"tensors": n, "parameters": p} for k, (n, p) in sorted(self.dtypes.items())},
        }


def summarize(weight_map: Mapping[str, str], reports: Mapping[str, Report]) -> Summary:
    """Totals over the tensors the index lists that their shards hold."""
    count: Counter[str] = Counter()
    params: Counter[str] = Counter()
    data = 0
    for name, shard in weight_map.items():
        report = reports.get(shard)
        info = None if report is None or report.tensors is None else report.tensors.get(name)
        if info is None:
            continue
        count[info.dtype] += 1
        params[info.dtype] += info.numel
        data += info.nbytes
    return Summary(
        shards=len(reports),
        tensors=sum(count.values()),
        parameters=sum(params.values()),
        data_bytes=data,
        file_bytes=sum(r.file_size for r in reports.values()),
        dtypes={k: (count[k], params[k]) for k in count},
    )
