"""The result model, reports and compare on paired runs whose every block value is chosen here.

Expected values are worked out by hand in the comments (t quantiles from a t table).
"""

import json

import pytest
from runs import make_paired_run

from latency_diff import analyze, model, report

T2 = 4.302653  # Student t, 97.5%, 2 degrees of freedom
T4 = 2.776445  # ... 4 degrees of freedom


def test_diff_is_the_mean_of_pair_estimates_with_a_t_interval(tmp_path):
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000), (21_000, 28_500), (19_000, 26_500)]})
    r = model.build(run)
    u = next(s for s in r.servers if s.name == "undertow")
    # Estimates 7,000, 7,500, 7,500: mean 7,333.33; sd sqrt((333.33^2 + 2 * 166.67^2) / 2) = 288.675;
    # half-width 4.302653 * 288.675 / sqrt(3) = 717.11.
    assert u.clients["lean"].estimates == [7000.0, 7500.0, 7500.0]
    assert u.diff.mean == pytest.approx(7333.333, abs=1e-3)
    assert u.diff.half_width == pytest.approx(T2 * 288.675 / 3 ** 0.5, abs=0.01)
    # Target: max(500, 5% of 7,333 = 366.7) = 500; 717 > 500: missed, with the between-process spread named.
    assert u.target_ns == 500.0 and u.target_met is False
    assert any("precision target missed: ±0.72 us after 3 pairs (target ±0.50 us)" in w for w in u.warnings)
    # The dummy's own row: the mean of its blocks per pair, 20,000, 21,000, 19,000 -> 20,000.
    base = r.baseline
    assert base.valid and base.clients["lean"].rtt.mean == 20_000.0 and base.diff.mean == 0.0


def test_a_stall_moves_the_plain_mean_not_the_headline(tmp_path):
    stalled = {"quads": [(20_000, 27_000), (20_000, 27_000)], "stall": 50_000_000}
    run = make_paired_run(tmp_path, {"undertow": [stalled, (20_000, 27_000), (20_000, 27_000)]})
    u = next(s for s in model.build(run).servers if s.name == "undertow")
    assert u.clients["lean"].estimates == [7000.0, 7000.0, 7000.0]  # the trimmed mean cuts the stall
    # Plain: the stalled block's mean is (19,999 * 27,000 + 50,000,000) / 20,000 = 29,498.65; its quad's diff
    # (29,498.65 + 27,000 - 40,000) / 2 = 8,249.325; the pair's median of (8,249.325, 7,000) = 7,624.6625.
    plain = u.clients["lean"].plain_diff
    assert plain.mean == pytest.approx((7624.6625 + 7000 + 7000) / 3)
    assert u.target_met is True  # three identical estimates: zero width


def test_precision_split_between_and_within_pairs(tmp_path):
    run = make_paired_run(tmp_path, {"jetty": [{"quads": [(20_000, 50_000), (20_000, 52_000)]},
                                               {"quads": [(20_000, 55_000), (20_000, 57_000)]}]})
    c = next(s for s in model.build(run).servers if s.name == "jetty").clients["lean"]
    # Quads 30,000, 32,000 | 35,000, 37,000: within-pair variance (2 * 1,000^2 + 2 * 1,000^2) / 2 = 2,000,000;
    # estimates 31,000 and 36,000, variance 12,500,000; between = 12,500,000 - (pi / 2) * 2,000,000 / 2.
    assert c.within_sd == pytest.approx(2_000_000 ** 0.5)
    assert c.between_sd == pytest.approx((12_500_000 - 3.14159265 / 2 * 1_000_000) ** 0.5, rel=1e-6)
    assert c.quads == [2, 2]


def test_a_bad_block_makes_the_server_invalid_naming_the_file(tmp_path):
    bad = {"quads": [(20_000, 27_000), (20_000, 27_000)], "non_2xx": 3}
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000), bad], "x": ["failed:start:no READY within 60 s"]})
    r = model.build(run)
    u, x = sorted(r.invalid, key=lambda s: s.name)
    assert u.reason.startswith("pair 2: lean block blocks/undertow/p2-lean-q0-1s.json (server): 3 non-2xx responses")
    assert x.reason == "pair 1, start: no READY within 60 s"
    assert "Invalid (left out of the comparison):\n  undertow: pair 2:" in report.table(r)


def test_the_null_pair_must_contain_zero(tmp_path):
    ok = make_paired_run(tmp_path / "a", {"null": [(20_000, 20_100), (20_000, 19_900), (20_000, 20_000)]})
    assert not [w for w in model.build(ok).warnings if "null pair" in w]
    assert "contains 0, as it must" in report.table(model.build(ok))
    biased = make_paired_run(tmp_path / "b", {"null": [(20_000, 21_000), (20_000, 21_100), (20_000, 20_900)]})
    (w,) = [w for w in model.build(biased).warnings if "null pair" in w]
    assert w.startswith("the null pair (dummy against a second dummy process) shows a difference: 1.00 us")


