"""The stopping rule (latency_diff/stopping.py): its parts on hand-worked numbers, and its coverage by simulation.

The simulation (tests/stopping_sim.py) runs the kit's own rule, look by look, on simulated runs of 37 servers, as the
driver's schedule does, with normal, heavy-tailed and two-mode pair values.
"""

from __future__ import annotations

import random
import statistics

import pytest
import stopping_sim as sim
from stopping_sim import ABS_NS, MAX_PAIRS, MIN_PAIRS, REF_NS, REL, SERVERS_PER_RUN

from latency_diff import stats, stopping
from latency_diff.prior import Prior


# -- the parts, on numbers worked out by hand --------------------------------------------------------------
def test_within_variance_is_robust_to_a_slow_segment():
    # Units 1.0, 1.1, 1.2, 1.3, 5.0: median 1.2, deviations 0.2 0.1 0 0.1 3.8 -> MAD 0.1;
    # (pi/2) x (1.4826 x 0.1)^2 / 5 = 1.5708 x 0.021981 / 5 = 0.0069057.
    assert stopping.within_variance([[1.0, 1.1, 1.2, 1.3, 5.0]]) == pytest.approx(0.0069057, rel=1e-4)
    assert stopping.within_variance([[1.0, 2.0]]) is None  # fewer than 3 units: no robust spread


def test_run_spread_is_the_median_relative_sd():
    # sd/mean: [1, 1.02, 1.04] -> 0.02/1.02 = 0.019608; [2, 2, 2] -> 0; [3, 3.3, 3.6] -> 0.3/3.3 = 0.090909;
    # a server with two pairs does not count. Median of (0.019608, 0, 0.090909) = 0.019608.
    spreads = [[1.0, 1.02, 1.04], [2.0, 2.0, 2.0], [3.0, 3.3, 3.6], [5.0, 9.0]]
    assert stopping.run_spread(spreads) == pytest.approx(0.019608, rel=1e-4)
    assert stopping.run_spread(spreads[:2]) is None  # fewer than 3 servers of 3 pairs


def test_interval_takes_the_largest_bound_and_the_diff_is_the_ratio_at_the_reference():
    # Ratios 2.0, 2.001, 2.002: mean 2.001, own sd 0.001. The run's bound 1% x 2.001 = 0.02001 wins over the
    # within bound sqrt(1e-6) = 0.001. t(0.975, 2) = 4.302653; half = 4.302653 x 0.02001 / sqrt(3) = 0.049707.
    iv = stopping.interval([2.0, 2.001, 2.002], 10_000.0, within_var=1e-6, run_rel_sd=0.01)
    assert iv.bound == "run"
    assert iv.own_sd == pytest.approx(0.001)
    assert iv.ratio.ci95_high - iv.ratio.mean == pytest.approx(0.049707, rel=1e-4)
    # Diff: (2.001 - 1) x 10,000 = 10,010 ns; its half-width is the ratio's times the reference: 497.07 ns, nothing
    # added for the host's speed.
    assert iv.diff.mean == pytest.approx(10_010.0)
    assert iv.diff.ci95_high - iv.diff.mean == pytest.approx(497.07, rel=1e-4)
    # Met: 497.07 ns against max(500, 5% x 10,010 = 500.5).
    assert stopping.met(iv, 10_000.0, ABS_NS, REL)
    own = stopping.interval([2.0, 2.001, 2.002], 10_000.0)
    assert own.bound == "pairs" and own.ratio.ci95_high - own.ratio.mean == pytest.approx(0.0024841, rel=1e-4)


def test_the_units_noise_is_a_floor_of_the_sd():
    # Within variance 0.0004 (sd 0.02) over the pairs' own 0.001: half = 4.302653 x 0.02 / sqrt(3) = 0.0496828.
    iv = stopping.interval([2.0, 2.001, 2.002], 10_000.0, within_var=0.0004)
    assert iv.bound == "within"
    assert iv.ratio.ci95_high - iv.ratio.mean == pytest.approx(0.0496828, rel=1e-5)
    assert not stopping.met(stopping.interval([2.0, 2.001, 2.002], 10_000.0, within_var=0.0011), 10_000.0, ABS_NS, REL)


