"""The coverage and sensitivity benchmarks' pure parts, on synthetic runs whose every value is chosen (tests/runs.py).

Every pair below has segments whose round trips are all one value, so a pair's ratio is server / base exactly, its
scaled diff (ratio - 1) x the run's reference round trip (the median of its pairs' base round trips), and a row of
three pairs d - s, d, d + s has the 95% interval d +- t(0.975, 2) x s / sqrt(3) = d +- 2.4841 s.
"""

import json
import os

import pytest
from runs import make_paired_run

from latency_diff import settings
from latency_diff.analysis import evaluate
from latency_diff.bench import common, coverage, sensitivity
from latency_diff.bench.__main__ import main as bench_main
from latency_diff.prior import Prior


def _runs(root):
    """Three complete runs: (folder, its pairs). undertow's ratios are 1.35 +- 0.025, 1.355 +- 0.025 and 1.35 +- 0.025;
    its run 3 has a reference round trip of 30 us instead of 20, so only its us diff moves. jetty fails in run 3."""
    return [
        (root / "run-01", {"undertow": [(20_000, 27_000), (20_000, 27_500), (20_000, 26_500)],
                           "jetty": [(20_000, 30_000), (20_000, 30_500), (20_000, 29_500)]}),
        (root / "run-02", {"undertow": [(20_000, 27_100), (20_000, 27_600), (20_000, 26_600)],
                           "jetty": [(20_000, 30_400), (20_000, 30_900), (20_000, 29_900)]}),
        (root / "run-03", {"undertow": [(30_000, 40_500), (30_000, 41_250), (30_000, 39_750)],
                           "jetty": ["failed:measure:boom"]}),
    ]


def _built(root):
    return [evaluate.build(make_paired_run(folder, pairs)) for folder, pairs in _runs(root)]


def test_coverage_holds_each_run_against_the_other_runs(tmp_path):
    runs = _built(tmp_path)
    # Stop reasons, as a result model that records them would give them.
    for r, why in zip(runs, ("target", "target", "budget"), strict=True):
        r.server("undertow").stop = why
    cov = coverage.coverage(runs)
    u, j = cov["servers"]["undertow"], cov["servers"]["jetty"]
    # undertow's pair ratios: run 1 1.35, 1.375, 1.325; run 2 1.355, 1.38, 1.33; run 3 (at 30 us) 1.35, 1.375, 1.325.
    # Leave one out: run 1's truth is the mean of runs 2 and 3, 1.3525; run 2's 1.35; run 3's 1.3525. Each interval
    # is its mean +- 2.4841 x 0.025 = 0.0621 (wider than the target's fixed width, 500 / 20,000 = 0.025): all hold.
    assert u["ratio"]["truth"] == pytest.approx([1.3525, 1.35, 1.3525])
    assert (u["ratio"]["covered"], u["ratio"]["missed_runs"]) == (3, [])
    # In us at each run's own reference: run 3's truth 0.3525 x 30,000 = 10,575 in [8,637, 12,363]; run 1's 7,050 in
    # [5,758, 8,242]: one estimand, so a run at another reference is judged at its own (the median of the us diffs,
    # 7,100, was missed by run 3 before).
    assert u["diff"]["truth"] == pytest.approx([7_050, 7_000, 10_575])
    assert (u["diff"]["covered"], u["diff"]["of"]) == (3, 3)
    assert u["pairs"] == [3, 3] and u["stops"] == {"budget": 1, "target": 2} and u["band"] == "narrow"
    # jetty, in runs 1 and 2 only (1.50 and 1.52, +- 0.0621): each holds the other's mean.
    assert j["runs"] == 2 and j["ratio"]["truth"] == pytest.approx([1.52, 1.50]) and j["ratio"]["covered"] == 2
    assert cov["overall"]["ratio"] == {"covered": 5, "of": 5, "share": pytest.approx(1.0)}
    # A run whose interval misses the others' mean: undertow's run 2 moved to 1.455 (+0.1 > 0.0621 away).
    far = _built(tmp_path / "far")
    assert coverage.coverage(far)["servers"]["undertow"]["ratio"]["covered"] == 3
    moved = [(20_000, 29_100), (20_000, 29_600), (20_000, 28_600)]
    r2 = evaluate.build(make_paired_run(tmp_path / "moved", {"undertow": moved}))
    cov = coverage.coverage([far[0], r2, far[2]])
    # Run 2 misses its truth 1.35; runs 1 and 3 hold theirs, (1.455 + 1.35) / 2 = 1.4025 <= 1.35 + 0.0621.
    assert cov["servers"]["undertow"]["ratio"]["missed_runs"] == [2]


