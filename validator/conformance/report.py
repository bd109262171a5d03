# Strategy: render conformance results for people.  The markdown summary is
# the totals table plus each implementation's most serious finding; the HTML
# page is one self-contained file (inline CSS and JS, no network) with the
# colour matrix, files x implementations, a legend, totals, and each cell's
# detail on hover (title) and on click (a detail panel).  Both are pure
# functions of the results, so tests render them without running anything.
from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Final

from validator.conformance.fuzzing import GROUPS
from validator.conformance.model import SEVERITY, STATUS_TABLE, STATUSES, totals, worst

if TYPE_CHECKING:
    from collections.abc import Sequence

    from validator.conformance.fuzzing import Campaign
    from validator.conformance.model import Case, Impl, Result

__all__ = ["COLOURS", "LABELS", "SHORT", "render_html", "render_markdown"]

# Per status, from the status table: its colour, legend label and cell text.
COLOURS: Final = {s.name: s.colour for s in STATUS_TABLE}
LABELS: Final = {s.name: s.label for s in STATUS_TABLE}
SHORT: Final = {s.name: s.short for s in STATUS_TABLE}
_KIND: Final = {"y": "must accept (y_)", "n": "must reject (n_)", "i": "implementation-defined (i_)"}


def _version(impl: Impl) -> str:
    if impl.skip_reason:
        return "skipped"
    return impl.version or "?"


def _counted(impls: Sequence[Impl], results: Sequence[Result]) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Each implementation's count of each status, and the statuses that occur."""
    count = totals(results)
    return count, [s for s in STATUSES if any(count.get(i.name, {}).get(s) for i in impls)]


def render_markdown(
    impls: Sequence[Impl],
    cases: Sequence[Case],
    results: Sequence[Result],
    command: str,
    campaigns: Sequence[Campaign] = (),
) -> str:
    """The summary: totals per implementation and its most serious finding,
    then each loader's fuzz campaign when there were any."""
    count, shown = _counted(impls, results)
    bad = worst(results)
    lines = [
        "# Conformance results",
        "",
        f"{len(cases)} corpus files x {len(impls)} implementations. Regenerate with:",
        "",
        "```sh",
        command,
        "```",
        "",
        "| implementation | version | " + " | ".join(shown) + " |",
        "| --- | --- | " + " | ".join("---:" for _ in shown) + " |",
    ]
    for impl in impls:
        row = count.get(impl.name, {})
        lines.append(f"| {impl.name} | {_version(impl)} | " + " | ".join(str(row.get(s, 0)) for s in shown) + " |")
    lines += ["", "## Most serious finding per implementation", ""]
    for impl in impls:
        if impl.skip_reason:
            lines.append(f"- **{impl.name}**: skipped ({impl.skip_reason})")
            continue
        r = bad.get(impl.name)
        if r is None or SEVERITY[r.status] == 0:
            lines.append(f"- **{impl.name}**: every file as expected")
            continue
        same = sum(1 for x in results if x.impl == impl.name and x.status == r.status)
        lines.append(f"- **{impl.name}**: {r.status} on `{r.file}` ({same} files with this status): {r.detail[:400]}")
    lines += ["", "## Deviations", ""]
    lines.append(
        "Files on which some implementation did not do what the corpus expects (i_ results are not deviations)."
    )
    lines.append("")
    lines.append("| file | " + " | ".join(i.name for i in impls) + " |")
    lines.append("| --- | " + " | ".join(":---:" for _ in impls) + " |")
    by_key = {(r.impl, r.file): r for r in results}
    abbrev = {
        "expected": "ok",
        "should-have-rejected": "ACCEPT",
        "should-have-accepted": "reject",
        "i-accepted": "i+",
        "i-rejected": "i-",
        "wrong-data": "DATA",
        "crash": "CRASH",
        "timeout": "TIME",
        "skipped": "",
    }
    for case in cases:
        cells = [by_key.get((i.name, case.file)) for i in impls]
        if not any(r is not None and SEVERITY[r.status] >= 2 for r in cells):
            continue
        lines.append(f"| {case.file} | " + " | ".join(abbrev[r.status] if r else "" for r in cells) + " |")
    lines += _fuzz_markdown(campaigns)
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


