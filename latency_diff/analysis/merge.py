"""Shard runs merged into one table (`analyze.py merge RUN_DIR... [--by-host] [--out DIR]`), compared by ratio.

A sharded run (run-all.sh --shard I/N, shard.py) measures each server on one of N machines, and the anchors and the
ladder on every one. The merge makes one table of the shards, with the outputs an analyzed run has (summary.json,
summary.csv, report.md, report.html, the plots), rendered by the run's own exporters from one merged result model:

- **Rows by ratio.** A row's ratio and its interval are those of its own shard; a row measured on several shards (an
  anchor, a rung of the ladder) is pooled over them (`pool`). The microsecond columns are at one reference round
  trip, the median of the shards' references, stated once under the table.
- **The hosts' spread.** The shards ran on different machines of one type, and a machine's state moves every ratio
  measured on it. The anchors, measured on every shard, show by how much: the spread of an anchor's ratio between
  shards beyond what its pairs' noise explains (`host_spread`). It is added, in quadrature and relative to the
  ratio, to every comparison of rows of different shards: the marks of neighbouring rows not told apart, the
  variant and framework tables (`difference`). Rows of one shard compare as in that shard's own report.
- **What is pooled.** Never runs of different CPU models, JDKs or kit commits, or of other measuring settings; nor
  runs that are not the shards of one sharded run (each shard 1 to N once, all split alike). A whole run is refused
  too: it has no anchors measured alongside the shards, so nothing ties its host to theirs, and its servers would
  be counted twice. `--by-host` shows such runs side by side instead, one column per host (its CPU model, and its
  JDK and kit commit where the columns differ in them), each column merged on its own (the shards of one run, or
  one whole run) and ranked only within itself.

Refusals, a missing or incomplete run, a duplicate shard: MergeError, one line, exit status 2.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from .. import KIT_ROOT, envinfo, prior, rundir, stats, stopping
from ..stats import Summary
from . import evaluate, export
from . import warnings as w
from .export.tables import ranks, side_by_side_rows
from .model import ClientResult, Pair, RunResult, ServerResult

#: Where a merge's folder goes unless --out says otherwise: results/merged-<UTC time>/.
RESULTS = KIT_ROOT / "results"
MERGE_FORMAT = "latency-diff/merge/1"
BY_HOST_FORMAT = "latency-diff/merge-by-host/1"
#: The settings that decide what a ratio measures: shards (or columns) that differ in one are not pooled.
MEASURING = (*prior.KEY_SETTINGS, "profile", "clients", "http", "agent", "hold_s", "precision_pct",
             "precision_floor_us")


class MergeError(Exception):
    """Runs that cannot be merged as asked; the message says which and what to do (exit status 2)."""


@dataclass
class Shard:
    """One run given to the merge: its folder, its result and which shard it is (1 of 1 for a whole run)."""
    dir: Path
    run: RunResult
    index: int
    count: int | None

    @property
    def label(self) -> str:
        return f"shard {self.index} of {self.count} ({self.run.run_id})" if self.count else f"run {self.run.run_id}"


# -- reading and checking ----------------------------------------------------------------------------------------
def load(dirs: list[Path]) -> list[Shard]:
    """Builds every run; a run that is missing, unreadable or incomplete is a MergeError."""
    seen: dict[Path, Path] = {}
    out = []
    for d in dirs:
        key = d.resolve()
        if key in seen:
            also = f" (as {seen[key]} too)" if str(seen[key]) != str(d) else ""
            raise MergeError(f"{d}: given twice{also}: give each shard's run once")
        seen[key] = d
        try:
            r = evaluate.build(d)
        except evaluate.AnalysisError as e:
            raise MergeError(f"{d}: cannot be read: {e}") from e
        if r.status != "complete":
            raise MergeError(f"{d}: the run is {r.status}" + (f" ({r.reason})" if r.reason else "")
                             + ": a merge takes complete runs only; run its shard again (the same command line) and "
                             "merge that run")
        shard = r.settings.get("shard")
        out.append(Shard(d, r, int(shard["index"]) if shard else 1, int(shard["count"]) if shard else None))
    return out


def host_of(r: RunResult) -> tuple[str | None, str | None, str | None]:
    """What no merge pools across: the CPU model, the JDK and the kit commit (as `analyze.py compare` reads them)."""
    return r.env.get("cpu_model"), envinfo.jdk_text(r.env), envinfo.commit_of(r.env)


HOST_FACTS = ("CPU model", "JDK", "kit commit")


def check_hosts(shards: list[Shard]) -> None:
    """Refuses runs of different CPU models, JDKs or kit commits."""
    keys = [host_of(s.run) for s in shards]
    differ = []
    for i, label in enumerate(HOST_FACTS):
        if len({k[i] for k in keys}) > 1:
            each = "; ".join(f"{s.run.run_id}: {k[i] or 'unknown'}" for s, k in zip(shards, keys, strict=True))
            differ.append(f"{label} ({each})")
    if differ:
        raise MergeError("the runs differ in " + " and ".join(differ) + ": a ratio is the host's, the JDK's and the "
                         f"kit's, so they are not pooled{BY_HOST_HINT}")


#: What a refusal suggests: showing the runs side by side (a plain merge), or nothing more (within a column of one).
BY_HOST_HINT = "; show them side by side, one column per host, with --by-host"


def check_set(shards: list[Shard], hint: str = BY_HOST_HINT, *, whole_run: bool = False) -> None:
    """The runs must be the shards of one sharded run (each of 1 to N once, split alike), measured alike (MEASURING);
    or, with whole_run (a column of --by-host), one whole run alone. hint: what a refusal suggests."""
    whole = [s for s in shards if s.count is None]
    if whole and len(shards) == 1 and not whole_run:
        raise MergeError(f"{shards[0].dir}: a whole run, not a shard (no --shard): there is nothing to merge it with; "
                         "analyze it as it is (scripts/analyze.py RUN_DIR), or set it beside other hosts' runs with "
                         "--by-host")
    if whole and len(shards) > 1:
        raise MergeError(f"{', '.join(str(s.dir) for s in whole)}: a whole run, not a shard (no --shard): it has no "
                         "anchors measured beside the others and would count its servers twice, so it is not pooled "
                         f"with them; merge the shards of one run{hint}")
    if whole:
        return
    counts = sorted({s.count for s in shards})
    if len(counts) > 1:
        raise MergeError("the runs are shards of different splits (" + ", ".join(s.label for s in shards)
                         + "): merge the N shards of one sharded run")
    n = counts[0]
    by_index: dict[int, Shard] = {}
    for s in shards:
        if s.index in by_index:
            raise MergeError(f"duplicate shard {s.index} of {n}: {by_index[s.index].dir} and {s.dir} (the same part "
                             "measured twice); give one run of each shard")
        by_index[s.index] = s
    missing = [i for i in range(1, n + 1) if i not in by_index]
    if missing:
        raise MergeError(f"shard(s) {', '.join(map(str, missing))} of {n} missing: the merge needs every shard's run "
                         "(their servers are measured nowhere else)")
    first = shards[0].run.settings["shard"]
    for s in shards[1:]:
        other = s.run.settings["shard"]
        for key, what in (("anchors", "anchors"), ("parts", "split of the servers")):
            if other.get(key) != first.get(key):
                raise MergeError(f"{s.dir} and {shards[0].dir} were made with different {what} ({other.get(key)} "
                                 f"against {first.get(key)}): their shards would measure some servers twice and others "
                                 "never; shard again with one command line (and one kit commit) on every machine")
    check_settings(shards, hint)


def check_settings(shards: list[Shard], hint: str = BY_HOST_HINT) -> None:
    """Refuses shards whose measuring settings differ: their ratios measure different things."""
    a = shards[0]
    for s in shards[1:]:
        for key in MEASURING:
            va, vb = a.run.settings.get(key), s.run.settings.get(key)
            if va != vb:
                raise MergeError(f"setting {key} differs: {json.dumps(va)} in {a.run.run_id}, {json.dumps(vb)} in "
                                 f"{s.run.run_id}: their ratios measure different things, so they are not pooled "
                                 f"(the shards of one command line share it){hint}")


# -- the statistics ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Part:
    """One shard's measurement of a row: its pairs' ratios, the sd of its interval (its own report's, which bounds its
    pairs' sd below: the prior, the units' noise, the target) and the sd of its pairs' noise alone (the stopping rule's
    sd before the target's fixed width: stopping.Interval.stop_sd)."""
    shard: int
    ratios: tuple[float, ...]
    sd: float
    noise_sd: float

    @property
    def n(self) -> int:
        return len(self.ratios)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.ratios)

    @property
    def var(self) -> float:
        """The variance of its mean: its pairs' variance, bounded below by its interval's sd, over its pairs (the part
        each row has in a Welch difference, as in the shard's own report)."""
        return max(statistics.variance(self.ratios), self.sd ** 2) / self.n


