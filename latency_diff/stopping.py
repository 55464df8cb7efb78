"""The stopping rule and the interval it stops on: one home for both, used by the driver's schedule while a run
goes and by the analysis afterwards.

A server's process pairs (fresh JVMs on both sides) each give a ratio, server / dummy round trip (paired.py). The
estimand is the server's mean ratio over fresh JVMs on this kind of host, as its other runs would find it. Its
interval is Student's t over pairs with two parts of variance:

- **between pairs**: the pairs' own variance, combined with what is known of the server before the run
  (prior.py: sigma, from its earlier runs on this kind of host, or the shipped prior) as a conjugate variance
  prior: s^2 = (nu0 x (sigma x mean)^2 + (n - 1) x s_own^2) / (nu0 + n - 1) on nu0 + n - 1 degrees of freedom
  (the scaled inverse chi-square prior of a normal variance: Gelman et al., "Bayesian Data Analysis", 3rd ed.,
  section 3.3). Three pairs that landed in one mode of a server known to spread cannot narrow it. The sd is never
  taken below the units' noise (the within-pair bound: a pair's ratio is the median of its units, so it carries
  at least (pi/2) x s_u^2 / k for k units of robust spread s_u, 1.4826 x their median absolute deviation; Huber,
  "Robust Statistics", 1981). A server with no prior at all (new to the kit) is bounded instead by the run's
  median relative spread over its servers and gets at least FIRST_STAGE pairs.
- **between runs**: tau x mean, the server's run-to-run spread beyond its pairs (prior.py), which no number of
  pairs in one run narrows: the half-width is t x sqrt(s^2 / n + (tau x mean)^2).

A server stops at the first look (after each of its pairs, from --min-pairs on) at which that half-width, in
microseconds at the run's reference round trip, is within the precision target; or when its budget cannot pay for
another pair; or when the pairs it needs are out of reach: at its spread so far, they would cost more than REACH
times its budget, or no number of pairs reaches the target because its mean moves between runs by more (tau); or
at --max-pairs, or when a pair fails. Why it stopped is recorded.

The interval it reports is never narrower than the target: a fixed-width interval as in Chow and Robbins'
sequential rule ("On the asymptotic theory of fixed-width sequential confidence intervals for the mean", 1965),
whose coverage holds as the target narrows, not at a handful of pairs. Stein's two-stage interval ("A two-sample
test for a linear hypothesis whose power is independent of the variance", 1945) holds exactly, but only when the
number of pairs comes from the first stage alone; a rule that looks after every pair, as this one does, has no such
guarantee, which is why the sd is tied to the prior: with nu0 degrees of freedom from the server's history a look
cannot stop on a few pairs that agree by luck. The coverage this keeps is checked by replaying the committed runs'
pairs (tests/test_replay_coverage.py) and by simulation (tests/test_stopping.py).

The microsecond diff is (ratio - 1) x the run's reference round trip, and its interval is the ratio's times that
reference: one estimand, so a met row's microsecond interval is within its target. How the host's speed moved (the
dummy's round trip between pairs) is stated once for the run, not added to every row.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .prior import Prior
from .stats import CONFIDENCE, Summary, chi2_quantile, t_quantile

#: The standard error of a median of n normal values is about sqrt(pi / 2) times the mean's.
MEDIAN_VARIANCE = math.pi / 2
#: Scales a median absolute deviation to a normal standard deviation.
MAD_TO_SD = 1.4826
#: A run's bound needs this many servers with at least MIN_PAIRS_FOR_SPREAD pairs.
MIN_SERVERS_FOR_BOUND = 3
MIN_PAIRS_FOR_SPREAD = 3
Z = 1.959964

#: The precision target by default: the 95% half-width at most max(ABS_TARGET_NS, REL_TARGET x |diff|).
ABS_TARGET_NS = 500.0
REL_TARGET = 0.05

#: Why a server stopped getting pairs; DECIDED: B of a gated head-to-head run (--fail-if-slower), whose interval
#: cleared the gate's margin on one side.
MET, BUDGET, OUT_OF_REACH, MAX_PAIRS, FAILED, DECIDED = \
    "met", "budget", "out of reach", "max pairs", "failed", "decided"
REASONS = (MET, BUDGET, OUT_OF_REACH, MAX_PAIRS, FAILED, DECIDED)
#: A server whose projected pairs would cost more than this many budgets stops at once: replayed on the six committed
#: runs of every server of 25-27 November, no server that met its target would have stopped for it (at 1.0, ten servers
#: of the six runs would have; at 4/3, two), and the runs' pairs would have taken 0.7 to 3.4 min less (docs/method.md).
REACH = 1.5
#: ... with the pairs needed judged at the lower 10% confidence bound of the server's sd (chi-square on its pairs - 1
#: degrees of freedom: 0.66 times the sd at 3 pairs, 0.76 at 8), so that three pairs that spread by chance do not stop
#: it (at the sd itself, a run of 27 November stopped Jetty VT, Javalin, Rapidoid and Akka after 3 or 4 pairs; each
#: had met in the run before).
REACH_SD_LOW = 0.10
#: A server the kit knows nothing of (no history, not in the shipped prior) gets at least this many pairs before a
#: look may stop it: its first stage, as in Stein's two-stage rule, from which its spread is first judged.
FIRST_STAGE = 5


def pair_ratio(unit_ratios: Sequence[float]) -> float:
    return statistics.median(unit_ratios)


def within_variance(pairs: Sequence[Sequence[float]]) -> float | None:
    """The variance a pair's ratio has from its own units' noise (the mean over pairs with 3 or more units)."""
    parts = []
    for units in pairs:
        if len(units) >= 3:
            med = statistics.median(units)
            mad = statistics.median(abs(u - med) for u in units)
            parts.append(MEDIAN_VARIANCE * (MAD_TO_SD * mad) ** 2 / len(units))
    return statistics.fmean(parts) if parts else None


def run_spread(servers: Sequence[Sequence[float]]) -> float | None:
    """The run's relative between-pair spread: the median over servers (each its pairs' ratios) of
    sd / mean; None with fewer than MIN_SERVERS_FOR_BOUND servers of MIN_PAIRS_FOR_SPREAD pairs."""
    rel = [statistics.stdev(r) / abs(statistics.fmean(r)) for r in servers
           if len(r) >= MIN_PAIRS_FOR_SPREAD and statistics.fmean(r) != 0]
    return statistics.median(rel) if len(rel) >= MIN_SERVERS_FOR_BOUND else None


@dataclass(frozen=True)
class Interval:
    """A server's ratio and microsecond diff with their intervals, and what bounded the spread."""
    ratio: Summary
    diff: Summary
    #: The pairs' own sd of the ratio, and the sd between pairs used (never below the bounds).
    own_sd: float | None
    sd: float | None
    #: "pairs" (their own spread), "prior" (what the server's history says), "within" (the units' noise), "run" (the
    #: run's spread, for a server with no prior) or "target" (the fixed width).
    bound: str | None
    #: The sd the stopping rule looks at: the largest of the bounds other than the target's.
    stop_sd: float | None = None
    #: The half-width, in ratio units, that the stopping rule compares with the target (before the fixed width).
    stop_half: float | None = None
    #: Degrees of freedom of the t quantile, and the between-run sd (ratio units) in the half-width.
    df: int | None = None
    tau_sd: float = 0.0

    @property
    def half_width_ratio(self) -> float | None:
        return self.ratio.half_width


