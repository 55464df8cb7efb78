"""summary.csv: one row per server, the figures a spreadsheet needs; times in ns, units in the column names.

A diff is (ratio - 1) x the reference baseline round trip of its client in the run: ref_ns (the headline
client's, per row) and ab_ref_ns (ab's) are there so that a reader can rescale a diff to another reference,
another run's, to compare two runs (ratio_mean is free of it).
"""

from __future__ import annotations

import csv
import io

from ..model import RunResult, ServerResult
from . import tables

COLUMNS = ("name", "valid", "reason", "ladder", "threading", "http", "runs_on", "library", "library_version",
           "primary_client", "pairs", "diff_ns_mean", "diff_ns_ci95_low", "diff_ns_ci95_high", "ratio_mean", "ref_ns",
           "unscaled_diff_ns_mean", "target_ns", "target_met", "diff_significant_vs_previous", "plain_diff_ns_mean",
           "plain_rtt_ns_mean", "ab_diff_ns_mean", "ab_diff_ns_ci95_low", "ab_diff_ns_ci95_high", "ab_ref_ns",
           "clients_agree", "server_cpu_ns_per_request", "cpu_diff_ns_per_request", "cpu_ratio",
           "alloc_bytes_per_request", "seconds", "measure_share", *(f"diff_ns_{k}" for k in tables.PERCENTILE_KEYS))


def _f(x: float | None) -> str:
    return "" if x is None else f"{x:.1f}"


def _opt(x: bool | None) -> str | bool:
    return "" if x is None else x


def _row(s: ServerResult, ref: dict[str, float]) -> list:
    c = s.clients.get(s.primary) if s.valid else None
    ab = s.clients.get("ab") if s.valid and s.primary != "ab" else None
    d = s.diff if s.valid else None
    pd = (c.percentile_diffs or {}) if c else {}
    return [s.name, s.valid, s.reason or "", s.ladder, s.threading, s.http, s.runs_on or "", s.library or "",
            s.library_version or "", s.primary, d.n if d else 0, _f(d.mean if d else None),
            _f(d.ci95_low if d else None), _f(d.ci95_high if d else None), f"{c.ratio.mean:.4f}" if c else "",
            _f(ref.get(s.primary)), _f(c.unscaled_diff.mean if c else None), _f(s.target), _opt(s.target_met),
            _opt(s.differs_from_previous), _f(c.plain_diff.mean if c else None), _f(c.plain_rtt.mean if c else None),
            _f(ab.diff.mean if ab else None), _f(ab.diff.ci95_low if ab else None),
            _f(ab.diff.ci95_high if ab else None), _f(ab.ref if ab else None), _opt(s.clients_agree),
            _f(s.cpu.mean if s.cpu else None), _f(s.cpu_diff.mean if s.cpu_diff else None),
            f"{s.cpu_ratio.mean:.3f}" if s.cpu_ratio else "", _f(s.alloc.mean if s.alloc else None),
            f"{s.seconds:.1f}", "" if s.measure_share is None else f"{s.measure_share:.3f}",
            *(pd.get(k, "") for k in tables.PERCENTILE_KEYS)]


def render(r: RunResult) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for s in r.ranked + r.invalid:
        w.writerow(_row(s, r.ref))
    return buf.getvalue()
