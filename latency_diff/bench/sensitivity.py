"""Sensitivity: how far each of the method's choices, varied one at a time, moves each server's ratio.

The default configuration runs first; then each variant configuration (CONFIGS: one choice changed,
as driver flags) runs once (--repeat R: R times in a row). For each server, its ratio (server round
trip / dummy round trip, the figure the scaling does not touch) in the variant's runs against the
default's: the change, with a Welch 95% interval over both sides' per-pair ratios, in % of the
default's ratio, and "not significant" where the interval holds 0. The method's choices are part of
what an interval does not cover; this shows how much they matter.

With --interleave-default the default runs again after each variant (D V1 D V2 D ...), each variant is
compared with the default runs just before and after it (so that a drift of the machine over the hour
cancels to first order), and the page shows the default's ratio across its runs: that spread is the
yardstick for every change. Without it, one default run (R runs) is shared by every comparison.

Not varied yet, for want of a flag (add it to CONFIGS with one line when the driver has it):
- dummy-per-pair: a fresh dummy for every pair instead of one dummy shared by a round's pairs.

`--from DIR` computes the page again from the runs under DIR (its NN-CONFIGURATION folders, e.g. made
in pieces), without measuring.
"""

from __future__ import annotations

import argparse
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

from .. import stats
from ..export import tables
from ..model import RunResult, ServerResult
from . import common


@dataclass(frozen=True)
class Config:
    #: The driver flags that make it (after the benchmark's driver options, so they win).
    flags: tuple[str, ...]
    #: What it changes, for the page.
    what: str
    #: An injector running while it runs ("drift": on the other CPU, as in the robustness benchmark).
    injector: str | None = None


DEFAULT = "default"
#: The configurations, one choice changed from the default each (docs/options.md has the defaults). A segment
#: must be a multiple of 2 x the run length (an ABBA quad of runs sends two runs to each process), so the
#: longer runs come with longer segments.
CONFIGS: dict[str, Config] = {
    DEFAULT: Config((), "the driver's defaults: runs of 256 in segments of 4,096, warm-up 50,000, JIT wait queue, "
                        "both clients, preparing ahead, 8 segments in a first pair, 3 to 40 pairs"),
    "run-length-1024": Config(("--run-length", "1024"), "runs of 1,024 requests (default 256)"),
    "run-length-4096": Config(("--run-length", "4096", "--segment", "8192"),
                              "runs of 4,096 requests, in segments of 8,192 (the shortest that holds a quad of them)"),
    "hot-loop": Config(("--run-length", "16384", "--segment", "32768"),
                       "a hot loop: one ABBA quad of 16,384-request runs per segment of 32,768, so each process serves "
                       "16,384 to 32,768 requests in a row (the 2014 study measured one server alone)"),
    "warmup-20000": Config(("--warmup", "20000"), "a warm-up of 20,000 requests (default 50,000)"),
    "warmup-100000": Config(("--warmup", "100000"), "a warm-up of 100,000 requests (default 50,000; the default "
                                                    "before 27 November 2026)"),
    "warmup-400000": Config(("--warmup", "400000"), "a warm-up of 400,000 requests (default 50,000)"),
    "settle-none": Config(("--settle", "none"), "no wait for the JIT after the warm-up (default: its queue empty)"),
    "settle-cpu": Config(("--settle", "cpu"), "the JIT wait until the compiler threads' CPU time stands still for 1 s "
                                              "(default: its queue empty)"),
    "client-lean": Config(("--client", "lean"), "the lean client alone: no ab quad in the pair (default both)"),
    "hold-30": Config(("--hold", "30"), "each prepared server process held idle for 30 s after its warm-up before it "
                      "is measured (default: measured when its turn comes)"),
    "lean-hold-30": Config(("--client", "lean", "--hold", "30"), "the lean client alone, each prepared server process "
                           "held idle for 30 s (against client-lean: does idling alone move the ratio?)"),
    "agent-off": Config(("--agent", "off", "--settle", "cpu"), "the kit's java agent not loaded into the server "
                        "processes, so the JIT wait is the compiler threads' CPU time (against settle-cpu: does the "
                        "agent alone move the ratio?)"),
    "prepare-ahead-off": Config(("--prepare-ahead", "off"), "no preparing ahead: each pair's processes start and warm "
                                                           "up on the measured CPU (default: on the other CPU)"),
    "lend-off": Config(("--lend-cpu", "off"), "the measured CPU not lent to the process being prepared while it "
                                             "waits for it (default: lent)"),
    "segments-4": Config(("--segments", "4"), "4 segments in a first pair (default 8; later pairs adapt)"),
    "segments-16": Config(("--segments", "16"), "16 segments in a first pair (default 8; later pairs adapt)"),
    "min-pairs-6": Config(("--min-pairs", "6"), "at least 6 process pairs per server (default 3)"),
    "max-pairs-5": Config(("--max-pairs", "5"), "at most 5 process pairs per server (default 40; the budget allows "
                                                "about 10)"),
    "other-cpu-busy": Config((), "the drift injector streaming memory on the other CPU (the preparing one), 20-60 s "
                                 "on and off", injector="drift"),
}
#: Configurations of earlier pages, no longer in CONFIGS, by what they were (for --from on a committed benchmark).
RETIRED = {"warmup-50000": Config(("--warmup", "50000"), "a warm-up of 50,000 requests, against the default of "
                                                        "100,000 before 27 November 2026 (now the default)")}
