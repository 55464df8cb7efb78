"""From a run directory's records to its result model: parse every block, pair the units, scale, summarize, check.

A pair counts only if it was measured and every block passes every check (no failed or non-2xx
request, every response the length of the process's checked response, all kept alive). A server
with any failed pair is invalid, with the reason, and is left out of the comparison.

Per server and client: each pair's units (paired.py) give its scaled diff, its ratio and its
unscaled diff; the server's figures are their means over pairs with Student-t 95% intervals. The
reference baseline round trip that the diffs are scaled to is the median over every valid pair of
the run (every server, the ladder and the null pair) of its baseline round trip, per client. The
headline client is the interleaved lean client when the run used it, else ab.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from .. import histogram, lean, paired, rundir, stats, stopping
from ..abparse import AbParseError
from ..abparse import parse as parse_ab
from ..measure import counting, profiling
from ..prior import Prior
from ..prior import modes as prior_modes
from ..records import INTERLEAVED, BlockRecord, CostRecord, PairRecord
from ..stats import Summary
from . import controls
from . import warnings as w
from .model import ClientResult, Costs, Pair, RunResult, Scaling, ServerResult

BODY_BYTES = 10
#: The CPU cross-check (shared pinning; _cpu_check): it fires when, in every pair and on the same side, the latency
#: diff minus the CPU-time diff exceeds the /proc resolution (CPU_CHECK_TICKS clock ticks per process over its
#: requests: utime and stime, each read truncated to a tick) plus max(CPU_CHECK_ABS_NS, CPU_CHECK_REL x |diff|).
#: The committed runs (31 under shared pinning, 281 server rows, the ladder left out) show a systematic gap for
#: servers that wait in epoll: 0.5-1.3 us on the AMD host (22-49% of a 2-3 us diff: Undertow, Vert.x, Netty,
#: microhttp), 0.1-1.6 us on the Intel one: most likely kernel work that /proc charges to neither process. A row's
#: margin (its smallest per-pair gap beyond the tick allowance) is 4.3-6.3 us for the clear outliers, NanoHTTPD
#: (+7.6 us of 16.6 on AMD, +5 to +9.6 of 27-29 on the earlier Intel runs) and JDK 21's HttpServer (+7.4 of 20.3),
#: and 7.7-16.6 us for RESTEasy (CPU above latency: its tail, CpuInTail); every other row's is at most 1.3 us
#: (jdk-vt, 3.5% of 38 us; then NanoHTTPD in the Intel reference run, 1.06 of 16.8, Pekko 0.84 of 54, Tomcat 0.77
#: of 10). Against 1.5 us or 10% the outliers' margins are 1.6-3.8x over and every other row's at most 0.63x (that
#: NanoHTTPD row); without each run's short first pair (34k requests: a 1.2 us tick allowance) that row fires too,
#: and no other.
CPU_CHECK_ABS_NS = 1500.0
CPU_CHECK_REL = 0.10
CPU_CHECK_TICKS = 2
#: Without waiting for the JIT, a JVM that served fewer requests than this is still interpreting and compiling
#: while it is measured (the default profile warms up with half as many, then waits for the JIT and tops up).
WARM_REQUESTS = 100_000
#: The JIT compiler threads' share of a pair's measured time above which a server is warned about (its worst pair).
#: Below it the JIT's work does not move the diff: over the 604 pairs of the committed default-profile runs (servers
#: with 3 or more pairs), a pair's ratio deviates from its server's mean by +0.04% (sd 1.64%, 282 pairs) with the JIT
#: under 0.1% of the time, -0.20% (194) at 0.1-1%, +0.35% (67) at 1-3%, 0.00% (51) at 3-10% and +0.29% (10) above
#: 10%; correlation 0.03. The warm-up's own rule (warmup.JIT_BUSY_SHARE, 1%) stays: it is cheap to wait there.
JIT_WARN_SHARE = 0.10
#: The floor's ratio to the dummy should hold within this relative sd over its pairs. In the committed runs under
#: shared pinning it is 0.03-0.62% on the AMD host (19 runs, median 0.19%), 0.43% in the Intel reference run, and
#: 0.16-0.68% in the earlier Intel runs but for six (1.6-3.5%), each with one or two pairs whose ratio lies 3-7% off
#: the others'. With 3 pairs an sd estimate exceeds the true sd by 2.3x once in 200 (chi-square, 2 df), so 1% (3-5x
#: the typical 0.2-0.3%) stays quiet on a steady floor and fires on those six.
FLOOR_RATIO_SD_MAX = 0.01
#: The scaling check (scaling): a slope with a permutation p-value under this is significant.
SCALING_ALPHA = 0.05
#: The busy-machine check: other processes' share of the machine's CPU time in the run's busiest window
#: (latency_diff/measure/busy.py) above this is a warning: a tenth of the machine, a fifth of one CPU of two.
BUSY_SHARE_MAX = 0.10
FLOOR = "floor"


class AnalysisError(Exception):
    """The run directory cannot be analyzed; the message names the file and the field."""


# -- reading ---------------------------------------------------------------------------------------
def _costs(record: CostRecord, where: str) -> Costs:
    try:
        ns_per_tick = 1e9 / record.clock_ticks_per_s
        n = record.requests
        out = Costs(requests=n, cpu_user_ns=record.utime_ticks * ns_per_tick / n,
                    cpu_system_ns=record.stime_ticks * ns_per_tick / n,
                    jit_cpu_ms=record.jit_ticks * ns_per_tick / 1e6, wall_s=float(record.wall_s),
                    jit_ns=record.jit_ticks * ns_per_tick / n, jvm_error=record.jvm_error, tick_ns=ns_per_tick)
        jvm = record.jvm
        if jvm:
            out.alloc_bytes = jvm["allocated_bytes"] / n if jvm["allocated_bytes"] >= 0 else None
            out.gc_count, out.gc_time_ms = int(jvm["gc_count"]), int(jvm["gc_time_ms"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
        raise AnalysisError(f"{where}: bad cost record ({e!r})") from e
    return out


def _block_where(files: rundir.RunFiles, b: BlockRecord) -> str:
    spot = "" if b.client in INTERLEAVED else f" quad {b.quad} slot {b.slot} ({b.target})"
    return f"{files.dir / rundir.BLOCKS}: {b.server} pair {b.pair} {b.client} block{spot}"


def read_pair(files: rundir.RunFiles, rec: PairRecord) -> Pair:
    """One pair record with its blocks, parsed and checked. Raises AnalysisError when a block is unreadable."""
    p = Pair(pair=rec.pair, status=rec.status, round=rec.round, reason=rec.reason, phase=rec.phase, http=rec.http,
             seconds=dict(rec.seconds))
    if rec.status != "measured":
        return p  # failed or interrupted: the reason says why; nothing of it counts
    blocks = files.blocks.get((rec.server, rec.pair), [])
    if not blocks:
        raise AnalysisError(f"{files.dir / rundir.PAIRS}: {rec.server} pair {rec.pair}: measured but no blocks in "
                            f"{rundir.BLOCKS}")
    lengths = {"base": rec.base.response_bytes if rec.base else None,
               "server": rec.process.response_bytes if rec.process else None}
    requests = rec.interleave["requests"] if rec.interleave else None
    single_requests = files.settings.get("ab_requests") if "ab_requests" in files.settings else \
        files.settings.get("block_requests")
    problems, complete = _block_set_problems(rec, blocks)
    quads: dict[tuple[str, int], list[tuple[int, str, float, float]]] = {}
    for b in blocks:
        where = _block_where(files, b)
        if b.client == "lean-check":
            try:
                check = lean.parse_pair(b.output, where)
            except lean.LeanParseError as e:
                raise AnalysisError(str(e)) from e
            problems += [f"lean client (run-length check): {x}" for x in check.problems(
                requests=(rec.check or {}).get("requests"), response_bytes=lengths)]
            p.check_units, p.check_run = [_segment_unit(g) for g in check.segments], check.run
            continue
        if b.client == "lean-pair":
            try:
                run = lean.parse_pair(b.output, where)
            except lean.LeanParseError as e:
                raise AnalysisError(str(e)) from e
            problems += [f"lean client: {x}" for x in run.problems(requests=requests, response_bytes=lengths)]
            p.units.setdefault("lean", []).extend(_segment_unit(g) for g in run.segments)
            hists = p.histograms.setdefault("lean", {"base": [], "server": []})
            for g in run.segments:
                for who in ("base", "server"):
                    hists[who].append(g[who].histogram)
            continue
        who = "baseline" if b.target == "base" else "server"
        if b.client == "lean":
            try:
                one = lean.parse(b.output, where)
            except lean.LeanParseError as e:
                raise AnalysisError(str(e)) from e
            why = one.problems(requests=files.settings.get("block_requests"), response_bytes=lengths[b.target])
            if not one.completed:
                why = why or ["lean client completed no request"]
            else:
                quads.setdefault(("lean", b.quad), []).append(
                    (b.slot, b.target, paired.trimmed_mean(one.histogram), one.rtt_ns))
                p.histograms.setdefault("lean", {"base": [], "server": []})[b.target].append(one.histogram)
        else:
            try:
                ab = parse_ab(b.output, where)
            except AbParseError as e:
                raise AnalysisError(str(e)) from e
            why = ab.problems(requests=single_requests, response_bytes=lengths[b.target], body_bytes=BODY_BYTES)
            quads.setdefault(("ab", b.quad), []).append((b.slot, b.target, ab.block_rtt_ns, ab.rtt_ns))
        problems += [f"{b.client} block (quad {b.quad}, {who}): {x}" for x in why]
    for (client, q), blocks4 in sorted(quads.items()):
        if (client, q) in complete and len(blocks4) == 4:
            blocks4.sort()
            p.units.setdefault(client, []).append(paired.quad_unit([x[1] for x in blocks4], [x[2] for x in blocks4],
                                                                   [x[3] for x in blocks4]))
    if not problems and not any(p.units.values()):
        problems.append("the pair yielded no complete unit (no ABBA quad or segment of both processes)")
    if problems:
        p.reason = "; ".join(problems[:3]) + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else "")
    for who, c in rec.costs.items():
        p.costs[who] = _costs(c, f"{files.dir / rundir.PAIRS}: {rec.server} pair {rec.pair}")
    p.profile = rec.profile
    if rec.counts:
        p.work_problem = rec.counts.get("problem")
        if p.work_problem is None:
            try:
                p.work = {who: counting.per_request(rec.counts[who]) for who in ("base", "server")}
            except (KeyError, TypeError, ZeroDivisionError) as e:
                raise AnalysisError(f"{files.dir / rundir.PAIRS}: {rec.server} pair {rec.pair}: its counting window "
                                    f"is incomplete ({type(e).__name__}: {e})") from e
    return p


def _block_set_problems(rec: PairRecord, blocks: list[BlockRecord]) -> tuple[list[str], set[tuple[str, int]]]:
    """What is wrong with a measured pair's set of blocks, and its complete ABBA quads ((client, quad)).

    pair.measure writes one lean-pair block per pair (one interleaved run, all its segments, which the record's
    `interleave` describes) and, per ABBA quad, one block in each slot 0-3, two of each process. A block on record
    twice (byte-identical: one block read twice) or missing, a second interleaved run, a quad of other than four
    blocks: each makes the pair invalid, never a unit dropped or counted twice."""
    problems = []
    checks = [b for b in blocks if b.client == "lean-check"]
    if len(checks) > 1:
        problems.append(f"the run-length check is on record {len(checks)} times, but a pair has one")
    runs = [b for b in blocks if b.client == "lean-pair"]
    if len(runs) > 1:
        same = all(b.to_json() == runs[0].to_json() for b in runs[1:])
        problems.append(f"the lean-pair block is on record {len(runs)} times (byte-identical: one block read more than "
                        "once)" if same else f"{len(runs)} lean-pair blocks, but the pair's record says one "
                        "interleaved run")
    elif not runs and rec.interleave:
        problems.append(f"the pair's record says an interleaved run of {rec.interleave.get('requests')} requests, but "
                        "no lean-pair block is on record")
    quads: dict[tuple[str, int], dict[int, list[BlockRecord]]] = {}
    for b in blocks:
        if b.client not in INTERLEAVED:
            quads.setdefault((b.client, b.quad), {}).setdefault(b.slot, []).append(b)  # type: ignore[arg-type]
    expected = (rec.ab or {}).get("quads")
    found = {q for client, q in quads if client == "ab"}
    if expected is not None and found != set(range(expected)):
        problems.append(f"ab: quads {sorted(found)} on record, but the pair's record says {expected}")
    complete = set()
    for (client, q), slots in sorted(quads.items()):
        twice = [(slot, same) for slot, same in sorted(slots.items()) if len(same) > 1]
        for slot, same in twice:
            identical = all(b.to_json() == same[0].to_json() for b in same[1:])
            problems.append(f"{client} quad {q} slot {slot} is on record {len(same)} times"
                            + (" (byte-identical: one block read more than once)" if identical
                               else ", with different outputs"))
        targets = sorted(same[0].target for same in slots.values())
        if twice:
            continue
        if len(slots) != 4:
            problems.append(f"{client} quad {q} has {len(slots)} block{'s' if len(slots) != 1 else ''}, not 4")
        elif targets != ["base", "base", "server", "server"]:
            problems.append(f"{client} quad {q} measured {', '.join(targets)}: not two blocks of each process")
        else:
            complete.add((client, q))
    return problems, complete


def _segment_unit(g: dict[str, lean.SegmentSide]) -> paired.Unit:
    b, s = g["base"], g["server"]
    return paired.Unit(paired.trimmed_mean(b.histogram), paired.trimmed_mean(s.histogram), b.mean_ns, s.mean_ns)


def build(run_dir: Path) -> RunResult:
    """Reads and evaluates a run directory. Raises AnalysisError naming the file and the field."""
    try:
        files = rundir.load(run_dir)
    except rundir.RunDirError as e:
        raise AnalysisError(str(e)) from e
    settings = files.settings
    clients = tuple(settings.get("clients") or ("lean",))
    primary = "lean" if "lean" in clients else "ab"
    servers: list[ServerResult] = []
    for meta in files.run["servers"]:
        try:
            s = ServerResult(name=meta["name"], display=meta["display"], threading=meta["threading"],
                             library=meta.get("library"), library_version=meta.get("library_version"),
                             notes=meta.get("notes", ""), jvm_flags=meta.get("jvm_flags", []),
                             baseline=bool(meta.get("baseline")), reference=bool(meta.get("reference")),
                             http=meta.get("http", "1.0"), runs_on=meta.get("runs_on"), primary=primary,
                             variant=meta.get("variant"), variant_of=(meta.get("variant") or {}).get("of"))
        except KeyError as e:
            raise AnalysisError(f"{run_dir / rundir.RUN}: a server entry lacks field {e}") from e
        mine = sorted((r for r in files.pairs if r.server == s.name), key=lambda r: r.pair)
        s.pairs = [read_pair(files, r) for r in mine]
        servers.append(s)
    _read_stacks(run_dir, servers)
    strays = sorted({r.server for r in files.pairs} - {s.name for s in servers})
    if strays:
        raise AnalysisError(f"{run_dir / rundir.PAIRS}: pairs of server(s) not in run.json: {', '.join(strays)}")
    result = RunResult(run_id=files.run.get("run_id", run_dir.name), status=files.run["status"],
                       reason=files.run.get("reason"), settings=settings, env=files.env, servers=servers,
                       warnings=[w.FileNote(n) for n in files.notes], clients=clients, primary=primary,
                       seconds=files.run.get("seconds"), caveat=_cold_caveat(settings),
                       stops=files.run.get("stops"),
                       priors={k: Prior.from_dict(v) for k, v in (files.run.get("priors") or {}).items()})
    evaluate(result)
    for s in servers:
        if s.valid and not s.baseline:
            _profile_of(s, {m["name"]: m for m in files.run["servers"]})
    if any(s.name in controls.CONTROLS for s in servers):
        _truths(run_dir, result)
    return result


def _truths(run_dir: Path, r: RunResult) -> None:
    """A control's known diff (controls.py), from its valid pairs' own clocks: the mean over fresh processes of the
    configured spin (expected_ns) plus the spins' measured overshoot (median - configured, their mean); and whether
    the row's interval holds it."""
    try:
        known = controls.truths(run_dir)
    except (ValueError, rundir.RunDirError) as e:
        raise AnalysisError(str(e)) from e
    for s in r.servers:
        if s.name not in known or not s.valid or s.diff is None:
            continue
        ts = [t for p in s.pairs if p.valid and (t := known[s.name].get(p.pair)) and t.spin_ns_median is not None]
        if not ts:
            s.truth = {"ns": None, "pairs": 0, "held": None}
            continue
        ns = ts[0].expected_ns + statistics.fmean(t.spin_ns_median - t.configured_ns for t in ts)
        held = None if s.diff.ci95_low is None else bool(s.diff.ci95_low <= ns <= s.diff.ci95_high)
        s.truth = {"ns": ns, "pairs": len(ts), "modes": sorted({t.mode for t in ts}), "held": held}


