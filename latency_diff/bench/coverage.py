"""Coverage: K default runs back to back; how often does a run's 95% interval hold the median of the K estimates?

An interval is a claim of coverage: 95% of runs' intervals should hold the true value. The true value
is unknown, so the median of K runs' estimates stands in for it. Each run is a normal default run of
the core servers (and the ladder), stopped by the driver's own rule (precision target, budget,
--max-pairs). Per server: the median over runs of its diff (us, scaled to each run's own reference
round trip) and of its ratio (server / dummy, which the scaling does not touch), and in how many runs
each interval holds that median. Each run's reference round trip is listed, since it moves every us
diff of its run together.

Targets (reported, never asserted): at least 90% of all (server, run) intervals hold their median, for
the us diff and for the ratio, and every server's in at least 8 of 10 runs (80% for another K). The
median is estimated from the same runs, so the runs nearest it cover it by construction and the share
reads a little high, most with few runs: the targets need at least 10.

`--from DIR` computes the page again from the runs under DIR (every folder with a run.json: made by
this benchmark in one go, or in pieces and gathered), without measuring.
"""

from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

from ..export import tables
from ..model import RunResult
from . import common

#: At least this share of every (server, run) interval holds the server's median over runs.
TARGET_OVERALL = 0.90
#: ...and at least this share of each server's runs (8 of 10).
TARGET_SERVER = 0.80
#: The targets need at least this many runs.
RECOMMENDED_RUNS = 10
#: The two estimates whose coverage is counted: the us diff and the ratio.
MEASURES = ("diff", "ratio")


def rows(runs: list[RunResult]) -> dict[str, list[dict]]:
    """server -> one entry per run in which it is a valid row with an interval (the dummy baseline left out): the
    run's number (1-based), its diff (mean, low, high) in ns, its ratio (mean, low, high), its valid pairs, and why it
    stopped (when the result model says)."""
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
                "stop": None if stop is None else str(stop)})
    return out


def server_coverage(entries: list[dict]) -> dict:
    """One server's runs: per measure, the median of the runs' estimates, and which runs' intervals hold it."""
    out: dict = {"runs": len(entries)}
    for m, key in zip(MEASURES, ("diff_ns", "ratio"), strict=True):
        median = statistics.median(e[key][0] for e in entries)
        missed = [e["run"] for e in entries if not e[key][1] <= median <= e[key][2]]
        out[m] = {"median": median, "covered": len(entries) - len(missed), "missed_runs": missed}
    out["pairs"] = [min(e["pairs"] for e in entries), max(e["pairs"] for e in entries)]
    stops = [e["stop"] for e in entries if e["stop"] is not None]
    out["stops"] = {why: stops.count(why) for why in sorted(set(stops))} if stops else None
    return out


def coverage(runs: list[RunResult]) -> dict:
    """Per server and overall: how many runs' intervals hold the median over runs, for the us diff and the ratio."""
    servers = {name: server_coverage(entries) for name, entries in rows(runs).items()}
    overall = {}
    for m in MEASURES:
        covered, total = sum(s[m]["covered"] for s in servers.values()), sum(s["runs"] for s in servers.values())
        overall[m] = {"covered": covered, "of": total, "share": covered / total if total else None}
    return {"runs": len(runs), "servers": servers, "overall": overall}


def verdicts(cov: dict) -> list[str]:
    """The targets, met or missed by how much; a warning first when there are too few runs to judge them."""
    out = []
    if cov["runs"] < RECOMMENDED_RUNS:
        out.append(f"Only {cov['runs']} runs: the targets need at least {RECOMMENDED_RUNS} (--runs "
                   f"{RECOMMENDED_RUNS}); read these shares as indicative.")
    for m, label in zip(MEASURES, ("the us diff", "the ratio"), strict=True):
        o = cov["overall"][m]
        if o["share"] is None:
            out.append(f"Overall, {label}: no server has an interval in any run; nothing to judge.")
            continue
        gap = TARGET_OVERALL - o["share"]
        met = "met" if gap <= 1e-12 else f"missed by {gap * 100:.1f} percentage points"
        out.append(f"Overall, {label}'s intervals hold the median over runs in {o['covered']} of {o['of']} "
                   f"(server, run) rows, {o['share']:.1%}; target at least {TARGET_OVERALL:.0%}: {met}.")
        short = [f"{name} ({s[m]['covered']} of {s['runs']})" for name, s in cov["servers"].items()
                 if s[m]["covered"] < TARGET_SERVER * s["runs"] - 1e-9]
        need = f"{math.ceil(TARGET_SERVER * RECOMMENDED_RUNS - 1e-9)} of {RECOMMENDED_RUNS}"
        out.append(f"Every server, {label}: at least {TARGET_SERVER:.0%} of its runs ({need}): "
                   + ("met." if not short else f"missed for {len(short)} server{'s' * (len(short) > 1)}: "
                                              f"{', '.join(short)}."))
    return out


