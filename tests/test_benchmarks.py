"""The method's benchmarks: the injectors' patterns and bounds, and each benchmark's verdict on known inputs."""

import os
import random
import subprocess
import sys
import time

import pytest
from runs import make_paired_run

from latency_diff import KIT_ROOT
from latency_diff.analysis import evaluate
from latency_diff.bench import common, fleet, matrix, robustness, windows
from latency_diff.bench.__main__ import main as bench_main
from latency_diff.measure import injector


class FakeClock:
    """A clock that only moves when the code under test sleeps or spins (each read advances it 1 ms)."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        self.t += 0.001
        return self.t

    def sleep(self, s):
        self.t += s


def test_stall_bursts_are_bounded_and_repeatable():
    clock = FakeClock()
    bursts, burned = injector.burn(60.0, random.Random(1), clock=clock, sleep=clock.sleep)
    # Bursts of 5-60 ms every 0.2-1.5 s: between 60 / (1.5 + 0.06) = 38 and 60 / 0.205 = 293 of them, and
    # between 5 and 60 ms each.
    assert 38 <= bursts <= 293
    assert 0.005 * bursts <= burned <= 0.062 * bursts
    assert clock.t <= 60.0 + 0.1  # it stops by itself
    again = FakeClock()
    assert injector.burn(60.0, random.Random(1), clock=again, sleep=again.sleep) == (bursts, burned)


def test_drift_periods_are_bounded_and_repeatable():
    clock = FakeClock()
    periods = injector.drift(600.0, random.Random(1), clock=clock, sleep=clock.sleep, work=lambda: None)
    # On for 20-60 s, off for 20-60 s: between 600 / 120 = 5 and 600 / 40 = 15 periods.
    assert 5 <= len(periods) <= 15
    assert all(20.0 <= end - start <= 60.0 + 0.01 for start, end in periods[:-1])  # the last may be cut at the end
    gaps = [b[0] - a[1] for a, b in zip(periods, periods[1:], strict=False)]
    assert all(20.0 <= g <= 60.0 + 0.01 for g in gaps)
    assert clock.t <= 600.0 + 0.1  # it stops by itself
    again = FakeClock()
    assert injector.drift(600.0, random.Random(1), clock=again, sleep=again.sleep, work=lambda: None) == periods


@pytest.mark.parametrize("mode", ["stall", "drift"])
def test_an_injector_stays_on_its_cpu_and_ends_by_itself(mode):
    cpu = sorted(os.sched_getaffinity(0))[-1]
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "latency_diff.measure.injector", mode, "--cpu", str(cpu),
                             "--seconds", "3", "--mb", "4"], cwd=KIT_ROOT, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)
        tasks = os.listdir(f"/proc/{proc.pid}/task")
        assert tasks and all(os.sched_getaffinity(int(t)) == {cpu} for t in tasks)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0 and time.monotonic() - start < 20
    assert err.startswith("injector: ")


def test_injectors_refuse_a_run_without_end(capsys):
    with pytest.raises(SystemExit):
        injector.main(["stall", "--seconds", "0"])
    assert "--seconds must be more than 0" in capsys.readouterr().err


def _run(tmp, name, pairs):
    return evaluate.build(make_paired_run(tmp / name, {"undertow": pairs}))


def test_robustness_verdict(tmp_path):
    quiet = _run(tmp_path, "q", [(20_000, 27_000), (20_000, 27_500), (20_000, 26_500)])  # 7,000 +- 1,242
    # Same centre, intervals 1.5x as wide: agrees, widening 1.5 -> passes.
    ok = _run(tmp_path, "i1", [(20_000, 27_000), (20_000, 27_750), (20_000, 26_250)])
    (_, rows, _), data = robustness.compare(quiet, ok)
    assert rows == [["undertow", "7.00 ± 1.24", "7.00 ± 1.86", "yes", "1.50x", "yes"]]
    # Twice as wide: agrees, but widens too much.
    wide = _run(tmp_path, "i2", [(20_000, 27_000), (20_000, 28_000), (20_000, 26_000)])
    (_, rows, _), data = robustness.compare(quiet, wide)
    assert rows[0][-2:] == ["2.00x", "NO"] and data["undertow"]["agree"] is True
    # Moved away: 12,000 +- 1,242 does not overlap 7,000 +- 1,242.
    moved = _run(tmp_path, "i3", [(20_000, 32_000), (20_000, 32_500), (20_000, 31_500)])
    (_, rows, _), data = robustness.compare(quiet, moved)
    assert rows[0][3] == "NO" and data["undertow"]["ok"] is False


def test_equal_time_comparison():
    # An interval twice as wide in 4 minutes against 1 minute: at equal time 2 x sqrt(4) = 4x as wide.
    assert common.narrower_at_equal_time(2.0, 4.0, 1.0, 1.0) == pytest.approx(4.0)


def test_the_bench_entry_point_refuses_unknown_benchmarks_and_bad_lists(tmp_path, capsys):
    with pytest.raises(SystemExit):
        bench_main(["nope"])
    assert "invalid choice: 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="must name stall and/or drift"):
        bench_main(["robustness", "--conditions", "wind", "--results-dir", str(tmp_path)])


def test_a_matrix_compares_one_variant_with_several_rows(tmp_path):
    # a: 7,000 +- 200 (sd); b: 5,000 +- 100; c: 8,000 +- 100. a - b = 2,000, Welch se sqrt(200^2/3 + 100^2/3) = 129.1,
    # df 2.94, t 3.2188 -> +-415.5: [1.58, 2.42]. c's sd is bounded by the run's spread (the median relative sd of the
    # ratios, 0.4% (b's), times c's ratio 1.40 at 20,000 ns: 112 ns), so a - c = -1,000 has se sqrt(200^2/3 + 112^2/3)
    # and more degrees of freedom than with c's own 100: [-1.41, -0.59]. Ratios 1.35/1.25 and 1.35/1.40. The
    # precision target is off, so that its fixed width (tested in test_stopping.py) does not hide the run's bound.
    run = make_paired_run(tmp_path, {"a": [(20_000, 27_000), (20_000, 27_200), (20_000, 26_800)],
                                     "b": [(20_000, 25_000), (20_000, 25_100), (20_000, 24_900)],
                                     "c": [(20_000, 28_000), (20_000, 28_100), (20_000, 27_900)]},
                          settings={"precision_floor_us": 0, "precision_pct": 0})
    (_, rows, _), data = matrix.comparison(evaluate.build(run), [("a", "b"), ("a", "c"), ("a", "nope")])
    assert rows == [["a", "b", "7.00", "5.00", "2.00", "[1.58, 2.42]", "1.080", "slower"],
                    ["a", "c", "7.00", "8.00", "-1.00", "[-1.41, -0.59]", "0.964", "faster"],
                    ["a", "nope", "-", "-", "-", "-", "-", "not measured: nope is not in the run"]]
    assert list(data) == ["a against b", "a against c", "a against nope"]
    assert data["a against b"]["variant"] == "a" and data["a against b"]["of"] == "b"
    assert data["a against nope"]["measured"] is False


def test_the_fleet_sets_each_merged_ratio_beside_the_whole_runs(tmp_path):
    # Ratios: a 1.35 in both runs (agree); b 1.25 in one and 1.30 in the other, with intervals narrower than the
    # 0.05 between them (differ); c only in the merged one (not compared). The dummy's row is never compared.
    one = {"a": [(20_000, 27_000), (20_000, 27_200), (20_000, 26_800)],
           "b": [(20_000, 25_000), (20_000, 25_020), (20_000, 24_980)]}
    other = {"a": [(20_000, 27_100), (20_000, 26_900), (20_000, 27_000)],
             "b": [(20_000, 26_000), (20_000, 26_020), (20_000, 25_980)],
             "c": [(20_000, 28_000), (20_000, 28_100), (20_000, 27_900)]}
    kw = {"settings": {"precision_floor_us": 0, "precision_pct": 0}}
    whole = evaluate.build(make_paired_run(tmp_path / "whole", one, **kw))
    merged = evaluate.build(make_paired_run(tmp_path / "merged", other, **kw))
    (_, rows, _), data = fleet.agreement(whole, merged)
    by = {d["server"]: d for d in data}
    assert by["a"]["agree"] is True and by["a"]["difference"] == pytest.approx(0.0, abs=1e-9)
    assert by["b"]["agree"] is False and by["b"]["difference"] == pytest.approx(0.05, abs=1e-6)
    assert by["b"]["half_width"] < 0.02  # the two intervals, each bounded below by its run's spread
    assert by["c"] == {"server": "c", "compared": False, "reason": "not in the whole run"}
    assert [r[-1] for r in rows if r[0] == "b"] == ["**differ**"]
    assert "dummy" not in by


def test_the_releases_matrix_measures_each_older_line_against_todays_release():
    """The older lines with a module of their own are matrix_only: left out of a run of every server, so this matrix
    is where they are measured; each is a row's reference (or, for Jetty 10 and 11, a step of 9.4 -> 12.1)."""
    from latency_diff.catalog import select
    from latency_diff.servers import discover
    servers, pairs = matrix.plan("releases")
    chosen = {s.name for s in select(discover(), ",".join(servers))}
    assert {"netty41", "tomcat9-nio", "jetty10", "jetty11"} <= chosen
    # Every matrix_only server but the positive controls (control-*), which are no release line.
    assert {s.name for s in discover() if s.matrix_only and not s.name.startswith("control-")} <= chosen
    assert pairs[-6:] == [("netty", "netty41"), ("tomcat-nio", "tomcat9-nio"), ("jetty10", "jetty9"),
                          ("jetty11", "jetty10"), ("jetty", "jetty11"), ("jetty", "jetty9")]
    assert all(name in chosen for pair in pairs for name in pair)


