"""Turns a run directory's raw files into the latency-diff table, summary.json, summary.csv, report.md.

Usage: scripts/analyze.py RUN_DIR [--quiet]

Parses strictly: a malformed or truncated file is an error naming the file and what is wrong, the
exit status is non-zero and nothing is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import model, report

OUTPUTS = ("summary.json", "summary.csv", "report.md")


def write_outputs(run_dir: Path, result: model.RunResult) -> list[Path]:
    """Renders everything first, then writes each file through a temporary name (no half-written file)."""
    rendered = {"summary.json": report.summary_json(result), "summary.csv": report.summary_csv(result),
                "report.md": report.report_md(result)}
    written = []
    for name, text in rendered.items():
        tmp = run_dir / f".{name}.tmp"
        try:
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(run_dir / name)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            raise model.AnalysisError(f"{run_dir / name}: cannot write: {e.strerror}") from e
        written.append(run_dir / name)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="analyze.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path, help="a run directory, e.g. results/20261122T050000Z")
    parser.add_argument("--quiet", action="store_true", help="write the files, print only their location")
    args = parser.parse_args(argv)
    try:
        result = model.build(args.run_dir)
        written = write_outputs(args.run_dir, result)
    except model.AnalysisError as e:
        print(f"analyze: error: {e}", file=sys.stderr)
        print("analyze: nothing was written", file=sys.stderr)
        return 1
    if not args.quiet:
        print(report.table(result))
    print("Files: " + ", ".join(str(p) for p in written))
    return 0 if result.status == "complete" else 3


if __name__ == "__main__":
    sys.exit(main())
