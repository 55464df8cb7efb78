"""Lending the measured CPU: the same run with --lend-cpu on and off, pairs fixed, back to back.

While the measuring lane waits for the next pair's processes (their start, warm-up and JIT wait on the other CPU),
`--lend-cpu on` (the default) lets the process being prepared use both CPUs; nothing is measured meanwhile, and
the hand-over pins it back to the measured CPU (docs/method.md, "Two lanes"). The claim to check: preparing is
faster, so a pair and the run cost less. A default run stops each server by its precision, so two default runs
differ in their pairs too; here both sides make the same number of pairs of every server (`--pairs`), with the
counting and profiling windows off (they are the same on both sides), and the runs alternate (on, off, off, on
for --rounds 2), so that a machine that slows down over the benchmark does not count against one side.

Reported per run: its wall time; the mean seconds to prepare a server process (process records, `prepare_s`),
and how long of it was lent (`lent_s`); the measuring lane's total wait for preparation (`seconds.wait`) and its
measuring (`seconds.measure`). Summary: the change of each from off to on (means over the rounds).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from .. import rundir
from ..export import tables
from . import common
from .windows import OFF, order

SIDES = ("on", "off")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--servers", default=common.CORE, help=f"servers (default {common.CORE})")
    p.add_argument("--pairs", type=int, default=3, help="process pairs of every server in each run (default 3)")
    p.add_argument("--rounds", type=int, default=2, help="rounds of (on, off), every other one reversed (default 2)")


def run_figures(run_dir: Path) -> dict[str, float]:
    """A run's mean preparation of a server process, its mean lent seconds, and its lane's wait and measuring."""
    files = rundir.load(run_dir)
    procs = [r.process for r in files.pairs if r.process is not None and r.process.prepare_s is not None]
    return {"prepare_s": statistics.fmean(p.prepare_s for p in procs) if procs else 0.0,
            "lent_s": statistics.fmean(p.lent_s or 0.0 for p in procs) if procs else 0.0,
            "processes": len(procs),
            "wait_s": sum(r.seconds.get("wait", 0.0) for r in files.pairs),
            "measure_s": sum(r.seconds.get("measure", 0.0) for r in files.pairs),
            "run_s": float(files.run.get("seconds") or 0.0)}


def summarize(runs: list[dict]) -> dict:
    """runs: {"side", "minutes", "prepare_s", "wait_s", "measure_s", ...} each. Each figure's mean per side and its
    change from off to on (on / off - 1)."""
    out: dict = {}
    for key in ("minutes", "prepare_s", "wait_s", "measure_s"):
        mean = {side: statistics.fmean(r[key] for r in runs if r["side"] == side) for side in SIDES}
        out[key] = {**mean, "change": mean["on"] / mean["off"] - 1 if mean["off"] else None}
    return out


def run(args: argparse.Namespace, driver_args: list[str]) -> int:
    if args.pairs < 1 or args.rounds < 1:
        raise SystemExit("lend: --pairs and --rounds must be at least 1")
    out = common.out_dir(args.results_dir, "lend")
    fixed = ["--servers", args.servers, "--min-pairs", str(args.pairs), "--max-pairs", str(args.pairs),
             "--budget", "100000", *OFF]
    runs = []
    for i, side in enumerate(order(args.rounds, SIDES), 1):
        run_dir, minutes = common.run_driver(out / f"run-{i:02d}-lend-{side}", [*fixed, "--lend-cpu", side,
                                                                                *driver_args])
        runs.append({"side": side, "minutes": minutes, "dir": str(run_dir.relative_to(out)), **run_figures(run_dir)})
    s = summarize(runs)
    t: tables.Table = (("run", "lend", "wall [min]", "prepare a process [s]", "of it lent [s]", "processes",
                        "lane's wait [s]", "measuring [s]"),
                       [[r["dir"], r["side"], f"{r['minutes']:.2f}", f"{r['prepare_s']:.1f}", f"{r['lent_s']:.1f}",
                         str(r["processes"]), f"{r['wait_s']:.0f}", f"{r['measure_s']:.0f}"] for r in runs], set())
    verdict = (f"With the measured CPU lent, a run of {args.pairs} pairs of every server took "
               f"{s['minutes']['on']:.2f} against {s['minutes']['off']:.2f} min ({s['minutes']['change']:+.1%}); "
               f"preparing a process {s['prepare_s']['on']:.1f} against {s['prepare_s']['off']:.1f} s "
               f"({s['prepare_s']['change']:+.1%}); the measuring lane waited {s['wait_s']['on']:.0f} against "
               f"{s['wait_s']['off']:.0f} s ({s['wait_s']['change']:+.1%}). Means over {args.rounds} round(s).")
    print(tables.render_text(t) + "\n" + verdict)
    common.write(out, "lend", "Lending the measured CPU while a process is prepared", [verdict, common.md_table(t)],
                 {"servers": args.servers, "pairs": args.pairs, "runs": runs, **s})
    return 0
