"""Paired measurement on known inputs: block estimator, quads, pair estimates, variance split, stopping.

Every expected value is worked out by hand in the comment next to it.
"""

import math
from pathlib import Path

import pytest

from latency_diff import gate, paired, stopping
from latency_diff.histogram import Histogram
from latency_diff.measure import schedule
from latency_diff.prior import Prior
from latency_diff.servers import Server
from latency_diff.settings import PROFILES


def hist(*buckets):
    return Histogram.from_buckets([list(b) for b in buckets])


def test_trimmed_mean_cuts_one_value_at_each_end():
    # 10 values: 100, 200 x5, 1000 x4. 1% of 10 rounds down to 0, so at 10% one value goes at each end:
    # ranks 2..9 are 200 x5 and 1000 x3 -> (1000 + 3000) / 8 = 500.
    h = hist((100, 100, 1), (200, 200, 5), (1000, 1000, 4))
    assert paired.trimmed_mean(h, 0.10) == 500.0
    # Nothing cut: (100 + 1000 + 4000) / 10 = 510.
    assert paired.trimmed_mean(h, 0.0) == 510.0


def test_trimmed_mean_ignores_a_stall_that_moves_the_plain_mean():
    # 200 round trips of 20 us and one stall of 50 ms. The plain mean is (200 * 20,000 + 50,000,000) / 201
    # = 268,656.7 ns; with 1% cut (2 values at each end) the stall is gone: 20,000 exactly.
    h = hist((20000, 20000, 200), (50_000_000, 50_000_000, 1))
    assert paired.trimmed_mean(h, 0.0) == pytest.approx(268656.716, abs=0.001)
    assert paired.trimmed_mean(h) == 20000.0


def test_trimmed_mean_takes_a_bucket_midpoint():
    # A bucket [300, 301] counts its values as 300.5.
    assert paired.trimmed_mean(hist((300, 301, 2)), 0.0) == 300.5


def test_quads_alternate_abba_and_baab():
    assert paired.quad_order(0) == ("base", "server", "server", "base")
    assert paired.quad_order(1) == ("server", "base", "base", "server")
    assert paired.quad_order(2) == ("base", "server", "server", "base")


def test_a_quad_cancels_linear_drift():
    # The dummy takes 10 us and the server 15, and the machine slows by 1 us a block (t = 0, 1, 2, 3):
    # D S S D measures 10, 16, 17, 13: base (10 + 13) / 2 = 11.5, server (16 + 17) / 2 = 16.5, diff 5, the truth.
    u = paired.quad_unit(("base", "server", "server", "base"), (10, 16, 17, 13), (10, 16, 17, 13))
    assert (u.base_ns, u.server_ns, u.diff_ns) == (11.5, 16.5, 5.0)
    # S D D S with the same drift: 15, 11, 12, 18 -> (15 + 18 - 11 - 12) / 2 = 5.
    assert paired.quad_unit(("server", "base", "base", "server"), (15, 11, 12, 18), (0, 0, 0, 0)).diff_ns == 5.0
    with pytest.raises(ValueError, match="two base and two server"):
        paired.quad_unit(("base", "base", "base", "server"), (1, 2, 3, 4), (1, 2, 3, 4))


def test_a_pair_estimate_takes_medians_of_its_units():
    units = [paired.Unit(10_000, 15_000, 10_000, 15_000), paired.Unit(10_000, 14_000, 10_000, 14_000),
             paired.Unit(20_000, 40_000, 20_000, 90_000)]
    e = paired.estimate(units)
    # Diffs 5,000, 4,000, 20,000 -> median 5,000 (one unit a stall hit does not move it); ratios 1.5, 1.4, 2.0 ->
    # 1.5; the baseline round trip is the mean of the units' (10,000 + 10,000 + 20,000) / 3.
    assert (e.diff_ns, e.ratio, e.units) == (5000.0, 1.5, 3)
    assert e.base_ns == pytest.approx(40_000 / 3)
    assert e.plain_diff_ns == 5000.0  # median of 5,000, 4,000, 70,000
    # At a reference round trip of 12,000: (1.5 - 1) * 12,000 = 6,000.
    assert e.scaled_ns(12_000) == 6000.0
    assert paired.reference_ns([30_000, 10_000, 20_000, 40_000]) == 25_000.0
    assert paired.unit_scaled(units, 10_000) == pytest.approx([5000.0, 4000.0, 10_000.0])