def t_of(df: int) -> float:
    """The t quantile of the intervals (CONFIDENCE, two-sided) on df degrees of freedom."""
    return t_quantile(0.5 + CONFIDENCE / 2, df)


def interval(ratios: Sequence[float], ref_ns: float, *, within_var: float | None = None,
             run_rel_sd: float | None = None, prior: Prior | None = None,
             target: tuple[float, float] | None = None) -> Interval:
    """The interval of a server's mean ratio over its pairs, and of its diff at ref_ns (see the module doc). prior: what
    is known of the server's spread (prior.py); without it the run's relative spread run_rel_sd bounds the sd. target:
    the precision target (abs_ns, rel); with it the interval is never narrower than the target."""
    if not ratios:
        raise ValueError("no pair to take an interval from")
    n, mean = len(ratios), statistics.fmean(ratios)
    med = statistics.median(ratios)
    diff_mean, diff_med = (mean - 1) * ref_ns, (med - 1) * ref_ns
    if n < 2:
        return Interval(Summary(mean, med, None, None, None, n), Summary(diff_mean, diff_med, None, None, None, n),
                        None, None, None)
    own = statistics.stdev(ratios)
    df, tau_sd = n - 1, 0.0
    if prior is not None:
        known = prior.sigma * abs(mean)
        pooled = math.sqrt((prior.df * known ** 2 + (n - 1) * own ** 2) / (prior.df + n - 1))
        candidates = [(pooled, "prior" if known > own else "pairs")]
        df, tau_sd = prior.df + n - 1, prior.tau * abs(mean)
    else:
        candidates = [(own, "pairs")]
        if run_rel_sd is not None:
            candidates.append((run_rel_sd * abs(mean), "run"))
    if within_var is not None:
        candidates.append((math.sqrt(within_var), "within"))
    stop_sd, bound = max(candidates, key=lambda c: c[0])
    tq = t_of(df)
    stop_half = tq * math.sqrt(stop_sd ** 2 / n + tau_sd ** 2)
    half, sd = stop_half, stop_sd
    if target is not None:
        goal = target_ns(diff_mean, *target) / ref_ns
        if goal > half:
            half, bound = goal, "target"
            sd = math.sqrt(max((goal / tq) ** 2 - tau_sd ** 2, 0.0) * n)
    ratio = Summary(mean, med, sd, mean - half, mean + half, n)
    diff = Summary(diff_mean, diff_med, sd * ref_ns, diff_mean - half * ref_ns, diff_mean + half * ref_ns, n)
    return Interval(ratio, diff, own, sd, bound, stop_sd, stop_half, df, tau_sd)


