"""The positive controls' TRUTH lines (latency_diff/analysis/controls.py), and the control servers that print them."""

from __future__ import annotations

import socket

import pytest

from latency_diff import rundir
from latency_diff.analysis import controls
from latency_diff.analysis.controls import Truth, parse_truth
from latency_diff.catalog import select
from latency_diff.measure.process import ServerProcess
from latency_diff.servers import discover

SPIN = ("TRUTH control-spin mode=fixed requests=4 spin_ns_total=8130 spin_ns_median=2021 configured_ns=2000 "
        "expected_ns=2000")
MODES = ("TRUTH control-modes mode=slow requests=8 spin_ns_total=24100 spin_ns_median=3012 configured_ns=3000 "
         "expected_ns=1500")


def test_a_truth_line_is_read_from_a_log():
    log = f"$ java -jar dummy.jar --port 0\nMODE control-spin fixed\nREADY control-spin 4242\n{SPIN}\n"
    truth = parse_truth(log)
    assert truth == Truth(name="control-spin", mode="fixed", requests=4, spin_ns_total=8130, spin_ns_median=2021,
                          configured_ns=2000, expected_ns=2000.0)
    assert truth.spin_ns_per_request == 2032.5  # 8130 / 4
    slow = parse_truth(f"MODE control-modes slow\nREADY control-modes 1\n{MODES}")
    assert (slow.mode, slow.requests, slow.spin_ns_median, slow.configured_ns, slow.expected_ns) == (
        "slow", 8, 3012, 3000, 1500.0)
    assert slow.spin_ns_per_request == 3012.5  # 24100 / 8


def test_a_decimal_expectation_no_requests_and_a_median_out_of_range():
    truth = parse_truth("TRUTH c mode=fast requests=0 spin_ns_total=0 spin_ns_median=none configured_ns=1000 "
                        "expected_ns=1437.5")
    assert truth.expected_ns == 1437.5 and truth.requests == 0
    assert truth.spin_ns_per_request is None and truth.spin_ns_median is None
    far = parse_truth("TRUTH c mode=fast requests=2 spin_ns_total=12000 spin_ns_median=none configured_ns=1000 "
                      "expected_ns=1500")
    assert far.spin_ns_median is None and far.spin_ns_per_request == 6000.0


def test_a_log_without_a_truth_line_has_none():
    assert parse_truth("$ java -jar dummy.jar\nREADY control-spin 4242\n") is None
    assert parse_truth("") is None
    assert parse_truth("a TRUTH somewhere else in a line\n") is None


def _line(**change: str) -> str:
    """A TRUTH line of one 2000 ns spin, with fields changed (value None: left out)."""
    fields = {"mode": "fixed", "requests": "1", "spin_ns_total": "2010", "spin_ns_median": "2010",
              "configured_ns": "2000", "expected_ns": "2000", **change}
    return "TRUTH c " + " ".join(f"{k}={v}" for k, v in fields.items() if v is not None)


@pytest.mark.parametrize("line, message", [
    ("TRUTH", "'TRUTH': expected 'TRUTH <name> mode=... requests=... spin_ns_total=... spin_ns_median=... "
              "configured_ns=... expected_ns=...'"),
    (_line().replace("TRUTH c ", "TRUTH "), "expected 'TRUTH <name>"),
    (_line(expected_ns=None), "missing expected_ns"),
    (_line(spin_ns_median=None, expected_ns=None), "missing spin_ns_median, expected_ns"),
    (_line(extra="1"), "unknown field 'extra'"),
    (_line() + " requests=1", "requests given twice"),
    (_line().replace("requests=1", "requests 1"), "'requests' is not key=value"),
    (_line(mode="medium"), "mode is 'medium', expected one of fixed, fast, slow"),
    (_line(requests="1.5"), "requests is '1.5', expected a whole number"),
    (_line(spin_ns_total="-2000"), "spin_ns_total is '-2000', expected a whole number"),
    (_line(spin_ns_median="2010.5"), "spin_ns_median is '2010.5', expected a whole number or none"),
    (_line(expected_ns="1.5e3"), "expected_ns is '1.5e3', expected a decimal number"),
    (_line(requests="3", spin_ns_total="5999"), "spin_ns_total 5999 is less than requests x configured_ns = 6000"),
    (_line(spin_ns_median="1999"), "spin_ns_median 1999 is less than configured_ns 2000"),
    (_line(requests="0", spin_ns_total="0"), "spin_ns_median 2010 with no requests"),
])
def test_a_malformed_truth_line_says_what_is_wrong(line, message):
    with pytest.raises(ValueError) as e:
        parse_truth(f"READY c 1\n{line}\n")
    assert message in str(e.value)
    assert str(e.value).startswith(f"line 2: {line!r}: ")


def test_two_truth_lines_or_a_contradicting_mode_line_are_errors():
    with pytest.raises(ValueError, match=r"^2 TRUTH lines \(lines 1, 3\); a process prints one"):
        parse_truth(f"{SPIN}\nREADY control-spin 1\n{SPIN}\n")
    with pytest.raises(ValueError, match=r"^line 1: 'MODE control-modes fast' does not match the TRUTH line \(line 2\)"
                                         r", which says control-modes mode=slow"):
        parse_truth(f"MODE control-modes fast\n{MODES}\n")