def test_cpu_cross_check_and_costs(tmp_path):
    # Server 200 + 50 ticks (5 of them the JIT threads'), baseline 100 + 50, at 100 ticks a second over 1,000
    # requests: 2.5 ms (0.05 ms JIT) and 1.5 ms a request; the CPU diff without the JIT, 2.45 - 1.5 = 0.95 ms, is
    # far from the latency diff (7,000 ns): flagged.
    pairs = [{"quads": [(20_000, 27_000)] * 2, "cpu": ((200, 50, 5), (100, 50)),
              "jvm": {"allocated_bytes": 2_000_000, "gc_count": 1, "gc_time_ms": 3, "compile_time_ms": 0}}] * 3
    u = next(s for s in model.build(make_paired_run(tmp_path, {"undertow": pairs})).servers if s.name == "undertow")
    assert u.cpu.mean == pytest.approx(2_500_000.0) and u.cpu_diff.mean == pytest.approx(950_000.0)
    assert u.alloc.mean == pytest.approx(2000.0) and u.gc_count.mean == 1
    assert any("the CPU-time diff (950.00 us per request" in w for w in u.warnings)
    # 5 ticks = 50 ms of JIT in 1 s of blocks: over 1%.
    assert any("JIT compiler threads used 50 ms of CPU during 1.0 s of blocks" in w for w in u.warnings)


def test_cpu_cross_check_names_a_tail_the_trimmed_mean_leaves_out(tmp_path):
    # As above (a CPU diff of 950 us against a latency diff of 7 us), but one request in each server block takes
    # 18.86 s: the block's plain mean is (19,999 x 27,000 + 18,860,027,000) / 20,000 = 970,000 ns, so the plain-mean
    # diff is 950 us, the CPU diff's; the 1% trimmed mean cuts that request.
    pair = {"quads": [(20_000, 27_000)] * 2, "cpu": ((200, 50, 5), (100, 50)), "stall": 18_860_027_000,
            "stall_every_server_block": True}
    u = next(s for s in model.build(make_paired_run(tmp_path, {"undertow": [pair] * 3})).servers
             if s.name == "undertow")
    assert u.diff.mean == pytest.approx(7000.0) and u.clients["lean"].plain_diff.mean == pytest.approx(950_000.0)
    (w,) = [w for w in u.warnings if "CPU-time diff" in w]
    assert w.startswith("the CPU-time diff (950.00 us per request, /proc) is far from the latency diff (7.00 us) but "
                        "near the plain-mean diff (950.00 us): the server spends it in rare slow requests")


def test_two_clients_and_their_agreement(tmp_path):
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000), (20_000, 27_500), (20_000, 26_500)]},
                          clients=("lean", "ab"),
                          ab_rtt={"undertow": [(30_000, 37_100), (30_000, 37_600), (30_000, 36_600)]})
    u = next(s for s in model.build(run).servers if s.name == "undertow")
    # lean: 7,000, 7,500, 6,500 -> 7,000 +- 4.302653 * 500 / sqrt(3); ab: 7,100, 7,600, 6,600 -> 7,100, same width.
    assert u.clients["ab"].diff.mean == pytest.approx(7100.0, abs=0.5)
    assert u.clients_agree is True
    t = report.client_table(model.build(run))
    assert t[1][0][:6] == ["undertow", "7.00", "[5.76, 8.24]", "7.10", "[5.86, 8.34]", "yes"]


def test_frameworks_show_what_they_add_over_their_server(tmp_path):
    run = make_paired_run(tmp_path, {"netty": [(20_000, 25_000), (20_000, 25_500), (20_000, 24_500)],
                                     "spring": [(20_000, 45_000), (20_000, 46_000), (20_000, 44_000)]},
                          meta={"spring": {"runs_on": "netty"}})
    (cols, rows, _) = report.framework_table(model.build(run))
    # 45,000 - 5,000 = 40,000; Welch: se sqrt(1000^2 / 3 + 500^2 / 3) = 645.5, df = (333,333 + 83,333)^2 /
    # (333,333^2 / 2 + 83,333^2 / 2) = 2.94 -> t 4.3 (about): checked here by the sign and the centre only.
    assert rows[0][:5] == ["spring", "netty", "25.00", "5.00", "20.00"]


def test_old_format_runs_are_refused_with_a_reason(tmp_path):
    run = tmp_path / "old"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"format": "latency-diff/run/2", "status": "complete", "settings": {}}))
    with pytest.raises(model.AnalysisError, match="single-server design"):
        model.build(run)


