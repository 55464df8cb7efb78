"""Renders one RunResult as the terminal tables, summary.json, summary.csv and report.md.

Every table is a list of rows of strings built once here and printed either aligned (terminal) or
as Markdown. Tables use one unit, named in the header (microseconds for times; summary.json and
summary.csv keep nanoseconds).
"""

from __future__ import annotations

import csv
import io
import json

from . import stats
from .histogram import PERCENTILES, label
from .model import SUMMARY_FORMAT, ClientResult, RunResult, ServerResult
from .stats import Summary

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

# -- tables: (columns, rows, right-aligned column indexes) ----------------------------------------
Table = tuple[tuple[str, ...], list[list[str]], set[int]]


def _us(ns: float | None, digits: int = 2) -> str:
    return "-" if ns is None else f"{ns / 1000:.{digits}f}"


def ci_text(s: Summary | None) -> str:
    if s is None or s.ci95_low is None:
        return "-"
    return f"[{s.ci95_low / 1000:.2f}, {s.ci95_high / 1000:.2f}]"


def _mean(s: Summary | None, digits: int = 2) -> str:
    return "-" if s is None else _us(s.mean, digits)


def _num(s: Summary | None, digits: int = 0) -> str:
    return "-" if s is None else f"{s.mean:,.{digits}f}"


def _count(n: int | None) -> str:
    return "?" if n is None else f"{n:,}"


def _version(s: ServerResult) -> str:
    if s.library is None:
        return s.library_version or ("built in" if not s.ladder else "-")
    return s.library_version or "?"


def _name(s: ServerResult) -> str:
    return s.name + (" (baseline)" if s.baseline else "")


def _client(s: ServerResult, name: str) -> ClientResult | None:
    return s.clients.get(name)


def main_table(r: RunResult, *, with_version: bool = False) -> Table:
    """The headline: each server's diff with its interval, the pairs it took and whether the target was met."""
    cols = ["server", "threading", "HTTP", "diff [us]", "diff 95% CI [us]", "target [us]", "pairs", "met",
            "ab diff [us]", "ab 95% CI [us]", "CPU diff [us]", "alloc/req [B]"]
    if with_version:
        cols.insert(1, "version")
    out = []
    for s in r.ranked:
        ab = _client(s, "ab") if s.primary != "ab" else None
        if s.baseline:
            row = [_name(s), s.threading, s.http, "0.00", "baseline", "-", str(s.diff.n), "-", "-", "-", "-",
                   _num(s.alloc)]
        else:
            diff = _us(s.diff.mean) + (f" {NOT_SIGNIFICANT}" if s.differs_from_previous is False else "")
            met = "-" if s.target_met is None or s.diff.n < 2 else ("yes" if s.target_met else "NO")
            row = [_name(s), s.threading, s.http, diff, ci_text(s.diff), f"±{_us(s.target_ns)}", str(s.diff.n), met,
                   _mean(ab.diff if ab else None), ci_text(ab.diff if ab else None),
                   _mean(s.cpu_diff), _num(s.alloc)]
        if with_version:
            row.insert(1, _version(s))
        out.append(row)
    start = 4 if with_version else 3
    return tuple(cols), out, set(range(start, len(cols)))


def study_table(r: RunResult) -> Table:
    """The study's own figures (plain means, requests per second) and the tail, from the headline client."""
    rows = []
    for s in r.ranked:
        c = s.clients[s.primary]
        pd = c.percentile_diffs or {}
        rows.append([_name(s), _mean(c.rtt), _mean(c.plain_rtt),
                     "-" if c.plain_rtt is None else f"{1e9 / c.plain_rtt.mean:,.0f}",
                     "0.00" if s.baseline else _mean(c.plain_diff), "baseline" if s.baseline else ci_text(c.plain_diff),
                     _us(pd.get("p50")), _us(pd.get("p99")), _us(pd.get("p99.9"))])
    cols = ("server", "round trip [us]", "plain round trip [us]", "req/s", "plain diff [us]", "plain diff 95% CI [us]",
            "p50 diff [us]", "p99 diff [us]", "p99.9 diff [us]")
    return cols, rows, set(range(1, len(cols)))


