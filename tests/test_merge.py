"""analyze.py merge: shard runs as one table by ratio, the hosts' spread from the anchors, and what is refused.

Synthetic shards (runs.make_paired_run) whose every value is chosen here. Each server has three pairs at its ratio
m x (0.99, 1, 1.01): mean m, sd 0.01 m; every server of a shard spreads alike, so no bound of the stopping rule lifts
its sd, and with the precision target off a row's 95% interval is m +- t(2) x 0.01 m / sqrt(3), t(2) = 4.302653.

The three shards of 3 (parts a | b | c, d; anchors Undertow and Jetty), their dummies at 10, 15 and 30 us:

    shard 1: undertow 1.20, jetty 2.30, a 1.50
    shard 2: undertow 1.26, jetty 2.30, b 1.52
    shard 3: undertow 1.23, jetty 2.30, c 1.60, d 1.64

Worked out by hand (t quantiles from a t table):

- reference: the median of 10, 15 and 30 us = 15 us (their mean would be 18.33).
- the hosts' spread: Undertow's means over their mean 1.23 are 0.975610, 1.024390, 1; their variance 0.00059488,
  less their pairs' noise mean(0.012^2, 0.0126^2, 0.0123^2) / 3 / 1.23^2 = 0.00003335: 0.00056154 (its own spread
  sqrt = 0.023697). Jetty's: 0 - 0.023^2 / 3 / 2.3^2 = -0.00003333. Their mean 0.00026410: 0.016251 (1.6%), on
  2 x (3 - 1) = 4 degrees of freedom.
- Undertow pooled: shard k weighs 1 / (sd_k^2 / 3 + (0.016251 m_k)^2): 1 / (0.000048 + 0.00038030),
  1 / (0.00005292 + 0.00041928), 1 / (0.00005043 + 0.00039956): mean 1.229024, variance 0.00014982 on 5.02
  degrees of freedom (Satterthwaite, the hosts' part on 4), t = 2.5691: +-0.031446 -> [1.197598, 1.260451]; at 15 us:
  3.44 [2.96, 3.91]. Jetty: 2.3, +-0.058799 -> 19.50 [18.62, 20.38].
- a: 1.5 +- 4.302653 x 0.015 / sqrt(3) = +-0.037262: 7.50 [6.94, 8.06]; b: +-0.037759: 7.80 [7.23, 8.37];
  c: +-0.039746: 9.00 [8.40, 9.60]; d: +-0.040740: 9.60 [8.99, 10.21].
- marks: c - b (shards 3 and 2) = 0.08: variances 0.016^2 / 3 + 0.0152^2 / 3 = 0.00016234 and the hosts'
  0.016251^2 x (1.6^2 + 1.52^2) = 0.0012863: +-0.0979 on 4.99 df: not told apart (without the hosts' spread
  +-0.0354: apart). d - c (one shard) = 0.04: Welch over their pairs, +-0.0367: apart. b - a = 0.02: not told apart.
"""

import csv
import json

import pytest
from runs import make_paired_run

from latency_diff.analysis import analyze, evaluate, merge
from latency_diff.analysis.export import sentences, tables

NO_TARGET = {"precision_floor_us": 0, "precision_pct": 0}
PARTS = [["a"], ["b"], ["c", "d"]]
SHARDS = {
    1: (10_000, {"undertow": 1.20, "jetty": 2.30, "a": 1.50}),
    2: (15_000, {"undertow": 1.26, "jetty": 2.30, "b": 1.52}),
    3: (30_000, {"undertow": 1.23, "jetty": 2.30, "c": 1.60, "d": 1.64}),
}


def three(base: int, ratio: float) -> list[tuple[int, int]]:
    """Three pairs at ratio x 0.99, 1 and 1.01 over a dummy of base ns (every product a whole number of ns)."""
    return [(base, round(base * ratio * k)) for k in (0.99, 1.0, 1.01)]


def shard_run(tmp_path, index: int, *, count: int = 3, anchors=("undertow", "jetty"), parts=None, env=None,
              servers=None, base=None, status="complete", meta=None, settings=None, run_id=None, whole=False):
    """A shard's run (or a whole run) under tmp_path/<run id>, with run.json's run id set."""
    own_base, ratios = SHARDS[index] if servers is None else (base, servers)
    st = {**NO_TARGET, **(settings or {})}
    if not whole:
        st["shard"] = {"index": index, "count": count, "anchors": list(anchors), "parts": parts or PARTS,
                       "expected_s": [], "costs": "test"}
    rid = run_id or f"s{index}"
    run = make_paired_run(tmp_path / rid, {n: three(base or own_base, m) for n, m in ratios.items()}, settings=st,
                          env=env, status=status, meta=meta)
    data = json.loads((run / "run.json").read_text())
    data["run_id"] = rid
    (run / "run.json").write_text(json.dumps(data))
    return run