def _fuzz_markdown(campaigns: Sequence[Campaign]) -> list[str]:
    if not campaigns:
        return []
    lines = [
        "",
        "## Fuzz campaigns",
        "",
        (
            "One campaign of `stcheck fuzz loader-under-test --persistent` per loader, judged against safetensors "
            "0.8.0; classes (causes) per question. Reproducers are under `fuzz/` beside this file."
        ),
        "",
        "| loader | seconds | " + " | ".join(heading for _, heading, _, _ in GROUPS) + " |",
        "| --- | ---: | " + " | ".join("---:" for _ in GROUPS) + " |",
    ]
    for c in campaigns:
        cells = []
        for group, _, _, _ in GROUPS:
            mine = [k for k in c.classes if k.group == group]
            causes = sum(len(k.causes) or 1 for k in mine)
            cells.append(f"{len(mine)} ({causes})" if mine else "")
        status = f" (error: {_md(c.error)})" if c.error else ""
        lines.append(f"| {c.impl}{status} | {c.seconds:.0f} of {c.budget_s:g} | " + " | ".join(cells) + " |")
    for c in campaigns:
        lines += ["", f"### {c.impl}", ""]
        if c.error:
            lines.append(f"- the campaign did not finish: {_md(c.error)}")
        if not c.classes:
            lines.append("- nothing found")
        for k in c.classes:
            lines.append(f"- **{_md(k.category)}** ([{k.size} bytes]({k.file})): {_md(k.detail[:300])}")
            lines.extend(
                f"  - {cause.count}x `{_md(cause.cause[:200])}` ([{cause.size} bytes]({cause.file}))"
                for cause in k.causes
            )
    return lines


_CSS: Final = """
body{font:13px/1.35 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:16px;color:#111;background:#fff}
h1{font-size:20px;margin:0 0 4px}
p.sub{margin:0 0 12px;color:#444}
.legend{display:flex;flex-wrap:wrap;gap:6px 14px;margin:0 0 12px}
.legend span{display:inline-flex;align-items:center;gap:5px}
.sw{display:inline-block;width:14px;height:14px;border:1px solid #888}
table{border-collapse:separate;border-spacing:0}
table.totals{margin:0 0 14px}
table.totals td,table.totals th{padding:2px 5px;font-size:12px;border-bottom:1px solid #ddd;text-align:right;
  white-space:nowrap}
table.totals th:first-child,table.totals td:first-child{text-align:left}
table.m th.impl{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:600;padding:4px 0;height:130px;
  vertical-align:bottom;white-space:nowrap}
table.m td.f{font:11px/16px ui-monospace,Menlo,Consolas,monospace;padding:0 8px 0 0;white-space:nowrap;max-width:360px;
  overflow:hidden;text-overflow:ellipsis}
table.m td.c{width:18px;height:16px;padding:0;border:1px solid #fff;cursor:pointer}
table.m td.c:hover{outline:2px solid #000}
table.m td.n{font:11px/16px ui-monospace,monospace;padding:0 0 0 6px;color:#444;text-align:right}
table.m tr.sec td{font-weight:600;padding:8px 0 2px;background:#fff}
table.m tr.tot td{font:9px/16px ui-monospace,monospace;letter-spacing:-0.5px;text-align:center;color:#333;
  border-top:1px solid #999}
.wrap{display:flex;align-items:flex-start;gap:28px}
.side{position:sticky;top:8px;max-width:760px}
#detail{position:fixed;right:12px;top:12px;width:380px;max-height:80vh;overflow:auto;background:#fafafa;
  border:1px solid #aaa;padding:10px;box-shadow:0 2px 8px rgba(0,0,0,.2);display:none;white-space:pre-wrap;
  font:12px/1.4 ui-monospace,monospace}
#detail b{font-family:system-ui,sans-serif}
table.totals td.fz{text-align:left}
i.fz{display:inline-block;width:22px;height:14px;vertical-align:middle;margin-right:3px}
section.fuzz{margin:18px 0 0;max-width:1100px}
section.fuzz h2{font-size:16px;margin:14px 0 4px}
section.fuzz h3{font-size:14px;margin:10px 0 2px}
section.fuzz ul{margin:2px 0 6px;padding-left:20px}
section.fuzz code{font:11px ui-monospace,monospace}
"""

