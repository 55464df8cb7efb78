"""analyze.py compare: two runs compared by their ratios, in microseconds at run A's reference, never a traceback.

Synthetic runs (runs.make_paired_run) whose every value is chosen here; expected figures are worked out by hand
in the comments (t quantiles from a t table).
"""

import csv
import io

from runs import make_paired_run

from latency_diff.analysis import analyze, evaluate

# Three pairs each: ratios 1.5, 1.51, 1.49 (mean 1.5, sd 0.01) at two references.
A_PAIRS = [(10_000, 15_000), (10_000, 15_100), (10_000, 14_900)]
B_SAME = [(12_000, 18_000), (12_000, 18_120), (12_000, 17_880)]
OK = [(20_000, 27_000), (20_000, 28_000), (20_000, 26_000)]  # ratios 1.35, 1.40, 1.30


#: The precision target off: each row's sd is its pairs' own, so that the figures below work out by hand from the
#: pairs (the fixed width a target gives is tested in test_stopping.py and test_evaluate.py).
NO_TARGET = {"precision_floor_us": 0, "precision_pct": 0}


def build(tmp_path, folder, pairs, **kw):
    return evaluate.build(make_paired_run(tmp_path / folder, pairs, **kw))


def test_two_runs_of_different_references_are_compared_at_one(tmp_path):
    a = build(tmp_path, "a", {"undertow": A_PAIRS}, settings=NO_TARGET)
    b = build(tmp_path, "b", {"undertow": B_SAME}, settings=NO_TARGET)
    # Each run's own diff is at its own reference (the median dummy round trip): 0.5 x 10,000 and 0.5 x 12,000,
    # so subtracting them (what compare did) gives +1.00 us for a server that did not change.
    assert (a.ref, b.ref) == ({"lean": 10_000.0}, {"lean": 12_000.0})
    assert (a.server("undertow").diff.mean, b.server("undertow").diff.mean) == (5000.0, 6000.0)
    (cols, rows, _), notes = analyze.compare(a, b)
    assert cols == ("server", "client", "ratio A", "ratio B", "ratio change", "ratio change 95% CI", "diff A [us]",
                    "diff B [us]", "change [us]", "change 95% CI [us]", "relative change", "verdict")
    # Ratio change 0; se sqrt(0.01^2 / 3 + 0.01^2 / 3) = 0.0081650, df 4: half-width 2.776445 x 0.0081650 = 0.022670
    # -> [-0.0227, 0.0227]; at A's reference 10,000 ns: 0.00 us [-0.23, 0.23]; both diffs (1.5 - 1) x 10,000 = 5.00.
    assert rows == [["undertow", "lean", "1.5000", "1.5000", "+0.0000", "[-0.0227, 0.0227]", "5.00", "5.00", "+0.00",
                     "[-0.23, 0.23]", "+0%", "not significant"]]
    assert notes == ["reference baseline round trip (lean client): 10.00 us in A, 12.00 us in B; every [us] column is "
                     "at A's (10.00 us), B's diffs rescaled to it"]


def test_a_real_change_of_ratio_is_shown_at_a_s_reference(tmp_path):
    a = build(tmp_path, "a", {"undertow": A_PAIRS}, settings=NO_TARGET)
    # B: ratios 1.55, 1.56, 1.54 at a dummy of 12,000 ns (its own diff: 0.55 x 12,000 = 6.60 us, 1.60 above A's).
    b = build(tmp_path, "b", {"undertow": [(12_000, 18_600), (12_000, 18_720), (12_000, 18_480)]}, settings=NO_TARGET)
    (_, rows, _), _ = analyze.compare(a, b)
    # Ratio change +0.05, half-width 0.022670 as above -> [0.0273, 0.0727]; at 10,000 ns: +0.50 us [0.27, 0.73];
    # diff B at A's reference (1.55 - 1) x 10,000 = 5.50 us; relative 0.50 / 5.00 = +10%.
    assert rows == [["undertow", "lean", "1.5000", "1.5500", "+0.0500", "[0.0273, 0.0727]", "5.00", "5.50", "+0.50",
                     "[0.27, 0.73]", "+10%", "slower"]]