def three_shards(tmp_path, **kw):
    return [shard_run(tmp_path, i, **kw) for i in (1, 2, 3)]


def merged_of(dirs) -> "merge.RunResult":
    shards = merge.load(dirs)
    merge.check_hosts(shards)
    merge.check_set(shards)
    return merge.merged(shards, "merged-test")


def columns(t, *names):
    cols, rows, _ = t
    return [[row[cols.index(n)] for n in names] for row in rows]


def test_one_table_by_ratio_at_the_median_reference(tmp_path):
    r = merged_of(three_shards(tmp_path))
    assert r.ref == {"lean": 15_000.0}
    # the dummy's pairs: every pair of the shards has one (9 + 9 + 12)
    assert columns(tables.main_table(r), "server", "shard", "diff [us]", "diff 95% CI [us]", "ratio", "pairs") == [
        ["dummy (baseline)", "all", "0.00", "baseline", "1.000", "30"],
        ["undertow", "all", "3.44", "[2.96, 3.91]", "1.229", "9"],
        ["a", "1", "7.50", "[6.94, 8.06]", "1.500", "3"],
        ["b", "2", "7.80 ≈", "[7.23, 8.37]", "1.520", "3"],
        ["c", "3", "9.00 ≈", "[8.40, 9.60]", "1.600", "3"],
        ["d", "3", "9.60", "[8.99, 10.21]", "1.640", "3"],
        ["jetty", "all", "19.50", "[18.62, 20.38]", "2.300", "9"]]
    assert sentences.headline(r).startswith("latency-diff run merged-test (complete, merged from 3 shard(s) of 3: s1, "
                                         "s2, s3): ")
    line = sentences.host_speed_line(r)
    assert line.startswith("Reference: every row is a ratio to its own pair's dummy, shown in us at 15.00 us, the "
                           "median of the shards' reference round trips (10.00, 15.00, 30.00 us; ")
    assert "Hosts' spread: 1.6% of a ratio" in line and "from the anchors undertow, jetty" in line


def test_the_hosts_spread_comes_from_the_anchors(tmp_path):
    r = merged_of(three_shards(tmp_path))
    spread = r.merge["host_spread"]
    assert spread["rel_sd"] == pytest.approx(0.016251, abs=1e-6) and spread["df"] == 4
    assert spread["anchors"]["undertow"]["rel_sd"] == pytest.approx(0.023697, abs=1e-6)
    assert spread["anchors"]["undertow"]["ratios"] == [1.2, 1.26, 1.23]
    assert spread["anchors"]["jetty"]["rel_sd"] == 0.0


def test_the_hosts_spread_is_in_comparisons_across_shards_only(tmp_path):
    r = merged_of(three_shards(tmp_path))
    b, c, d = r.server("b"), r.server("c"), r.server("d")
    across = tables.difference(r, c, b)  # shards 3 and 2: +-0.0979 x 15 us
    assert (across.mean, across.ci95_low, across.ci95_high) == pytest.approx((1200.0, -268.1, 2668.1), abs=0.5)
    within = tables.difference(r, d, c)  # one shard: as its own report, +-0.0367 x 15 us
    assert (within.mean, within.ci95_low, within.ci95_high) == pytest.approx((600.0, 48.9, 1151.0), abs=0.5)
    assert (c.differs_from_previous, d.differs_from_previous) == (False, True)


def test_what_a_framework_adds_over_its_server_on_another_shard_carries_the_hosts_spread(tmp_path):
    # b runs on a (shards 2 and 1): 1.52 - 1.50 = 0.02, variances 0.015^2 / 3 + 0.0152^2 / 3 and the hosts'
    # 0.016251^2 x (1.5^2 + 1.52^2): +-0.09471 on 4.99 df -> at 15 us 0.30 [-1.12, 1.72] (without it [-0.21, 0.81]).
    dirs = [shard_run(tmp_path, i, meta={"b": {"runs_on": "a"}}) for i in (1, 2, 3)]
    t = tables.framework_table(merged_of(dirs))
    assert t[1] == [["b", "a", "7.80", "7.50", "0.30", "[-1.12, 1.72]"]]


