"""The independent benchmark's own client (native/abba.c) against real and faulty servers, and its statistics on
hand-worked numbers."""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess

import pytest

from latency_diff.bench import independent
from latency_diff.measure import conformance
from latency_diff.measure.process import ServerProcess, taskset_prefix
from latency_diff.servers import discover

FLOOR = next(s for s in discover() if s.name == "floor")
CPU = max(os.sched_getaffinity(0))


def _abba(tmp_path, port_a: int, port_b: int, *, quads: int = 5, run: int = 16, warmup: int = 40):
    request = tmp_path / "request.bin"
    request.write_bytes(conformance.ab_request("127.0.0.1", port_a))
    proc = subprocess.run([*taskset_prefix(CPU), str(independent.ABBA), "--port-a", str(port_a), "--port-b",
                           str(port_b), "--request", str(request), "--run", str(run), "--quads", str(quads),
                           "--warmup", str(warmup), "--timeout-ms", "2000"], capture_output=True, text=True,
                          timeout=60)
    return proc, json.loads(proc.stdout)


@pytest.fixture
def floors(tmp_path):
    # The client and both floors on one CPU, as the benchmark runs them: unpinned, the scheduler may wake one floor on
    # the other CPU and not the other, and a cross-CPU wake-up can triple a round trip (3.1x on an AMD EPYC host).
    with ServerProcess(FLOOR, 0, tmp_path / "a.log", cpu=CPU) as a, \
            ServerProcess(FLOOR, 0, tmp_path / "b.log", cpu=CPU) as b:
        yield a.start(), b.start()


def test_abba_times_every_run_and_counts_every_response(tmp_path, floors):
    # 25 quads of runs of 64 (3,400 requests a side with the warm-up, well under a second): enough that one stall of
    # the machine (a few ms) cannot move the ratio of the totals out of the generous bound below, as 5 quads of 16
    # once did (0.45).
    proc, out = _abba(tmp_path, *floors, quads=25, run=64, warmup=200)
    assert proc.returncode == 0, proc.stderr
    assert independent.check(out, 200, 25, 64) is None
    for side in ("a", "b"):
        assert out[side]["completed"] == 200 + 2 * 25 * 64  # warm-up included
        assert len(out[side]["run_ns"]) == 50 and min(out[side]["run_ns"]) > 0
    # The floor's response: its head and the 10-byte body.
    assert out["a"]["response_bytes"] == out["b"]["response_bytes"] > 10
    # Two floors: run for run, B takes about A's time (the median over runs, generous: a stall of the machine lands
    # in a few runs, and a ratio of totals carries it whole: 3.1 once beside another job); the pair's ratio is B's
    # total time over A's.
    assert 0.5 < statistics.median(out["b"]["run_ns"]) / statistics.median(out["a"]["run_ns"]) < 2.0
    assert independent.pair_ratio(out) == pytest.approx(sum(out["b"]["run_ns"]) / sum(out["a"]["run_ns"]))
    # A check that expects other counts fails.
    assert "responses" in independent.check(out, 201, 25, 64)


@pytest.mark.parametrize(("mode", "expect"), [
    ("status-500", "non-2xx"),
    ("alternate-length", "another length"),
    ("close-after-3", "closed the connection"),
    ("trailing-bytes", "after a response"),
])
def test_abba_makes_a_pair_invalid_for_each_fault(tmp_path, floors, misbehaving, mode, expect):
    proc, out = _abba(tmp_path, floors[0], misbehaving(mode), quads=2, run=4, warmup=4)
    assert expect in independent.check(out, 4, 2, 4)
    assert proc.returncode == (1 if out["error"] else 0)


def test_abba_refuses_a_bad_command_line(tmp_path):
    proc = subprocess.run([str(independent.ABBA), "--port-a", "1", "--quads", "-3"], capture_output=True, text=True,
                          timeout=10)
    assert proc.returncode == 2 and "whole number" in proc.stderr
    proc = subprocess.run([str(independent.ABBA), "--help"], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0 and "A B B A" in proc.stdout


def test_geometric_mean_and_its_interval():
    # logs of 1, e, e^2: mean 1, sd 1; t(0.975, 2) = 4.302653; half = 4.302653 / sqrt(3) = 2.484138.
    s = independent.geometric([1.0, math.e, math.e ** 2])
    assert s.mean == pytest.approx(math.e)
    assert s.ci95_low == pytest.approx(math.exp(1 - 2.484138), rel=1e-5)
    assert s.ci95_high == pytest.approx(math.exp(1 + 2.484138), rel=1e-5)
    assert independent.geometric([2.0]).ci95_low is None


def test_compare_pools_rounds_and_bounds_the_kits_sd():
    from latency_diff.stats import Summary
    ratio = Summary(2.0, 2.0, 0.01, 1.9, 2.1, 3)
    # Kit pairs 2.00, 2.02, 1.98 and 2.01, 1.99, 2.00 (mean 2.0); independent 2.10, 2.12, 2.08, 2.10 (mean 2.1).
    kit = [([2.00, 2.02, 1.98], 0.01, ratio), ([2.01, 1.99, 2.00], 0.01, ratio)]
    c = independent.compare(kit, [[2.10, 2.12], [2.08, 2.10]])
    assert (c["kit_pairs"], c["independent_pairs"]) == (6, 4)
    assert c["difference"] == pytest.approx(-0.1) and not c["agrees"]
    assert c["pct"] == pytest.approx(-100 * 0.1 / 2.1)
    # A kit interval whose sd was bounded at 0.2 (its runs' spread) makes the same means agree.
    wide = [(r, 0.2, ratio) for r, _, _ in kit]
    assert independent.compare(wide, [[2.10, 2.12], [2.08, 2.10]])["agrees"]


def test_the_diff_in_ns_and_the_clients_on_the_same_processes():
    out = {"run": 4, "a": {"run_ns": [400, 440]}, "b": {"run_ns": [800, 840]}}
    # Dummy 840 / 8 = 105 ns a request, server 1,640 / 8 = 205: diff 100 ns.
    assert independent.pair_diff_ns(out) == pytest.approx(100.0)
    pairs = [{"valid": True, "ratio": 2.0, "abba": out, "lean": {"ratio": 1.9, "base_ns": 115.0}},
             {"valid": True, "ratio": 2.0, "abba": out, "lean": {"ratio": 1.94, "base_ns": 125.0}},
             {"valid": False, "ratio": None, "abba": out, "lean": {"ratio": 9.0, "base_ns": 999.0}}]
    c = independent.clients(pairs)
    # lean / abba: 0.95 and 0.97, mean 0.96; lean's dummy minus abba's 105: +10 and +20, mean +15.
    assert c["pairs"] == 2 and c["lean_over_abba"] == pytest.approx(0.96)
    assert c["base_cost_ns"] == pytest.approx(15.0) and c["base_cost_low"] < 15.0 < c["base_cost_high"]
    assert independent.clients(pairs[:1]) is None  # one pair: no interval
