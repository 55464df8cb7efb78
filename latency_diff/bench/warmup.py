"""What a pair's preparation costs and buys: warm-up lengths, the ways to wait for the JIT, preparing ahead.

The driver runs once per configuration on the same servers: --warmup requests and --settle mode
(queue: until the JIT's compile queue is empty; cpu: until the compiler threads' CPU time stood
still for 1 s), and --prepare-ahead (on: the next pair's processes are prepared on the other CPU while
the measured CPU measures). For each it reports the time per pair, the share of it spent measuring,
the mean preparation time of a server process, the JIT's CPU time while measuring, and whether each
diff agrees with the first configuration's within the intervals.
"""

from __future__ import annotations

import argparse
import statistics

from .. import rundir
from ..export import tables
from ..model import RunResult
from . import common

#: warm-up requests / settle mode / prepare ahead
DEFAULT_CONFIGS = "100000/cpu/off,100000/queue/off,100000/queue/on,30000/queue/on"


def parse_configs(text: str) -> list[tuple[int, str, str]]:
    out = []
    for part in text.split(","):
        try:
            warmup, settle, ahead = part.strip().split("/")
            out.append((int(warmup), settle, ahead))
        except ValueError as e:
            raise SystemExit(f"bench warmup: {part!r} is not WARMUP/SETTLE/AHEAD (e.g. 100000/queue/on)") from e
        if settle not in ("queue", "cpu", "none") or ahead not in ("on", "off"):
            raise SystemExit(f"bench warmup: {part!r}: settle is queue, cpu or none; ahead is on or off")
    return out


def figures(r: RunResult, minutes: float) -> dict:
    servers = [s for s in r.servers if not s.baseline and s.valid]
    pairs = [p for s in servers for p in s.pairs if p.valid]
    jit = [p.costs["server"].jit_cpu_ms / p.costs["server"].wall_s for p in pairs if "server" in p.costs
           and p.costs["server"].wall_s]
    return {"minutes": minutes, "pairs": len(pairs), "seconds_per_pair": r.pair_seconds / max(len(pairs), 1),
            "measure_share": r.measure_share, "jit_ms_per_s_measuring": statistics.fmean(jit) if jit else None,
            "diffs": common.widths(r)}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--servers", default=common.CORE, help=f"servers (default {common.CORE})")
    p.add_argument("--configs", default=DEFAULT_CONFIGS, help=f"WARMUP/SETTLE/AHEAD, comma-separated (default "
                   f"{DEFAULT_CONFIGS})")


def run(args: argparse.Namespace, driver_args: list[str]) -> int:
    configs = parse_configs(args.configs)
    out = common.out_dir(args.results_dir, "warmup")
    results = {}
    for warmup, settle, ahead in configs:
        name = f"{warmup}-{settle}-{ahead}"
        run_dir, minutes = common.run_driver(out / name, ["--servers", args.servers, "--warmup", str(warmup),
                                                          "--settle", settle, "--prepare-ahead", ahead, *driver_args])
        prepare = [rec.process.prepare_s for rec in rundir.load(run_dir).pairs
                   if rec.process is not None and rec.process.prepare_s is not None]
        results[name] = {"run": str(run_dir.relative_to(out)), **figures(common.build(run_dir), minutes),
                         "prepare_s": statistics.fmean(prepare) if prepare else None}
    first_name = next(iter(results))
    first = results[first_name]["diffs"]
    rows = []
    for name, f in results.items():
        agree = [n for n, (d, h) in f["diffs"].items() if n in first and abs(d - first[n][0]) <= h + first[n][1]]
        f["agree_with_first"] = f"{len(agree)} of {len(set(f['diffs']) & set(first))}"
        rows.append([name, f"{f['minutes']:.1f}", str(f["pairs"]), f"{f['seconds_per_pair']:.1f}",
                     "-" if f["prepare_s"] is None else f"{f['prepare_s']:.1f}",
                     "-" if f["measure_share"] is None else f"{f['measure_share']:.0%}",
                     "-" if f["jit_ms_per_s_measuring"] is None else f"{f['jit_ms_per_s_measuring']:.1f}",
                     f["agree_with_first"]])
    table: tables.Table = (("configuration (warm-up/settle/ahead)", "minutes", "pairs", "s per pair",
                            "s to prepare a server", "measuring", "JIT ms per s measuring",
                            f"diffs agreeing with {first_name}"), rows, {1, 2, 3, 4, 5, 6})
    diffs = [[n, *(common.us_pm(*results[c]["diffs"][n]) if n in results[c]["diffs"] else "-" for c in results)]
             for n in sorted(first)]
    diff_table: tables.Table = (("server", *results), diffs, set(range(1, len(results) + 1)))
    print(tables.render_text(table) + "\n\n" + tables.render_text(diff_table))
    common.write(out, "warmup", "What a pair's preparation costs: warm-up, JIT wait, preparing ahead",
                 [common.md_table(table), common.md_table(diff_table)], results)
    return 0