def part_of(shard: int, c: ClientResult) -> Part | None:
    """A shard's part of a row by one client; None with fewer than 2 pairs (no interval)."""
    if len(c.ratios) < 2 or c.ratio.stdev is None:
        return None
    iv = c.interval if isinstance(c.interval, stopping.Interval) else None
    noise = iv.stop_sd if iv is not None and iv.stop_sd is not None else c.ratio.stdev
    return Part(shard, tuple(c.ratios), c.ratio.stdev, noise)


def host_spread(anchors: dict[str, list[Part]]) -> dict:
    """How much hosts of one type differ, relative to a ratio: from the anchors' ratios on every shard.

    Per anchor measured on K >= 2 shards with means m_k (each from n_k pairs of noise sd s_k), relative to their mean
    M: the excess of their variance over their noise, var(m_k / M) - mean(s_k^2 / (n_k M^2)), the method-of-moments
    estimate of a between-group variance (DerSimonian and Laird, "Meta-analysis in clinical trials", 1986, with
    equal weights; prior.spread does the same for a server's spread between runs). The anchors' excesses are averaged
    before the square root, and the result is never below 0: {"rel_sd", "df" (the anchors' K - 1, summed), "anchors":
    per anchor its shards' mean ratios and its own estimate}; rel_sd None when no anchor has two shards."""
    per = {}
    excesses, df = [], 0
    for name, parts in anchors.items():
        if len(parts) < 2:
            continue
        grand = statistics.fmean(p.mean for p in parts)
        rel = [p.mean / grand for p in parts]
        noise = statistics.fmean(p.noise_sd ** 2 / p.n / grand ** 2 for p in parts)
        excess = statistics.variance(rel) - noise
        excesses.append(excess)
        df += len(parts) - 1
        per[name] = {"shards": [p.shard for p in parts], "ratios": [round(p.mean, 5) for p in parts],
                     "rel_sd": math.sqrt(max(excess, 0.0))}
    rel_sd = math.sqrt(max(statistics.fmean(excesses), 0.0)) if excesses else None
    return {"rel_sd": rel_sd, "df": df, "anchors": per,
            "method": "the anchors' spread of their ratio between shards beyond their pairs' noise (method of "
                      "moments, DerSimonian and Laird 1986), relative to the ratio"}


