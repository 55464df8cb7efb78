"""Precision per minute of the pinnings: the paired design under shared, split and none pinning.

Runs the driver on the same servers with the lean client once per pinning, one after the other,
and compares each pinning's 95% interval widths with shared pinning's at equal time: an interval
narrows with the square root of the time spent, so the ratio is (other half-width * sqrt(other
minutes)) / (shared half-width * sqrt(shared minutes)); above 1 shared pinning is narrower. The
pinnings measure different round trips (split adds a wake-up across CPUs), so their diffs are
shown but not compared. Writes pinningbench.md and pinningbench.json into
results/pinningbench-<UTC time>/.

Usage: scripts/bench.sh pinning [--servers LIST] [--pinnings LIST]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

from . import KIT_ROOT, model, report
from .robustness import run_driver

DEFAULT_SERVERS = "undertow,tomcat-nio"
PINNINGS = ("shared", "split", "none")


def widths(run: model.RunResult) -> dict[str, tuple[float, float]]:
    """server -> (diff, half-width) in ns, for every measured server with an interval."""
    return {s.name: (s.diff.mean, s.diff.half_width) for s in run.ranked
            if not s.baseline and s.diff.half_width is not None}


def ratios(shared: dict[str, tuple[float, float]], shared_min: float,
           other: dict[str, tuple[float, float]], other_min: float) -> dict[str, float]:
    """server -> how many times narrower shared pinning's interval is than the other's at equal time."""
    out = {}
    for name in sorted(set(shared) & set(other)):
        s_half, o_half = shared[name][1], other[name][1]
        out[name] = (o_half * math.sqrt(other_min)) / (s_half * math.sqrt(shared_min)) if s_half else float("inf")
    return out


def _table(results: dict) -> report.Table:
    pinnings = list(results)
    names = sorted(set().union(*(r["servers"] for r in results.values())))
    rows = []
    for name in names:
        row = [name]
        for p in pinnings:
            w = results[p]["servers"].get(name)
            row.append(f"{w[0] / 1000:.2f} ± {w[1] / 1000:.2f}" if w else "-")
        for p in pinnings[1:]:
            r = results[p]["ratio_to_shared"].get(name)
            row.append("-" if r is None else f"{r:.2f}x")
        rows.append(row)
    cols = ("server", *(f"{p} [us] ({results[p]['minutes']:.1f} min)" for p in pinnings),
            *(f"shared narrower than {p}" for p in pinnings[1:]))
    return cols, rows, set(range(1, len(cols)))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.sh pinning", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--servers", default=DEFAULT_SERVERS, help=f"servers (default {DEFAULT_SERVERS}); the ladder and "
                   "the null pair are always in")
    p.add_argument("--pinnings", default="shared,split", help="pinnings to run, shared first (default shared,split; "
                   "also none)")
    p.add_argument("--results-dir", type=Path, default=KIT_ROOT / "results", help="where to write (default results/)")
    args = p.parse_args(argv)
    pinnings = [x.strip() for x in args.pinnings.split(",") if x.strip()]
    if not pinnings or pinnings[0] != "shared" or len(pinnings) < 2 or not set(pinnings) <= set(PINNINGS):
        p.error(f"--pinnings must start with shared and name at least one of split, none (got {args.pinnings!r})")
    out = args.results_dir / ("pinningbench-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    out.mkdir(parents=True)
    results: dict[str, dict] = {}
    for pinning in pinnings:
        start = time.monotonic()
        run = run_driver(out / pinning, ["--servers", args.servers, "--client", "lean", "--pinning", pinning,
                                         "--allow-concurrent"])
        minutes = (time.monotonic() - start) / 60
        results[pinning] = {"run": str(run.relative_to(out)), "minutes": minutes,
                            "servers": widths(model.build(run))}
    shared = results["shared"]
    for pinning in pinnings[1:]:
        other = results[pinning]
        other["ratio_to_shared"] = ratios(shared["servers"], shared["minutes"], other["servers"], other["minutes"])
        other["median_ratio"] = statistics.median(other["ratio_to_shared"].values()) \
            if other["ratio_to_shared"] else None
    table = _table(results)
    verdicts = [f"Against {p}: shared pinning's interval is {results[p]['median_ratio']:.2f}x as narrow at equal "
                f"time (median over servers; above 1 shared wins)." for p in pinnings[1:]
                if results[p]["median_ratio"] is not None]
    md = [f"# Precision per minute by pinning: {', '.join(pinnings)}", "", report.render_md(table), "", *verdicts, "",
          "Each pinning measured the same servers with the lean client, in the order above; the ratio is (other "
          "half-width x sqrt(other minutes)) / (shared half-width x sqrt(shared minutes)). The diffs of "
          "different pinnings are different quantities and are not compared.", ""]
    (out / "pinningbench.md").write_text("\n".join(md), encoding="utf-8")
    (out / "pinningbench.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(report.render_text(table))
    print("\n".join(verdicts))
    print(f"Files: {out / 'pinningbench.md'}, {out / 'pinningbench.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
