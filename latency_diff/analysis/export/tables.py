"""The run's tables, built once from the result model; each exporter renders them its own way (sentences.py: its
sentences).

A table is (columns, rows of strings, right-aligned column indexes), with one unit per column named
in its header (microseconds for times; summary.json and summary.csv keep nanoseconds).
"""

from __future__ import annotations

from collections.abc import Callable

from ... import stats
from ...histogram import PERCENTILES, label
from ...stats import Summary
from ..model import RunResult, ServerResult

#: The mark of a row whose diff is not significantly different from the row above: do not rank the two.
NOT_SIGNIFICANT = "≈"
PERCENTILE_KEYS = tuple(label(p) for p in PERCENTILES) + ("max",)
PLOTS = {"diffs": "Diffs with their 95% intervals", "percentiles": "Round trip by percentile"}

PINNING_MEANING = {
    "split": "client on one CPU, the baseline and the server on another (the 2014 study's set-up): a round trip "
             "includes waking the other CPU, and the diff is the server's added critical-path latency",
    "shared": "client, baseline and server on one CPU: a round trip is the client's plus the server's CPU work plus "
              "the kernel's, with no cross-CPU wake-up, so the diff is the server's CPU work per request",
    "none": "not pinned: the scheduler placed client and servers, so round trips mix both cases above",
}

Table = tuple[tuple[str, ...], list[list[str]], set[int]]


def us(ns: float | None, digits: int = 2) -> str:
    return "-" if ns is None else f"{ns / 1000:.{digits}f}"


def ci_text(s: Summary | None) -> str:
    if s is None or s.ci95_low is None:
        return "-"
    return f"[{s.ci95_low / 1000:.2f}, {s.ci95_high / 1000:.2f}]"


def _mean(s: Summary | None, digits: int = 2) -> str:
    return "-" if s is None else us(s.mean, digits)


def _num(s: Summary | None, digits: int = 0) -> str:
    return "-" if s is None else f"{s.mean:,.{digits}f}"


def count(n: int | None) -> str:
    return "?" if n is None else f"{n:,}"


