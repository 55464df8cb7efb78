"""The conformance checker against every server (the server contract), and against faulty servers."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import numpy as np
import pytest

from latency_diff.measure import conformance
from latency_diff.measure.process import ServerProcess, java_executable
from latency_diff.servers import discover

SERVERS = discover()
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def dummy_length(tmp_path_factory) -> int:
    dummy = SERVERS[0]
    with ServerProcess(dummy, 0, tmp_path_factory.mktemp("dummy") / "log") as p:
        result = conformance.check(p.start(), name="dummy")
    assert result.ok, result.summary()
    return result.response_bytes


#: The one problem the checker must find for each server whose metadata declares a gap (`nonconformant`): any
#: other failure (a missing jar, a crash, a start timeout) fails the test, and so does a fixed library.
KNOWN_GAPS: dict[str, str] = {}


def test_every_declared_gap_has_its_expected_problem():
    assert {s.name for s in SERVERS if s.nonconformant} == set(KNOWN_GAPS)


@pytest.mark.parametrize("server", SERVERS, ids=[s.name for s in SERVERS])
def test_server_is_conformant_and_listens_on_loopback_only(server, dummy_length, tmp_path):
    """Each server over its own HTTP version, and over HTTP/1.1 too (--http 1.1 runs every server that way)."""
    assert server.artifact.is_file(), f"{server.artifact} is missing: build with scripts/build.sh"
    with ServerProcess(server, 0, tmp_path / "log") as p:
        port = p.start(timeout=60)
        results = {http: conformance.check(port, name=server.expected_server_header, reference_length=dummy_length,
                                           http=http,
                                           check_date_change=http == server.http)
                   for http in dict.fromkeys([server.http, "1.1"])}
        listening = subprocess.run(["ss", "-Htln", f"sport = :{port}"], capture_output=True, text=True).stdout
    # A Java socket bound to 127.0.0.1 may be listed in its IPv4-mapped form [::ffff:127.0.0.1].
    addresses = {line.split()[3].rsplit(":", 1)[0].removeprefix("[::ffff:").rstrip("]")
                 for line in listening.splitlines() if line.strip()}
    if server.binds_every_interface:  # declared, with the reason, in its server.toml
        assert addresses <= {"*", "0.0.0.0", "[::]"} and addresses, f"{server.name} listens on {addresses}"
    else:
        assert addresses == {"127.0.0.1"}, f"{server.name} listens on {addresses}, not only 127.0.0.1"
    for http, result in results.items():
        if server.nonconformant:
            assert [x for x in result.problems if not x.startswith(KNOWN_GAPS[server.name])] == [], \
                f"{server.name} over HTTP/{http}: problems other than its declared gap: {result.summary()}"
            assert not result.ok, f"{server.name} over HTTP/{http} now conforms: drop 'nonconformant'"
        else:
            assert result.ok, f"{server.name} over HTTP/{http}: {result.summary()}"


@pytest.mark.parametrize("server", SERVERS, ids=[s.name for s in SERVERS])
def test_busy_port_is_one_clear_line_and_a_failure(server):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        proc = subprocess.run(server.command(java_executable(), [], port), capture_output=True, text=True,
                              timeout=60)
    assert proc.returncode != 0
    assert "READY" not in proc.stdout
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr, proc.stderr
    assert len([line for line in proc.stderr.splitlines() if server.name + ":" in line]) == 1


def test_bad_argument_is_a_usage_error():
    dummy = SERVERS[0]
    proc = subprocess.run([java_executable(), "-jar", str(dummy.jar), "--port", "x"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("dummy: --port must be a number")


def test_dummy_answers_split_and_pipelined_requests_once_each(tmp_path):
    dummy = SERVERS[0]
    req = conformance.ab_request("127.0.0.1", 80)
    with ServerProcess(dummy, 0, tmp_path / "log") as p:
        port = p.start()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            for i in range(len(req)):  # one byte at a time
                s.sendall(req[i:i + 1])
            s.sendall(req * 3)  # three in one write
            reader = conformance._Reader(s)
            responses = [reader.response() for _ in range(4)]
            s.settimeout(0.3)
            with pytest.raises(TimeoutError):
                s.recv(1)
    assert [r.status for r in responses] == [200] * 4


@pytest.mark.parametrize("mode, problem", [
    ("alternate-length", "response length changed between requests"),
    ("status-500", "status 500, expected 200"),
    ("close-after-3", "response 4: keep-alive not honoured: "),
    ("no-keepalive", "Connection: 'close', expected 'keep-alive'"),
    ("extra-header", "header(s) not in the reference: x-powered-by"),
    ("stale-date", "is not within 5 s of this machine's clock"),
    ("wrong-server", "Server: 'other', expected 'misbehaving' (another server on the port?)"),
])
def test_checker_catches_each_fault(misbehaving, mode, problem):
    result = conformance.check(misbehaving(mode), name="misbehaving", check_date_change=False)
    assert not result.ok
    assert any(problem in p for p in result.problems), result.problems


def test_http11_request_bytes():
    assert conformance.request_bytes("1.1", "127.0.0.1", 8080) == (
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: ApacheBench/2.3\r\nAccept: */*\r\n\r\n")
    assert conformance.request_bytes("1.0", "127.0.0.1", 8080) == (
        b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\nHost: 127.0.0.1:8080\r\nUser-Agent: ApacheBench/2.3\r\n"
        b"Accept: */*\r\n\r\n")
    with pytest.raises(ValueError, match="expected '1.0' or '1.1'"):
        conformance.request_bytes("2", "127.0.0.1", 8080)


def test_http11_may_leave_out_connection_and_is_measured_as_if_it_had_it(misbehaving):
    port = misbehaving("no-connection-header")
    bare = conformance.check(port, name="misbehaving", http="1.1", check_date_change=False)
    assert bare.ok, bare.problems
    # The dummy's 296 bytes against this response plus the 24 bytes of "Connection: keep-alive\r\n".
    assert conformance.check(port, name="misbehaving", http="1.1", check_date_change=False,
                             reference_length=bare.response_bytes + 24).ok
    far = conformance.check(port, name="misbehaving", http="1.1", check_date_change=False,
                            reference_length=bare.response_bytes)
    assert far.problems == [f"response is {bare.response_bytes} bytes ({bare.response_bytes + 24} with Connection: "
                            f"keep-alive), the dummy's {bare.response_bytes}: more than 8 bytes apart"]
    # Over HTTP/1.0 (ab's request) the header is required: without it ab's connection would not be kept.
    old = conformance.check(port, name="misbehaving", http="1.0", check_date_change=False)
    assert "missing header(s): connection" in old.problems
    later = conformance.check_date_later(port, bare)  # the deferred check speaks the first one's HTTP version
    assert later is None


def test_checker_passes_a_correct_server_and_checks_length_against_the_dummy(misbehaving):
    port = misbehaving("ok")
    ok = conformance.check(port, name="misbehaving")
    assert ok.ok, ok.problems
    far = conformance.check(port, name="misbehaving", reference_length=ok.response_bytes - 9,
                            check_date_change=False)
    assert far.problems == [f"response is {ok.response_bytes} bytes, the dummy's {ok.response_bytes - 9}: "
                            "more than 8 bytes apart"]


@pytest.mark.parametrize("mode, problem", [
    ("ok", None), ("frozen-date", "Date did not change after more than a second")])
def test_the_deferred_date_check_catches_a_date_that_never_changes(misbehaving, mode, problem):
    port = misbehaving(mode)
    first = conformance.check(port, name="misbehaving", check_date_change=False)
    assert first.ok and first.date and first.received_at
    found = conformance.check_date_later(port, first)
    assert (found is None) if problem is None else (problem in found), found


def test_the_date_wait_ends_past_the_next_second_boundary():
    lag = conformance.DATE_CACHE_LAG_S
    assert conformance._date_wait(100.25, now=100.25) == pytest.approx(0.75 + lag)
    assert conformance._date_wait(100.25, now=101.5) == pytest.approx(101.0 + lag - 101.5)
    assert conformance._date_wait(100.25, now=103.0) == 0.0


@pytest.mark.parametrize("period", [0.75, 1.0, 1.01])
def test_the_date_wait_sees_a_cache_refreshed_on_its_own_timer_change(period):
    """A Date cached by a timer of any phase and a period up to a second (+ a tick) has changed by then."""
    for phase in np.arange(0.0, period, 0.05):
        for since in np.arange(100.0, 101.0, 0.05):
            def cached(t, phase=phase):  # the Date text a cache refreshed at phase + k * period shows
                return int(phase + ((t - phase) // period) * period)
            later = since + conformance._date_wait(since, now=since)
            assert cached(later) != cached(since), (phase, since)


def test_a_declared_server_header_stands_in_for_the_name_and_nothing_else(tmp_path):
    """JLHTTP always writes Server: JLHTTP/3.2; its metadata declares that value (with the reason), so the check
    accepts exactly it; any other value, its name included, is still a failure."""
    jlhttp = next(s for s in SERVERS if s.name == "jlhttp")
    assert jlhttp.server_header == "JLHTTP/3.2" and jlhttp.server_header_reason
    with ServerProcess(jlhttp, 0, tmp_path / "log") as p:
        port = p.start(timeout=60)
        assert conformance.check(port, name=jlhttp.expected_server_header, http="1.1", check_date_change=False).ok
        wrong = conformance.check(port, name="jlhttp", http="1.1", check_date_change=False)
    assert wrong.problems == ["Server: 'JLHTTP/3.2', expected 'jlhttp' (the library writes its own)"]