def test_coverage_from_a_folder_of_runs(tmp_path):
    root = tmp_path / "coverage-x"
    for folder, pairs in _runs(root):
        make_paired_run(folder, pairs)
    make_paired_run(root / "run-04", {"undertow": [(20_000, 40_000)] * 3}, status="incomplete")  # left out
    assert bench_main(["coverage", "--from", str(root)]) == 0
    data = json.loads((root / "coverage.json").read_text())
    assert data["runs"] == 3 and [x["folder"] for x in data["run_dirs"]] == ["run-01/run", "run-02/run", "run-03/run"]
    assert [x["ref_ns"] for x in data["run_dirs"]] == [20_000, 20_000, 30_000]
    assert [x["folder"] for x in data["left_out"]] == ["run-04/run"]
    assert data["overall"]["diff"]["covered"] == 5 and data["overall"]["ratio"]["covered"] == 5
    page = (root / "coverage.md").read_text()
    # The truth column: the mean of the runs' truths 1.3525, 1.35, 1.3525; no row met the 0.025 target.
    assert "| undertow | narrow | 1.3517 | 3 of 3 | 0 of 0 | 3 of 3 | 3 |" in page
    assert "| 3 | run-03/run | complete | 30.00 | 1 | 1.5 |" in page
    assert "Left out (not complete): run-04/run (incomplete" in page
    assert (root / "coverage.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _no_driver(*args, **kwargs):
    raise AssertionError("a refused command line must not start the driver")


def test_coverage_refuses_too_few_runs_and_driver_options_with_from(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "run_driver", _no_driver)
    with pytest.raises(SystemExit, match="at least 2"):
        bench_main(["coverage", "--runs", "1", "--results-dir", str(tmp_path)])
    make_paired_run(tmp_path / "one", {"undertow": [(20_000, 27_000)] * 3})
    with pytest.raises(SystemExit, match="holds 1 run"):
        bench_main(["coverage", "--from", str(tmp_path)])
    with pytest.raises(SystemExit, match="--from measures nothing"):
        bench_main(["coverage", "--from", str(tmp_path), "--budget", "10"])
    assert not list(tmp_path.glob("coverage-*"))  # nothing measured, no folder made


# -- sensitivity ------------------------------------------------------------------------------------------------

DEFAULT_PAIRS = {"undertow": [(20_000, 27_000), (20_000, 27_500), (20_000, 26_500)],  # ratios 1.35 +- 0.025
                 "jetty": [(20_000, 30_000), (20_000, 30_200), (20_000, 29_800)]}  # 1.50 +- 0.01
# At a 25 us reference round trip: ratios 1.40 +- 0.025 and 1.55 +- 0.01, scaled diffs 10,000 and 13,750 us.
VARIANT_PAIRS = {"undertow": [(25_000, 35_000), (25_000, 35_625), (25_000, 34_375)],
                 "jetty": [(25_000, 38_750), (25_000, 39_000), (25_000, 38_500)]}


def test_sensitivity_compares_run_means_with_the_known_spread_of_a_run():
    known = {"undertow": Prior(sigma=0.02, df=10, tau=0.01, runs=5, source="history"),
             "jetty": Prior(sigma=0.005, df=10, tau=0.002, runs=5, source="history"),
             "null": Prior(sigma=0.005, df=10, tau=0.002, runs=5, source="history")}
    default = {"undertow": [[1.325, 1.35, 1.375]], "jetty": [[1.49, 1.50, 1.51]], "null": [[1.0] * 3]}
    variant = {"undertow": [[1.375, 1.40, 1.425]], "jetty": [[1.54, 1.55, 1.56]], "null": [[1.005] * 3]}
    result = sensitivity.compare(default, variant, known)
    u, j, n = result["undertow"], result["jetty"], result["null"]
    # undertow: 1.40 / 1.35 - 1 = +3.704%. A run mean's variance 0.02^2 / 3 + 0.01^2 = 2.3333e-4 on each side: se
    # 0.0216025; t(0.975, 10 + 1 + 1 - 2) = 2.228139 -> [-1.110%, +8.517%]: it holds 0 and reaches past 3%.
    assert u["change_pct"] == pytest.approx(3.7037, abs=1e-4)
    assert u["ci_pct"] == [pytest.approx(-1.1097, abs=1e-3), pytest.approx(8.5171, abs=1e-3)]
    assert u["verdict"] == "inconclusive"
    # It could have detected (2.228139 + 0.841621) x 0.0216025 = 6.63%.
    assert u["detectable_pct"] == pytest.approx(6.6315, abs=1e-3)
    # jetty: +3.333%, se sqrt(2 x (0.005^2 / 3 + 0.002^2)) = 0.0049666 -> [+2.227%, +4.440%]: slower.
    assert j["ci_pct"][0] == pytest.approx(2.2267, abs=1e-3) and j["verdict"] == "slower"
    # null: +0.5% [-0.61%, +1.61%]: within the +-3% margin.
    assert n["verdict"] == "equivalent"
    # Corrected for 100 comparisons, t(1 - 0.00025, 10) = 5.049 and each half-width 2.508%: jetty's [+0.83%, +5.84%]
    # still excludes 0, while null's [-2.01%, +3.01%] now reaches past the margin.
    wide = sensitivity.compare(default, variant, known, tests=100)
    assert wide["jetty"]["level"] == pytest.approx(0.9995)
    assert wide["jetty"]["ci_pct"][0] == pytest.approx(0.8254, abs=1e-3) and wide["jetty"]["verdict"] == "slower"
    assert wide["null"]["ci_pct"][1] == pytest.approx(3.0082, abs=1e-3) and wide["null"]["verdict"] == "inconclusive"
    # Two runs on a side whose means differ more than the prior says: their own spread is used.
    spread = sensitivity.compare({"null": [[1.0] * 3, [1.04] * 3]}, {"null": [[1.02] * 3]}, known)["null"]
    assert spread["verdict"] == "inconclusive"
    _, body, _ = sensitivity.config_table(result)
    assert body[0] == ["undertow", "1.3500", "1.4000", "1 / 1", "+3.70%", "[-1.11, +8.52]", "6.6%", "inconclusive"]
    _, body, _ = sensitivity.summary_table({"x": {"servers": result}})
    assert body == [["x", "+3.7% [-1.1, +8.5] inconclusive", "+3.3% [+2.2, +4.4] slower",
                     "+0.5% [-0.6, +1.6] equivalent"]]
    # A server in one side only, or of no known spread, is named, not compared.
    missing = sensitivity.compare({"undertow": [[1.3, 1.4]], "x": [[1.1]]}, {"x": [[1.2]]}, known)
    assert missing == {"undertow": {"measured": False, "reason": "not in the variant's runs"},
                       "x": {"measured": False, "reason": "no spread known of it"}}


def test_sensitivity_plan_and_which_default_runs_each_variant_meets():
    assert sensitivity.plan(["a", "b"], 1, False) == ["default", "a", "b"]
    assert sensitivity.plan(["a", "b"], 2, True) == ["default", "default", "a", "a", "default", "default", "b", "b",
                                                     "default", "default"]
    # Shared default: every variant against run 0. Interleaved: against the default runs just before and after.
    assert sensitivity.neighbours(["default", "a", "b"]) == {"a": [0], "b": [0]}
    assert sensitivity.neighbours(["default", "a", "default", "b", "default"]) == {"a": [0, 2], "b": [2, 4]}
    assert sensitivity.neighbours(sensitivity.plan(["a"], 2, True)) == {"a": [0, 1, 4, 5]}
    assert sensitivity.selected(None) == [n for n in sensitivity.CONFIGS if n != "default"]
    assert sensitivity.selected("hot-loop,default") == ["hot-loop"]
    with pytest.raises(SystemExit, match="unknown configuration"):
        sensitivity.selected("hot-loop,nope")


def test_every_sensitivity_configuration_is_a_valid_driver_command_line(monkeypatch):
    for name in list(os.environ):
        if name.startswith(settings.ENV_PREFIX):
            monkeypatch.delenv(name)
    assert sensitivity.CONFIGS["default"].flags == ()
    for name, config in sensitivity.CONFIGS.items():
        args = settings.build_parser("").parse_args(["--servers", common.CORE, *config.flags])
        s = settings.resolve(args)  # the driver's own checks (a segment a multiple of 2 x the run length, ...)
        flags = [f[2:].replace("-", "_") for f in config.flags if f.startswith("--")]
        assert all(s.sources[f] == "flag" for f in flags), name
        assert config.injector in (None, "stall", "drift"), name
    assert settings.resolve(settings.build_parser("").parse_args(
        ["--servers", common.CORE, *sensitivity.CONFIGS["hot-loop"].flags])).run_length == 16384


def test_sensitivity_from_a_folder_of_runs(tmp_path, capsys):
    root = tmp_path / "sensitivity-x"
    make_paired_run(root / "01-default", DEFAULT_PAIRS)
    make_paired_run(root / "02-settle-cpu", VARIANT_PAIRS)
    # The default again, undertow's ratios 1.36 +- 0.025 this time.
    make_paired_run(root / "03-default", {**DEFAULT_PAIRS,
                                          "undertow": [(20_000, 27_200), (20_000, 27_700), (20_000, 26_700)]})
    (root / "04-segments-4").mkdir()  # a run that never started
    assert bench_main(["sensitivity", "--from", str(root)]) == 0
    data = json.loads((root / "sensitivity.json").read_text())
    settle = data["configurations"]["settle-cpu"]
    assert settle["flags"] == ["--settle", "cpu"] and settle["runs"] == ["02-settle-cpu"]
    assert settle["compared_with"] == ["01-default", "03-default"]
    u = settle["servers"]["undertow"]
    # The default's pairs of both runs together: 1.35 and 1.36 on average -> 1.355; the change 1.40 - 1.355.
    assert u["default_pairs"] == 6 and u["default_runs"] == 2 and u["default_ratio"] == pytest.approx(1.355)
    assert u["change_pct"] == pytest.approx(100 * (1.40 / 1.355 - 1)) and u["prior"] == "shipped"
    assert data["comparisons"] == 2 and u["level"] == pytest.approx(0.975)
    assert data["left_out"] == ["04-segments-4 (0 run directories in it)"]
    # The default across its runs: undertow 1.35 then 1.36 (spread 0.01, 0.74% of 1.355); the last minus the first,
    # +0.74%, judged by runs as every comparison.
    spread = data["default_spread"]["undertow"]
    assert spread["ratios"] == [pytest.approx(1.35), pytest.approx(1.36)]
    assert spread["spread_pct"] == pytest.approx(0.738, abs=1e-3)
    assert spread["last_minus_first"]["change_pct"] == pytest.approx(0.7407, abs=1e-3)
    page = (root / "sensitivity.md").read_text()
    assert "## The default across its runs" in page and "## settle-cpu" in page
    assert "| undertow | 1.3550 | 1.4000 | 2 / 1 | +3.32% |" in page
    assert "corrected for the page's 2 comparisons" in page


def test_sensitivity_refuses_a_driver_option_that_a_configuration_varies(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(common, "run_driver", _no_driver)
    with pytest.raises(SystemExit, match="run-length-1024 varies --run-length"):
        bench_main(["sensitivity", "--only", "run-length-1024", "--run-length=512", "--results-dir", str(tmp_path)])
    with pytest.raises(SystemExit, match="unknown configuration"):
        bench_main(["sensitivity", "--only", "wind", "--results-dir", str(tmp_path)])
    assert not list(tmp_path.iterdir())  # nothing measured, no folder made
    assert bench_main(["sensitivity", "--list"]) == 0
    assert "hot-loop" in capsys.readouterr().out


def _cov(runs, **servers):
    """A coverage dict as coverage.coverage gives it, each server given as (band, control, met rows, met held, runs
    covered, runs)."""
    out = {}
    for name, (band, control, met, held, covered, of) in servers.items():
        m = {"covered": covered, "of": of}
        out[name] = {"band": band, "control": control, "met": {"rows": met, "covered": held}, "ratio": m, "diff": m}
    overall = {m: {"covered": sum(s[m]["covered"] for s in out.values()), "of": sum(s[m]["of"] for s in out.values())}
               for m in coverage.MEASURES}
    for band in ("narrow", "wide"):
        rows = sum(s["met"]["rows"] for s in out.values() if s["band"] == band)
        held = sum(s["met"]["covered"] for s in out.values() if s["band"] == band)
        overall[f"met {band}"] = {"covered": held, "of": rows, "share": held / rows if rows else None}
    for m in coverage.MEASURES:
        overall[m]["share"] = overall[m]["covered"] / overall[m]["of"]
    return {"runs": runs, "servers": out, "overall": overall}


def test_the_verdicts_are_the_targets_of_met_rows_and_of_controls():
    cov = _cov(10, rapidoid=("wide", False, 4, 2, 8, 10), helidon=("wide", False, 6, 6, 10, 10),
               undertow=("narrow", False, 10, 10, 10, 10), **{"control-modes": ("wide", True, 3, 3, 8, 10)})
    lines = coverage.verdicts(cov)
    # Wide: 11 of 13 met rows held (84.6%), 5.4 points short of 90%; 13 of the 30 wide rows met.
    assert ("Met rows of the wide servers (pair sd at least their target): 11 of 13 hold the truth, 84.6%; target at "
            "least 90%: missed by 5.4 percentage points. 13 of their 30 rows met their target") in lines[0]
    assert lines[1] == "Each wide server's met rows, at least 75%: missed for rapidoid (2 of 4)."
    assert lines[2] == "All met rows: 21 of 23 hold the truth; target at least 93%: missed by 1.7 percentage points."
    assert lines[3].startswith("Control control-modes: its interval holds its known truth in 8 of 10 runs; target at "
                               "least 90%: missed by 10.0")
    assert lines[4].endswith("36 of 40 (server, run) intervals hold their truth; target at least 90%: met.")
    # With every target held, and too few runs said first.
    cov = _cov(3, helidon=("wide", False, 3, 3, 3, 3), **{"control-spin": ("narrow", True, 3, 3, 3, 3)})
    lines = coverage.verdicts(cov)
    assert lines[0].startswith("Only 3 runs")
    assert all(": met" in x for x in lines[1:]) and not any("missed" in x for x in lines)