def test_a_prior_pools_with_the_pairs_and_adds_the_spread_between_runs():
    # Prior: sigma 2% on 10 df, tau 0.5%. sigma x mean = 0.04002; pooled sd = sqrt((10 x 0.04002^2 + 2 x 0.001^2) / 12)
    # = 0.0365354 on 12 df; t(0.975, 12) = 2.178813; tau x mean = 0.010005;
    # half = 2.178813 x sqrt(0.0365354^2 / 3 + 0.010005^2) = 0.0508670 (scipy.stats.t, by hand).
    known = Prior(sigma=0.02, df=10, tau=0.005, runs=6, source="history")
    iv = stopping.interval([2.0, 2.001, 2.002], 10_000.0, within_var=1e-6, run_rel_sd=0.05, prior=known)
    assert iv.bound == "prior" and iv.df == 12  # the run's bound is for servers without a prior
    assert iv.sd == pytest.approx(0.0365354, rel=1e-5)
    assert iv.ratio.ci95_high - iv.ratio.mean == pytest.approx(0.0508670, rel=1e-5)
    assert iv.diff.ci95_high - iv.diff.mean == pytest.approx(508.670, rel=1e-5)
    assert not stopping.met(iv, 10_000.0, ABS_NS, REL)  # 508.7 ns against 500.5: three pairs that agree do not meet
    # With the fixed width, tau stays in: sd = sqrt(((0.05005 / t) ^ 2 - tau^2) x n) below the pooled one: not used.
    assert stopping.interval([2.0, 2.001, 2.002], 10_000.0, prior=known, target=(ABS_NS, REL)).bound == "prior"


def test_pairs_needed_counts_the_prior_and_the_spread_between_runs():
    # sd 0.1, goal 0.05: t(n - 1) x 0.1 / sqrt(n) <= 0.05 first at n = 18; with 10 prior df, t(n + 9): n = 17.
    assert stopping.pairs_needed(0.1, 3, 0.05, 40) == 18
    assert stopping.pairs_needed(0.1, 3, 0.05, 40, prior_df=10) == 17
    # tau 0.02: t x sqrt(0.01 / 40 + 0.0004) = 0.0515 > 0.05 even at 40 pairs: out of reach (max + 1).
    assert stopping.pairs_needed(0.1, 3, 0.05, 40, tau_sd=0.02) == 41


def test_target_is_five_percent_or_half_a_microsecond():
    assert stopping.target_ns(30_000.0, stopping.ABS_TARGET_NS, stopping.REL_TARGET) == 1500.0  # 5% of 30 us
    assert stopping.target_ns(-2_000.0, stopping.ABS_TARGET_NS, stopping.REL_TARGET) == 500.0  # the 0.5 us floor


def test_the_reported_interval_is_never_narrower_than_the_target_but_met_judges_the_measured_one():
    # Ratios 2.0, 2.001, 2.002 at 10,000 ns: own half 0.0024841 (24.8 ns) against a target of max(500, 500.5) ns.
    # The fixed width: sd = 0.05005 x sqrt(3) / 4.302653 = 0.020148, half = 0.05005 in ratio, 500.5 ns.
    iv = stopping.interval([2.0, 2.001, 2.002], 10_000.0, target=(ABS_NS, REL))
    assert iv.bound == "target"
    assert iv.sd == pytest.approx(0.020148, rel=1e-4)
    assert iv.ratio.ci95_high - iv.ratio.mean == pytest.approx(0.05005, rel=1e-6)
    assert iv.diff.ci95_high - iv.diff.mean == pytest.approx(500.5, rel=1e-6)
    assert iv.stop_half == pytest.approx(0.0024841, rel=1e-4)
    assert stopping.met(iv, 10_000.0, ABS_NS, REL)
    # Wider than the target on its own: the target does not narrow it, and it is not met.
    wide = stopping.interval([2.0, 2.1, 2.2], 10_000.0, target=(ABS_NS, REL))
    assert wide.bound == "pairs" and wide.sd == pytest.approx(0.1)
    assert not stopping.met(wide, 10_000.0, ABS_NS, REL)


def test_one_pair_has_no_interval():
    iv = stopping.interval([1.5], 10_000.0, run_rel_sd=0.01)
    assert iv.ratio.half_width is None and iv.diff.mean == pytest.approx(5000.0)
    assert not stopping.met(iv, 10_000.0, ABS_NS, REL)


