"""Renders one RunResult as the terminal tables, summary.json, summary.csv and report.md.

Every table is a list of rows of strings built once here and printed either aligned (terminal) or
as Markdown. Tables use one unit, named in the header (microseconds for times; summary.json and
summary.csv keep nanoseconds).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable

from .histogram import PERCENTILES, label
from .model import AGREEMENT, SUMMARY_FORMAT, ClientResult, RunResult, ServerResult
from .stats import Summary

NOT_SIGNIFICANT = "≈"
PERCENTILE_KEYS = tuple(label(p) for p in PERCENTILES) + ("max",)
PLOTS = {"diffs": "Diffs with their 95% intervals", "percentiles": "Round trip by percentile"}

PINNING_MEANING = {
    "split": "client and server on two CPUs (the 2014 study's set-up): a round trip includes waking the other "
             "CPU, and the diff is the server's added critical-path latency",
    "shared": "client and server on one CPU: a round trip is the client's plus the server's CPU work plus the "
              "kernel's, with no cross-CPU wake-up, so the diff is the server's CPU work per request",
    "none": "not pinned: the scheduler placed client and server, so round trips mix both cases above",
}


def _us(ns: float | None, digits: int = 2) -> str:
    return "-" if ns is None else f"{ns / 1000:.{digits}f}"


def ci_text(s: Summary | None) -> str:
    if s is None or s.ci95_low is None:
        return "-"
    return f"[{s.ci95_low / 1000:.2f}, {s.ci95_high / 1000:.2f}]"


def _pm(s: Summary | None) -> str:
    if s is None:
        return "-"
    return _us(s.mean) + ("" if s.stdev is None else f" ± {_us(s.stdev)}")


def _num(s: Summary | None, digits: int = 0, scale: float = 1.0) -> str:
    return "-" if s is None else f"{s.mean * scale:,.{digits}f}"


def _version(s: ServerResult) -> str:
    if s.library is None:
        return "built in" if not (s.baseline or s.reference) else "-"
    return s.library_version or "?"


def _name(s: ServerResult) -> str:
    return s.name + (" (baseline)" if s.baseline else "")


# -- tables: (columns, rows, right-aligned column indexes) ----------------------------------------
Table = tuple[tuple[str, ...], list[list[str]], set[int]]


def main_table(r: RunResult, *, with_version: bool = False) -> Table:
    cols = ["server", "threading", "round trip [us]", "median [us]", "diff [us]", "diff 95% CI [us]",
            "p50 diff [us]", "p50 diff 95% CI [us]", "CPU/req [us]", "alloc/req [B]", "req/s", "trials"]
    if with_version:
        cols.insert(1, "version")
    out = []
    for s in r.ranked:
        diff = _us(s.diff.mean) if s.diff else "-"
        if s.differs_from_previous is False:
            diff += f" {NOT_SIGNIFICANT}"
        ci = "baseline" if s.baseline else ci_text(s.diff)
        p = s.clients[s.primary]
        p50_ci = "baseline" if s.baseline and p.p50_diff else ci_text(p.p50_diff)
        row = [_name(s), s.threading, _pm(s.rtt), _us(s.rtt.median), diff, ci,
               _us(p.p50_diff.mean if p.p50_diff else None), p50_ci, _us(s.cpu.mean if s.cpu else None),
               _num(p.alloc), f"{s.rps.mean:,.0f}", str(s.rtt.n)]
        if with_version:
            row.insert(1, _version(s))
        out.append(row)
    return tuple(cols), out, set(range(3 if with_version else 2, len(cols)))


def percentile_table(r: RunResult) -> Table | None:
    """Round trip and diff at each percentile, from the lean client's histograms of all trials together."""
    rows = []
    for s in r.ranked:
        c = s.clients.get("lean")
        if c is None or c.percentiles is None:
            continue
        diffs = c.percentile_diffs or {}
        rows.append([_name(s)] + [_us(c.percentiles[k]) for k in PERCENTILE_KEYS]
                    + [_us(diffs.get(k)) if diffs else "-" for k in PERCENTILE_KEYS])
    if not rows:
        return None
    cols = ("server", *(f"{k} [us]" for k in PERCENTILE_KEYS), *(f"diff {k} [us]" for k in PERCENTILE_KEYS))
    return cols, rows, set(range(1, len(cols)))