def table(cov: dict) -> tables.Table:
    stops = any(s["stops"] for s in cov["servers"].values())
    body = []
    for name, s in cov["servers"].items():
        lo, hi = s["pairs"]
        row = [name, tables.us(s["diff"]["median"]), f"{s['diff']['covered']} of {s['runs']}",
               f"{s['ratio']['median']:.4f}", f"{s['ratio']['covered']} of {s['runs']}",
               str(lo) if lo == hi else f"{lo}-{hi}"]
        if stops:
            row.append(", ".join(f"{why} {n}" for why, n in (s["stops"] or {}).items()) or "-")
        body.append(row)
    cols = ("server", "median diff [us]", "covered (us)", "median ratio", "covered (ratio)", "pairs per run",
            *(("stopped because (runs)",) if stops else ()))
    return cols, body, {1, 2, 3, 4, 5}


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
        median = s["diff"]["median"] / 1000
        for e in es:
            mean, low, high = (x / 1000 for x in e["diff_ns"])
            color = "#3b75af" if low <= median <= high else "#c0504d"
            ax.errorbar([e["run"]], [mean], yerr=[[mean - low], [high - mean]], fmt="o", color=color, capsize=3)
        ax.axhline(median, color="black", linewidth=0.8, linestyle="--")
        ax.set_title(f"{name}: {s['diff']['covered']} of {s['runs']}", fontsize=10)
        ax.set_xticks([e["run"] for e in es])
        ax.set_xlabel("run")
        ax.set_ylabel("diff [us]")
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(entries):]:
        ax.set_visible(False)
    fig.suptitle("Each run's diff with its 95% interval; dashed: the median over runs; red: the interval misses it")
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
    parts = [f"{len(used)} default runs{so_far}, one after the other. For each server, the median of its runs' "
             "estimates stands in for the true value; a run covers when its 95% interval holds that median. The us "
             "diffs are scaled to each run's own reference round trip (below), which moves every diff of a run "
             "together; the ratio (server / dummy) is not scaled. The median comes from the same runs, so the runs "
             "nearest it cover it by construction: the shares read a little high, most with few runs.",
             "\n".join(f"- {x}" for x in lines), common.md_table(table(cov))]
    if png is not None:
        parts.append("![Each run's interval against the median](coverage.png)")
    parts += ["## The runs", common.md_table(run_table(used, out))]
    if left_out:
        parts.append("Left out (not complete): " + ", ".join(
            f"{_rel(d, out)} ({r.status}: {r.reason or 'no reason recorded'})" for d, r in left_out))
    if used:
        parts.append(f"First run: {tables.headline(used[0][1])}")
    print(tables.render_text(table(cov)) + "\n" + "\n".join(lines))
    data = {**cov, "targets": {"overall": TARGET_OVERALL, "server": TARGET_SERVER, "runs": RECOMMENDED_RUNS},
            "verdicts": lines,
            "run_dirs": [{"folder": _rel(d, out), "run_id": r.run_id,
                          "ref_ns": r.ref.get(r.primary), "seconds": r.seconds} for d, r in used],
            "left_out": [{"folder": _rel(d, out), "status": r.status,
                          "reason": r.reason} for d, r in left_out]}
    common.write(out, "coverage", "Coverage: does each run's interval hold the median of the runs?", parts, data)
    return data


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--servers", default=common.CORE, help=f"servers (default {common.CORE}); the ladder comes with "
                   "every run")
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