#: Choices the driver has no flag for yet.
MISSING = {"dummy-per-pair": "a fresh dummy per pair instead of one shared by a round's pairs"}
FOLDER = re.compile(r"^(\d+)-(.+)$")


def selected(only: str | None) -> list[str]:
    """The variant configurations to run (the default always runs): all, or those --only names."""
    if not only:
        return [n for n in CONFIGS if n != DEFAULT]
    names = [x.strip() for x in only.split(",") if x.strip()]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown or not names:
        raise SystemExit(f"bench sensitivity: --only: unknown configuration(s) {', '.join(unknown) or '(none given)'}; "
                         f"known: {', '.join(n for n in CONFIGS if n != DEFAULT)}")
    return [n for n in names if n != DEFAULT]


def plan(names: list[str], repeat: int, interleave_default: bool) -> list[str]:
    """The configuration of each run, in order: the default first, each variant `repeat` times in a row, and with
    interleave_default the default again after each variant."""
    order = [DEFAULT] * repeat
    for name in names:
        order += [name] * repeat
        if interleave_default:
            order += [DEFAULT] * repeat
    return order


def neighbours(order: list[str]) -> dict[str, list[int]]:
    """variant -> the indexes (into order) of the default runs it is compared with: the nearest group of default runs
    before each of its groups and the nearest after (none after without interleaving)."""
    groups: list[tuple[str, list[int]]] = []
    for i, name in enumerate(order):
        if groups and groups[-1][0] == name:
            groups[-1][1].append(i)
        else:
            groups.append((name, [i]))
    out: dict[str, list[int]] = {}
    for g, (name, _) in enumerate(groups):
        if name == DEFAULT:
            continue
        before = next((idx for n, idx in reversed(groups[:g]) if n == DEFAULT), [])
        after = next((idx for n, idx in groups[g + 1:] if n == DEFAULT), [])
        mine = out.setdefault(name, [])
        mine += [i for i in before + after if i not in mine]
    return {name: sorted(idx) for name, idx in out.items()}


def pair_ratios(s: ServerResult) -> list[float]:
    """A row's per-pair ratios (server / dummy): each pair's scaled diff over the run's reference round trip, plus 1."""
    c = s.clients[s.primary]
    return [1 + e / c.ref for e in c.estimates]