def _read_stacks(run_dir: Path, servers: list[ServerResult]) -> None:
    """The collapsed stacks of the pairs that were profiled, from the run's logs, and whether their flame graphs are
    kept (read only when there are some)."""
    tags = {p.profile["tag"]: p for s in servers for p in s.pairs if p.profile and p.profile.get("tag")}
    if not tags:
        return
    for obj in rundir.logs(run_dir):
        if obj.get("kind") == "profile" and obj.get("tag") in tags:
            tags[obj["tag"]].stacks = obj["text"]
    for obj in rundir.flamegraphs(run_dir):
        if obj.get("tag") in tags:
            tags[obj["tag"]].flamegraph = True


def flamegraph_name(server: str) -> str:
    return f"flames/{server}.html"


def _profile_of(s: ServerResult, meta: dict[str, dict]) -> None:
    """Where the server's CPU time goes: the first valid pair's profile, grouped (profiling.where_time_goes), at
    the server's CPU per request."""
    done = [p for p in s.pairs if p.valid and p.stacks is not None and "problem" not in (p.profile or {})]
    if not done:
        s.profile_problem = next((f"pair {p.pair}: {p.profile['problem']}" for p in s.pairs
                                  if p.profile and "problem" in p.profile), None)
        return
    p = done[0]
    below, seen = [], set()
    under = meta.get(s.name, {}).get("runs_on")
    while under and under not in seen:  # the servers it runs on, down the chain (Quarkus on Vert.x on Netty)
        seen.add(under)
        m = meta.get(under) or _discovered(under)
        below += profiling.packages(m.get("library"), under) if m else ()
        under = m.get("runs_on") if m else None
    own = profiling.packages(s.library, s.name)
    server_pkg, framework_pkg = (tuple(below), own) if s.runs_on else (own, ())
    try:
        samples, shares = profiling.where_time_goes(p.stacks, server_pkg, framework_pkg)  # type: ignore[arg-type]
    except ValueError as e:
        raise AnalysisError(f"{s.name} pair {p.pair}: its profile: {e}") from e
    costs = [q.costs["server"] for q in s.pairs if q.valid and "server" in q.costs]
    us = (profiling.per_request(shares, statistics.fmean(c.cpu_ns for c in costs),
                                statistics.fmean(c.jit_ns for c in costs)) if costs else None)
    s.profile = {"pair": p.pair, "event": (p.profile or {}).get("event"), "samples": samples,
                 "shares": {g: round(v, 4) for g, v in shares.items()},
                 "us_per_request": None if us is None else {g: round(v, 3) for g, v in us.items()},
                 "flamegraph": flamegraph_name(s.name) if p.flamegraph else None}


