"""The plots of a run: PNG files next to report.md, and SVG text that report.html inlines.

- diffs: each server's diff with its 95% interval, sorted, the baseline ladder drawn apart;
- percentiles: round trip against percentile for every server with lean-client histograms, the
  x axis stretched towards the tail (1 / (1 - p) on a log scale), as HdrHistogram plots do.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import io  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402

from ... import rundir  # noqa: E402
from ..model import RunResult  # noqa: E402

matplotlib.rcParams["svg.hashsalt"] = "latency-diff"  # the same run gives the same SVG
matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, searchable SVG
#: Percentiles drawn on the percentile plot's x axis.
TICKS = (0.0, 90.0, 99.0, 99.9, 99.99, 99.999)


def _png(fig, run_dir: Path, stem: str) -> Path:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    path = run_dir / f"{stem}.png"
    rundir.write_atomic(path, buf.getvalue())
    return path


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return buf.getvalue()


def diff_plot(r: RunResult):
    """Each server's diff with its interval, sorted, the ladder in grey; None without rows."""
    rows = [s for s in r.ranked if s.diff is not None and not s.baseline]
    if not rows:
        return None
    rows = sorted(rows, key=lambda s: (not s.reference, s.diff.mean), reverse=True)  # top of the chart first
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(rows) + 1.6))
    y = range(len(rows))
    means = [s.diff.mean / 1000 for s in rows]
    lows = [(s.diff.mean - s.diff.ci95_low) / 1000 if s.diff.ci95_low is not None else 0 for s in rows]
    highs = [(s.diff.ci95_high - s.diff.mean) / 1000 if s.diff.ci95_high is not None else 0 for s in rows]
    colors = ["#9e9e9e" if s.reference else "#3b75af" for s in rows]
    ax.barh(list(y), means, xerr=[lows, highs], color=colors, ecolor="black", capsize=3)
    ax.set_yticks(list(y), [s.name for s in rows])
    ax.axvline(0, color="black", linewidth=0.8)
    ref = r.ref.get(r.primary)
    at = f", at a baseline round trip of {ref / 1000:.2f} us" if ref else ""
    ax.set_xlabel(f"diff: what the server adds over the dummy [us] ({r.primary} client, paired, scaled{at}; 95% "
                  "interval)")
    ax.set_title(f"latency-diff {r.run_id}: time each server adds per request")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _x(p: float) -> float:
    """Position of percentile p on the stretched axis: 1 / (1 - p/100)."""
    return 1.0 / (1.0 - p / 100.0)


def percentile_plot(r: RunResult):
    """Round trip against percentile for every server with lean-client histograms; None without any."""
    series = [(s, s.clients["lean"].histogram) for s in r.ranked
              if "lean" in s.clients and s.clients["lean"].histogram is not None]
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(9, 5.5))
    cmap = plt.get_cmap("tab20")
    top = 0.0
    for i, (s, h) in enumerate(series):
        # Up to the percentile where one sample is left; beyond it the histogram has nothing to say.
        last = 100.0 * (1.0 - 1.0 / h.count)
        ps = [p for p in _grid() if p <= last]
        xs = [_x(p) for p in ps]
        ys = [h.percentile(p) / 1000 if p > 0 else h.buckets[0][1] / 1000 for p in ps]
        top = max(top, xs[-1])
        style = "--" if (s.baseline or s.reference) else "-"
        ax.plot(xs, ys, style, color=cmap(i % 20), linewidth=1.4, label=s.name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ticks = [t for t in TICKS if _x(t) <= top * 1.0001]
    ax.xaxis.set_major_locator(FixedLocator([_x(t) for t in ticks]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{100 - 100 / v:g}%"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("percentile (the tail stretched: 1 / (1 - p) on a log scale)")
    ax.set_ylabel("round trip [us] (log scale)")
    ax.set_title(f"latency-diff {r.run_id}: round trip by percentile (lean client, all segments)")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    return fig


def _grid() -> list[float]:
    """Percentiles evenly spread on the stretched axis, from 0 to 99.9999."""
    n = 240
    return [100.0 * (1.0 - 10 ** (-6 * i / n)) for i in range(n + 1)]


def changes_plot(rows: list[tuple[str, float, float, float]], title: str, xlabel: str, path: Path) -> Path:
    """One bar per comparison: (label, change, low, high) in ns, drawn in us with the 95% interval; PNG at path."""
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(rows) + 1.6))
    rows = list(reversed(rows))  # the first at the top
    y = range(len(rows))
    means = [m / 1000 for _, m, _, _ in rows]
    err = [[(m - lo) / 1000 for _, m, lo, _ in rows], [(hi - m) / 1000 for _, m, _, hi in rows]]
    colors = ["#9e9e9e" if lo <= 0 <= hi else ("#c0504d" if m > 0 else "#4f81bd") for _, m, lo, hi in rows]
    ax.barh(list(y), means, xerr=err, color=colors, ecolor="black", capsize=3)
    ax.set_yticks(list(y), [label for label, *_ in rows])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    rundir.write_atomic(path, buf.getvalue())
    return path


PLOTS = {"diffs": diff_plot, "percentiles": percentile_plot}


def write_all(r: RunResult, run_dir: Path) -> dict[str, Path]:
    """Writes every plot that has data as PNG; returns plot name -> path."""
    out = {}
    for name, build in PLOTS.items():
        fig = build(r)
        if fig is not None:
            out[name] = _png(fig, run_dir, name)
    return out


def svg(r: RunResult, name: str) -> str:
    """One plot as SVG text (for report.html); empty without data."""
    fig = PLOTS[name](r)
    return "" if fig is None else _svg(fig)
