"""Keeps the README's results tables equal to the committed runs they name.

The README holds blocks like

    <!-- results: results/20261122T050000Z -->        the main table
    <!-- results: results/20261122T050000Z main -->   fewer columns, and the checks, the diff plot, what
                                                       frameworks add
    <!-- results: results/20261122T050000Z full -->   and the precision reached per server
    ...table rendered from that run...
    <!-- /results -->

`python3 -m latency_diff.readme` re-renders every block from its run; `--check` only compares (the
test suite runs it, so the README can never show numbers that no committed run produced).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from . import KIT_ROOT, model, report

BLOCK = re.compile(r"(<!-- results: (?P<run>[^ ]+)(?: (?P<mode>main|full))? -->\n)(?P<body>.*?)(<!-- /results -->)",
                   re.S)


def render(run_dir: Path, mode: str | None = None, root: Path = KIT_ROOT) -> str:
    r = model.build(run_dir)
    table = report.compact_table(r) if mode == "main" else report.markdown_table(r)
    lines = [f"*{report.headline(r)}*", "", table, ""]
    if mode in ("main", "full"):
        lines += [report.pinning_sentence(r), ""] + [f"- check: {c}" for c in report.checks(r)] + [""]
        rel = run_dir.relative_to(root) if run_dir.is_relative_to(root) else run_dir
        if (run_dir / "diffs.png").is_file():
            lines += [f"![{report.PLOTS['diffs']}]({rel}/diffs.png)", ""]
        tables = [("What each framework adds over its server", report.framework_table(r))]
        if mode == "full":
            tables.insert(0, ("Precision reached", report.precision_table(r)))
        for title, t in tables:
            if t is not None and t[1]:
                lines += [f"**{title}**", "", report.render_md(t), ""]
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
    except model.AnalysisError as e:
        print(f"readme: {e}", file=sys.stderr)
        return 1
    if stale and args.check:
        print(f"readme: the table(s) of {', '.join(stale)} differ from the run; run python3 -m latency_diff.readme",
              file=sys.stderr)
        return 1
    print("readme: " + (f"updated {', '.join(stale)}" if stale else "up to date"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
