# Strategy: what stcheck says of a file (Claims: the folder dispatch's
# codes and the pickle reader's verdict), judged against what the real
# loaders did with it (an Outcome of _oracle_runner).  A disagreement is a
# false clean (stcheck said no code runs, a loader was stopped at a global
# outside the allowlists), a broken promise (torch.load(weights_only=True)
# was promised and refused the file) or a crash of stcheck itself; each is
# saved with its file as a reproducer.
# Paths are str, handled with os.path as in validator.sources.
# ruff: noqa: PTH119
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from validator.formats._oracle_loaders import DETAIL, ERROR, OK, UNAVAILABLE

if TYPE_CHECKING:
    from validator.formats._oracle_runner import LoaderRun, Oracle, Outcome

__all__ = ["Claims", "Disagreement", "check", "claims", "judge", "safe_name", "save_reproducer"]


@dataclass(frozen=True)
class Claims:
    """What stcheck says of one file.

    ``codes`` are the finding codes the folder dispatch
    (``validator.sources.kinds.classify``) gives the file; ``runs_no_code``
    is True when none of them is ST701; ``torch_promise`` when it promises
    that torch.load(weights_only=True) loads the file (ST705 with
    ``torch_weights_only``).  ``reader_*`` are the same for the public
    reader (``read_pickle_bytes``): clean when ``weights_only`` or a
    ``data_only`` tier says no code runs.  ``crash`` names an exception
    stcheck raised, which is a finding of its own.
    """

    kind: str
    codes: tuple[str, ...]
    runs_no_code: bool
    torch_promise: bool
    container: str | None
    reader_clean: bool
    reader_torch_promise: bool
    reader_kind: str
    crash: str | None = None


def claims(path: str | os.PathLike[str]) -> Claims:
    """stcheck's claims about the file at ``path``, as a folder member (alone in its folder) and by the reader."""
    from validator.pickles import read_pickle_bytes  # noqa: PLC0415 - stcheck loads only on the parent side
    from validator.sources.kinds import classify  # noqa: PLC0415

    where = str(path)
    try:
        other = classify(where, [os.path.basename(where)])
        data = Path(where).read_bytes()
        verdict = read_pickle_bytes(data, name=os.path.basename(where))
    except Exception as exc:  # noqa: BLE001 - any exception out of stcheck on bad input is a finding
        return Claims(
            kind="?",
            codes=(),
            runs_no_code=False,
            torch_promise=False,
            container=None,
            reader_clean=False,
            reader_torch_promise=False,
            reader_kind="?",
            crash=f"{type(exc).__name__}: {exc}"[:DETAIL],
        )
    codes = tuple(f.code for f in other.findings)
    promise = any(f.code == "ST705" and _promises_torch(f.message) for f in other.findings)
    pickle = other.pickle or {}
    reader_clean = verdict.weights_only or bool(getattr(verdict, "data_only", False))
    return Claims(
        kind=other.kind,
        codes=codes,
        runs_no_code="ST701" not in codes,
        torch_promise=promise and bool(pickle.get("torch_weights_only")),
        container=pickle.get("container"),
        reader_clean=reader_clean,
        reader_torch_promise=verdict.weights_only and verdict.torch_weights_only and _promises_torch(verdict.message()),
        reader_kind=verdict.kind,
    )


def _promises_torch(message: str) -> bool:
    return "weights_only=True" in message and "not " not in message.split("weights_only=True", maxsplit=1)[0][-40:]


@dataclass(frozen=True)
class Disagreement:
    """stcheck said one thing, a real loader did another.

    ``what`` is "false-clean" (the folder dispatch gave no ST701, a loader
    resolved a global outside the allowlists), "reader-false-clean" (the
    same for ``read_pickle_bytes``), "broken-promise" (torch.load
    (weights_only=True) was promised and refused the file),
    "reader-broken-promise", or "stcheck-crash".  ``reproducer`` is the
    saved copy of the file, when one was saved.
    """

    what: str
    name: str
    loader: str
    detail: str
    reproducer: str | None = None


