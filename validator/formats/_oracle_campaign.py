# Strategy: the differential oracle's campaign.  Every seed is judged
# first (the CI replay stops there); then inputs mutated from the corpus
# (validator.fuzz.pickle_mutator) are judged until time is up.  An input
# joins the corpus when it shows a new combination of what stcheck said and
# what each loader did (a stand-in for coverage where the code under test
# runs in another process); the first few disagreements of each class are
# kept with their reproducers.
# Paths are str, handled with os.path as in validator.sources.
# ruff: noqa: PTH119
from __future__ import annotations

import dataclasses
import hashlib
import os
import random
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from validator.formats._oracle_judge import Claims, Disagreement, claims, judge, safe_name, save_reproducer
from validator.formats._oracle_runner import Oracle, Outcome

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["CampaignStats", "campaign", "read_seeds"]


@dataclass
class CampaignStats:
    """What a campaign did: inputs judged, how fast, and what disagreed.

    ``classes`` counts disagreements by class (what, loader, stcheck's kind,
    container and codes, the file's magic); ``disagreements`` keeps the
    first few of each class, with their reproducers.
    """

    inputs: int = 0
    seconds: float = 0.0
    corpus: int = 0
    refused: int = 0  # inputs on which some loader was stopped at a global
    restarts: int = 0
    mutator_errors: int = 0  # parents on which the mutator raised (saved as findings/mutator-*)
    disagreements: list[Disagreement] = dataclasses.field(default_factory=list)
    classes: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def rate(self) -> float:
        """Inputs judged per second."""
        return self.inputs / self.seconds if self.seconds else 0.0

    @property
    def total(self) -> int:
        """Every disagreement seen, saved or not."""
        return sum(self.classes.values())

    def line(self) -> str:
        """One progress line."""
        return (
            f"[oracle] {self.seconds:7.0f}s  inputs {self.inputs}  ({self.rate:.1f}/s)  corpus {self.corpus}  "
            f"refused {self.refused}  restarts {self.restarts}  disagreements {self.total} "
            f"in {len(self.classes)} classes"
            + (f"  mutator errors {self.mutator_errors}" if self.mutator_errors else "")
        )


# Reproducers kept per class of disagreement in a mutating campaign.
_PER_CLASS: Final = 3


def _signature(said: Claims, outcome: Outcome) -> tuple[object, ...]:
    # An input joins the corpus when it shows a new combination of what
    # stcheck said and what each loader did (a cheap stand-in for coverage
    # where the code under test runs in another process).
    return (
        said.kind,
        said.codes,
        said.container,
        said.reader_kind,
        said.reader_clean,
        tuple((r.loader, r.status, r.globals[:4], r.detail.split(":")[0][:40]) for r in outcome.runs),
    )


def _class(d: Disagreement, said: Claims, data: bytes) -> str:
    from validator.fuzz.pickle_mutator import magic  # noqa: PLC0415

    codes = ",".join(said.codes) or "none"
    container = said.container or said.reader_kind
    return f"{d.what} {d.loader} kind={said.kind} container={container} codes={codes} magic={magic(data)}"


