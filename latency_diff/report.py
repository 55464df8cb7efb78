"""Renders one RunResult as the terminal table, summary.json, summary.csv and report.md.

Tables use one unit, named in the header (microseconds for times; summary.json keeps nanoseconds).
"""

from __future__ import annotations

import csv
import io
import json

from .model import SUMMARY_FORMAT, RunResult, ServerResult
from .stats import Summary

NOT_SIGNIFICANT = "≈"


def _us(ns: float | None, digits: int = 2) -> str:
    return "-" if ns is None else f"{ns / 1000:.{digits}f}"


def _ci(s: Summary | None) -> str:
    if s is None or s.ci95_low is None:
        return "-"
    return f"[{s.ci95_low / 1000:.2f}, {s.ci95_high / 1000:.2f}]"


def _pm(s: Summary | None) -> str:
    if s is None:
        return "-"
    return _us(s.mean) + ("" if s.stdev is None else f" ± {_us(s.stdev)}")


def _version(s: ServerResult) -> str:
    if s.library is None:
        return "built in" if not s.baseline else "-"
    return s.library_version or "?"


COLUMNS = ("server", "threading", "round trip [us]", "diff [us]", "diff 95% CI [us]", "CPU/req [us]",
           "bytes", "req/s", "trials")


def rows(r: RunResult) -> list[list[str]]:
    out = []
    for s in r.ranked:
        diff = _us(s.diff.mean) if s.diff else "-"
        if s.differs_from_previous is False:
            diff += f" {NOT_SIGNIFICANT}"
        ci = "baseline" if s.baseline else _ci(s.diff)
        out.append([s.name, s.threading, _pm(s.rtt), diff, ci, _us(s.cpu.mean if s.cpu else None),
                    f"{s.bytes_per_response:.0f}", f"{s.rps.mean:,.0f}", str(s.rtt.n)])
    return out


def headline(r: RunResult) -> str:
    st = r.settings
    jdk = r.env.get("jdk", {}).get("java.runtime.version") or r.env.get("jdk", {}).get("java.version") or "?"
    return (f"latency-diff run {r.run_id} ({r.status}): {st.get('trials')} trial(s) x "
            f"{st.get('requests'):,} requests per server, profile {st.get('profile')}; "
            f"ab on CPU {st.get('client_cpu')}, "
            f"server on CPU {st.get('server_cpu')}; JDK {jdk}; {r.env.get('cpu_model') or 'unknown CPU'}")


def table(r: RunResult) -> str:
    body = rows(r)
    widths = [max(len(c), *(len(row[i]) for row in body)) if body else len(c) for i, c in enumerate(COLUMNS)]
    right = {2, 3, 4, 5, 6, 7, 8}

    def line(cells):
        cols = enumerate(zip(cells, widths, strict=True))
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in cols)

    out = [headline(r), "", line(COLUMNS), line(["-" * w for w in widths])]
    out += [line(row) for row in body]
    if not body:
        out.append("(no valid server)")
    out.append("")
    out.append("round trip: mean ± stdev over trials; diff: round trip minus the dummy's, 95% Welch interval; "
               f"{NOT_SIGNIFICANT}: not significantly different from the row above.")
    if r.invalid:
        out.append("")
        out.append("Invalid (left out of the comparison):")
        out += [f"  {s.name}: {s.reason}" for s in r.invalid]
    warnings = r.warnings + [f"{s.name}: {w}" for s in r.ranked for w in s.warnings]
    if warnings:
        out.append("")
        out.append("Warnings:")
        out += [f"  {w}" for w in warnings]
    return "\n".join(out) + "\n"


def _server_json(s: ServerResult) -> dict:
    def summ(x: Summary | None):
        return None if x is None else x.to_dict()
    return {
        "name": s.name, "display": s.display, "valid": s.valid, "reason": s.reason, "baseline": s.baseline,
        "threading": s.threading, "library": s.library, "library_version": s.library_version,
        "jvm_flags": s.jvm_flags, "notes": s.notes, "requests": s.requests,
        "rps": summ(s.rps), "rtt_ns": summ(s.rtt), "diff_ns": summ(s.diff),
        "diff_significant_vs_previous": s.differs_from_previous,
        "bytes_per_response": s.bytes_per_response, "server_cpu_ns_per_request": summ(s.cpu),
        "warnings": s.warnings,
        "trials": [{"trial": t.trial, "status": t.status, "valid": t.valid, "reason": t.reason, "phase": t.phase,
                    "requests": t.requests, "rtt_ns": t.rtt_ns, "rps": t.rps,
                    "cpu_ns_per_request": t.cpu_ns_per_request, "cpu_user_ns_per_request": t.cpu_user_ns_per_request,
                    "cpu_system_ns_per_request": t.cpu_system_ns_per_request, "ab_file": t.ab_file}
                   for t in s.trials],
    }