@dataclass(frozen=True)
class Pooled:
    """A row's ratio pooled over the shards it was measured on: mean, the variance of the mean, its degrees of
    freedom."""
    mean: float
    var: float
    df: float


def pool(parts: list[Part], rel_sd: float | None, rel_df: int = 0) -> Pooled:
    """Inverse-variance pooling with the hosts' spread as a random effect: shard k weighs w_k = 1 / (v_k + (tau m_k)^2),
    v_k its mean's variance (Part.var) and tau the hosts' relative spread (on rel_df degrees of freedom: host_spread),
    so that the pooled mean is a mean over hosts, its variance 1 / sum(w_k), and a row measured on every shard is no
    more certain than its hosts' spread allows (DerSimonian and Laird's random-effects estimate; a shard's own
    interval would leave the host out, since each shard has one). Its degrees of freedom by Welch-Satterthwaite: the
    v_k on n_k - 1 each, the hosts' part, one estimate for every shard, on rel_df."""
    tau = rel_sd or 0.0
    weights = [1 / (p.var + (tau * p.mean) ** 2) for p in parts]
    total = sum(weights)
    mean = sum(wt * p.mean for wt, p in zip(weights, parts, strict=True)) / total
    var = 1 / total
    shares = [wt / total for wt in weights]
    host = sum(c ** 2 * (tau * p.mean) ** 2 for c, p in zip(shares, parts, strict=True))
    den = sum(c ** 4 * p.var ** 2 / (p.n - 1) for c, p in zip(shares, parts, strict=True))
    den += host ** 2 / rel_df if host and rel_df else 0.0
    return Pooled(mean, var, var ** 2 / den if den > 0 else math.inf)


def _row_estimate(r: RunResult, s: ServerResult) -> tuple[float, float, float, float] | None:
    """(mean ratio, variance of the mean, its degrees of freedom, the hosts' share of that variance) of a merged row, or
    None without an interval. A row of one shard: its pairs with its interval's sd as their floor, plus the hosts'
    spread; a pooled row: its pooled figures, the hosts' spread in them already."""
    c = s.clients.get(s.primary)
    if c is None or len(c.ratios) < 2 or c.ratio.stdev is None:
        return None
    if s.shards is not None and len(s.shards) > 1:
        iv = c.interval
        return c.ratio.mean, c.ratio.stdev ** 2 / c.ratio.n, float(iv.df if iv is not None and iv.df else math.inf), 0.0
    n = len(c.ratios)
    mean = statistics.fmean(c.ratios)
    return mean, max(statistics.variance(c.ratios), c.ratio.stdev ** 2) / n, float(n - 1), (_tau(r) * mean) ** 2


def _tau(r: RunResult) -> float:
    """The merged table's hosts' spread, relative to a ratio (0 when not known)."""
    return ((r.merge or {}).get("host_spread") or {}).get("rel_sd") or 0.0


