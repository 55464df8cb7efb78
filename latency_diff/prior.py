"""What the kit knows of each server's spread before a run: its earlier runs on this kind of host, else the prior
that ships with the kit.

Two spreads, both relative to the server's mean ratio (server round trip over the dummy's):

- **sigma**, between process pairs within a run: a fresh JVM lands where it lands (JIT decisions, the layout of its
  heap, a speed mode it falls into), and three pairs that happen to agree cannot show how widely it spreads. It is
  the pooled within-run sd of the earlier runs' pairs, with its degrees of freedom.
- **tau**, between runs: a server's mean moves from run to run by more than its pairs' noise explains (the host's
  state in that run). It is the method-of-moments estimate over the earlier runs' means,
  var(run means) - mean(sigma^2 / n_run), never below 0 (the between-study variance of DerSimonian and Laird,
  "Meta-analysis in clinical trials", 1986, with equal weights).

The history is every analyzed run under the results folder (its summary.json) of the same CPU model, JDK and
measuring settings, the committed ones included, in the same state of the host: its reference round trip (the
dummy's) within STATE_BAND of this run's, which the driver knows after the run's first pair; the run being analyzed
is left out, and so is a head-to-head run (its ratios are over another server). The shipped prior
(prior.json beside this file, `python3 -m latency_diff.prior --write`) pools the committed runs of every host, for a
host with no history of a server; it is weighed as SHIPPED_DF degrees of freedom, a history as its own, at most
MAX_DF. How the stopping rule uses them: stopping.py.

A server whose pairs fall into two speed modes is recognised from its history and this run's pairs (modes()).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

SHIPPED = Path(__file__).resolve().parent / "prior.json"
#: The history file of a results folder: one line a run, its host key and its servers' pair ratios (remember()).
HISTORY = "history.jsonl"
#: A history weighs as many degrees of freedom as its pairs give, at most this many: a server's spread changes with
#: the host's state, which the host key cannot see. In 8 coverage runs of 28 November on a host whose dummy round
#: trip had moved from 13 to 18 us since its history was made, Vert.x's pairs spread 10x wider than its history
#: said and 5 of 80 met rows missed their truth at 20 df; replayed at 8, 2 of 73 (the committed runs' replay and
#: the simulation of tests/test_stopping.py hold at either). About one run's pairs: a run's own spread soon counts.
MAX_DF = 8
#: Runs are one history only within one state of the host: their reference round trips within this share of the
#: run's. A shared host's state moves the servers' ratios, not only the round trips: on the AMD host of 28 November
#: the dummy's round trip went from 13.1 us in the afternoon to 18.4 us in the evening, and the JDK server's ratio
#: from 1.70 to 1.96 (Jetty's 2.31 to 2.72, Undertow's 1.21 to 1.33). A history of both states took that for the
#: servers' spread between runs (tau 4-13%), and in the next run every server, Undertow and the JDK's included,
#: stopped out of reach. Within a state the runs' round trips agreed within 1-3%.
STATE_BAND = 0.10
#: The shipped prior, pooled over other hosts, weighs as this many degrees of freedom: about two runs' worth.
SHIPPED_DF = 4
#: A server the kit has never measured: the shipped servers' upper quartile, weighed as this many degrees of freedom.
GENERIC_DF = 2
#: tau needs this many earlier runs with at least two pairs.
MIN_RUNS_FOR_TAU = 3
#: The settings that must agree for runs to be one history (with the CPU model and the JDK).
KEY_SETTINGS = ("pinning", "run_length", "segment", "settle", "warmup", "pair_warmup", "jvm_flags")
#: Two modes: each holds at least MODE_MIN_SHARE of the pairs (and two of them) and their means lie at least
#: MODE_SEPARATION pooled within-mode sds apart (Ashman's D of at least 2.8 for equal sds: D > 2 is a clean
#: separation; Ashman, Bird and Zepf, "Detecting bimodality in astronomical datasets", 1994).
MODE_MIN_SHARE = 0.15
MODE_SEPARATION = 4.0
MODE_MIN_PAIRS = 8
#: ... and at least this far apart relative to the fast mode's ratio: a split of a few tenths of a percent between
#: tight pairs is not a speed mode a reader must know of.
MODE_MIN_GAP = 0.04


@dataclass(frozen=True)
class Modes:
    """Two speed modes of a server's pairs: their mean ratios and the share of pairs in the slow one."""
    fast: float
    slow: float
    slow_share: float
    pairs: int