def _discovered(name: str) -> dict | None:
    """A server's metadata from the kit's modules, for one the run did not measure."""
    from ..servers import discover
    return next(({"library": x.library, "runs_on": x.runs_on} for x in discover() if x.name == name), None)


# -- evaluating --------------------------------------------------------------------------------------
def _summary(values: list[float | int | None]) -> Summary | None:
    present = [v for v in values if v is not None]
    return stats.summarize(present) if present else None


def client_result(pairs: list[Pair], client: str, ref_ns: float, run_rel_sd: float | None = None,
                  prior: Prior | None = None, target: tuple[float, float] | None = None) -> ClientResult | None:
    """One client's figures over a server's valid pairs (None if it measured none of them). The ratio's and the diff's
    intervals are the stopping rule's (stopping.interval): the pairs' spread with what the server's prior says of it,
    bounded below by the units' noise (and, without a prior, by the run's relative spread run_rel_sd), with the
    server's spread between runs, and never narrower than the precision target (abs_ns, rel); the diff's is the
    ratio's at ref_ns."""
    used = [p for p in pairs if p.units.get(client)]
    if not used:
        return None
    units = [p.units[client] for p in used]
    est = [paired.estimate(u) for u in units]
    scaled_units = [paired.unit_scaled(u, ref_ns) for u in units]
    within = paired.within_variance(scaled_units)
    between = paired.between_variance(scaled_units, within)
    iv = stopping.interval([e.ratio for e in est], ref_ns, run_rel_sd=run_rel_sd, prior=prior, target=target,
                           within_var=stopping.within_variance([[x.ratio for x in u] for u in units]))
    c = ClientResult(
        client=client, ref=ref_ns, diff=iv.diff, ratio=iv.ratio, own_ratio_sd=iv.own_sd, sd_bound=iv.bound, interval=iv,
        unscaled_diff=stats.summarize([e.diff_ns for e in est]),
        plain_diff=stats.summarize([e.plain_diff_ns for e in est]), rtt=stats.summarize([e.server_ns for e in est]),
        base_rtt=stats.summarize([e.base_ns for e in est]), plain_rtt=stats.summarize([e.server_plain_ns for e in est]),
        estimates=[e.scaled_ns(ref_ns) for e in est], unscaled_estimates=[e.diff_ns for e in est],
        ratios=[e.ratio for e in est],
        units=[len(u) for u in units], within_sd=None if within is None else within ** 0.5,
        between_sd=None if between is None else between ** 0.5)
    hists = {t: [h for p in used for h in p.histograms.get(client, {}).get(t, [])] for t in ("server", "base")}
    if hists["server"] and hists["base"]:
        c.histogram = histogram.merge(hists["server"])
        c.percentiles = c.histogram.percentiles()
        c.base_percentiles = histogram.merge(hists["base"]).percentiles()
        c.percentile_diffs = {k: v - c.base_percentiles[k] for k, v in c.percentiles.items()}
    return c