def _share(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def _version(s: ServerResult) -> str:
    if s.library is None:
        return s.library_version or ("built in" if not s.ladder else "-")
    return s.library_version or "?"


def _name(s: ServerResult) -> str:
    return s.name + (" (baseline)" if s.baseline else "")


def _met(s: ServerResult) -> str:
    return "-" if s.target_met is None or s.diff is None or s.diff.n < 2 else ("yes" if s.target_met else "NO")


#: The stop reason of a server that met its target when it stopped but not in the analysis.
MET_THEN = "met then"


def _stopped(s: ServerResult) -> str:
    """Why the server got no more pairs; "met then" where the look that stopped it met the target, but the run's
    reference round trip and spread between JVMs at its end (which the analysis uses) put it over."""
    if s.stop == "met" and s.target_met is False:
        return MET_THEN
    return s.stop or "-"


# -- tables ----------------------------------------------------------------------------------------
def main_table(r: RunResult, *, compact: bool = False) -> Table:
    """The headline: each server's scaled diff with its interval, its ratio, the pairs it took and whether the target
    was met; compact leaves out threading, target, the ab interval and allocation (the README's copy)."""
    cols = ["server", "version", "threading", "HTTP", "diff [us]", "diff 95% CI [us]", "ratio", "target [us]",
            "pairs", "met", "stopped", "measuring", "unscaled [us]", "ab diff [us]", "ab 95% CI [us]",
            "CPU diff [us]", "alloc/req [B]"]
    out = []
    for s in r.ranked:
        ab = s.clients.get("ab") if s.primary != "ab" else None
        c = s.clients[s.primary]
        if s.baseline:
            row = [_name(s), _version(s), s.threading, s.http, "0.00", "baseline", "1.000", "-", str(s.diff.n), "-",
                   "-", "-", "-", "-", "-", "-", _num(s.alloc)]
        else:
            diff = us(s.diff.mean) + (f" ({s.primary})" if s.primary != r.primary else "") + \
                (f" {NOT_SIGNIFICANT}" if s.differs_from_previous is False else "")
            row = [_name(s), _version(s), s.threading, s.http, diff, ci_text(s.diff), f"{c.ratio.mean:.3f}",
                   f"±{us(s.target)}", str(s.diff.n), _met(s), _stopped(s), _share(s.measure_share),
                   _mean(c.unscaled_diff),
                   _mean(ab.diff if ab else None), ci_text(ab.diff if ab else None), _mean(s.cpu_diff),
                   _num(s.alloc)]
        out.append(row)
    if compact:
        drop = {"threading", "target [us]", "ab 95% CI [us]", "alloc/req [B]", "unscaled [us]"}
        keep = [i for i, col in enumerate(cols) if col not in drop]
        cols, out = [cols[i] for i in keep], [[row[i] for i in keep] for row in out]
    cols, out = _with_shards(r, cols, out)
    first = cols.index("diff [us]")
    return tuple(cols), out, set(range(first, len(cols)))


def shards_text(r: RunResult, s: ServerResult) -> str:
    """Where a row of a merged table was measured: its shard, or the shards it is pooled over ("all": every one)."""
    if s.shards is None:
        return "-"
    if r.merge and len(s.shards) > 1 and len(s.shards) == len(r.merge.get("shards", ())):
        return "all"
    return ", ".join(map(str, s.shards))


def _with_shards(r: RunResult, cols: list[str], rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """A merged table's rows with the shard each was measured on, after the server's name; a run's own, unchanged."""
    if r.merge is None:
        return cols, rows
    return [cols[0], "shard", *cols[1:]], [[row[0], shards_text(r, s), *row[1:]] for row, s in zip(rows, r.ranked,
                                                                                               strict=True)]


def brief_table(r: RunResult) -> Table:
    """The README's copy: each row's diff with its interval, its ratio, its pairs and why it stopped (met, or why not);
    a row with a warning or a finding is marked with a dagger, which the report explains."""
    cols = ("server", "diff [us]", "diff 95% CI [us]", "ratio", "pairs", "stopped")
    out = []
    for s in r.ranked:
        c = s.clients[s.primary]
        if s.baseline:
            out.append([_name(s), "0.00", "baseline", "1.000", str(s.diff.n), "-"])
            continue
        mark = " †" if s.warnings else ""
        diff = us(s.diff.mean) + (f" ({s.primary})" if s.primary != r.primary else "") + \
            (f" {NOT_SIGNIFICANT}" if s.differs_from_previous is False else "")
        out.append([_name(s) + mark, diff, ci_text(s.diff), f"{c.ratio.mean:.3f}", str(s.diff.n), _stopped(s)])
    wide, out = _with_shards(r, list(cols), out)
    first = wide.index("diff [us]")
    return tuple(wide), out, set(range(first, len(wide)))


def study_table(r: RunResult) -> Table:
    """The study's own figures (plain means, requests per second) and the tail, from the headline client."""
    rows = []
    for s in r.ranked:
        c = s.clients[s.primary]
        pd = c.percentile_diffs or {}
        rows.append([_name(s), _mean(c.rtt), _mean(c.plain_rtt), f"{1e9 / c.plain_rtt.mean:,.0f}",
                     "0.00" if s.baseline else _mean(c.plain_diff), "baseline" if s.baseline else ci_text(c.plain_diff),
                     us(pd.get("p50")), us(pd.get("p99")), us(pd.get("p99.9"))])
    cols = ("server", "round trip [us]", "plain round trip [us]", "req/s", "plain diff [us]", "plain diff 95% CI [us]",
            "p50 diff [us]", "p99 diff [us]", "p99.9 diff [us]")
    return cols, rows, set(range(1, len(cols)))


def percentile_table(r: RunResult) -> Table | None:
    """Round trip at each percentile, from the lean client's histograms of every segment of the server."""
    rows = []
    for s in r.ranked:
        c = s.clients.get("lean")
        if c is None or c.percentiles is None:
            continue
        rows.append([_name(s)] + [us(c.percentiles[k]) for k in PERCENTILE_KEYS])
    if not rows:
        return None
    cols = ("server", *(f"{k} [us]" for k in PERCENTILE_KEYS))
    return cols, rows, set(range(1, len(cols)))


def precision_table(r: RunResult) -> Table:
    """Where the uncertainty comes from, what the scaling did, and what the stopping rule reached per server."""
    rows = []
    for s in r.ranked:
        if s.baseline:
            continue
        c = s.clients[s.primary]
        judged = c.interval.stop_half if c.interval is not None else c.ratio.half_width
        ratio_half = None if judged is None else judged * c.ref
        shift = s.run_length_shift
        rows.append([s.name, str(s.diff.n), "/".join(str(q) for q in c.units), us(c.between_sd), us(c.within_sd),
                     us(_sd(c.unscaled_estimates)), us(_sd(c.estimates)), c.sd_bound or "-", us(ratio_half),
                     us(s.diff.half_width), us(s.target), _met(s), _stopped(s),
                     "-" if shift is None else f"{shift.mean * c.ref / 1000:+.2f}",
                     "-" if shift is None or shift.ci95_low is None else
                     f"[{shift.ci95_low * c.ref / 1000:.2f}, {shift.ci95_high * c.ref / 1000:.2f}]",
                     f"{s.seconds:.0f}", _share(s.measure_share)])
    cols = ("server", "pairs", "units per pair", "between-process sd [us]", "within-pair sd of a unit [us]",
            "sd of pairs, unscaled [us]", "sd of pairs, scaled [us]", "sd from", "half-width judged [us]",
            "half-width [us]", "target [us]", "met", "stopped", "4x run length [us]", "4x run length 95% CI [us]",
            "time [s]", "measuring")
    return cols, rows, set(range(1, len(cols)))


def _sd(xs: list[float]) -> float | None:
    return None if len(xs) < 2 else stats.summarize(xs).stdev


def cost_table(r: RunResult) -> Table:
    """What the server process spends per request over its measured phase (baseline: its side of every pair)."""
    rows = []
    for s in r.ranked:
        rows.append([_name(s), _mean(s.cpu_user), _mean(s.cpu_system), _mean(s.cpu),
                     "-" if s.baseline else _mean(s.cpu_diff),
                     "-" if s.baseline or s.cpu_ratio is None else f"{s.cpu_ratio.mean:.2f}", _num(s.alloc),
                     _num(s.gc_count, 1), _num(s.gc_time, 1), _num(s.jit_cpu, 0)])
    cols = ("server", "CPU user/req [us]", "CPU system/req [us]", "CPU/req [us]", "CPU diff [us]", "CPU ratio",
            "alloc/req [B]", "GCs per pair", "GC time per pair [ms]", "JIT CPU per pair [ms]")
    return cols, rows, set(range(1, len(cols)))


def _per_req(work: dict, key: str, digits: int = 2) -> str:
    v = work.get(key)
    if v is None:
        return "-"
    return f"{0.0 if abs(v) < 0.5 * 10 ** -digits else v:.{digits}f}"  # no "-0.000"


#: System calls a row of the work table names (the most frequent first).
TOP_SYSCALLS = 4


def work_table(r: RunResult) -> Table | None:
    """Work per request, counted in each server's counting window (docs/method.md "Work per request")."""
    rows = []
    for s in r.ranked:
        if s.work is None:
            continue
        w = s.work
        top = ", ".join(f"{n} {v:.2f}" for n, v in list(w.get("syscall_names", {}).items())[:TOP_SYSCALLS])
        rows.append([_name(s), _per_req(w, "syscalls"), _per_req(w, "switches"), _per_req(w, "voluntary"),
                     _per_req(w, "involuntary"), _per_req(w, "migrations", 3), _per_req(w, "page_faults", 3),
                     _per_req(w, "task_clock_us"), _per_req(w, "threads_ran", 0),
                     top or ("not counted" if w.get("names_problem") else "-"), w["source"]])
    if not rows:
        return None
    cols = ("server", "syscalls/req", "switches/req", "voluntary/req", "involuntary/req", "migrations/req",
            "page faults/req", "CPU/req (perf) [us]", "threads ran", "top syscalls (per req)", "source")
    return cols, rows, set(range(1, 9))


def counted_pairs_table(r: RunResult) -> Table | None:
    """Each pair's counts beside its diff, for a server counted in several pairs (--count-pairs)."""
    rows = []
    for s in r.ranked:
        c = s.clients.get(s.primary)
        if s.baseline or c is None:
            continue
        counted = [(p, e) for p in s.pairs if p.valid and "server" in p.work
                   and (e := p.estimate(s.primary)) is not None]
        if len(counted) < 2:
            continue
        for p, e in counted:
            w = p.work["server"]
            rows.append([_name(s), str(p.pair), us(e.scaled_ns(c.ref)), f"{e.ratio:.3f}", _per_req(w, "syscalls"),
                         _per_req(w, "switches"), f"{w.get('syscall_names', {}).get('futex', 0.0):.2f}",
                         _per_req(w, "threads_ran", 0)])
    if not rows:
        return None
    cols = ("server", "pair", "diff [us]", "ratio", "syscalls/req", "switches/req", "futex/req", "threads ran")
    return cols, rows, set(range(1, 8))


def profile_table(r: RunResult) -> Table | None:
    """Where each profiled server's CPU time goes, in microseconds per request (docs/method.md "Profiles")."""
    from ...measure.profiling import GROUPS
    rows = []
    for s in r.ranked:
        if s.profile is None:
            continue
        us_ = s.profile.get("us_per_request") or {}
        rows.append([_name(s), _mean(s.cpu), *(f"{us_[g]:.2f}" if g in us_ else "-" for g in GROUPS),
                     f"{s.profile['samples']:,}", s.profile["flamegraph"] or "not kept"])
    if not rows:
        return None
    cols = ("server", "CPU/req [us]", *(f"{g} [us]" for g in GROUPS), "samples", "flame graph")
    return cols, rows, set(range(1, len(cols) - 1))


def client_table(r: RunResult) -> Table | None:
    """ab's and the lean client's diffs side by side: with their intervals they should agree."""
    if not {"ab", "lean"} <= set(r.clients):
        return None
    rows = []
    for s in r.ranked:
        if s.baseline or "ab" not in s.clients or "lean" not in s.clients:
            continue
        ab, ln = s.clients["ab"], s.clients["lean"]
        agree = "-" if s.clients_agree is None else ("yes" if s.clients_agree else "NO")
        rows.append([s.name, _mean(ln.diff), ci_text(ln.diff), _mean(ab.diff), ci_text(ab.diff), agree,
                     _mean(ln.base_rtt), _mean(ab.base_rtt)])
    cols = ("server", "lean diff [us]", "lean 95% CI [us]", "ab diff [us]", "ab 95% CI [us]", "agree",
            "lean baseline round trip [us]", "ab baseline round trip [us]")
    return cols, rows, set(range(1, len(cols)))


def _negated(x: Summary) -> Summary:
    low, high = (None, None) if x.ci95_low is None else (-x.ci95_high, -x.ci95_low)
    return Summary(-x.mean, -x.median, x.stdev, low, high, x.n)


def change_verdict(x: Summary, subject: str = "") -> str:
    """What a change's 95% interval says: too few pairs, not significant (it holds 0), or slower or faster, each
    after `subject` ("B " in a head-to-head table)."""
    if x.ci95_low is None:
        return "too few pairs"
    if x.ci95_low <= 0 <= x.ci95_high:
        return "not significant"
    return subject + ("slower" if x.mean > 0 else "faster")


def head_to_head_table(r: RunResult) -> Table | None:
    """--compare A B: B - A measured directly (A in the dummy's place), and each against the dummy."""
    names = r.settings.get("compare")
    if not names or r.baseline is None:
        return None
    a, b, dummy = r.baseline, r.server(names[1]), r.server("dummy")
    if b is None or not b.valid:
        return None
    rows = [[f"B - A ({b.name} - {a.name})", us(b.diff.mean), ci_text(b.diff), f"{b.clients[b.primary].ratio.mean:.3f}",
             str(b.diff.n), change_verdict(b.diff, "B ")]]
    if dummy is not None and dummy.valid:
        rows.append([f"A - dummy ({a.name})", us(-dummy.diff.mean), ci_text(_negated(dummy.diff)),
                     f"{1 / dummy.clients[dummy.primary].ratio.mean:.3f}", str(dummy.diff.n), "-"])
        if len(b.estimates) >= 2 and len(dummy.estimates) >= 2:
            both = stats.welch_difference(b.estimates, dummy.estimates, b.estimate_sd, dummy.estimate_sd)
            rows.append([f"B - dummy ({b.name})", us(both.mean), ci_text(both), "-", "-", "-"])
    cols = ("difference", "[us]", "95% CI [us]", "ratio", "pairs", "verdict")
    return cols, rows, {1, 2, 3, 4}


def difference(r: RunResult, a: ServerResult, b: ServerResult) -> Summary:
    """a's diff minus b's, in ns, with a Welch 95% interval over both rows' pairs (each sd bounded below as in its
    row's interval); in a table merged from shards, rows measured on different shards also carry the hosts' spread
    (merge.difference)."""
    if r.merge is not None:
        from ..merge import difference as across_shards
        return across_shards(r, a, b)
    return stats.welch_difference(a.estimates, b.estimates, a.estimate_sd, b.estimate_sd)


def variant_table(r: RunResult) -> Table | None:
    """Each variant against its server measured in the same run: the difference of the two diffs."""
    by_name = {s.name: s for s in r.ranked}
    rows = []
    for s in r.ranked:
        base = by_name.get(s.variant_of or "") if s.is_variant else None
        if base is None or len(s.estimates) < 2 or len(base.estimates) < 2:
            continue
        change = difference(r, s, base)
        verdict = change_verdict(change)
        rows.append([s.name, base.name, us(s.diff.mean), us(base.diff.mean), us(change.mean), ci_text(change),
                     f"{change.mean / base.diff.mean:+.0%}" if abs(base.diff.mean) > 1 else "-", verdict])
    if not rows:
        return None
    cols = ("variant", "of", "variant diff [us]", "server diff [us]", "change [us]", "95% CI [us]", "change",
            "verdict")
    return cols, rows, set(range(2, 7))


def framework_table(r: RunResult) -> Table | None:
    """What each framework adds over the server it runs on: the difference of the two diffs."""
    by_name = {s.name: s for s in r.ranked}
    rows = []
    for s in r.ranked:
        under = by_name.get(s.runs_on or "")
        if under is None or len(s.estimates) < 2 or len(under.estimates) < 2:
            continue
        over = difference(r, s, under)
        rows.append([s.name, under.name, us(s.diff.mean), us(under.diff.mean), us(over.mean), ci_text(over)])
    if not rows:
        return None
    cols = ("framework", "runs on", "framework diff [us]", "server diff [us]", "added by the framework [us]",
            "95% CI [us]")
    return cols, rows, set(range(2, len(cols)))


#: The report's sections after the main table: title, what it shows, its table.
SECTIONS = (
    ("Head to head", "B measured against A in process pairs, A in the dummy's place: B - A with its interval and "
     "ratio (scaled to A's reference round trip), whether the interval holds 0; and each against the dummy, which "
     "was measured against A too (Welch interval over both rows' pairs).", head_to_head_table),
    ("Variants", "Each variant against its server in the same run (another release, JDK or JVM flags): the "
     "difference of the two diffs, with a Welch interval over both rows' pairs.", variant_table),
    ("The study's figures and the tail", "The 2014 study's plain figure, the untrimmed mean round trip, paired the "
     "same way (plain diff, unscaled), and requests per second from it; and the tail: the server's percentiles over "
     "all its segments minus those of its baselines (lean client). Stalls move the plain mean and the tail; the "
     "headline's trimmed mean is built to ignore them.", study_table),
    ("What each framework adds over its server", "A framework's diff minus the diff of the kit's row for the server it "
     "runs on (Welch interval over both rows' pairs).", framework_table),
    ("Precision reached", "Per server: process pairs used, units per pair (segments of the interleaved client, adapted "
     "to the measured variances, Kalibera and Jones 2013), the spread between pairs (JVM-to-JVM) and within a pair "
     "(one unit), the spread of the pairs' diffs before and after the scaling, which bound the interval's sd came "
     "from (its pairs, the units' noise, or the run's spread: docs/method.md), the ratio's half-width and the "
     "diff's (which adds the reference's own spread) against the target, why the server stopped (\"met then\": "
     "met at the look that stopped it, not at the run's final reference and spread), the run-length "
     "check (the diff at 4x the run length minus the diff, same processes), the time spent on the measured CPU, and "
     "the share of it spent measuring.", precision_table),
    ("Percentiles", "Round trip by percentile over every segment of a server (lean client); a value is the top of its "
     "histogram bucket (at most 0.4% above the true value).", percentile_table),
    ("Cost per request on the server", "CPU from /proc for the whole server process and for its JIT compiler threads "
     "(JIT CPU: near zero after the warm-up), over the pair's measured phase; CPU diff: without the JIT threads, minus "
     "the baseline dummy's the same way in the same pair, scaled like the latency diff; CPU ratio: the server's CPU "
     "per request over the dummy's; allocation and GC from the kit's java agent.", cost_table),
    ("Work per request", "Counted after each server's first measured pair, in the same two processes (its round trips "
     "not used): system calls, context switches (voluntary: a thread waited; involuntary: it was preempted), CPU "
     "migrations and page faults per request, over every thread of the process, with the rate of an idle second "
     "taken off; CPU per request as perf's task-clock; the threads that switched while serving; the most frequent "
     "system calls. Source perf: perf stat's software events and syscall tracepoints; proc: /proc's per-thread "
     "switch counts only (no system calls). The dummy's row is the median of every window's baseline side.",
     work_table),
    ("Counted pairs", "For a server counted after several of its pairs (--count-pairs): each pair's diff beside its "
     "counts, so that a server whose pairs differ shows whether the slower pairs did more work (hand-offs: switches "
     "and futex calls).", counted_pairs_table),
    ("Where the time goes", "A CPU profile of each JVM server (async-profiler, CPU time with kernel frames where the "
     "host allows), taken after its counting window in the same processes: each sample is put in a group by its "
     "thread and its innermost frames (kernel; the JDK's networking and NIO, or the rest of the JDK; the server's "
     "library, and for a framework the servers below it; the framework's own code; other libraries; the JVM and "
     "native code; GC and VM threads; the JIT compiler). The server's CPU per request outside its JIT compiler "
     "threads, from its measured pairs, is split by the other groups' shares of the samples; the JIT column is the "
     "compiler threads' CPU per request in the measured pairs (the window's own compiles, for the new paths its two "
     "connections take, are left out). The flame graph is next to the report.", profile_table),
    ("The two clients", "The lean client's and ab's diffs from the same pairs, each scaled to its own reference "
     "baseline round trip; with their intervals they should agree (each client's own cost per request is in both "
     "processes' round trips, and cancels).", client_table),
)


def section_tables(r: RunResult) -> list[tuple[str, str, Table]]:
    """The sections that have rows in this run."""
    if not r.ranked:
        return []
    out = []
    for title, text, build in SECTIONS:
        t = build(r)
        if t is not None and t[1]:
            out.append((title, text, t))
    return out


def render_text(t: Table) -> str:
    cols, body, right = t
    widths = [max(len(c), *(len(row[i]) for row in body)) if body else len(c) for i, c in enumerate(cols)]

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return "\n".join([line(cols), line(["-" * w for w in widths]), *(line(row) for row in body)])


def render_md(t: Table) -> str:
    cols, body, right = t
    rule = "|" + "|".join("---:" if i in right else "---" for i in range(len(cols))) + "|"
    out = ["| " + " | ".join(cols) + " |", rule]
    out += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(out)


# -- runs side by side (hosts.py, merge.py --by-host) ------------------------------------------------------------
def servers_of(r: RunResult) -> dict[str, ServerResult]:
    """The run's valid servers off the ladder, by name, in the order of their diffs."""
    return {s.name: s for s in r.ranked if not s.ladder}


def ranks(r: RunResult) -> dict[str, int]:
    return {name: i + 1 for i, name in enumerate(servers_of(r))}


def side_by_side_rows(runs: list[RunResult], names: list[str] | None, cells: Callable[[ServerResult, int], list[str]],
            width: int) -> list[list[str]]:
    """A row per server (`names`, or every one valid in any run, in the first run's order where it is) with, per
    run, `cells(server, its rank in that run)`, or `width` dashes where the run has no valid row of it."""
    per, ranked = [servers_of(r) for r in runs], [ranks(r) for r in runs]
    names = names if names is not None else list(dict.fromkeys(n for p in per for n in p))
    return [[n, *(x for p, rk in zip(per, ranked, strict=True)
                  for x in (cells(p[n], rk[n]) if n in p else ["-"] * width))] for n in names]
