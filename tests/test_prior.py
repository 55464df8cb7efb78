"""What the kit knows of a server's spread before a run (latency_diff/prior.py), on numbers worked out by hand."""

from __future__ import annotations

import json

import pytest

from latency_diff import prior

ENV = {"cpu_model": "AMD EPYC", "jdk": {"java.runtime.version": "25.0.3+9-LTS"}}
SETTINGS = {"profile": "default", "pinning": "shared", "run_length": 256, "segment": 4096, "settle": "queue",
            "warmup": 50000, "pair_warmup": 1000, "jvm_flags": ["-Xms512m"]}


def test_spread_pools_the_runs_and_takes_the_excess_of_their_means():
    # Three runs of [m - d, m, m + d]: each relative sd d/m. Runs 1.0 +- 0.01, 1.1 +- 0.011, 1.2 +- 0.012: relative sd
    # 0.01 each, so sigma = 0.01 on 6 df. Run means 1.0, 1.1, 1.2 (grand 1.1): relative variance of the means
    # (0.1/1.1)^2 = 0.0082645; minus sigma^2 / 3 = 0.0000333: tau = sqrt(0.0082312) = 0.090726.
    runs = [[0.99, 1.0, 1.01], [1.089, 1.1, 1.111], [1.188, 1.2, 1.212]]
    sigma, df, tau, used = prior.spread(runs)
    assert sigma == pytest.approx(0.01, rel=1e-6) and df == 6 and used == 3
    assert tau == pytest.approx(0.090726, rel=1e-4)
    # Two runs: no tau; runs of one pair add nothing; none of two pairs: nothing known.
    assert prior.spread(runs[:2])[2] == 0.0
    assert prior.spread([[1.0], [2.0]]) is None


def test_modes_are_two_clear_groups_far_enough_apart():
    fast, slow = [2.20, 2.21, 2.22, 2.21, 2.20, 2.22], [2.46, 2.47, 2.48]
    m = prior.modes(fast + slow)
    assert m == prior.Modes(fast=pytest.approx(2.21), slow=pytest.approx(2.47), slow_share=pytest.approx(1 / 3),
                            pairs=9)
    assert prior.modes([2.20, 2.21, 2.22, 2.23, 2.24, 2.25, 2.26, 2.27, 2.28]) is None  # one spread, no gap
    assert prior.modes([1.00, 1.001, 1.002, 1.001, 1.000, 1.002, 1.02, 1.021, 1.022]) is None  # apart by 2%: < 4%
    assert prior.modes(fast[:4] + slow[:3]) is None  # 7 pairs: too few to tell


def test_history_keeps_runs_of_this_kind_of_host_and_outlives_their_folders(tmp_path):
    def summary(ratios, cpu="AMD EPYC"):
        return {"settings": SETTINGS, "env": {**ENV, "cpu_model": cpu}, "servers": [
            {"name": "x", "baseline": False, "valid": True, "clients": {"lean": {"ratios": ratios}}},
            {"name": "dummy", "baseline": True, "valid": True, "clients": {"lean": {"ratios": [1.0]}}},
            {"name": "y", "baseline": False, "valid": False, "clients": {}}]}
    for run, ratios, cpu in (("r1", [1.5, 1.6], "AMD EPYC"), ("r2", [1.7, 1.8], "AMD EPYC"),
                             ("r3", [9.0, 9.1], "Intel Xeon")):
        (tmp_path / run).mkdir()
        (tmp_path / run / "summary.json").write_text(json.dumps(summary(ratios, cpu)))
    prior.remember(tmp_path / "r1", summary([1.5, 1.6]))
    (tmp_path / "r1" / "summary.json").unlink()  # the folder left the tree; its line stays
    (tmp_path / "r1").rmdir()
    assert prior.history(tmp_path, SETTINGS, ENV) == {"x": [[1.5, 1.6], [1.7, 1.8]]}
    assert prior.history(tmp_path, SETTINGS, ENV, leave_out="r2") == {"x": [[1.5, 1.6]]}
    assert prior.history(tmp_path, {**SETTINGS, "warmup": 100000}, ENV) == {}  # other settings: another history
    # A benchmark's own results folder and the kit's: each run once.
    other = tmp_path / "bench"
    (other / "r4").mkdir(parents=True)
    (other / "r4" / "summary.json").write_text(json.dumps(summary([1.9, 2.0])))
    assert prior.history([other, tmp_path, tmp_path], SETTINGS, ENV) == {"x": [[1.5, 1.6], [1.7, 1.8], [1.9, 2.0]]}
    prior.remember(tmp_path / "r1", summary([1.5, 1.6]))  # analyzed again: still one line
    assert len((tmp_path / prior.HISTORY).read_text().splitlines()) == 1


