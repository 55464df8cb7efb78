"""Sensitivity: how far each of the method's choices, varied one at a time, moves each server's ratio.

The default configuration runs first; then each variant configuration (CONFIGS: one choice changed,
as driver flags) runs once (--repeat R: R times in a row). For each server, its ratio (server round
trip / dummy round trip, the figure the scaling does not touch) in the variant's runs against the
default's. Runs are the unit: a run's mean ratio moves between runs by more than its pairs' noise
(fresh JVMs, the host), so the change of the mean over runs is judged with the variance of a run mean,
sigma^2/n + tau^2 from what the kit knows of the server (the prior each run recorded: prior.py), or
the runs' own spread where a side has more runs and it is larger. Its interval is at 95% corrected for
the number of comparisons on the page (Bonferroni), and judged against an equivalence margin stated
in advance, MARGIN = ±3% of the ratio: "slower" or "faster" where it excludes 0, "equivalent" where it
lies within the margin, else "inconclusive". Each comparison also says the smallest change it could
have detected (at 80% power): a choice judged "inconclusive" with a detectable change of 8% has not
been shown harmless. The method's choices are part of what an interval does not cover; this shows how
much they matter, and how much the benchmark could see.

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
import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

from .. import prior
from ..analysis.export import sentences, tables
from ..analysis.model import RunResult, ServerResult
from ..stats import t_quantile
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


#: The equivalence margin, stated before any run: a change of a server's ratio within +-3% of it is "equivalent".
MARGIN = 0.03
#: The power at which a comparison states the smallest change it could have detected.
POWER = 0.80
#: The family-wise error of the page's intervals, split over its comparisons (Bonferroni).
ALPHA = 0.05


def pair_ratios(s: ServerResult) -> list[float]:
    """A row's per-pair ratios (server / dummy): each pair's scaled diff over the run's reference round trip, plus 1."""
    c = s.clients[s.primary]
    return [1 + e / c.ref for e in c.estimates]


def ratios(runs: list[RunResult]) -> dict[str, list[list[float]]]:
    """server -> its per-pair ratios in each of these runs where it is a valid row (the dummy baseline left out)."""
    out: dict[str, list[list[float]]] = {}
    for r in runs:
        for s in r.ranked:
            if not s.baseline and s.primary in s.clients and s.clients[s.primary].estimates:
                out.setdefault(s.name, []).append(pair_ratios(s))
    return out


def priors(runs: list[RunResult]) -> dict[str, prior.Prior]:
    """server -> what the kit knew of its spread: the prior recorded by the latest of these runs that has one, else
    the shipped one, else the generic one (prior.py)."""
    shipped = prior.load_shipped()
    out: dict[str, prior.Prior] = {}
    for r in runs:
        out.update(r.priors)
        for s in r.ranked:
            if s.name not in out and s.name in shipped:
                v = shipped[s.name]
                out[s.name] = prior.Prior(sigma=v["sigma"], df=prior.SHIPPED_DF, tau=v["tau"], runs=v["runs"],
                                          source="shipped")
    if shipped:
        for s in (s for r in runs for s in r.ranked):
            out.setdefault(s.name, prior.generic(shipped))
    return out


def _mean_var(side: list[list[float]], base: float, known: prior.Prior) -> float:
    """The variance of a side's mean of run means, relative to base: each run mean's sigma^2/n + tau^2, or the run
    means' own variance where the side has two runs or more and it is larger."""
    model = statistics.fmean(known.sigma ** 2 / len(p) + known.tau ** 2 for p in side) / len(side)
    if len(side) < 2:
        return model
    return max(model, statistics.variance([statistics.fmean(p) / base for p in side]) / len(side))


def compare(default: dict[str, list[list[float]]], variant: dict[str, list[list[float]]],
            known: dict[str, prior.Prior], tests: int = 1) -> dict[str, dict]:
    """Per server in either side (each its pairs' ratios per run): the mean over runs of each side's run means, and the
    variant's change in % of the default's, with its interval at 1 - ALPHA / tests, the verdict against MARGIN, and
    the smallest change it could have detected at POWER."""
    out = {}
    level = 1 - ALPHA / max(tests, 1)
    for name in [*default, *(n for n in variant if n not in default)]:
        if name not in default or name not in variant or name not in known:
            why = "default" if name not in default else "variant" if name not in variant else "prior"
            out[name] = {"measured": False, "reason": "no spread known of it" if why == "prior" else
                         f"not in the {why}'s runs"}
            continue
        d, v, p = default[name], variant[name], known[name]
        base = statistics.fmean(statistics.fmean(x) for x in d)
        change = statistics.fmean(statistics.fmean(x) for x in v) / base - 1
        se = math.sqrt(_mean_var(d, base, p) + _mean_var(v, base, p))
        t = t_quantile(1 - (1 - level) / 2, max(p.df + len(d) + len(v) - 2, 1))
        lo, hi = change - t * se, change + t * se
        verdict = ("slower" if lo > 0 else "faster") if lo > 0 or hi < 0 else \
            "equivalent" if -MARGIN <= lo and hi <= MARGIN else "inconclusive"
        out[name] = {"measured": True, "default_ratio": base, "variant_ratio": base * (1 + change),
                     "default_runs": len(d), "variant_runs": len(v), "default_pairs": sum(map(len, d)),
                     "variant_pairs": sum(map(len, v)), "change_pct": 100 * change,
                     "ci_pct": [100 * lo, 100 * hi], "level": level,
                     "detectable_pct": 100 * (t + statistics.NormalDist().inv_cdf(POWER)) * se,
                     "prior": p.source, "verdict": verdict}
    return out