def test_within_and_between_variance():
    # Pair 1: units 1, 3 (mean 2, squares 1 + 1 = 2, 1 dof); pair 2: 2, 4, 6 (mean 4, squares 4 + 0 + 4 = 8,
    # 2 dof): pooled 10 / 3.
    assert paired.within_variance([[1.0, 3.0], [2.0, 4.0, 6.0]]) == pytest.approx(10 / 3)
    assert paired.within_variance([[1.0], [2.0]]) is None
    # Pairs [1, 3] and [5, 7]: within (2 + 2) / 2 = 2; estimates (medians) 2 and 6, variance 8; a median of
    # 2 units has variance (pi / 2) * 2 / 2 = pi / 2, so the between-pair part is 8 - pi / 2 = 6.4292.
    assert paired.between_variance([[1.0, 3.0], [5.0, 7.0]], 2.0) == pytest.approx(8 - math.pi / 2)
    # Pairs that agree: no between-pair part left (never negative).
    assert paired.between_variance([[1.0, 3.0], [1.0, 3.0]], 2.0) == 0.0


def test_optimal_units_kalibera_jones():
    # sqrt(c_p * (pi / 2) * S_w^2 / (c_u * T^2)) = sqrt(20 * 1.5708 * 4 / (1 * 1)) = sqrt(125.66) = 11.2 -> 11.
    assert paired.optimal_units(4.0, 1.0, 20.0, 1.0, 2, 16, 6) == 11
    # Big between-pair variance: as few units as allowed, so the time goes to more pairs.
    assert paired.optimal_units(4.0, 1000.0, 20.0, 1.0, 2, 16, 6) == 2
    assert paired.optimal_units(4.0, 0.0, 20.0, 1.0, 2, 16, 6) == 16
    assert paired.optimal_units(None, 1.0, 20.0, 1.0, 2, 16, 6) == 6  # not known yet: keep


def _settings(**kw):
    from latency_diff.settings import Settings
    base = dict(servers=[], profile="default", warmup=0, settle="queue", run_length=64, segment=2048, segments=16,
                pair_warmup=0, ab_quads=0, ab_requests=100, min_pairs=3, max_pairs=5, budget=60.0, precision=5.0,
                precision_floor=0.5, client="lean", http="auto", pinning="shared", client_cpu=None, server_cpu=None,
                prepare_cpu=None, port=8080, jvm_flags=[], results_dir=Path("."), start_timeout=1.0,
                allow_concurrent=False, sources={})
    base.update(kw)
    return Settings(**base)


def _state(name="x"):
    return schedule.ServerState(Server(name=name, display=name, module_dir=Path("."), threading="blocking",
                                       notes="n"), 6)


#: A prior that adds nothing to the pairs (0 degrees of freedom): the rule as for a known server, on the pairs alone.
KNOWN = Prior(sigma=0.0, df=0, tau=0.0, runs=1, source="history")


def _schedule(*states):
    return schedule.Schedule(list(states), priors={st.server.name: KNOWN for st in states})


def _units(base, server, n=2):
    return [paired.Unit(base, server, base, server)] * n


def test_stopping_rule():
    s = _settings(max_pairs=8)
    sch = _schedule(_state())
    st = sch.states[0]
    assert sch.wants_more(st, s)  # no pair yet
    for _ in range(3):
        st.record(_units(10_000, 20_050), 10.0, 6.0, 10_000)
    # Three identical ratios of 2.005 at a reference of 10,000: the interval has no width (one server: no run's
    # bound; two units a pair: no within bound) and 10,050 ns is within 502.5: met, so no more pairs, and why.
    assert sch.met(st, s) and not sch.wants_more(st, s) and sch.stops() == {"x": {"reason": "met", "pairs": 3}}
    # A server the kit knows nothing of gets its first stage of 5 pairs before a look may stop it.
    sch = schedule.Schedule([_state()])
    st = sch.states[0]
    for k in range(1, 6):
        st.record(_units(10_000, 20_050), 10.0, 6.0, 10_000)
        assert sch.wants_more(st, s) == (k < stopping.FIRST_STAGE)
    assert st.stopped == "met" and st.pairs == 5
    s = _settings(max_pairs=40)
    sch = _schedule(_state())
    st = sch.states[0]
    for est in (13_000, 14_000, 15_000):
        st.record(_units(10_000, 10_000 + est), 10.0, 6.0, 10_000)
    st.spent = 30.0
    # Mean 14,000, sd 1,000, half-width 4.303 * 1000 / sqrt(3) = 2,484 > 700: not met; 30 + 10 <= 60: more. (At the
    # sd's optimistic bound, 0.66 x 1000, 6 pairs would meet it: within reach.)
    assert not sch.met(st, s) and sch.wants_more(st, s)
    st.spent = 55.0  # 55 + 10 > 60: the budget is spent, and the decision is kept
    assert not sch.wants_more(st, s) and st.stopped == "budget"
    st.spent, st.stopped = 0.0, None
    for est in (13_000, 15_000):
        st.record(_units(10_000, 10_000 + est), 10.0, 6.0, 10_000)
    s = _settings(max_pairs=5)
    assert st.pairs == 5 and not sch.wants_more(st, s) and st.stopped == "max pairs"  # --max-pairs 5


