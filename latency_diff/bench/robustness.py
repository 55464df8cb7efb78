"""Robustness: the same servers quiet, beside the stall injector and beside the drift injector.

Three default runs one after the other: quiet; with the stall injector bursting on the measured CPU;
with the drift injector streaming memory on the other CPU for 20-60 s at a time. Each disturbed run is
compared with the quiet one server by server: the diffs must agree within their intervals, and no
interval may be more than MAX_WIDENING times as wide.
"""

from __future__ import annotations

import argparse

from ..analysis.export import sentences, tables
from ..analysis.model import RunResult
from . import common

MAX_WIDENING = 1.5
CONDITIONS = ("stall", "drift")


def compare(quiet: RunResult, disturbed: RunResult) -> tuple[tables.Table, dict]:
    rows, data = [], {}
    by_name = {s.name: s for s in disturbed.ranked}
    for q in quiet.ranked:
        i = by_name.get(q.name)
        if q.baseline or i is None or q.diff.half_width is None or i.diff.half_width is None:
            continue
        agree = bool(q.diff.ci95_low <= i.diff.ci95_high and i.diff.ci95_low <= q.diff.ci95_high)
        ratio = i.diff.half_width / q.diff.half_width if q.diff.half_width else float("inf")
        ok = agree and ratio <= MAX_WIDENING
        data[q.name] = {"quiet_ns": q.diff.to_dict(), "disturbed_ns": i.diff.to_dict(), "agree": agree,
                        "widening": ratio, "ok": ok}
        rows.append([q.name, common.us_pm(q.diff.mean, q.diff.half_width), common.us_pm(i.diff.mean, i.diff.half_width),
                     "yes" if agree else "NO", f"{ratio:.2f}x", "yes" if ok else "NO"])
    cols = ("server", "quiet diff [us]", "disturbed diff [us]", "agree", "interval widening", "passes")
    return (cols, rows, {1, 2, 4}), data


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--servers", default=common.CORE, help=f"servers (default {common.CORE}); the ladder and the null "
                   "pair are always in")
    p.add_argument("--conditions", default=",".join(CONDITIONS), help="injectors to compare with the quiet run "
                   "(default stall,drift)")
    p.add_argument("--seed", type=int, default=1, help="the injectors' pattern (default 1)")


def run(args: argparse.Namespace, driver_args: list[str]) -> int:
    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    if not conditions or not set(conditions) <= set(CONDITIONS):
        raise SystemExit(f"bench robustness: --conditions must name stall and/or drift, not {args.conditions!r}")
    out = common.out_dir(args.results_dir, "robustness")
    base_args = ["--servers", args.servers, *driver_args]
    quiet_dir, quiet_min = common.run_driver(out / "quiet", base_args)
    quiet = common.build(quiet_dir)
    measured, other = quiet.settings.get("server_cpu"), quiet.settings.get("prepare_cpu")
    parts = [f"Quiet: {sentences.headline(quiet)} ({quiet_min:.1f} min)"]
    data: dict = {"quiet": str(quiet_dir.relative_to(out))}
    passed = True
    for condition in conditions:
        cpu = common.injector_cpu(condition, measured, other)
        with common.injector(condition, cpu, args.seed):
            run_dir, minutes = common.run_driver(out / condition, base_args)
        result = common.build(run_dir)
        table, rows = compare(quiet, result)
        ok = all(d["ok"] for d in rows.values())
        passed &= ok
        verdict = (f"{sum(d['ok'] for d in rows.values())} of {len(rows)} rows agree with the quiet run within their "
                   f"intervals, with intervals at most {MAX_WIDENING}x as wide")
        parts += [f"## {condition} injector (on CPU {cpu}, seed {args.seed})", common.md_table(table), verdict,
                  f"Run: {sentences.headline(result)} ({minutes:.1f} min)"]
        data[condition] = {"run": str(run_dir.relative_to(out)), "cpu": cpu, "minutes": minutes, "servers": rows,
                           "passed": ok}
        print(f"{condition}:\n{tables.render_text(table)}\n{verdict}\n")
    data["passed"] = passed
    common.write(out, "robustness", "Robustness: quiet against the stall and drift injectors", parts, data)
    return 0 if passed else 1
