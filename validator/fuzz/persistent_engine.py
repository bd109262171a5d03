# Strategy: the persistent engine (validator/fuzz/engine.py's interface):
# atheris' campaign (validator/fuzz/supervisor.py, through its public
# problem() and run()) over a loader that is a harness serving the
# persistent protocol (validator/fuzz/persistent.py), one harness process
# per --jobs.  What it adds is the check before the campaign: the harness
# must answer a few seeds by the protocol, so that a command that does not
# speak it stops the run with one line instead of filling --out with
# crashes.
from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Final

from validator._display import escape_line
from validator.fuzz import supervisor
from validator.fuzz.persistent import Answer, ProtocolError, Session
from validator.fuzz.seeds import seed_files

if TYPE_CHECKING:
    from collections.abc import Callable

    from validator.fuzz.config import CampaignConfig
    from validator.fuzz.engine import Problem, Summary

__all__ = ["probe", "problem", "run"]

_PROBE_SEEDS: Final = 3  # seeds a harness answers before a campaign starts


def problem(config: CampaignConfig) -> Problem | None:
    """Why a persistent campaign cannot run: atheris' reasons, then the harness's (probe)."""
    found = supervisor.problem(config)
    if found is not None:
        return found
    if config.loader is None or not config.loader.command:
        return "--persistent goes with --loader-cmd 'HARNESS ARGS'"
    return probe(config.loader.command, config.loader.timeout_s)


def run(config: CampaignConfig, out: Callable[[str], None]) -> Summary:
    """The campaign: atheris' mutations, each input answered by the harness."""
    return supervisor.run(config, out)


def probe(command: str, timeout_s: float) -> str | None:
    """Why the harness ``command`` cannot serve a campaign: it must answer a few seeds by the protocol."""
    exits: list[Answer] = []
    with Session(shlex.split(command), timeout_s) as session:
        for name, data in list(seed_files().items())[:_PROBE_SEEDS]:
            try:
                answer = session.ask(data)
            except ProtocolError as exc:
                return f"--persistent: on the seed {name}: {exc}"
            if answer.verdict == "hang":
                return f"--persistent: the harness gave no answer to the seed {name} within --timeout {timeout_s:g}s"
            if answer.verdict == "crash" and answer.kind.startswith("exit-"):
                exits.append(answer)
    if len(exits) == _PROBE_SEEDS:
        # Exiting before any answer on every seed is a command that does not
        # serve the protocol (a FILE-taking binary, a wrong flag), not a finding.
        said = next((line.strip() for line in exits[0].trace.splitlines() if line.strip()), "")
        told = f" (it said: {escape_line(said[:160])})" if said else ""
        return (
            f"--persistent: the harness exited ({exits[0].kind}) on each of the first {_PROBE_SEEDS} seeds without "
            f"an answer{told}; does it serve the frame protocol?"
        )
    return None
