"""The run's tables on the terminal: aligned columns, the checks, what is invalid and the warnings."""

from __future__ import annotations

from ..model import RunResult
from . import sentences
from . import tables as t


def render(r: RunResult) -> str:
    out = [sentences.headline(r), *([f"NOT FOR COMPARING: {r.caveat}"] if r.caveat else []), "",
           t.render_text(t.main_table(r)) if r.ranked else "(no valid server)", "", sentences.legend(r),
           sentences.host_speed_line(r) or "", sentences.pinning_sentence(r)]
    out += [f"check: {c}" for c in sentences.checks(r)]
    for title, _, table in t.section_tables(r):
        if title != "Percentiles":
            out += ["", f"{title}:", t.render_text(table)]
    if r.invalid:
        out += ["", "Invalid (left out of the comparison):"] + [f"  {s.name}: {s.reason}" for s in r.invalid]
    warnings = sentences.all_warnings(r)
    if warnings:
        out += ["", "Warnings:"] + [f"  {w}" for w in warnings]
    found = sentences.findings(r)
    if found:
        what = sentences.FINDINGS_TEXT
        out += ["", f"Findings ({what[0].lower()}{what[1:-1]}):"] + [f"  {x}" for x in found]
    return "\n".join(out) + "\n"