def cost_table(r: RunResult) -> Table:
    """What the server process spends per request, measured over the primary client's runs."""
    rows = []
    for s in r.ranked:
        c = s.clients[s.primary]
        rows.append([_name(s), _us(c.cpu_user.mean if c.cpu_user else None),
                     _us(c.cpu_system.mean if c.cpu_system else None), _us(c.cpu.mean if c.cpu else None),
                     _num(c.alloc), _num(c.gc_count, 1), _num(c.gc_time_ms, 1), _num(c.jit_cpu_ms, 0)])
    cols = ("server", "CPU user/req [us]", "CPU system/req [us]", "CPU/req [us]", "alloc/req [B]",
            "GCs per run", "GC time per run [ms]", "JIT CPU per run [ms]")
    return cols, rows, set(range(1, len(cols)))


def client_table(r: RunResult) -> Table | None:
    """ab's and the lean client's round trips side by side: two independent clients should agree."""
    if not {"ab", "lean"} <= set(r.clients):
        return None
    rows = []
    for s in r.ranked:
        a = s.agreement
        if a is None:
            continue
        ab, ln = s.clients["ab"], s.clients["lean"]
        rows.append([_name(s), _pm(ab.rtt), _pm(ln.rtt), f"{a:+.1%}", "yes" if abs(a) <= AGREEMENT else "NO",
                     _us(ab.diff.mean if ab.diff else None), _us(ln.diff.mean if ln.diff else None)])
    cols = ("server", "ab round trip [us]", "lean round trip [us]", "ab vs lean", f"within {AGREEMENT:.0%}",
            "ab diff [us]", "lean diff [us]")
    return cols, rows, set(range(1, len(cols)))


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
    return (f"latency-diff run {r.run_id} ({r.status}): {st.get('trials')} trial(s) x "
            f"{st.get('requests'):,} requests per server and client, profile {st.get('profile')}; "
            f"{_pinning_short(st)}; clients {' and '.join(r.clients)} (diffs from {r.primary}); JDK {jdk}; "
            f"{r.env.get('cpu_model') or 'unknown CPU'}")


def _pinning_short(st: dict) -> str:
    mode = st.get("pinning") or ("split" if st.get("client_cpu") is not None else "none")
    if mode == "none":
        return "pinning none"
    if mode == "shared":
        return f"pinning shared (client and server on CPU {st.get('server_cpu')})"
    return f"pinning split (client on CPU {st.get('client_cpu')}, server on CPU {st.get('server_cpu')})"


def pinning_sentence(r: RunResult) -> str:
    st = r.settings
    mode = st.get("pinning") or ("split" if st.get("client_cpu") is not None else "none")
    short = _pinning_short(st)
    return f"{short[0].upper()}{short[1:]}: {PINNING_MEANING[mode]}."


def legend(r: RunResult) -> str:
    return (f"round trip: {r.primary}'s time per request (elapsed / requests), mean ± stdev over trials, each a fresh "
            f"server process; diff: round trip minus the dummy's, 95% Welch interval including the dummy's own "
            f"uncertainty; {NOT_SIGNIFICANT}: not significantly different from the row above; p50 diff: the same for "
            "each trial's median request (lean client), which rare long stalls do not move; CPU/req: the server "
            "process's user + system CPU time over the measured run; alloc/req: bytes the server JVM allocated, "
            "from the kit's java agent.")


def _warnings(r: RunResult) -> list[str]:
    return r.warnings + [f"{s.name}: {w}" for s in r.ranked for w in s.warnings]


