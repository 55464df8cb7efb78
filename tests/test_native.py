"""The lean client and the java agent against real servers; the C histogram on shared test vectors."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from latency_diff import lean
from latency_diff.histogram import Histogram
from latency_diff.measure import agent, conformance
from latency_diff.measure.process import ServerProcess, StartError
from latency_diff.servers import discover

SERVERS = {s.name: s for s in discover()}

# Known values and the buckets native/histogram.h must put them in (below 256 ns: exact; above: 256
# buckets per power of two). The same vectors pin the Python reader's view of the layout.
VECTORS = "0 1 255 256 511 512 513 1000 1023 1024 100000 1099511627775 1099511627776"
BUCKETS = [[0, 0, 1], [1, 1, 1], [255, 255, 1], [256, 256, 1], [511, 511, 1], [512, 513, 2], [1000, 1001, 1],
           [1022, 1023, 1], [1024, 1027, 1], [99840, 100095, 1], [1097364144128, 1099511627775, 2]]


def test_the_c_histogram_puts_known_values_in_known_buckets():
    proc = subprocess.run([str(lean.EXECUTABLE), "--histogram-selftest"], input=VECTORS, capture_output=True,
                          text=True, timeout=10)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["histogram"] == {"precision_bits": 8, "buckets": BUCKETS}
    assert (out["count"], out["min_ns"], out["clamped"]) == (13, 0, 1)  # the last value is beyond 2^40 - 1
    assert out["max_ns"] == 2**40 - 1
    h = Histogram.from_buckets(out["histogram"]["buckets"], out["max_ns"])
    assert h.percentile(50) == 513 and h.percentile(100) == 2**40 - 1


def test_the_c_histogram_rejects_what_is_not_a_count():
    proc = subprocess.run([str(lean.EXECUTABLE), "--histogram-selftest"], input="12 -3", capture_output=True,
                          text=True, timeout=10)
    assert proc.returncode == 2 and "-3" in proc.stderr


@pytest.fixture
def dummy(tmp_path):
    with ServerProcess(SERVERS["dummy"], 0, tmp_path / "dummy.log") as p:
        yield p.start()


def _lean(tmp_path, port: int, requests: int, warmup: int = 0,
          timeout_ms: int = 5000) -> tuple[subprocess.CompletedProcess, dict]:
    request = tmp_path / "request.bin"
    request.write_bytes(conformance.ab_request("127.0.0.1", port))
    cmd = lean.command("127.0.0.1", port, request, requests, timeout_ms, warmup=warmup)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return proc, json.loads(proc.stdout)


def test_the_lean_client_against_the_dummy_counts_every_response_and_byte(tmp_path, dummy):
    expected = conformance.check(dummy, name="dummy", check_date_change=False)
    proc, out = _lean(tmp_path, dummy, 2000, warmup=500)
    assert proc.returncode == 0, proc.stderr
    run = lean.parse(proc.stdout)
    assert run.problems(requests=2000, response_bytes=expected.response_bytes) == []
    assert (out["completed"], out["warmup"], out["non_2xx"], out["length_mismatch"]) == (2000, 500, 0, 0)
    assert out["request_bytes"] == len(conformance.ab_request("127.0.0.1", dummy))
    assert out["response_bytes"] == expected.response_bytes == 296
    assert run.histogram.count == 2000 and run.min_ns <= run.histogram.percentile(50) <= run.max_ns
    assert run.mean_rtt_ns <= run.rtt_ns  # the timed round trips are part of the elapsed time


def test_the_lean_client_reports_a_refused_connection_and_a_closing_server(tmp_path, misbehaving_port):
    proc, out = _lean(tmp_path, misbehaving_port, 10)
    assert proc.returncode == 1
    assert out["completed"] == 3 and "closed the connection" in out["error"]
    assert "lean client: request 4: the server closed the connection" in lean.parse(proc.stdout).problems()[0]
    proc, out = _lean(tmp_path, 1, 10)  # nothing listens on port 1
    assert proc.returncode == 1 and out["completed"] == 0 and "cannot connect" in out["error"]


def test_the_lean_client_counts_non_2xx_and_changed_lengths(tmp_path, misbehaving):
    proc, out = _lean(tmp_path, misbehaving("status-500"), 40)
    assert proc.returncode == 0 and (out["completed"], out["non_2xx"], out["length_mismatch"]) == (40, 40, 0)
    assert "40 non-2xx responses" in lean.parse(proc.stdout).problems(requests=40)
    # alternate-length: every second response has one more body byte than the first.
    proc, out = _lean(tmp_path, misbehaving("alternate-length"), 40)
    assert proc.returncode == 0 and (out["completed"], out["non_2xx"], out["length_mismatch"]) == (40, 0, 20)
    assert lean.parse(proc.stdout).problems(requests=40) == [
        "20 responses of another length than the first: the response length changed"]


def test_the_lean_client_ends_on_a_silent_server_and_on_bytes_after_a_response(tmp_path, misbehaving):
    proc, out = _lean(tmp_path, misbehaving("hang-after-3000"), 3010, timeout_ms=300)
    assert proc.returncode == 1 and out["completed"] == 3000
    assert out["error"] == "request 3001: no response within 300 ms"
    proc, out = _lean(tmp_path, misbehaving("trailing-bytes"), 10)
    assert proc.returncode == 1 and out["completed"] == 0
    assert out["error"].startswith("request 1: server sent bytes after the response (2 beyond its "), out["error"]


@pytest.fixture
def misbehaving_port(misbehaving):
    return misbehaving("close-after-3")


def test_the_lean_client_rejects_bad_arguments(tmp_path):
    for args in (["--requests", "0"], ["--request", str(tmp_path / "missing")], ["--what"]):
        base = ["--host", "127.0.0.1", "--port", "1", "--request", str(tmp_path / "r"), "--requests", "5"]
        (tmp_path / "r").write_bytes(b"GET / HTTP/1.0\r\n\r\n")
        proc = subprocess.run([str(lean.EXECUTABLE), *base, *args], capture_output=True, text=True, timeout=10)
        assert proc.returncode == 2, args
        assert proc.stderr.startswith("lean: ") and "usage" in proc.stderr.lower(), proc.stderr


class Recorder:
    """Two ports served by one recorder: every request's port, in the order the requests arrived."""

    def __init__(self):
        import socket
        import threading
        self.order: list[int] = []
        self.lock = threading.Lock()
        self.listeners = []
        for _ in range(2):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            self.listeners.append(s)
            threading.Thread(target=self._accept, args=(s,), daemon=True).start()
        self.ports = [s.getsockname()[1] for s in self.listeners]
        from misbehaving import response
        self.response = response("ok", 0, "recorder")

    def _accept(self, listener):
        import threading
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn, listener.getsockname()[1]), daemon=True).start()

    def _serve(self, conn, port):
        buf = b""
        with conn:
            while data := conn.recv(4096):
                buf += data
                while b"\r\n\r\n" in buf:
                    _, buf = buf.split(b"\r\n\r\n", 1)
                    with self.lock:
                        self.order.append(port)
                    conn.sendall(self.response)

    def close(self):
        for s in self.listeners:
            s.close()


