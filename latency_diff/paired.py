"""Statistics of paired measurement: blocks, quads, process pairs, and when to stop.

The driver measures a server S against the baseline dummy D in *process pairs*: a fresh D and a
fresh S, running side by side on the same CPU(s). Within a pair the client alternates between them
in short *blocks* (one connection each), four at a time in ABBA order (a *quad*: D S S D, then
S D D S, ...), so that any linear drift of the machine over a quad cancels exactly.

Three levels, each with its own estimator:
- block: a robust statistic of one block's round trips. For the lean client, the trimmed mean of
  its histogram (TRIM of the values cut at each end): one stall, or a burst of context switches
  shorter than TRIM of the block, cannot move it. For ab, which reports only a mean, the block's
  mean (1e9 / requests per second).
- quad: the server's two blocks minus the baseline's two, halved: d = (S1 + S2 - D1 - D2) / 2.
- process pair: the median of its quads' d (robust to a quad that a long stall hit anyway).
Process pairs are independent (fresh JVMs for both), so the diff and its 95% interval are the mean
and the Student-t interval of the pairs' estimates (stats.summarize): JVM-to-JVM variation, the baseline's included,
is in every interval.

Where to spend the time (Kalibera and Jones, "Rigorous Benchmarking in Reasonable Time", ISMM
2013, section 4): with a within-pair variance S_w^2 of one quad's d, a between-pair variance
component T^2, a cost c_p for starting and warming a pair and c_q for one quad, the number of
quads per pair that minimizes the interval for a given time is sqrt(c_p * S_w^2 / (c_q * T^2)).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from .histogram import Histogram
from .stats import Summary

#: Share of a lean block's round trips cut at each end before averaging.
TRIM = 0.01
#: Precision target: the 95% half-width at most max(ABS_TARGET_NS, REL_TARGET * |diff|).
ABS_TARGET_NS = 500.0
REL_TARGET = 0.05
#: The standard error of a median of n normal values is about sqrt(pi / 2) times the mean's.
MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2)
#: A block order per quad: False = baseline first (D S S D), True = server first (S D D S).
QUAD_SLOTS = {False: ("base", "server", "server", "base"), True: ("server", "base", "base", "server")}


def quad_order(quad: int) -> tuple[str, str, str, str]:
    """Which process each of the four blocks of quad number `quad` (0-based) goes to: ABBA, then BAAB, ..."""
    return QUAD_SLOTS[quad % 2 == 1]


def trimmed_mean(h: Histogram, trim: float = TRIM) -> float:
    """Mean of the values left after cutting floor(trim * n) values at each end, from the histogram.

    A value counts as its bucket's midpoint (a bucket is at most 0.4% wide, histogram.py); a bucket
    that straddles a cut contributes only the values inside it.
    """
    n = h.count
    if n == 0:
        raise ValueError("empty histogram")
    cut = math.floor(trim * n)
    lo_rank, hi_rank = cut, n - cut  # keep the values of rank lo_rank+1 .. hi_rank (1-based)
    total = 0.0
    seen = 0
    for lo, hi, count in h.buckets:
        first, last = seen + 1, seen + count
        seen = last
        kept = min(last, hi_rank) - max(first, lo_rank + 1) + 1
        if kept > 0:
            total += kept * (lo + hi) / 2
    return total / (hi_rank - lo_rank)


def quad_diff(slots: Sequence[str], values: Sequence[float]) -> float:
    """(the server's two blocks - the baseline's two) / 2 for one quad; slots say which block is which."""
    if sorted(slots) != ["base", "base", "server", "server"] or len(values) != 4:
        raise ValueError(f"a quad needs two base and two server blocks, got {list(slots)}")
    return sum(v if s == "server" else -v for s, v in zip(slots, values, strict=True)) / 2


def target_ns(diff_ns: float, abs_ns: float = ABS_TARGET_NS, rel: float = REL_TARGET) -> float:
    """The half-width the diff must reach: max(abs_ns, rel * |diff|)."""
    return max(abs_ns, rel * abs(diff_ns))


def target_met(iv: Summary, abs_ns: float = ABS_TARGET_NS, rel: float = REL_TARGET) -> bool:
    return bool(iv.half_width is not None and iv.half_width <= target_ns(iv.mean, abs_ns, rel))


def pair_estimate(quad_diffs: Sequence[float]) -> float:
    """A process pair's diff: the median of its quads' diffs."""
    if not quad_diffs:
        raise ValueError("a pair without quads")
    return statistics.median(quad_diffs)


def within_variance(pairs: Sequence[Sequence[float]]) -> float | None:
    """Pooled variance of one quad's diff around its pair's mean (pairs with >= 2 quads)."""
    ss = sum(sum((d - statistics.fmean(q)) ** 2 for d in q) for q in pairs if len(q) >= 2)
    dof = sum(len(q) - 1 for q in pairs if len(q) >= 2)
    return ss / dof if dof else None


def between_variance(pairs: Sequence[Sequence[float]], within: float | None) -> float | None:
    """The part of the pairs' estimates' variance that the quads within a pair do not explain (>= 0)."""
    if len(pairs) < 2 or within is None:
        return None
    estimates = [pair_estimate(q) for q in pairs]
    mean_quads = statistics.fmean(len(q) for q in pairs)
    return max(statistics.variance(estimates) - MEDIAN_EFFICIENCY ** 2 * within / mean_quads, 0.0)


def optimal_quads(within: float | None, between: float | None, pair_cost_s: float, quad_cost_s: float,
                  lo: int, hi: int, current: int) -> int:
    """Quads per pair that narrow the interval most per second (Kalibera and Jones 2013), within [lo, hi].

    Keeps `current` until both variance components are known. Between-pair variance of 0 means more
    quads per pair always pay: hi.
    """
    if within is None or between is None or quad_cost_s <= 0:
        return current
    if between == 0:
        return hi
    n = math.sqrt(pair_cost_s * MEDIAN_EFFICIENCY ** 2 * within / (quad_cost_s * between))
    return max(lo, min(hi, round(n)))