def campaign(
    *,
    seconds: float,
    out: str | os.PathLike[str],
    seeds: Iterable[tuple[str, bytes]],
    rng_seed: int = 0,
    oracle: Oracle | None = None,
    log: Callable[[str], None] | None = None,
    interval: float = 60.0,
    mutate: bool = True,
) -> CampaignStats:
    """Judge every seed, then mutated inputs until ``seconds`` pass; disagreements go under ``out``.

    ``seeds`` are (file name, bytes) pairs; the name's extension is what
    stcheck's dispatch sees.  Every seed is judged first, whatever
    ``seconds`` says.  With ``mutate=False`` only the seeds are judged
    (the replay CI runs) and every disagreement keeps its reproducer; a
    mutating campaign keeps the first few of each class, and writes the
    inputs it adds to its corpus under ``out/corpus`` as it goes.
    """
    rng = random.Random(rng_seed)  # noqa: S311 - fuzzing, not cryptography
    stats = CampaignStats()
    corpus = list(seeds)
    known = {hashlib.sha1(d).digest() for _, d in corpus}  # noqa: S324 - identity, not security
    signatures: set[tuple[object, ...]] = set()
    own = oracle is None
    runner = oracle if oracle is not None else Oracle(timeout=5.0)
    work = Path(tempfile.mkdtemp(prefix="stcheck-oracle-inputs-"))
    corpus_dir = Path(out) / "corpus"
    start = last = time.monotonic()
    try:
        runner._start()  # noqa: SLF001 - start the zygote before the clock matters
        queue = list(corpus)
        while True:
            if queue:  # every seed is judged, however short the campaign
                name, data = queue.pop(0)
            elif mutate and time.monotonic() - start < seconds:
                mutant = _mutant(rng, corpus, stats, out)
                if mutant is None:
                    continue
                name, data = mutant
            else:
                break
            said, outcome = _judge_one(runner, work, name, data)
            stats.inputs += 1
            stats.refused += bool(outcome.refused)
            found = judge(name, said, outcome)
            if found:
                _keep(stats, found, said=said, outcome=outcome, data=data, name=name, out=out, keep_all=not mutate)
            sig = _signature(said, outcome)
            if sig not in signatures:
                signatures.add(sig)
                _grow(corpus, known, corpus_dir, name, data)
            if log is not None and time.monotonic() - last >= interval:
                last = time.monotonic()
                stats.seconds, stats.corpus, stats.restarts = last - start, len(corpus), runner.restarts
                log(stats.line())
    finally:
        stats.seconds = time.monotonic() - start
        stats.corpus = len(corpus)
        stats.restarts = runner.restarts
        if own:
            runner.close()
        shutil.rmtree(work, ignore_errors=True)
    return stats


def _mutant(
    rng: random.Random, corpus: list[tuple[str, bytes]], stats: CampaignStats, out: str | os.PathLike[str]
) -> tuple[str, bytes] | None:
    from validator.fuzz.pickle_mutator import mutate_named  # noqa: PLC0415

    parent_name, parent = rng.choice(corpus)
    try:
        return mutate_named(parent_name, parent, rng, corpus)
    except Exception as exc:  # noqa: BLE001 - a mutator bug is kept as a finding; the campaign goes on
        stats.mutator_errors += 1
        where = Path(out) / "findings" / f"mutator-{type(exc).__name__}-{safe_name(parent_name)}"
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_bytes(parent)
        return None


def _keep(
    stats: CampaignStats,
    found: list[Disagreement],
    *,
    said: Claims,
    outcome: Outcome,
    data: bytes,
    name: str,
    out: str | os.PathLike[str],
    keep_all: bool,
) -> None:
    labels = [_class(d, said, data) for d in found]
    fresh = keep_all or any(stats.classes.get(label, 0) < _PER_CLASS for label in labels)
    for label in labels:
        stats.classes[label] = stats.classes.get(label, 0) + 1
    if fresh:
        where = Path(out) / "findings"
        saved = save_reproducer(data, os.path.basename(name), where, said=said, outcome=outcome, found=found)
        stats.disagreements.extend(dataclasses.replace(d, reproducer=saved) for d in found)


def _grow(corpus: list[tuple[str, bytes]], known: set[bytes], folder: Path, name: str, data: bytes) -> None:
    digest = hashlib.sha1(data).digest()  # noqa: S324 - identity, not security
    if digest not in known:
        known.add(digest)
        corpus.append((name, data))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{digest.hex()[:12]}-{safe_name(name)}").write_bytes(data)


def _judge_one(runner: Oracle, work: Path, name: str, data: bytes) -> tuple[Claims, Outcome]:
    folder = Path(tempfile.mkdtemp(dir=work))
    path = folder / safe_name(name)
    try:
        path.write_bytes(data)
        ticket = runner.submit(path)  # the loaders run while stcheck reads the same file
        said = claims(path)
        return said, runner.collect(ticket)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def read_seeds(folders: Iterable[str | os.PathLike[str]]) -> list[tuple[str, bytes]]:
    """Every regular file under ``folders`` (recursively, manifests and ``findings/`` skipped) as (name, bytes)."""
    skip = {".json", ".md", ".py"}
    return [
        (path.name, path.read_bytes())
        for folder in folders
        for path in sorted(Path(folder).rglob("*"))
        if path.is_file() and "findings" not in path.parts and path.suffix not in skip
    ]