def test_the_interleaved_client_alternates_in_abba_runs_and_keeps_a_histogram_per_side(tmp_path):
    rec = Recorder()
    try:
        request = tmp_path / "request.bin"
        request.write_bytes(conformance.ab_request("127.0.0.1", rec.ports[0]))
        cmd = lean.pair_command("127.0.0.1", rec.ports[0], rec.ports[1], request, 24, 3, 12, 5000, warmup=2)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    finally:
        rec.close()
    assert proc.returncode == 0, proc.stderr
    a, b = rec.ports
    # Warm-up: a, b, a, b. Then runs of 3 in ABBA order, then BAAB: aaa bbb bbb aaa, bbb aaa aaa bbb, ...
    quad = [a] * 3 + [b] * 6 + [a] * 3
    baab = [b] * 3 + [a] * 6 + [b] * 3
    assert rec.order == [a, b, a, b] + quad + baab + quad + baab
    run = lean.parse_pair(proc.stdout)
    # 24 requests a side in segments of 12: 2 segments, each with one histogram per side of exactly 12 values.
    assert len(run.segments) == 2 and all(g[w].count == 12 == g[w].histogram.count for g in run.segments for w in g)
    assert run.sides["base"].port == a and run.sides["server"].port == b
    assert run.problems(requests=24, response_bytes={"base": len(rec.response), "server": len(rec.response)}) == []


