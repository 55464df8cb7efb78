"""report.md: every table of the run, with the plots (PNG files next to it) embedded."""

from __future__ import annotations

from ..model import RunResult
from . import sentences
from . import tables as t


def render(r: RunResult, plots: dict[str, str] | None = None) -> str:
    """plots: plot name -> its PNG file's name, next to report.md."""
    lines = [f"# latency-diff run {r.run_id}", "", f"Status: **{r.status}**" + (f" ({r.reason})" if r.reason else ""),
             "", *([f"**Not for comparing**: {r.caveat}", ""] if r.caveat else []), f"*{sentences.headline(r)}*", "",
             t.render_md(t.main_table(r)) if r.ranked else "(no valid server)", "", sentences.legend(r), "",
             sentences.host_speed_line(r) or "", "", sentences.pinning_sentence(r), ""]
    lines += [f"- check: {c}" for c in sentences.checks(r)] + [""]
    for name, title in t.PLOTS.items():
        if plots and name in plots:
            lines += [f"![{title}]({plots[name]})", ""]
    for title, text, table in t.section_tables(r):
        lines += [f"## {title}", "", text, "", t.render_md(table), ""]
    if r.invalid:
        lines += ["## Invalid servers", ""] + [f"- **{s.name}**: {s.reason}" for s in r.invalid] + [""]
    warnings = sentences.all_warnings(r)
    if warnings:
        lines += ["## Warnings", ""] + [f"- {w}" for w in warnings] + [""]
    found = sentences.findings(r)
    if found:
        lines += ["## Findings", "", sentences.FINDINGS_TEXT, ""] + [f"- {x}" for x in found] + [""]
    lines += ["## Setup", ""] + [f"- {x}" for x in sentences.setup_lines(r)] + ["", "## Servers", ""]
    lines += [f"- {x}" for x in sentences.server_lines(r)]
    return "\n".join(lines) + "\n"
