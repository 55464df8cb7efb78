"""The stopping simulation: runs of simulated servers through the kit's own stopping rule (latency_diff/stopping.py),
look by look, as the driver's schedule does. Used by tests/test_stopping.py.

A run has 37 servers. Every round gives each server that still wants one a pair; a pair's ratio is
the median of its 32 units; after each round the run's spread is taken over every server's pairs so
far, and each server is stopped or not by stopping.decide. True ratios are spread from 1.05 to 11 (log-
uniform), at a reference of 5,660 ns (the Intel host's), with the default target ±max(0.5 us, 5%);
a pair's spread is lognormal around 1% of the ratio (0.2% to 5%, as in the committed runs), of which the
units' noise is 20% to 70%. The families of the between-pair part: normal; Student's t with 3 degrees
of freedom (heavy tails), scaled to the same sd; and an 80/20 mixture of two such normal modes 3 targets
apart (two speed modes of fresh JVMs). A server that reaches max pairs stops there (the budget's part).

real_coverage draws its servers from the committed runs instead (tests/fixtures/committed_pairs.json, both hosts):
each (host group, state of the host, server) measured in at least 3 runs becomes a simulated server whose truth is
its pooled mean ratio. A simulated run of it takes one of its real runs' offsets from that mean (shrunk to the
spread between runs that the pairs' own noise does not explain: prior.spread's tau) and draws its pairs from its
real pairs' deviations from their own run's mean: the real spreads, tails and speed modes, at the real references
and targets. Each is stopped by the rule with the prior its history gives (prior.spread over its state's runs), as a
run would.
"""

from __future__ import annotations

import json
import math
import random
import statistics
from pathlib import Path

from latency_diff import prior, stopping

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "committed_pairs.json"

REF_NS = 5660.0
ABS_NS, REL = 500.0, 0.05
SERVERS_PER_RUN = 37
UNITS = 32
MIN_PAIRS, MAX_PAIRS = 3, 8


def server(rng: random.Random, family: str) -> dict:
    ratio = 1 + math.exp(rng.uniform(math.log(0.05), math.log(10)))
    target = stopping.target_ns((ratio - 1) * REF_NS, ABS_NS, REL) / REF_NS  # in ratio units
    sd = math.exp(rng.gauss(math.log(0.01), 0.8)) * ratio  # a pair's sd
    within_share = rng.uniform(0.2, 0.7)
    unit_sd = math.sqrt(within_share * sd ** 2 * UNITS / stopping.MEDIAN_VARIANCE)
    between_sd = math.sqrt((1 - within_share) * sd ** 2)
    truth = ratio + (0.2 * 3 * target if family == "mix" else 0.0)
    return {"ratio": ratio, "target": target, "unit_sd": unit_sd, "between_sd": between_sd, "truth": truth,
            "family": family, "units": [], "pairs": [], "stop": None}


def pair(rng: random.Random, s: dict) -> None:
    if s["family"] == "t3":  # t with 3 degrees of freedom has variance 3: scale to between_sd
        z = rng.gauss(0, 1) / math.sqrt(sum(rng.gauss(0, 1) ** 2 for _ in range(3)) / 3) / math.sqrt(3)
    else:
        z = rng.gauss(0, 1)
    centre = s["ratio"] + s["between_sd"] * z
    if s["family"] == "mix" and rng.random() < 0.2:
        centre += 3 * s["target"]
    units = [centre + rng.gauss(0, s["unit_sd"]) for _ in range(UNITS)]
    s["units"].append(units)
    s["pairs"].append(stopping.pair_ratio(units))


def simulate_run(rng: random.Random, family: str, budget: float | None = None, borrow: float = 0.0,
                  look=None) -> list[dict]:
    """budget: a pair costs 1 s, and a server stops on its budget or out of reach, as stopping.decide judges with the
    pairs its interval needs (None: no budget, the rule's precision part alone); borrow: past its budget a server may
    borrow up to that many budgets from what the run's stopped servers left unspent (stopping.limit). look: called
    with each server that has not stopped after a look, the run's spread and the server's limit."""
    servers = [server(rng, family) for _ in range(SERVERS_PER_RUN)]
    while True:
        todo = [s for s in servers if s["stop"] is None]
        if not todo:
            return servers
        for s in todo:
            pair(rng, s)
        spread = stopping.run_spread([s["pairs"] for s in servers])
        for s in todo:
            iv = stopping.interval(s["pairs"], REF_NS, within_var=stopping.within_variance(s["units"]),
                                   run_rel_sd=spread, target=(ABS_NS, REL))
            s["interval"] = iv
            n, met = len(s["pairs"]), stopping.met(iv, REF_NS, ABS_NS, REL)
            goal = stopping.target_ns((iv.ratio.mean - 1) * REF_NS, ABS_NS, REL) / REF_NS
            needed = None if budget is None or n < MIN_PAIRS or met else stopping.pairs_needed(
                iv.stop_sd, n, goal, MAX_PAIRS, optimistic=True)
            limit = None
            if budget is not None and borrow:
                unspent = sum(max(budget - len(x["pairs"]), 0) for x in servers if x["stop"] is not None)
                borrowed = sum(max(len(x["pairs"]) - budget, 0) for x in servers)
                limit = stopping.limit(budget_s=budget, spent_s=float(n), borrow=borrow, unspent_s=unspent,
                                       borrowed_s=borrowed)
            s["stop"] = stopping.decide(pairs=n, min_pairs=MIN_PAIRS, max_pairs=MAX_PAIRS, target_met=met,
                                        failed=False, spent_s=float(n), next_pair_s=1.0,
                                        budget_s=1e9 if budget is None else budget, pairs_needed=needed,
                                        limit_s=limit, pairs_needed_at_sd=None if needed is None else
                                        stopping.pairs_needed(iv.stop_sd, n, goal, MAX_PAIRS))
            if look is not None and s["stop"] is None:
                look(s, spread, limit)


