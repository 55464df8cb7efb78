"""The result model, reports and compare on paired runs whose every value is chosen here.

Expected values are worked out by hand in the comments (t quantiles from a t table).
"""

import json

import pytest
from runs import SEGMENT, make_paired_run

from latency_diff.analysis import analyze, evaluate
from latency_diff.analysis.export import sentences, tables, terminal

T2 = 4.302653  # Student t, 97.5%, 2 degrees of freedom
T4 = 2.776445  # ... 4 degrees of freedom


def server(r, name):
    return next(s for s in r.servers if s.name == name)


def texts(ws):
    return [w.text for w in ws]


def test_diff_is_the_mean_of_pair_estimates_with_a_t_interval(tmp_path):
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000), (20_000, 28_500), (20_000, 26_500)]})
    r = evaluate.build(run)
    u = server(r, "undertow")
    # Every pair's dummy takes 20,000 ns, so the reference is 20,000 and scaling changes nothing: ratios 1.35,
    # 1.425, 1.325 -> 7,000, 8,500, 6,500; mean 7,333.33, sd sqrt((333.33^2 + 1166.67^2 + 833.33^2) / 2) = 1040.83;
    # half-width 4.302653 * 1040.83 / sqrt(3) = 2,585.5.
    assert r.ref == {"lean": 20_000.0}
    assert u.clients["lean"].estimates == pytest.approx([7000.0, 8500.0, 6500.0])
    assert u.diff.mean == pytest.approx(7333.333, abs=1e-3)
    assert u.diff.half_width == pytest.approx(T2 * 1040.833 / 3 ** 0.5, abs=0.05)
    assert u.clients["lean"].ratio.mean == pytest.approx((1.35 + 1.425 + 1.325) / 3)
    # Target: max(500, 5% of 7,333 = 366.7) = 500; 2,585 > 500: missed, with the between-process spread named.
    assert u.target == 500.0 and u.target_met is False
    assert any("precision target missed: ±2.59 us after 3 pairs (target ±0.50 us)" in w for w in texts(u.warnings))
    base = r.baseline
    assert base.valid and base.clients["lean"].rtt.mean == 20_000.0 and base.diff.mean == 0.0


def test_a_machine_that_runs_slower_for_a_while_does_not_move_the_scaled_diff(tmp_path):
    # The same server on a machine 10% slower in pair 2 and 10% faster in pair 3: everything multiplies, the dummy
    # too (22,000 / 29,700 and 18,000 / 24,300), so every ratio is 1.35. The reference round trip is the median of
    # the pairs' dummies (18,000, 20,000, 22,000) = 20,000, and every scaled diff 0.35 * 20,000 = 7,000: no spread
    # left. Unscaled, the diffs are 7,000, 7,700, 6,300: sd 700, half-width 4.302653 * 700 / sqrt(3) = 1,738.95.
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000), (22_000, 29_700), (18_000, 24_300)]})
    r = evaluate.build(run)
    u = server(r, "undertow")
    c = u.clients["lean"]
    assert r.ref["lean"] == 20_000.0
    assert c.estimates == pytest.approx([7000.0, 7000.0, 7000.0])
    # Identical pairs: no spread of their own, so the interval is the fixed width of the 0.5 us target,
    # 500 / 20,000 = 0.025 in ratio.
    assert u.diff.mean == pytest.approx(7000.0) and c.ratio.half_width == pytest.approx(0.025)
    assert c.sd_bound == "target"
    # The microsecond interval is the ratio's at the reference, 500 ns; how the host's speed moved (the dummies' sd
    # 2,000 is 10% of 20,000; 18,000 to 22,000) is said once for the run, not added to the row.
    assert u.diff.half_width == pytest.approx(500.0)
    assert r.host_speed == {"client": "lean", "pairs": 3, "low_ns": 18_000.0, "ref_ns": 20_000.0, "high_ns": 22_000.0,
                            "rel_sd": pytest.approx(0.1)}
    assert sentences.host_speed_line(r) == ("Host speed: the dummy's round trip over the run's 3 pairs ranged 18.00 to "
                                         "22.00 us (sd 10.0%); every row is a ratio to its own pair's dummy, shown in "
                                         "us at the median, 20.00 us. Compare other runs and hosts by ratio.")
    assert u.target_met is True
    assert c.unscaled_estimates == pytest.approx([7000.0, 7700.0, 6300.0])
    assert c.unscaled_diff.half_width == pytest.approx(T2 * 700 / 3 ** 0.5, abs=0.01)
    # The run's scaling line: all of the between-pair variance removed.
    assert r.scaling.servers == 1 and r.scaling.removed == pytest.approx(1.0) and r.scaling.median_sd_ratio == 0.0
    assert any("removed 100% of the between-pair variance" in c for c in sentences.checks(r))
    assert u.scaling_agrees is True