def ratios(runs: list[RunResult]) -> dict[str, list[float]]:
    """server -> the per-pair ratios of its valid rows in these runs together (the dummy baseline left out)."""
    out: dict[str, list[float]] = {}
    for r in runs:
        for s in r.ranked:
            if not s.baseline and s.primary in s.clients:
                out.setdefault(s.name, []).extend(pair_ratios(s))
    return out


def compare(default: dict[str, list[float]], variant: dict[str, list[float]]) -> dict[str, dict]:
    """Per server in either: the mean ratio on each side, and the variant's minus the default's with a Welch 95%
    interval over the per-pair ratios, in % of the default's ratio, and what its interval says."""
    out = {}
    for name in [*default, *(n for n in variant if n not in default)]:
        if name not in default or name not in variant:
            out[name] = {"measured": False, "reason": f"not in the {'default' if name not in default else 'variant'}'s "
                                                      "runs"}
            continue
        d, v = default[name], variant[name]
        change = stats.welch_difference(v, d)
        base = statistics.fmean(d)
        out[name] = {"measured": True, "default_ratio": base, "variant_ratio": statistics.fmean(v),
                     "default_pairs": len(d), "variant_pairs": len(v), "change": change.to_dict(),
                     "change_pct": 100 * change.mean / base, "verdict": tables.change_verdict(change)}
    return out


def default_spread(runs: list[RunResult]) -> dict[str, dict]:
    """The default's ratio in each of its runs, per server: the spread, and the last run's against the first's (a
    Welch interval over their per-pair ratios) when there are two or more."""
    per: dict[str, list[list[float]]] = {}
    for r in runs:
        for name, values in ratios([r]).items():
            per.setdefault(name, []).append(values)
    out = {}
    for name, runs_values in per.items():
        means = [statistics.fmean(v) for v in runs_values]
        item: dict = {"ratios": means, "spread": max(means) - min(means),
                      "spread_pct": 100 * (max(means) - min(means)) / statistics.fmean(means)}
        if len(runs_values) >= 2:
            drift = stats.welch_difference(runs_values[-1], runs_values[0])
            item["last_minus_first"] = drift.to_dict()
            item["verdict"] = tables.change_verdict(drift)
        out[name] = item
    return out


def _signed(x: float, digits: int = 4) -> str:
    return f"{x:+.{digits}f}"


def config_table(result: dict[str, dict]) -> tables.Table:
    body = []
    for name, c in result.items():
        if not c["measured"]:
            body.append([name, "-", "-", "-", "-", "-", c["reason"]])
            continue
        ch = c["change"]
        ci = "-" if ch["ci95_low"] is None else f"[{_signed(ch['ci95_low'])}, {_signed(ch['ci95_high'])}]"
        body.append([name, f"{c['default_ratio']:.4f}", f"{c['variant_ratio']:.4f}", _signed(ch["mean"]), ci,
                     f"{c['change_pct']:+.2f}%", c["verdict"]])
    cols = ("server", "ratio, default", "ratio, variant", "change", "95% CI", "change [% of the ratio]", "verdict")
    return cols, body, {1, 2, 3, 4, 5}


def summary_table(configs: dict[str, dict]) -> tables.Table:
    """configuration x server: the change of the ratio, in % of it; n.s. where not significant."""
    servers = list(dict.fromkeys(n for c in configs.values() for n in c["servers"]))
    body = []
    for cname, c in configs.items():
        row = [cname]
        for n in servers:
            x = c["servers"].get(n)
            if x is None or not x["measured"]:
                row.append("-")
                continue
            mark = {"not significant": " n.s.", "too few pairs": " (too few pairs)"}.get(x["verdict"], "")
            row.append(f"{_signed(x['change']['mean'])} ({x['change_pct']:+.1f}%){mark}")
        body.append(row)
    return ("configuration", *servers), body, set(range(1, len(servers) + 1))


