import json
import math

import pytest

from conftest import make_run
from latency_diff import analyze, model, report


def test_valid_run_gives_diffs_and_cpu(tmp_path):
    run = make_run(tmp_path, {
        "dummy": [("valid-dummy.txt", "100+28"), ("valid-dummy.txt", "100+28"), ("valid-dummy.txt", "100+28")],
        "undertow": [("valid-undertow.txt", "150+50")] * 3,
    }, response_bytes={"dummy": 296, "undertow": 299})
    r = model.build(run)
    dummy, undertow = r.ranked
    assert dummy.name == "dummy" and dummy.valid
    assert dummy.rtt.mean == pytest.approx(64_200.0)
    assert undertow.diff.mean == pytest.approx(109_950.0 - 64_200.0)
    assert undertow.diff.ci95_low == pytest.approx(undertow.diff.mean)  # identical trials: zero spread
    assert dummy.cpu.mean == pytest.approx(128 * 1e7 / 20000)  # 128 ticks of 10 ms over 20000 requests
    assert undertow.bytes_per_response == 299.0
    assert undertow.requests == 60000
    assert r.invalid == []


def test_failed_requests_make_the_server_invalid_with_reason(tmp_path):
    run = make_run(tmp_path, {"dummy": [("valid-dummy.txt", None)] * 2,
                              "broken": [("valid-undertow.txt", None), ("non-2xx.txt", None)]},
                   response_bytes={"broken": 299})
    r = model.build(run)
    assert [s.name for s in r.ranked] == ["dummy"]
    (broken,) = r.invalid
    assert broken.reason.startswith("trial 2: ab completed 2000 of 20000 requests; 2000 non-2xx responses")
    table = report.table(r)
    assert "Invalid (left out of the comparison):\n  broken: trial 2:" in table


def test_start_failure_is_reported(tmp_path):
    run = make_run(tmp_path, {"dummy": [("valid-dummy.txt", None)], "x": [("failed:no READY within 60 s", None)]})
    (x,) = model.build(run).invalid
    assert x.reason == "trial 1, start: no READY within 60 s"


def test_no_valid_baseline_means_no_diffs(tmp_path):
    run = make_run(tmp_path, {"dummy": [("failed:exited", None)], "undertow": [("valid-undertow.txt", None)]},
                   response_bytes={"undertow": 299})
    r = model.build(run)
    assert r.ranked[0].diff is None
    assert any("baseline has no valid trial" in w for w in r.warnings)


def test_hand_edited_ab_output_is_an_error_and_nothing_is_written(tmp_path, capsys):
    run = make_run(tmp_path, {"dummy": [("valid-dummy.txt", None)]})
    f = run / "ab" / "dummy-t1.txt"
    f.write_text(f.read_text().replace("Complete requests:      20000", "Complete requests:      lots"))
    assert analyze.main([str(run)]) == 1
    err = capsys.readouterr().err
    assert f"{f}: line" in err and "'Complete requests' has a malformed value" in err
    assert not (run / "summary.json").exists()


@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "env.json").unlink(), "env.json: missing"),
    (lambda run: (run / "run.json").write_text("{"), "run.json: not valid JSON"),
    (lambda run: (run / "run.json").write_text(json.dumps({"format": "old", "status": "complete"})),
     "field 'format' is 'old'"),
    (lambda run: (run / "trials.jsonl").write_text('{"server": "dummy"}\n'), "line 1: missing field(s) trial, status"),
    (lambda run: (run / "ab" / "dummy-t1.txt").unlink(), "dummy-t1.txt: cannot read"),
])
def test_broken_run_directories_are_clear_errors(tmp_path, damage, message):
    run = make_run(tmp_path, {"dummy": [("valid-dummy.txt", None)]})
    damage(run)
    with pytest.raises(model.AnalysisError, match=message.replace("(", r"\(").replace(")", r"\)")):
        model.build(run)