# Which loader keeps ST705's promise, by the container stcheck read: torch.load
# itself for its own containers; for a bare stream, torch's weights-only
# Unpickler on it (with the storages torch.load would supply).
_PROMISE_LOADER: Final = {
    "torch-zip": "torch-weights-only",
    "torch-legacy": "torch-weights-only",
    "pickle": "torch-weights-only-unpickler",
}


# The loader that reads the same bytes without weights_only's restrictions.
_PROMISE_PEER: Final = {"torch-weights-only": "torch", "torch-weights-only-unpickler": "pickle"}


def _breaks_promise(answer: LoaderRun, peer: LoaderRun | None) -> bool:
    # A promise that weights_only=True loads the file is broken when torch's
    # restricted unpickler refuses it (torch raises UnpicklingError, wrapped
    # in "Weights only load failed" by torch.load), or when the unrestricted
    # loader loads it and the restricted one does not.  A file both fail on
    # alike (a tensor whose sizes do not fit its storage) is malformed data,
    # which no promise about weights_only covers.
    if answer.status in {OK, UNAVAILABLE}:
        return False
    refused = answer.status != ERROR or answer.detail.startswith("UnpicklingError")
    return refused or (peer is not None and peer.status == OK)


def judge(name: str, said: Claims, outcome: Outcome) -> list[Disagreement]:
    """Every disagreement between stcheck's claims about a file and the loaders' runs on it."""
    found: list[Disagreement] = []
    if said.crash is not None:
        found.append(Disagreement("stcheck-crash", name, "stcheck", said.crash))
    for run in outcome.refused:
        detail = f"{run.loader} {run.status}: {run.detail}"
        if said.runs_no_code and said.crash is None:
            found.append(Disagreement("false-clean", name, run.loader, f"{detail} (stcheck: {said.codes or 'none'})"))
        if said.reader_clean:
            found.append(Disagreement("reader-false-clean", name, run.loader, f"{detail} (reader: {said.reader_kind})"))
    for promised, what in (
        (said.torch_promise, "broken-promise"),
        (said.reader_torch_promise, "reader-broken-promise"),
    ):
        if not promised:
            continue
        kind = said.container if what == "broken-promise" else said.reader_kind
        loader = _PROMISE_LOADER.get(kind or "")
        if loader is None:  # a container torch.load does not read (npy, npz, joblib): its message names no torch.load
            continue
        answer = outcome.run(loader)
        if answer is not None and _breaks_promise(answer, outcome.run(_PROMISE_PEER[loader])):
            found.append(Disagreement(what, name, loader, f"{answer.status}: {answer.detail}"))
    return found


def check(
    path: str | os.PathLike[str],
    oracle: Oracle,
    out: str | os.PathLike[str] | None = None,
    *,
    said: Claims | None = None,
) -> list[Disagreement]:
    """stcheck's claims about ``path`` judged by the real loaders; each disagreement's file saved under ``out``.

    ``said`` replaces stcheck's claims (to test the check itself).
    """
    said = claims(path) if said is None else said
    outcome = oracle.run(path)
    name = os.path.basename(str(path))
    found = judge(name, said, outcome)
    if found and out is not None:
        saved = save_reproducer(Path(path).read_bytes(), name, out, said=said, outcome=outcome, found=found)
        found = [dataclasses.replace(d, reproducer=saved) for d in found]
    return found


def save_reproducer(
    data: bytes, name: str, out: str | os.PathLike[str], *, said: Claims, outcome: Outcome, found: list[Disagreement]
) -> str:
    """Write ``data`` as ``<what>-<sha1>-<name>`` under ``out``, with a ``.json`` of the claims and runs beside it."""
    digest = hashlib.sha1(data).hexdigest()[:12]  # noqa: S324 - a name, not a security boundary
    target = Path(out) / f"{found[0].what}-{digest}-{safe_name(name)}"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    record = {
        "name": name,
        "claims": dataclasses.asdict(said),
        "runs": [dataclasses.asdict(r) for r in outcome.runs],
        "disagreements": [dataclasses.asdict(d) for d in found],
    }
    target.with_name(target.name + ".json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return str(target)


def safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in os.path.basename(name))[-60:] or "input"