def test_a_rows_mark_is_against_the_row_above_it_in_the_merged_table(tmp_path):
    # Shard 1: Undertow 1.20, x 1.21 (not told apart from Undertow there); shard 2: Undertow 1.26, y 1.50. Undertow
    # pooled, 1.2285, now ranks below x, which heads the table: no row above it, no mark.
    dirs = [shard_run(tmp_path, i, count=2, anchors=("undertow",), parts=[["x"], ["y"]], base=10_000,
                      servers={"undertow": (1.20, 1.26)[i - 1], ("x", "y")[i - 1]: (1.21, 1.50)[i - 1]})
            for i in (1, 2)]
    assert evaluate.build(dirs[0]).server("x").differs_from_previous is False
    r = merged_of(dirs)
    assert [(s.name, s.differs_from_previous) for s in r.ranked if not s.baseline][:2] == [("x", None),
                                                                                           ("undertow", False)]


def test_without_anchors_the_spread_is_unknown_and_said_so(tmp_path):
    dirs = [shard_run(tmp_path, i, anchors=(), servers={k: v for k, v in SHARDS[i][1].items()
                                                        if k not in ("undertow", "jetty")}, base=SHARDS[i][0])
            for i in (1, 2, 3)]
    r = merged_of(dirs)
    assert r.merge["host_spread"]["rel_sd"] is None
    # c - b across shards, with nothing of the hosts: +-0.0354 < 0.08, apart
    assert [(s.name, s.differs_from_previous) for s in r.ranked if not s.baseline] == [
        ("a", None), ("b", False), ("c", True), ("d", True)]
    assert sentences.all_warnings(r)[0].startswith("the hosts' spread is not known: no anchor was measured on two or "
                                                "more of the 3 shards")


