"""Every server under hostile input on loopback; afterwards it must still answer and not leak threads.

Each step is bounded in bytes, connections and time. Thread counts are the server process's OS
threads (/proc/<pid>/status). A burst opens BURST_CONNECTIONS connections; a server that leaked a
thread per connection would keep LEAK_SHARE of them or more after each burst, while a thread pool
grows for a few bursts and then levels off (Jetty's QueuedThreadPool here: 27 -> 86 -> 121 -> 146 ->
149 -> 149 threads over five bursts, all idle pool threads that retire after its 60 s idle timeout).
So the burst is repeated until one adds fewer than LEAK_SHARE * BURST_CONNECTIONS threads, at most
MAX_BURSTS times. Counts are read once they stop changing (threads of closed connections take a
moment to exit), not after fixed waits, so a slow machine gives the same verdict as a fast one.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from pathlib import Path

import pytest

from latency_diff.measure import conformance
from latency_diff.measure.process import ServerProcess
from latency_diff.servers import discover

SERVERS = discover()
DROPPED = 200  # connections opened and reset in each burst...
BURST_CONNECTIONS = DROPPED + 6  # ...plus the six of the other steps
LEAK_SHARE = 0.25
MAX_BURSTS = 6
#: A thread count is read when it has not changed for STABLE_S (at most SETTLE_MAX_S, then the last count).
STABLE_S = 1.0
SETTLE_MAX_S = 30.0
REQUEST_HTTP11 = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n\r\n"


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no Threads line")


def connect(port: int, timeout: float = 3.0) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def reset(s: socket.socket) -> None:
    """Close with RST (SO_LINGER 0): the peer sees a reset, as from a crashed client."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def drain(s: socket.socket, limit: float = 3.0) -> bytes:
    """Reads until the server closes, a timeout, or a reset; bounded in time."""
    data, deadline = b"", time.monotonic() + limit
    s.settimeout(0.3)
    while time.monotonic() < deadline:
        try:
            chunk = s.recv(65536)
        except TimeoutError:
            if data:
                break
            continue
        except ConnectionError:
            break
        if not chunk:
            break
        data += chunk
    return data


def answers_normally(port: int) -> bytes:
    """An HTTP/1.1 request on a fresh connection (Helidon refuses HTTP/1.0): 200 and the body."""
    with connect(port) as s:
        s.sendall(REQUEST_HTTP11)
        reader = conformance._Reader(s)
        r = reader.response()
    assert r.status == 200 and r.body == b"HelloWorld", r.raw[:200]
    return r.raw


def settle(pid: int) -> int:
    """The thread count once it has not changed for STABLE_S (or the last count after SETTLE_MAX_S)."""
    deadline = time.monotonic() + SETTLE_MAX_S
    count, since = threads(pid), time.monotonic()
    while time.monotonic() - since < STABLE_S and time.monotonic() < deadline:
        time.sleep(0.1)
        now = threads(pid)
        if now != count:
            count, since = now, time.monotonic()
    return count


def hostile(port: int) -> None:
    with connect(port) as s:  # a request one byte at a time
        for i in range(len(REQUEST_HTTP11)):
            s.sendall(REQUEST_HTTP11[i:i + 1])
        assert b"HelloWorld" in drain(s, 2.0)
    with connect(port) as s:  # three pipelined requests in one write
        s.sendall(REQUEST_HTTP11 * 3)
        got = b""
        deadline = time.monotonic() + 3
        while got.count(b"HelloWorld") < 3 and time.monotonic() < deadline:
            got += drain(s, 0.5)
        assert got.count(b"HelloWorld") == 3, got[:300]
    with connect(port) as s:  # a 64 KiB request line
        try:
            s.sendall(b"GET /" + b"a" * 65536 + b" HTTP/1.0\r\n\r\n")
        except ConnectionError:
            pass  # refused mid-send: fine
        drain(s)
    with connect(port) as s:  # garbage
        try:
            s.sendall(os.urandom(4096) + b"\r\n\r\n")
        except ConnectionError:
            pass
        drain(s)
    idle = connect(port)  # connects and sends nothing (kept open during the rest)
    s = connect(port)  # disconnects mid-response: many requests, then a reset without reading
    s.sendall(REQUEST_HTTP11 * 200)
    reset(s)
    dropped = [connect(port) for _ in range(DROPPED)]  # connections opened and dropped
    for c in dropped:
        reset(c)
    idle.close()


@pytest.mark.parametrize("server", SERVERS, ids=[s.name for s in SERVERS])
def test_server_survives_hostile_input_without_leaking_threads(server, tmp_path):
    with ServerProcess(server, 0, tmp_path / "log") as p:
        port = p.start()
        answers_normally(port)
        before = settle(p.pid)
        hostile(port)
        time.sleep(0.5)
        assert p.alive(), f"{server.name} died: {p.log_tail(5)}"
        answers_normally(port)
        if not server.nonconformant:
            result = conformance.check(port, name=server.expected_server_header, check_date_change=False,
                                       http=server.http)
            assert result.ok, result.summary()
        history = [before, settle(p.pid)]
        while history[-1] - history[-2] >= LEAK_SHARE * BURST_CONNECTIONS:
            # Pool growth or a leak? The same burst again: a pool levels off, a leak keeps growing.
            assert len(history) <= MAX_BURSTS, f"{server.name}: threads {history}: still growing: a leak"
            hostile(port)
            history.append(settle(p.pid))
        assert p.alive(), f"{server.name} died: {p.log_tail(5)}"
        answers_normally(port)