def reference_rtts(r: RunResult) -> dict[str, float]:
    """Per client, the run's reference baseline round trip: the median of every valid pair's baseline round trip."""
    out = {}
    for client in r.clients:
        bases = [e.base_ns for s in r.servers for p in s.pairs if p.valid and (e := p.estimate(client)) is not None]
        if bases:
            out[client] = paired.reference_ns(bases)
    return out


def reference_spreads(r: RunResult) -> dict[str, float]:
    """Per client, the relative sd of every valid pair's baseline round trip (0 with fewer than 2 pairs)."""
    out = {}
    for client in r.ref:
        bases = [e.base_ns for s in r.servers for p in s.pairs if p.valid and (e := p.estimate(client)) is not None]
        out[client] = statistics.stdev(bases) / r.ref[client] if len(bases) >= 2 else 0.0
    return out


def host_speed(r: RunResult) -> dict | None:
    """How the host's speed moved in the run, by the headline client: the dummy's round trip over the valid pairs
    (lowest, median, highest, relative sd). Stated once for the run: the rows compare by ratio, at the median."""
    bases = sorted(e.base_ns for s in r.servers for p in s.pairs
                   if p.valid and (e := p.estimate(r.primary)) is not None)
    if not bases:
        return None
    return {"client": r.primary, "pairs": len(bases), "low_ns": bases[0], "ref_ns": r.ref.get(r.primary),
            "high_ns": bases[-1], "rel_sd": r.ref_spread.get(r.primary, 0.0)}