def test_servers_in_one_run_only_and_invalid_ones_are_listed_with_why(tmp_path, capsys):
    a = make_paired_run(tmp_path / "a", {"undertow": OK, "jetty": OK, "vertx": OK,
                                         "helidon": ["failed:start:boom", *OK[:2]], "grizzly": ["failed:start:boom"]})
    b = make_paired_run(tmp_path / "b", {"undertow": OK, "jetty": ["failed:start:boom", *OK[:2]], "netty": OK,
                                         "helidon": OK})
    (_, rows, _), notes = analyze.compare(evaluate.build(a), evaluate.build(b))
    assert [r[0] for r in rows] == ["undertow"]
    assert notes[1:] == [
        "jetty: valid in A only; invalid in B: pair 1, start: boom",
        "valid in A only, not in B: vertx",
        "helidon: valid in B only; invalid in A: pair 1, start: boom",
        "valid in B only, not in A: netty",
        "grizzly: valid in neither run (invalid in A: pair 1, start: boom; not in B)"]
    page = tmp_path / "compare.html"
    assert analyze.main(["compare", str(a), str(b), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert "note: valid in B only, not in A: netty" in out and "note: jetty: valid in A only; invalid in B" in out
    assert "grizzly: valid in neither run" in page.read_text()


def test_a_two_server_run_against_a_larger_run_never_stops(tmp_path, capsys):
    # A head-to-head run (--compare a b: a in the dummy's place, the dummy a row measured against a) against a run
    # of five servers and the ladder against the dummy: the dummy is a row of one and the baseline of the other,
    # and "a" the other way round. compare used to stop there with "every group needs values".
    h2h = make_paired_run(tmp_path / "h", {"b": [(50_000, 53_000)] * 3, "dummy": [(50_000, 45_000)] * 3},
                          baseline="a", settings={"compare": ["a", "b"]})
    full = make_paired_run(tmp_path / "f", {"a": OK, "b": OK, "undertow": OK, "floor": OK, "null": OK})
    (_, rows, _), notes = analyze.compare(evaluate.build(h2h), evaluate.build(full))
    assert rows == []
    assert "the runs measure against different baselines (a in A, dummy in B): a ratio is over another process's " \
           "round trip in each, so no server is compared" in notes
    assert "dummy: a row of A, the baseline of B (every row of B is measured against it): not compared" in notes
    assert "a: a row of B, the baseline of A (every row of A is measured against it): not compared" in notes
    assert "valid in B only, not in A: undertow, floor, null" in notes
    for x, y in ((h2h, full), (full, h2h)):
        assert analyze.main(["compare", str(x), str(y)]) == 0
        assert "(no server to compare)" in capsys.readouterr().out
    # Two servers against five, one baseline: the two are compared, the three listed.
    two = build(tmp_path, "two", {"undertow": OK, "b": OK})
    (_, rows, _), notes = analyze.compare(two, evaluate.build(full))
    assert [r[0] for r in rows] == ["undertow", "b"] and {r[-1] for r in rows} == {"not significant"}
    assert notes[1:] == ["valid in B only, not in A: a, floor, null"]


def test_a_server_of_one_pair_gets_no_interval_and_a_note(tmp_path):
    a = build(tmp_path, "a", {"undertow": OK[:1]})
    b = build(tmp_path, "b", {"undertow": OK})
    (_, rows, _), notes = analyze.compare(a, b)
    # A: one pair, ratio 1.35; B: mean of 1.35, 1.40, 1.30 = 1.35. No interval with one pair in A.
    assert rows == [["undertow", "lean", "1.3500", "1.3500", "+0.0000", "-", "7.00", "7.00", "+0.00", "-", "+0%",
                     "too few pairs"]]
    assert notes[1:] == ["undertow: 1 process pair(s) in A and 3 in B: no interval for the change, not tested (an "
                         "interval needs 2 or more pairs in each run; the default profile gives 3)"]


def test_every_setting_and_fact_that_differs_is_named(tmp_path):
    meta_a = {"undertow": {"jvm_flags": ["-XX:+UseSerialGC"], "library": "Undertow", "library_version": "2.3.26"}}
    a = build(tmp_path, "a", {"undertow": OK}, settings={"jvm_flags": ["-Xmx1g"], "run_length": 1}, meta=meta_a)
    b = build(tmp_path, "b", {"undertow": OK}, settings={"jvm_flags": [], "run_length": 4, "pinning": "split"},
              meta={"undertow": {"library": "Undertow", "library_version": "2.2.37"}})
    same = build(tmp_path, "same", {"undertow": OK}, settings={"jvm_flags": ["-Xmx1g"], "run_length": 1}, meta=meta_a)
    jdk = {"java.vm.name": "OpenJDK 64-Bit Server VM", "java.vendor": "Eclipse Adoptium"}
    a.env.update(jdk={**jdk, "java.runtime.version": "21.0.5+11-LTS"}, kernel="6.1.0", kit={"commit": "abc"})
    same.env.update(a.env)
    b.env.update(jdk={**jdk, "java.runtime.version": "25.0.1+8-LTS"}, kernel="6.8.0", kit={"commit": "def"})
    _, notes = analyze.compare(a, b)
    assert notes[1:] == [
        "setting jvm_flags differs: `-Xmx1g` in A, none in B: every server and the dummy ran with other flags: a "
        "change may be the flags'",
        "setting pinning differs: shared in A, split in B: the diffs measure different things (shared: the server's "
        "CPU work; split: its critical-path latency)",
        "setting run_length differs: 1 in A, 4 in B: the interleaving differs (requests in a row to one process)",
        "JDK differs: OpenJDK 64-Bit Server VM 21.0.5+11-LTS (Eclipse Adoptium) in A, OpenJDK 64-Bit Server VM "
        "25.0.1+8-LTS (Eclipse Adoptium) in B: a change may be the JDK's",
        "kernel differs: 6.1.0 in A, 6.8.0 in B",
        "kit commit differs: abc in A, def in B: a change may be the kit's (its clients, the dummy, the method)",
        "undertow: its own JVM flags differ: `-XX:+UseSerialGC` in A, none in B",
        "undertow: Undertow 2.3.26 in A, Undertow 2.2.37 in B"]
    assert analyze.compare(a, same)[1][1:] == []


def test_headline_clients_that_differ_are_said_and_each_server_compared_by_a_common_one(tmp_path):
    # A measured with both clients (headline lean), B with ab only: undertow is compared by ab. ab's references
    # are the dummy's blocks, 12,500 ns in both; ratios 15,000 / 12,500 = 1.2 in A, 1.2 and 1.24 ... in B.
    ab_a = {"undertow": [(12_500, 15_000)] * 3}
    ab_b = {"undertow": [(12_500, 15_000), (12_500, 15_500), (12_500, 14_500)]}
    a = build(tmp_path, "a", {"undertow": OK}, clients=("lean", "ab"), ab_rtt=ab_a, settings=NO_TARGET)
    b = build(tmp_path, "b", {"undertow": OK}, clients=("ab",), ab_rtt=ab_b, settings=NO_TARGET)
    (_, rows, _), notes = analyze.compare(a, b)
    # ab ratios A: 1.2 x3 (sd 0); B: 1.2, 1.24, 1.16 (mean 1.2, sd 0.04): change 0, se 0.04 / sqrt(3) = 0.023094,
    # df 2: half-width 4.302653 x 0.023094 = 0.099366 -> [-0.0994, 0.0994]; at 12,500 ns: [-1.24, 1.24] us.
    assert rows == [["undertow", "ab", "1.2000", "1.2000", "+0.0000", "[-0.0994, 0.0994]", "2.50", "2.50", "+0.00",
                     "[-1.24, 1.24]", "+0%", "not significant"]]
    assert notes[0] == ("reference baseline round trip (ab client): 12.50 us in A, 12.50 us in B; every [us] column "
                        "is at A's (12.50 us), B's diffs rescaled to it")
    assert ("the runs' headline clients differ (lean in A, ab in B): each server is compared by a client both runs "
            "measured it with (client column)") in notes
    assert ("undertow: compared by the ab client, the one both runs measured it with (its headline client: lean in "
            "A, ab in B)") in notes


def test_agreement_judges_ratios_not_diffs_at_different_references(tmp_path):
    # The same ratios at references 10,000 and 12,000: the diffs' intervals (5,000 +- 248 and 6,000 +- 298) are
    # apart, the ratios' (1.5 +- 0.0248 both) are the same.
    a = build(tmp_path, "a", {"undertow": A_PAIRS, "jetty": [(10_000, 20_000), (10_000, 20_100), (10_000, 19_900)]})
    b = build(tmp_path, "b", {"undertow": B_SAME, "jetty": [(12_000, 24_000), (12_000, 24_120), (12_000, 23_880)]})
    assert analyze.agreement(a, b) == [
        "ratio intervals overlap for 2 of 2 servers",
        "ranking: 1 pairs of servers are apart in both runs and rank the same, 0 rank the other way round; 0 pairs "
        "are apart in one run only"]


def test_summary_csv_carries_the_reference_round_trip(tmp_path):
    # Dummy 10,000 ns in every pair (lean reference 10,000); ab's dummy blocks 12,500 ns (ab reference 12,500).
    run = make_paired_run(tmp_path, {"undertow": A_PAIRS, "jetty": ["failed:start:boom"]}, clients=("lean", "ab"),
                          ab_rtt={"undertow": [(12_500, 15_000)] * 3})
    assert analyze.main([str(run), "--quiet"]) == 0
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO((run / "summary.csv").read_text()))}
    u = rows["undertow"]
    assert (u["ref_ns"], u["ratio_mean"], u["diff_ns_mean"]) == ("10000.0", "1.5000", "5000.0")
    # ab: (15,000 / 12,500 - 1) x 12,500 = 2,500 at ab's own reference.
    assert (u["ab_ref_ns"], u["ab_diff_ns_mean"]) == ("12500.0", "2500.0")
    assert rows["dummy"]["ref_ns"] == "10000.0" and rows["jetty"]["ref_ns"] == "10000.0"