def table(r: RunResult) -> str:
    out = [headline(r), "", render_text(main_table(r)) if r.ranked else "(no valid server)", "", legend(r),
           pinning_sentence(r)]
    extra: list[tuple[str, Table | None]] = [
        ("Round trip and diff by percentile (lean client, all trials together):", percentile_table(r)),
        ("Cost per request on the server:", cost_table(r) if r.ranked else None),
        ("The two clients:", client_table(r))]
    for title, t in extra:
        if t is not None and t[1]:
            out += ["", title, render_text(t)]
    if r.invalid:
        out += ["", "Invalid (left out of the comparison):"] + [f"  {s.name}: {s.reason}" for s in r.invalid]
    warnings = _warnings(r)
    if warnings:
        out += ["", "Warnings:"] + [f"  {w}" for w in warnings]
    return "\n".join(out) + "\n"


def markdown_table(r: RunResult) -> str:
    return render_md(main_table(r, with_version=True))


# -- machine-readable ----------------------------------------------------------------------------
def _summ(x: Summary | None) -> dict | None:
    return None if x is None else x.to_dict()


def _client_json(c: ClientResult) -> dict:
    return {"rtt_ns": _summ(c.rtt), "diff_ns": _summ(c.diff), "rps": _summ(c.rps), "mean_rtt_ns": _summ(c.mean_rtt),
            "p50_ns": _summ(c.p50), "p50_diff_ns": _summ(c.p50_diff),
            "percentiles_ns": c.percentiles, "percentile_diffs_ns": c.percentile_diffs,
            "server_cpu_user_ns_per_request": _summ(c.cpu_user),
            "server_cpu_system_ns_per_request": _summ(c.cpu_system),
            "server_cpu_ns_per_request": _summ(c.cpu), "alloc_bytes_per_request": _summ(c.alloc),
            "gc_count_per_run": _summ(c.gc_count), "gc_time_ms_per_run": _summ(c.gc_time_ms),
            "compile_time_ms_per_run": _summ(c.compile_time_ms), "jit_cpu_ms_per_run": _summ(c.jit_cpu_ms),
            "histogram": None if c.histogram is None else [list(b) for b in c.histogram.buckets]}


def _server_json(s: ServerResult) -> dict:
    return {
        "name": s.name, "display": s.display, "valid": s.valid, "reason": s.reason, "baseline": s.baseline,
        "reference": s.reference, "threading": s.threading, "library": s.library,
        "library_version": s.library_version, "jvm_flags": s.jvm_flags, "notes": s.notes, "requests": s.requests,
        "primary_client": s.primary, "rps": _summ(s.rps), "rtt_ns": _summ(s.rtt), "diff_ns": _summ(s.diff),
        "diff_significant_vs_previous": s.differs_from_previous, "bytes_per_response": s.bytes_per_response,
        "server_cpu_ns_per_request": _summ(s.cpu), "ab_vs_lean": s.agreement, "warnings": s.warnings,
        "clients": {k: _client_json(c) for k, c in s.clients.items()},
        "trials": [{"trial": t.trial, "status": t.status, "valid": t.valid, "reason": t.reason, "phase": t.phase,
                    "requests": t.requests,
                    "measurements": {k: {"file": m.file, "rtt_ns": m.rtt_ns, "rps": m.rps,
                                         "mean_rtt_ns": m.mean_rtt_ns,
                                         "cpu_user_ns_per_request": m.cpu_user_ns_per_request,
                                         "cpu_system_ns_per_request": m.cpu_system_ns_per_request,
                                         "alloc_bytes_per_request": m.alloc_bytes_per_request,
                                         "gc_count": m.gc_count, "gc_time_ms": m.gc_time_ms,
                                         "compile_time_ms": m.compile_time_ms, "jit_cpu_ms": m.jit_cpu_ms,
                                         "jvm_error": m.jvm_error}
                                     for k, m in t.measurements.items()}}
                   for t in s.trials],
    }


