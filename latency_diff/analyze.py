"""Turns a run directory's raw files into the latency-diff tables, files and plots, or compares two runs.

Usage: scripts/analyze.py RUN_DIR [--quiet]
       scripts/analyze.py compare RUN_A RUN_B [--html FILE]

RUN_DIR: writes summary.json, summary.csv, report.md, report.html (one self-contained page), and
the diffs and percentiles plots (PNG) into the run directory and prints the tables. Parses
strictly: a malformed file is an error naming the file and what is wrong, the exit status is
non-zero and nothing is written (a last record cut short by a stopped run is left out, with a
warning).

compare: for each server valid in both runs, the change of its diff from RUN_A to RUN_B with a 95%
interval (over both runs' process pairs, each already paired with its own baseline), and "not
significant" where the interval includes zero: a regression check between versions, JDKs or
machines; --html FILE also writes the comparison as a page. Both runs must be of the current format
(latency-diff/run/4; python3 -m latency_diff.migrate converts a run of /3); a run of the earlier
single-server format is refused with a message saying so. Exit status 0; 1 on an unreadable run;
3 when the run is incomplete.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import evaluate, export, stats
from .export import html, tables, terminal
from .model import RunResult


def compare(a: RunResult, b: RunResult) -> tuple[tables.Table, list[str]]:
    """The change of each server's diff from run a to run b; notes on what could not be compared."""
    notes = []
    if a.primary != b.primary:
        notes.append(f"the runs' diffs come from different clients ({a.primary} and {b.primary})")
    for key in ("pinning", "profile", "block_requests", "http"):
        if a.settings.get(key) != b.settings.get(key):
            notes.append(f"{key} differs: {a.settings.get(key)} in {a.run_id}, {b.settings.get(key)} in {b.run_id}")
    if a.env.get("cpu_model") != b.env.get("cpu_model"):
        notes.append(f"the runs come from different CPUs ({a.env.get('cpu_model')}; {b.env.get('cpu_model')}): a "
                     "change may be the machine's")
    by_name = {s.name: s for s in b.servers}
    rows = []
    for sa in a.ranked:
        sb = by_name.get(sa.name)
        if sa.baseline:
            continue
        if sb is None or not sb.valid:
            notes.append(f"{sa.name}: " + ("not in " if sb is None else "invalid in ") + b.run_id)
            continue
        # Each run's pair estimates are already server minus baseline, and pairs are independent.
        change = stats.welch_difference(sb.estimates, sa.estimates)
        verdict = tables.change_verdict(change)
        rel = f"{change.mean / sa.diff.mean:+.0%}" if sa.diff and abs(sa.diff.mean) > 1e-9 else "-"
        rows.append([sa.name, f"{sa.diff.mean / 1000:.2f}", f"{sb.diff.mean / 1000:.2f}",
                     f"{change.mean / 1000:+.2f}", tables.ci_text(change), rel, verdict])
    only_b = sorted(s.name for s in b.servers if s.name not in {x.name for x in a.servers})
    if only_b:
        notes.append(f"only in {b.run_id}: {', '.join(only_b)}")
    cols = ("server", "diff A [us]", "diff B [us]", "change [us]", "change 95% CI [us]", "change", "verdict")
    return (cols, rows, {1, 2, 3, 4, 5}), notes


def agreement(a: RunResult, b: RunResult) -> list[str]:
    """Reproducibility of b against a: whose diff intervals overlap, and whether the servers whose intervals are
    apart in both runs rank the same in both (pairs apart in one run only are counted, not judged)."""
    by_b = {s.name: s for s in b.ranked if not s.baseline and s.diff.ci95_low is not None}
    both = [(s, by_b[s.name]) for s in a.ranked if s.name in by_b and s.diff.ci95_low is not None]
    if not both:
        return []
    apart_iv = [sa.name for sa, sb in both
                if sa.diff.ci95_high < sb.diff.ci95_low or sb.diff.ci95_high < sa.diff.ci95_low]
    out = [f"intervals overlap for {len(both) - len(apart_iv)} of {len(both)} servers"
           + (f" (not: {', '.join(apart_iv)})" if apart_iv else "")]

    def order(x, y) -> int:  # -1: x below y, 1: above, 0: intervals overlap
        if x.diff.ci95_high < y.diff.ci95_low:
            return -1
        return 1 if y.diff.ci95_high < x.diff.ci95_low else 0

    same, flipped, one_run = 0, [], 0
    for i, (xa, xb) in enumerate(both):
        for ya, yb in both[i + 1:]:
            oa, ob = order(xa, ya), order(xb, yb)
            if oa and ob:
                if oa == ob:
                    same += 1
                else:
                    flipped.append(f"{xa.name}/{ya.name}")
            elif oa or ob:
                one_run += 1
    out.append(f"ranking: {same} pairs of servers are apart in both runs and rank the same, {len(flipped)} rank the "
               f"other way round" + (f" ({', '.join(flipped)})" if flipped else "")
               + f"; {one_run} pairs are apart in one run only")
    return out


def main_compare(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="analyze.py compare", description="Change of each server's diff from "
                                     "RUN_A to RUN_B, with its 95% interval; 'not significant' within noise.")
    parser.add_argument("run_a", type=Path, help="the earlier or reference run directory")
    parser.add_argument("run_b", type=Path, help="the run to compare with it")
    parser.add_argument("--html", type=Path, metavar="FILE", help="also write the comparison as a page to FILE")
    args = parser.parse_args(argv)
    try:
        a, b = evaluate.build(args.run_a), evaluate.build(args.run_b)
    except evaluate.AnalysisError as e:
        print(f"analyze: error: {e}", file=sys.stderr)
        return 1
    t, notes = compare(a, b)
    print(f"A: {tables.headline(a)}\nB: {tables.headline(b)}\n")
    print(tables.render_text(t) if t[1] else "(no server to compare)")
    print(f"\n{COMPARE_EXPLANATION}")
    notes = agreement(a, b) + notes
    for n in notes:
        print(f"note: {n}")
    if args.html:
        try:
            args.html.write_text(html.compare_html(a, b, t, notes, COMPARE_EXPLANATION), encoding="utf-8")
        except OSError as e:
            print(f"analyze: error: {args.html}: cannot write: {e.strerror}", file=sys.stderr)
            return 1
        print(f"Page: {args.html}")
    return 0


COMPARE_EXPLANATION = ("change: diff B minus diff A, 95% Welch interval over both runs' process pairs (each already "
                       "paired with its own baseline); not significant: the interval includes 0.")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "compare":
        return main_compare(argv[1:])
    parser = argparse.ArgumentParser(prog="analyze.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path, help="a run directory, e.g. results/20261122T050000Z")
    parser.add_argument("--quiet", action="store_true", help="write the files, print only their location")
    args = parser.parse_args(argv)
    try:
        result = evaluate.build(args.run_dir)
    except evaluate.AnalysisError as e:
        print(f"analyze: error: {e}", file=sys.stderr)
        print("analyze: nothing was written", file=sys.stderr)
        return 1
    try:
        written = export.write_all(args.run_dir, result)
    except export.ExportError as e:
        print(f"analyze: error: {e}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(terminal.render(result))
    print("Files: " + ", ".join(str(p) for p in written))
    return 0 if result.status == "complete" else 3


if __name__ == "__main__":
    sys.exit(main())