def run_spreads(r: RunResult) -> dict[str, float | None]:
    """Per client, the run's relative between-pair spread of the ratio over its valid servers (stopping.run_spread)."""
    out = {}
    for client in r.clients:
        out[client] = stopping.run_spread(
            [[e.ratio for p in s.pairs if p.valid and (e := p.estimate(client)) is not None]
             for s in r.servers if s.valid and not s.baseline])
    return out


def evaluate(r: RunResult) -> None:
    target_abs = float(r.settings.get("precision_floor_us", stopping.ABS_TARGET_NS / 1000)) * 1000
    target_rel = float(r.settings.get("precision_pct", stopping.REL_TARGET * 100)) / 100
    for s in r.servers:
        if s.baseline:
            continue
        bad = [p for p in s.pairs if p.status == "failed" or (p.status == "measured" and not p.valid)]
        if bad:
            p = bad[0]
            s.reason = f"pair {p.pair}" + (f", {p.phase}" if p.phase else "") + f": {p.reason}"
        elif not any(p.valid for p in s.pairs):
            s.reason = "not measured" + (" (the run was interrupted)" if r.status != "complete" else "")
        s.valid = s.reason is None
    r.ref = reference_rtts(r)
    r.ref_spread = reference_spreads(r)
    r.host_speed = host_speed(r)
    spreads = run_spreads(r)
    for s in r.servers:
        stop = (r.stops or {}).get(s.name) or {}
        s.stop, s.stop_pairs = stop.get("reason"), stop.get("pairs")
    for s in r.servers:
        s.seconds = sum(p.seconds.get("total", 0.0) for p in s.pairs)
        s.measure_seconds = sum(p.seconds.get("measure", 0.0) for p in s.pairs)
        if s.baseline or not s.valid:
            continue
        valid = [p for p in s.pairs if p.valid]
        for client in r.clients:
            c = client_result(valid, client, r.ref[client], spreads.get(client), r.priors.get(s.name),
                              (target_abs, target_rel)) if client in r.ref else None
            if c is not None:
                s.clients[client] = c
        if not s.clients:
            s.valid, s.reason = False, "no complete unit in any pair"
            continue
        if s.primary not in s.clients:  # an HTTP/1.1 server in a run whose headline client is ab: none measured it
            s.primary = next(iter(s.clients))  # marked: the table's "diff (lean)", summary.json's "primary"
        head = s.clients[s.primary]
        s.diff = head.diff
        s.target = stopping.target_ns(s.diff.mean, target_abs, target_rel)
        s.target_met = stopping.met(head.interval, head.ref, target_abs, target_rel)
        s.prior = r.priors[s.name].to_dict() if s.name in r.priors else None
        s.modes = _modes(s, r, head)
        costs_of(s, valid, [p.estimate(s.primary) for p in valid], head.ref)
        s.requests = sum(c.requests for p in valid for c in p.costs.values())
        if "ab" in s.clients and "lean" in s.clients:
            s.clients_agree = overlap(s.clients["ab"].diff, s.clients["lean"].diff)
        s.scaling_agrees = overlap(head.diff, head.unscaled_diff)
        s.run_length_shift = run_length_shift(valid, s.primary)
        _work_of(s, valid)
        s.warnings = _warnings(s, r)
    base = r.baseline
    if base is not None:
        baseline_row(r, base)
    ranked = [s for s in r.ranked if not s.baseline]
    for prev, cur in zip(ranked, ranked[1:], strict=False):
        cur.differs_from_previous = (None if len(cur.estimates) < 2 or len(prev.estimates) < 2
                                     else bool(stats.significantly_different(cur.estimates, prev.estimates,
                                                                             cur.estimate_sd, prev.estimate_sd)))
    r.scaling = scaling(r)
    _run_warnings(r)


def _modes(s: ServerResult, r: RunResult, head: ClientResult) -> dict | None:
    """The server's two speed modes, in us at the reference: those of its earlier runs (its prior), else of this run's
    pairs (prior.modes); None where neither shows two."""
    known = r.priors.get(s.name)
    m, source = (known.modes, "of its earlier runs") if known is not None and known.modes else \
        (prior_modes(head.ratios), "of this run")
    if m is None:
        return None
    return {"fast_ns": (m.fast - 1) * head.ref, "slow_ns": (m.slow - 1) * head.ref, "slow_share": m.slow_share,
            "pairs": m.pairs, "source": source}


def run_length_shift(valid: list[Pair], client: str) -> Summary | None:
    """The run-length check over a server's pairs: each pair's ratio at the longer run length (the median of the
    check's units) minus its ratio, with a Student-t interval over pairs. The check runs before the measurement in
    odd pairs and after it in even ones, so a trend within a pair's life cancels over pairs."""
    deltas = [statistics.median(u.ratio for u in p.check_units) - e.ratio for p in valid
              if p.check_units and (e := p.estimate(client)) is not None]
    return stats.summarize(deltas) if len(deltas) >= 2 else None