@dataclass(frozen=True)
class Prior:
    """What is known of a server's spread before its pairs: relative sds and their weight."""
    #: Relative sd of a pair's ratio within a run, and the degrees of freedom it is weighed as.
    sigma: float
    df: int
    #: Relative sd of the server's run mean between runs, beyond its pairs' noise (0 where not known).
    tau: float
    #: Earlier runs it comes from, and "history" (this kind of host), "shipped" (prior.json) or "generic" (a server the
    #: kit has not measured: generic()).
    runs: int
    source: str
    modes: Modes | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Prior:
        m = d.get("modes")
        return cls(sigma=float(d["sigma"]), df=int(d["df"]), tau=float(d["tau"]), runs=int(d["runs"]),
                   source=str(d["source"]), modes=Modes(**m) if m else None)


def host_key(settings: dict, env: dict) -> tuple:
    """What makes two runs one history: the CPU model, the JDK build and the measuring settings."""
    jdk = (env.get("jdk") or {}).get("java.runtime.version")
    return (env.get("cpu_model"), jdk, *(json.dumps(settings.get(k), sort_keys=True) for k in KEY_SETTINGS))


def run_ratios(summary: dict) -> dict[str, list[float]]:
    """Per valid server of an analyzed run (its summary.json), its pairs' ratios by the lean client."""
    out = {}
    for s in summary.get("servers", []):
        c = (s.get("clients") or {}).get("lean")
        if s.get("baseline") or not s.get("valid") or not c or not c.get("ratios"):
            continue
        out[s["name"]] = [float(x) for x in c["ratios"]]
    return out


def history(results: Path | Sequence[Path], settings: dict, env: dict, leave_out: str | None = None,
            ref_ns: float | None = None) -> dict[str, list[list[float]]]:
    """Per server, the pairs' ratios of each earlier run like this one: the runs kept in the history files under
    `results` (one folder or several: a run's own results folder and the kit's; remember()) and the analyzed runs
    there (a benchmark's runs one folder deeper count too), each run once, leaving out the run named leave_out; with
    ref_ns, only the runs in the same state of the host (same_state)."""
    key = list(host_key(settings, env))
    runs: dict[str, tuple[float | None, dict[str, list[float]]]] = {}
    for folder in dict.fromkeys(Path(r).resolve() for r in ([results] if isinstance(results, Path) else results)):
        for run, got in _runs(folder, key).items():
            runs.setdefault(run, got)
    out: dict[str, list[list[float]]] = {}
    for run, (ref, servers) in sorted(runs.items()):
        if run != leave_out and (ref_ns is None or same_state(ref, ref_ns)):
            for name, ratios in servers.items():
                out.setdefault(name, []).append(ratios)
    return out


def same_state(ref_ns: float | None, this_ns: float) -> bool:
    """Whether an earlier run's reference round trip (None: not recorded) is within STATE_BAND of this run's."""
    return ref_ns is not None and abs(ref_ns / this_ns - 1) <= STATE_BAND


def reference(summary: dict) -> float | None:
    """An analyzed run's reference round trip by the lean client (the one its history's ratios are of)."""
    ref = (summary.get("ref_ns") or {}).get("lean")
    return None if ref is None else float(ref)


def _runs(results: Path, key: list) -> dict[str, tuple[float | None, dict[str, list[float]]]]:
    """The runs of one results folder with this host key: run id -> (its reference round trip, server -> pair
    ratios)."""
    runs: dict[str, tuple[float | None, dict[str, list[float]]]] = {}
    for path in sorted([*results.glob(HISTORY), *results.glob(f"*/{HISTORY}")]):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if entry["key"] == key:
                runs[entry["run"]] = (entry.get("ref_ns"), entry["servers"])
    for path in sorted([*results.glob("*/summary.json"), *results.glob("*/*/summary.json")]):
        if path.parent.name in runs:
            continue
        try:
            summary = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # a run being written, or not one of ours: not history
        if counts(summary) and list(host_key(summary.get("settings", {}), summary.get("env", {}))) == key:
            runs[path.parent.name] = (reference(summary), run_ratios(summary))
    return runs


def counts(summary: dict) -> bool:
    """Whether an analyzed run is history: not a quick run, not a merge of shards (merge.py: it holds their runs'
    pairs again), not a head-to-head run (its ratios are over another server than the dummy)."""
    settings = summary.get("settings", {})
    return settings.get("profile") != "quick" and not summary.get("merge") and not settings.get("compare")


