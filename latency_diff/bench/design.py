"""Precision per minute: this kit's design against an earlier commit's, on the same servers, quiet and disturbed.

Checks out the earlier commit (OLD_COMMIT: block ABBA quads, no scaling, no preparing lane) into a
temporary git worktree, builds it, and runs it and the current kit one after the other on the same
servers with the lean client, quiet and beside each injector. For each server it compares the 95%
interval widths at equal time: an interval narrows with the square root of the time spent, so the
ratio is (old half-width x sqrt(old minutes)) / (new half-width x sqrt(new minutes)); above 1 the
current design is narrower. The earlier kit's runs are converted to the current layout afterwards
(latency_diff.migrate), so that they stay a few files each.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from .. import KIT_ROOT, migrate
from ..export import tables
from . import common

#: The last commit of the block design (ABBA quads of single-connection blocks, unscaled diffs).
OLD_COMMIT = "e91f8a0"
CONDITIONS = ("quiet", "stall", "drift")


def old_widths(run: Path) -> dict[str, tuple[float, float]]:
    """server -> (diff, half-width) in ns, from the earlier kit's own summary.json."""
    data = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    out = {}
    for s in data["servers"]:
        d = s.get("diff_ns")
        if s.get("valid") and not s.get("baseline") and d and d.get("ci95_low") is not None:
            out[s["name"]] = (d["mean"], (d["ci95_high"] - d["ci95_low"]) / 2)
    return out


def compare(old: dict[str, tuple[float, float]], old_min: float, new: dict[str, tuple[float, float]],
            new_min: float) -> dict:
    rows = {}
    for name in sorted(set(old) & set(new)):
        (od, ow), (nd, nw) = old[name], new[name]
        rows[name] = {"old_diff_ns": od, "old_half_width_ns": ow, "new_diff_ns": nd, "new_half_width_ns": nw,
                      "narrower_at_equal_time": common.narrower_at_equal_time(ow, old_min, nw, new_min)}
    return {"old_minutes": old_min, "new_minutes": new_min, "servers": rows,
            "median": statistics.median(r["narrower_at_equal_time"] for r in rows.values()) if rows else None,
            "least": min((r["narrower_at_equal_time"] for r in rows.values()), default=None)}


def table(result: dict) -> tables.Table:
    rows = [[name, common.us_pm(r["old_diff_ns"], r["old_half_width_ns"]),
             common.us_pm(r["new_diff_ns"], r["new_half_width_ns"]), f"{r['narrower_at_equal_time']:.1f}x"]
            for name, r in result["servers"].items()]
    cols = ("server", f"{OLD_COMMIT} [us] ({result['old_minutes']:.1f} min)",
            f"current [us] ({result['new_minutes']:.1f} min)", "narrower at equal time")
    return cols, rows, {1, 2, 3}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--servers", default=common.CORE, help=f"servers (default {common.CORE})")
    p.add_argument("--conditions", default=",".join(CONDITIONS), help="quiet and/or injectors (default "
                   "quiet,stall,drift)")
    p.add_argument("--old-commit", default=OLD_COMMIT, help=f"the earlier commit (default {OLD_COMMIT})")


def _old_kit(tmp: Path, commit: str) -> Path:
    kit = tmp / "kit"
    subprocess.run(["git", "-C", str(KIT_ROOT), "worktree", "add", "--detach", str(kit), commit], check=True)
    (kit / ".venv").symlink_to(KIT_ROOT / ".venv")  # the same pinned packages
    subprocess.run([str(kit / "scripts" / "build.sh")], cwd=kit, check=True)
    return kit


def run(args: argparse.Namespace, driver_args: list[str]) -> int:
    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    if not conditions or not set(conditions) <= set(CONDITIONS):
        raise SystemExit(f"bench design: --conditions must name quiet, stall or drift, not {args.conditions!r}")
    out = common.out_dir(args.results_dir, "design")
    tmp = Path(tempfile.mkdtemp(prefix="latency-diff-old-"))
    common_args = ["--servers", args.servers, "--client", "lean", *driver_args]
    results: dict[str, dict] = {}
    try:
        kit = _old_kit(tmp, args.old_commit)
        cpus = None
        for condition in conditions:
            mode = None if condition == "quiet" else condition
            cpu = None if cpus is None or mode is None else common.injector_cpu(mode, *cpus)
            with common.injector(mode, cpu):
                old_dir, old_min = common.run_driver(out / condition / "old", common_args, kit=kit,
                                                     python=str(KIT_ROOT / ".venv" / "bin" / "python"))
                new_dir, new_min = common.run_driver(out / condition / "new", common_args)
            new = common.build(new_dir)
            cpus = cpus or (new.settings.get("server_cpu"), new.settings.get("prepare_cpu"))
            results[condition] = {**compare(old_widths(old_dir), old_min, common.widths(new), new_min),
                                  "old_run": str(old_dir.relative_to(out)), "new_run": str(new_dir.relative_to(out)),
                                  "injector_cpu": cpu}
            migrate.migrate(old_dir)
            print(f"{condition}:\n{tables.render_text(table(results[condition]))}\n")
    finally:
        subprocess.run(["git", "-C", str(KIT_ROOT), "worktree", "remove", "--force", str(tmp / "kit")], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    parts = []
    for condition, result in results.items():
        parts += [f"## {condition}", common.md_table(table(result)),
                  f"The current design's interval is {result['median']:.1f}x narrower at equal time (median over "
                  f"servers; least {result['least']:.1f}x)."]
    parts.append(f"Each design measured the same servers with the lean client, {args.old_commit} first; the ratio is "
                 "(old half-width x sqrt(old minutes)) / (new half-width x sqrt(new minutes)).")
    common.write(out, "design", f"Precision per minute: {args.old_commit} against the current design", parts,
                 {"old_commit": args.old_commit, **results})
    return 0