@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "env.json").unlink(), "env.json: missing"),
    (lambda run: (run / "run.json").write_text("{"), "run.json: not valid JSON"),
    (lambda run: (run / "pairs.jsonl").write_text('{"server": "undertow"}\n'), "line 1: missing field(s) pair, status"),
    (lambda run: (run / "blocks" / "undertow" / "p1-lean-q0-0b.json").unlink(), "p1-lean-q0-0b.json: cannot read"),
    (lambda run: (run / "blocks" / "undertow" / "p1-lean-q0-0b.json").write_text('{"format": "x"}'),
     "field 'format' is not"),
])
def test_broken_run_directories_are_clear_errors(tmp_path, damage, message):
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000)]})
    damage(run)
    with pytest.raises(model.AnalysisError, match=message.replace("(", r"\(").replace(")", r"\)")):
        model.build(run)


def test_outputs_carry_the_required_fields(tmp_path):
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000), (20_000, 27_500), (20_000, 26_500)],
                                     "vertx": [(20_000, 26_000), (20_000, 26_500), (20_000, 25_500)]})
    assert analyze.main([str(run), "--quiet"]) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["format"] == "latency-diff/summary/3"
    u = next(s for s in summary["servers"] if s["name"] == "undertow")
    assert u["diff_ns"]["mean"] == pytest.approx(7000.0) and u["target_met"] is False
    assert u["pairs"][0]["estimates_ns"] == {"lean": 7000.0}
    # vertx (6,000 +- 500) and undertow (7,000 +- 500): Welch t = 1,000 / sqrt(2 * 500^2 / 3) = 2.45 < 2.78 (df 4).
    assert u["diff_significant_vs_previous"] is False
    csv_lines = (run / "summary.csv").read_text().splitlines()
    assert csv_lines[0].startswith("name,valid,reason,ladder,threading,http")
    assert csv_lines[3].startswith("undertow,True,,False,blocking,1.0,,,,lean,3,7000.0,")
    md = (run / "report.md").read_text()
    for text in ("| undertow |", "## Precision reached", "## The study's figures and the tail",
                 "![Diffs with their 95% intervals](diffs.png)"):
        assert text in md, text


def test_an_incomplete_run_is_reported_and_exits_3(tmp_path, capsys):
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000)], "jetty": []}, status="incomplete")
    assert analyze.main([str(run)]) == 3
    out = capsys.readouterr().out
    assert "jetty: not measured (the run was interrupted)" in out
    assert "the run is incomplete" in out