def difference(r: RunResult, a: ServerResult, b: ServerResult) -> Summary:
    """a's diff minus b's in ns at the merged reference, with a 95% interval: as in a run's own report for two rows of
    one shard (Welch over their pairs, each sd bounded below by its interval's); for rows of different shards, the
    hosts' spread added in quadrature to each row of one shard (relative to its ratio; a pooled row has it in its
    variance already, and counts as of other shards than any single one: cautious, since it shares that shard's host
    in part), with Welch-Satterthwaite degrees of freedom, the hosts' part on the anchors' (host_spread)."""
    if a.shards == b.shards and a.shards is not None and len(a.shards) == 1:
        return stats.welch_difference(a.estimates, b.estimates, a.estimate_sd, b.estimate_sd)
    ref = a.clients[a.primary].ref
    ea, eb = _row_estimate(r, a), _row_estimate(r, b)
    n = min(len(a.estimates), len(b.estimates))
    if ea is None or eb is None:
        mean = (statistics.fmean(a.clients[a.primary].ratios) - statistics.fmean(b.clients[b.primary].ratios)) * ref
        return Summary(mean, mean, None, None, None, n)
    mean = (ea[0] - eb[0]) * ref
    host = ea[3] + eb[3]
    total = ea[1] + eb[1] + host
    if total == 0:
        return Summary(mean, mean, 0.0, mean, mean, n)
    den = sum(v ** 2 / df for _, v, df, _ in (ea, eb) if math.isfinite(df) and df > 0)
    host_df = ((r.merge or {}).get("host_spread") or {}).get("df") or 0
    den += host ** 2 / host_df if host and host_df else 0.0
    df = total ** 2 / den if den > 0 else math.inf
    half = (stats.t_quantile(0.5 + stats.CONFIDENCE / 2, df) if math.isfinite(df) else stopping.Z) * math.sqrt(total)
    return Summary(mean, mean, math.sqrt(total) * ref, mean - half * ref, mean + half * ref, n)


# -- the merged result ---------------------------------------------------------------------------------------------
def _at(ratio: Summary, ref: float) -> Summary:
    """A ratio's summary as a diff in ns at ref: (ratio - 1) x ref, its interval likewise."""
    low = None if ratio.ci95_low is None else (ratio.ci95_low - 1) * ref
    high = None if ratio.ci95_high is None else (ratio.ci95_high - 1) * ref
    return Summary((ratio.mean - 1) * ref, (ratio.median - 1) * ref,
                   None if ratio.stdev is None else ratio.stdev * ref, low, high, ratio.n)


def _times(x: Summary | None, k: float) -> Summary | None:
    if x is None:
        return None
    return Summary(x.mean * k, x.median * k, None if x.stdev is None else x.stdev * k,
                   None if x.ci95_low is None else x.ci95_low * k, None if x.ci95_high is None else x.ci95_high * k,
                   x.n)


def _rescaled(c: ClientResult, ref: float) -> ClientResult:
    """One shard's client result at the merged reference: the same ratios and intervals, the diffs at ref."""
    k = ref / c.ref
    return dataclasses.replace(
        c, ref=ref, diff=_at(c.ratio, ref), estimates=[(x - 1) * ref for x in c.ratios],
        within_sd=None if c.within_sd is None else c.within_sd * k,
        between_sd=None if c.between_sd is None else c.between_sd * k)


def _held(truth: dict | None, diff: Summary | None) -> dict | None:
    """A control's known diff, with whether the merged row's interval holds it."""
    if truth is None or truth.get("ns") is None or diff is None:
        return truth
    held = None if diff.ci95_low is None else bool(diff.ci95_low <= truth["ns"] <= diff.ci95_high)
    return {**truth, "held": held}


def _single(s: ServerResult, shard: int, refs: dict[str, float], target: tuple[float, float]) -> ServerResult:
    """A row measured on one shard, at the merged reference: its ratio and interval are its shard's."""
    clients = {name: _rescaled(c, refs[name]) for name, c in s.clients.items() if name in refs}
    head = clients.get(s.primary)
    k = head.ref / s.clients[s.primary].ref if head is not None else 1.0
    out = dataclasses.replace(s, clients=clients, shards=[shard], warnings=list(s.warnings),
                              diff=head.diff if head else s.diff, cpu_diff=_times(s.cpu_diff, k),
                              modes=None if s.modes is None else {**s.modes, "fast_ns": s.modes["fast_ns"] * k,
                                                                   "slow_ns": s.modes["slow_ns"] * k})
    if head is not None:
        out.target = stopping.target_ns(out.diff.mean, *target)
        out.truth = _held(s.truth, out.diff)
    return out