def overlap(a: Summary, b: Summary) -> bool | None:
    if a.ci95_low is None or b.ci95_low is None:
        return None
    return bool(a.ci95_low <= b.ci95_high and b.ci95_low <= a.ci95_high)


def scaling(r: RunResult) -> Scaling | None:
    """What the scaling did, and whether it was the right correction.

    Removed: how much of the between-pair variance the scaling removed, over the servers with at least 3 pairs.

    The check: the scaling divides each pair by its own baseline round trip D, which is right when a slower machine
    multiplies the server's and the dummy's round trips alike. Model a pair's scaled diff as diff x (D / D_ref)^g:
    g = 0 when slowdowns multiply alike, g = -1 when they add the same time to both (a stall, a neighbour on the
    measured CPU: the ratio then falls as D rises), g > 0 when they slow the server more (a neighbour that evicts
    its larger working set). g is the slope of each pair's scaled diff on its relative baseline x = D / D_ref - 1,
    pooled over the run's servers with each server's means removed and its x scaled by its diff
    (stats.within_slope), so that every server, whatever its diff, speaks of the same g; its p-value is a permutation
    test's (within each server, any order of its pairs' baselines as likely under g = 0), which asks nothing of the
    noise between JVMs. The spread of a server's pairs' x widens its interval, which shows it; what the interval
    does not show is the shift of its mean: g x mean(x) x diff, when its pairs ran while the machine was slower or
    faster than the run's median. The check fails when g is significant (SCALING_ALPHA) and that shift exceeds some
    server's precision target. In the 33 committed runs g is significant in 6 (5 of them positive: a shared VM's
    slowdowns slow the server's larger working set more than the dummy's, as the kit's notebook found for a busy
    neighbouring CPU), and the shift exceeds a target in one, 20261122T234235Z (g = +0.86, Webflux's pairs 16.5%
    faster than the reference: 2.9x its target); 20261122T181033Z comes within 0.05% of it (g = -0.31, p = 0.03,
    Jetty's pairs 16% faster: 1.196 us against 1.197), every other run stays under 0.8x."""
    rows = [(statistics.variance(c.estimates), statistics.variance(c.unscaled_estimates))
            for s in r.servers if s.valid and not s.baseline and (c := s.clients.get(s.primary))
            and len(c.estimates) >= 3]
    rows = [(v_s, v_u) for v_s, v_u in rows if v_u > 0]
    groups = []
    for s in r.servers:
        c = s.clients.get(s.primary) if s.valid and not s.baseline else None
        if c is None:
            continue
        est = [e for p in s.pairs if p.valid and (e := p.estimate(s.primary)) is not None]
        if len(est) >= 2:
            groups.append((s, [e.base_ns / c.ref - 1 for e in est], [e.scaled_ns(c.ref) for e in est]))
    slope = stats.within_slope([(xs, ys, statistics.fmean(ys)) for _, xs, ys in groups])
    if not rows and slope is None:
        return None
    out = Scaling(servers=len(rows), removed=1 - sum(v for v, _ in rows) / sum(u for _, u in rows) if rows else None,
                  median_sd_ratio=statistics.median((v / u) ** 0.5 for v, u in rows) if rows else None)
    if slope is not None:
        out.slope, out.slope_p, out.slope_pairs, out.slope_servers = slope.slope, slope.p, slope.points, slope.groups
        shifts = [(s, slope.slope * statistics.fmean(xs) * statistics.fmean(ys), statistics.fmean(xs))
                  for s, xs, ys in groups if s.target]
        if shifts:
            s, shift, offset = max(shifts, key=lambda t: abs(t[1]) / t[0].target)
            out.worst, out.worst_shift, out.worst_target, out.worst_offset = s.name, shift, s.target, offset
            out.fails = slope.p < SCALING_ALPHA and abs(shift) > s.target
        out.significant = slope.p < SCALING_ALPHA
    return out


def _cold_caveat(settings: dict) -> str | None:
    warmup = settings.get("warmup") or 0
    per_process = (settings.get("segment") or 0) * (settings.get("segments") or 0) if "segment" in settings else \
        settings.get("block_requests") or 0
    waited = settings.get("settle", "queue") != "none" if "settle" in settings else settings.get("wait_for_jit", True)
    if waited or warmup + per_process >= WARM_REQUESTS:
        return None
    return (f"smoke run: each JVM served {warmup:,} warm-up requests and {per_process:,} measured ones, and the run "
            "did not wait for the JIT, so the diffs include the interpreter and the JIT compiling on the measured "
            "CPU (often 10 times a default run's or more); use the default profile to rank servers")


def costs_of(s: ServerResult, valid: list[Pair], estimates: list, ref_ns: float) -> None:
    """Cost per request; the CPU-time diff scaled by each pair's baseline round trip like the latency diff."""
    server = [p.costs["server"] for p in valid if "server" in p.costs]
    s.cpu = _summary([c.cpu_ns for c in server])
    s.cpu_user = _summary([c.cpu_user_ns for c in server])
    s.cpu_system = _summary([c.cpu_system_ns for c in server])
    s.base_cpu = _summary([p.costs["base"].cpu_ns for p in valid if "base" in p.costs])
    both = [(p, e) for p, e in zip(valid, estimates, strict=True) if "server" in p.costs and "base" in p.costs]
    s.cpu_diff = _summary([(p.costs["server"].request_cpu_ns - p.costs["base"].request_cpu_ns)
                           * (ref_ns / e.base_ns if e else 1.0) for p, e in both])
    s.cpu_ratio = _summary([p.costs["server"].request_cpu_ns / p.costs["base"].request_cpu_ns for p, _ in both
                            if p.costs["base"].request_cpu_ns > 0])
    s.alloc = _summary([c.alloc_bytes for c in server])
    s.gc_count = _summary([c.gc_count for c in server])
    s.gc_time = _summary([c.gc_time_ms for c in server])
    s.jit_cpu = _summary([c.jit_cpu_ms for c in server])


