"""The schedule: which servers the next round measures, how many segments their next pair gets, when to stop.

Every server gets --min-pairs process pairs (a server the kit has no prior for, a first stage of
stopping.FIRST_STAGE), one per round, in an order that rotates from round to
round. After each pair the stopping rule (stopping.py, its one home) looks at the server's interval:
it stops when the interval is within the precision target, at --max-pairs, when another pair (at its
expected cost, ServerState.cost) no longer fits in its --budget and what it may borrow (--borrow),
when the pairs its interval needs at its spread so far are out of reach (stopping.REACH budgets), or
when a pair failed; the reason is
kept and recorded in run.json. In a gated head-to-head run (--compare A B --fail-if-slower M), B aims at the
gate's decision instead of the target: it stops as soon as its interval of B - A (the one the analysis reports,
never narrower than the target) clears M on either side, out of reach when the pairs to get there would cost
too much, or on its budget (undecided). Diffs are scaled to the run's reference baseline round trip so far, as
the analysis will scale them. The segments per pair follow the measured variances
(paired.optimal_units): where the JVM-to-JVM spread dominates, a pair gets fewer segments, so that the
time goes to more pairs.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from .. import gate, paired, stopping
from ..prior import Prior
from ..servers import Server
from ..settings import MAX_SEGMENTS, MIN_SEGMENTS, Settings

#: A pair measures at least long enough to fill this share of a process's preparation time (the recent median):
#: the measured CPU would wait for the next process meanwhile anyway.
FILL_SHARE = 0.8


@dataclass
class ServerState:
    server: Server
    segments: int
    #: The headline client's units of each measured pair.
    pair_units: list[list[paired.Unit]] = field(default_factory=list)
    #: Each measured pair's estimate from those units (kept: the schedule looks at them after every pair).
    pair_estimates: list[paired.PairEstimate] = field(default_factory=list)
    #: Each measured pair's time on the measured CPU without its counting and profiling windows (a server's first
    #: pairs only: they are not its precision budget), and the part of it spent measuring.
    pair_seconds: list[float] = field(default_factory=list)
    measure_seconds: list[float] = field(default_factory=list)
    #: The first measured pair's time with its windows: what a server not measured yet is expected to cost first.
    first_pair_seconds: float | None = None
    first_prepare_seconds: float | None = None
    #: Seconds of the measured CPU's time this server has used (its pairs, and its pairs that failed), windows aside.
    spent: float = 0.0
    failed: str | None = None
    #: Processes started for it so far (a process prepared ahead may go unmeasured).
    processes: int = 0
    #: Why it gets no more pairs (stopping.REASONS), once decided.
    stopped: str | None = None

    def cost(self) -> float:
        """The measured CPU's expected time for a further pair, windows aside: the median of its pairs after the first;
        after the first alone, at least its process's preparation time. The first pair's preparation overlapped the
        pairs and windows before it; a further pair mostly waits for its process to be prepared (in the committed runs
        of every server, a later pair's time is 0.96-0.98 of its process's preparation, the median)."""
        if len(self.pair_seconds) > 1:
            return statistics.median(self.pair_seconds[1:])
        return max(self.pair_seconds[0], self.first_prepare_seconds or 0.0)

    @property
    def pairs(self) -> int:
        return len(self.pair_units)

    def ratios(self) -> list[float]:
        return [e.ratio for e in self.pair_estimates]

    def within_variance(self) -> float | None:
        return stopping.within_variance([[u.ratio for u in units] for units in self.pair_units])

    def record(self, units: list[paired.Unit], pair_s: float, measure_s: float, ref_ns: float,
               windows_s: float = 0.0, prepare_s: float | None = None) -> None:
        """A measured pair: its units, its time (windows_s of it counting and profiling), its server process's
        preparation time, and the segments for the next one (Kalibera and Jones)."""
        self.pair_units.append(units)
        self.pair_estimates.append(paired.estimate(units))
        if self.first_pair_seconds is None:
            self.first_pair_seconds = pair_s
            self.first_prepare_seconds = prepare_s
        self.pair_seconds.append(pair_s - windows_s)
        self.measure_seconds.append(measure_s)
        scaled = [paired.unit_scaled(u, ref_ns) for u in self.pair_units]
        within = paired.within_variance(scaled)
        between = paired.between_variance(scaled, within)
        unit_s = sum(self.measure_seconds) / max(sum(len(u) for u in self.pair_units), 1)
        setup_s = max(self.cost() - statistics.fmean(self.measure_seconds), 0.0)
        self.segments = paired.optimal_units(within, between, setup_s, unit_s, MIN_SEGMENTS, MAX_SEGMENTS,
                                             self.segments)


@dataclass
class Schedule:
    states: list[ServerState]
    #: What is known of each server's spread before the run (prior.py), by name; none for a server not in it.
    priors: dict[str, Prior] = field(default_factory=dict)

    def reference_ns(self) -> float | None:
        """The reference baseline round trip of the pairs so far (the analysis takes it over all of them)."""
        bases = [e.base_ns for st in self.states for e in st.pair_estimates]
        return paired.reference_ns(bases) if bases else None

    def run_spread(self) -> float | None:
        return stopping.run_spread([st.ratios() for st in self.states])

    def interval(self, st: ServerState) -> stopping.Interval | None:
        ref = self.reference_ns()
        if not st.pair_units or ref is None:
            return None
        return stopping.interval(st.ratios(), ref, within_var=st.within_variance(), run_rel_sd=self.run_spread(),
                                 prior=self.priors.get(st.server.name))

    def min_pairs(self, st: ServerState, settings: Settings) -> int:
        """The pairs a server gets before a look may stop it: --min-pairs, and a first stage of stopping.FIRST_STAGE
        (at most --max-pairs) for a server the kit has not measured (no prior, or the generic one)."""
        known = self.priors.get(st.server.name)
        if known is not None and known.source != "generic":
            return settings.min_pairs
        return min(max(settings.min_pairs, stopping.FIRST_STAGE), settings.max_pairs)

    def met(self, st: ServerState, settings: Settings) -> bool:
        iv, ref = self.interval(st), self.reference_ns()
        return iv is not None and stopping.met(iv, ref, settings.precision_floor * 1000, settings.precision / 100)

    def gated(self, st: ServerState, settings: Settings) -> bool:
        """Whether the server is B of a gated head-to-head run, stopped by the gate's decision."""
        return settings.fail_if_slower is not None and bool(settings.compare) and st.server.name == settings.compare[1]

    def margin_ns(self, settings: Settings) -> float | None:
        """The gate's margin in ns; for a margin in percent, of A's diff (A - dummy: the dummy is measured against
        A), None while the dummy has no pair."""
        margin, ref = settings.fail_if_slower, self.reference_ns()
        if margin is None or ref is None:
            return None
        if margin.unit == "us":
            return margin.ns(0.0)
        dummy = next((x for x in self.states if x.server.name == "dummy" and x.pair_estimates), None)
        return None if dummy is None else margin.ns((1 - statistics.fmean(dummy.ratios())) * ref)

    def verdict(self, st: ServerState, settings: Settings) -> int:
        """The gate's verdict on B's pairs so far (gate.PASS, FAIL or UNDECIDED), by the interval of B - A the analysis
        will report: in microseconds at the reference round trip, never narrower than the precision target."""
        ref, m = self.reference_ns(), self.margin_ns(settings)
        if ref is None or m is None or st.pairs < 2:
            return gate.UNDECIDED
        iv = stopping.interval(st.ratios(), ref, within_var=st.within_variance(), run_rel_sd=self.run_spread(),
                               prior=self.priors.get(st.server.name),
                               target=(settings.precision_floor * 1000, settings.precision / 100))
        return gate.verdict(iv.diff.ci95_low, iv.diff.ci95_high, m)

    def decide(self, st: ServerState, settings: Settings) -> str | None:
        """Why the server gets no more pairs, or None while it should get another; a decision is kept."""
        if not st.stopped:
            st.stopped = self._decision(st, settings)
        return st.stopped

    def _decision(self, st: ServerState, settings: Settings) -> str | None:
        gated = self.gated(st, settings)
        done = self.verdict(st, settings) != gate.UNDECIDED if gated else self.met(st, settings)
        why = stopping.decide(
            pairs=st.pairs, min_pairs=self.min_pairs(st, settings), max_pairs=settings.max_pairs,
            target_met=done, failed=st.failed is not None, spent_s=st.spent,
            next_pair_s=st.cost() if st.pair_seconds else None, budget_s=settings.budget,
            pairs_needed=self._pairs_needed(st, settings, optimistic=True), limit_s=self.limit(st, settings),
            pairs_needed_at_sd=self._pairs_needed(st, settings))
        return stopping.DECIDED if gated and why == stopping.MET else why

    def limit(self, st: ServerState, settings: Settings) -> float:
        """The seconds the server may spend in all: its --budget, and what it may borrow (--borrow budgets at most)
        from the time the stopped servers left unspent (stopping.limit)."""
        unspent = sum(max(settings.budget - x.spent, 0.0) for x in self.states if x.stopped)
        borrowed = sum(max(x.spent - settings.budget, 0.0) for x in self.states)
        return stopping.limit(budget_s=settings.budget, spent_s=st.spent, borrow=settings.borrow, unspent_s=unspent,
                              borrowed_s=borrowed)

    def wants_more(self, st: ServerState, settings: Settings) -> bool:
        return self.decide(st, settings) is None

    def stops(self) -> dict[str, dict]:
        """Per server, why it stopped and after how many pairs (None: it had not stopped)."""
        return {st.server.name: {"reason": st.stopped, "pairs": st.pairs} for st in self.states}

    def status(self, st: ServerState, settings: Settings) -> str:
        iv, ref = self.interval(st), self.reference_ns()
        if st.failed:
            return "failed"
        if iv is None or iv.ratio.half_width is None or ref is None:
            return f"{st.pairs} pair(s), no interval yet"
        if self.gated(st, settings):
            m = self.margin_ns(settings)
            word = gate.WORDS[self.verdict(st, settings)]
            return (f"B - A {iv.diff.mean / 1000:+.2f} us after {iv.ratio.n} pairs (gate: margin "
                    + ("unknown yet" if m is None else f"{m / 1000:.2f} us") + f", {word.lower()} so far)")
        goal = stopping.target_ns(iv.diff.mean, settings.precision_floor * 1000, settings.precision / 100)
        half = iv.ratio.half_width * ref
        return (f"{iv.diff.mean / 1000:.2f} ± {half / 1000:.2f} us after {iv.ratio.n} pairs "
                f"(target ±{goal / 1000:.2f}: " + ("met)" if half <= goal else "not yet)"))

    def segments(self, st: ServerState, prepare_times: Sequence[float] | None) -> int:
        """Segments for a server's next pair: its Kalibera-Jones number, or more while the next process is still being
        prepared anyway (FILL_SHARE of the recent preparation times; None: no preparing lane), within the bounds."""
        if not prepare_times or not st.measure_seconds:
            return st.segments
        unit_s = sum(st.measure_seconds) / sum(len(u) for u in st.pair_units)
        free_s = FILL_SHARE * statistics.median(prepare_times)
        return max(st.segments, min(MAX_SEGMENTS, int(free_s / unit_s)))

    def seconds_left(self, settings: Settings) -> tuple[float, float] | None:
        """The measured CPU's time still to come (None before the first pair): (a projection, an upper bound).

        The projection: each server that goes on takes the pairs its interval needs at its sd so far (at least its
        first pairs; a server with no interval yet, one more than the first pairs), as far as its limit affords, at its
        cost per pair (costs()). The bound holds by construction: no server spends past its limit (its budget and what
        it may still borrow) by more than one pair, and one that has not started costs its first pairs at most."""
        costs = self.costs()
        if costs is None:
            return None
        ahead = bound = 0.0
        for st in self.states:
            if st.failed or st.stopped or self._decision(st, settings):
                continue
            cost = costs[st.server.name]
            first = self.min_pairs(st, settings)
            can = max(self.limit(st, settings) - st.spent, 0.0)
            need = self._pairs_needed(st, settings) or first + (1 if st.pairs >= first else 0)
            ahead += min(max(need, first, st.pairs + 1) - st.pairs, can // cost + 1) * cost
            bound += max(can + cost, (first - st.pairs) * cost)
        return ahead, max(bound, ahead)

    def costs(self) -> dict[str, float] | None:
        """Per server, the measured CPU's expected time for its next pair (None before the first pair of the run):
        ServerState.cost, or, before its first pair, the median first pair of the servers measured so far, windows
        included."""
        measured = [st for st in self.states if st.pair_seconds]
        if not measured:
            return None
        typical = statistics.median(st.first_pair_seconds or st.pair_seconds[0] for st in measured)
        return {st.server.name: st.cost() if st.pair_seconds else typical for st in self.states}

    def _pairs_needed(self, st: ServerState, settings: Settings, optimistic: bool = False) -> float | None:
        """The fewest pairs whose interval would meet the target if the sd stayed what it is now: its pairs so far if it
        meets it now, else at least one more (a server that has not stopped gets another pair); None before
        --min-pairs, where the rule does not look. optimistic: as the out-of-reach rule judges it
        (stopping.pairs_needed), so that a few pairs that spread by chance do not make a server look out of reach."""
        iv, ref = self.interval(st), self.reference_ns()
        first = self.min_pairs(st, settings)
        if iv is None or ref is None or iv.stop_sd is None or st.pairs < max(2, first):
            return None
        target = stopping.target_ns(iv.diff.mean, settings.precision_floor * 1000, settings.precision / 100)
        if self.gated(st, settings):
            # The half-width that clears the margin. While the margin is within the fixed width of the mean, no
            # number of pairs clears it unless the mean moves: not judged (the budget stops it).
            m = self.margin_ns(settings)
            if self.verdict(st, settings) != gate.UNDECIDED:
                return st.pairs
            if m is None or abs(iv.diff.mean - m) <= target:
                return None
            goal = abs(iv.diff.mean - m)
        elif self.met(st, settings):
            return st.pairs
        else:
            goal = target
        prior = self.priors.get(st.server.name)
        return stopping.pairs_needed(iv.stop_sd * ref, st.pairs, goal, settings.max_pairs, optimistic,
                                     tau_sd=iv.tau_sd * ref, prior_df=prior.df if prior else 0)

    def next_round(self, settings: Settings, round_no: int) -> list[ServerState]:
        """The servers of round `round_no` (1-based), in an order rotated by one each round."""
        wanted = [state for state in self.states if self.wants_more(state, settings)]
        if not wanted:
            return []
        k = (round_no - 1) % len(wanted)
        return wanted[k:] + wanted[:k]
