"""What counting and profiling cost: the same run with its windows and without, pairs fixed, back to back.

A default run counts each server's work and profiles each JVM server once, in windows after its first measured pair
(docs/method.md). The target: a default run at most 15% longer with them than without. A default run stops each
server by its precision, so two default runs differ in their pairs as well; here both runs make the same number of
pairs of every server (`--pairs`, by default 4: the mean over the rows of the README's run), so that what differs
is the windows alone. The runs alternate (with, without, without, with, for --rounds 2), so that a machine that
slows down over the benchmark does not count against one side.

Reported: each run's wall time; the extra time with the windows (mean over the rounds); and the windows' own
seconds from the pair records (`seconds.count`, `seconds.profile`) against the rest of the run, which estimates
the extra time for any run from its own records (`analyze.py` is not needed for it).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from .. import rundir
from ..analysis.export import tables
from . import common

#: The target: the windows add at most this share to a run's time.
TARGET = 0.15
OFF = ["--count-requests", "0", "--profile-requests", "0"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--servers", default=common.CORE, help=f"servers (default {common.CORE})")
    p.add_argument("--pairs", type=int, default=4, help="process pairs of every server in each run (default 4)")
    p.add_argument("--rounds", type=int, default=1, help="rounds of (with, without), the second reversed, and so on "
                   "(default 1)")


def window_seconds(run_dir: Path) -> dict[str, float]:
    """A run's seconds in counting windows, in profiling windows, and its own seconds (run.json)."""
    files = rundir.load(run_dir)
    count = sum(r.seconds.get("count", 0.0) for r in files.pairs)
    profile = sum(r.seconds.get("profile", 0.0) for r in files.pairs)
    return {"count": count, "profile": profile, "run": float(files.run.get("seconds") or 0.0)}


def order(rounds: int, sides: tuple[str, str] = ("with", "without")) -> list[str]:
    """with, without; without, with; ...: each side first in every other round."""
    out: list[str] = []
    for i in range(rounds):
        out += list(sides) if i % 2 == 0 else list(reversed(sides))
    return out


def summarize(runs: list[dict]) -> dict:
    """runs: {"side", "minutes", "count", "profile", "run"} each. The extra time of the side with windows, from the
    wall times (mean of each side) and from the windows' own seconds."""
    mean = {side: statistics.fmean(r["minutes"] for r in runs if r["side"] == side) for side in ("with", "without")}
    with_runs = [r for r in runs if r["side"] == "with"]
    windows = statistics.fmean(r["count"] + r["profile"] for r in with_runs)
    rest = statistics.fmean(r["run"] - r["count"] - r["profile"] for r in with_runs)
    return {"minutes": mean, "extra_wall": mean["with"] / mean["without"] - 1,
            "extra_records": windows / rest if rest > 0 else None, "window_s": windows,
            "count_s": statistics.fmean(r["count"] for r in with_runs),
            "profile_s": statistics.fmean(r["profile"] for r in with_runs), "target": TARGET}


def run(args: argparse.Namespace, driver_args: list[str]) -> int:
    if args.pairs < 1 or args.rounds < 1:
        raise SystemExit("windows: --pairs and --rounds must be at least 1")
    out = common.out_dir(args.results_dir, "windows")
    fixed = ["--servers", args.servers, "--min-pairs", str(args.pairs), "--max-pairs", str(args.pairs),
             "--budget", "100000"]
    runs = []
    for i, side in enumerate(order(args.rounds), 1):
        run_dir, minutes = common.run_driver(out / f"run-{i:02d}-{side}", [*fixed, *(OFF if side == "without" else []),
                                                                           *driver_args])
        runs.append({"side": side, "minutes": minutes, "dir": str(run_dir.relative_to(out)),
                     **window_seconds(run_dir)})
    s = summarize(runs)
    t: tables.Table = (("run", "windows", "wall [min]", "counting [s]", "profiling [s]", "run's own [s]"),
                       [[r["dir"], r["side"], f"{r['minutes']:.2f}", f"{r['count']:.1f}", f"{r['profile']:.1f}",
                         f"{r['run']:.1f}"] for r in runs], set())
    met = s["extra_wall"] <= TARGET
    verdict = (f"With the windows the run took {s['extra_wall']:+.1%} longer ({s['minutes']['with']:.2f} against "
               f"{s['minutes']['without']:.2f} min, {args.pairs} pairs of every server); the windows' own seconds "
               f"({s['count_s']:.0f} s counting, {s['profile_s']:.0f} s profiling) are "
               f"{s['extra_records']:.1%} of the rest of the run. Target: at most {TARGET:.0%} longer: "
               f"{'met' if met else 'missed'}.")
    print(tables.render_text(t) + "\n" + verdict)
    common.write(out, "windows", "What counting and profiling cost", [verdict, common.md_table(t)],
                 {"servers": args.servers, "pairs": args.pairs, "runs": runs, **s, "met": met})
    return 0