def test_for_servers_takes_the_history_then_the_shipped_prior(tmp_path, monkeypatch):
    shipped = tmp_path / "prior.json"
    shipped.write_text(json.dumps({"servers": {"z": {"sigma": 0.03, "tau": 0.01, "runs": 9}}}))
    monkeypatch.setattr(prior, "SHIPPED", shipped)
    (tmp_path / "results").mkdir()
    got = prior.for_servers(["z", "new"], tmp_path / "results", SETTINGS, ENV)
    assert got["z"] == prior.Prior(sigma=0.03, df=prior.SHIPPED_DF, tau=0.01, runs=9, source="shipped")
    # A server never measured gets the shipped servers' upper quartile (here the one), on 2 degrees of freedom.
    assert got["new"] == prior.Prior(sigma=0.03, df=2, tau=0.01, runs=0, source="generic")
    shipped.write_text(json.dumps({"servers": {k: {"sigma": s, "tau": s / 10, "runs": 1} for k, s in
                                               (("a", 0.01), ("b", 0.02), ("c", 0.04), ("d", 0.08))}}))
    assert prior.for_servers(["new"], tmp_path / "results", SETTINGS, ENV)["new"].sigma == 0.08  # index 3 of 4
    assert prior.Prior.from_dict(got["z"].to_dict()) == got["z"]


def _summary(ratios: dict[str, list[float]], ref_ns: float | None, **settings) -> dict:
    return {"settings": {**SETTINGS, **settings}, "env": ENV, "ref_ns": {"lean": ref_ns},
            "servers": [{"name": k, "baseline": False, "valid": True, "clients": {"lean": {"ratios": v}}}
                        for k, v in ratios.items()]}


def test_a_history_is_of_one_state_of_the_host(tmp_path):
    """The host's state moves the ratios too (the AMD host of 28 November: the JDK server 1.70 at a dummy round trip
    of 13.1 us, 1.96 at 18.4): a run takes as history only the runs at a reference within STATE_BAND of its own."""
    for run, ref, r in (("a1", 13_100, [1.69, 1.71]), ("a2", 13_300, [1.70, 1.70]), ("b1", 18_400, [1.95, 1.97]),
                        ("old", None, [1.80, 1.80])):
        prior.remember(tmp_path / run, _summary({"jdk": r}, ref))
    assert prior.history(tmp_path, SETTINGS, ENV, ref_ns=18_000) == {"jdk": [[1.95, 1.97]]}
    assert prior.history(tmp_path, SETTINGS, ENV, ref_ns=12_500) == {"jdk": [[1.69, 1.71], [1.70, 1.70]]}
    assert prior.history(tmp_path, SETTINGS, ENV, ref_ns=16_000) == {}  # 13,300 and 18,400 are more than 10% off
    assert len(prior.history(tmp_path, SETTINGS, ENV)["jdk"]) == 4  # no reference given: every run of the host
    assert [json.loads(x)["ref_ns"] for x in (tmp_path / prior.HISTORY).read_text().splitlines()] == \
        [13_100, 13_300, 18_400, None]
    # A head-to-head run's ratios are over another server: no history.
    prior.remember(tmp_path / "h2h", _summary({"jdk": [1.0, 1.0]}, 13_000, compare=["undertow", "jdk"]))
    assert len(prior.history(tmp_path, SETTINGS, ENV)["jdk"]) == 4


def test_the_shipped_prior_pools_each_state_of_a_host_apart(tmp_path):
    # Three runs in each of two states, ratios 1.70 and 1.96 (each run's pairs +-0.01): within a state the run means
    # agree (tau 0); pooled as one group they would spread by 7%.
    for k, (ref, mean) in enumerate([(13_100, 1.70)] * 3 + [(18_400, 1.96)] * 3):
        (tmp_path / f"r{k}").mkdir()
        (tmp_path / f"r{k}" / "summary.json").write_text(json.dumps(_summary({"jdk": [mean - 0.01, mean + 0.01]},
                                                                             ref + k)))
    got = prior.build_shipped(tmp_path)["servers"]["jdk"]
    assert got["groups"] == 2 and got["runs"] == 6 and got["tau"] == 0.0
    assert prior.spread([[m - 0.01, m + 0.01] for m in [1.70] * 3 + [1.96] * 3])[2] > 0.06