def test_merge_writes_every_output_of_a_run_into_a_new_folder(tmp_path, capsys):
    dirs = three_shards(tmp_path)
    out = tmp_path / "merged"
    assert analyze.main(["merge", *map(str, dirs), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["diffs.png", "percentiles.png", "report.html", "report.md",
                                                     "summary.csv", "summary.json"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["merge"]["ref_ns"] == 15_000.0 and summary["merge"]["count"] == 3
    assert summary["merge"]["host_spread"]["rel_sd"] == pytest.approx(0.016251, abs=1e-6)
    assert {s["name"]: s["shards"] for s in summary["servers"]} == {
        "dummy": [1, 2, 3], "undertow": [1, 2, 3], "a": [1], "b": [2], "c": [3], "d": [3], "jetty": [1, 2, 3]}
    assert "shard" not in summary["settings"]
    rows = {row["name"]: row for row in csv.DictReader((out / "summary.csv").open())}
    assert (rows["a"]["ratio_mean"], rows["a"]["diff_ns_mean"], rows["a"]["ref_ns"]) == ("1.5000", "7500.0",
                                                                                         "15000.0")
    report = (out / "report.md").read_text()
    assert "| a | 1 | built in |" in report and "Hosts' spread: 1.6% of a ratio" in report
    assert "merged from 3 shard(s) of 3" in capsys.readouterr().out


def test_a_merge_is_no_history_of_its_own(tmp_path):
    # The shards' pairs are in the prior's history once, not again through their merge.
    from latency_diff import prior
    out = tmp_path / "results" / "merged"
    assert analyze.main(["merge", *map(str, three_shards(tmp_path)), "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert prior.history(tmp_path / "results", summary["settings"], summary["env"]) == {}


def test_never_over_an_existing_folder(tmp_path, capsys, monkeypatch):
    dirs = [str(d) for d in three_shards(tmp_path)]
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    assert analyze.main(["merge", *dirs, "--out", str(taken)]) == 2
    assert "exists; a merge never writes into an existing folder" in capsys.readouterr().err
    assert [p.name for p in taken.iterdir()] == ["keep.txt"] and (taken / "keep.txt").read_text() == "mine"
    # The default folder, results/merged-<UTC time>: a second merge in the same second takes a new name.
    monkeypatch.setattr(merge, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(merge, "utc_stamp", lambda: "20270101T000000Z")
    assert analyze.main(["merge", *dirs]) == 0
    first = tmp_path / "results" / "merged-20270101T000000Z"
    before = (first / "summary.json").read_bytes()
    assert analyze.main(["merge", *dirs]) == 0
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["merged-20270101T000000Z",
                                                                        "merged-20270101T000000Z-2"]
    assert (first / "summary.json").read_bytes() == before


@pytest.mark.parametrize("env, fact", [
    ({"cpu_model": "Other CPU"}, "CPU model (s1: Test CPU; s2: Other CPU; s3: Test CPU)"),
    ({"jdk": {"java.runtime.version": "21.0.5+11", "java.vm.name": "OpenJDK 64-Bit Server VM",
              "java.vendor": "Eclipse Adoptium"}},
     "JDK (s1: unknown; s2: OpenJDK 64-Bit Server VM 21.0.5+11 (Eclipse Adoptium); s3: unknown)"),
    ({"kit": {"commit": "b" * 40, "dirty": False}}, f"kit commit (s1: unknown; s2: {'b' * 40}; s3: unknown)"),
])
def test_runs_of_other_hosts_jdks_or_kits_are_refused(tmp_path, capsys, env, fact):
    dirs = [shard_run(tmp_path, i, env=env if i == 2 else None) for i in (1, 2, 3)]
    out = tmp_path / "out"
    assert analyze.main(["merge", *map(str, dirs), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"analyze: merge: error: the runs differ in {fact}: a ratio is the host's" in err
    assert "with --by-host" in err and not out.exists()


def refused(tmp_path, capsys, dirs) -> str:
    out = tmp_path / "out"
    assert analyze.main(["merge", *map(str, dirs), "--out", str(out)]) == 2
    assert not out.exists()
    return capsys.readouterr().err


def test_a_missing_shard_is_refused(tmp_path, capsys):
    dirs = [shard_run(tmp_path, i) for i in (1, 3)]
    assert "shard(s) 2 of 3 missing: the merge needs every shard's run" in refused(tmp_path, capsys, dirs)


def test_a_duplicate_shard_is_refused(tmp_path, capsys):
    dirs = three_shards(tmp_path) + [shard_run(tmp_path, 2, run_id="s2-again")]
    err = refused(tmp_path, capsys, dirs)
    assert f"duplicate shard 2 of 3: {dirs[1]} and {dirs[3]} (the same part measured twice)" in err
    assert "given twice" in refused(tmp_path, capsys, [*dirs[:3], dirs[0]])


def test_an_incomplete_or_unreadable_run_is_refused(tmp_path, capsys):
    dirs = [shard_run(tmp_path, i, status="incomplete" if i == 3 else "complete") for i in (1, 2, 3)]
    assert f"{dirs[2]}: the run is incomplete: a merge takes complete runs only" in refused(tmp_path, capsys, dirs)
    err = refused(tmp_path, capsys, [*dirs[:2], tmp_path / "nothing"])
    assert f"{tmp_path / 'nothing'}: cannot be read: " in err


def test_shards_of_other_splits_or_settings_are_refused(tmp_path, capsys):
    other = shard_run(tmp_path, 3, count=4, run_id="s3-of-4")
    assert "the runs are shards of different splits" in refused(tmp_path, capsys, [*three_shards(tmp_path)[:2], other])
    split = shard_run(tmp_path / "x", 3, parts=[["a", "b"], [], ["c", "d"]])
    assert "were made with different split of the servers" in refused(
        tmp_path, capsys, [tmp_path / "s1" / "run", tmp_path / "s2" / "run", split])
    pinned = shard_run(tmp_path / "y", 3, settings={"pinning": "split"})
    assert 'setting pinning differs: "shared" in s1, "split" in s3' in refused(
        tmp_path, capsys, [tmp_path / "s1" / "run", tmp_path / "s2" / "run", pinned])


def test_a_whole_run_is_not_pooled_with_shards(tmp_path, capsys):
    whole = shard_run(tmp_path, 1, whole=True, run_id="whole", servers={"undertow": 1.2, "jetty": 2.3, "a": 1.5,
                                                                      "b": 1.5, "c": 1.6, "d": 1.64}, base=10_000)
    err = refused(tmp_path, capsys, [*three_shards(tmp_path), whole])
    assert "a whole run, not a shard (no --shard)" in err and "--by-host" in err
    assert "nothing to merge it with" in refused(tmp_path, capsys, [whole])


def test_by_host_one_column_per_host_ranked_within_it(tmp_path, capsys):
    dirs = three_shards(tmp_path)
    # Another host, one whole run: Undertow 1.30, a 1.40, b 1.45, c 1.60, d 1.66, Jetty 2.00 over a 10 us dummy,
    # and the floor (the ladder: in no rank).
    other = shard_run(tmp_path, 1, whole=True, run_id="other", env={"cpu_model": "Other CPU"}, base=10_000,
                      servers={"floor": 0.95, "undertow": 1.30, "jetty": 2.00, "a": 1.40, "b": 1.45, "c": 1.60,
                               "d": 1.66})
    out = tmp_path / "side"
    assert analyze.main(["merge", *map(str, dirs), str(other), "--by-host", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["host-1", "host-2", "report.html", "report.md", "summary.csv",
                                                     "summary.json"]
    for folder in ("host-1", "host-2"):
        assert {"report.md", "summary.json", "diffs.png"} <= {p.name for p in (out / folder).iterdir()}
    summary = json.loads((out / "summary.json").read_text())
    assert [(c["label"], c["runs"], c["count"]) for c in summary["merge"]["columns"]] == [
        ("Test CPU", ["s1", "s2", "s3"], 3), ("Other CPU", ["other"], None)]
    # Ranks within each column; a's rank 2 on both hosts, though its ratio differs (1.500 against 1.400).
    report = (out / "report.md").read_text()
    # other: a 1.40 +- 4.302653 x 0.014 / sqrt(3) = +-0.034777 -> 4.00 [3.65, 4.35]; Undertow 1.30, +-0.032293
    assert "| a | 1.500 | 7.50 | [6.94, 8.06] | 2 | 1.400 | 4.00 | [3.65, 4.35] | 2 |" in report
    assert "| undertow | 1.229 | 3.44 | [2.96, 3.91] | 1 | 1.300 | 3.00 | [2.68, 3.32] | 1 |" in report
    # a 1.40 and b 1.45 of one whole run: Welch over their pairs, +-0.0323 on 4.0 df: apart (no mark)
    assert "| b | 1.520 | 7.80 ≈ | [7.23, 8.37] | 3 | 1.450 | 4.50 | [4.14, 4.86] | 3 |" in report
    assert "2. Other CPU: a whole run (other); diffs at 10.00 us, its reference" in report
    column = json.loads((out / "host-1" / "summary.json").read_text())
    assert column["merge"]["host_spread"]["rel_sd"] == pytest.approx(0.016251, abs=1e-6)
    assert "Test CPU" in capsys.readouterr().out


def test_by_host_still_needs_each_hosts_shards_complete(tmp_path, capsys):
    dirs = [shard_run(tmp_path, i) for i in (1, 2)]
    other = shard_run(tmp_path, 1, whole=True, run_id="other", env={"cpu_model": "Other CPU"}, base=10_000,
                      servers={"undertow": 1.30, "a": 1.40})
    out = tmp_path / "out"
    assert analyze.main(["merge", *map(str, dirs), str(other), "--by-host", "--out", str(out)]) == 2
    assert "host Test CPU: shard(s) 3 of 3 missing" in capsys.readouterr().err and not out.exists()


def test_an_anchor_is_pooled_by_inverse_variance_not_averaged():
    # With no hosts' spread the weights are 1 / (sd_k^2 / 3): Undertow at 1.20 (sd 0.012) and 1.26 (0.0126) on two
    # shards: w = 1 / 0.000048 = 20833.33 and 1 / 0.00005292 = 18896.45, sum 39729.78; mean (20833.33 x 1.2 +
    # 18896.45 x 1.26) / 39729.78 = 1.228537, not their mean 1.23; variance 1 / 39729.78 = 0.000025170.
    parts = [merge.Part(1, (1.188, 1.2, 1.212), 0.012, 0.012), merge.Part(2, (1.2474, 1.26, 1.2726), 0.0126, 0.0126)]
    flat = merge.pool(parts, None)
    assert flat.mean == pytest.approx(1.228537, abs=1e-6)
    assert flat.var == pytest.approx(0.000025170, abs=1e-9)
    # Satterthwaite: shares 0.524375 and 0.475625; var^2 / (0.524375^4 x 0.000048^2 / 2 + 0.475625^4 x
    # 0.00005292^2 / 2) = 6.3353e-10 / 1.5876e-10 = 3.990
    assert flat.df == pytest.approx(3.990, abs=0.002)
    # With a hosts' spread of 0.02 on 2 df, each weight is 1 / (sd_k^2 / 3 + (0.02 m_k)^2): 1 / 0.000624 = 1602.56 and
    # 1 / 0.00068796 = 1453.57, sum 3056.14: the mean (1602.56 x 1.2 + 1453.57 x 1.26) / 3056.14 = 1.228537 again
    # (every variance here is proportional to m_k^2), the variance 1 / 3056.14 = 0.00032721, 13 times wider.
    wide = merge.pool(parts, 0.02, 2)
    assert wide.mean == pytest.approx(1.228537, abs=1e-6)
    assert wide.var == pytest.approx(0.00032721, abs=1e-8)