def percentile_table(r: RunResult) -> Table | None:
    """Round trip at each percentile, from the lean client's histograms of every block of the server."""
    rows = []
    for s in r.ranked:
        c = s.clients.get("lean")
        if c is None or c.percentiles is None:
            continue
        rows.append([_name(s)] + [_us(c.percentiles[k]) for k in PERCENTILE_KEYS])
    if not rows:
        return None
    cols = ("server", *(f"{k} [us]" for k in PERCENTILE_KEYS))
    return cols, rows, set(range(1, len(cols)))


def precision_table(r: RunResult) -> Table:
    """Where the uncertainty comes from, and what the sequential stopping reached per server."""
    rows = []
    for s in r.ranked:
        if s.baseline:
            continue
        c = s.clients[s.primary]
        rows.append([s.name, str(s.diff.n), "/".join(str(q) for q in c.quads), _us(c.between_sd),
                     _us(c.within_sd), _us(s.diff.half_width), _us(s.target_ns),
                     "-" if s.diff.n < 2 else ("yes" if s.target_met else "NO"), f"{s.seconds:.0f}"])
    cols = ("server", "pairs", "quads per pair", "between-process sd [us]", "within-pair sd of a quad [us]",
            "half-width [us]", "target [us]", "met", "time [s]")
    return cols, rows, set(range(1, len(cols)))


def cost_table(r: RunResult) -> Table:
    """What the server process spends per request over its measured blocks (baseline: its blocks in every pair)."""
    rows = []
    for s in r.ranked:
        rows.append([_name(s), _mean(s.cpu_user), _mean(s.cpu_system), _mean(s.cpu),
                     "-" if s.baseline else _mean(s.cpu_diff), _num(s.alloc), _num(s.gc_count, 1),
                     _num(s.gc_time_ms, 1), _num(s.jit_cpu_ms, 0)])
    cols = ("server", "CPU user/req [us]", "CPU system/req [us]", "CPU/req [us]", "CPU diff [us]", "alloc/req [B]",
            "GCs per pair", "GC time per pair [ms]", "JIT CPU per pair [ms]")
    return cols, rows, set(range(1, len(cols)))


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


def framework_table(r: RunResult) -> Table | None:
    """What each framework adds over the server it runs on: the difference of the two diffs."""
    by_name = {s.name: s for s in r.ranked}
    rows = []
    for s in r.ranked:
        under = by_name.get(s.runs_on or "")
        if under is None or len(s.estimates) < 2 or len(under.estimates) < 2:
            continue
        over = stats.welch_difference(s.estimates, under.estimates)
        rows.append([s.name, under.name, _us(s.diff.mean), _us(under.diff.mean), _us(over.mean), ci_text(over)])
    if not rows:
        return None
    cols = ("framework", "runs on", "framework diff [us]", "server diff [us]", "added by the framework [us]",
            "95% CI [us]")
    return cols, rows, set(range(2, len(cols)))


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


# -- text ------------------------------------------------------------------------------------------
def headline(r: RunResult) -> str:
    st = r.settings
    jdk = r.env.get("jdk", {}).get("java.runtime.version") or r.env.get("jdk", {}).get("java.version") or "?"
    took = f" in {st_minutes(r)}" if st_minutes(r) else ""
    return (f"latency-diff run {r.run_id} ({r.status}{took}): process pairs against the dummy, ABBA blocks of "
            f"{_count(st.get('block_requests'))} requests, profile {st.get('profile')}, precision target ±max("
            f"{st.get('precision_floor_us')} us, {st.get('precision_pct')}%); {_pinning_short(st)}; clients "
            f"{' and '.join(r.clients)} (diffs from {r.primary}); JDK {jdk}; {r.env.get('cpu_model') or 'unknown CPU'}")


def st_minutes(r: RunResult) -> str:
    return f"{r.seconds / 60:.1f} min" if r.seconds else ""


