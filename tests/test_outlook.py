"""The time-left outlook (latency_diff/outlook.py): the stopping rule played forward from a server's pairs so far.

On hand-made pairs, each of its stops; on the stopping simulation's runs (tests/test_stopping.py), the pairs it
expects a server to end with against those the simulated server ended with.
"""

from __future__ import annotations

import math
import random
import statistics

import numpy as np
import pytest
import stopping_sim as sim

from latency_diff import outlook, stopping

#: A diff of 14,000 ns at a reference of 10,000: a target of 700 ns, 0.07 in ratio.
KW = {"floor_sd": 0.0, "ref_ns": 10_000.0, "abs_ns": 500.0, "rel": 0.05, "cost_s": 10.0, "budget_s": 60.0,
      "min_pairs": 3, "max_pairs": 40}


def test_pairs_that_agree_meet_at_the_next_look():
    # sd 0.01: the target is met at 4 pairs unless the next pair strays far (t(3) x 0.01 / 2 = 0.016 < 0.07).
    ends = outlook.continuations([2.39, 2.40, 2.41], spent_s=30.0, limit_s=60.0, **KW)
    assert ends.shape == (outlook.SIMS,) and ends.min() >= 4
    assert np.mean(ends == 4) >= 0.95


def test_pairs_far_out_of_reach_stop_at_the_next_look():
    # sd 0.4: not even 40 pairs would meet 0.07; the next look finds it out of reach in nearly every continuation.
    ends = outlook.continuations([2.0, 2.4, 2.8], spent_s=30.0, limit_s=60.0, **KW)
    assert np.mean(ends == 4) >= 0.9


def test_a_server_stops_on_its_limit_and_borrows_only_where_it_may():
    # sd 0.06: 6 pairs would meet the target at that sd (test_paired), but the sd of 3 pairs is uncertain: some
    # continuations need more. 30 s spent, 10 s a pair: the budget of 60 pays for 3 more pairs, and a limit of 120
    # for 9 more.
    own = outlook.continuations([2.34, 2.40, 2.46], spent_s=30.0, limit_s=60.0, **KW)
    assert own.max() == 6
    borrowing = outlook.continuations([2.34, 2.40, 2.46], spent_s=30.0, limit_s=120.0, **KW)
    assert borrowing.max() > 6 and borrowing.max() <= 12
    assert np.mean(borrowing) > np.mean(own)


def test_no_stop_before_min_pairs():
    ends = outlook.continuations([2.39, 2.41], spent_s=20.0, limit_s=60.0, **KW)
    assert ends.min() >= 3


def test_the_same_pairs_give_the_same_outlook():
    a = outlook.continuations([2.34, 2.40, 2.46], spent_s=30.0, limit_s=120.0, **KW)
    b = outlook.continuations([2.34, 2.40, 2.46], spent_s=30.0, limit_s=120.0, **KW)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("family", ["normal", "t3", "mix"])
def test_the_expected_pairs_by_simulation(family):
    # The stopping simulation's runs with a budget of 5 pairs and one more to borrow: at each look of each server
    # that goes on from its second pair, the pairs the outlook expects it to end with, against those it ended with,
    # on average over the looks (the time left is a sum over servers: its error is their mean's).
    rng = random.Random({"normal": 21, "t3": 22, "mix": 23}[family])
    looks = []

    def look(s, spread, limit):
        floor = math.sqrt(stopping.within_variance(s["units"]) or 0.0)
        if spread is not None:
            floor = max(floor, spread * abs(statistics.fmean(s["pairs"])))
        n = len(s["pairs"])
        if n < 2:  # no spread yet: the schedule projects such a server from the others
            return
        ends = outlook.continuations(s["pairs"], floor_sd=floor, ref_ns=sim.REF_NS, abs_ns=sim.ABS_NS, rel=sim.REL,
                                     spent_s=float(n), cost_s=1.0, budget_s=5.0, limit_s=limit or 5.0,
                                     min_pairs=sim.MIN_PAIRS, max_pairs=sim.MAX_PAIRS, stream=len(looks))
        looks.append((s, n, float(np.mean(ends))))

    for _ in range(10):
        sim.simulate_run(rng, family, budget=5.0, borrow=1.0, look=look)
    further = [len(s["pairs"]) - n for s, n, _ in looks]
    expected = [e - n for _, n, e in looks]
    bias = statistics.fmean(further) - statistics.fmean(expected)
    print(f"{family}: {len(looks)} looks, further pairs {statistics.fmean(further):.2f}, "
          f"expected {statistics.fmean(expected):.2f}")
    assert len(looks) >= 400
    # Measured: 1.42 further pairs against 1.47 expected (normal), 1.39 against 1.44 (t3); the outlook draws normal
    # pairs, and a second mode that a server's pairs have not shown yet is missed: 2.60 against 2.04 (mix).
    assert abs(bias) <= (0.25 if family == "mix" else 0.1) * statistics.fmean(further)


def test_the_continuations_stop_where_the_schedule_would():
    # outlook._stops re-states stopping.decide for many continuations at once; on random looks (pairs, spread, time
    # spent, limit) it must stop exactly where stopping.decide, fed as the schedule feeds it, does.
    rng = random.Random(7)
    ref, abs_ns, rel, max_pairs, budget = 10_000.0, 500.0, 0.05, 40, 60.0
    half, optimistic = outlook._half_factor(max_pairs), outlook._optimistic_factor(max_pairs)
    stops = 0
    for _ in range(500):
        m = rng.randint(3, max_pairs - 1)
        centre, spread = rng.uniform(1.05, 4.0), rng.uniform(0.001, 0.3)
        ratios = [rng.gauss(centre, spread) for _ in range(m)]
        floor = rng.choice([0.0, rng.uniform(0.0, 0.1)])
        iv = stopping.interval(ratios, ref, within_var=floor ** 2)
        spent, cost = rng.uniform(0.0, 120.0), rng.uniform(1.0, 15.0)
        limit = budget + rng.choice([0.0, rng.uniform(0.0, budget)])
        goal = stopping.target_ns(iv.diff.mean, abs_ns, rel)
        expected = stopping.decide(
            pairs=m, min_pairs=3, max_pairs=max_pairs, target_met=stopping.met(iv, ref, abs_ns, rel), failed=False,
            spent_s=spent, next_pair_s=cost, budget_s=budget,
            pairs_needed=stopping.pairs_needed(iv.sd * ref, m, goal, max_pairs, optimistic=True), limit_s=limit,
            pairs_needed_at_sd=stopping.pairs_needed(iv.sd * ref, m, goal, max_pairs)) is not None
        got = outlook._stops(m, np.array([iv.sd * ref]), np.array([goal]), spent, cost_s=cost, budget_s=budget,
                             limit_s=limit, max_pairs=max_pairs, half=half, optimistic=optimistic)[0]
        assert got == expected, (m, ratios, floor, spent, cost, limit)
        stops += expected
    assert 50 <= stops <= 450  # both outcomes are exercised