def test_a_server_whose_pairs_are_out_of_reach_stops_at_once():
    s = _settings(max_pairs=40)
    for ratios, spent, reason in (((2.34, 2.40, 2.46), 30.0, None), ((2.0, 2.4, 2.8), 30.0, "out of reach")):
        sch = _schedule(_state())
        st = sch.states[0]
        for r in ratios:
            st.record(_units(10_000, round(10_000 * r)), 10.0, 6.0, 10_000)
        st.spent = spent
        # Mean 2.40 at a reference of 10,000: a diff of 14,000 ns, a target of 700 ns (0.07 in ratio). With an sd of
        # 0.06, 6 pairs would meet it (t(5) x 0.06 / sqrt(6) = 0.063; 5 pairs: 0.074): 30 + 3 x 10 = 60 s, within
        # 1.5 x 60 = 90. With an sd of 0.4 not even 40 pairs would (41: more than --max-pairs), out of reach at once,
        # though another pair would fit the budget (30 + 10 <= 60).
        assert sch._pairs_needed(st, s) == (6 if reason is None else 41)
        assert sch.decide(st, s) == reason
        # The time left: the 3 more pairs of 10 s it needs, at most the 30 s its budget has left and one pair more;
        # nothing once it is out of reach.
        assert sch.seconds_left(s) == ((30.0, 40.0) if reason is None else (0.0, 0.0))


def test_a_gated_head_to_head_stops_b_on_the_gates_decision():
    """--compare a b --fail-if-slower M: B stops once the interval the analysis reports (never narrower than the
    target) clears M, whatever the target says; while M is within that width of its mean, only the budget stops it."""
    def run(ratios, margin, dummy_pairs=3):
        s = _settings(compare=["a", "b"], fail_if_slower=gate.parse_margin(margin), max_pairs=40)
        sch = _schedule(_state("dummy"), _state("b"))
        dummy, b = sch.states
        for _ in range(dummy_pairs):  # the dummy against A: 0.5, so A's diff is 5,000 ns at a reference of 10,000
            dummy.record(_units(10_000, 5_000), 10.0, 6.0, 10_000)
        for r in ratios:
            b.record(_units(10_000, round(10_000 * r)), 10.0, 6.0, 10_000)
        return s, sch, b
    # B - A 3,000 ns with no spread: [2,500, 3,500] (the target's width, 500 ns) is above 10% of 5,000 = 500: FAIL.
    s, sch, b = run([1.3] * 3, "10%")
    assert sch.margin_ns(s) == pytest.approx(500.0) and sch.verdict(b, s) == gate.FAIL
    assert sch.decide(b, s) == stopping.DECIDED and "fail so far" in sch.status(b, s)
    # B - A 0: [-500, 500] is below 1 us: PASS; at 0.5 us it straddles (500 is not below 500): not decided.
    s, sch, b = run([1.0] * 3, "1us")
    assert sch.verdict(b, s) == gate.PASS and sch.decide(b, s) == stopping.DECIDED
    s, sch, b = run([1.0] * 3, "0.5us")
    assert sch.verdict(b, s) == gate.UNDECIDED and sch._pairs_needed(b, s) is None and sch.decide(b, s) is None
    b.spent = 55.0  # past what the budget affords: undecided for good
    assert sch.decide(b, s) == stopping.BUDGET
    # A margin in percent needs A's diff: before the dummy's first pair, nothing is decided.
    s, sch, b = run([1.3] * 3, "10%", dummy_pairs=0)
    assert sch.margin_ns(s) is None and sch.verdict(b, s) == gate.UNDECIDED and sch.decide(b, s) is None
    # The dummy row is not gated: it stops on its target as ever.
    s, sch, _ = run([1.3] * 3, "10%")
    assert sch.decide(sch.states[0], s) == stopping.MET


