"""Shards merged by ratio against one whole run: the JDK matrix of the core servers, here, one run after another.

The same servers and variants (bench.sh matrix jdks: the core servers on JDK 17, 21 and the run's own) run once as
a whole run and then as `--shards` shards (`run-all.sh --shard I/N`, one after another on this host, standing in
for N machines), which `analyze.py merge` puts into one table. For every row of the merged table, its ratio to the
dummy is set beside the whole run's: the two agree when their difference lies within the interval of a difference
of two independent estimates (the root of the sum of the squared half-widths). The page says how long each shard
took against the whole run (on N machines at once, the matrix takes as long as its longest shard).
"""

from __future__ import annotations

import argparse
import math
import subprocess

from .. import KIT_ROOT
from ..analysis import merge
from ..analysis.export import sentences, tables
from ..analysis.model import RunResult, ServerResult
from . import common, matrix


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shards", type=int, default=3, help="shards of the matrix (default 3)")


def ratio(s: ServerResult) -> tuple[float, float | None] | None:
    """(ratio to the dummy, its 95% half-width) of a row's headline client, None when the row has none."""
    c = s.clients.get(s.primary)
    if not s.valid or c is None or c.ratio is None:
        return None
    return c.ratio.mean, c.ratio.half_width


def agreement(whole: RunResult, merged: RunResult) -> tuple[tables.Table, list[dict]]:
    """Each merged row beside the whole run's: the table and its data."""
    rows, data = [], []
    for s in merged.ranked:
        if s.baseline:
            continue
        w = whole.server(s.name)
        m, o = ratio(s), (ratio(w) if w is not None else None)
        if m is None or o is None or m[1] is None or o[1] is None:
            why = "not in the whole run" if w is None else "no interval in one of them"
            rows.append([s.name, "-", "-", "-", "-", why])
            data.append({"server": s.name, "compared": False, "reason": why})
            continue
        diff, half = m[0] - o[0], math.hypot(m[1], o[1])
        agree = abs(diff) <= half
        rows.append([s.name, f"{m[0]:.3f} ± {m[1]:.3f}", f"{o[0]:.3f} ± {o[1]:.3f}", f"{diff:+.3f} ± {half:.3f}",
                     "yes" if m[0] - m[1] <= o[0] + o[1] and o[0] - o[1] <= m[0] + m[1] else "no",
                     "agree" if agree else "**differ**"])
        data.append({"server": s.name, "compared": True, "merged": list(m), "whole": list(o), "difference": diff,
                     "half_width": half, "agree": agree})
    cols = ("row", "merged ratio (95%)", "whole run's ratio (95%)", "merged - whole", "intervals overlap", "verdict")
    return (cols, rows, {1, 2, 3}), data


def run(args: argparse.Namespace, driver_args: list[str]) -> int:
    if args.shards < 2:
        raise SystemExit("fleet: --shards must be at least 2")
    servers, _ = matrix.plan("jdks")
    if subprocess.run([str(KIT_ROOT / "scripts" / "build.sh"), "--servers", ",".join(servers)]).returncode != 0:
        raise SystemExit("bench fleet: a variant did not build (see above)")
    out = common.out_dir(args.results_dir, "fleet")
    chosen = ["--servers", ",".join(servers), *driver_args]
    whole_dir, whole_minutes = common.run_driver(out / "whole", chosen)
    shard_dirs, shard_minutes = [], []
    for i in range(1, args.shards + 1):
        d, minutes = common.run_driver(out / f"shard-{i}", ["--shard", f"{i}/{args.shards}", *chosen])
        shard_dirs.append(d)
        shard_minutes.append(minutes)
    try:
        shards = merge.load(shard_dirs)
        merge.check_hosts(shards)
        merge.check_set(shards)
        merged = merge.merged(shards, "merged")
        merge.write(merge.out_dir(out / "merged"), merged, shards)
    except merge.MergeError as e:
        raise SystemExit(f"bench fleet: the shards do not merge: {e}") from e
    whole = common.build(whole_dir)
    table, data = agreement(whole, merged)
    compared = [d for d in data if d["compared"]]
    agreed = sum(d["agree"] for d in compared)
    longest = max(shard_minutes)
    lines = [
        f"- Rows whose merged ratio agrees with the whole run's within their intervals: **{agreed} of "
        f"{len(compared)}**; target every row: " + ("met." if agreed == len(compared) and compared else
                                                    f"**missed** by {len(compared) - agreed} rows."),
        f"- Minutes: the whole run {whole_minutes:.1f}; the shards " + ", ".join(f"{m:.1f}" for m in shard_minutes)
        + f" (together {sum(shard_minutes):.1f}). On {args.shards} machines at once the matrix takes its longest "
        f"shard, {longest:.1f} min: {longest / whole_minutes:.0%} of the whole run's time.",
        f"- Whole run: {sentences.headline(whole)}",
        f"- Merged: {sentences.headline(merged)}",
        "- Driver options of every run: " + (" ".join(driver_args) if driver_args else "none (the defaults)") + ".",
    ]
    print("\n".join(lines) + "\n" + tables.render_text(table))
    common.write(out, "fleet", f"Fleet: {args.shards} shards of the JDK matrix merged, against one whole run",
                 ["\n".join(lines), common.md_table(table)],
                 {"shards": args.shards, "driver_args": driver_args,
                  "whole": {"run": str(whole_dir.relative_to(out)), "minutes": whole_minutes},
                  "shard_runs": [{"run": str(d.relative_to(out)), "minutes": m}
                                 for d, m in zip(shard_dirs, shard_minutes, strict=True)],
                  "rows": data})
    return 0