def test_the_reference_is_the_median_over_every_pair_of_the_run(tmp_path):
    # Dummies of 10,000, 20,000 (floor) and 30,000, 40,000, 50,000 (undertow): the reference is 30,000 whichever
    # server a pair belongs to. The floor's ratio 0.9 -> -3,000 at the reference; undertow's 1.2 -> 6,000.
    run = make_paired_run(tmp_path, {"floor": [(10_000, 9_000), (20_000, 18_000)],
                                     "undertow": [(30_000, 36_000), (40_000, 48_000), (50_000, 60_000)]})
    r = evaluate.build(run)
    assert r.ref["lean"] == 30_000.0
    assert server(r, "floor").diff.mean == pytest.approx(-3000.0)
    assert server(r, "undertow").diff.mean == pytest.approx(6000.0)


def test_a_stall_moves_the_plain_mean_not_the_headline(tmp_path):
    stalled = {"segments": [(20_000, 27_000), (20_000, 27_000)], "stall": 50_000_000}
    run = make_paired_run(tmp_path, {"undertow": [stalled, (20_000, 27_000), (20_000, 27_000)]})
    u = server(evaluate.build(run), "undertow")
    assert u.clients["lean"].estimates == pytest.approx([7000.0, 7000.0, 7000.0])  # the trimmed mean cuts it
    # Plain: the stalled segment's server side is (1,999 * 27,000 + 50,000,000) / 2,000 = 51,986.5; its diff
    # 31,986.5; the pair's median of (31,986.5, 7,000) = 19,493.25; the mean over pairs (19,493.25 + 14,000) / 3.
    assert (SEGMENT, u.clients["lean"].plain_diff.mean) == (2000, pytest.approx((19_493.25 + 14_000) / 3))
    assert u.target_met is True


def test_precision_split_between_and_within_pairs(tmp_path):
    run = make_paired_run(tmp_path, {"jetty": [{"segments": [(20_000, 50_000), (20_000, 52_000)]},
                                               {"segments": [(20_000, 55_000), (20_000, 57_000)]}]})
    c = server(evaluate.build(run), "jetty").clients["lean"]
    # Units 30,000, 32,000 | 35,000, 37,000 (reference 20,000: scaled = unscaled): within-pair variance
    # (2 * 1,000^2 + 2 * 1,000^2) / 2 = 2,000,000; estimates 31,000 and 36,000, variance 12,500,000; between =
    # 12,500,000 - (pi / 2) * 2,000,000 / 2.
    assert c.within_sd == pytest.approx(2_000_000 ** 0.5)
    assert c.between_sd == pytest.approx((12_500_000 - 3.14159265 / 2 * 1_000_000) ** 0.5, rel=1e-6)
    assert c.units == [2, 2]


def test_a_bad_block_makes_the_server_invalid_naming_the_pair(tmp_path):
    bad = {"segments": [(20_000, 27_000), (20_000, 27_000)], "non_2xx": 3}
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000), bad], "x": ["failed:start:no READY within 60 s"]})
    r = evaluate.build(run)
    u, x = sorted(r.invalid, key=lambda s: s.name)
    assert u.reason == "pair 2: lean client: 3 non-2xx responses from the server"
    assert x.reason == "pair 1, start: no READY within 60 s"
    assert "Invalid (left out of the comparison):\n  undertow: pair 2:" in terminal.render(r)


def test_the_null_pair_must_contain_zero(tmp_path):
    ok = make_paired_run(tmp_path / "a", {"null": [(20_000, 20_100), (20_000, 19_900), (20_000, 20_000)]})
    assert not [w for w in texts(evaluate.build(ok).warnings) if "null pair" in w]
    assert "contains 0, as it must" in terminal.render(evaluate.build(ok))
    biased = make_paired_run(tmp_path / "b", {"null": [(20_000, 21_000), (20_000, 21_100), (20_000, 20_900)]})
    (w,) = [w for w in texts(evaluate.build(biased).warnings) if "null pair" in w]
    assert w.startswith("the null pair (dummy against a second dummy process) shows a difference: 1.00 us")