_JS: Final = """
const D = JSON.parse(document.getElementById('data').textContent);
const box = document.getElementById('detail');
document.querySelectorAll('td.c').forEach(td => td.addEventListener('click', () => {
  const r = D.results[td.dataset.k]; const c = D.cases[r.file];
  box.textContent = '';
  const add = (k, v) => { const b = document.createElement('b'); b.textContent = k + ': ';
    box.appendChild(b); box.appendChild(document.createTextNode(v + '\\n')); };
  add('implementation', r.impl); add('file', r.file); add('status', r.status);
  add('expected', 'strict ' + c.strict + ', reference ' + c.reference); add('rules', c.rules.join(', ') || '-');
  add('description', c.description); add('source', c.source); add('exit', r.exit); add('seconds', r.seconds);
  add('detail', r.detail || '-');
  box.style.display = 'block';
}));
document.addEventListener('keydown', e => { if (e.key === 'Escape') box.style.display = 'none'; });
box.addEventListener('click', () => { box.style.display = 'none'; });
"""


def _anchor(impl: str) -> str:
    return "fuzz-" + "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in impl)


def _fuzz_cells(campaign: Campaign | None) -> list[str]:
    """The row's fuzz columns: per question, a swatch and the classes (causes) found, linked to the details."""
    if campaign is None:
        return ["<td></td>"] * len(GROUPS)
    esc = html.escape
    cells = []
    for group, heading, _, colour in GROUPS:
        mine = [k for k in campaign.classes if k.group == group]
        if not mine:
            cells.append('<td class="fz">0</td>' if not campaign.error else '<td class="fz">?</td>')
            continue
        causes = sum(len(k.causes) or 1 for k in mine)
        tip = f"{campaign.impl} {heading}: " + ", ".join(k.category for k in mine)
        cells.append(
            f'<td class="fz" data-fuzz="{esc(group)}" title="{esc(tip)}"><a href="#{_anchor(campaign.impl)}">'
            f'<i class="fz" style="background:{colour}"></i>{len(mine)} ({causes})</a></td>'
        )
    return cells


def _fuzz_section(campaigns: Sequence[Campaign]) -> list[str]:
    """Each loader's classes, their causes and the reproducers, linked (files beside the page)."""
    if not campaigns:
        return []
    esc = html.escape
    out = [
        '<section class="fuzz"><h2>Fuzz campaigns</h2>',
        (
            "<p>One campaign of <code>stcheck fuzz loader-under-test --persistent</code> per loader, each input "
            "judged against safetensors 0.8.0 and stcheck's reference profile. Per class: its shortest reproducer, "
            "then one per root cause with how often it was seen. Replay one with <code>stcheck fuzz "
            "loader-under-test --persistent --loader-cmd CMD --replay FILE</code>.</p>"
        ),
    ]
    headings = {g: h for g, h, _, _ in GROUPS}
    for c in campaigns:
        out.append(f'<h3 id="{_anchor(c.impl)}">{esc(c.impl)}</h3>')
        out.append(
            f"<p>{c.seconds:.0f} s for a budget of {c.budget_s:g} s on {esc(c.host)}"
            + (f", Dask worker {esc(c.worker)}" if c.worker else "")
            + (f"; <b>the campaign did not finish</b>: {esc(c.error)}" if c.error else "")
            + ("; nothing found" if not c.classes else "")
            + "</p>"
        )
        if not c.classes:
            continue
        out.append("<ul>")
        for k in c.classes:
            link = f'<a href="{esc(k.file)}">{k.size} bytes</a>'
            out.append(
                f"<li><b>{esc(k.category)}</b> ({esc(headings.get(k.group, k.group))}, {link}): "
                f"<code>{esc(k.detail[:300])}</code>"
            )
            if k.causes:
                out.append("<ul>")
                out.extend(
                    f"<li>{cause.count}&times; <code>{esc(cause.cause[:200])}</code> "
                    f'<a href="{esc(cause.file)}">{cause.size} bytes</a></li>'
                    for cause in k.causes
                )
                out.append("</ul>")
            out.append("</li>")
        out.append("</ul>")
    out.append("</section>")
    return out