def test_the_windows_benchmark_alternates_its_sides_and_prices_the_windows(tmp_path):
    assert windows.order(1) == ["with", "without"]
    assert windows.order(2) == ["with", "without", "without", "with"]
    runs = [{"side": "with", "minutes": 11.0, "count": 30.0, "profile": 30.0, "run": 660.0},
            {"side": "without", "minutes": 10.0, "count": 0.0, "profile": 0.0, "run": 600.0},
            {"side": "without", "minutes": 10.0, "count": 0.0, "profile": 0.0, "run": 600.0},
            {"side": "with", "minutes": 13.0, "count": 50.0, "profile": 70.0, "run": 780.0}]
    s = windows.summarize(runs)
    assert s["minutes"] == {"with": 12.0, "without": 10.0}
    assert s["extra_wall"] == pytest.approx(0.2)
    assert s["window_s"] == 90.0 and s["count_s"] == 40.0 and s["profile_s"] == 50.0
    assert s["extra_records"] == pytest.approx(90.0 / 630.0)
    with pytest.raises(SystemExit, match="at least 1"):
        bench_main(["windows", "--pairs", "0", "--results-dir", str(tmp_path)])


def test_the_jdks_matrix_runs_the_core_servers_on_17_21_and_the_runs_own(monkeypatch):
    monkeypatch.setattr(matrix, "jdk_home", lambda major: f"/jdks/{major}")
    servers, pairs = matrix.plan("jdks")
    core = matrix.CORE
    assert servers == [*core, *(f"{s}:java=/jdks/17" for s in core), *(f"{s}:java=/jdks/21" for s in core)]
    assert pairs == [*((f"{s}+jdk17", s) for s in core), *((f"{s}+jdk21", s) for s in core),
                     *((f"{s}+jdk17", f"{s}+jdk21") for s in core)]