def test_the_floor_over_the_dummy_must_hold_steady(tmp_path):
    # Ratios 0.9, 0.9, 0.9: steady. Then 0.9, 0.95, 0.85: sd 0.05 over a mean of 0.9, 5.6% > 1%: flagged.
    steady = make_paired_run(tmp_path / "a", {"floor": [(20_000, 18_000)] * 3})
    r = evaluate.build(steady)
    assert "floor over dummy: ratio 0.900, relative sd 0.0% over 3 pairs: steady, as it must be" in sentences.checks(r)
    moving = make_paired_run(tmp_path / "b", {"floor": [(20_000, 18_000), (20_000, 19_000), (20_000, 17_000)]})
    (w,) = [w for w in texts(evaluate.build(moving).warnings) if "floor" in w]
    assert w.startswith("the floor's round trip over the dummy's varies from pair to pair (ratio 0.900, relative sd "
                        "5.6%, more than 1.0%)")


def test_cpu_cross_check_and_costs(tmp_path):
    # Server 200 + 50 ticks (5 of them the JIT threads'), baseline 100 + 50, at 100 ticks a second over 1,000
    # requests: 2.5 ms (0.05 ms JIT) and 1.5 ms a request; the CPU diff without the JIT, 2.45 - 1.5 = 0.95 ms
    # (the dummy at the reference round trip: scaled by 1), is far from the latency diff (7,000 ns): flagged.
    pairs = [{"segments": [(20_000, 27_000)] * 2, "cpu": ((200, 50, 5), (100, 50)),
              "jvm": {"allocated_bytes": 2_000_000, "gc_count": 1, "gc_time_ms": 3, "compile_time_ms": 0}}] * 3
    u = server(evaluate.build(make_paired_run(tmp_path, {"undertow": pairs})), "undertow")
    assert u.cpu.mean == pytest.approx(2_500_000.0) and u.cpu_diff.mean == pytest.approx(950_000.0)
    assert u.cpu_ratio.mean == pytest.approx(2.45 / 1.5)
    assert u.alloc.mean == pytest.approx(2000.0) and u.gc_count.mean == 1
    assert any("the CPU-time diff (950.00 us per request" in w for w in texts(u.warnings))
    # 5 ticks = 50 ms of JIT in 1 s of measuring: 5%, under the 10% a warning needs (it does not move the diff).
    assert not any("JIT compiler threads" in w for w in texts(u.warnings))
    pairs = [{**pairs[0], "cpu": ((200, 50, 11), (100, 50))}] * 3  # 110 ms in 1 s: 11%
    u = server(evaluate.build(make_paired_run(tmp_path / "jit", {"undertow": pairs})), "undertow")
    assert any("JIT compiler threads used 110 ms of CPU during 1.0 s of measuring (over 10%)" in w
               for w in texts(u.warnings))


def test_the_cpu_diff_is_scaled_like_the_latency_diff(tmp_path):
    # Pair 2's dummy takes 40,000 ns against the run's reference 20,000 (the median of 20,000, 20,000, 40,000): the
    # machine ran at half speed, so its CPU diff of 0.95 ms counts as 0.475 ms; the mean (0.95 * 2 + 0.475) / 3.
    pairs = [{"segments": [(20_000, 27_000)] * 2, "cpu": ((200, 50, 5), (100, 50))}] * 2
    pairs.insert(1, {"segments": [(40_000, 54_000)] * 2, "cpu": ((200, 50, 5), (100, 50))})
    u = server(evaluate.build(make_paired_run(tmp_path, {"undertow": pairs})), "undertow")
    assert u.cpu_diff.mean == pytest.approx((950_000 * 2 + 475_000) / 3)


