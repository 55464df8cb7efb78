"""Precision per minute: the single-server design against paired measurement, on the same servers.

Checks out the kit's last single-server commit (OLD_DESIGN_COMMIT) into a temporary git worktree,
builds it, and runs it and the current kit one after the other on the same servers with the lean
client, quiet and then beside the stall injector. For each server it compares the 95% interval
widths at equal time: an interval narrows with the square root of the time spent, so the ratio is
(old half-width * sqrt(old minutes)) / (new half-width * sqrt(new minutes)); above 1 the paired
design is narrower. Writes designbench.md and designbench.json into results/designbench-<UTC time>/.

Usage: scripts/bench.sh design [--servers LIST] [--no-injector]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import KIT_ROOT, model, report

#: The last commit of the single-server design (one server at a time, trials in fresh processes).
OLD_DESIGN_COMMIT = "a477c9b"
DEFAULT_SERVERS = "undertow,tomcat-nio"


def _timed(cmd: list[str], cwd: Path) -> float:
    start = time.monotonic()
    code = subprocess.run(cmd, cwd=cwd).returncode
    if code not in (0, 3):
        raise SystemExit(f"designbench: {' '.join(cmd[:2])} failed with status {code}; see above")
    return (time.monotonic() - start) / 60


def _only_run(results: Path) -> Path:
    (run,) = [d for d in results.iterdir() if d.is_dir()]
    return run


def old_widths(run: Path) -> dict[str, tuple[float, float]]:
    """server -> (diff, half-width) in ns from an old-format summary.json (its mean diff, Welch interval)."""
    data = json.loads((run / "summary.json").read_text())
    out = {}
    for s in data["servers"]:
        d = s.get("diff_ns")
        if s.get("valid") and not s.get("baseline") and d and d.get("ci95_low") is not None:
            out[s["name"]] = (d["mean"], (d["ci95_high"] - d["ci95_low"]) / 2)
    return out


def new_widths(run: Path) -> dict[str, tuple[float, float]]:
    r = model.build(run)
    return {s.name: (s.diff.mean, s.diff.half_width) for s in r.ranked
            if not s.baseline and s.diff.half_width is not None}


def one_condition(out: Path, old_kit: Path, servers: str, injector: bool, cpu: int | None) -> dict:
    args = ["--servers", servers, "--client", "lean", "--allow-concurrent"]
    inj = None
    if injector:
        cmd = [sys.executable, "-m", "latency_diff.injector", "--seconds", "7200"]
        inj = subprocess.Popen(cmd + ([] if cpu is None else ["--cpu", str(cpu)]), cwd=KIT_ROOT)
    try:
        t_old = _timed([str(old_kit / "scripts" / "run-all.sh"), *args, "--results-dir", str(out / "old")], old_kit)
        t_new = _timed([sys.executable, "-m", "latency_diff.driver", *args, "--results-dir", str(out / "new")],
                       KIT_ROOT)
    finally:
        if inj is not None:
            inj.terminate()
            inj.wait(10)
    old, new = old_widths(_only_run(out / "old")), new_widths(_only_run(out / "new"))
    rows = {}
    for name in sorted(set(old) & set(new)):
        (od, ow), (nd, nw) = old[name], new[name]
        ratio = (ow * math.sqrt(t_old)) / (nw * math.sqrt(t_new)) if nw else float("inf")
        rows[name] = {"old_diff_ns": od, "old_half_width_ns": ow, "new_diff_ns": nd, "new_half_width_ns": nw,
                      "ratio_at_equal_time": ratio}
    return {"old_minutes": t_old, "new_minutes": t_new, "servers": rows,
            "median_ratio": statistics.median(r["ratio_at_equal_time"] for r in rows.values()) if rows else None}


def _table(result: dict) -> report.Table:
    rows = [[name, f"{r['old_diff_ns'] / 1000:.2f} ± {r['old_half_width_ns'] / 1000:.2f}",
             f"{r['new_diff_ns'] / 1000:.2f} ± {r['new_half_width_ns'] / 1000:.2f}", f"{r['ratio_at_equal_time']:.1f}x"]
            for name, r in result["servers"].items()]
    cols = ("server", f"single-server [us] ({result['old_minutes']:.1f} min)",
            f"paired [us] ({result['new_minutes']:.1f} min)", "narrower at equal time")
    return cols, rows, {1, 2, 3}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.sh design", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--servers", default=DEFAULT_SERVERS, help=f"servers (default {DEFAULT_SERVERS}); both designs "
                   "also measure their baseline ladder")
    p.add_argument("--no-injector", action="store_true", help="only the quiet comparison")
    p.add_argument("--results-dir", type=Path, default=KIT_ROOT / "results", help="where to write (default results/)")
    args = p.parse_args(argv)
    out = args.results_dir / ("designbench-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    out.mkdir(parents=True)
    tmp = Path(tempfile.mkdtemp(prefix="latency-diff-old-"))
    old_kit = tmp / "kit"
    try:
        subprocess.run(["git", "-C", str(KIT_ROOT), "worktree", "add", "--detach", str(old_kit), OLD_DESIGN_COMMIT],
                       check=True)
        subprocess.run([str(old_kit / "scripts" / "build.sh")], cwd=old_kit, check=True)
        (old_kit / ".venv").symlink_to(KIT_ROOT / ".venv")  # the same pinned packages
        cpu = None
        results = {}
        for condition in ("quiet",) + (() if args.no_injector else ("injector",)):
            results[condition] = one_condition(out / condition, old_kit, args.servers, condition == "injector",
                                               cpu)
            if cpu is None:
                cpu = json.loads((_only_run(out / condition / "new") / "run.json").read_text())["settings"].get(
                    "server_cpu")
    finally:
        subprocess.run(["git", "-C", str(KIT_ROOT), "worktree", "remove", "--force", str(old_kit)], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    md = [f"# Precision per minute: the single-server design ({OLD_DESIGN_COMMIT}) against paired measurement", ""]
    for condition, result in results.items():
        md += [f"## {condition}", "", report.render_md(_table(result)), "",
               f"Median: the paired design's interval is {result['median_ratio']:.1f}x narrower at equal time.", ""]
        print(f"{condition}:\n{report.render_text(_table(result))}\nmedian {result['median_ratio']:.1f}x\n")
    md += ["Each design measured the same servers with the lean client, the old one first; the ratio is (old "
           "half-width x sqrt(old minutes)) / (new half-width x sqrt(new minutes)).", ""]
    (out / "designbench.md").write_text("\n".join(md), encoding="utf-8")
    (out / "designbench.json").write_text(json.dumps({"old_design_commit": OLD_DESIGN_COMMIT, **results}, indent=2)
                                          + "\n", encoding="utf-8")
    print(f"Files: {out / 'designbench.md'}, {out / 'designbench.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
