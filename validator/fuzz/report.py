# Strategy: the text a campaign shows people, as lines: an engine's summary,
# the problem classes of a fuzzed loader with their causes and the lines
# that replay them, and why a campaign that never ran says nothing.  The
# command line prints them; nothing here prints, runs or writes.  Every
# name and message that comes from a loader or a file is escaped
# (validator._display) before it reaches a terminal.
# ruff: noqa: PTH119
# Paths: os.path, like the rest of the package.
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from validator._display import escape_line, escape_path, plural
from validator.fuzz.config import LOADER_UNDER_TEST, hang_limit, loader_flags

if TYPE_CHECKING:
    from validator.fuzz.config import CampaignConfig
    from validator.fuzz.engine import Summary

__all__ = ["idle_lines", "loader_report", "shown", "summary_lines"]

_MOST_CAUSES = 8


def shown(path: str) -> str:
    """``path`` relative to the working directory when it lies below it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def summary_lines(summary: Summary) -> list[str]:
    """An engine's closing line, then each finding it saved with its reproducer."""
    lines = [
        (
            f"[{summary.target}] done: {summary.execs} execs in {summary.seconds:.0f}s ({summary.execs_per_s:.0f}/s); "
            f"{summary.cpu_seconds:.0f} CPU s ({summary.execs_per_cpu_s:.0f} execs per CPU second); "
            f"{summary.coverage_label} {summary.coverage}, corpus {summary.corpus}, "
            f"findings {max(summary.found, len(summary.findings))}"
        )
    ]
    for finding in summary.findings:
        lines.append(f"  {finding.signature}  {finding.path}  ({finding.size} bytes, seen {finding.repeats}x)")
        lines.append(f"    reproduce: {finding.reproduce}")
    return lines


def idle_lines(summaries: list[Summary]) -> list[str]:
    """Why campaigns that never ran an input prove nothing (what the engine said last); empty when all ran."""
    idle = [s for s in summaries if s.execs == 0 and not s.findings and not s.found]
    if not idle:
        return []
    lines = []
    for summary in idle:
        if summary.engine_said:
            lines.append(f"[{summary.target}] the engine said:")
            lines.extend(f"    {escape_line(line)}" for line in summary.engine_said.splitlines())
    names = ", ".join(s.target for s in idle)
    lines.append(f"stcheck fuzz: {names}: 0 executions; the target never ran (see the output above)")
    return lines


def loader_report(config: CampaignConfig) -> tuple[list[str], int]:
    """The problem classes in ``config``'s --out, as lines, and how many classes there are."""
    from validator.fuzz.loader_under_test import DESCRIPTIONS, read_findings  # noqa: PLC0415 - a report's cost only

    assert config.loader is not None
    out_dir = config.loader.out_dir
    foreign: list[str] = []
    found = read_findings(out_dir, foreign)
    what = escape_line(config.loader.function or config.loader.command or "")
    where = escape_path(shown(out_dir))
    lines = []
    if foreign:
        names = ", ".join(escape_path(os.path.basename(path)) for path in foreign[:5])
        skipped = plural(len(foreign), "file")
        lines.append(f"stcheck fuzz: skipped {skipped} in {where} that stcheck did not write: {names}")
    if not found:
        return [*lines, f"loader {what}: no disagreement with safetensors 0.8.0 found"], 0
    lines.append(f"loader {what}: {len(found)} problem classes (reproducers in {where})")
    for entry in found:
        family = entry["category"].split(":", 1)[0]
        lines.append(f"  {escape_line(entry['category']):48} {DESCRIPTIONS.get(family, '')}")
        detail, path = entry["detail"], entry["path"]
        if detail.startswith(f"{path}:"):  # a finding's line, which names the reproducer
            line = escape_path(shown(path)) + escape_line(detail[len(path) :])
            lines.append(f"      {line[:400]} ({entry['size']} bytes)")
        else:
            lines.append(f"      {escape_line(detail[:400])}")
            lines.append(f"      {escape_path(shown(path))} ({entry['size']} bytes)")
        lines.extend(_cause_lines(entry["causes"]))
    flags = escape_line(loader_flags(config))
    again = f"stcheck fuzz {LOADER_UNDER_TEST} {flags} --replay"
    lines.append(f"replay them, with your loader's traceback: {again} {where}")
    hangs = [entry for entry in found if entry["category"] == "hang"]
    if hangs:
        # A callable is replayed in stcheck's own process, which no --timeout can stop.
        limit = f"timeout {hang_limit(config)} " if config.loader.function else ""
        hang = escape_path(shown(hangs[0]["path"]))
        lines.append(f"replay the hang under a time limit: {limit}{again} {hang}")
    return lines, len(found)


def _cause_lines(causes: list[dict[str, Any]]) -> list[str]:
    """The distinct causes within one class, most seen first, each with its own reproducer.

    One cause is the class itself: only how often it was seen is worth a line.
    """
    if len(causes) == 1:
        return [f"      seen {causes[0]['count']}x, one cause: {escape_line(causes[0]['cause'][:160])}"]
    if not causes:
        return []
    lines = [f"      {len(causes)} causes, most seen first:"]
    for cause in causes[:_MOST_CAUSES]:
        where = escape_path(shown(cause["path"]))
        lines.append(f"        {cause['count']:>6}x  {escape_line(cause['cause'][:160])}  {where}")
    if len(causes) > _MOST_CAUSES:
        lines.append(f"        [... {len(causes) - _MOST_CAUSES} more]")
    return lines