@pytest.mark.parametrize(("kw", "reason"), [
    ({"pairs": 2, "target_met": True}, None),  # under min pairs, met or not
    ({"pairs": 3, "target_met": True}, stopping.MET),
    ({"pairs": 3, "target_met": False}, None),
    ({"pairs": 3, "target_met": False, "spent_s": 70.0}, stopping.BUDGET),  # 70 + 10 > 75
    ({"pairs": 3, "target_met": False, "next_pair_s": None}, stopping.BUDGET),
    # Out of reach: 30 s spent, 10 s a pair; 9 pairs needed cost 30 + 6 x 10 = 90 < 1.5 x 75 = 112.5, 11 pairs 110,
    # 12 pairs 120 > 112.5. Whether another pair fits the budget is asked first.
    ({"pairs": 3, "target_met": False, "pairs_needed": 9}, None),
    ({"pairs": 3, "target_met": False, "pairs_needed": 11}, None),
    ({"pairs": 3, "target_met": False, "pairs_needed": 12}, stopping.OUT_OF_REACH),
    ({"pairs": 3, "target_met": False, "spent_s": 70.0, "pairs_needed": 12}, stopping.BUDGET),
    ({"pairs": 3, "target_met": True, "pairs_needed": 3}, stopping.MET),
    ({"pairs": 2, "target_met": False, "pairs_needed": 40}, None),  # under min pairs, out of reach or not
    # Under min pairs, a pair that would take it past 1.5 budgets is not started: 105 + 10 > 112.5.
    ({"pairs": 2, "target_met": False, "spent_s": 105.0}, stopping.BUDGET),
    ({"pairs": 1, "target_met": False, "spent_s": 100.0, "next_pair_s": 13.0}, stopping.BUDGET),
    ({"pairs": 1, "target_met": False, "spent_s": 100.0, "next_pair_s": 12.5}, None),  # 112.5: not over
    ({"pairs": 1, "target_met": False, "budget_s": 0.0}, None),  # no budget (--quick): its --min-pairs all
    # More pairs than --max-pairs allows: out of reach whatever they cost.
    ({"pairs": 3, "target_met": False, "pairs_needed": 41, "next_pair_s": 0.1}, stopping.OUT_OF_REACH),
    # Borrowing: past its budget (70 + 10 > 75), a limit of 100 s (25 borrowed) lets it go on while the pairs it needs
    # at its sd fit: 5 needed cost 70 + 2 x 10 = 90, 6 cost 100, 7 cost 110 > 100; and not past the limit itself.
    ({"pairs": 3, "target_met": False, "spent_s": 70.0, "limit_s": 100.0, "pairs_needed_at_sd": 5}, None),
    ({"pairs": 3, "target_met": False, "spent_s": 70.0, "limit_s": 100.0, "pairs_needed_at_sd": 6}, None),
    ({"pairs": 3, "target_met": False, "spent_s": 70.0, "limit_s": 100.0, "pairs_needed_at_sd": 7}, stopping.BUDGET),
    ({"pairs": 3, "target_met": False, "spent_s": 70.0, "limit_s": 100.0}, stopping.BUDGET),  # needs not known
    ({"pairs": 3, "target_met": False, "spent_s": 95.0, "limit_s": 100.0, "pairs_needed_at_sd": 4}, stopping.BUDGET),
    # Within its budget, out of reach is judged as without borrowing: 12 optimistic pairs cost 120 > 112.5.
    ({"pairs": 3, "target_met": False, "pairs_needed": 12, "limit_s": 150.0}, stopping.OUT_OF_REACH),
    ({"pairs": 40, "target_met": False}, stopping.MAX_PAIRS),
    ({"pairs": 40, "target_met": False, "min_pairs": 50}, stopping.MAX_PAIRS),  # --max-pairs caps the first pairs
    ({"pairs": 1, "target_met": False, "failed": True}, stopping.FAILED),
])
def test_decide(kw, reason):
    args = {"min_pairs": 3, "max_pairs": 40, "failed": False, "spent_s": 30.0, "next_pair_s": 10.0,
            "budget_s": 75.0, **kw}
    assert stopping.decide(**args) == reason


def test_limit_is_the_budget_and_what_may_be_borrowed():
    kw = {"budget_s": 75.0, "borrow": 1.0}
    assert stopping.limit(spent_s=10.0, unspent_s=0.0, borrowed_s=0.0, **kw) == 75.0  # nothing left unspent
    assert stopping.limit(spent_s=70.0, unspent_s=30.0, borrowed_s=0.0, **kw) == 105.0
    assert stopping.limit(spent_s=70.0, unspent_s=300.0, borrowed_s=0.0, **kw) == 150.0  # one budget at most
    # 20 s borrowed so far, 15 of them by this server (90 s spent): 15 + (30 - 20) = 25 more than its budget.
    assert stopping.limit(spent_s=90.0, unspent_s=30.0, borrowed_s=20.0, **kw) == 100.0
    # Others borrowed it all: it keeps what it has borrowed itself, no more.
    assert stopping.limit(spent_s=90.0, unspent_s=30.0, borrowed_s=45.0, **kw) == 90.0
    assert stopping.limit(spent_s=70.0, unspent_s=300.0, borrowed_s=0.0, budget_s=75.0, borrow=0.0) == 75.0


