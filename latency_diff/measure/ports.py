"""The run's ports on 127.0.0.1: P to P+PORTS-1, handed out in turn to the processes it starts.

A port that a server closed connections on stays in TIME_WAIT for a minute, and a listener that
does not set SO_REUSEADDR cannot bind it then; so each new process gets the next port that is free
even of TIME_WAIT connections (else the next one that is free at all).
"""

from __future__ import annotations

import socket
import subprocess
import threading
import time

#: Ports a run uses: the baseline dummies and the servers take turns on P .. P+8.
PORTS = 9


def holder(port: int) -> str:
    """Who listens on the port, if `ss` can tell."""
    try:
        out = subprocess.run(["ss", "-Htlnp", f"sport = :{port}"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.split("users:", 1)[1].strip() if "users:" in out else ""


def free(port: int, host: str = "127.0.0.1", *, strict: bool = False) -> bool:
    """Whether a listener could bind the port now; strict: even one that does not set SO_REUSEADDR."""
    with socket.socket() as s:
        if not strict:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def wait_free(port: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not free(port):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


class Ports:
    """Hands out the run's ports in turn; safe to call from both lanes."""

    def __init__(self, first: int):
        self.first = first
        self._next = 0
        self._lock = threading.Lock()

    def take(self) -> int:
        with self._lock:
            order = [self.first + (self._next + i) % PORTS for i in range(PORTS)]
            port = next((p for p in order if free(p, strict=True)), next((p for p in order if free(p)), order[0]))
            self._next = (port - self.first + 1) % PORTS
            return port
