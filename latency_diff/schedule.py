"""The schedule: which servers the next round measures, how many quads their next pair gets, when to stop.

Every server gets --min-pairs process pairs, one per round, in an order that rotates from round to
round. After that, a server gets another pair in the next round while its diff's interval is wider
than the precision target, it has had fewer than --max-pairs, and another pair (at the mean cost of
its pairs so far) still fits in its --budget. The quads per pair follow the measured variances
(paired.optimal_quads): pairs where the JVM-to-JVM spread dominates get fewer quads, so that the
time goes to more pairs.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from . import paired, stats
from .servers import Server
from .settings import MAX_QUADS, MIN_QUADS, Settings


@dataclass
class ServerState:
    server: Server
    quads: int
    #: The headline client's quad diffs of each measured pair (ns).
    pair_quads: list[list[float]] = field(default_factory=list)
    pair_seconds: list[float] = field(default_factory=list)
    quad_seconds: list[float] = field(default_factory=list)
    spent: float = 0.0
    failed: str | None = None

    @property
    def estimates(self) -> list[float]:
        return [paired.pair_estimate(q) for q in self.pair_quads]

    def interval(self) -> stats.Summary | None:
        return stats.summarize(self.estimates) if self.estimates else None

    def met(self, s: Settings) -> bool:
        iv = self.interval()
        return iv is not None and paired.target_met(iv, s.precision_floor * 1000, s.precision / 100)

    def wants_more(self, s: Settings) -> bool:
        n = len(self.pair_quads)
        if self.failed:
            return False
        if n < s.min_pairs:
            return True
        if n >= s.max_pairs or self.met(s) or not self.pair_seconds:
            return False
        return self.spent + statistics.fmean(self.pair_seconds) <= s.budget

    def record(self, quad_diffs: list[float], pair_s: float, measure_s: float, quads_run: int) -> None:
        """A measured pair: its quad diffs, its time, and the quads for the next one (Kalibera and Jones)."""
        self.pair_quads.append(quad_diffs)
        self.pair_seconds.append(pair_s)
        self.quad_seconds.append(measure_s / max(quads_run, 1))
        within = paired.within_variance(self.pair_quads)
        between = paired.between_variance(self.pair_quads, within)
        quad_s = statistics.fmean(self.quad_seconds)
        setup_s = max(statistics.fmean(self.pair_seconds) - quad_s * statistics.fmean(len(q) for q in self.pair_quads),
                      0.0)
        self.quads = paired.optimal_quads(within, between, setup_s, quad_s, MIN_QUADS, MAX_QUADS, self.quads)

    def status(self, s: Settings) -> str:
        iv = self.interval()
        if self.failed:
            return "failed"
        if iv is None or iv.half_width is None:
            return f"{len(self.pair_quads)} pair(s), no interval yet"
        goal = paired.target_ns(iv.mean, s.precision_floor * 1000, s.precision / 100)
        return (f"{iv.mean / 1000:.2f} ± {iv.half_width / 1000:.2f} us after {iv.n} pairs (target ±{goal / 1000:.2f}: "
                + ("met)" if iv.half_width <= goal else "not yet)"))


def next_round(states: list[ServerState], s: Settings, round_no: int) -> list[ServerState]:
    """The servers of round `round_no` (1-based), in an order rotated by one each round."""
    wanted = [st for st in states if st.wants_more(s)]
    if not wanted:
        return []
    k = (round_no - 1) % len(wanted)
    return wanted[k:] + wanted[:k]