def _work_of(s: ServerResult, valid: list[Pair]) -> None:
    """The server's work per request: its valid pair with a counting window, or the median over several
    (--count-pairs; work["windows"] says how many); work_pair is the first."""
    counted = [p for p in valid if "server" in p.work]
    if len(counted) == 1:
        s.work, s.work_pair = counted[0].work["server"], counted[0].pair
    elif counted:
        s.work, s.work_pair = median_work([p.work["server"] for p in counted]), counted[0].pair
    else:
        s.work_problem = next((f"pair {p.pair}: {p.work_problem}" for p in s.pairs if p.work_problem), None)


def median_work(works: list[dict]) -> dict | None:
    """Several windows' work per request of one program (the baseline dummy's), figure by figure: the median."""
    if not works:
        return None
    out: dict = {"source": "perf" if all(x["source"] == "perf" for x in works) else "proc", "windows": len(works)}
    numeric = {k for x in works for k, v in x.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    for key in sorted(numeric):
        out[key] = round(statistics.median(x[key] for x in works if key in x), 4)
    names = {n for x in works for n in x.get("syscall_names", {})}
    if names:
        med = {n: round(statistics.median(x.get("syscall_names", {}).get(n, 0.0) for x in works), 4) for n in names}
        # Ties by name: a set's order changes from one interpreter to the next, and so would the reports.
        out["syscall_names"] = dict(sorted(((n, v) for n, v in med.items() if v >= 0.005),
                                           key=lambda kv: (-kv[1], kv[0])))
    elif any(x.get("names_problem") for x in works):
        out["names_problem"] = next(x["names_problem"] for x in works if x.get("names_problem"))
    return out


def baseline_row(r: RunResult, base: ServerResult) -> None:
    """The dummy's own row: its round trip and costs from its side of every valid pair of the run."""
    pairs = [p for s in r.servers if s.valid and not s.baseline for p in s.pairs if p.valid]
    if not pairs:
        base.reason = "no valid pair in this run"
        return
    base.valid = True
    for client in r.clients:
        est = [e for p in pairs if (e := p.estimate(client)) is not None]
        if est:
            rtt = stats.summarize([e.base_ns for e in est])
            zero = Summary(0.0, 0.0, 0.0, 0.0, 0.0, rtt.n)
            one = Summary(1.0, 1.0, 0.0, 1.0, 1.0, rtt.n)
            base.clients[client] = ClientResult(client, ref=r.ref[client], diff=zero, ratio=one, unscaled_diff=zero,
                                                plain_diff=zero, rtt=rtt, base_rtt=rtt,
                                                plain_rtt=stats.summarize([e.base_plain_ns for e in est]))
    base.primary = r.primary if r.primary in base.clients else next(iter(base.clients))
    base.diff = base.clients[base.primary].diff
    costs = [p.costs["base"] for p in pairs if "base" in p.costs]
    base.cpu = _summary([c.cpu_ns for c in costs])
    base.cpu_user = _summary([c.cpu_user_ns for c in costs])
    base.cpu_system = _summary([c.cpu_system_ns for c in costs])
    base.alloc = _summary([c.alloc_bytes for c in costs])
    base.gc_count = _summary([c.gc_count for c in costs])
    base.gc_time = _summary([c.gc_time_ms for c in costs])
    base.jit_cpu = _summary([c.jit_cpu_ms for c in costs])
    base.work = median_work([p.work["base"] for p in pairs if "base" in p.work])


def _warnings(s: ServerResult, r: RunResult) -> list[w.RunWarning]:
    out: list[w.RunWarning] = []
    c = s.clients[s.primary]
    if s.diff.n < 2:
        out.append(w.TooFewPairs(s.diff.n))
    elif not s.target_met:
        iv = c.interval
        judged = iv.stop_half * c.ref if iv.stop_half is not None else s.diff.half_width
        runs = stopping.t_of(iv.df) * iv.tau_sd * c.ref if iv.df and iv.tau_sd else None
        out.append(w.TargetMissed(judged, s.diff.n, s.target, c.between_sd, runs))
    if s.modes is not None:
        m = s.modes
        out.append(w.SpeedModes(m["fast_ns"], m["slow_ns"], m["slow_share"], m["pairs"], m["source"]))
    # A pair this close to the others is noise, however tight they are: half the precision floor at least.
    for i in stats.outliers(c.estimates, min_abs=float(r.settings.get("precision_floor_us", 0.5)) * 500):
        out.append(w.OutlierPair(i + 1, c.estimates[i], statistics.median(c.estimates), len(c.estimates)))
    if s.clients_agree is False:
        ab, lean = s.clients["ab"], s.clients["lean"]
        # The plain mean sides with ab when it is nearer ab's diff than the headline and within ab's interval.
        plain = lean.plain_diff if lean.plain_diff is not None and overlap(lean.plain_diff, ab.diff) and abs(
            lean.plain_diff.mean - ab.diff.mean) < abs(lean.plain_diff.mean - lean.diff.mean) else None
        out.append(w.ClientsDisagree(ab.diff.mean, lean.diff.mean, plain.mean if plain is not None else None))
    # In a smoke run the JIT's work on the shared CPU explains any gap (the caveat says so, once).
    if r.settings.get("pinning") == "shared" and s.cpu_diff is not None and not s.ladder and not r.caveat:
        cpu = _cpu_check(s, c)
        if cpu is not None:
            out.append(cpu)
    valid = [p for p in s.pairs if p.valid and "server" in p.costs]
    busy = [(p.costs["server"].jit_cpu_ms, p.costs["server"].wall_s) for p in valid if p.costs["server"].wall_s]
    waited = r.settings.get("settle", "queue") != "none" if "settle" in r.settings else \
        r.settings.get("wait_for_jit", True)
    if busy and waited:
        ms, wall = max(busy, key=lambda b: b[0] / b[1])
        if ms / 1000 / wall > JIT_WARN_SHARE:
            out.append(w.JitBusy(ms, wall, JIT_WARN_SHARE))
    shift = s.run_length_shift
    if shift is not None and shift.ci95_low is not None and not shift.ci95_low <= 0 <= shift.ci95_high \
            and abs(shift.mean) * c.ref > s.target:
        run = next(p.check_run for p in s.pairs if p.valid and p.check_units)
        out.append(w.RunLengthShift(shift.mean * c.ref, shift.ci95_low * c.ref, shift.ci95_high * c.ref, run or 0,
                                    s.target))
    errors = sorted({cost.jvm_error for p in valid for cost in p.costs.values() if cost.jvm_error})
    if errors:
        out.append(w.NoAgent(errors[0]))
    return out


def _cpu_check(s: ServerResult, c: ClientResult) -> w.RunWarning | None:
    """The CPU cross-check under shared pinning: one CPU runs the client, the dummy and the server, so the server's
    extra round trip is its extra CPU time, unless it waits or leaves work /proc charges to neither process. Per
    pair, both diffs scaled alike: far when the latency diff minus the CPU-time diff lies beyond the pair's allowance
    (CPU_CHECK_TICKS ticks per process over its requests, plus max(CPU_CHECK_ABS_NS, CPU_CHECK_REL x |diff|)) in
    every pair on the same side. Then, if the plain-mean diff is not far from the CPU diff by the same rule, the
    server spends the time in rare slow requests (CpuInTail); else CpuGap."""
    rows = []
    for p in s.pairs:
        e = p.estimate(s.primary) if p.valid else None
        if e is None or "server" not in p.costs or "base" not in p.costs:
            continue
        server, base, k = p.costs["server"], p.costs["base"], c.ref / e.base_ns
        cpu = (server.request_cpu_ns - base.request_cpu_ns) * k
        ticks = CPU_CHECK_TICKS * (server.tick_ns / server.requests + base.tick_ns / base.requests) * k
        rows.append((e.scaled_ns(c.ref) - cpu, e.plain_diff_ns * k - cpu, ticks))
    if not rows:
        return None

    def far(gaps: list[float], diff_ns: float) -> bool:
        slack = max(CPU_CHECK_ABS_NS, CPU_CHECK_REL * abs(diff_ns))
        return (all(g > t + slack for g, (_, _, t) in zip(gaps, rows, strict=True))
                or all(g < -(t + slack) for g, (_, _, t) in zip(gaps, rows, strict=True)))

    if not far([g for g, _, _ in rows], s.diff.mean):
        return None
    plain = c.plain_diff.mean if c.plain_diff is not None and c.plain_diff.n else None
    if plain is not None and not far([g for _, g, _ in rows], plain):
        return w.CpuInTail(s.cpu_diff.mean, s.diff.mean, plain)
    allowed = statistics.fmean(t for _, _, t in rows) + max(CPU_CHECK_ABS_NS, CPU_CHECK_REL * abs(s.diff.mean))
    return w.CpuGap(s.cpu_diff.mean, s.diff.mean, len(rows), allowed)


def floor_ratio(r: RunResult) -> Summary | None:
    """The floor's round trip over the dummy's, per pair: it should hold steady (no JVM on the floor's side). Its own
    spread over its pairs, not its interval's (which the stopping rule bounds below by the run's spread)."""
    floor = r.server(FLOOR)
    if floor is None or not floor.valid or floor.primary not in floor.clients:
        return None
    ratios = [e.ratio for p in floor.pairs if p.valid and (e := p.estimate(floor.primary)) is not None]
    return stats.summarize(ratios) if ratios else None


def _run_warnings(r: RunResult) -> None:
    if r.baseline is None or not r.baseline.valid:
        r.warnings.append(w.NoBaseline())
    null = r.null
    if null is not None and null.valid and null.diff.ci95_low is not None and not null.diff.ci95_low <= 0 <= \
            null.diff.ci95_high:
        r.warnings.append(w.NullPairBiased(null.diff.mean, null.diff.ci95_low, null.diff.ci95_high,
                                           r.baseline.name if r.baseline else "dummy"))
    ratio = r.floor = floor_ratio(r)
    if ratio is not None and ratio.rel_spread is not None and ratio.rel_spread > FLOOR_RATIO_SD_MAX:
        r.warnings.append(w.FloorRatioUnstable(ratio.mean, ratio.rel_spread, FLOOR_RATIO_SD_MAX))
    if r.status != "complete":
        r.warnings.append(w.RunIncomplete(r.status, r.reason))
    settings = r.settings
    if settings.get("pinning") == "none" or settings.get("server_cpu") is None:
        r.warnings.append(w.NotPinned())
    if r.scaling is not None and r.scaling.fails:
        sc = r.scaling
        r.warnings.append(w.ScalingNotProportional(sc.slope, sc.slope_p, sc.worst, sc.worst_shift, sc.worst_target,
                                                   sc.worst_offset))
    # Sampled during the run (busy.py); a run from before the sampler has only the load average at its start, which
    # counted the kit's own build a moment before: nothing is said of it.
    busy = r.env.get("busy")
    if busy and busy.get("worst_share") is not None and busy["worst_share"] > BUSY_SHARE_MAX:
        r.warnings.append(w.BusyMachine(busy["other_share"], busy["worst_share"], busy["worst_window_s"],
                                        BUSY_SHARE_MAX))