def spread_table(spread: dict[str, dict]) -> tables.Table:
    body = [[name, ", ".join(f"{x:.4f}" for x in s["ratios"]), f"{s['spread']:.4f}", f"{s['spread_pct']:.2f}%",
             "-" if "last_minus_first" not in s else
             f"{_signed(s['last_minus_first']['mean'])} ({s['verdict']})"] for name, s in spread.items()]
    return (("server", "ratio in each default run", "spread (max - min)", "spread [% of the ratio]",
             "last run - first"), body, {2, 3})


def summarize(runs: list[tuple[str, str, RunResult]]) -> dict:
    """runs: (folder, configuration, result) in the order they ran. Every variant against its default runs."""
    order = [config for _, config, _ in runs]
    if DEFAULT not in order:
        raise SystemExit("bench sensitivity: no complete run of the default configuration to compare with")
    defaults = [i for i, c in enumerate(order) if c == DEFAULT]
    configs = {}
    for name, idx in neighbours(order).items():
        mine = [r for _, c, r in runs if c == name]
        known = CONFIGS.get(name) or RETIRED.get(name)
        configs[name] = {"flags": list(known.flags) if known else None,
                         "what": known.what if known else "(not in this kit's list of configurations)",
                         "injector": known.injector if known else None,
                         "runs": [f for f, c, _ in runs if c == name], "compared_with": [runs[i][0] for i in idx],
                         "servers": compare(ratios([runs[i][2] for i in idx]), ratios(mine))}
    return {"sequence": [{"folder": f, "config": c, "run_id": r.run_id, "seconds": r.seconds} for f, c, r in runs],
            "default_runs": [runs[i][0] for i in defaults],
            "default_spread": default_spread([runs[i][2] for i in defaults]), "configurations": configs,
            "missing": MISSING}


def report(out: Path, runs: list[tuple[str, str, RunResult]], left_out: list[str] | None = None) -> dict:
    """sensitivity.md and sensitivity.json in `out`, from its runs; returns the data."""
    data = summarize(runs)
    data["left_out"] = left_out or []
    configs = data["configurations"]
    parts = [f"{len(runs)} runs, one choice of the method changed at a time, in this order: "
             + ", ".join(x["folder"] for x in data["sequence"]) + ". Each cell is the change of a server's ratio (its "
             "round trip over the dummy's) from the default runs to the variant's, with its share of the default's "
             "ratio; n.s.: its 95% interval (Welch, over both sides' per-pair ratios) holds 0.",
             common.md_table(summary_table(configs))]
    if len(data["default_runs"]) >= 2:
        parts += ["## The default across its runs",
                  "The spread of the default's ratio over the session is the yardstick for the changes above.",
                  common.md_table(spread_table(data["default_spread"]))]
    for name, c in configs.items():
        how = " ".join(c["flags"]) if c["flags"] else "no flag"
        if c["injector"]:
            how += f", the {c['injector']} injector running"
        what = c["what"][:1].upper() + c["what"][1:]
        parts += [f"## {name}", f"{what} ({how}). Runs {', '.join(c['runs'])} against the default's "
                  f"{', '.join(c['compared_with'])}.", common.md_table(config_table(c["servers"]))]
    parts.append("Not varied, for want of a driver flag: " + "; ".join(f"{k} ({v})" for k, v in MISSING.items())
                 + ".")
    if data["left_out"]:
        parts.append("Left out: " + "; ".join(data["left_out"]) + ".")
    parts.append(f"First run: {tables.headline(runs[0][2])}")
    print(tables.render_text(summary_table(configs)))
    common.write(out, "sensitivity", "Sensitivity: each choice of the method against the default, by ratio", parts,
                 data)
    return data