def _pinning_short(st: dict) -> str:
    mode = st.get("pinning") or "none"
    if mode == "none":
        return "pinning none"
    if mode == "shared":
        return f"pinning shared (client and servers on CPU {st.get('server_cpu')})"
    return f"pinning split (client on CPU {st.get('client_cpu')}, servers on CPU {st.get('server_cpu')})"


def pinning_sentence(r: RunResult) -> str:
    short = _pinning_short(r.settings)
    return f"{short[0].upper()}{short[1:]}: {PINNING_MEANING[r.settings.get('pinning') or 'none']}."


def legend(r: RunResult) -> str:
    return (f"diff: what the server adds to a round trip over the dummy, from {r.primary}'s blocks: per pair of fresh "
            "processes (server and dummy side by side), the median over ABBA quads of (server - dummy) of each "
            "block's trimmed mean (1% cut at each end; ab: its mean); then the mean over pairs with a Student-t 95% "
            f"interval, so JVM-to-JVM variation of both is in it. {NOT_SIGNIFICANT}: not significantly different "
            "from the row above; target: the half-width the interval had to reach; met: whether it did; CPU diff: "
            "the server's CPU time per request minus the dummy's (/proc, both without their JIT compiler threads), a "
            "cross-check under shared pinning; "
            "alloc/req: bytes the server JVM allocated per request (the kit's java agent).")


def checks(r: RunResult) -> list[str]:
    """The method's own checks, in every run: the null pair, the CPU cross-check, the two clients."""
    out = []
    null = r.null
    if null is not None and null.valid and null.diff.ci95_low is not None:
        ok = null.diff.ci95_low <= 0 <= null.diff.ci95_high
        out.append(f"null pair (dummy against a second dummy process): {null.diff.mean / 1000:+.2f} us "
                   f"{ci_text(null.diff)} over {null.diff.n} pairs: " + ("contains 0, as it must" if ok else
                                                                         "does NOT contain 0 (see warnings)"))
    elif null is not None:
        out.append("null pair: " + (null.reason or "fewer than 2 pairs, no interval"))
    measured = [s for s in r.ranked if not s.ladder and s.cpu_diff is not None]
    if measured and r.settings.get("pinning") == "shared":
        close = [s for s in measured if not any("CPU-time diff" in w for w in s.warnings)]
        out.append(f"CPU cross-check: the CPU-time diff is near the latency diff for {len(close)} of {len(measured)} "
                   "servers (CPU diff column)")
    both = [s for s in r.ranked if s.clients_agree is not None]
    if both:
        agree = sum(1 for s in both if s.clients_agree)
        out.append(f"two clients: ab's and the lean client's diff intervals overlap for {agree} of {len(both)} servers")
    met = [s for s in r.ranked if not s.baseline and s.target_met is not None and s.diff.n >= 2]
    if met:
        out.append(f"precision: {sum(1 for s in met if s.target_met)} of {len(met)} rows met the target")
    return out


def all_warnings(r: RunResult) -> list[str]:
    """The run's warnings, then each server's; one line for a warning that several servers share (a smoke run's
    "only 1 process pair" would otherwise bury the others)."""
    names: dict[str, list[str]] = {}
    for s in r.ranked:
        for w in s.warnings:
            names.setdefault(w, []).append(s.name)
    return r.warnings + [f"{n[0]}: {w}" if len(n) == 1 else f"{len(n)} servers ({', '.join(n)}): {w}"
                         for w, n in names.items()]


def table(r: RunResult) -> str:
    out = [headline(r), *([f"NOT FOR COMPARING: {r.caveat}"] if r.caveat else []), "",
           render_text(main_table(r)) if r.ranked else "(no valid server)", "", legend(r),
           pinning_sentence(r)]
    for c in checks(r):
        out.append(f"check: {c}")
    extra: list[tuple[str, Table | None]] = [
        ("The study's figures and the tail:", study_table(r) if r.ranked else None),
        ("What each framework adds over its server:", framework_table(r)),
        ("Precision reached:", precision_table(r) if r.ranked else None),
        ("Cost per request on the server:", cost_table(r) if r.ranked else None),
        ("The two clients:", client_table(r))]
    for title, t in extra:
        if t is not None and t[1]:
            out += ["", title, render_text(t)]
    if r.invalid:
        out += ["", "Invalid (left out of the comparison):"] + [f"  {s.name}: {s.reason}" for s in r.invalid]
    warnings = all_warnings(r)
    if warnings:
        out += ["", "Warnings:"] + [f"  {w}" for w in warnings]
    return "\n".join(out) + "\n"


