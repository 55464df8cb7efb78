"""The pairs a server still measuring is expected to take: its stopping rule (stopping.py) played forward.

Whether a server meets its target at its next look, goes on past its budget or stops out of reach depends on the
spread its next pairs show, and a spread from a few pairs is itself uncertain: five pairs put a true sd anywhere from
0.6 to 2.9 times their own (95%). A single projection at the sd seen so far is then near one outcome or the other and
misses the run's time left by the difference (docs/targets.md, the progress row). Here, SIMS continuations are drawn:
each takes a true sd from the one the pairs show (sd^2 x (n - 1) / chi-square(n - 1), the standard noninformative
posterior) and a true mean around theirs, draws the further pairs' ratios from a normal of those, and applies the
stopping rule after each pair as the schedule does: the target met (stopping.met's half-width, with its within-pair and
run bounds), the pairs needed out of reach while the server is within its budget (stopping.REACH, at the sd's
optimistic bound), or, past the budget, another pair or the pairs needed at the sd no longer fitting what it may spend
(stopping.decide). The expected pairs are the continuations' mean. A fixed seed keeps the estimate from one pair to the
next free of the draws' own noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from . import stopping
from .stats import CONFIDENCE, chi2_quantile, t_quantile

SIMS = 400
SEED = 20261127


def _half_factor(max_pairs: int) -> np.ndarray:
    """t(n - 1) / sqrt(n) at the interval's confidence, by n (infinite below 2 pairs)."""
    f = np.full(max_pairs + 2, np.inf)
    for n in range(2, max_pairs + 2):
        f[n] = t_quantile(0.5 + CONFIDENCE / 2, n - 1) / math.sqrt(n)
    return f


def _optimistic_factor(max_pairs: int) -> np.ndarray:
    """The sd's lower REACH_SD_LOW bound as a share of the sd, by pairs (stopping.pairs_needed's optimistic)."""
    g = np.ones(max_pairs + 2)
    for n in range(2, max_pairs + 2):
        g[n] = math.sqrt((n - 1) / chi2_quantile(1 - stopping.REACH_SD_LOW, n - 1))
    return g


def _needed(factor: np.ndarray, sd_ns: np.ndarray, goal_ns: np.ndarray, pairs: int, max_pairs: int) -> np.ndarray:
    """Per continuation, stopping.pairs_needed: the fewest pairs above `pairs` (at most max_pairs) whose half-width at
    sd_ns is within goal_ns."""
    ns = np.arange(max(pairs + 1, 2), max_pairs + 1)
    if ns.size == 0:
        return np.full(sd_ns.shape, max_pairs)
    fits = factor[ns][None, :] * sd_ns[:, None] <= goal_ns[:, None]
    return np.where(fits.any(axis=1), ns[np.argmax(fits, axis=1)], max_pairs)


def _stops(m: int, sd_ns: np.ndarray, goal_ns: np.ndarray, spent_s: float, *, cost_s: float, budget_s: float,
           limit_s: float, max_pairs: int, half: np.ndarray, optimistic: np.ndarray) -> np.ndarray:
    """Per continuation, whether stopping.decide stops the server after its m-th pair (at least --min-pairs, fewer than
    max_pairs), at the sd (its interval's, stop_sd) and target of that look, spent_s so far: its vectorized twin, which
    tests/test_outlook.py holds to it."""
    met = half[m] * sd_ns <= goal_ns
    if spent_s + cost_s > budget_s:
        need = _needed(half, sd_ns, goal_ns, m, max_pairs)
        return met | (spent_s + np.maximum(need - m, 1) * cost_s > limit_s)
    need = _needed(half, sd_ns * optimistic[m], goal_ns, m, max_pairs)
    return met | (spent_s + (need - m) * cost_s > stopping.REACH * budget_s)


def continuations(ratios: Sequence[float], *, floor_sd: float, ref_ns: float, abs_ns: float, rel: float,
                  spent_s: float, cost_s: float, budget_s: float, limit_s: float, min_pairs: int, max_pairs: int,
                  sims: int = SIMS, stream: int = 0) -> np.ndarray:
    """The pairs a server that has not stopped after `ratios` ends with (at least one more), in each of `sims`
    continuations (stream: which of the seed's independent streams draws them, one per server).

    floor_sd: the sd, in ratio units, that its interval never goes below but for its pairs' own (the within-pair and
    run bounds, stopping.interval); abs_ns, rel: the precision target; spent_s, cost_s: its time so far and per
    further pair; limit_s: what it may spend in all with what it may borrow (stopping.limit)."""
    r = np.asarray(ratios, dtype=float)
    n = r.size
    if n < 2 or n + 1 >= max_pairs:
        return np.full(sims, float(min(n + 1, max_pairs)))
    rng = np.random.default_rng((SEED, stream))
    sd = float(np.std(r, ddof=1))
    sigma = sd * np.sqrt((n - 1) / rng.chisquare(n - 1, sims))
    mu = float(np.mean(r)) + sigma / math.sqrt(n) * rng.standard_normal(sims)
    total, squares = np.full(sims, r.sum()), np.full(sims, float(np.sum(r * r)))
    half, optimistic = _half_factor(max_pairs), _optimistic_factor(max_pairs)
    ends = np.full(sims, max_pairs, dtype=float)
    going = np.ones(sims, dtype=bool)
    for m in range(n + 1, max_pairs):
        x = mu + sigma * rng.standard_normal(sims)
        total += x
        squares += x * x
        mean = total / m
        own = np.sqrt(np.maximum((squares - m * mean * mean) / (m - 1), 0.0))
        sd_ns = np.maximum(own, floor_sd) * ref_ns
        goal_ns = np.maximum(abs_ns, rel * np.abs(mean - 1) * ref_ns)
        if m < min_pairs:
            continue
        stop = _stops(m, sd_ns, goal_ns, spent_s + (m - n) * cost_s, cost_s=cost_s, budget_s=budget_s,
                      limit_s=limit_s, max_pairs=max_pairs, half=half, optimistic=optimistic)
        ends[going & stop] = m
        going &= ~stop
        if not going.any():
            break
    return ends