def summary_json(r: RunResult) -> str:
    data = {"format": SUMMARY_FORMAT, "run_id": r.run_id, "status": r.status, "reason": r.reason,
            "settings": r.settings, "clients": list(r.clients), "primary_client": r.primary,
            "warnings": r.warnings, "env": r.env, "servers": [_server_json(s) for s in r.ranked + r.invalid]}
    return json.dumps(data, indent=2) + "\n"


def _csv_columns() -> list[tuple[str, Callable[[ServerResult], object]]]:
    def g(get: Callable[[ServerResult], Summary | None], f: str) -> Callable[[ServerResult], object]:
        def cell(s: ServerResult) -> object:
            x = get(s) if s.valid else None
            v = getattr(x, f) if x is not None else None
            return "" if v is None else f"{v:.1f}"
        return cell

    def prim(s: ServerResult) -> ClientResult | None:
        return s.clients.get(s.primary)

    def pct(key: str, diff: bool) -> Callable[[ServerResult], object]:
        def cell(s: ServerResult) -> object:
            c = s.clients.get("lean") if s.valid else None
            d = (c.percentile_diffs if diff else c.percentiles) if c else None
            return "" if not d else d[key]
        return cell

    cols: list[tuple[str, Callable[[ServerResult], object]]] = [
        ("name", lambda s: s.name), ("valid", lambda s: s.valid), ("reason", lambda s: s.reason or ""),
        ("reference", lambda s: s.baseline or s.reference), ("threading", lambda s: s.threading),
        ("library", lambda s: s.library or ""), ("library_version", lambda s: s.library_version or ""),
        ("primary_client", lambda s: s.primary), ("trials", lambda s: s.rtt.n if s.rtt else 0),
        ("requests", lambda s: s.requests),
        ("rtt_ns_mean", g(lambda s: s.rtt, "mean")), ("rtt_ns_median", g(lambda s: s.rtt, "median")),
        ("rtt_ns_stdev", g(lambda s: s.rtt, "stdev")), ("rtt_ns_ci95_low", g(lambda s: s.rtt, "ci95_low")),
        ("rtt_ns_ci95_high", g(lambda s: s.rtt, "ci95_high")), ("diff_ns_mean", g(lambda s: s.diff, "mean")),
        ("diff_ns_ci95_low", g(lambda s: s.diff, "ci95_low")), ("diff_ns_ci95_high", g(lambda s: s.diff, "ci95_high")),
        ("diff_significant_vs_previous", lambda s: "" if s.differs_from_previous is None else s.differs_from_previous),
        ("p50_diff_ns_mean", g(lambda s: prim(s).p50_diff if prim(s) else None, "mean")),
        ("p50_diff_ns_ci95_low", g(lambda s: prim(s).p50_diff if prim(s) else None, "ci95_low")),
        ("p50_diff_ns_ci95_high", g(lambda s: prim(s).p50_diff if prim(s) else None, "ci95_high")),
        ("rps_mean", g(lambda s: s.rps, "mean")),
        ("server_cpu_user_ns_per_request", g(lambda s: prim(s).cpu_user if prim(s) else None, "mean")),
        ("server_cpu_system_ns_per_request", g(lambda s: prim(s).cpu_system if prim(s) else None, "mean")),
        ("server_cpu_ns_per_request_mean", g(lambda s: s.cpu, "mean")),
        ("alloc_bytes_per_request", g(lambda s: prim(s).alloc if prim(s) else None, "mean")),
        ("gc_count_per_run", g(lambda s: prim(s).gc_count if prim(s) else None, "mean")),
        ("gc_time_ms_per_run", g(lambda s: prim(s).gc_time_ms if prim(s) else None, "mean")),
        ("ab_rtt_ns_mean", g(lambda s: s.clients["ab"].rtt if "ab" in s.clients else None, "mean")),
        ("lean_rtt_ns_mean", g(lambda s: s.clients["lean"].rtt if "lean" in s.clients else None, "mean")),
    ]
    cols += [(f"rtt_ns_{k}", pct(k, False)) for k in PERCENTILE_KEYS]
    cols += [(f"diff_ns_{k}", pct(k, True)) for k in PERCENTILE_KEYS]
    cols.append(("bytes_per_response",
                 lambda s: "" if s.bytes_per_response is None else f"{s.bytes_per_response:.0f}"))
    return cols


