"""Round-trip histograms of the lean client: merge them, read percentiles.

The lean client (native/lean.c, native/histogram.h) records every measured round trip in a
log-linear histogram and writes its non-empty buckets as [lo, hi, count] with inclusive bounds in
nanoseconds: values below 256 ns have a bucket each, above that every power-of-two range is split
into 256 equal buckets, so a bucket is at most 1/256 (0.4%) of its values wide. This module only
reads those buckets; the bucket layout itself is defined once, in native/histogram.h.

A percentile is reported like HdrHistogram does: the highest value of the bucket that holds the
sample of that rank (rank = ceil(p/100 * count), at least 1), so it is never below the true value
and at most one bucket width above it. The 100th percentile is the exact maximum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: The percentiles every report shows.
PERCENTILES = (50.0, 90.0, 99.0, 99.9)


class HistogramError(ValueError):
    """Buckets that do not form a histogram (overlapping, unsorted, negative)."""


@dataclass(frozen=True)
class Histogram:
    #: Non-empty buckets, ascending: (lowest value, highest value, count), inclusive, in ns.
    buckets: tuple[tuple[int, int, int], ...]
    #: The exact largest value recorded (the top bucket's upper bound if unknown).
    max_ns: int

    @property
    def count(self) -> int:
        return sum(c for _, _, c in self.buckets)

    @staticmethod
    def from_buckets(buckets: list, max_ns: int | None = None) -> Histogram:
        """Checks and wraps the client's bucket list; raises HistogramError on anything malformed."""
        clean: list[tuple[int, int, int]] = []
        for b in buckets:
            if not (isinstance(b, list | tuple) and len(b) == 3 and all(isinstance(x, int) for x in b)):
                raise HistogramError(f"bucket {b!r} is not [lo, hi, count] of integers")
            lo, hi, count = b
            if lo < 0 or hi < lo or count < 1:
                raise HistogramError(f"bucket {b!r}: need 0 <= lo <= hi and count >= 1")
            if clean and lo <= clean[-1][1]:
                raise HistogramError(f"bucket {b!r} overlaps or precedes the one before it")
            clean.append((lo, hi, count))
        top = clean[-1][1] if clean else 0
        if max_ns is not None and clean and not clean[-1][0] <= max_ns <= top:
            raise HistogramError(f"max {max_ns} is not in the highest bucket {list(clean[-1])}")
        return Histogram(tuple(clean), top if max_ns is None else max_ns)

    def percentile(self, p: float) -> int:
        """The value at percentile p (0 < p <= 100); see the module comment for the definition."""
        if not 0 < p <= 100:
            raise ValueError(f"percentile {p} is not in (0, 100]")
        total = self.count
        if total == 0:
            raise ValueError("empty histogram")
        if p == 100:
            return self.max_ns
        rank = max(1, math.ceil(p / 100 * total))
        seen = 0
        for _, hi, count in self.buckets:
            seen += count
            if seen >= rank:
                return min(hi, self.max_ns)
        raise AssertionError("unreachable: rank <= total")

    def percentiles(self, ps: tuple[float, ...] = PERCENTILES) -> dict[str, int]:
        """{"p50": ..., "p99.9": ..., "max": ...} in ns."""
        out = {label(p): self.percentile(p) for p in ps}
        out["max"] = self.max_ns
        return out


def label(p: float) -> str:
    return f"p{p:g}"


def merge(histograms: list[Histogram]) -> Histogram:
    """One histogram of all values of several (bucket layouts are the same, so counts add up)."""
    counts: dict[tuple[int, int], int] = {}
    for h in histograms:
        for lo, hi, c in h.buckets:
            counts[(lo, hi)] = counts.get((lo, hi), 0) + c
    buckets = [(lo, hi, c) for (lo, hi), c in sorted(counts.items())]
    return Histogram.from_buckets(buckets, max((h.max_ns for h in histograms), default=0) if histograms else None)