def test_cpu_cross_check_names_a_tail_the_trimmed_mean_leaves_out(tmp_path):
    # As above (a CPU diff of 950 us against a latency diff of 7 us), but one request in each server segment takes
    # 1,886,027,000 ns: the side's plain mean is (1,999 x 27,000 + 1,886,027,000) / 2,000 = 970,000 ns, so the
    # plain-mean diff is 950 us, the CPU diff's; the 1% trimmed mean cuts that request.
    pair = {"segments": [(20_000, 27_000)] * 2, "cpu": ((200, 50, 5), (100, 50)), "stall": 1_886_027_000,
            "stall_every_server_segment": True}
    u = server(evaluate.build(make_paired_run(tmp_path, {"undertow": [pair] * 3})), "undertow")
    assert u.diff.mean == pytest.approx(7000.0) and u.clients["lean"].plain_diff.mean == pytest.approx(950_000.0)
    (w,) = [w for w in texts(u.warnings) if "CPU-time diff" in w]
    assert w.startswith("the CPU-time diff (950.00 us per request, /proc) is far from the latency diff (7.00 us) but "
                        "near the plain-mean diff (950.00 us): the server spends it in rare slow requests")


def test_two_clients_and_their_agreement(tmp_path):
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000), (20_000, 27_500), (20_000, 26_500)]},
                          clients=("lean", "ab"),
                          ab_rtt={"undertow": [(30_000, 37_100), (30_000, 37_600), (30_000, 36_600)]})
    r = evaluate.build(run)
    u = server(r, "undertow")
    # lean: 7,000, 7,500, 6,500 -> 7,000 +- 4.302653 * 500 / sqrt(3); ab (its reference 30,000): 7,100, 7,600,
    # 6,600 -> 7,100, same width (ab's round trips pass through 1e9 / rps with 2 decimals: close, not exact).
    assert r.ref["ab"] == pytest.approx(30_000.0, abs=0.5)
    assert u.clients["ab"].diff.mean == pytest.approx(7100.0, abs=0.5)
    assert u.clients_agree is True
    t = tables.client_table(r)
    assert t[1][0][:6] == ["undertow", "7.00", "[5.76, 8.24]", "7.10", "[5.86, 8.34]", "yes"]


@pytest.mark.parametrize("stall, reading", [
    (None, "ab leaves more time between requests"),
    # The last request of every server segment of 2,000 takes 26.02 ms instead of 27 us: (26,020,000 - 27,000) / 2,000
    # = +12,996.5 ns on the plain mean (7.00 -> 20.00 us), nothing on the 1%-trimmed one.
    (26_020_000, "the lean client's plain mean (20.00 us) agrees with ab, so the gap is rare slow requests"),
])
def test_clients_that_disagree_are_explained_by_the_plain_mean_when_it_sides_with_ab(tmp_path, stall, reading):
    # lean: 7,000 +- 100 a pair; ab: 20,000 +- 100 (intervals apart).
    spec = [{"segments": [(20_000, 27_000 + d)] * 2,
             **({"stall": stall + d, "stall_every_server_segment": True} if stall else {})} for d in (-100, 0, 100)]
    run = make_paired_run(tmp_path, {"undertow": spec}, clients=("lean", "ab"),
                          ab_rtt={"undertow": [(30_000, 49_900), (30_000, 50_000), (30_000, 50_100)]})
    u = server(evaluate.build(run), "undertow")
    assert u.clients_agree is False and u.diff.mean == pytest.approx(7_000, abs=1)
    (text,) = [x for x in texts(u.warnings) if "disagree on the diff" in x]
    assert text.startswith("ab and the lean client disagree on the diff (20.00 against 7.00 us, intervals apart): ")
    assert reading in text


def test_frameworks_show_what_they_add_over_their_server(tmp_path):
    run = make_paired_run(tmp_path, {"netty": [(20_000, 25_000), (20_000, 25_500), (20_000, 24_500)],
                                     "spring": [(20_000, 45_000), (20_000, 46_000), (20_000, 44_000)]},
                          meta={"spring": {"runs_on": "netty"}})
    (cols, rows, _) = tables.framework_table(evaluate.build(run))
    assert rows[0][:5] == ["spring", "netty", "25.00", "5.00", "20.00"]


@pytest.mark.parametrize("fmt, message", [("latency-diff/run/2", "single-server design"),
                                          ("latency-diff/run/3", "fe56ca45:latency_diff/migrate.py converted those")])
def test_old_format_runs_are_refused_with_a_reason(tmp_path, fmt, message):
    run = tmp_path / "old"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"format": fmt, "status": "complete", "settings": {}}))
    with pytest.raises(evaluate.AnalysisError, match=message.replace("(", r"\(")):
        evaluate.build(run)


def _rewrite_blocks(run, change):
    import lzma
    lines = [json.loads(x) for x in lzma.open(run / "blocks.jsonl.xz", "rt").read().splitlines()]
    change(lines)
    (run / "blocks.jsonl.xz").write_bytes(lzma.compress("".join(json.dumps(x) + "\n" for x in lines).encode()))