@pytest.mark.slow
# -- coverage by simulation (tests/stopping_sim.py) ------------------------------------------------------
@pytest.mark.parametrize("family", ["normal", "t3", "mix"])
def test_coverage_by_simulation(family):
    # 60 runs of 37 servers: 2,220 simulated servers per family.
    overall, at_min, n, mean_pairs = sim.coverage(family, runs=60, seed={"normal": 1, "t3": 2, "mix": 3}[family])
    print(f"{family}: {n} servers, coverage {overall:.3f}, at {MIN_PAIRS} pairs {at_min:.3f}, "
          f"mean pairs {mean_pairs:.2f}")
    assert n >= 2000
    assert overall >= 0.93
    assert at_min >= 0.90


@pytest.mark.slow
@pytest.mark.parametrize("family", ["normal", "t3", "mix"])
def test_coverage_with_the_out_of_reach_rule(family):
    # A budget of 5 pairs: a server stops out of reach when even its optimistic sd needs 8 pairs (3 + 5 > 1.5 x 5)
    # at 3 or 4 pairs, on its budget after 5. Stopping for a wide interval does not narrow it: the coverage holds
    # (1.000, 0.999 and 0.992; at 3 pairs 1.000, 1.000 and 0.996).
    overall, at_min, n, mean_pairs = sim.coverage(family, runs=30, seed={"normal": 4, "t3": 5, "mix": 6}[family],
                                               budget=5.0)
    reach = sim.coverage.out_of_reach
    print(f"{family}: {n} servers, {reach} out of reach, coverage {overall:.3f}, at {MIN_PAIRS} pairs {at_min:.3f}, "
          f"mean pairs {mean_pairs:.2f}")
    assert reach >= 5  # the rule fires (12, 12 and 540 of 1,110 servers), or the test shows nothing
    assert overall >= 0.93
    assert at_min >= 0.90


@pytest.mark.slow
@pytest.mark.parametrize("family", ["normal", "t3", "mix"])
def test_coverage_with_borrowing(family):
    # The same budget of 5 pairs, and up to one budget more borrowed from what the run's stopped servers left unspent:
    # servers that go on past their budget stop on the target as every other, so the coverage holds.
    overall, at_min, n, mean_pairs = sim.coverage(family, runs=30, seed={"normal": 4, "t3": 5, "mix": 6}[family],
                                               budget=5.0, borrow=1.0)
    borrowed = sim.coverage.borrowed
    print(f"{family}: {n} servers, {borrowed} borrowed, coverage {overall:.3f}, at {MIN_PAIRS} pairs {at_min:.3f}, "
          f"mean pairs {mean_pairs:.2f}")
    assert borrowed >= 5  # borrowing happens, or the test shows nothing
    assert overall >= 0.93
    assert at_min >= 0.90


# -- differences between rows (the ≈ marks, Welch) by simulation -------------------------------------------
# Two rows of a run are told apart by a Welch interval over their pairs, each row's sd bounded as its own interval
# (stats.significantly_different with each row's Interval.sd, as evaluate.py does for neighbouring rows). The
# simulation runs couples of servers through the same rule: a couple shares its family, spread and units' noise,
# and the second's true ratio lies `apart` targets (the first's) above the first's.
COUPLES_PER_RUN = SERVERS_PER_RUN // 2


def _couple(rng: random.Random, family: str, apart: float) -> tuple[dict, dict]:
    a = sim.server(rng, family)
    b = dict(a, units=[], pairs=[], stop=None)
    b["ratio"] = a["ratio"] + apart * a["target"]
    b["truth"] = a["truth"] + apart * a["target"]
    return a, b


def _simulate_couples(rng: random.Random, family: str, apart: float) -> list[tuple[dict, dict]]:
    couples = [_couple(rng, family, apart) for _ in range(COUPLES_PER_RUN)]
    servers = [s for c in couples for s in c]
    while todo := [s for s in servers if s["stop"] is None]:
        for s in todo:
            sim.pair(rng, s)
        spread = stopping.run_spread([s["pairs"] for s in servers])
        for s in todo:
            iv = stopping.interval(s["pairs"], REF_NS, within_var=stopping.within_variance(s["units"]),
                                   run_rel_sd=spread, target=(ABS_NS, REL))
            s["interval"] = iv
            s["stop"] = stopping.decide(pairs=len(s["pairs"]), min_pairs=MIN_PAIRS, max_pairs=MAX_PAIRS,
                                        target_met=stopping.met(iv, REF_NS, ABS_NS, REL), failed=False,
                                        spent_s=0.0, next_pair_s=1.0, budget_s=1e9)
    return couples


