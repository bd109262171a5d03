# Strategy: turning a raw outcome into a status (model.py lists them).  The
# declared ranges are read the way this validator reads the header, with a
# lenient json fallback for entries the validator refused, so "returned
# bytes outside the declared range" is decided by the harness, not by the
# implementation under test.
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from validator._display import escape_line
from validator.conformance.model import Result
from validator.harness.rejection import REJECT_EXIT, judge_exit

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from validator.conformance.model import Case, Impl, Raw

__all__ = ["Declared", "check_data", "classify", "declared", "locate"]

_LOCATE_LIMIT: Final = 1 << 16


@dataclass(frozen=True)
class Declared:
    """What the file declares, read the way this validator reads it."""

    blob: bytes
    data_start: int | None
    ranges: dict[str, tuple[int, int]]  # name -> data_offsets as declared (relative)


def _loose_offsets(info: object) -> tuple[int, int] | None:
    """The first two data_offsets as integers, however loosely written."""
    offsets = info.get("data_offsets") if isinstance(info, dict) else None
    if not isinstance(offsets, list) or len(offsets) < 2:
        return None
    pair = []
    for item in offsets[:2]:
        if type(item) is int:
            pair.append(item)
        elif type(item) is float and item.is_integer():
            pair.append(int(item))
        else:
            return None
    return pair[0], pair[1]


def declared(path: Path) -> Declared:
    """Read the file and its declared tensor ranges.

    The validator's reading wins; entries it refused are read leniently
    (BOM and padding skipped, floats like 16.0 taken as integers, the first
    two offsets of a longer list), since a lenient implementation reads them
    that way too.
    """
    from validator._validate import validate  # noqa: PLC0415 - keeps the harness import light

    blob = path.read_bytes()
    report = validate(blob, profile="reference")
    start = report.data_start
    ranges: dict[str, tuple[int, int]] = {}
    if start is None and len(blob) >= 8:
        n = int.from_bytes(blob[:8], "little")
        start = 8 + n if 8 + n <= len(blob) else None
    if start is not None:
        text = blob[8:start].decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
        try:
            loose, _ = json.JSONDecoder(strict=False).raw_decode(text)
        except (ValueError, RecursionError):
            loose = None
        if isinstance(loose, dict):
            for name, info in loose.items():
                pair = _loose_offsets(info)
                if pair is not None:
                    ranges[name] = pair
        for name, tensor in (report.tensors or {}).items():
            ranges[name] = tensor.data_offsets
    return Declared(blob, start, ranges)


def _region(data_start: int | None, offset: int) -> str:
    if offset < 8:
        return "the length prefix"
    if data_start is None or offset < data_start:
        return "the header"
    return "the data region"


def locate(blob: bytes, data_start: int | None, nbytes: int, digest: str) -> tuple[str, str | None]:
    """Where in the file a returned byte string comes from: (text, region)."""
    if nbytes <= 0 or nbytes > len(blob) or len(blob) > _LOCATE_LIMIT:
        return "", None
    for i in range(len(blob) - nbytes + 1):
        if hashlib.sha256(blob[i : i + nbytes]).hexdigest() == digest:
            region = _region(data_start, i)
            return f"; they are file bytes [{i}, {i + nbytes}), in {region}", region
    return "; they are not bytes of the file (memory outside it, or zeros)", "outside"


def check_data(path: Path, tensors: Iterable[dict[str, Any]]) -> str:
    """Empty unless a returned tensor holds bytes from outside its declared range.

    The declared range is clipped to the data region that exists, and bytes
    that are a prefix of it pass: a loader that hands back the part of a
    truncated range that is in the file, or fewer bytes than declared, returns
    wrong-sized data but not data from elsewhere (and it has already accepted
    an n_ file).  When the header cannot be read at all, only bytes from the
    length prefix, the header or outside the file count.
    """
    info = declared(path)
    blob, start = info.blob, info.data_start
    problems = []
    for t in tensors:
        digest, nbytes = t.get("sha256"), t.get("nbytes")
        if not isinstance(digest, str) or not isinstance(nbytes, int):
            continue
        name = str(t.get("name"))
        rng = info.ranges.get(name)
        if rng is None or start is None:
            where, region = locate(blob, start, nbytes, digest)
            if nbytes and region in ("the length prefix", "the header", "outside"):
                problems.append(f"tensor {name!r}: no readable data_offsets, yet {nbytes} bytes were returned{where}")
            continue
        begin, end = rng
        lo, hi = max(start, start + begin), min(len(blob), start + end)
        inside = blob[lo:hi] if lo <= hi else b""
        if nbytes == 0 or hashlib.sha256(inside[:nbytes]).hexdigest() == digest:
            continue  # nothing returned, or bytes from inside the declared range
        where, _ = locate(blob, start, nbytes, digest)
        if begin < 0 or end < begin or start + end > len(blob):
            reason = f"data_offsets [{begin}, {end}] reach outside the data region [{start}, {len(blob)}), yet"
        else:
            reason = f"data_offsets [{begin}, {end}] declare file bytes [{start + begin}, {start + end}), but"
        problems.append(f"tensor {name!r}: {reason} the {nbytes} bytes returned are not from that range{where}")
    return "; ".join(problems)


def _tensors(stdout: str) -> list[dict[str, Any]]:
    """The tensors of the accept line (the last line of stdout), or none.

    Whatever else a loader prints is ignored: a line that is not JSON, or
    JSON of another shape, reports no tensors (and so no data to check).
    """
    lines = stdout.strip().splitlines()
    if not lines:
        return []
    try:
        doc = json.loads(lines[-1])
    except (ValueError, RecursionError):
        return []
    tensors = doc.get("tensors") if isinstance(doc, dict) else None
    if not isinstance(tensors, list):
        return []
    return [t for t in tensors if isinstance(t, dict)]


def classify(impl: Impl | str, case: Case, raw: Raw) -> Result:
    """Turn a raw outcome into a status, under the command protocol of validator/harness/rejection.py."""
    name = impl if isinstance(impl, str) else impl.name
    reject_exit = REJECT_EXIT if isinstance(impl, str) else impl.reject_exit
    documented = () if isinstance(impl, str) else impl.reject_names
    result = Result(name, case.file, "crash", raw.rc, raw.signal, raw.seconds)
    if raw.timed_out:
        first = next((escape_line(x.strip()) for x in raw.stderr.splitlines() if x.strip()), "")
        result.status, result.detail = "timeout", f"no answer within the time limit {first[:300]}".strip()
        return result
    verdict = judge_exit(raw.rc, raw.signal, raw.stderr, reject_exit=reject_exit, documented=documented)
    if verdict.outcome == "crash":
        result.detail = verdict.detail
        return result
    if verdict.outcome == "rejected":
        result.status = {"y": "should-have-accepted", "n": "expected", "i": "i-rejected"}[case.kind]
        result.detail = verdict.detail
        return result
    tensors = _tensors(raw.stdout)
    result.tensors = tensors
    problem = check_data(case.path, tensors)
    if problem:
        result.status, result.detail = "wrong-data", problem
        return result
    result.status = {"y": "expected", "n": "should-have-rejected", "i": "i-accepted"}[case.kind]
    result.detail = f"accepted {len(tensors)} tensors" if tensors else "accepted"
    return result
