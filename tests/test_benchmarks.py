"""The method's benchmarks: the stall injector's pattern, the robustness verdict, the design comparison's inputs."""

import random

import pytest
from runs import make_paired_run

from latency_diff import KIT_ROOT, designbench, injector, model, pinningbench, robustness


class FakeClock:
    """A clock that only moves when the code under test sleeps or spins (each read advances it 1 ms)."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        self.t += 0.001
        return self.t

    def sleep(self, s):
        self.t += s


def test_injector_bursts_are_bounded_and_repeatable():
    clock = FakeClock()
    bursts, burned = injector.burn(60.0, random.Random(1), clock=clock, sleep=clock.sleep)
    # Bursts of 5-60 ms every 0.2-1.5 s: between 60 / (1.5 + 0.06) = 38 and 60 / 0.205 = 293 of them, and
    # between 5 and 60 ms each.
    assert 38 <= bursts <= 293
    assert 0.005 * bursts <= burned <= 0.062 * bursts
    assert clock.t <= 60.0 + 0.1  # it stops by itself
    again = FakeClock()
    assert injector.burn(60.0, random.Random(1), clock=again, sleep=again.sleep) == (bursts, burned)


def test_injector_refuses_a_run_without_end(capsys):
    with pytest.raises(SystemExit):
        injector.main(["--seconds", "0"])
    assert "--seconds must be more than 0" in capsys.readouterr().err


def _run(tmp, name, pairs):
    return model.build(make_paired_run(tmp / name, {"undertow": pairs}))


def test_robustness_verdict(tmp_path):
    quiet = _run(tmp_path, "q", [(20_000, 27_000), (20_000, 27_500), (20_000, 26_500)])  # 7,000 +- 1,242
    # Same centre, intervals 1.5x as wide: agrees, widening 1.5 -> passes.
    ok = _run(tmp_path, "i1", [(20_000, 27_000), (20_000, 27_750), (20_000, 26_250)])
    (_, rows, _), data = robustness.compare(quiet, ok)
    assert rows == [["undertow", "7.00 ± 1.24", "7.00 ± 1.86", "yes", "1.50x", "yes"]]
    # Three times as wide: agrees, but widens too much.
    wide = _run(tmp_path, "i2", [(20_000, 27_000), (20_000, 28_500), (20_000, 25_500)])
    (_, rows, _), data = robustness.compare(quiet, wide)
    assert rows[0][-2:] == ["3.00x", "NO"] and data["undertow"]["agree"] is True
    # Moved away: 12,000 +- 1,242 does not overlap 7,000 +- 1,242.
    moved = _run(tmp_path, "i3", [(20_000, 32_000), (20_000, 32_500), (20_000, 31_500)])
    (_, rows, _), data = robustness.compare(quiet, moved)
    assert rows[0][3] == "NO" and data["undertow"]["ok"] is False


def test_design_bench_reads_both_formats(tmp_path):
    # The committed default run of the single-server design (results/20261122T073853Z): its jetty row.
    old = designbench.old_widths(KIT_ROOT / "results" / "20261122T073853Z")
    diff, half = old["jetty"]
    assert round(diff / 1000, 2) == 18.65 and round(half / 1000, 2) == 14.44  # [4.21, 33.10] in its README table
    assert "dummy" not in old and "helidon" not in old
    new = designbench.new_widths(make_paired_run(tmp_path, {"undertow": [(20_000, 27_000), (20_000, 27_500),
                                                                         (20_000, 26_500)]}))
    assert new["undertow"][0] == pytest.approx(7000.0)


def test_pinning_bench_ratio_at_equal_time(tmp_path):
    shared = pinningbench.widths(_run(tmp_path, "s", [(20_000, 27_000), (20_000, 27_500), (20_000, 26_500)]))
    split = pinningbench.widths(_run(tmp_path, "p", [(30_000, 39_000), (30_000, 40_000), (30_000, 38_000)]))
    assert split["undertow"][0] == pytest.approx(9000.0)
    assert split["undertow"][1] == pytest.approx(2 * shared["undertow"][1])  # the same spread, doubled
    # Split's interval twice as wide in 4 minutes against shared's 1 minute: at equal time 2 x sqrt(4) = 4x.
    assert pinningbench.ratios(shared, 1.0, split, 4.0) == {"undertow": pytest.approx(4.0)}
    # Half as wide but in 16 minutes: 0.5 x 4 = 2x; a server only one pinning measured has no ratio.
    assert pinningbench.ratios(shared, 1.0, {"undertow": (9000.0, shared["undertow"][1] / 2), "jetty": (1.0, 1.0)},
                               16.0) == {"undertow": pytest.approx(2.0)}


def test_pinning_bench_refuses_a_list_without_shared_first(capsys):
    with pytest.raises(SystemExit):
        pinningbench.main(["--pinnings", "split,shared"])
    assert "must start with shared" in capsys.readouterr().err