def test_outputs_carry_the_required_fields(tmp_path):
    run = make_run(tmp_path, {"dummy": [("valid-dummy.txt", "1+1")] * 3,
                              "undertow": [("valid-undertow.txt", "2+1")] * 3},
                   response_bytes={"dummy": 296, "undertow": 299})
    assert analyze.main([str(run), "--quiet"]) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["format"] == "latency-diff/summary/2"
    assert "env" in summary
    for s in summary["servers"]:
        for key in ("name", "valid", "requests", "rps", "rtt_ns", "diff_ns", "bytes_per_response",
                    "server_cpu_ns_per_request"):
            assert key in s
        for key in ("mean", "stdev", "ci95_low", "ci95_high", "n"):
            assert key in s["rtt_ns"] and key in s["diff_ns"] and key in s["rps"]
    csv_lines = (run / "summary.csv").read_text().splitlines()
    assert csv_lines[0].startswith("name,valid,reason,reference,threading")
    assert csv_lines[2].startswith("undertow,True,,False,blocking")
    assert "| undertow |" in (run / "report.md").read_text()


def _expanded(path) -> list[int]:
    """Every value of a lean fixture's histogram as its bucket's top: an independent percentile reference."""
    data = json.loads(path.read_text())
    values = [hi for _, hi, c in data["histogram"]["buckets"] for _ in range(c)]
    return sorted(values)


def _two_client_run(tmp_path, undertow_lean="valid-undertow.json"):
    both = "valid-dummy.txt|valid-dummy.json"
    return make_run(tmp_path, {
        "dummy": [(both, "100+28")] * 3,
        "floor": [("valid-dummy.txt|valid-floor.json", "50+50")] * 3,
        "undertow": [(f"valid-undertow.txt|{undertow_lean}", "150+50+4")] * 3,
    }, response_bytes={"undertow": 299}, jvm={"undertow": {"allocated_bytes": 2_000_000, "gc_count": 1,
                                                           "gc_time_ms": 3, "compile_time_ms": 40, "threads": 20}})


def test_two_clients_lean_is_primary_with_percentiles_and_agent_costs(tmp_path):
    from conftest import LEAN
    r = model.build(_two_client_run(tmp_path))
    assert r.clients == ("ab", "lean") and r.primary == "lean"
    floor, dummy, undertow = r.ranked  # the ladder first, by round trip
    assert (floor.name, floor.reference) == ("floor", True)
    lean_dummy = json.loads((LEAN / "valid-dummy.json").read_text())
    assert dummy.rtt.mean == pytest.approx(lean_dummy["elapsed_ns"] / 20000)
    assert dummy.clients["lean"].mean_rtt.mean == pytest.approx(lean_dummy["sum_ns"] / 20000)
    assert undertow.clients["ab"].rtt.mean == pytest.approx(109_950.0)
    # The same lean output three times: merged percentiles are those of one, ranked by hand here.
    values = _expanded(LEAN / "valid-dummy.json")
    expected = {k: values[math.ceil(p / 100 * len(values)) - 1]
                for k, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9))}
    got = dummy.clients["lean"].percentiles
    assert {k: got[k] for k in expected} == expected and got["max"] == lean_dummy["max_ns"]
    u_values = _expanded(LEAN / "valid-undertow.json")
    u_max = json.loads((LEAN / "valid-undertow.json").read_text())["max_ns"]
    assert undertow.clients["lean"].percentile_diffs == {
        **{k: u_values[math.ceil(p / 100 * len(u_values)) - 1] - expected[k]
           for k, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9))},
        "max": u_max - lean_dummy["max_ns"]}
    assert undertow.diff.mean == pytest.approx(undertow.rtt.mean - dummy.rtt.mean)
    # Each trial's median request, then across trials: identical trials, so an exact, zero-width interval.
    u_p50 = u_values[math.ceil(0.5 * len(u_values)) - 1]
    p50_diff = undertow.clients["lean"].p50_diff
    assert (p50_diff.mean, p50_diff.ci95_low, p50_diff.ci95_high) == (u_p50 - expected["p50"],) * 3
    assert undertow.clients["ab"].p50_diff is None  # ab has no per-request times
    # ab disagrees with lean here (the fixtures are different runs): flagged with the size.
    assert undertow.agreement == pytest.approx((109_950.0 - undertow.rtt.mean) / undertow.rtt.mean)
    assert any("ab and the lean client disagree" in w for w in undertow.warnings)
    # Agent counters per request of the lean client's 20000 requests; JIT busy 40 ms of a 1 s run.
    c = undertow.clients["lean"]
    assert c.alloc.mean == pytest.approx(100.0) and c.gc_count.mean == 1 and c.gc_time_ms.mean == 3
    assert any("JIT compiler threads used 40 ms of CPU during a 1000 ms measured run" in w for w in undertow.warnings)
    assert c.cpu_user.mean == pytest.approx(150 * 1e7 / 20000) and c.cpu_system.mean == pytest.approx(50 * 1e7 / 20000)
    assert dummy.clients["lean"].alloc is None  # no agent record: no number, not zero