def _pooled_client(parts: list[tuple[int, ClientResult]], pairs: list[Pair], client: str, ref: float,
                   rel_sd: float | None, rel_df: int, target: tuple[float, float]) -> ClientResult | None:
    """A client's result of a row measured on several shards: figures over all its pairs (round trips, percentiles, the
    plain mean) at the merged reference, and the ratio pooled over the shards (pool), never narrower than the target."""
    c = evaluate.client_result(pairs, client, ref)
    if c is None:
        return None
    got = [p for shard, x in parts if (p := part_of(shard, x)) is not None]
    if len(got) < 2:  # pooled over fewer than two intervals: the figures over every pair, as one run would give them
        return c
    pooled = pool(got, rel_sd, rel_df)
    tq = stats.t_quantile(0.5 + stats.CONFIDENCE / 2, pooled.df) if math.isfinite(pooled.df) else stopping.Z
    half = judged = tq * math.sqrt(pooled.var)
    bound = "pooled"
    goal = stopping.target_ns((pooled.mean - 1) * ref, *target) / ref
    if goal > half:
        half, bound = goal, "target"
    n = len(c.ratios)
    sd = half / tq * math.sqrt(n)  # the sd of one pair that gives this interval over n pairs (the estimate_sd floor)
    ratio = Summary(pooled.mean, statistics.median(c.ratios), sd, pooled.mean - half, pooled.mean + half, n)
    diff = _at(ratio, ref)
    iv = stopping.Interval(ratio, diff, c.own_ratio_sd, sd, bound, math.sqrt(pooled.var * n), judged,
                           round(pooled.df) if math.isfinite(pooled.df) else None, (rel_sd or 0.0) * pooled.mean)
    return dataclasses.replace(c, ratio=ratio, diff=diff, interval=iv, sd_bound=bound)


def _pooled(parts: list[tuple[int, ServerResult]], refs: dict[str, float], spread: dict,
            target: tuple[float, float]) -> ServerResult:
    """A row measured on several shards (an anchor, a rung of the ladder): pooled over them."""
    first = parts[0][1]
    pairs = [p for _, s in parts for p in s.pairs]
    valid = [p for p in pairs if p.valid]
    clients = {}
    for name in first.clients:
        if name in refs and all(name in s.clients for _, s in parts):
            c = _pooled_client([(k, s.clients[name]) for k, s in parts], valid, name, refs[name], spread["rel_sd"],
                               spread["df"], target)
            if c is not None:
                clients[name] = c
    warnings, seen = [], set()
    for _, s in parts:
        for x in s.warnings:
            if x.text not in seen:
                seen.add(x.text)
                warnings.append(x)
    stops = sorted({s.stop for _, s in parts if s.stop})
    out = dataclasses.replace(
        first, pairs=pairs, clients=clients, shards=[k for k, _ in parts], warnings=warnings,
        stop=stops[0] if len(stops) == 1 else (", ".join(stops) or None),
        stop_pairs=sum(s.stop_pairs or 0 for _, s in parts) or None,
        seconds=sum(s.seconds for _, s in parts), measure_seconds=sum(s.measure_seconds for _, s in parts),
        scaling_agrees=None, differs_from_previous=None)
    head = clients.get(out.primary)
    if head is None:
        return out
    out.diff = head.diff
    out.target = stopping.target_ns(out.diff.mean, *target)
    iv = head.interval
    out.target_met = iv.stop_half is not None and iv.stop_half * head.ref <= out.target
    evaluate.costs_of(out, valid, [p.estimate(out.primary) for p in valid], head.ref)
    out.requests = sum(c.requests for p in valid for c in p.costs.values())
    if "ab" in clients and "lean" in clients:
        out.clients_agree = evaluate.overlap(clients["ab"].diff, clients["lean"].diff)
    out.run_length_shift = evaluate.run_length_shift(valid, out.primary)
    with_modes = next((s for _, s in parts if s.modes), None)
    if with_modes is not None:
        k = head.ref / with_modes.clients[with_modes.primary].ref
        out.modes = {**with_modes.modes, "fast_ns": with_modes.modes["fast_ns"] * k,
                     "slow_ns": with_modes.modes["slow_ns"] * k}
    for attr in ("work", "profile"):
        src = next((s for _, s in parts if getattr(s, attr)), None)
        if src is not None:
            setattr(out, attr, getattr(src, attr))
            if attr == "work":
                out.work_pair = src.work_pair
    out.truth = _held(next((s.truth for _, s in parts if s.truth), None), out.diff)
    return out


