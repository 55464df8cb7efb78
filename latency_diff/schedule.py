"""The schedule: which servers the next round measures, how many segments their next pair gets, when to stop.

Every server gets --min-pairs process pairs, one per round, in an order that rotates from round to
round. After that, a server gets another pair in the next round while its diff's interval is wider
than the precision target, it has had fewer than --max-pairs, and another pair (at the mean cost of
its pairs so far) still fits in its --budget. Diffs are scaled to the run's reference baseline round
trip so far (paired.py), as the analysis will scale them. The segments per pair follow the measured
variances (paired.optimal_units): where the JVM-to-JVM spread dominates, a pair gets fewer segments,
so that the time goes to more pairs.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from . import paired, stats
from .servers import Server
from .settings import MAX_SEGMENTS, MIN_SEGMENTS, Settings


@dataclass
class ServerState:
    server: Server
    segments: int
    #: The headline client's units of each measured pair.
    pair_units: list[list[paired.Unit]] = field(default_factory=list)
    #: Each measured pair's time on the measured CPU, and the part of it spent measuring.
    pair_seconds: list[float] = field(default_factory=list)
    measure_seconds: list[float] = field(default_factory=list)
    #: Seconds of the measured CPU's time this server has used (its pairs, and its pairs that failed).
    spent: float = 0.0
    failed: str | None = None
    #: Processes started for it so far (a process prepared ahead may go unmeasured).
    processes: int = 0

    @property
    def pairs(self) -> int:
        return len(self.pair_units)

    def estimates(self, ref_ns: float) -> list[float]:
        return [paired.estimate(u).scaled_ns(ref_ns) for u in self.pair_units]

    def interval(self, ref_ns: float | None) -> stats.Summary | None:
        return stats.summarize(self.estimates(ref_ns)) if self.pair_units and ref_ns else None

    def met(self, settings: Settings, ref_ns: float | None) -> bool:
        iv = self.interval(ref_ns)
        return iv is not None and paired.target_met(iv, settings.precision_floor * 1000, settings.precision / 100)

    def wants_more(self, settings: Settings, ref_ns: float | None) -> bool:
        if self.failed:
            return False
        if self.pairs < settings.min_pairs:
            return True
        if self.pairs >= settings.max_pairs or self.met(settings, ref_ns) or not self.pair_seconds:
            return False
        return self.spent + statistics.fmean(self.pair_seconds) <= settings.budget

    def record(self, units: list[paired.Unit], pair_s: float, measure_s: float, ref_ns: float) -> None:
        """A measured pair: its units, its time, and the segments for the next one (Kalibera and Jones)."""
        self.pair_units.append(units)
        self.pair_seconds.append(pair_s)
        self.measure_seconds.append(measure_s)
        scaled = [paired.unit_scaled(u, ref_ns) for u in self.pair_units]
        within = paired.within_variance(scaled)
        between = paired.between_variance(scaled, within)
        unit_s = sum(self.measure_seconds) / max(sum(len(u) for u in self.pair_units), 1)
        setup_s = max(statistics.fmean(self.pair_seconds) - statistics.fmean(self.measure_seconds), 0.0)
        self.segments = paired.optimal_units(within, between, setup_s, unit_s, MIN_SEGMENTS, MAX_SEGMENTS,
                                             self.segments)

    def status(self, settings: Settings, ref_ns: float | None) -> str:
        iv = self.interval(ref_ns)
        if self.failed:
            return "failed"
        if iv is None or iv.half_width is None:
            return f"{self.pairs} pair(s), no interval yet"
        goal = paired.target_ns(iv.mean, settings.precision_floor * 1000, settings.precision / 100)
        return (f"{iv.mean / 1000:.2f} ± {iv.half_width / 1000:.2f} us after {iv.n} pairs (target ±{goal / 1000:.2f}: "
                + ("met)" if iv.half_width <= goal else "not yet)"))


@dataclass
class Schedule:
    states: list[ServerState]

    def reference_ns(self) -> float | None:
        """The reference baseline round trip of the pairs so far (the analysis takes it over all of them)."""
        bases = [paired.estimate(u).base_ns for st in self.states for u in st.pair_units]
        return paired.reference_ns(bases) if bases else None

    def next_round(self, settings: Settings, round_no: int) -> list[ServerState]:
        """The servers of round `round_no` (1-based), in an order rotated by one each round."""
        ref = self.reference_ns()
        wanted = [state for state in self.states if state.wants_more(settings, ref)]
        if not wanted:
            return []
        k = (round_no - 1) % len(wanted)
        return wanted[k:] + wanted[:k]