def test_a_further_pair_costs_its_preparation_not_the_first_pairs_windows():
    st = _state()
    # The first pair: 18 s on the measured CPU, 10 s of it counting and profiling; its process prepared in 12 s
    # while the pairs before it measured. A further pair waits for its own process: 12 s, not 18 and not 8.
    st.record(_units(10_000, 20_000), 18.0, 2.0, 10_000, windows_s=10.0, prepare_s=12.0)
    assert st.first_pair_seconds == 18.0 and st.pair_seconds == [8.0] and st.cost() == 12.0
    # After that, the median of the pairs after the first (windows aside): 9 and 14 and 10 -> 10.
    # Ratios 2.0, 2.1, 2.0, 2.1: not met at 4 pairs (t(3) x 0.0577 / 2 = 0.092 against 0.0525), within reach (at the
    # sd's optimistic bound, 5 pairs would do).
    for pair_s, server in ((9.0, 21_000), (14.0, 20_000), (10.0, 21_000)):
        st.record(_units(10_000, server), pair_s, 2.0, 10_000)
    assert st.cost() == 10.0
    # The budget rule asks the same: 60 s spent, 10 more fit a budget of 70, 11 would not.
    s = _settings(budget=70.0, max_pairs=6)
    sch = _schedule(st)
    st.spent = 60.0
    assert sch.decide(st, s) is None
    st.spent = 60.5
    assert sch.decide(st, s) == "budget"


def test_a_server_past_its_budget_borrows_what_stopped_servers_left_unspent():
    # a met its target after 20 s of its 60: 40 s unspent. b's ratios (sd 0.05 against a target of 0.0525 in ratio)
    # miss the target at 3 pairs; at that sd it needs 6 pairs (t(5) x 0.05 / sqrt(6) = 0.0525); a pair costs it 10 s.
    sch = _schedule(_state("a"), _state("b"))
    a, b = sch.states
    for st, ratios in ((a, (2.0, 2.0, 2.0)), (b, (2.0, 2.05, 2.1))):
        for r in ratios:
            st.record(_units(10_000, r * 10_000), 10.0, 6.0, 10_000)
    a.spent, a.stopped, b.spent = 20.0, "met", 55.0
    # Without borrowing: 55 + 10 > 60, its budget.
    assert sch.decide(b, _settings(max_pairs=12, borrow=0.0)) == "budget"
    b.stopped = None
    # With one budget to borrow: it may spend 60 + min(60, 40) = 100, and its 3 more pairs fit: 55 + 30 <= 100.
    s = _settings(max_pairs=12, borrow=1.0)
    assert sch._pairs_needed(b, s) == 6
    assert sch.limit(b, s) == 100.0 and sch.decide(b, s) is None
    # So does the time left: its 3 pairs of 10 s, and at most the 45 s its limit has left and one pair more.
    assert sch.seconds_left(s) == (30.0, 55.0)
    # At 95 s it has borrowed 35 of the 40: its limit stays 100, and 95 + 10 does not fit.
    b.spent = 95.0
    assert sch.limit(b, s) == 100.0 and sch.decide(b, s) == "budget"
    # Half a budget to borrow at most: 60 + 30 = 90, whatever the others left; its 3 pairs would not fit (85 + 10).
    b.spent, b.stopped = 55.0, None
    assert sch.limit(b, _settings(max_pairs=12, borrow=0.5)) == 90.0
    assert sch.decide(b, _settings(max_pairs=12, borrow=0.5)) is None  # 55 + 30 = 85 <= 90
    b.stopped = None
    assert sch.decide(b, _settings(max_pairs=12, borrow=0.4)) == "budget"  # 85 > 60 + 24