def find_runs(folder: Path) -> tuple[list[tuple[str, str, RunResult]], list[str]]:
    """The complete runs in folder's NN-CONFIGURATION sub-folders, in NN order; and what was left out, and why."""
    if not folder.is_dir():
        raise SystemExit(f"bench sensitivity: {folder} is not a folder")
    found, left_out = [], []
    subs = sorted(((int(m.group(1)), m.group(2), d) for d in folder.iterdir()
                   if d.is_dir() and (m := FOLDER.match(d.name))), key=lambda x: (x[0], x[2].name))
    for _, config, d in subs:
        dirs = [x for x in d.iterdir() if (x / "run.json").is_file()]
        if len(dirs) != 1:
            left_out.append(f"{d.name} ({len(dirs)} run directories in it)")
            continue
        r = common.build(dirs[0])
        if r.status != "complete":
            left_out.append(f"{d.name} ({r.status}: {r.reason or 'no reason recorded'})")
            continue
        found.append((d.name, config, r))
    return found, left_out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--servers", default=common.CORE, help=f"servers (default {common.CORE}); the ladder comes with "
                   "every run")
    p.add_argument("--only", metavar="NAME,NAME", help="run these configurations only (and the default); see --list")
    p.add_argument("--repeat", type=int, default=1, metavar="R", help="runs of each configuration, in a row (default "
                   "1)")
    p.add_argument("--interleave-default", action="store_true", help="run the default again after each variant "
                   "(D V1 D V2 D ...), compare each variant with its neighbours, and show the default's spread")
    p.add_argument("--list", action="store_true", help="list the configurations and their flags, and exit")
    p.add_argument("--from", dest="from_dir", type=Path, metavar="DIR", help="measure nothing: compute the page again "
                   "from the NN-CONFIGURATION run folders under DIR, and write it there")


def run(args: argparse.Namespace, driver_args: list[str]) -> int:
    if args.list:
        for name, c in CONFIGS.items():
            how = " ".join(c.flags) or "no flag"
            print(f"{name:18} {how}{f' + the {c.injector} injector' if c.injector else ''}: {c.what}")
        print("not yet (no flag): " + "; ".join(f"{k} ({v})" for k, v in MISSING.items()))
        return 0
    if args.from_dir is not None:
        if driver_args:
            raise SystemExit(f"bench sensitivity: --from measures nothing; drop the driver options "
                             f"{' '.join(driver_args)}")
        runs, left_out = find_runs(args.from_dir)
        report(args.from_dir, runs, left_out)
        return 0
    if args.repeat < 1:
        raise SystemExit(f"bench sensitivity: --repeat {args.repeat}: at least 1")
    names = selected(args.only)
    given = {a.split("=", 1)[0] for a in driver_args if a.startswith("--")}
    for name in names:
        clash = given & {f for f in CONFIGS[name].flags if f.startswith("--")}
        if clash:
            raise SystemExit(f"bench sensitivity: {name} varies {', '.join(sorted(clash))}; drop it from the driver "
                             "options, or leave that configuration out with --only")
    order = plan(names, args.repeat, args.interleave_default)
    print(f"bench sensitivity: {len(order)} driver runs ({order.count(DEFAULT)} of the default, {args.repeat} of each "
          f"of {len(names)} variant(s)), each a default run of {args.servers} and the ladder: minutes each", flush=True)
    out = common.out_dir(args.results_dir, "sensitivity")
    runs: list[tuple[str, str, RunResult]] = []
    cpus: tuple[int | None, int | None] = (None, None)
    for i, name in enumerate(order, 1):
        config = CONFIGS[name]
        folder = f"{i:02d}-{name}"
        cpu = common.injector_cpu(config.injector, *cpus) if config.injector else None
        try:
            with common.injector(config.injector, cpu):
                run_dir, _ = common.run_driver(out / folder, ["--servers", args.servers, *driver_args, *config.flags])
        except SystemExit:
            print(f"bench sensitivity: stopped at run {i} of {len(order)} ({name}); the runs so far stay in {out} "
                  f"(the page from them: scripts/bench.sh sensitivity --from {out})", flush=True)
            raise
        r = common.build(run_dir)
        if name == DEFAULT and cpus == (None, None):
            cpus = (r.settings.get("server_cpu"), r.settings.get("prepare_cpu"))
        runs.append((folder, name, r))
        if len({c for _, c, _ in runs}) >= 2:  # the page so far, so that a run that fails later leaves one
            report(out, runs)
    return 0
