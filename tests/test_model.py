import json

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
    assert summary["format"] == "latency-diff/summary/1"
    assert "env" in summary
    for s in summary["servers"]:
        for key in ("name", "valid", "requests", "rps", "rtt_ns", "diff_ns", "bytes_per_response",
                    "server_cpu_ns_per_request"):
            assert key in s
        for key in ("mean", "stdev", "ci95_low", "ci95_high", "n"):
            assert key in s["rtt_ns"] and key in s["diff_ns"] and key in s["rps"]
    csv_lines = (run / "summary.csv").read_text().splitlines()
    assert csv_lines[0].startswith("name,valid,reason,threading")
    assert csv_lines[2].startswith("undertow,True,,blocking")
    assert "| undertow |" in (run / "report.md").read_text()