def _between_rows(family: str, apart: float, runs: int, seed: int) -> tuple[float, float, int]:
    """(share of couples called apart, share whose Welch interval holds the true difference, couples)."""
    rng = random.Random(seed)
    called, covered = [], []
    for _ in range(runs):
        for a, b in _simulate_couples(rng, family, apart):
            d = stats.welch_difference(b["pairs"], a["pairs"], b["interval"].sd, a["interval"].sd)
            called.append(not d.ci95_low <= 0 <= d.ci95_high)
            covered.append(d.ci95_low <= b["truth"] - a["truth"] <= d.ci95_high)
    return statistics.fmean(called), statistics.fmean(covered), len(called)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["normal", "t3", "mix"])
def test_rows_with_the_same_mean_are_seldom_called_apart(family):
    # 40 runs of 18 couples: 720 couples a family, both rows of each with the same true ratio.
    false_apart, covered, n = _between_rows(family, 0.0, runs=40, seed={"normal": 11, "t3": 12, "mix": 13}[family])
    print(f"{family}: {n} couples of equal rows, called apart {false_apart:.3f}, difference covered {covered:.3f}")
    assert false_apart <= 0.05
    assert covered >= 0.95


@pytest.mark.slow
def test_rows_two_targets_apart_are_mostly_told_apart():
    # The width the fixed-width interval costs: with both rows at the target's width after 3 pairs, a Welch interval
    # is about 0.9 targets wide (hand-worked: t(4) x sqrt(2) / t(2) = 2.776 x 1.414 / 4.303 = 0.91), so rows one
    # target apart are told apart only some of the time (66.5% with these seeds) and rows two targets apart nearly
    # always (98.6%).
    rates = {apart: _between_rows("normal", apart, runs=40, seed=20 + int(apart))[0] for apart in (1.0, 2.0)}
    covered = _between_rows("normal", 2.0, runs=40, seed=30)[1]
    print(f"normal: called apart at 1 target {rates[1.0]:.3f}, at 2 targets {rates[2.0]:.3f}; "
          f"covered at 2 {covered:.3f}")
    assert 0.3 <= rates[1.0] <= 0.9
    assert rates[2.0] >= 0.9
    assert covered >= 0.95


# -- coverage by simulation on the committed runs' real servers (stopping_sim.real_coverage) ----------------------

@pytest.fixture(scope="module")
def real():
    return sim.real_coverage(runs=100, seed=21)


def test_met_rows_of_the_real_servers_hold_their_truth(real):
    """Measured (29 November, 100 runs of each of the fixture's servers per state of its host; AMD and Intel groups
    of one CPU model counted together; a history of at most 8 df): met rows hold the truth 99.8% for the narrow
    servers and 98.0% for the wide, every wide server at least 94% (Spring MVC on AMD). With tau taken out of the
    prior (and its weight cut to 2 df), the wide fell to 85%, Rapidoid on AMD to 27% and Ktor CIO on Intel to 26%
    (tried on 28 November, before the states were told apart): the test sees it. The issue's targets:
    93% of all met rows, 90% of the wide ones, every wide server 75%."""
    wide, narrow = real["wide"], real["narrow"]
    assert wide["met"] >= 1000 and narrow["met"] >= 5000
    assert wide["held"] / wide["met"] >= 0.90
    assert (wide["held"] + narrow["held"]) / (wide["met"] + narrow["met"]) >= 0.93
    for key, c in real.items():
        if isinstance(key, tuple) and c["band"] == "wide" and c["met"] >= 20:
            assert c["held"] / c["met"] >= 0.75, key


def test_the_widest_real_servers_stop_out_of_reach_rather_than_meet(real):
    """Rapidoid and Ktor CIO on the AMD host, whose run means move by about 5%: no budget meets their target, and the
    rule says so instead of meeting on the luck of a few pairs."""
    for name in ("rapidoid", "ktor-cio"):
        c = real["AMD", name]
        assert c["rows"] >= 100 and c["met"] <= 0.05 * c["rows"], name