def target_ns(diff_ns: float, abs_ns: float, rel: float) -> float:
    """The half-width the diff must reach: max(abs_ns, rel * |diff|)."""
    return max(abs_ns, rel * abs(diff_ns))


def met(iv: Interval, ref_ns: float, abs_ns: float, rel: float) -> bool:
    """Whether the ratio's interval, in microseconds at the reference, is within the target, judged before the fixed
    width."""
    half = iv.stop_half
    return half is not None and half * ref_ns <= target_ns(iv.diff.mean, abs_ns, rel)


def pairs_needed(sd: float, pairs: int, goal: float, max_pairs: int, optimistic: bool = False, *,
                 tau_sd: float = 0.0, prior_df: int = 0) -> int:
    """The fewest pairs, more than `pairs`, whose half-width t x sqrt(sd^2 / n + tau_sd^2) is within goal (sd, tau_sd
    and goal in one unit; t on prior_df + n - 1 degrees of freedom), at most max_pairs: what a server needs if its sd
    stays what it is; max_pairs + 1 where no number up to max_pairs reaches it. optimistic: at the sd's lower
    REACH_SD_LOW confidence bound (chi-square on its degrees of freedom), as the out-of-reach rule judges it."""
    if optimistic:
        df = prior_df + pairs - 1
        sd *= math.sqrt(df / chi2_quantile(1 - REACH_SD_LOW, df))
    for n in range(max(pairs + 1, 2), max_pairs + 1):
        if t_of(prior_df + n - 1) * math.sqrt(sd ** 2 / n + tau_sd ** 2) <= goal:
            return n
    return max_pairs + 1


def limit(*, budget_s: float, spent_s: float, borrow: float, unspent_s: float, borrowed_s: float) -> float:
    """The seconds a server may spend in all: its budget, and while it is past it, what it may borrow: at most borrow
    budgets, from the time the stopped servers left unspent (unspent_s: the sum of their budget minus what they spent,
    where positive) less what the run's servers have borrowed so far (borrowed_s: the sum of their time past their
    budget, this server's included)."""
    own = max(spent_s - budget_s, 0.0)
    return budget_s + min(borrow * budget_s, own + max(unspent_s - borrowed_s, 0.0))


def decide(*, pairs: int, min_pairs: int, max_pairs: int, target_met: bool, failed: bool, spent_s: float,
           next_pair_s: float | None, budget_s: float, pairs_needed: float | None = None,
           limit_s: float | None = None, pairs_needed_at_sd: float | None = None) -> str | None:
    """Why a server gets no more pairs (MET, BUDGET, OUT_OF_REACH, MAX_PAIRS, FAILED), or None while it should get
    another. pairs_needed: the pairs its interval would need at its optimistic spread so far (None: not known), as
    the out-of-reach rule judges it within the budget. Past its budget, a server goes on only while another pair fits
    its limit (limit_s: its budget and what it may borrow; None: its budget alone) and so do the pairs its interval
    needs at its spread itself (pairs_needed_at_sd): the time it borrows goes to servers likely to meet, not to those
    the optimistic projection has not yet given up on."""
    if failed:
        return FAILED
    if pairs >= max_pairs:
        return MAX_PAIRS
    if pairs < min_pairs:  # its first pairs, while they cost at most REACH budgets (a profile without a budget, such
        # as --quick's 0, takes them all): a dear server stops on its budget
        return BUDGET if budget_s > 0 and next_pair_s is not None and spent_s + next_pair_s > REACH * budget_s \
            else None
    if target_met:
        return MET
    if next_pair_s is None:
        return BUDGET
    if spent_s + next_pair_s > budget_s:
        if limit_s is None or pairs_needed_at_sd is None or \
                spent_s + max(pairs_needed_at_sd - pairs, 1) * next_pair_s > limit_s:
            return BUDGET
        return None
    if pairs_needed is not None and (pairs_needed > max_pairs or
                                     spent_s + (pairs_needed - pairs) * next_pair_s > REACH * budget_s):
        return OUT_OF_REACH
    return None
