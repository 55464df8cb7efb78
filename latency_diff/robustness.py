"""Robustness benchmark: the same servers measured twice, quiet and beside the stall injector.

Runs the driver on the chosen servers with no other load, then again with the stall injector
(latency_diff/injector.py) burning in bursts on the servers' CPU, and compares the two runs server by
server: the diffs must agree within their intervals, and no interval may be more than MAX_WIDENING
times wider under the injector. Writes both run directories and robustness.md / robustness.json into
results/robustness-<UTC time>/, and prints the table.

Usage: scripts/bench.sh robustness [--servers LIST] [DRIVER OPTIONS...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from . import KIT_ROOT, model, report

DEFAULT_SERVERS = "undertow,tomcat-nio"
MAX_WIDENING = 2.0


def run_driver(results: Path, args: list[str]) -> Path:
    """One driver run into the fresh folder `results`; its run directory, or exit when it failed."""
    results.mkdir(parents=True)
    cmd = [sys.executable, "-m", "latency_diff.driver", "--results-dir", str(results), *args]
    code = subprocess.run(cmd, cwd=KIT_ROOT).returncode
    runs = [d for d in results.iterdir() if d.is_dir()]
    if code not in (0, 3) or len(runs) != 1:
        raise SystemExit(f"benchmark: the run in {results} failed (exit status {code}); see above")
    return runs[0]


def compare(quiet: model.RunResult, injected: model.RunResult) -> tuple[report.Table, dict]:
    rows, data = [], {}
    by_name = {s.name: s for s in injected.ranked}
    for q in quiet.ranked:
        i = by_name.get(q.name)
        if q.baseline or i is None or q.diff.half_width is None or i.diff.half_width is None:
            continue
        agree = bool(q.diff.ci95_low <= i.diff.ci95_high and i.diff.ci95_low <= q.diff.ci95_high)
        ratio = i.diff.half_width / q.diff.half_width if q.diff.half_width else float("inf")
        ok = agree and ratio <= MAX_WIDENING
        data[q.name] = {"quiet_ns": q.diff.to_dict(), "injected_ns": i.diff.to_dict(), "agree": agree,
                        "widening": ratio, "ok": ok}
        rows.append([q.name, f"{q.diff.mean / 1000:.2f} ± {q.diff.half_width / 1000:.2f}",
                     f"{i.diff.mean / 1000:.2f} ± {i.diff.half_width / 1000:.2f}", "yes" if agree else "NO",
                     f"{ratio:.2f}x", "yes" if ok else "NO"])
    cols = ("server", "quiet diff [us]", "injected diff [us]", "agree", "interval widening", "passes")
    return (cols, rows, {1, 2, 4}), data


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.sh robustness", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--servers", default=DEFAULT_SERVERS, help=f"servers to measure (default {DEFAULT_SERVERS}); "
                   "the ladder and the null pair are always in")
    p.add_argument("--results-dir", type=Path, default=KIT_ROOT / "results", help="where to write (default results/)")
    p.add_argument("--seed", type=int, default=1, help="the injector's burst pattern (default 1)")
    args, driver_args = p.parse_known_args(argv)
    out = args.results_dir / ("robustness-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    out.mkdir(parents=True)
    common = ["--servers", args.servers, "--allow-concurrent", *driver_args]
    quiet_dir = run_driver(out / "quiet", common)
    quiet = model.build(quiet_dir)
    cpu = quiet.settings.get("server_cpu")
    inj_cmd = [sys.executable, "-m", "latency_diff.injector", "--seconds", "7200", "--seed", str(args.seed)]
    injector = subprocess.Popen(inj_cmd + ([] if cpu is None else ["--cpu", str(cpu)]), cwd=KIT_ROOT)
    try:
        injected_dir = run_driver(out / "injected", common)
    finally:
        injector.terminate()
        injector.wait(10)
    injected = model.build(injected_dir)
    table, data = compare(quiet, injected)
    passed = all(d["ok"] for d in data.values())
    summary = (f"{sum(d['ok'] for d in data.values())} of {len(data)} rows agree within their intervals with at "
               f"most {MAX_WIDENING:.0f}x wider intervals under the injector")
    md = [f"# Robustness: {quiet_dir.relative_to(out)} (quiet) against {injected_dir.relative_to(out)} (stall "
          f"injector on CPU {cpu}, seed {args.seed})", "", report.render_md(table), "", summary, "",
          f"Quiet: {report.headline(quiet)}", "", f"Injected: {report.headline(injected)}", ""]
    (out / "robustness.md").write_text("\n".join(md), encoding="utf-8")
    (out / "robustness.json").write_text(json.dumps({"quiet": str(quiet_dir.relative_to(out)),
                                                     "injected": str(injected_dir.relative_to(out)),
                                                     "servers": data, "passed": passed}, indent=2) + "\n",
                                         encoding="utf-8")
    print(report.render_text(table))
    print(summary)
    print(f"Files: {out / 'robustness.md'}, {out / 'robustness.json'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