def test_reports_show_percentiles_costs_clients_and_pinning(tmp_path):
    run = _two_client_run(tmp_path)
    assert analyze.main([str(run), "--quiet"]) == 0
    md = (run / "report.md").read_text()
    for text in ("## Round trip and diff by percentile", "| p50 [us] |", "## Cost per request on the server",
                 "alloc/req [B]", "## The two clients", "Pinning split (client on CPU 0, server on CPU 1)",
                 "critical-path latency", "![Diffs with their 95% intervals](diffs.png)",
                 "![Round trip by percentile](percentiles.png)"):
        assert text in md, text
    summary = json.loads((run / "summary.json").read_text())
    u = next(s for s in summary["servers"] if s["name"] == "undertow")
    assert u["clients"]["lean"]["alloc_bytes_per_request"]["mean"] == pytest.approx(100.0)
    assert set(u["clients"]["lean"]["percentiles_ns"]) == {"p50", "p90", "p99", "p99.9", "max"}
    header = (run / "summary.csv").read_text().splitlines()[0].split(",")
    for col in ("rtt_ns_p99.9", "diff_ns_max", "alloc_bytes_per_request", "ab_rtt_ns_mean", "lean_rtt_ns_mean"):
        assert col in header


def test_plots_are_valid_non_empty_images(tmp_path):
    import xml.etree.ElementTree as ET
    run = _two_client_run(tmp_path)
    assert analyze.main([str(run), "--quiet"]) == 0
    for stem in ("diffs", "percentiles"):
        png = (run / f"{stem}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
        width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
        assert width > 300 and height > 150
        svg = ET.parse(run / f"{stem}.svg").getroot()
        assert svg.tag.endswith("svg") and len(list(svg.iter())) > 50
    assert "undertow" in (run / "diffs.svg").read_text()


def test_a_lean_client_error_makes_the_trial_invalid(tmp_path):
    run = make_run(tmp_path, {"dummy": [("valid-dummy.json", None)] * 2,
                              "broken": [("valid-dummy.json", None), ("refused.json", None)]})
    r = model.build(run)
    (broken,) = r.invalid
    assert broken.reason == ("trial 2: lean client: cannot connect to 127.0.0.1:18181: Connection refused; "
                             "lean client completed 0 of 20000 requests")


def test_compare_says_not_significant_within_noise_and_names_a_change(tmp_path):
    same_a = _two_client_run(tmp_path / "a")
    same_b = _two_client_run(tmp_path / "b")
    slower = _two_client_run(tmp_path / "c", undertow_lean="valid-undertow-slower.json")
    a, b, c = model.build(same_a), model.build(same_b), model.build(slower)
    (cols, rows, _), notes = analyze.compare(a, b)
    assert cols[0] == "server" and notes == []
    assert {row[0]: row[-1] for row in rows} == {"floor": "not significant", "undertow": "not significant"}
    (_, rows, _), _ = analyze.compare(a, c)
    undertow = next(row for row in rows if row[0] == "undertow")
    change = c.servers[2].rtt.mean - a.servers[2].rtt.mean
    assert undertow[3] == f"{change / 1000:+.2f}"
    assert undertow[-1] == ("slower" if change > 0 else "faster")


def test_compare_from_the_command_line(tmp_path, capsys):
    a, b = _two_client_run(tmp_path / "a"), _two_client_run(tmp_path / "b")
    assert analyze.main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "change 95% CI [us]" in out and "not significant" in out
    assert analyze.main(["compare", str(a), str(tmp_path / "nope")]) == 1