def test_truths_of_a_run_per_control_and_pair(tmp_path):
    w = rundir.Writer(tmp_path)
    w.log("log", "dummy-r1", "$ java\nREADY dummy 1\n")
    w.log("log", "control-spin-p1", f"$ java\nREADY control-spin 2\n{SPIN}\n")
    w.log("response", "control-spin-p1", "HTTP/1.1 200 OK\r\n")
    w.log("log", "control-modes-p2", f"MODE control-modes slow\n{MODES}\n")
    w.log("log", "undertow-p1", "READY undertow 3\n")
    w.log("log", "control-spin-p2", "$ java\nREADY control-spin 4\n")  # killed: no TRUTH line
    w.log("log", "control-modes-p1", "MODE control-modes fast\nTRUTH control-modes mode=fast requests=2 "
                                     "spin_ns_total=2100 spin_ns_median=1000 configured_ns=1000 expected_ns=1500\n")
    w.close()
    found = controls.truths(tmp_path)
    assert list(found) == ["control-spin", "control-modes"]
    assert list(found["control-spin"]) == [1, 2] and found["control-spin"][2] is None
    assert found["control-spin"][1].spin_ns_per_request == 2032.5
    assert list(found["control-modes"]) == [1, 2]  # in pair order, not log order
    assert [(t.mode, t.spin_ns_per_request) for t in found["control-modes"].values()] == [("fast", 1050.0),
                                                                                         ("slow", 3012.5)]
    # A server of another name is a control when its log says so.
    assert list(controls.truths(tmp_path, names=())) == ["control-spin", "control-modes"]


def test_a_malformed_truth_in_a_run_names_the_log(tmp_path):
    w = rundir.Writer(tmp_path)
    w.log("log", "control-spin-p3", "TRUTH control-spin mode=fixed\n")
    w.close()
    with pytest.raises(ValueError, match=r"logs.jsonl.xz: log control-spin-p3: line 1: .*missing requests"):
        controls.truths(tmp_path)


def test_the_controls_are_measured_only_when_named():
    found = {s.name: s for s in discover()}
    for name, variant in (("control-spin", "spin"), ("control-modes", "modes")):
        s = found[name]
        assert s.matrix_only and s.threading == "blocking" and s.module == "dummy-server"
        assert s.args == ("--variant", variant) and not s.baseline and not s.reference
    assert set(controls.CONTROLS) == {n for n in found if n.startswith("control-")}
    assert not {s.name for s in select(list(found.values()), None)} & set(controls.CONTROLS)
    assert [s.name for s in select(list(found.values()), "control-modes,control-spin")] == [
        "dummy", "dummy-nio", "control-spin", "control-modes", "floor"]


def _requests(port: int, count: int) -> None:
    """`count` keep-alive requests on one connection, ab's bytes, one at a time."""
    request = b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\nHost: 127.0.0.1\r\nUser-Agent: ApacheBench/2.3\r\n" \
              b"Accept: */*\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(count):
            s.sendall(request)
            data = b""
            while not data.endswith(b"\r\n\r\nHelloWorld"):
                chunk = s.recv(4096)
                assert chunk, "the server closed the connection"
                data += chunk


@pytest.mark.parametrize("name", controls.CONTROLS)
def test_a_control_stopped_by_sigterm_leaves_its_truth_in_its_log(name, tmp_path):
    """The driver's own start and stop (process.py): MODE before READY, TRUTH after SIGTERM, both in the log."""
    server = next(s for s in discover() if s.name == name)
    assert server.artifact.is_file(), f"{server.artifact} is missing: build with scripts/build.sh"
    with ServerProcess(server, 0, tmp_path / "log") as p:
        port = p.start(timeout=60)
        _requests(port, 2000)
        assert p.stop() == 143  # 128 + SIGTERM: the JVM ran its shutdown hooks and exited
    truth = parse_truth((tmp_path / "log").read_text())
    assert truth is not None and truth.name == name and truth.requests == 2000
    configured = {"fixed": 2000, "fast": 1000, "slow": 3000}[truth.mode]
    assert truth.configured_ns == configured
    assert truth.expected_ns == (2000.0 if name == "control-spin" else 1500.0)
    assert configured <= truth.spin_ns_per_request < configured + 48_000
    # The median: a clock read past the deadline, tens of ns here; a microsecond would be a broken spin.
    assert configured <= truth.spin_ns_median < configured + 1000


def _control_run(tmp_path, server_ns: int):
    """A run of control-spin, three pairs of a dummy at 20,000 ns and the control at server_ns, each pair's log with
    the TRUTH line its process would print: a median spin of 2,015 ns against 2,000 configured."""
    from runs import make_paired_run

    from latency_diff import rundir
    run = make_paired_run(tmp_path, {"control-spin": [(20_000, server_ns)] * 3})
    w = rundir.Writer(run)
    for k in (1, 2, 3):
        w.log("log", f"control-spin-p{k}", "MODE control-spin fixed\nREADY control-spin 8081\nTRUTH control-spin "
              "mode=fixed requests=1000 spin_ns_total=2100000 spin_ns_median=2015 configured_ns=2000 "
              "expected_ns=2000\n")
    w.close()
    return run


def test_a_controls_interval_is_held_against_its_known_diff(tmp_path):
    from latency_diff.analysis import evaluate
    from latency_diff.analysis.export import sentences
    # Diffs of 2,000 ns in every pair: the row is 2.00 us, the fixed width ±0.50; its truth 2,000 + (2,015 - 2,000).
    r = evaluate.build(_control_run(tmp_path / "a", 22_000))
    s = r.server("control-spin")
    assert s.truth == {"ns": 2015.0, "pairs": 3, "modes": ["fixed"], "held": True}
    assert ("control control-spin: known diff 2.02 us (its processes' own clock, 3 pairs, modes fixed), measured "
            "2.00 us [1.50, 2.50]: holds it, as it must") in sentences.checks(r)
    # A control measured at 7.00 us [6.50, 7.50] does not hold its 2.02: said.
    r = evaluate.build(_control_run(tmp_path / "b", 27_000))
    assert r.server("control-spin").truth["held"] is False
    assert any(c.endswith("does NOT hold it") for c in sentences.checks(r))