def merged(shards: list[Shard], run_id: str) -> RunResult:
    """One result model of the shards of one sharded run (checked: check_set), or of one whole run."""
    shards = sorted(shards, key=lambda s: s.index)
    first = shards[0].run
    clients = [c for c in first.clients if all(c in s.run.ref for s in shards)]
    refs = {c: statistics.median(s.run.ref[c] for s in shards) for c in clients}
    anchors = list((first.settings.get("shard") or {}).get("anchors") or [])
    anchor_parts: dict[str, list[Part]] = {}
    for name in anchors:
        for s in shards:
            row = s.run.server(name)
            c = row.clients.get(first.primary) if row is not None and row.valid else None
            got = part_of(s.index, c) if c is not None else None
            if got is not None:
                anchor_parts.setdefault(name, []).append(got)
    spread = host_spread(anchor_parts)
    abs_ns = float(first.settings.get("precision_floor_us", stopping.ABS_TARGET_NS / 1000)) * 1000
    target = (abs_ns, float(first.settings.get("precision_pct", stopping.REL_TARGET * 100)) / 100)
    notes: list[w.RunWarning] = []
    names = list(dict.fromkeys(x.name for s in shards for x in s.run.servers))
    rows = []
    base_name = first.baseline.name if first.baseline else None
    for name in names:
        if name == base_name:
            continue
        found = [(s.index, x) for s in shards if (x := s.run.server(name)) is not None]
        valid = [(k, x) for k, x in found if x.valid]
        for k, x in found:
            if not x.valid and valid:
                notes.append(w.FileNote(f"{name}: invalid on shard {k} ({x.reason}); its row is from shard(s) "
                                        f"{', '.join(str(j) for j, _ in valid)}"))
        if not valid:
            x = found[0][1]
            rows.append(dataclasses.replace(x, shards=[j for j, _ in found],
                                            reason="; ".join(f"shard {j}: {y.reason}" for j, y in found)))
        elif len(valid) == 1:
            rows.append(_single(valid[0][1], valid[0][0], refs, target))
        else:
            rows.append(_pooled(valid, refs, spread, target))
    settings = {k: v for k, v in first.settings.items() if k != "shard"}
    settings["servers"] = list(names)
    env = {k: v for k, v in first.env.items() if k != "busy"}  # each shard's report has its own machine's load
    count = shards[0].count
    info = {"format": MERGE_FORMAT, "count": count, "shards": [s.index for s in shards], "anchors": anchors,
            "client": first.primary, "ref_ns": refs.get(first.primary),
            "runs": [{"run_id": s.run.run_id, "shard": s.index, "ref_ns": s.run.ref.get(first.primary),
                      "seconds": s.run.seconds, "kernel": s.run.env.get("kernel")} for s in shards],
            "host_spread": spread}
    r = RunResult(run_id=run_id, status="complete", reason=None, settings=settings, env=env, servers=[], warnings=[],
                  clients=tuple(clients), primary=first.primary, seconds=None, caveat=first.caveat, ref=refs,
                  merge=info)
    if first.baseline is not None:
        base = dataclasses.replace(first.baseline, clients={}, valid=False, reason=None, pairs=[],
                                   shards=[s.index for s in shards])
        r.servers.append(base)
    r.servers += rows
    if first.baseline is not None:
        evaluate.baseline_row(r, r.servers[0])
    r.ref_spread = evaluate.reference_spreads(r)
    r.host_speed = evaluate.host_speed(r)
    ranked = [s for s in r.ranked if not s.baseline]
    for s in ranked:  # a row's mark is against the row above it here, not in its shard
        s.differs_from_previous = None
    for prev, cur in zip(ranked, ranked[1:], strict=False):
        if len(cur.estimates) < 2 or len(prev.estimates) < 2:
            cur.differs_from_previous = None
            continue
        d = difference(r, cur, prev)
        cur.differs_from_previous = None if d.ci95_low is None else not d.ci95_low <= 0 <= d.ci95_high
    if len(shards) > 1 and spread["rel_sd"] is None:
        notes.insert(0, w.HostSpreadUnknown(len(shards)))
    notes += _env_notes(shards)
    for s in shards:
        notes += [w.FileNote(f"{s.label}: {x.text}") for x in s.run.warnings]
    r.warnings = notes
    return r


def _env_notes(shards: list[Shard]) -> list[w.RunWarning]:
    """The facts of the machines other than those no merge pools across, where the shards differ in them."""
    out: list[w.RunWarning] = [
        w.FileNote(f"{s.label}: the kit had uncommitted changes: its commit does not say which code measured it")
        for s in shards if (s.run.env.get("kit") or {}).get("dirty")]
    for label, fact in envinfo.FACTS:
        if label in HOST_FACTS:
            continue
        values = [fact(s.run.env) if callable(fact) else s.run.env.get(fact) for s in shards]
        if len({json.dumps(v, sort_keys=True, default=str) for v in values}) > 1:
            out.append(w.FileNote(f"{label} differs between the shards: " + "; ".join(
                f"shard {s.index}: {envinfo.shown(label, v)}" for s, v in zip(shards, values, strict=True))
                + " (the hosts' spread, from the anchors, holds what it does to the ratios)"))
    return out


