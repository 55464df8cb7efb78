"""report.html: the run's report as one self-contained page, and the page of a comparison of two runs.

Everything is inline (the plots as SVG, a small style sheet, a few lines of script to sort a table by
a column), so the file opens from disk with no network. The script also records, on the page's root
element (data-rendered), how many tables and plots the browser laid out with a non-zero size: the
test that opens the page in headless Chromium reads it.
"""

from __future__ import annotations

import html
import re

from ..model import RunResult
from . import sentences, tables

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.8em 0; }
th, td { padding: 0.25em 0.6em; border-bottom: 1px solid #ddd; white-space: nowrap; }
th { background: #f3f3f3; text-align: left; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.sortable th { cursor: pointer; } table.sortable th:hover { background: #e4e4e4; }
.plot svg { max-width: 100%; height: auto; }
.warn li { color: #8a4b00; } code { background: #f3f3f3; padding: 0 0.2em; }
p.note { color: #555; max-width: 60em; }
"""

# Sorts a table by the clicked column (numbers by value, the rest as text; a second click reverses),
# and records what the browser rendered.
SCRIPT = """
function cellValue(row, i) {
  const t = row.cells[i].textContent.trim().replace(/[±,≈]/g, '').replace(/^\\[/, '');
  const n = parseFloat(t);
  return isNaN(n) ? t.toLowerCase() : n;
}
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, i) {
    th.addEventListener('click', function () {
      const body = table.tBodies[0];
      const dir = th.dataset.dir === 'asc' ? -1 : 1;
      th.dataset.dir = dir === 1 ? 'asc' : 'desc';
      const rows = Array.from(body.rows);
      rows.sort(function (a, b) {
        const x = cellValue(a, i), y = cellValue(b, i);
        if (typeof x === typeof y) { return (x < y ? -1 : x > y ? 1 : 0) * dir; }
        return (typeof x === 'number' ? -1 : 1) * dir;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
const sortBy = location.hash.match(/^#sort=(\\d+)$/);  // a link can open the page sorted: report.html#sort=3
if (sortBy) {
  const th = document.querySelectorAll('table.main th')[Number(sortBy[1])];
  if (th) { th.click(); }
}
function laidOut(el) { const b = el.getBoundingClientRect(); return b.width > 0 && b.height > 0; }
document.documentElement.dataset.rendered = JSON.stringify({
  tables: Array.from(document.querySelectorAll('table')).filter(laidOut).length,
  rows: Array.from(document.querySelectorAll('table.main tbody tr')).filter(laidOut).length,
  plots: Array.from(document.querySelectorAll('.plot svg')).filter(laidOut).length
});
"""

_CODE = re.compile(r"`([^`]*)`")
_BOLD = re.compile(r"\*\*([^*]*)\*\*")


def _inline(text: str) -> str:
    """Escapes text and turns its markdown `code` and **bold** into HTML."""
    out = html.escape(text)
    out = _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", out)
    return _BOLD.sub(lambda m: f"<strong>{m.group(1)}</strong>", out)


def table_html(t: tables.Table, css_class: str = "sortable") -> str:
    cols, rows, right = t
    head = "".join(f'<th class="num">{html.escape(c)}</th>' if i in right else f"<th>{html.escape(c)}</th>"
                   for i, c in enumerate(cols))
    body = "".join("<tr>" + "".join(f'<td class="num">{html.escape(v)}</td>' if i in right
                                    else f"<td>{html.escape(v)}</td>" for i, v in enumerate(row)) + "</tr>"
                   for row in rows)
    return f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _svg(text: str) -> str:
    """An SVG file's text without its XML declaration and doctype, to inline it."""
    start = text.find("<svg")
    return text[start:] if start >= 0 else ""


def _page(title: str, parts: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(parts) + f"\n<script>{SCRIPT}</script></body></html>\n")


def _list(items: list[str], css_class: str = "") -> str:
    cls = f' class="{css_class}"' if css_class else ""
    return f"<ul{cls}>" + "".join(f"<li>{_inline(x)}</li>" for x in items) + "</ul>"


def render(r: RunResult, svgs: dict[str, str]) -> str:
    """The run's page; svgs: plot name -> its SVG text."""
    parts = [f"<h1>latency-diff run {html.escape(r.run_id)}</h1>",
             f"<p>Status: <strong>{html.escape(r.status)}</strong>"
             + (f" ({html.escape(r.reason)})" if r.reason else "") + "</p>",
             f"<p class=\"note\">{_inline(sentences.headline(r))}</p>"]
    if r.caveat:
        parts.append(_list([f"**Not for comparing**: {r.caveat}"], "warn"))
    if r.ranked:
        parts.append(table_html(tables.main_table(r), "sortable main"))
        parts.append("<p class=\"note\">Click a column's header to sort by it.</p>")
    else:
        parts.append("<p>(no valid server)</p>")
    parts += [f"<p class=\"note\">{_inline(sentences.legend(r))}</p>",
              f"<p class=\"note\">{_inline(sentences.host_speed_line(r) or '')}</p>",
              _list([f"check: {c}" for c in sentences.checks(r)])]
    for name, title in tables.PLOTS.items():
        if svgs.get(name):
            parts.append(f"<h2>{html.escape(title)}</h2><div class=\"plot\">{_svg(svgs[name])}</div>")
    for title, text, t in tables.section_tables(r):
        parts += [f"<h2>{html.escape(title)}</h2>", f"<p class=\"note\">{_inline(text)}</p>", table_html(t)]
        if t[0][-1] == "flame graph":  # the profiles: a link to each server's flame graph
            parts.append("<p>Flame graphs: " + ", ".join(
                f'<a href="{html.escape(s.profile["flamegraph"])}">{html.escape(s.name)}</a>'
                for s in r.ranked if s.profile and s.profile["flamegraph"]) + "</p>")
    if r.invalid:
        parts += ["<h2>Invalid servers</h2>", _list([f"**{s.name}**: {s.reason}" for s in r.invalid], "warn")]
    warnings = sentences.all_warnings(r)
    if warnings:
        parts += ["<h2>Warnings</h2>", _list(warnings, "warn")]
    found = sentences.findings(r)
    if found:
        parts += ["<h2>Findings</h2>", f"<p class=\"note\">{_inline(sentences.FINDINGS_TEXT)}</p>", _list(found)]
    parts += ["<h2>Set-up and environment</h2>", _list(sentences.setup_lines(r)),
              "<h2>Servers</h2>", _list(sentences.server_lines(r))]
    return _page(f"latency-diff run {r.run_id}", parts)


def compare_html(a: RunResult, b: RunResult, t: tables.Table, notes: list[str], explanation: str) -> str:
    """The page of `analyze.py compare --html`: both runs' headlines, the change table and the notes."""
    parts = [f"<h1>latency-diff: {html.escape(a.run_id)} against {html.escape(b.run_id)}</h1>",
             _list([f"A: {sentences.headline(a)}", f"B: {sentences.headline(b)}"]),
             table_html(t, "sortable main") if t[1] else "<p>(no server to compare)</p>",
             f"<p class=\"note\">{_inline(explanation)}</p>"]
    if notes:
        parts += ["<h2>Notes</h2>", _list(notes, "warn")]
    return _page(f"latency-diff compare {a.run_id} {b.run_id}", parts)