#: The main table's columns kept by compact_table (the README's copy; report.md has them all).
COMPACT_COLUMNS = ("server", "version", "HTTP", "diff [us]", "diff 95% CI [us]", "pairs", "met", "ab diff [us]",
                   "CPU diff [us]")


def markdown_table(r: RunResult) -> str:
    return render_md(main_table(r, with_version=True))


def compact_table(r: RunResult) -> str:
    """The main table without threading, target, ab's interval and allocation, for a README of every server."""
    cols, rows, _ = main_table(r, with_version=True)
    keep = [cols.index(c) for c in COMPACT_COLUMNS]
    return render_md((COMPACT_COLUMNS, [[row[i] for i in keep] for row in rows], set(range(3, len(keep)))))


# -- machine-readable ----------------------------------------------------------------------------
def _summ(x: Summary | None) -> dict | None:
    return None if x is None else x.to_dict()


def _client_json(c: ClientResult) -> dict:
    return {"diff_ns": _summ(c.diff), "plain_diff_ns": _summ(c.plain_diff), "rtt_ns": _summ(c.rtt),
            "plain_rtt_ns": _summ(c.plain_rtt), "baseline_rtt_ns": _summ(c.base_rtt),
            "pair_estimates_ns": c.estimates, "quads_per_pair": c.quads, "within_pair_sd_ns": c.within_sd,
            "between_pair_sd_ns": c.between_sd, "percentiles_ns": c.percentiles,
            "baseline_percentiles_ns": c.base_percentiles, "percentile_diffs_ns": c.percentile_diffs}


def _server_json(s: ServerResult) -> dict:
    return {
        "name": s.name, "display": s.display, "valid": s.valid, "reason": s.reason, "baseline": s.baseline,
        "reference": s.reference, "threading": s.threading, "http": s.http, "runs_on": s.runs_on,
        "library": s.library, "library_version": s.library_version, "jvm_flags": s.jvm_flags, "notes": s.notes,
        "primary_client": s.primary, "diff_ns": _summ(s.diff), "target_ns": s.target_ns, "target_met": s.target_met,
        "diff_significant_vs_previous": s.differs_from_previous, "clients_agree": s.clients_agree,
        "server_cpu_ns_per_request": _summ(s.cpu), "server_cpu_user_ns_per_request": _summ(s.cpu_user),
        "server_cpu_system_ns_per_request": _summ(s.cpu_system), "cpu_diff_ns_per_request": _summ(s.cpu_diff),
        "alloc_bytes_per_request": _summ(s.alloc), "gc_count_per_pair": _summ(s.gc_count),
        "gc_time_ms_per_pair": _summ(s.gc_time_ms), "jit_cpu_ms_per_pair": _summ(s.jit_cpu_ms),
        "seconds": round(s.seconds, 1), "requests": s.requests, "warnings": s.warnings,
        "clients": {k: _client_json(c) for k, c in s.clients.items()},
        "pairs": [{"pair": p.pair, "round": p.round, "status": p.status, "valid": p.valid, "reason": p.reason,
                   "phase": p.phase, "http": p.http, "seconds": p.seconds,
                   "estimates_ns": {c: p.estimate(c) for c in ("lean", "ab") if p.quads(c)},
                   "quad_diffs_ns": {c: p.quads(c) for c in ("lean", "ab") if p.quads(c)}}
                  for p in s.pairs],
    }