# -- writing -------------------------------------------------------------------------------------------------------
def utc_stamp() -> str:
    """Now, as a run's folder is named: 20261128T184903Z."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def out_dir(out: Path | None) -> Path:
    """The merge's new folder: --out, which must not exist, or results/merged-<UTC time>[-k]; never an existing one."""
    if out is not None:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.mkdir()
        except FileExistsError:
            raise MergeError(f"{out}: exists; a merge never writes into an existing folder: give a new --out") from None
        except OSError as e:
            raise MergeError(f"{out}: cannot create it: {e.strerror}") from e
        return out
    stamp = utc_stamp()
    try:
        RESULTS.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise MergeError(f"{RESULTS}: cannot create it: {e.strerror}") from e
    for i in range(1, 100):
        d = RESULTS / (f"merged-{stamp}" if i == 1 else f"merged-{stamp}-{i}")
        try:
            d.mkdir()
            return d
        except FileExistsError:
            continue
    raise MergeError(f"no free folder name merged-{stamp}[-k] under {RESULTS}")


def _flamegraphs(out: Path, r: RunResult, shards: list[Shard]) -> list[Path]:
    """Each profiled row's flame graph, from its shard's folder (written by the shard's analysis) or its logs."""
    written = []
    for s in r.ranked:
        if not s.profile or not s.profile.get("flamegraph") or not s.shards:
            continue
        name = evaluate.flamegraph_name(s.name)
        tag = f"{s.name}-p{s.profile['pair']}"
        text = None
        for src in (x for k in s.shards for x in shards if x.index == k):  # a pooled row's profile: its first shard's
            path = src.dir / name
            text = path.read_text(encoding="utf-8") if path.is_file() else next(
                (o["text"] for o in rundir.flamegraphs(src.dir) if o.get("tag") == tag),
                None)
            if text is not None:
                break
        if text is None:
            continue
        dest = out / name
        dest.parent.mkdir(exist_ok=True)
        rundir.write_atomic(dest, text)
        written.append(dest)
    return written


def write(out: Path, r: RunResult, shards: list[Shard]) -> list[Path]:
    """The merged table's outputs, by the run's own exporters. Raises export.ExportError."""
    written = export.write_all(out, r)
    try:
        written += _flamegraphs(out, r, shards)
    except (OSError, rundir.RunDirError) as e:
        raise export.ExportError(f"{out}: cannot copy the flame graphs: {e}") from e
    return written


# -- side by side (--by-host) ------------------------------------------------------------------------------------
@dataclass
class Column:
    """One host of a side-by-side merge: its runs merged, and where its own outputs go."""
    label: str
    shards: list[Shard]
    result: RunResult
    folder: str


def hosts(shards: list[Shard]) -> list[tuple[str, list[Shard]]]:
    """The runs grouped by host (CPU model, JDK, kit commit) in the order given, each group checked (check_set), with
    its label: the CPU model, and the JDK and kit commit where the groups differ in them."""
    groups: dict[tuple, list[Shard]] = {}
    for s in shards:
        groups.setdefault(host_of(s.run), []).append(s)
    keys = list(groups)
    out = []
    for key in keys:
        try:
            check_set(groups[key], hint=" (a column is the shards of one run, or one whole run)", whole_run=True)
        except MergeError as e:
            raise MergeError(f"host {key[0] or 'unknown CPU'}: {e}") from e
        label = key[0] or "unknown CPU"
        if len({k[1] for k in keys}) > 1:
            label += f", JDK {key[1] or 'unknown'}"
        if len({k[2] for k in keys}) > 1:
            label += f", kit {(key[2] or 'unknown')[:8]}"
        out.append((label, groups[key]))
    return out


def columns(groups: list[tuple[str, list[Shard]]], prefix: str) -> list[Column]:
    """Each host's runs merged on its own (hosts' groups), its folder host-<k> and its run id <prefix>-host-<k>."""
    return [Column(label, group, merged(group, f"{prefix}-host-{i}"), f"host-{i}")
            for i, (label, group) in enumerate(groups, 1)]


def side_by_side(cols: list[Column]) -> tuple[tuple[str, ...], list[list[str]], set[int]]:
    """A row per server valid on any host: per column its ratio, its diff at the column's reference with its interval
    (marked where it is not told apart from the row above it in that column) and its rank within the column."""
    from .export import tables
    head = ["server"]
    for i in range(1, len(cols) + 1):
        head += [f"ratio {i}", f"diff {i} [us]", f"95% CI {i} [us]", f"rank {i}"]

    def cells(s: ServerResult, rank: int) -> list[str]:
        mark = f" {tables.NOT_SIGNIFICANT}" if s.differs_from_previous is False else ""
        return [f"{s.clients[s.primary].ratio.mean:.3f}", tables.us(s.diff.mean) + mark, tables.ci_text(s.diff),
                str(rank)]

    return tuple(head), side_by_side_rows([c.result for c in cols], None, cells, 4), set(range(1, len(head)))


