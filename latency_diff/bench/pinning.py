"""Precision per minute of the pinnings: the same servers under shared, split and none pinning.

The driver runs once per pinning, one after the other, with the lean client; each pinning's
interval widths are compared with shared pinning's at equal time (above 1: shared is narrower). The
pinnings measure different round trips (split adds a wake-up across CPUs), so their diffs are shown
but not compared.
"""

from __future__ import annotations

import argparse
import statistics

from ..export import tables
from . import common

PINNINGS = ("shared", "split", "none")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--servers", default=common.CORE, help=f"servers (default {common.CORE})")
    p.add_argument("--pinnings", default="shared,split", help="pinnings to run, shared first (default shared,split; "
                   "also none)")


def run(args: argparse.Namespace, driver_args: list[str]) -> int:
    pinnings = [x.strip() for x in args.pinnings.split(",") if x.strip()]
    if not pinnings or pinnings[0] != "shared" or len(pinnings) < 2 or not set(pinnings) <= set(PINNINGS):
        raise SystemExit(f"bench pinning: --pinnings must start with shared and name split and/or none, not "
                         f"{args.pinnings!r}")
    out = common.out_dir(args.results_dir, "pinning")
    results: dict[str, dict] = {}
    for pinning in pinnings:
        run_dir, minutes = common.run_driver(out / pinning, ["--servers", args.servers, "--client", "lean",
                                                             "--pinning", pinning, *driver_args])
        results[pinning] = {"run": str(run_dir.relative_to(out)), "minutes": minutes,
                            "servers": common.widths(common.build(run_dir))}
    shared = results["shared"]
    for pinning in pinnings[1:]:
        other = results[pinning]
        other["shared_narrower"] = {
            name: common.narrower_at_equal_time(other["servers"][name][1], other["minutes"], w[1], shared["minutes"])
            for name, w in shared["servers"].items() if name in other["servers"]}
        other["median"] = statistics.median(other["shared_narrower"].values()) if other["shared_narrower"] else None
    names = sorted(set().union(*(r["servers"] for r in results.values())))
    rows = [[n, *(common.us_pm(*results[p]["servers"][n]) if n in results[p]["servers"] else "-" for p in pinnings),
             *(f"{results[p]['shared_narrower'][n]:.1f}x" if n in results[p]["shared_narrower"] else "-"
               for p in pinnings[1:])] for n in names]
    cols = ("server", *(f"{p} [us] ({results[p]['minutes']:.1f} min)" for p in pinnings),
            *(f"shared narrower than {p}" for p in pinnings[1:]))
    table: tables.Table = (cols, rows, set(range(1, len(cols))))
    verdicts = [f"Against {p}: shared pinning's interval is {results[p]['median']:.1f}x as narrow at equal time "
                "(median over servers; above 1 shared wins)." for p in pinnings[1:] if results[p]["median"]]
    print(tables.render_text(table) + "\n" + "\n".join(verdicts))
    common.write(out, "pinning", f"Precision per minute by pinning: {', '.join(pinnings)}",
                 [common.md_table(table), *verdicts], results)
    return 0
