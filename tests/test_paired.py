"""Paired measurement on known inputs: block estimator, quads, pair estimates, variance split, stopping.

Every expected value is worked out by hand in the comment next to it.
"""

import math
from pathlib import Path

import pytest

from latency_diff import pair, paired, schedule
from latency_diff.histogram import Histogram
from latency_diff.servers import Server
from latency_diff.settings import PROFILES
from latency_diff.stats import Summary


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
    # D S S D measures 10, 16, 17, 13 -> (16 + 17 - 10 - 13) / 2 = 5, the true difference.
    assert paired.quad_diff(("base", "server", "server", "base"), (10, 16, 17, 13)) == 5.0
    # S D D S with the same drift: 15, 11, 12, 18 -> (15 + 18 - 11 - 12) / 2 = 5.
    assert paired.quad_diff(("server", "base", "base", "server"), (15, 11, 12, 18)) == 5.0
    with pytest.raises(ValueError, match="two base and two server"):
        paired.quad_diff(("base", "base", "base", "server"), (1, 2, 3, 4))


def test_pair_estimate_is_the_median_of_its_quads():
    assert paired.pair_estimate([5.0, 7.0, 100.0]) == 7.0  # one stall-hit quad does not move it
    assert paired.pair_estimate([5.0, 7.0]) == 6.0


def test_within_and_between_variance():
    # Pair 1: quads 1, 3 (mean 2, squares 1 + 1 = 2, 1 dof); pair 2: 2, 4, 6 (mean 4, squares 4 + 0 + 4 = 8,
    # 2 dof): pooled 10 / 3.
    assert paired.within_variance([[1.0, 3.0], [2.0, 4.0, 6.0]]) == pytest.approx(10 / 3)
    assert paired.within_variance([[1.0], [2.0]]) is None
    # Pairs [1, 3] and [5, 7]: within (2 + 2) / 2 = 2; estimates (medians) 2 and 6, variance 8; a median of
    # 2 quads has variance (pi / 2) * 2 / 2 = pi / 2, so the between-pair part is 8 - pi / 2 = 6.4292.
    assert paired.between_variance([[1.0, 3.0], [5.0, 7.0]], 2.0) == pytest.approx(8 - math.pi / 2)
    # Pairs that agree: no between-pair part left (never negative).
    assert paired.between_variance([[1.0, 3.0], [1.0, 3.0]], 2.0) == 0.0


def test_optimal_quads_kalibera_jones():
    # sqrt(c_p * (pi / 2) * S_w^2 / (c_q * T^2)) = sqrt(20 * 1.5708 * 4 / (1 * 1)) = sqrt(125.66) = 11.2 -> 11.
    assert paired.optimal_quads(4.0, 1.0, 20.0, 1.0, 2, 16, 6) == 11
    # Big between-pair variance: as few quads as allowed, so the time goes to more pairs.
    assert paired.optimal_quads(4.0, 1000.0, 20.0, 1.0, 2, 16, 6) == 2
    assert paired.optimal_quads(4.0, 0.0, 20.0, 1.0, 2, 16, 6) == 16
    assert paired.optimal_quads(None, 1.0, 20.0, 1.0, 2, 16, 6) == 6  # not known yet: keep


def test_target():
    assert paired.target_ns(30_000.0) == 1500.0  # 5% of 30 us
    assert paired.target_ns(-2_000.0) == 500.0  # the 0.5 us floor
    met = Summary(30_000.0, 30_000.0, 1.0, 28_600.0, 31_400.0, 4)  # half-width 1,400 <= 1,500
    missed = Summary(30_000.0, 30_000.0, 1.0, 28_000.0, 32_000.0, 4)  # 2,000 > 1,500
    assert paired.target_met(met) and not paired.target_met(missed)
    assert not paired.target_met(Summary(30_000.0, 30_000.0, None, None, None, 1))


def test_block_plan_alternates_clients_and_orders():
    plan = pair.block_plan(2, ("lean", "ab"))
    assert plan[:4] == [("lean", 0, 0, "base"), ("lean", 0, 1, "server"), ("lean", 0, 2, "server"),
                        ("lean", 0, 3, "base")]
    assert plan[4:8] == [("ab", 0, 0, "base"), ("ab", 0, 1, "server"), ("ab", 0, 2, "server"), ("ab", 0, 3, "base")]
    # The second quad: ab goes first, and each client's quad is S D D S.
    assert plan[8:12] == [("ab", 1, 0, "server"), ("ab", 1, 1, "base"), ("ab", 1, 2, "base"), ("ab", 1, 3, "server")]
    assert [p[0] for p in plan[12:]] == ["lean"] * 4
    assert len(pair.block_plan(3, ("lean",))) == 12


def _settings(**kw):
    from latency_diff.settings import Settings
    base = dict(servers=[], profile="default", warmup=0, block_requests=100, block_warmup=0, quads=6, min_pairs=3,
                max_pairs=5, budget=60.0, precision=5.0, precision_floor=0.5, wait_for_jit=False, client="lean",
                http="auto", pinning="shared", client_cpu=None, server_cpu=None, port=8080, jvm_flags=[],
                results_dir=Path("."), start_timeout=1.0, allow_concurrent=False, sources={})
    base.update(kw)
    return Settings(**base)


def _state():
    return schedule.ServerState(Server(name="x", display="X", module_dir=Path("."), threading="blocking", notes="n"), 6)


def test_stopping_rule():
    s = _settings()
    st = _state()
    assert st.wants_more(s)  # no pair yet
    for _ in range(3):
        st.record([10_000.0, 10_100.0], 10.0, 6.0, 2)
    # Three identical estimates of 10,050 ns: half-width 0 <= 502.5: met, so no more pairs.
    assert st.met(s) and not st.wants_more(s)
    st = _state()
    for est in (10_000.0, 14_000.0, 18_000.0):
        st.record([est, est], 10.0, 6.0, 2)
    st.spent = 30.0
    # Mean 14,000, sd 4,000, half-width 4.303 * 4000 / sqrt(3) = 9,937 > 700: not met; 30 + 10 <= 60: more.
    assert not st.met(s) and st.wants_more(s)
    st.spent = 55.0  # 55 + 10 > 60: the budget is spent
    assert not st.wants_more(s)
    st.spent = 0.0
    for est in (10_000.0, 14_000.0):
        st.record([est, est], 10.0, 6.0, 2)
    assert len(st.pair_quads) == 5 and not st.wants_more(s)  # --max-pairs 5


def test_rounds_rotate_the_order():
    s = _settings()
    states = [schedule.ServerState(Server(name=n, display=n, module_dir=Path("."), threading="blocking", notes="n"),
                                   6) for n in "abc"]
    assert [x.server.name for x in schedule.next_round(states, s, 1)] == ["a", "b", "c"]
    assert [x.server.name for x in schedule.next_round(states, s, 2)] == ["b", "c", "a"]
    assert [x.server.name for x in schedule.next_round(states, s, 3)] == ["c", "a", "b"]
    states[1].failed = "start: no"
    assert [x.server.name for x in schedule.next_round(states, s, 1)] == ["a", "c"]


def test_profiles_name_every_knob():
    keys = {"warmup", "block_requests", "block_warmup", "quads", "min_pairs", "max_pairs", "budget", "wait_for_jit",
            "pin_after_warmup"}
    assert all(set(p) == keys for p in PROFILES.values())