def remember(run_dir: Path, summary: dict) -> None:
    """Keeps an analyzed run's pair ratios in the history file of its results folder (HISTORY, one line a run,
    replaced when the run is analyzed again), so that a host's history outlives the run folders that leave."""
    settings = summary.get("settings", {})
    if not counts(summary):
        return
    path = run_dir.parent / HISTORY
    lines = [x for x in (path.read_text().splitlines() if path.is_file() else [])
             if json.loads(x)["run"] != run_dir.name]
    lines.append(json.dumps({"run": run_dir.name, "key": list(host_key(settings, summary.get("env", {}))),
                             "ref_ns": reference(summary), "servers": run_ratios(summary)}, separators=(",", ":")))
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(x + "\n" for x in sorted(lines)))
    tmp.replace(path)


def spread(runs: Sequence[Sequence[float]]) -> tuple[float, int, float, int] | None:
    """(sigma, its df, tau, runs used) from a server's earlier runs (each its pairs' ratios); None with no run of two
    pairs or more."""
    used = [r for r in runs if len(r) >= 2]
    df = sum(len(r) - 1 for r in used)
    if not df:
        return None
    sigma2 = sum((len(r) - 1) * statistics.variance([x / statistics.fmean(r) for x in r]) for r in used) / df
    tau = 0.0
    if len(used) >= MIN_RUNS_FOR_TAU:
        means = [statistics.fmean(r) for r in used]
        grand = statistics.fmean(means)
        excess = statistics.variance([m / grand for m in means]) - statistics.fmean(sigma2 / len(r) for r in used)
        tau = math.sqrt(max(excess, 0.0))
    return math.sqrt(sigma2), df, tau, len(used)


def modes(values: Sequence[float]) -> Modes | None:
    """Two speed modes among pair ratios, or None: the split of the sorted values with the largest separation,
    kept when each side holds MODE_MIN_SHARE of them (two at least) and their means are MODE_SEPARATION pooled sds
    and MODE_MIN_GAP apart."""
    xs = sorted(values)
    n = len(xs)
    if n < MODE_MIN_PAIRS:
        return None
    least = max(2, math.ceil(MODE_MIN_SHARE * n))
    best = None
    for k in range(least, n - least + 1):
        lo, hi = xs[:k], xs[k:]
        pooled = math.sqrt(((k - 1) * statistics.variance(lo) + (n - k - 1) * statistics.variance(hi)) / (n - 2))
        sep = (statistics.fmean(hi) - statistics.fmean(lo)) / pooled if pooled > 0 else math.inf
        if best is None or sep > best[0]:
            best = (sep, lo, hi)
    if best is None or best[0] < MODE_SEPARATION:
        return None
    _, lo, hi = best
    if statistics.fmean(hi) < (1 + MODE_MIN_GAP) * statistics.fmean(lo):
        return None
    return Modes(fast=statistics.fmean(lo), slow=statistics.fmean(hi), slow_share=len(hi) / n, pairs=n)


def for_servers(names: Iterable[str], results: Path | Sequence[Path], settings: dict, env: dict,
                leave_out: str | None = None, ref_ns: float | None = None) -> dict[str, Prior]:
    """Per named server, its prior: from its history on this kind of host (in this state of it, with ref_ns), else
    the shipped one, else the generic one (none without a shipped prior)."""
    past = history(results, settings, env, leave_out, ref_ns)
    shipped = load_shipped()
    out = {}
    for name in names:
        got = spread(past.get(name, []))
        if got is not None:
            sigma, df, tau, runs = got
            out[name] = Prior(sigma=sigma, df=min(df, MAX_DF), tau=tau, runs=runs, source="history",
                              modes=modes([x for r in past[name] for x in r]))
        elif name in shipped:
            s = shipped[name]
            out[name] = Prior(sigma=s["sigma"], df=SHIPPED_DF, tau=s["tau"], runs=s["runs"], source="shipped",
                              modes=None)
        elif shipped:
            out[name] = generic(shipped)
    return out