def summary_json(r: RunResult) -> str:
    data = {"format": SUMMARY_FORMAT, "run_id": r.run_id, "status": r.status, "reason": r.reason,
            "settings": r.settings, "clients": list(r.clients), "primary_client": r.primary,
            "caveat": r.caveat, "checks": checks(r), "warnings": r.warnings, "env": r.env,
            "servers": [_server_json(s) for s in r.ranked + r.invalid]}
    return json.dumps(data, indent=2) + "\n"


CSV_COLUMNS = ("name", "valid", "reason", "ladder", "threading", "http", "runs_on", "library", "library_version",
               "primary_client", "pairs", "diff_ns_mean", "diff_ns_ci95_low", "diff_ns_ci95_high", "target_ns",
               "target_met", "diff_significant_vs_previous", "plain_diff_ns_mean", "plain_rtt_ns_mean",
               "ab_diff_ns_mean", "ab_diff_ns_ci95_low", "ab_diff_ns_ci95_high", "clients_agree",
               "server_cpu_ns_per_request", "cpu_diff_ns_per_request", "alloc_bytes_per_request", "seconds",
               *(f"diff_ns_{k}" for k in PERCENTILE_KEYS))


def _csv_row(s: ServerResult) -> list:
    def f(x: float | None) -> str:
        return "" if x is None else f"{x:.1f}"

    c = s.clients.get(s.primary) if s.valid else None
    ab = s.clients.get("ab") if s.valid and s.primary != "ab" else None
    d = s.diff if s.valid else None
    pd = (c.percentile_diffs or {}) if c else {}
    return [s.name, s.valid, s.reason or "", s.ladder, s.threading, s.http, s.runs_on or "", s.library or "",
            s.library_version or "", s.primary, d.n if d else 0, f(d.mean if d else None),
            f(d.ci95_low if d else None), f(d.ci95_high if d else None), f(s.target_ns),
            "" if s.target_met is None else s.target_met,
            "" if s.differs_from_previous is None else s.differs_from_previous,
            f(c.plain_diff.mean if c else None), f(c.plain_rtt.mean if c and c.plain_rtt else None),
            f(ab.diff.mean if ab else None), f(ab.diff.ci95_low if ab else None), f(ab.diff.ci95_high if ab else None),
            "" if s.clients_agree is None else s.clients_agree,
            f(s.cpu.mean if s.cpu else None), f(s.cpu_diff.mean if s.cpu_diff else None),
            f(s.alloc.mean if s.alloc else None), f"{s.seconds:.1f}",
            *(pd.get(k, "") for k in PERCENTILE_KEYS)]


def summary_csv(r: RunResult) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for s in r.ranked + r.invalid:
        w.writerow(_csv_row(s))
    return buf.getvalue()


SECTIONS = (
    ("The study's figures and the tail", "The 2014 study's plain figure, requests over elapsed time per block, paired "
     "the same way (plain diff), and requests per second from it; and the tail: the server's percentiles over all its "
     "blocks minus those of its baselines' blocks (lean client). Stalls move the plain mean and the tail; the "
     "headline's trimmed mean is built to ignore them.", "study"),
    ("What each framework adds over its server", "A framework's diff minus the diff of the kit's row for the server it "
     "runs on (Welch interval over both rows' pairs).", "framework"),
    ("Precision reached", "Per server: process pairs used, quads per pair (adapted to the measured variances, Kalibera "
     "and Jones 2013), the spread between pairs (JVM-to-JVM) and within a pair (one quad), the interval's half-width "
     "against the target, and the time spent.", "precision"),
    ("Percentiles", "Round trip by percentile over every block of a server (lean client); a value is the top of its "
     "histogram bucket (at most 0.4% above the true value).", "percentile"),
    ("Cost per request on the server", "CPU from /proc for the whole server process and for its JIT compiler "
     "threads (JIT CPU: near zero after the warm-up), over the pair's blocks; CPU diff: without the JIT threads, "
     "minus the baseline dummy's the same way in the same pair; allocation and GC from the kit's java agent.", "cost"),
    ("The two clients", "The lean client's and ab's diffs from the same pairs; with their intervals they should "
     "agree (each client's own cost per request is in both the server's and the dummy's blocks, and cancels).",
     "client"),
)