def summary_csv(r: RunResult) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = _csv_columns()
    w.writerow([name for name, _ in cols])
    for s in r.ranked + r.invalid:
        w.writerow([get(s) for _, get in cols])
    return buf.getvalue()


def report_md(r: RunResult, plots: dict[str, str] | None = None) -> str:
    """report.md; plots: plot name -> file name (PNG) next to it, embedded under the tables."""
    env = r.env
    jdk = env.get("jdk", {})
    kit = env.get("kit", {})
    st = r.settings
    lines = [f"# latency-diff run {r.run_id}", "",
             f"Status: **{r.status}**" + (f" ({r.reason})" if r.reason else ""), "",
             markdown_table(r), "", legend(r), "", pinning_sentence(r), ""]
    for name, title in PLOTS.items():
        if plots and name in plots:
            lines += [f"![{title}]({plots[name]})", ""]
    sections: list[tuple[str, str, Table | None]] = [
        ("Round trip and diff by percentile", "From the lean client's per-request histograms, all trials of a server "
         "together; a value is the top of its histogram bucket (at most 0.4% above the true value). The diff at a "
         "percentile is the server's value minus the dummy's at that percentile.", percentile_table(r)),
        ("Cost per request on the server", "CPU from /proc for the whole server process, and for its JIT compiler "
         "threads alone (JIT CPU: should be near zero after the warm-up); allocation and GC counters from the kit's "
         "java agent inside the JVM, read just before and after each measured run.",
         cost_table(r) if r.ranked else None),
        ("The two clients", f"Time per request of ab and of the lean client in the same trials; independent clients "
         f"should agree within {AGREEMENT:.0%} (their own costs per request differ a little; the diffs cancel "
         "them).", client_table(r)),
    ]
    for title, text, t in sections:
        if t is not None and t[1]:
            lines += [f"## {title}", "", text, "", render_md(t), ""]
    if r.invalid:
        lines += ["## Invalid servers", ""] + [f"- **{s.name}**: {s.reason}" for s in r.invalid] + [""]
    warnings = _warnings(r)
    if warnings:
        lines += ["## Warnings", ""] + [f"- {w}" for w in warnings] + [""]
    lines += ["## Setup", "",
              f"- Profile {st.get('profile')}: {st.get('trials')} trial(s) per server, {st.get('warmup'):,} warm-up "
              f"and {st.get('requests'):,} measured requests per client in each, one keep-alive connection, one "
              f"request in flight; clients: {' and '.join(r.clients)}",
              f"- {pinning_sentence(r)}",
              f"- JVM: {jdk.get('java.vm.name', '?')} {jdk.get('java.runtime.version', jdk.get('java.version', '?'))}"
              f" ({jdk.get('java.vendor', '?')}), flags `{' '.join(st.get('jvm_flags', []))}`",
              f"- Machine: {env.get('cpu_model')}, {env.get('cpus_online')} CPUs, kernel {env.get('kernel')}, "
              f"{env.get('os')}, virtualization {env.get('virtualization')}, container {env.get('container')}",
              f"- ab: {env.get('ab')}",
              f"- Kit commit: {kit.get('commit')}" + (" (with uncommitted changes)" if kit.get("dirty") else ""),
              "", "## Servers", ""]
    for s in r.ranked + r.invalid:
        lib = f"{s.library} {s.library_version or ''}".strip() if s.library else "no library"
        flags = f" Own JVM flags: `{' '.join(s.jvm_flags)}`." if s.jvm_flags else ""
        lines.append(f"- **{s.name}** ({s.display}; {lib}; {s.threading}): {s.notes}{flags}")
    return "\n".join(lines) + "\n"
