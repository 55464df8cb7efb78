"""Keeps the README's results tables equal to the committed runs they name.

The README holds blocks like

    <!-- results: results/20261122T050000Z -->        the main table
    <!-- results: results/20261122T050000Z main -->   fewer columns, the checks, the diff plot, a link to
                                                       the run's report
    <!-- results: results/20261122T050000Z full -->   the precision reached and what frameworks add instead
    ...table rendered from that run...
    <!-- /results -->

`python3 -m latency_diff.analysis.export.readme` re-renders every block from its run; `--check` only compares (the
test suite runs it, so the README can never show numbers that no committed run produced).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ... import KIT_ROOT
from .. import evaluate
from . import sentences, tables

BLOCK = re.compile(r"(<!-- results: (?P<run>[^ ]+)(?: (?P<mode>main|full|brief))? -->\n)(?P<body>.*?)"
                   r"(<!-- /results -->)", re.S)


def render(run_dir: Path, mode: str | None = None, root: Path = KIT_ROOT) -> str:
    r = evaluate.build(run_dir)
    if mode == "brief":
        return _brief(r, run_dir, root)
    table = tables.render_md(tables.main_table(r, compact=mode == "main"))
    lines = [f"*{sentences.headline(r)}*", "", table, ""]
    if sentences.host_speed_line(r):
        lines += [sentences.host_speed_line(r), ""]
    if mode in ("main", "full"):
        lines += [sentences.pinning_sentence(r), ""] + [f"- check: {c}" for c in sentences.checks(r)] + [""]
        rel = run_dir.relative_to(root) if run_dir.is_relative_to(root) else run_dir
        if (run_dir / "diffs.png").is_file():
            lines += [f"![{tables.PLOTS['diffs']}]({rel}/diffs.png)", ""]
        extra = [] if mode == "main" else [("Precision reached", tables.precision_table(r)),
                                            ("What each framework adds over its server", tables.framework_table(r))]
        if mode == "main":
            lines += [f"What each framework adds over its server, and every other table: [the run's "
                      f"report]({rel}/report.md).", ""]
        for title, t in extra:
            if t is not None and t[1]:
                lines += [f"**{title}**", "", tables.render_md(t), ""]
    if r.invalid:
        lines += ["Not in the table (invalid in this run):", ""]
        lines += [f"- **{s.name}**: {s.reason}" for s in r.invalid] + [""]
    return "\n".join(lines)


def _brief(r, run_dir: Path, root: Path) -> str:
    """The README's view: the short table, the host's speed, the method's checks that failed (none, as a rule), the
    run's warnings and findings counted, and links to the plot and the whole report."""
    rel = run_dir.relative_to(root) if run_dir.is_relative_to(root) else run_dir
    lines = [f"*{sentences.headline(r)}*", "", tables.render_md(tables.brief_table(r)), ""]
    if sentences.host_speed_line(r):
        lines += [sentences.host_speed_line(r), ""]
    controls = [c for c in sentences.checks(r) if c.startswith("control ")]
    lines += [f"- check: {c}" for c in controls]
    warned = [s.name for s in r.ranked if s.warnings]
    n_warnings, n_findings = len(sentences.all_warnings(r)), len(sentences.findings(r))
    lines += [f"- † {len(warned)} rows carry {n_warnings} warning(s) and {n_findings} "
              f"finding(s); the [report]({rel}/report.md) lists them with every other table.", ""]
    if (run_dir / "diffs.png").is_file():
        lines += [f"![{tables.PLOTS['diffs']}]({rel}/diffs.png)", ""]
    if r.invalid:
        lines += ["Not in the table (invalid in this run):", ""]
        lines += [f"- **{s.name}**: {s.reason}" for s in r.invalid] + [""]
    return "\n".join(lines)


def update(readme: Path, root: Path = KIT_ROOT, check: bool = False) -> list[str]:
    """Re-renders each block; returns the runs whose block differed (with check=True nothing is written)."""
    text = readme.read_text(encoding="utf-8")
    stale: list[str] = []

    def replace(m: re.Match) -> str:
        body = render(root / m.group("run"), mode=m.group("mode"), root=root)
        if body != m.group("body"):
            stale.append(m.group("run"))
        return m.group(1) + body + m.group(5)

    new = BLOCK.sub(replace, text)
    if not check and new != text:
        readme.write_text(new, encoding="utf-8")
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only report blocks that differ from their run")
    args = parser.parse_args(argv)
    try:
        stale = update(KIT_ROOT / "README.md", check=args.check)
    except evaluate.AnalysisError as e:
        print(f"readme: {e}", file=sys.stderr)
        return 1
    if stale and args.check:
        print(f"readme: the table(s) of {', '.join(stale)} differ from the run; run "
              "python3 -m latency_diff.analysis.export.readme", file=sys.stderr)
        return 1
    print("readme: " + (f"updated {', '.join(stale)}" if stale else "up to date"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