def generic(shipped: dict[str, dict]) -> Prior:
    """The prior of a server the kit has never measured: the upper quartile of the shipped servers' sigma and tau,
    weighed as GENERIC_DF degrees of freedom, so that its first pairs agreeing by luck do not meet a target that a
    server of typical spread would miss; its own pairs soon outweigh it."""
    sigmas = sorted(v["sigma"] for v in shipped.values())
    taus = sorted(v["tau"] for v in shipped.values())
    return Prior(sigma=sigmas[(3 * len(sigmas)) // 4], df=GENERIC_DF, tau=taus[(3 * len(taus)) // 4], runs=0,
                 source="generic")


def load_shipped() -> dict[str, dict]:
    try:
        return json.loads(SHIPPED.read_text())["servers"]
    except FileNotFoundError:
        return {}


def build_shipped(results: Path) -> dict:
    """The shipped prior from every analyzed run under `results`: per server, sigma and tau pooled over the kinds of
    host and their states (root mean square, each weighed by its degrees of freedom or runs)."""
    hosts: dict[tuple, list[tuple[float, dict[str, list[float]]]]] = {}
    for path in sorted([*results.glob("*/summary.json"), *results.glob("*/*/summary.json")]):
        summary = json.loads(path.read_text())
        if counts(summary) and reference(summary) is not None:
            key = host_key(summary.get("settings", {}), summary.get("env", {}))
            hosts.setdefault(key, []).append((reference(summary), run_ratios(summary)))  # type: ignore[arg-type]
    groups: list[dict[str, list[list[float]]]] = []
    for runs in hosts.values():
        first = None  # a state: runs whose reference round trips lie within the band above its fastest
        for ref, servers in sorted(runs, key=lambda r: r[0]):
            if first is None or ref > first * (1 + STATE_BAND):
                first = ref
                groups.append({})
            for name, ratios in servers.items():
                groups[-1].setdefault(name, []).append(ratios)
    per: dict[str, list[tuple[float, int, float, int]]] = {}
    for servers in groups:
        for name, runs in servers.items():
            got = spread(runs)
            if got is not None and got[3] >= MIN_RUNS_FOR_TAU:
                per.setdefault(name, []).append(got)
    out = {}
    for name, parts in sorted(per.items()):
        df = sum(p[1] for p in parts)
        runs = sum(p[3] for p in parts)
        out[name] = {"sigma": round(math.sqrt(sum(p[1] * p[0] ** 2 for p in parts) / df), 5),
                     "tau": round(math.sqrt(sum(p[3] * p[2] ** 2 for p in parts) / runs), 5),
                     "runs": runs, "groups": len(parts)}
    return {"format": "latency-diff/prior/1",
            "about": "relative spreads of each server's ratio, pooled over the committed runs (each kind of host, its "
                     "state and settings a group; latency_diff/prior.py)", "servers": out}


def replay_fixture(results: Path, min_runs: int = 4) -> dict:
    """The committed pairs that tests/test_replay_coverage.py replays: per group of comparable default runs (host_key)
    with at least min_runs runs, each run's reference round trip and each valid server's ratios in measured order."""
    groups: dict[str, dict] = {}
    for path in sorted([*results.glob("*/summary.json"), *results.glob("*/*/summary.json")]):
        summary = json.loads(path.read_text())
        settings, env = summary.get("settings", {}), summary.get("env", {})
        if settings.get("profile") != "default" or summary.get("primary_client") != "lean" or not counts(summary):
            continue
        g = groups.setdefault(json.dumps(host_key(settings, env)),
                              {"host": f"{env.get('cpu_model')} warmup {settings.get('warmup')}", "runs": {}})
        g["runs"][str(path.parent.relative_to(results))] = {
            "ref_ns": round(summary["ref_ns"]["lean"], 1),
            "servers": {k: [round(x, 5) for x in v] for k, v in run_ratios(summary).items()}}
    return {"about": "per comparable group of committed default runs: each run's reference round trip and each valid "
                     "server's pair ratios in the order measured (tests/test_replay_coverage.py)",
            "groups": [g for g in groups.values() if len(g["runs"]) >= min_runs]}


def main(argv: list[str] | None = None) -> int:
    from . import KIT_ROOT
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=KIT_ROOT / "results", help="the runs to pool")
    parser.add_argument("--write", action="store_true", help=f"write {SHIPPED.name} (else print it)")
    parser.add_argument("--fixture", type=Path, metavar="FILE",
                        help="write the replay test's fixture of committed pairs to FILE instead")
    args = parser.parse_args(argv)
    if args.fixture:
        args.fixture.write_text(json.dumps(replay_fixture(args.results), separators=(",", ":")))
        return 0
    text = json.dumps(build_shipped(args.results), indent=1, sort_keys=True) + "\n"
    if args.write:
        SHIPPED.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
