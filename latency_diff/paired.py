"""Statistics of paired measurement: units, process pairs, the baseline scaling, and where to spend the time.

The driver measures a server S against the baseline dummy D in *process pairs*: a fresh S beside a
D on the same CPU(s). Within a pair the smallest comparison is a *unit*:
- a segment of the interleaved lean client, which holds a connection to each process and alternates
  between them in runs of R requests in ABBA order (A B B A, then B A A B), so that the machine's
  drift lands on both processes alike within a few milliseconds: S's and D's round trips of the
  same stretch of time, each summarized robustly;
- or an ABBA quad of single blocks (ab, which cannot interleave; and the runs of the earlier layout):
  D S S D or S D D S, each block summarized robustly; S = the mean of the two server blocks, D of
  the two baseline blocks, so a linear drift over the quad cancels exactly.

A block's or a side's robust round trip is the mean after cutting TRIM of the values at each end
(lean, from its histogram): one stall, or a burst of context switches shorter than TRIM of them,
cannot move it. ab reports only a mean.

A shared VM runs faster or slower for tens of seconds at a time, and that multiplies the server's
work as well as the dummy's: the difference S - D cancels what adds to both, not what multiplies
them. So each unit also gives the ratio S / D, and a pair's *scaled* diff is (median ratio - 1) x
D_ref, the diff at a reference baseline round trip D_ref: the median over the run's pairs of their
baseline round trips. The unscaled diff (the median of S - D over the units) is kept beside it.

Process pairs are independent (fresh JVMs on both sides), so a server's diff and its 95% interval
are the mean and the Student-t interval of its pairs' scaled diffs (stats.summarize).

Where to spend the time (Kalibera and Jones, "Rigorous Benchmarking in Reasonable Time", ISMM
2013, section 4): with a within-pair variance S_w^2 of one unit's diff, a between-pair variance
component T^2, a cost c_p for starting and warming a pair and c_u for one unit, the number of
units per pair that minimizes the interval for a given time is sqrt(c_p * S_w^2 / (c_u * T^2)).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .histogram import Histogram

#: Share of a lean block's (or segment side's) round trips cut at each end before averaging.
TRIM = 0.01
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


@dataclass(frozen=True)
class Unit:
    """The smallest paired comparison: the baseline's and the server's round trips over the same stretch of time."""
    #: Robust round trips (trimmed mean; ab: its mean), in ns.
    base_ns: float
    server_ns: float
    #: The study's plain figure (elapsed time, or the untrimmed sum, over requests), in ns.
    base_plain_ns: float
    server_plain_ns: float

    @property
    def diff_ns(self) -> float:
        return self.server_ns - self.base_ns

    @property
    def ratio(self) -> float:
        return self.server_ns / self.base_ns

    @property
    def plain_diff_ns(self) -> float:
        return self.server_plain_ns - self.base_plain_ns


def quad_unit(slots: Sequence[str], values: Sequence[float], plains: Sequence[float]) -> Unit:
    """One ABBA quad of blocks: the mean of each process's two blocks; slots say which block is which."""
    if sorted(slots) != ["base", "base", "server", "server"] or len(values) != 4 or len(plains) != 4:
        raise ValueError(f"a quad needs two base and two server blocks, got {list(slots)}")

    def mean(xs: Sequence[float], who: str) -> float:
        return sum(x for s, x in zip(slots, xs, strict=True) if s == who) / 2
    return Unit(mean(values, "base"), mean(values, "server"), mean(plains, "base"), mean(plains, "server"))


@dataclass(frozen=True)
class PairEstimate:
    """One process pair's figures, from its units."""
    #: Unscaled: the median of the units' S - D, in ns.
    diff_ns: float
    #: The median of the units' S / D.
    ratio: float
    #: The pair's baseline round trip: the mean of its units' D, in ns (what the scaling divides by).
    base_ns: float
    server_ns: float
    #: The study's plain figures: the median of the units' plain S - D, and the means of the plain round trips.
    plain_diff_ns: float
    base_plain_ns: float
    server_plain_ns: float
    units: int

    def scaled_ns(self, ref_ns: float) -> float:
        """The pair's diff at the reference baseline round trip: (ratio - 1) x ref."""
        return scaled(self.ratio, ref_ns)


def scaled(ratio: float, ref_ns: float) -> float:
    return (ratio - 1.0) * ref_ns


def estimate(units: Sequence[Unit]) -> PairEstimate:
    if not units:
        raise ValueError("a pair without units")
    return PairEstimate(
        diff_ns=statistics.median(u.diff_ns for u in units), ratio=statistics.median(u.ratio for u in units),
        base_ns=statistics.fmean(u.base_ns for u in units), server_ns=statistics.fmean(u.server_ns for u in units),
        plain_diff_ns=statistics.median(u.plain_diff_ns for u in units),
        base_plain_ns=statistics.fmean(u.base_plain_ns for u in units),
        server_plain_ns=statistics.fmean(u.server_plain_ns for u in units), units=len(units))


def reference_ns(base_rtts: Sequence[float]) -> float:
    """The run's reference baseline round trip: the median of its pairs' baseline round trips."""
    if not base_rtts:
        raise ValueError("no pair to take a reference round trip from")
    return statistics.median(base_rtts)


def unit_scaled(units: Sequence[Unit], ref_ns: float) -> list[float]:
    """Each unit's diff at the reference round trip: (S / D - 1) x ref."""
    return [scaled(u.ratio, ref_ns) for u in units]


def within_variance(pairs: Sequence[Sequence[float]]) -> float | None:
    """Pooled variance of one unit's value around its pair's mean (pairs with >= 2 units)."""
    ss = sum(sum((d - statistics.fmean(q)) ** 2 for d in q) for q in pairs if len(q) >= 2)
    dof = sum(len(q) - 1 for q in pairs if len(q) >= 2)
    return ss / dof if dof else None


def between_variance(pairs: Sequence[Sequence[float]], within: float | None) -> float | None:
    """The part of the pairs' (median) estimates' variance that the units within a pair do not explain (>= 0)."""
    if len(pairs) < 2 or within is None:
        return None
    estimates = [statistics.median(q) for q in pairs]
    mean_units = statistics.fmean(len(q) for q in pairs)
    return max(statistics.variance(estimates) - MEDIAN_EFFICIENCY ** 2 * within / mean_units, 0.0)


def optimal_units(within: float | None, between: float | None, pair_cost_s: float, unit_cost_s: float,
                  lo: int, hi: int, current: int) -> int:
    """Units per pair that narrow the interval most per second (Kalibera and Jones 2013), within [lo, hi].

    Keeps `current` until both variance components are known. Between-pair variance of 0 means more
    units per pair always pay: hi.
    """
    if within is None or between is None or unit_cost_s <= 0:
        return current
    if between == 0:
        return hi
    n = math.sqrt(pair_cost_s * MEDIAN_EFFICIENCY ** 2 * within / (unit_cost_s * between))
    return max(lo, min(hi, round(n)))