def section_table(r: RunResult, key: str) -> Table | None:
    if not r.ranked:
        return None
    return {"study": study_table, "framework": framework_table, "precision": precision_table,
            "percentile": percentile_table, "cost": cost_table, "client": client_table}[key](r)


def report_md(r: RunResult, plots: dict[str, str] | None = None) -> str:
    """report.md; plots: plot name -> file name (PNG) next to it, embedded under the tables."""
    lines = [f"# latency-diff run {r.run_id}", "",
             f"Status: **{r.status}**" + (f" ({r.reason})" if r.reason else ""), "",
             *([f"**Not for comparing**: {r.caveat}", ""] if r.caveat else []),
             markdown_table(r), "", legend(r), "", pinning_sentence(r), ""]
    lines += [f"- check: {c}" for c in checks(r)] + [""]
    for name, title in PLOTS.items():
        if plots and name in plots:
            lines += [f"![{title}]({plots[name]})", ""]
    for title, text, key in SECTIONS:
        t = section_table(r, key)
        if t is not None and t[1]:
            lines += [f"## {title}", "", text, "", render_md(t), ""]
    if r.invalid:
        lines += ["## Invalid servers", ""] + [f"- **{s.name}**: {s.reason}" for s in r.invalid] + [""]
    warnings = all_warnings(r)
    if warnings:
        lines += ["## Warnings", ""] + [f"- {w}" for w in warnings] + [""]
    lines += ["## Setup", ""] + [f"- {x}" for x in setup_lines(r)] + ["", "## Servers", ""]
    lines += [f"- {x}" for x in server_lines(r)]
    return "\n".join(lines) + "\n"


def setup_lines(r: RunResult) -> list[str]:
    """The run's set-up and machine, one fact a line (markdown: `code` for flags)."""
    env = r.env
    jdk = env.get("jdk", {})
    kit = env.get("kit", {})
    st = r.settings
    return [f"Profile {st.get('profile')}: {st.get('min_pairs')}-{st.get('max_pairs')} process pairs per server, "
            f"budget {st.get('budget_s')} s per server; {st.get('quads')} quads per client in a first pair; "
            f"blocks of {_count(st.get('block_requests'))} timed requests after "
            f"{_count(st.get('block_warmup'))} untimed ones, one keep-alive connection each, one request in "
            f"flight; {_count(st.get('warmup'))} warm-up requests per process; clients: {' and '.join(r.clients)}; "
            f"HTTP: {st.get('http')}",
            pinning_sentence(r),
            f"JVM: {jdk.get('java.vm.name', '?')} {jdk.get('java.runtime.version', jdk.get('java.version', '?'))}"
            f" ({jdk.get('java.vendor', '?')}), flags `{' '.join(st.get('jvm_flags', []))}`",
            f"Machine: {env.get('cpu_model')}, {env.get('cpus_online')} CPUs, kernel {env.get('kernel')}, "
            f"{env.get('os')}, virtualization {env.get('virtualization')}, container {env.get('container')}"
            + (f" ({env['container_evidence']})" if env.get("container_evidence") else ""),
            f"ab: {env.get('ab')}",
            f"Kit commit: {kit.get('commit')}" + (" (with uncommitted changes)" if kit.get("dirty") else "")
            + (f" ({kit['source']})" if kit.get("source") else "")]


def server_lines(r: RunResult) -> list[str]:
    """One line per server: library, threading, HTTP version, notes (markdown: **name**)."""
    out = []
    for s in r.ranked + r.invalid:
        lib = f"{s.library} {s.library_version or ''}".strip() if s.library else "no library"
        flags = f" Own JVM flags: `{' '.join(s.jvm_flags)}`." if s.jvm_flags else ""
        on = f" Runs on {s.runs_on}." if s.runs_on else ""
        out.append(f"**{s.name}** ({s.display}; {lib}; {s.threading}; HTTP/{s.http}): {s.notes}{on}{flags}")
    return out
