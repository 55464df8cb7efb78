"""The run's outputs, one module per format, all rendered from one result model (model.RunResult).

    terminal.py      the tables printed at the end of a run
    summary_json.py  summary.json, the whole model
    summary_csv.py   summary.csv, a row per server
    markdown.py      report.md
    html.py          report.html, one self-contained page
    plots.py         diffs.png, percentiles.png (and the SVG that report.html inlines)
    readme.py        the README's results blocks
    flames/<server>.html  each profiled server's flame graph, from the run's logs
    tables.py        the tables and sentences they share

`write_all` writes every file of a run directory: the plots first (the reports embed them), then
each text through a temporary name.
"""

from __future__ import annotations

from pathlib import Path

from ... import rundir
from ..model import RunResult
from . import html, markdown, summary_csv, summary_json

#: The files write_all writes, besides the plots.
FILES = ("summary.json", "summary.csv", "report.md", "report.html")


class ExportError(Exception):
    """An output that cannot be written; the message names the file."""


def write_all(run_dir: Path, r: RunResult) -> list[Path]:
    from . import plots  # matplotlib, from the kit's virtual environment: only when writing
    try:
        images = plots.write_all(r, run_dir)
    except OSError as e:
        raise ExportError(f"{run_dir}: cannot write the plots: {e.strerror}") from e
    rendered = {"summary.json": summary_json.render(r), "summary.csv": summary_csv.render(r),
                "report.md": markdown.render(r, {k: p.name for k, p in images.items()}),
                "report.html": html.render(r, {k: plots.svg(r, k) for k in images})}
    written = list(images.values()) + _flamegraphs(run_dir, r)
    for name, text in rendered.items():
        try:
            rundir.write_atomic(run_dir / name, text)
        except OSError as e:
            raise ExportError(f"{run_dir / name}: cannot write: {e.strerror}") from e
        written.append(run_dir / name)
    return written


def _flamegraphs(run_dir: Path, r: RunResult) -> list[Path]:
    """Each profiled server's flame graph (async-profiler's page, kept in the run's logs) as a file of its own."""
    from ..evaluate import flamegraph_name
    tags = {f"{s.name}-p{s.profile['pair']}": s for s in r.ranked if s.profile and s.profile["flamegraph"]}
    if not tags:
        return []
    out = []
    for obj in rundir.flamegraphs(run_dir):
        s = tags.get(obj.get("tag"))
        if s is None:
            continue
        path = run_dir / flamegraph_name(s.name)
        try:
            path.parent.mkdir(exist_ok=True)
            rundir.write_atomic(path, obj["text"])
        except OSError as e:
            raise ExportError(f"{path}: cannot write: {e.strerror}") from e
        out.append(path)
    return out