def test_the_run_spread_keeps_a_lucky_server_from_stopping():
    # Servers a and b: ratios 2.0, 2.2, 2.4 (sd/mean 0.2/2.2 = 0.0909); c: 1.5, 1.5, 1.5 (0). The run's bound is
    # the median, 0.0909: c's sd is taken as 0.0909 x 1.5 = 0.1364, half-width 4.303 x 0.1364 / sqrt(3) = 0.3388,
    # 3,388 ns at the reference of 10,000, over the target of 500: not met, where its own pairs alone (width 0) met.
    s = _settings()
    sch = schedule.Schedule([_state(n) for n in "abc"])
    for st, ratios in zip(sch.states, ([2.0, 2.2, 2.4], [2.0, 2.2, 2.4], [1.5, 1.5, 1.5]), strict=True):
        for r in ratios:
            st.record(_units(10_000, r * 10_000), 10.0, 6.0, 10_000)
    c = sch.states[2]
    assert sch.interval(c).bound == "run"
    assert (sch.interval(c).ratio.half_width * 10_000) == pytest.approx(3388, abs=1)
    assert not sch.met(c, s) and sch.wants_more(c, s)


def test_the_stopping_rule_scales_by_the_pairs_baselines():
    # Ratios 2.0 on a dummy of 10,000 and of 12,000: 10,000 and 12,000 unscaled, but 10,000 each at the schedule's
    # reference (median baseline 10,000): the interval has no width, so the target is met after 3 pairs.
    s = _settings()
    sch = schedule.Schedule([_state()])
    st = sch.states[0]
    for base in (10_000, 12_000, 10_000):
        st.record(_units(base, 2 * base), 10.0, 6.0, 10_000)
    assert sch.interval(st).diff.mean == pytest.approx(10_000.0) and sch.met(st, s)


def test_rounds_rotate_the_order():
    s = _settings()
    sch = schedule.Schedule([_state(n) for n in "abc"])
    assert [x.server.name for x in sch.next_round(s, 1)] == ["a", "b", "c"]
    assert [x.server.name for x in sch.next_round(s, 2)] == ["b", "c", "a"]
    assert [x.server.name for x in sch.next_round(s, 3)] == ["c", "a", "b"]
    sch.states[1].failed = "start: no"
    assert [x.server.name for x in sch.next_round(s, 1)] == ["a", "c"]


def test_the_schedule_reference_is_the_median_of_every_pairs_baseline():
    sch = schedule.Schedule([_state("a"), _state("b")])
    assert sch.reference_ns() is None
    sch.states[0].record(_units(10_000, 11_000), 10.0, 6.0, 10_000)
    sch.states[1].record(_units(30_000, 31_000), 10.0, 6.0, 10_000)
    sch.states[1].record(_units(20_000, 21_000), 10.0, 6.0, 10_000)
    assert sch.reference_ns() == 20_000.0


def test_profiles_name_every_setting():
    keys = {"warmup", "settle", "run_length", "segment", "segments", "pair_warmup", "ab_quads", "ab_requests",
            "min_pairs", "max_pairs", "budget", "borrow", "check_segments", "count_requests",
            "profile_requests"}
    assert all(set(p) - {"client"} == keys for p in PROFILES.values())
    assert all(p["segment"] % (2 * p["run_length"]) == 0 for p in PROFILES.values())


@pytest.mark.slow
def test_the_time_left_at_most_bound_held_at_every_point_of_every_committed_runs_timeline():
    """Each counted pair logs the time left as "~X (at most Y)" (driver._report). Y is a bound by construction (every
    running server's remaining budget and what it may still borrow, one pair each): at every recorded point, the
    run's last pair ended within Y. Measured on the committed runs (29 November): 27 runs, 1,319 points, none over."""
    import json
    import lzma

    from latency_diff import KIT_ROOT
    timelines = []
    for logs in sorted((KIT_ROOT / "results").rglob("logs.jsonl.xz")):
        lines = [json.loads(x) for x in lzma.decompress(logs.read_bytes()).splitlines()]
        points = [json.loads(x["text"]) for x in lines if x["kind"] == "progress"]
        if points:
            timelines.append((logs.parent.relative_to(KIT_ROOT), points))
    assert len(timelines) >= 10
    over = []
    for run, points in timelines:
        end = max(p["elapsed_s"] for p in points)
        over += [(str(run), p) for p in points if p["at_most_s"] is not None and p["elapsed_s"] + p["at_most_s"] < end]
    assert over == []