def column_lines(cols: list[Column]) -> list[str]:
    """What each column is, once under the side-by-side table: its runs, its reference, its hosts' spread."""
    from .export import tables
    out = []
    for i, c in enumerate(cols, 1):
        m = c.result.merge
        what = (f"shards {', '.join(str(s.index) for s in c.shards)} of {c.shards[0].count}" if c.shards[0].count
                else "a whole run")
        spread = (m["host_spread"] or {}).get("rel_sd")
        out.append(f"{i}. {c.label}: {what} ({', '.join(s.run.run_id for s in c.shards)}); diffs at "
                   f"{tables.us(m['ref_ns'])} us, its reference; hosts' spread "
                   + ("-" if len(c.shards) < 2 else "not known" if spread is None else f"{spread:.1%}")
                   + f"; its own report: {c.folder}/report.md")
    return out


BY_HOST_TEXT = ("Each column is one host (CPU model, JDK, kit commit), merged on its own and ranked within itself: "
                "columns are not pooled and their ranks are not comparable across them. ratio: server over dummy round "
                "trip; diff: (ratio - 1) x the column's reference; ≈: not told apart from the row above in its "
                "column (rows of different shards with the hosts' spread added); rank: among the column's servers "
                "(the ladder left out). Compare hosts by ratio.")


def write_by_host(out: Path, cols: list[Column]) -> list[Path]:
    """The side-by-side outputs (summary.json, summary.csv, report.md, report.html) and each column's full outputs in
    its own folder. Raises export.ExportError."""
    import csv
    import io

    from .export import html, tables
    written = []
    for c in cols:
        (out / c.folder).mkdir()
        written += write(out / c.folder, c.result, c.shards)
    t = side_by_side(cols)
    lines = column_lines(cols)
    title = f"latency-diff: {len(cols)} hosts side by side"
    md = "\n".join([f"# {title}", "", tables.render_md(t), "", BY_HOST_TEXT, "", *lines, ""]) + "\n"
    page = html._page(title, [f"<h1>{title}</h1>", html.table_html(t, "sortable main"),
                              f"<p class=\"note\">{html._inline(BY_HOST_TEXT)}</p>", html._list(lines)])
    data = {"format": BY_HOST_FORMAT, "merge": {"by_host": True, "columns": [
        {"label": c.label, "folder": c.folder, "runs": [s.run.run_id for s in c.shards],
         "shards": [s.index for s in c.shards], "count": c.shards[0].count, "ref_ns": c.result.merge["ref_ns"],
         "host_spread": c.result.merge["host_spread"], "cpu_model": host_of(c.result)[0], "jdk": host_of(c.result)[1],
         "kit": host_of(c.result)[2]} for c in cols]}, "servers": []}
    col_ranks = [ranks(c.result) for c in cols]
    buf = io.StringIO()
    cw = csv.writer(buf, lineterminator="\n")
    cw.writerow(["name"] + [f"{k}_{i}" for i in range(1, len(cols) + 1)
                            for k in ("ratio", "diff_ns", "diff_ns_ci95_low", "diff_ns_ci95_high", "rank",
                                      "differs_from_previous")])
    for name in [row[0] for row in t[1]]:
        entry, csv_row = {"name": name, "columns": []}, [name]
        for c, rk in zip(cols, col_ranks, strict=True):
            s = c.result.server(name)
            if s is None or not s.valid or s.ladder:
                entry["columns"].append(None)
                csv_row += [""] * 6
                continue
            d = s.diff
            entry["columns"].append({"ratio": s.clients[s.primary].ratio.mean, "diff_ns": d.mean,
                                     "diff_ns_ci95_low": d.ci95_low, "diff_ns_ci95_high": d.ci95_high,
                                     "rank": rk[name], "differs_from_previous": s.differs_from_previous,
                                     "shards": s.shards})
            csv_row += [f"{s.clients[s.primary].ratio.mean:.4f}", f"{d.mean:.1f}",
                        "" if d.ci95_low is None else f"{d.ci95_low:.1f}",
                        "" if d.ci95_high is None else f"{d.ci95_high:.1f}", rk[name],
                        "" if s.differs_from_previous is None else s.differs_from_previous]
        data["servers"].append(entry)
        cw.writerow(csv_row)
    for name, text in (("summary.json", export.summary_json.dumps(data)), ("summary.csv", buf.getvalue()),
                       ("report.md", md), ("report.html", page)):
        try:
            rundir.write_atomic(out / name, text)
        except OSError as e:
            raise export.ExportError(f"{out / name}: cannot write: {e.strerror}") from e
        written.append(out / name)
    return written