def default_spread(runs: list[RunResult], known: dict[str, prior.Prior]) -> dict[str, dict]:
    """The default's ratio in each of its runs, per server: the spread, and the last run's against the first's (by
    runs, as every comparison) when there are two or more."""
    out = {}
    for name, per in ratios(runs).items():
        means = [statistics.fmean(v) for v in per]
        item: dict = {"ratios": means, "spread": max(means) - min(means),
                      "spread_pct": 100 * (max(means) - min(means)) / statistics.fmean(means)}
        if len(per) >= 2:
            drift = compare({name: per[:1]}, {name: per[-1:]}, known)[name]
            if drift["measured"]:
                item["last_minus_first"] = drift
        out[name] = item
    return out


def _signed(x: float, digits: int = 4) -> str:
    return f"{x:+.{digits}f}"


def _cell(c: dict) -> str:
    lo, hi = c["ci_pct"]
    return f"{c['change_pct']:+.1f}% [{lo:+.1f}, {hi:+.1f}] {c['verdict']}"


def config_table(result: dict[str, dict]) -> tables.Table:
    body = []
    for name, c in result.items():
        if not c["measured"]:
            body.append([name, "-", "-", "-", "-", "-", "-", c["reason"]])
            continue
        lo, hi = c["ci_pct"]
        body.append([name, f"{c['default_ratio']:.4f}", f"{c['variant_ratio']:.4f}",
                     f"{c['default_runs']} / {c['variant_runs']}", f"{c['change_pct']:+.2f}%",
                     f"[{lo:+.2f}, {hi:+.2f}]", f"{c['detectable_pct']:.1f}%", c["verdict"]])
    cols = ("server", "ratio, default", "ratio, variant", "runs (default / variant)", "change [% of the ratio]",
            "interval [%]", "detectable at 80% power", "verdict")
    return cols, body, {1, 2, 3, 4, 5, 6}


def summary_table(configs: dict[str, dict]) -> tables.Table:
    """configuration x server: the change of the ratio in %, its interval and its verdict."""
    servers = list(dict.fromkeys(n for c in configs.values() for n in c["servers"]))
    body = []
    for cname, c in configs.items():
        row = [cname]
        for n in servers:
            x = c["servers"].get(n)
            row.append("-" if x is None or not x["measured"] else _cell(x))
        body.append(row)
    return ("configuration", *servers), body, set(range(1, len(servers) + 1))


def spread_table(spread: dict[str, dict]) -> tables.Table:
    body = [[name, ", ".join(f"{x:.4f}" for x in s["ratios"]), f"{s['spread']:.4f}", f"{s['spread_pct']:.2f}%",
             "-" if "last_minus_first" not in s else _cell(s["last_minus_first"])] for name, s in spread.items()]
    return (("server", "ratio in each default run", "spread (max - min)", "spread [% of the ratio]",
             "last run - first"), body, {2, 3})


def summarize(runs: list[tuple[str, str, RunResult]]) -> dict:
    """runs: (folder, configuration, result) in the order they ran. Every variant against its default runs."""
    order = [config for _, config, _ in runs]
    if DEFAULT not in order:
        raise SystemExit("bench sensitivity: no complete run of the default configuration to compare with")
    defaults = [i for i, c in enumerate(order) if c == DEFAULT]
    spreads = priors([r for _, _, r in runs])
    sides = {name: (ratios([runs[i][2] for i in idx]), ratios([r for _, c, r in runs if c == name]))
             for name, idx in neighbours(order).items()}
    tests = sum(len(d.keys() & v.keys()) for d, v in sides.values())
    configs = {}
    for name, idx in neighbours(order).items():
        known = CONFIGS.get(name) or RETIRED.get(name)
        configs[name] = {"flags": list(known.flags) if known else None,
                         "what": known.what if known else "(not in this kit's list of configurations)",
                         "injector": known.injector if known else None,
                         "runs": [f for f, c, _ in runs if c == name], "compared_with": [runs[i][0] for i in idx],
                         "servers": compare(*sides[name], spreads, tests)}
    return {"sequence": [{"folder": f, "config": c, "run_id": r.run_id, "seconds": r.seconds} for f, c, r in runs],
            "default_runs": [runs[i][0] for i in defaults], "comparisons": tests, "margin": MARGIN, "power": POWER,
            "default_spread": default_spread([runs[i][2] for i in defaults], spreads), "configurations": configs,
            "missing": MISSING}


def report(out: Path, runs: list[tuple[str, str, RunResult]], left_out: list[str] | None = None) -> dict:
    """sensitivity.md and sensitivity.json in `out`, from its runs; returns the data."""
    data = summarize(runs)
    data["left_out"] = left_out or []
    configs = data["configurations"]
    parts = [f"{len(runs)} runs, one choice of the method changed at a time, in this order: "
             + ", ".join(x["folder"] for x in data["sequence"]) + ". Each cell is the change of a server's ratio (its "
             "round trip over the dummy's) from the default runs to the variant's, in % of the default's, judged by "
             f"runs: its interval at 95% corrected for the page's {data['comparisons']} comparisons (Bonferroni), "
             "with the variance of a run mean from the server's known spread between pairs and between runs. "
             f"\"equivalent\": the interval lies within the margin set in advance, ±{MARGIN:.0%}; \"inconclusive\": "
             "it holds 0 but reaches past the margin. Each section below says the smallest change each comparison "
             f"could have detected ({POWER:.0%} power).",
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
    parts.append(f"First run: {sentences.headline(runs[0][2])}")
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