def test_the_core_servers_modules_are_built_for_jdk_17():
    """What lets the jdks matrix run them on JDK 17: the release of each core module, its shared code and the agent
    (the jars' class files, when built, say the same: major version 61)."""
    import zipfile

    from latency_diff.servers import AGENT_DIR, discover
    known = {s.name: s for s in discover()}
    for name in matrix.CORE:
        assert known[name].java_release == 17, name
    for jar in [known[n].jar for n in matrix.CORE] + [AGENT_DIR / "target" / "latency-diff-agent.jar"]:
        if not jar.is_file():
            continue  # not built here: the release above is what the build uses
        with zipfile.ZipFile(jar) as z:
            cls = next(n for n in z.namelist() if n.startswith("org/latencydiff/") and n.endswith(".class"))
            assert int.from_bytes(z.read(cls)[6:8], "big") == 61, (jar, cls)


def test_the_gate_benchmark_refuses_what_it_cannot_run(tmp_path):
    with pytest.raises(SystemExit, match="at least 1"):
        bench_main(["gate", "--runs", "0", "--results-dir", str(tmp_path)])
    with pytest.raises(SystemExit, match="margin '1ms': give a margin in microseconds"):
        bench_main(["gate", "--margin", "1ms", "--results-dir", str(tmp_path)])
    with pytest.raises(SystemExit, match="no java there that runs"):
        bench_main(["gate", "--old-java", str(tmp_path / "nojdk"), "--results-dir", str(tmp_path)])
    assert list(tmp_path.iterdir()) == []  # nothing measured, no folder left behind
