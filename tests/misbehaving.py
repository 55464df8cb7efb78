"""A deliberately faulty HTTP server for tests: each mode breaks one rule of the server contract.

Usage: python3 tests/misbehaving.py MODE PORT   (prints READY misbehaving PORT, serves until killed)
Modes: ok, alternate-length, status-500, close-after-3, extra-header, stale-date, frozen-date,
       no-keepalive, wrong-server, crash-after-3000, hang-after-3000, no-connection-header,
       trailing-bytes (two bytes after every response), slow-start (READY only after 120 s)
"""

from __future__ import annotations

import email.utils
import os
import socket
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from latency_diff.measure.conformance import load_reference  # noqa: E402

MODES = ("ok", "alternate-length", "status-500", "close-after-3", "extra-header", "stale-date", "frozen-date",
         "no-keepalive", "wrong-server", "crash-after-3000", "hang-after-3000", "no-connection-header",
         "trailing-bytes", "slow-start")
STARTED = email.utils.formatdate(usegmt=True)  # frozen-date: a valid Date that never changes


def response(mode: str, count: int, name: str) -> bytes:
    ref = load_reference()
    status = "HTTP/1.1 500 Internal Server Error" if mode == "status-500" else "HTTP/1.1 200 OK"
    body = ref.body + (b"!" if mode == "alternate-length" and count % 2 else b"")
    date = {"stale-date": "Mon, 28 Jul 2014 05:27:28 GMT", "frozen-date": STARTED}.get(
        mode, email.utils.formatdate(usegmt=True))
    lines = [status]
    for n, v in ref.headers:
        v = v.replace("{date}", date).replace("{server}", "other" if mode == "wrong-server" else name)
        if n == "Content-Length":
            v = str(len(body))
        if n == "Connection" and mode == "no-keepalive":
            v = "close"
        if n == "Connection" and mode == "no-connection-header":
            continue  # as most libraries answer an HTTP/1.1 request: persistent without saying so
        lines.append(f"{n}: {v}")
    if mode == "extra-header":
        lines.append("X-Powered-By: tests")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body + (b"\r\n" if mode == "trailing-bytes" else b"")


def serve(conn: socket.socket, mode: str, counter: list[int], name: str) -> None:
    buf = b""
    with conn:
        while True:
            data = conn.recv(4096)
            if not data:
                return
            buf += data
            while b"\r\n\r\n" in buf:
                _, buf = buf.split(b"\r\n\r\n", 1)
                counter[0] += 1
                if mode == "crash-after-3000" and counter[0] > 3000:
                    os._exit(3)
                if mode == "hang-after-3000" and counter[0] > 3000:
                    time.sleep(3600)  # alive, connection open, never answers
                conn.sendall(response(mode, counter[0], name))
                if mode == "no-keepalive" or (mode == "close-after-3" and counter[0] >= 3):
                    return


def main() -> None:
    mode, port = sys.argv[1], int(sys.argv[2])
    name = sys.argv[3] if len(sys.argv) > 3 else "misbehaving"
    if mode not in MODES:
        sys.exit(f"unknown mode {mode}; one of {', '.join(MODES)}")
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(16)
    if mode == "slow-start":
        time.sleep(120)
    print(f"READY {name} {srv.getsockname()[1]}", flush=True)
    counter = [0]
    while True:
        conn, _ = srv.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=serve, args=(conn, mode, counter, name), daemon=True).start()
        time.sleep(0)


if __name__ == "__main__":
    main()