@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "run.json").unlink(), "run.json: missing"),
    (lambda run: (run / "run.json").write_text("{"), "run.json: not valid JSON"),
    (lambda run: (run / "pairs.jsonl").write_text('{"server": "undertow"}\n'), "line 1: missing field 'pair'"),
    (lambda run: (run / "pairs.jsonl").write_text('{"server": "undertow", "pair": 1, "status": "done"}\n'),
     "status 'done' is not one of"),
    (lambda run: (run / "blocks.jsonl.xz").unlink(), "undertow pair 1: measured but no blocks"),
    (lambda run: _rewrite_blocks(run, lambda ls: ls[0]["output"].update(format="x")), "field 'format' is not"),
    (lambda run: _rewrite_blocks(run, lambda ls: ls[0]["output"]["segments"][1]["b"].update(count=3)),
     "segment 2 side b: 3 round trips, the segment is 2000"),
    (lambda run: _rewrite_blocks(run, lambda ls: ls[0].pop("client")), "missing field 'client'"),
])
def test_broken_run_directories_are_clear_errors(tmp_path, damage, message):
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000)]})
    damage(run)
    with pytest.raises(evaluate.AnalysisError, match=message.replace("(", r"\(").replace(")", r"\)")):
        evaluate.build(run)


def test_a_record_cut_short_by_a_stop_is_left_out_with_a_warning(tmp_path):
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000)] * 3})
    with (run / "pairs.jsonl").open("a") as f:
        f.write('{"server": "undertow", "pair": 4, "sta')
    r = evaluate.build(run)
    assert server(r, "undertow").diff.n == 3
    assert "pairs.jsonl: its last line is cut short (the run stopped while writing it); left out" in texts(r.warnings)


def test_outputs_carry_the_required_fields(tmp_path):
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000), (20_000, 27_500), (20_000, 26_500)],
                                     "vertx": [(20_000, 26_000), (20_000, 26_500), (20_000, 25_500)]})
    assert analyze.main([str(run), "--quiet"]) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["format"] == "latency-diff/summary/4" and summary["ref_ns"] == {"lean": 20_000.0}
    u = next(s for s in summary["servers"] if s["name"] == "undertow")
    assert u["diff_ns"]["mean"] == pytest.approx(7000.0) and u["target_met"] is False and u["target_ns"] == 500.0
    assert u["clients"]["lean"]["unscaled_diff_ns"]["mean"] == pytest.approx(7000.0)
    assert u["clients"]["lean"]["ratio"]["mean"] == pytest.approx(1.35)
    assert u["pairs"][0]["clients"]["lean"] == {"diff_ns": pytest.approx(7000.0), "ratio": 1.35,
                                                "unscaled_diff_ns": 7000.0, "base_rtt_ns": 20000.0,
                                                "server_rtt_ns": 27000.0, "units": 2}
    assert u["pairs"][0]["seconds_s"] == {"wait": 10.0, "measure": 10.0, "total": 20.0}
    assert u["measure_share"] == 0.5 and summary["measure_share"] == 0.5
    # vertx (6,000 +- 500) and undertow (7,000 +- 500): Welch t = 1,000 / sqrt(2 * 500^2 / 3) = 2.45 < 2.78 (df 4).
    assert u["differs_from_previous"] is False
    csv_lines = (run / "summary.csv").read_text().splitlines()
    assert csv_lines[0].startswith("name,valid,reason,ladder,threading,http")
    assert csv_lines[3].startswith("undertow,True,,False,blocking,1.0,,,,lean,3,7000.0,")
    md = (run / "report.md").read_text()
    for text in ("| undertow |", "## Precision reached", "## The study's figures and the tail",
                 "![Diffs with their 95% intervals](diffs.png)", "| 1.350 |"):
        assert text in md, text
    # A run is a few files (this one has no server logs).
    assert sorted(p.name for p in run.iterdir()) == [
        "blocks.jsonl.xz", "diffs.png", "pairs.jsonl", "percentiles.png", "report.html", "report.md", "run.json",
        "summary.csv", "summary.json"]