def test_the_interleaved_client_names_the_side_that_failed(tmp_path, misbehaving):
    ok, closing = misbehaving("ok"), misbehaving("close-after-3")
    request = tmp_path / "request.bin"
    request.write_bytes(conformance.ab_request("127.0.0.1", ok))
    proc = subprocess.run(lean.pair_command("127.0.0.1", ok, closing, request, 40, 2, 4, 5000),
                          capture_output=True, text=True, timeout=60)
    run = lean.parse_pair(proc.stdout)
    assert proc.returncode == 1
    # The kernel answers a request sent after the close with a reset when the close came first: either is right.
    assert run.error in ("request 4 to b: the server closed the connection",
                         "request 4 to b: the server closed the connection (reset)")
    # Runs of 2 in ABBA order: a a, b b, b (its third, the last it answers), b (the fourth: closed).
    assert (run.sides["base"].completed, run.sides["server"].completed, len(run.segments)) == (2, 3, 0)


def test_the_interleaved_client_refuses_segments_that_split_a_quad(tmp_path):
    (tmp_path / "r").write_bytes(b"GET / HTTP/1.0\r\n\r\n")
    base = [str(lean.EXECUTABLE), "--host", "127.0.0.1", "--port", "1", "--interleave", "2", "--request",
            str(tmp_path / "r")]
    for args, message in ((["--requests", "12", "--run", "4", "--segment", "12"], "not a multiple of 2 x --run"),
                          (["--requests", "20", "--run", "2", "--segment", "8"], "is not a multiple of --segment"),
                          (["--requests", "8", "--segment", "8"], "--interleave needs --run and --segment")):
        proc = subprocess.run(base + args, capture_output=True, text=True, timeout=10)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)


def test_the_agent_reports_allocation_and_gc_of_the_server_jvm(tmp_path):
    sock = tmp_path / "agent.sock"
    # A 1 MB young generation: the requests' garbage must set off young collections.
    flags = [agent.jvm_flag(sock), "-Xmn1m"]
    with ServerProcess(SERVERS["undertow"], 0, tmp_path / "u.log", jvm_flags=flags) as p:
        port = p.start()
        before = agent.query(sock)
        assert set(before) == set(agent.COUNTERS) and before["allocated_bytes"] > 0 and before["threads"] > 1
        proc, out = _lean(tmp_path, port, 20_000)
        assert proc.returncode == 0 and out["completed"] == 20_000, proc.stderr
        after = agent.query(sock)
    d = agent.delta(before, after)
    # Undertow allocates per request (exchange objects, headers): over 100 bytes a request, under 100 KB.
    assert 20_000 * 100 < d["allocated_bytes"] < 20_000 * 100_000, d
    assert d["gc_count"] >= 1 and d["gc_count"] == after["gc_count"] - before["gc_count"], d
    assert after["uptime_ms"] > before["uptime_ms"]


def test_the_agent_says_when_the_compile_queue_is_empty(tmp_path):
    sock = tmp_path / "agent.sock"
    with ServerProcess(SERVERS["dummy"], 0, tmp_path / "d.log", jvm_flags=[agent.jvm_flag(sock)]) as p:
        p.start()
        compiling, queued = agent.jit(sock)
        assert compiling >= 0 and queued >= 0
        # An idle JVM empties its queue within seconds.
        deadline = time.monotonic() + 20
        while agent.jit(sock) != (0, 0):
            assert time.monotonic() < deadline, agent.jit(sock)
            time.sleep(0.1)


def test_a_missing_agent_is_a_clear_error(tmp_path):
    with pytest.raises(agent.AgentError, match="agent at .*nope.sock"):
        agent.query(tmp_path / "nope.sock", timeout=1)


def test_the_agent_stops_the_jvm_with_a_clear_line_when_it_cannot_listen(tmp_path):
    bad = tmp_path / "no-such-dir" / "agent.sock"
    p = ServerProcess(SERVERS["dummy"], 0, tmp_path / "d.log", jvm_flags=[agent.jvm_flag(bad)])
    with pytest.raises(StartError, match=r"dummy exited with status -?\d+ before READY: latency-diff-agent: cannot "
                       r"listen on unix socket .*no-such-dir/agent.sock: .*No such file or directory$"):
        p.start(timeout=30)
    p.stop()