def test_plots_are_valid_non_empty_images(tmp_path):
    import xml.etree.ElementTree as ET
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000), (20_000, 27_500), (20_000, 26_500)],
                                     "floor": [(20_000, 18_000)] * 3})
    assert analyze.main([str(run), "--quiet"]) == 0
    for stem in ("diffs", "percentiles"):
        png = (run / f"{stem}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
        width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
        assert width > 300 and height > 150
        svg = ET.parse(run / f"{stem}.svg").getroot()
        assert svg.tag.endswith("svg") and len(list(svg.iter())) > 50
    assert "undertow" in (run / "diffs.svg").read_text()


def _compare_rows(a_pairs, b_pairs, tmp_path):
    a = model.build(make_paired_run(tmp_path / "a", {"undertow": a_pairs}))
    b = model.build(make_paired_run(tmp_path / "b", {"undertow": b_pairs}))
    (_, rows, _), notes = analyze.compare(a, b)
    return rows, notes


def test_compare_within_noise_is_not_significant(tmp_path):
    # A: 7,000, 8,000, 6,000 (mean 7,000, sd 1,000); B: 7,200, 8,200, 6,200 (mean 7,200, sd 1,000).
    # Change 200, se sqrt(2 * 1,000^2 / 3) = 816.5, df 4: half-width 2.776445 * 816.5 = 2,266.9 -> [-2.07, 2.47] us.
    rows, notes = _compare_rows([(20_000, 27_000), (20_000, 28_000), (20_000, 26_000)],
                                [(20_000, 27_200), (20_000, 28_200), (20_000, 26_200)], tmp_path)
    assert notes == []
    assert rows == [["undertow", "7.00", "7.20", "+0.20", "[-2.07, 2.47]", "+3%", "not significant"]]


def test_compare_names_a_real_change(tmp_path):
    # A: 7,000 +- 100 (6,900, 7,000, 7,100); B: 9,000 +- 100. Change 2,000, se sqrt(2 * 100^2 / 3) = 81.65,
    # half-width 2.776445 * 81.65 = 226.7 -> [1.77, 2.23] us: slower.
    rows, _ = _compare_rows([(20_000, 26_900), (20_000, 27_000), (20_000, 27_100)],
                            [(20_000, 28_900), (20_000, 29_000), (20_000, 29_100)], tmp_path)
    assert rows == [["undertow", "7.00", "9.00", "+2.00", "[1.77, 2.23]", "+29%", "slower"]]


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
    run = make_paired_run(tmp_path, {"jetty": pairs})
    j = next(s for s in model.build(run).servers if s.name == "jetty")
    # Estimates 7,000 x4, 7,500 x2, 27,000: median 7,000, MAD 0; mean absolute deviation
    # (2 * 500 + 20,000) / 7 = 3,000, score 20,000 / (1.253314 * 3,000) = 5.3 > 3.5.
    assert j.diff.n == 7 and j.diff.mean == pytest.approx((4 * 7000 + 2 * 7500 + 27_000) / 7)
    assert [w for w in j.warnings if "outlier" in w] == [
        "process pair 7 is an outlier (27.00 us against a median of 7.00 us over 7 pairs): one JVM compiled or laid "
        "out differently, or the machine changed; its pair is kept, so the interval shows it"]


def test_compare_says_whether_a_second_run_reproduces_the_first(tmp_path):
    def run(folder, u, j, v):
        return model.build(make_paired_run(tmp_path / folder, {"undertow": [(20_000, 20_000 + x) for x in u],
                                                               "jetty": [(20_000, 20_000 + x) for x in j],
                                                               "vertx": [(20_000, 20_000 + x) for x in v]}))
    # A: vertx 5,000 [5,000, 5,000] < undertow 7,333 [6,616, 8,050] < jetty 30,333 [29,616, 31,050].
    a = run("a", (7000, 7500, 7500), (30_000, 30_500, 30_500), (5000, 5000, 5000))
    # B: undertow as in A; jetty 40,333 and vertx 9,000: both apart from A, and vertx now above undertow.
    b = run("b", (7000, 7500, 7500), (40_000, 40_500, 40_500), (9000, 9000, 9000))
    assert analyze.agreement(a, b) == [
        "intervals overlap for 1 of 3 servers (not: vertx, jetty)",
        "ranking: 2 pairs of servers are apart in both runs and rank the same, 1 rank the other way round "
        "(vertx/undertow); 0 pairs are apart in one run only"]
    assert analyze.agreement(a, a)[0] == "intervals overlap for 3 of 3 servers"


@pytest.mark.parametrize("settings, cold", [  # the fixture's blocks have 20,000 requests
    ({"warmup": 1_000, "wait_for_jit": False}, True),  # as the quick profile: 21,000 requests, no wait
    ({"warmup": 100_000, "wait_for_jit": True}, False),  # the default
    ({"warmup": 1_000, "wait_for_jit": True}, False),  # waited for the JIT
    ({"warmup": 80_000, "wait_for_jit": False}, False),  # 100,000 requests: as warm as the default
])
def test_a_smoke_run_says_on_every_output_that_it_is_not_for_comparing(tmp_path, settings, cold):
    # A CPU diff of 950 us against a latency diff of 7 us (as in the cross-check test): in a smoke run the JIT on
    # the shared CPU explains the gap, and the caveat says so once instead of a warning per server.
    pairs = [{"quads": [(20_000, 27_000)] * 2, "cpu": ((200, 50, 5), (100, 50))}] * 3
    run = make_paired_run(tmp_path, {"undertow": pairs}, settings=settings)
    assert analyze.main([str(run), "--quiet"]) == 0
    r = model.build(run)
    undertow = next(s for s in r.servers if s.name == "undertow")
    outputs = {"report.md": (run / "report.md").read_text(), "report.html": (run / "report.html").read_text(),
               "table": report.table(r), "summary.json": json.loads((run / "summary.json").read_text())["caveat"] or ""}
    for name, text in outputs.items():
        assert ("smoke run: each JVM served 1,000 warm-up requests" in text) is cold, name
    assert any("CPU-time diff" in w for w in undertow.warnings) is not cold


def test_a_warning_that_several_servers_share_is_one_line(tmp_path):
    # undertow and jetty: one pair each (no interval); vertx: 3 pairs, 7 us apart, so its own target is missed.
    run = make_paired_run(tmp_path, {"undertow": [(20_000, 27_000)], "jetty": [(20_000, 40_000)],
                                     "vertx": [(20_000, 21_000), (20_000, 28_000), (20_000, 24_000)]})
    r = model.build(run)
    lines = [w for w in report.all_warnings(r) if "process pair" in w or "precision target" in w]
    # In the table's order (vertx's 4 us, undertow's 7, jetty's 20): one line for the shared warning.
    assert len(lines) == 2 and lines[0].startswith("vertx: precision target missed: ±"), lines
    assert lines[1] == "2 servers (undertow, jetty): only 1 process pair: no interval; use the default profile or " \
                       "--min-pairs 3"
