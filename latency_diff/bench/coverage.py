"""Coverage: K default runs back to back; how often does a run's 95% interval hold the server's truth?

An interval is a claim of coverage: 95% of runs' intervals should hold the true value. For a server, the truth of a
run is the mean ratio of its pairs in the *other* runs (leave one run out, so that a run is never judged against
itself); for a control (control-spin, control-modes), the diff its processes timed themselves. Each run is a normal
default run of the chosen servers (by default the hard ones, whose fresh JVMs spread widely or fall into speed
modes, the core servers and the two controls), stopped by the driver's own rule. Per server: in how many runs each
interval (the ratio's, and the us one at the run's own reference) holds the truth, how many of its met rows do, and
its band: its pairs' sd over its target below 1 ("narrow") or at least 1 ("wide").

Targets (reported, never asserted; the targets need at least 10 runs): met rows hold their truth in at least 90% of
cases for the wide servers, in at least 75% for each wide server, and in at least 93% over all met rows; each control's
interval holds its truth in at least 90% of its runs. Also reported: all (server, run) intervals, met or not, for the
us diff and the ratio (at least 90%), and how many rows of the wide servers met at all.

`--from DIR` computes the page again from the runs under DIR (every folder with a run.json: made by
this benchmark in one go, or in pieces and gathered), without measuring.
"""

from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

from ..analysis.export import sentences, tables
from ..analysis.model import RunResult
from . import common

#: At least this share of every (server, run) interval holds the server's truth.
TARGET_OVERALL = 0.90
#: Met rows holding their truth: of the wide servers, of each wide server, of all servers.
TARGET_MET_WIDE, TARGET_MET_WIDE_SERVER, TARGET_MET_ALL = 0.90, 0.75, 0.93
#: A control's interval holds its known truth in at least this share of its runs.
TARGET_CONTROL = 0.90
#: The targets need at least this many runs.
RECOMMENDED_RUNS = 10
#: The hard servers (spread at least their target on some host), the core ones and the controls.
SERVERS = ",".join(dict.fromkeys(["rapidoid", "ktor-cio", "jetty-vt", "spring-mvc", "helidon", "tomcat-nio2",
                                   *common.CORE.split(","), "control-spin", "control-modes"]))
#: The two estimates whose coverage is counted: the us diff and the ratio.
MEASURES = ("diff", "ratio")


def rows(runs: list[RunResult]) -> dict[str, list[dict]]:
    """server -> one entry per run in which it is a valid row with an interval (the dummy baseline left out): the
    run's number (1-based), its diff (mean, low, high) in ns, its ratio (mean, low, high), its pairs' ratios, the run's
    reference round trip, its target and whether it met it, its known diff (a control's), and why it stopped."""
    out: dict[str, list[dict]] = {}
    for i, r in enumerate(runs, 1):
        for s in r.ranked:
            c = s.clients.get(s.primary)
            if s.baseline or c is None or s.diff is None or s.diff.ci95_low is None or c.ratio.ci95_low is None:
                continue
            stop = getattr(s, "stop", None)  # why the schedule stopped adding pairs, in result models that have it
            out.setdefault(s.name, []).append({
                "run": i, "diff_ns": [s.diff.mean, s.diff.ci95_low, s.diff.ci95_high],
                "ratio": [c.ratio.mean, c.ratio.ci95_low, c.ratio.ci95_high], "pairs": len(c.estimates),
                "ratios": list(c.ratios), "ref_ns": c.ref, "target_ns": s.target, "met": bool(s.target_met),
                "truth_ns": (s.truth or {}).get("ns"), "stop": None if stop is None else str(stop)})
    return out