def test_an_incomplete_run_is_reported_and_exits_3(tmp_path, capsys):
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000)], "jetty": []}, status="incomplete")
    assert analyze.main([str(run)]) == 3
    out = capsys.readouterr().out
    assert "jetty: not measured (the run was interrupted)" in out
    assert "the run is incomplete" in out


def test_plots_are_valid_non_empty_images(tmp_path):
    import xml.etree.ElementTree as ET

    from latency_diff.analysis.export import plots
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000), (20_000, 27_500), (20_000, 26_500)],
                                     "floor": [(20_000, 18_000)] * 3})
    assert analyze.main([str(run), "--quiet"]) == 0
    r = evaluate.build(run)
    for stem in ("diffs", "percentiles"):
        png = (run / f"{stem}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
        width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
        assert width > 300 and height > 150
        svg = ET.fromstring(plots.svg(r, stem))
        assert svg.tag.endswith("svg") and len(list(svg.iter())) > 50
    assert "undertow" in plots.svg(r, "diffs")


def _compare_rows(a_pairs, b_pairs, tmp_path):
    a = evaluate.build(make_paired_run(tmp_path / "a", {"undertow": a_pairs}))
    b = evaluate.build(make_paired_run(tmp_path / "b", {"undertow": b_pairs}))
    (_, rows, _), notes = analyze.compare(a, b)
    return rows, notes


def test_compare_within_noise_is_not_significant(tmp_path):
    # Both references 20,000. Ratios A: 1.35, 1.40, 1.30 (mean 1.35, sd 0.05); B: 1.36, 1.41, 1.31.
    # Change 0.01, se sqrt(2 * 0.05^2 / 3) = 0.040825, df 4: half-width 2.776445 * 0.040825 = 0.113347
    # -> [-0.1033, 0.1233]; at 20,000 ns: +0.20 us [-2.07, 2.47]. (More tests in test_compare.py.)
    rows, notes = _compare_rows([(20_000, 27_000), (20_000, 28_000), (20_000, 26_000)],
                                [(20_000, 27_200), (20_000, 28_200), (20_000, 26_200)], tmp_path)
    assert notes == ["reference baseline round trip (lean client): 20.00 us in A, 20.00 us in B; every [us] column is "
                     "at A's (20.00 us), B's diffs rescaled to it"]
    assert rows == [["undertow", "lean", "1.3500", "1.3600", "+0.0100", "[-0.1033, 0.1233]", "7.00", "7.20", "+0.20",
                     "[-2.07, 2.47]", "+3%", "not significant"]]


def test_compare_names_a_real_change(tmp_path):
    # Ratios A: 1.345, 1.35, 1.355; B: 1.445, 1.45, 1.455 (own sd 0.005 each). Each row's sd is the fixed width of
    # its target (7.00 and 9.00 us: max(0.5 us, 5%) = 0.5 us, 0.025 in ratio at 20,000 ns): 0.025 x sqrt(3) /
    # 4.302653 = 0.0100637. Change 0.1, se 0.0100637 x sqrt(2 / 3) = 0.0082170, df 4: half-width 2.776445 x
    # 0.0082170 = 0.022814 -> [0.0772, 0.1228]; at 20,000 ns: +2.00 us [1.54, 2.46]: slower.
    rows, _ = _compare_rows([(20_000, 26_900), (20_000, 27_000), (20_000, 27_100)],
                            [(20_000, 28_900), (20_000, 29_000), (20_000, 29_100)], tmp_path)
    assert rows == [["undertow", "lean", "1.3500", "1.4500", "+0.1000", "[0.0772, 0.1228]", "7.00", "9.00", "+2.00",
                     "[1.54, 2.46]", "+29%", "slower"]]


def test_head_to_head_measures_b_against_a_and_each_against_the_dummy(tmp_path):
    # --compare a b: a in the dummy's place. Every base (a) takes 50,000 ns, so the reference is 50,000 and
    # scaling changes nothing. B - A: ratios 1.06, 1.064, 1.056 -> 3,000, 3,200, 2,800; mean 3,000, sd 200,
    # half-width 4.302653 * 200 / sqrt(3) = 496.8, widened to the 0.5 us target's fixed width (its sd floor
    # 500 x sqrt(3) / 4.302653 = 201.27) -> [2.50, 3.50]; mean ratio 1.060.
    # The dummy against a: -5,000, -4,900, -5,100 (sd 100), so A - dummy = 5,000, half-width 248.4, widened to the
    # target's fixed 500 -> [4.50, 5.50]; ratio 1 / 0.9 = 1.111. B - dummy: 3,000 - (-5,000) = 8,000; Welch with
    # both sds at their floor 201.27: se 201.27 x sqrt(2 / 3) = 164.34, df 4, t 2.776445 -> ±456.3 -> [7.54, 8.46].
    run = make_paired_run(tmp_path, {"b": [(50_000, 53_000), (50_000, 53_200), (50_000, 52_800)],
                                     "dummy": [(50_000, 45_000), (50_000, 45_100), (50_000, 44_900)]},
                          baseline="a", settings={"compare": ["a", "b"]})
    r = evaluate.build(run)
    assert r.baseline.name == "a" and server(r, "dummy").reference
    cols, rows, _ = tables.head_to_head_table(r)
    assert cols == ("difference", "[us]", "95% CI [us]", "ratio", "pairs", "verdict")
    assert rows == [["B - A (b - a)", "3.00", "[2.50, 3.50]", "1.060", "3", "B slower"],
                    ["A - dummy (a)", "5.00", "[4.50, 5.50]", "1.111", "3", "-"],
                    ["B - dummy (b)", "8.00", "[7.54, 8.46]", "-", "-", "-"]]
    assert "process pairs against a," in sentences.headline(r)


def test_head_to_head_within_noise_is_not_significant(tmp_path):
    # B - A: 1,000, -1,000, 300 -> mean 100, sd 1,014.9, half-width 2,521 -> [-2.42, 2.62]: holds 0.
    run = make_paired_run(tmp_path, {"b": [(50_000, 51_000), (50_000, 49_000), (50_000, 50_300)]},
                          baseline="a", settings={"compare": ["a", "b"]})
    _, rows, _ = tables.head_to_head_table(evaluate.build(run))
    assert rows == [["B - A (b - a)", "0.10", "[-2.42, 2.62]", "1.002", "3", "not significant"]]


def test_compare_from_the_command_line_and_old_runs(tmp_path, capsys):
    a = make_paired_run(tmp_path / "a", {"undertow": [(20_000, 27_000)] * 3})
    assert analyze.main(["compare", str(a), str(a)]) == 0
    assert "change 95% CI [us]" in capsys.readouterr().out
    old = tmp_path / "old"
    old.mkdir()
    (old / "run.json").write_text(json.dumps({"format": "latency-diff/run/2", "status": "complete", "settings": {}}))
    assert analyze.main(["compare", str(old), str(a)]) == 1
    assert "single-server design" in capsys.readouterr().err


def test_a_pair_far_from_the_others_is_named_and_kept(tmp_path):
    pairs = [(20_000, 27_000)] * 4 + [(20_000, 27_500)] * 2 + [(20_000, 47_000)]
    j = server(evaluate.build(make_paired_run(tmp_path, {"jetty": pairs})), "jetty")
    # Estimates 7,000 x4, 7,500 x2, 27,000: median 7,000, MAD 0; mean absolute deviation
    # (2 * 500 + 20,000) / 7 = 3,000, score 20,000 / (1.253314 * 3,000) = 5.3 > 3.5.
    assert j.diff.n == 7 and j.diff.mean == pytest.approx((4 * 7000 + 2 * 7500 + 27_000) / 7)
    assert [w for w in texts(j.warnings) if "outlier" in w] == [
        "process pair 7 is an outlier (27.00 us against a median of 7.00 us over 7 pairs): one JVM compiled or laid "
        "out differently, or the machine changed; its pair is kept, so the interval shows it"]


def test_an_outlier_is_a_finding_listed_apart_from_the_warnings(tmp_path):
    from latency_diff.analysis.export import markdown, summary_json
    pairs = [(20_000, 27_000)] * 4 + [(20_000, 27_500)] * 2 + [(20_000, 47_000)]
    r = evaluate.build(make_paired_run(tmp_path, {"jetty": pairs}))
    line = ("jetty: process pair 7 is an outlier (27.00 us against a median of 7.00 us over 7 pairs): one JVM compiled "
            "or laid out differently, or the machine changed; its pair is kept, so the interval shows it")
    assert line in sentences.findings(r) and line not in sentences.all_warnings(r)
    report = markdown.render(r)
    assert report.count(line) == 1 and report.index("## Findings") < report.index(line) < report.index("## Setup")
    summary = json.loads(summary_json.render(r))
    assert line in summary["findings"] and line not in summary["warnings"]
    assert "Findings (" in terminal.render(r)


def test_the_readmes_run_warns_only_where_a_reader_should_act():
    # The README's run (a default run of every server on a quiet machine): each warning names its action, and the
    # findings are apart (20261127T193534Z: 6 warnings, 15 findings; before findings were told apart, the README's run
    # of 15:50 had 18 warnings).
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    run = re.search(r"<!-- results: (results/\S+) (?:main|brief) -->", (root / "README.md").read_text()).group(1)
    r = evaluate.build(root / run)
    warnings, found = sentences.all_warnings(r), sentences.findings(r)
    actions = ("give it more --budget", "use more --warmup", "compare such servers at several run lengths",
               "compare it by ratio within this run")
    assert warnings and all(any(a in w for a in actions) for w in warnings), warnings
    assert len(warnings) <= 10 and found


def test_a_pair_close_to_tight_others_is_not_an_outlier(tmp_path):
    # 7,000 x4 and 7,200: far by the MAD rule, but 200 ns is under half the 0.5 us precision floor.
    pairs = [(20_000, 27_000)] * 4 + [(20_000, 27_200)]
    j = server(evaluate.build(make_paired_run(tmp_path, {"jetty": pairs})), "jetty")
    assert not [w for w in texts(j.warnings) if "outlier" in w]


def test_compare_says_whether_a_second_run_reproduces_the_first(tmp_path):
    def run(folder, u, j, v):
        return evaluate.build(make_paired_run(tmp_path / folder, {"undertow": [(20_000, 20_000 + x) for x in u],
                                                                  "jetty": [(20_000, 20_000 + x) for x in j],
                                                                  "vertx": [(20_000, 20_000 + x) for x in v]}))
    a = run("a", (7000, 7500, 7500), (30_000, 30_500, 30_500), (5000, 5000, 5000))
    b = run("b", (7000, 7500, 7500), (40_000, 40_500, 40_500), (9000, 9000, 9000))
    assert analyze.agreement(a, b) == [
        "ratio intervals overlap for 1 of 3 servers (not: vertx, jetty)",
        "ranking: 2 pairs of servers are apart in both runs and rank the same, 1 rank the other way round "
        "(vertx/undertow); 0 pairs are apart in one run only"]
    assert analyze.agreement(a, a)[0] == "ratio intervals overlap for 3 of 3 servers"


@pytest.mark.parametrize("settings, cold", [  # 2 segments of 2,000: 4,000 measured requests per process
    ({"warmup": 1_000, "settle": "none"}, True),  # as the quick profile: no wait for the JIT
    ({"warmup": 100_000, "settle": "queue"}, False),  # the default
    ({"warmup": 1_000, "settle": "cpu"}, False),  # waited for the JIT
    ({"warmup": 96_000, "settle": "none"}, False),  # 100,000 requests: as warm as the default
])
def test_a_smoke_run_says_on_every_output_that_it_is_not_for_comparing(tmp_path, settings, cold):
    pairs = [{"segments": [(20_000, 27_000)] * 2, "cpu": ((200, 50, 5), (100, 50))}] * 3
    run = make_paired_run(tmp_path, {"undertow": pairs}, settings=settings)
    assert analyze.main([str(run), "--quiet"]) == 0
    r = evaluate.build(run)
    outputs = {"report.md": (run / "report.md").read_text(), "report.html": (run / "report.html").read_text(),
               "table": terminal.render(r),
               "summary.json": json.loads((run / "summary.json").read_text())["caveat"] or ""}
    for name, text in outputs.items():
        assert ("smoke run: each JVM served 1,000 warm-up requests" in text) is cold, name
    assert any("CPU-time diff" in w for w in texts(server(r, "undertow").warnings)) is not cold


def test_a_warning_that_several_servers_share_is_one_line(tmp_path):
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000)], "jetty": [(20_000, 40_000)],
                                     "vertx": [(20_000, 21_000), (20_000, 28_000), (20_000, 24_000)]})
    lines = [w for w in sentences.all_warnings(evaluate.build(run)) if "process pair" in w or "precision target" in w]
    # Grouped by kind (too few pairs first), then in the table's order.
    assert lines == ["2 servers (undertow, jetty): only 1 process pair: no interval; use the default profile or "
                     "--min-pairs 3", lines[1]]
    assert lines[1].startswith("vertx: precision target missed: ±")