def render_html(  # noqa: PLR0915 - the page, section by section
    impls: Sequence[Impl],
    cases: Sequence[Case],
    results: Sequence[Result],
    command: str,
    title: str = "stcheck conformance matrix",
    *,
    campaigns: Sequence[Campaign] = (),
) -> str:
    """The self-contained results page (the fuzz columns and section when campaigns ran)."""
    esc = html.escape
    by_key = {(r.impl, r.file): r for r in results}
    count, shown = _counted(impls, results)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(title)}</title>",
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        (
            f'<p class="sub">{len(cases)} files &times; {len(impls)} implementations. '
            "Hover a cell for its result, click for details. "
            f"Regenerate: <code>{esc(command)}</code></p>"
        ),
    ]
    side = ['<div class="side"><div class="legend">']
    side.extend(f'<span><i class="sw" style="background:{COLOURS[s]}"></i>{esc(LABELS[s])}</span>' for s in STATUSES)
    side.append("</div>")
    # Totals table: one row per implementation.
    side.append('<table class="totals"><tr><th>implementation</th><th>version</th>')
    swatch = '<i class="sw" style="background:{}"></i>'
    side.extend(
        f'<th title="{esc(s)}: {esc(LABELS[s])}">{swatch.format(COLOURS[s])} {esc(SHORT[s])}</th>' for s in shown
    )
    by_impl = {c.impl: c for c in campaigns}
    if campaigns:
        side.extend(
            f'<th title="fuzz: {esc(heading)}: classes (causes)">fuzz: {esc(title)}</th>'
            for _, heading, title, _ in GROUPS
        )
    side.append("</tr>")
    for impl in impls:
        row = count.get(impl.name, {})
        note = esc(impl.skip_reason or impl.notes)
        side.append(f'<tr title="{note}"><td>{esc(impl.name)}</td><td>{esc(_version(impl))}</td>')
        side.extend(f"<td>{row.get(s, 0) or ''}</td>" for s in shown)
        if campaigns:
            side.extend(_fuzz_cells(by_impl.get(impl.name)))
        side.append("</tr>")
    side.append("</table></div>")
    # The matrix.
    out.append('<div class="wrap"><div><table class="m"><thead><tr><th></th>')
    out.extend(f'<th class="impl" title="{esc(i.notes or i.name)}">{esc(i.name)}</th>' for i in impls)
    out.append('<th class="n" title="implementations that deviate">dev.</th></tr></thead><tbody>')
    data_results: list[dict[str, object]] = []
    data_cases: dict[str, dict[str, object]] = {}
    for kind in ("y", "n", "i"):
        group = [c for c in cases if c.kind == kind]
        if not group:
            continue
        out.append(f'<tr class="sec"><td colspan="{len(impls) + 2}">{esc(_KIND[kind])}: {len(group)} files</td></tr>')
        for case in group:
            data_cases[case.file] = {
                "strict": case.strict,
                "reference": case.reference,
                "rules": list(case.rules),
                "description": case.description,
                "source": f"{case.source.get('kind')}: {case.source.get('ref')}",
            }
            deviations = 0
            out.append(
                f'<tr><td class="f" title="{esc(case.description)}">{esc(case.file.removesuffix(".safetensors"))}</td>'
            )
            for impl in impls:
                r = by_key.get((impl.name, case.file))
                if r is None:
                    out.append('<td class="c"></td>')
                    continue
                deviations += SEVERITY[r.status] >= 2
                key = len(data_results)
                exit_text = f"signal {r.signal}" if r.signal is not None else str(r.rc)
                data_results.append(
                    {
                        "impl": r.impl,
                        "file": r.file,
                        "status": r.status,
                        "detail": r.detail,
                        "exit": exit_text,
                        "seconds": round(r.seconds, 3),
                    }
                )
                tip = f"{impl.name} | {case.file} | {r.status}" + (f" | {r.detail[:300]}" if r.detail else "")
                out.append(
                    f'<td class="c" data-k="{key}" style="background:{COLOURS[r.status]}" title="{esc(tip)}"></td>'
                )
            out.append(f'<td class="n">{deviations or ""}</td></tr>')
    # Totals row: deviations per implementation.
    out.append('<tr class="tot"><td class="f">deviations (of expected)</td>')
    for impl in impls:
        row = count.get(impl.name, {})
        out.append(f"<td>{sum(n for s, n in row.items() if SEVERITY[s] >= 2)}</td>")
    out.append("<td></td></tr></tbody></table></div>")
    out.extend(side)
    out.append("</div>")
    out.extend(_fuzz_section(campaigns))
    payload = json.dumps({"results": data_results, "cases": data_cases}, ensure_ascii=True).replace("</", "<\\/")
    out.append(f'<script type="application/json" id="data">{payload}</script>')
    out.append('<div id="detail" title="click to close"></div>')
    out.append(f"<script>{_JS}</script></body></html>")
    return "\n".join(out) + "\n"