def test_the_gate_exits_on_the_change_interval_against_the_margin(tmp_path, capsys):
    import pytest
    a = make_paired_run(tmp_path / "a", {"undertow": A_PAIRS}, settings=NO_TARGET)
    b = make_paired_run(tmp_path / "b", {"undertow": [(12_000, 18_600), (12_000, 18_720), (12_000, 18_480)]},
                        settings=NO_TARGET)
    # The change (above): +0.50 us [0.27, 0.73] at A's reference, A's diff 5.00 us.
    for margin, code, word in (("1us", 0, "PASS"), ("0.2us", 1, "FAIL"), ("0.5us", 3, "UNDECIDED"),
                               ("5%", 1, "FAIL"), ("15%", 0, "PASS")):  # 5% of 5.00 = 0.25 us; 15% = 0.75 us
        assert analyze.main_compare([str(a), str(b), "--fail-if-slower", margin]) == code
        out = capsys.readouterr().out
        assert f"gate: {word} (exit {code})" in out
    assert "gate: undertow: B minus A +0.50 us [+0.27, +0.73] against a margin of 0.75 us (15%): PASS" in out
    # A server the gate is asked about but could not compare is undecided, never a pass.
    assert analyze.main_compare([str(a), str(b), "--fail-if-slower", "1us", "--server", "jetty"]) == 3
    with pytest.raises(SystemExit) as e:
        analyze.main_compare([str(a), str(b), "--fail-if-slower", "1ms"])
    assert e.value.code == 2


def test_a_gated_head_to_head_run_exits_with_its_verdict(tmp_path, capsys):
    # run-all.sh --compare a b --fail-if-slower M: B's row is B - A (50,000 ns: ratio 2.0 at a's 50,000 ns), and A's
    # diff is minus the dummy's (0.9: +5,000 ns). 10% of it is 0.5 us, far below B - A: FAIL; 2000% (100 us) far
    # above: PASS; 1000% (50 us) is B - A itself: UNDECIDED. An incomplete run is undecided whatever it shows.
    for k, (margin, status, code) in enumerate((("10%", "complete", 1), ("2000%", "complete", 0),
                                                ("1000%", "complete", 3), ("10%", "incomplete", 3))):
        run = make_paired_run(tmp_path / str(k), {"b": [(50_000, 100_000)] * 3, "dummy": [(50_000, 45_000)] * 3},
                              baseline="a", status=status, settings={"compare": ["a", "b"], "fail_if_slower": margin})
        assert analyze.main([str(run), "--quiet"]) == code
        out = capsys.readouterr().out
        assert "gate: b: B minus A +50.00 us" in out and f"(exit {code})" in out