def server_coverage(entries: list[dict]) -> dict:
    """One server's runs: each run's truth and whether its intervals (ratio, and us at its own reference) hold it. The
    truth is the pooled mean ratio of the server's pairs in the *other* runs (leave one run out), or for a control its
    known diff (controls.py). Also: the met rows and how many of them hold it, and the server's band: "wide" when its
    pairs' sd over all runs is at least its target (both in ratio units), else "narrow"."""
    out: dict = {"runs": len(entries)}
    truths = []
    for e in entries:
        if e["truth_ns"] is not None:
            truths.append(1 + e["truth_ns"] / e["ref_ns"])
            continue
        others = [x for o in entries if o is not e for x in o["ratios"]]
        truths.append(statistics.fmean(others) if others else None)
    for m, key in zip(MEASURES, ("diff_ns", "ratio"), strict=True):
        judged = [(e, t if m == "ratio" else (t - 1) * e["ref_ns"]) for e, t in zip(entries, truths, strict=True)
                  if t is not None]
        missed = [e["run"] for e, t in judged if not e[key][1] <= t <= e[key][2]]
        out[m] = {"truth": [t for _, t in judged], "covered": len(judged) - len(missed), "of": len(judged),
                  "missed_runs": missed}
    met = [(e, t) for e, t in zip(entries, truths, strict=True) if e["met"] and t is not None]
    out["met"] = {"rows": len(met), "covered": sum(e["ratio"][1] <= t <= e["ratio"][2] for e, t in met)}
    pooled = [x for e in entries for x in e["ratios"]]
    goal = statistics.median(e["target_ns"] / e["ref_ns"] for e in entries if e["target_ns"] is not None) \
        if any(e["target_ns"] is not None for e in entries) else None
    out["band"] = "wide" if goal and len(pooled) > 1 and statistics.stdev(pooled) >= goal else "narrow"
    out["control"] = any(e["truth_ns"] is not None for e in entries)
    out["pairs"] = [min(e["pairs"] for e in entries), max(e["pairs"] for e in entries)]
    stops = [e["stop"] for e in entries if e["stop"] is not None]
    out["stops"] = {why: stops.count(why) for why in sorted(set(stops))} if stops else None
    return out


def coverage(runs: list[RunResult]) -> dict:
    """Per server and overall: how many runs' intervals hold the truth (server_coverage), for the us diff and the
    ratio; and of the met rows, overall and per band."""
    servers = {name: server_coverage(entries) for name, entries in rows(runs).items()}
    overall: dict = {}
    for m in MEASURES:
        covered, total = sum(s[m]["covered"] for s in servers.values()), sum(s[m]["of"] for s in servers.values())
        overall[m] = {"covered": covered, "of": total, "share": covered / total if total else None}
    for band in ("narrow", "wide"):
        met = [s["met"] for s in servers.values() if s["band"] == band]
        rows_, held = sum(x["rows"] for x in met), sum(x["covered"] for x in met)
        overall[f"met {band}"] = {"covered": held, "of": rows_, "share": held / rows_ if rows_ else None}
    return {"runs": len(runs), "servers": servers, "overall": overall}


def _verdict(share: float | None, target: float) -> str:
    if share is None:
        return "nothing to judge"
    gap = target - share
    return "met" if gap <= 1e-12 else f"missed by {gap * 100:.1f} percentage points"


def _share(covered: int, of: int) -> float | None:
    return covered / of if of else None


def verdicts(cov: dict) -> list[str]:
    """The targets, met or missed by how much; a warning first when there are too few runs to judge them."""
    out = []
    servers = cov["servers"]
    if cov["runs"] < RECOMMENDED_RUNS:
        out.append(f"Only {cov['runs']} runs: the targets need at least {RECOMMENDED_RUNS} (--runs "
                   f"{RECOMMENDED_RUNS}); read these shares as indicative.")
    wide = {n: s for n, s in servers.items() if s["band"] == "wide"}
    o = cov["overall"]["met wide"]
    rows_wide = sum(s["ratio"]["of"] for s in wide.values())
    share = "" if o["share"] is None else f", {o['share']:.1%}"
    out.append(f"Met rows of the wide servers (pair sd at least their target): {o['covered']} of {o['of']} hold the "
               f"truth{share}; "
               f"target at least {TARGET_MET_WIDE:.0%}: {_verdict(o['share'], TARGET_MET_WIDE)}. "
               f"{o['of']} of their {rows_wide} rows met their target; the rest stopped unmet (out of reach or on "
               "the budget).")
    short = [f"{n} ({s['met']['covered']} of {s['met']['rows']})" for n, s in wide.items()
             if s["met"]["rows"] and s["met"]["covered"] < TARGET_MET_WIDE_SERVER * s["met"]["rows"] - 1e-9]
    out.append(f"Each wide server's met rows, at least {TARGET_MET_WIDE_SERVER:.0%}: " + (
        "met." if not short else f"missed for {', '.join(short)}."))
    held = sum(s["met"]["covered"] for s in servers.values())
    met = sum(s["met"]["rows"] for s in servers.values())
    out.append(f"All met rows: {held} of {met} hold the truth; target at least {TARGET_MET_ALL:.0%}: "
               f"{_verdict(_share(held, met), TARGET_MET_ALL)}.")
    for n, s in servers.items():
        if s["control"]:
            r = s["ratio"]
            out.append(f"Control {n}: its interval holds its known truth in {r['covered']} of {r['of']} runs; target "
                       f"at least {TARGET_CONTROL:.0%}: {_verdict(_share(r['covered'], r['of']), TARGET_CONTROL)}.")
    for m, label in zip(MEASURES, ("the us diff", "the ratio"), strict=True):
        a = cov["overall"][m]
        out.append(f"All rows, met or not, {label}: {a['covered']} of {a['of']} (server, run) intervals hold their "
                   f"truth; target at least {TARGET_OVERALL:.0%}: {_verdict(a['share'], TARGET_OVERALL)}.")
    return out


