# Strategy: a differential oracle for stcheck's pickle verdicts.  stcheck
# reads pickles statically; the real loaders (pickle.load, torch.load,
# numpy.load(allow_pickle=True), joblib.load) decide what actually runs.
# This module is the oracle's public face and command line; the work is in
# private modules, by job:
#   _oracle_loaders   the loader process (the zygote and its forks, standard
#                     library only): runs each loader under an audit hook
#                     that stops it at the first global outside stcheck's
#                     allowlists, before that global is imported;
#   _oracle_runner    the parent side: starts the zygote, hands it files,
#                     reads back each loader's run;
#   _oracle_judge     stcheck's claims about a file against those runs;
#   _oracle_campaign  seeds and mutated inputs judged until time is up.
#
#   python -m validator.formats.oracle run FILE...           # what each loader resolves
#   python -m validator.formats.oracle check FILE...         # stcheck's claims against the loaders
#   python -m validator.formats.oracle campaign --seconds N --out DIR [SEED_DIR...]
#
# Paths are str, handled with os.path as in validator.sources.
# ruff: noqa: PTH112
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from validator.formats._oracle_campaign import CampaignStats, campaign, read_seeds
from validator.formats._oracle_judge import Claims, Disagreement, check, claims, judge, save_reproducer
from validator.formats._oracle_loaders import (
    ABORT_EVENT,
    ABORT_GLOBAL,
    CODE_LOADERS,
    LOADERS,
    REFUSED_EVENT,
    REFUSED_GLOBAL,
)
from validator.formats._oracle_runner import LoaderRun, Oracle, Outcome, Ticket, allowed_globals

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

__all__ = [
    "ABORT_EVENT",
    "ABORT_GLOBAL",
    "CODE_LOADERS",
    "LOADERS",
    "REFUSED_EVENT",
    "REFUSED_GLOBAL",
    "CampaignStats",
    "Claims",
    "Disagreement",
    "LoaderRun",
    "Oracle",
    "Outcome",
    "Ticket",
    "allowed_globals",
    "campaign",
    "check",
    "claims",
    "judge",
    "main",
    "read_seeds",
    "save_reproducer",
]


def _walk(paths: Iterable[str]) -> Iterator[str]:
    for p in paths:
        if os.path.isdir(p):
            yield from (str(q) for q in sorted(Path(p).rglob("*")) if q.is_file())
        else:
            yield p


def main(argv: Sequence[str] | None = None) -> int:
    """``run``, ``check`` or ``campaign`` (see the module's comment); exit 1 on a disagreement."""
    parser = argparse.ArgumentParser(prog="python -m validator.formats.oracle", description="pickle loader oracle")
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="what each real loader resolves on each file")
    run_p.add_argument("files", nargs="+")
    check_p = sub.add_parser("check", help="stcheck's claims against the real loaders")
    check_p.add_argument("files", nargs="+")
    check_p.add_argument("--out", default=None, help="save reproducers here")
    camp = sub.add_parser("campaign", help="mutate seeds and check each input")
    camp.add_argument("seeds", nargs="*", default=[str(Path(__file__).resolve().parents[2] / "corpus" / "pickles")])
    camp.add_argument("--seconds", type=float, default=60.0)
    camp.add_argument("--out", required=True)
    camp.add_argument("--seed", type=int, default=0)
    camp.add_argument("--interval", type=float, default=60.0)
    camp.add_argument("--replay", action="store_true", help="judge the seeds only, no mutation")
    args = parser.parse_args(argv)
    if args.command == "run":
        with Oracle() as oracle:
            for path in _walk(args.files):
                for r in oracle.run(path).runs:
                    names = " ".join(f"{m}.{n}" for m, n in r.globals)
                    _say(f"{path}: {r.loader}: {r.status} {r.detail[:120]!r} [{names}]")
        return 0
    if args.command == "check":
        found: list[Disagreement] = []
        with Oracle() as oracle:
            for path in _walk(args.files):
                found.extend(check(path, oracle, args.out))
        for d in found:
            _say(f"{d.name}: {d.what} {d.loader}: {d.detail}" + (f" -> {d.reproducer}" if d.reproducer else ""))
        return 1 if found else 0
    stats = campaign(
        seconds=args.seconds,
        out=args.out,
        seeds=read_seeds(args.seeds),
        rng_seed=args.seed,
        log=_say,
        interval=args.interval,
        mutate=not args.replay,
    )
    _say(stats.line())
    for label, count in sorted(stats.classes.items()):
        _say(f"  {count:6d}  {label}")
    for d in stats.disagreements:
        _say(f"  {d.what} {d.name} {d.loader}: {d.detail[:160]} -> {d.reproducer}")
    summary = {
        "inputs": stats.inputs,
        "seconds": round(stats.seconds, 1),
        "rate": round(stats.rate, 2),
        "corpus": stats.corpus,
        "refused": stats.refused,
        "restarts": stats.restarts,
        "classes": stats.classes,
        "reproducers": sorted({d.reproducer for d in stats.disagreements if d.reproducer}),
    }
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 1 if stats.classes else 0


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