def summary_json(r: RunResult) -> str:
    data = {"format": SUMMARY_FORMAT, "run_id": r.run_id, "status": r.status, "reason": r.reason,
            "settings": r.settings, "warnings": r.warnings, "env": r.env,
            "servers": [_server_json(s) for s in r.ranked + r.invalid]}
    return json.dumps(data, indent=2) + "\n"


CSV_COLUMNS = ("name", "valid", "reason", "threading", "library", "library_version", "trials", "requests",
               "rtt_ns_mean", "rtt_ns_stdev", "rtt_ns_ci95_low", "rtt_ns_ci95_high", "diff_ns_mean",
               "diff_ns_ci95_low", "diff_ns_ci95_high", "diff_significant_vs_previous", "rps_mean",
               "server_cpu_ns_per_request_mean", "bytes_per_response")


def summary_csv(r: RunResult) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for s in r.ranked + r.invalid:
        def g(x: Summary | None, f: str):
            v = getattr(x, f) if x is not None else None
            return "" if v is None else f"{v:.1f}"
        w.writerow([s.name, s.valid, s.reason or "", s.threading, s.library or "", s.library_version or "",
                    s.rtt.n if s.rtt else 0, s.requests, g(s.rtt, "mean"), g(s.rtt, "stdev"), g(s.rtt, "ci95_low"),
                    g(s.rtt, "ci95_high"), g(s.diff, "mean"), g(s.diff, "ci95_low"), g(s.diff, "ci95_high"),
                    "" if s.differs_from_previous is None else s.differs_from_previous, g(s.rps, "mean"),
                    g(s.cpu, "mean"), "" if s.bytes_per_response is None else f"{s.bytes_per_response:.0f}"])
    return buf.getvalue()


def markdown_table(r: RunResult) -> str:
    cols = ("server", "version", "threading", "round trip [us]", "diff [us]", "diff 95% CI [us]", "CPU/req [us]",
            "bytes", "req/s", "trials")
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" if i < 3 else "---:" for i in range(len(cols))) + "|"]
    for s, row in zip(r.ranked, rows(r), strict=True):
        cells = [row[0], _version(s), *row[1:]]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def report_md(r: RunResult) -> str:
    env = r.env
    jdk = env.get("jdk", {})
    kit = env.get("kit", {})
    st = r.settings
    lines = [f"# latency-diff run {r.run_id}", "",
             f"Status: **{r.status}**" + (f" ({r.reason})" if r.reason else ""), "",
             markdown_table(r), "",
             "Round trip: mean ± standard deviation over trials (each a fresh JVM). Diff: round trip minus the "
             "dummy's, with a 95% Welch interval that includes the dummy's own uncertainty. "
             f"{NOT_SIGNIFICANT}: not significantly different from the row above. CPU/req: the server process's "
             "user + system CPU time over the measured run, per request.", ""]
    if r.invalid:
        lines += ["## Invalid servers", ""] + [f"- **{s.name}**: {s.reason}" for s in r.invalid] + [""]
    warnings = r.warnings + [f"{s.name}: {w}" for s in r.ranked for w in s.warnings]
    if warnings:
        lines += ["## Warnings", ""] + [f"- {w}" for w in warnings] + [""]
    lines += ["## Setup", "",
              f"- Profile {st.get('profile')}: {st.get('trials')} trial(s) per server, {st.get('warmup'):,} warm-up "
              f"and {st.get('requests'):,} measured requests each, `ab -k -c1` on one keep-alive connection",
              f"- Pinning: ab on CPU {st.get('client_cpu')}, the whole server JVM on CPU {st.get('server_cpu')}",
              f"- JVM: {jdk.get('java.vm.name', '?')} {jdk.get('java.runtime.version', jdk.get('java.version', '?'))}"
              f" ({jdk.get('java.vendor', '?')}), flags `{' '.join(st.get('jvm_flags', []))}`",
              f"- Machine: {env.get('cpu_model')}, {env.get('cpus_online')} CPUs, kernel {env.get('kernel')}, "
              f"{env.get('os')}, virtualization {env.get('virtualization')}, container {env.get('container')}",
              f"- Client: {env.get('ab')}",
              f"- Kit commit: {kit.get('commit')}" + (" (with uncommitted changes)" if kit.get("dirty") else ""),
              "", "## Servers", ""]
    for s in r.ranked + r.invalid:
        lib = f"{s.library} {s.library_version or ''}".strip() if s.library else "no library"
        flags = f" Own JVM flags: `{' '.join(s.jvm_flags)}`." if s.jvm_flags else ""
        lines.append(f"- **{s.name}** ({s.display}; {lib}; {s.threading}): {s.notes}{flags}")
    return "\n".join(lines) + "\n"