def table(cov: dict) -> tables.Table:
    stops = any(s["stops"] for s in cov["servers"].values())
    body = []
    for name, s in cov["servers"].items():
        lo, hi = s["pairs"]
        truth = statistics.fmean(s["ratio"]["truth"]) if s["ratio"]["truth"] else None
        row = [name + (" (control)" if s["control"] else ""), s["band"], "-" if truth is None else f"{truth:.4f}",
               f"{s['ratio']['covered']} of {s['ratio']['of']}", f"{s['met']['covered']} of {s['met']['rows']}",
               f"{s['diff']['covered']} of {s['diff']['of']}", str(lo) if lo == hi else f"{lo}-{hi}"]
        if stops:
            row.append(", ".join(f"{why} {n}" for why, n in (s["stops"] or {}).items()) or "-")
        body.append(row)
    cols = ("server", "band", "truth (ratio, mean)", "covered (ratio)", "met rows covered", "covered (us)",
            "pairs per run", *(("stopped because (runs)",) if stops else ()))
    return cols, body, {2, 3, 4, 5, 6}


def _rel(d: Path, out: Path) -> str:
    return str(d.relative_to(out)) if d.is_relative_to(out) else str(d)


def run_table(runs: list[tuple[Path, RunResult]], out: Path) -> tables.Table:
    body = [[str(i), _rel(d, out), r.status,
             tables.us(r.ref.get(r.primary)), str(sum(1 for s in r.servers if s.valid and not s.baseline)),
             "-" if r.seconds is None else f"{r.seconds / 60:.1f}"] for i, (d, r) in enumerate(runs, 1)]
    cols = ("run", "folder", "status", "reference round trip [us]", "valid rows", "minutes measuring")
    return cols, body, {0, 3, 4, 5}


def plot(entries: dict[str, list[dict]], cov: dict, path: Path) -> Path | None:
    """One panel per server: each run's us diff with its 95% interval (red where it misses the median), the median
    over runs as a line. PNG at path; None without a server."""
    if not entries:
        return None
    import matplotlib
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    ncols = min(3, len(entries))
    nrows = math.ceil(len(entries) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 2.8 * nrows), squeeze=False)
    for ax, (name, es) in zip(axes.flat, entries.items(), strict=False):
        s = cov["servers"][name]
        for e in es:
            mean, low, high = e["ratio"]
            missed = e["run"] in s["ratio"]["missed_runs"]
            ax.errorbar([e["run"]], [mean], yerr=[[mean - low], [high - mean]], fmt="o",
                        color="#c0504d" if missed else "#3b75af", capsize=3)
        if s["ratio"]["truth"]:
            ax.axhline(statistics.fmean(s["ratio"]["truth"]), color="black", linewidth=0.8, linestyle="--")
        ax.set_title(f"{name}: {s['ratio']['covered']} of {s['ratio']['of']}", fontsize=10)
        ax.set_xticks([e["run"] for e in es])
        ax.set_xlabel("run")
        ax.set_ylabel("ratio")
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(entries):]:
        ax.set_visible(False)
    fig.suptitle("Each run's ratio with its 95% interval; dashed: the truth (the other runs' mean); red: it misses")
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def find_runs(folder: Path) -> list[Path]:
    """Every run directory under folder (a directory with a run.json), oldest first by name (the driver names them
    by their UTC start), then by path."""
    if not folder.is_dir():
        raise SystemExit(f"bench coverage: {folder} is not a folder")
    return sorted((p.parent for p in folder.rglob("run.json")), key=lambda d: (d.name, str(d)))