def coverage(family: str, runs: int, seed: int, budget: float | None = None,
              borrow: float = 0.0) -> tuple[float, float, int, float]:
    rng = random.Random(seed)
    servers = [s for _ in range(runs) for s in simulate_run(rng, family, budget, borrow)]
    coverage.out_of_reach = sum(s["stop"] == stopping.OUT_OF_REACH for s in servers)
    coverage.borrowed = sum(budget is not None and len(s["pairs"]) > budget for s in servers)
    covered = [s["interval"].ratio.ci95_low <= s["truth"] <= s["interval"].ratio.ci95_high for s in servers]
    at_min = [c for c, s in zip(covered, servers, strict=True) if len(s["pairs"]) == MIN_PAIRS]
    return (statistics.fmean(covered), statistics.fmean(at_min) if at_min else math.nan, len(servers),
            statistics.fmean(len(s["pairs"]) for s in servers))


def real_servers(min_runs: int = 3) -> list[dict]:
    """The committed runs' servers as simulated ones (see the module doc): per (host group, server) in at least
    min_runs runs, its truth, run offsets, pair deviations, reference, target (ratio units), prior and band."""
    out = []
    for g in json.loads(FIXTURE.read_text())["groups"]:
        for runs in states(list(g["runs"].values())):
            out += _real_servers(g, runs, min_runs)
    return out


def states(runs: list[dict]) -> list[list[dict]]:
    """A host group's runs by state of the host: runs sorted by reference round trip, a new state wherever one is
    beyond prior.STATE_BAND of its state's first (a run's history is of its state: prior.same_state)."""
    out: list[list[dict]] = []
    for r in sorted(runs, key=lambda r: r["ref_ns"]):
        if out and prior.same_state(out[-1][0]["ref_ns"], r["ref_ns"]):
            out[-1].append(r)
        else:
            out.append([r])
    return out


def _real_servers(g: dict, runs: list[dict], min_runs: int) -> list[dict]:
    """real_servers of one state of a host group."""
    out = []
    for name in sorted({n for r in runs for n in r["servers"]}):
        mine = [(r["ref_ns"], r["servers"][name]) for r in runs if len(r["servers"].get(name, ())) >= 2]
        if len(mine) < min_runs:
            continue
        pairs = [p for _, p in mine]
        sigma, df, tau, n_runs = prior.spread(pairs)
        truth = statistics.fmean(x for p in pairs for x in p)
        offsets = [statistics.fmean(p) / truth - 1 for p in pairs]
        spread = statistics.pstdev(offsets)
        shrink = min(1.0, tau / spread) if spread > 0 else 0.0
        ref = statistics.median(r for r, _ in mine)
        goal = stopping.target_ns((truth - 1) * ref, ABS_NS, REL) / ref
        out.append({"name": name, "host": g["host"].split()[0], "truth": truth, "ref_ns": ref, "goal": goal,
                    "offsets": [o * shrink for o in offsets],
                    "deviations": [x / statistics.fmean(p) - 1 for p in pairs for x in p],
                    "prior": prior.Prior(sigma=sigma, df=min(df, prior.MAX_DF), tau=tau, runs=n_runs,
                                         source="history"),
                    "band": "wide" if sigma * truth >= goal else "narrow"})
    return out


def real_run(rng: random.Random, s: dict, max_pairs: int = 40) -> tuple[str, bool | None, int]:
    """One simulated run of a real server, look by look from MIN_PAIRS pairs: ("met", whether its interval holds the
    truth, pairs), or ("out of reach" | "max pairs", None, pairs)."""
    centre = s["truth"] * (1 + rng.choice(s["offsets"]))
    pairs: list[float] = []
    while len(pairs) < max_pairs:
        pairs.append(centre * (1 + rng.choice(s["deviations"])))
        n = len(pairs)
        if n < max(MIN_PAIRS, 2):
            continue
        iv = stopping.interval(pairs, s["ref_ns"], prior=s["prior"], target=(ABS_NS, REL))
        if stopping.met(iv, s["ref_ns"], ABS_NS, REL):
            return "met", iv.ratio.ci95_low <= s["truth"] <= iv.ratio.ci95_high, n
        goal_ns = stopping.target_ns(iv.diff.mean, ABS_NS, REL)
        if stopping.pairs_needed(iv.stop_sd * s["ref_ns"], n, goal_ns, max_pairs, True, tau_sd=iv.tau_sd * s["ref_ns"],
                                 prior_df=s["prior"].df) > max_pairs:
            return "out of reach", None, n
    return "max pairs", None, len(pairs)


def real_coverage(runs: int, seed: int) -> dict:
    """runs simulated runs of every real server: per server (host, name) and per band, its "rows", "met" and "held"
    counts."""
    rng = random.Random(seed)
    out: dict = {}
    for s in real_servers():
        for key in ((s["host"], s["name"]), s["band"]):
            out.setdefault(key, {"rows": 0, "met": 0, "held": 0, "band": s["band"]})
        for _ in range(runs):
            why, held, _ = real_run(rng, s)
            for key in ((s["host"], s["name"]), s["band"]):
                out[key]["rows"] += 1
                out[key]["met"] += why == "met"
                out[key]["held"] += bool(held)
    return out