def report(out: Path, built: list[tuple[Path, RunResult]], planned: int | None = None) -> dict:
    """coverage.md, coverage.json and coverage.png in `out`, from the complete runs of `built`; returns the data."""
    used = [(d, r) for d, r in built if r.status == "complete"]
    left_out = [(d, r) for d, r in built if r.status != "complete"]
    runs = [r for _, r in used]
    cov = coverage(runs)
    lines = verdicts(cov)
    png = plot(rows(runs), cov, out / "coverage.png")
    so_far = f" ({len(used)} of {planned} so far)" if planned is not None and len(used) < planned else ""
    parts = [f"{len(used)} default runs{so_far}, one after the other. For each server and run, the truth is the mean "
             "ratio of the server's pairs in the other runs (leave one run out), or a control's known diff; a run "
             "covers when its 95% interval holds it. The us interval is the ratio's at the run's own reference round "
             "trip (below). Servers are banded by their pairs' spread over their target; met rows are counted apart.",
             "\n".join(f"- {x}" for x in lines), common.md_table(table(cov))]
    if png is not None:
        parts.append("![Each run's interval against its truth](coverage.png)")
    parts += ["## The runs", common.md_table(run_table(used, out))]
    if left_out:
        parts.append("Left out (not complete): " + ", ".join(
            f"{_rel(d, out)} ({r.status}: {r.reason or 'no reason recorded'})" for d, r in left_out))
    if used:
        parts.append(f"First run: {sentences.headline(used[0][1])}")
    print(tables.render_text(table(cov)) + "\n" + "\n".join(lines))
    data = {**cov, "targets": {"overall": TARGET_OVERALL, "met_wide": TARGET_MET_WIDE,
                               "met_wide_server": TARGET_MET_WIDE_SERVER, "met_all": TARGET_MET_ALL,
                               "control": TARGET_CONTROL, "runs": RECOMMENDED_RUNS},
            "verdicts": lines,
            "run_dirs": [{"folder": _rel(d, out), "run_id": r.run_id,
                          "ref_ns": r.ref.get(r.primary), "seconds": r.seconds} for d, r in used],
            "left_out": [{"folder": _rel(d, out), "status": r.status,
                          "reason": r.reason} for d, r in left_out]}
    common.write(out, "coverage", "Coverage: does each run's interval hold the server's truth?", parts, data)
    return data


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--servers", default=SERVERS, help=f"servers (default {SERVERS}); the ladder comes with every run")
    p.add_argument("--runs", type=int, default=RECOMMENDED_RUNS, metavar="K", help=f"default runs, back to back "
                   f"(default {RECOMMENDED_RUNS}; at least 2, and the targets need {RECOMMENDED_RUNS})")
    p.add_argument("--from", dest="from_dir", type=Path, metavar="DIR", help="measure nothing: compute the page again "
                   "from the runs under DIR (e.g. an earlier results/coverage-<time>/, or runs gathered into one "
                   "folder), and write it there")


def run(args: argparse.Namespace, driver_args: list[str]) -> int:
    if args.from_dir is not None:
        if driver_args:
            raise SystemExit(f"bench coverage: --from measures nothing; drop the driver options "
                             f"{' '.join(driver_args)}")
        dirs = find_runs(args.from_dir)
        if len(dirs) < 2:
            raise SystemExit(f"bench coverage: {args.from_dir} holds {len(dirs)} run(s); coverage needs at least 2")
        report(args.from_dir, [(d, common.build(d)) for d in dirs])
        return 0
    if args.runs < 2:
        raise SystemExit(f"bench coverage: --runs {args.runs}: at least 2 (the targets need {RECOMMENDED_RUNS})")
    out = common.out_dir(args.results_dir, "coverage")
    print(f"bench coverage: {args.runs} default runs of {args.servers} and the ladder, one after the other, into "
          f"{out}; each takes minutes", flush=True)
    built: list[tuple[Path, RunResult]] = []
    for k in range(1, args.runs + 1):
        try:
            run_dir, _ = common.run_driver(out / f"run-{k:02d}", ["--servers", args.servers, *driver_args])
        except SystemExit:
            print(f"bench coverage: stopped at run {k} of {args.runs}; the runs so far stay in {out} (the page again, "
                  f"from them and any made later: scripts/bench.sh coverage --from {out})", flush=True)
            raise
        built.append((run_dir, common.build(run_dir)))
        if len(built) >= 2:  # the page so far, so that a run that fails later leaves one
            report(out, built, planned=args.runs)
    return 0
