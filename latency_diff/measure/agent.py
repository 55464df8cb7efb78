"""Client of the java agent (agent/) that every Java server runs with.

The agent listens on a Unix socket inside the server JVM and answers each line with one JSON line
of counters: bytes allocated by all threads since start, GC count and time, JIT compile time. The
driver reads them just before and just after a measured phase; the differences divided by the
requests give allocation and GC per request, measured without touching the request path.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

from ..servers import agent_jar

FORMAT = "latency-diff/agent/1"
JIT_FORMAT = "latency-diff/agent-jit/1"
COUNTERS = ("allocated_bytes", "gc_count", "gc_time_ms", "compile_time_ms", "threads", "uptime_ms")
QUERY_TIMEOUT_S = 5.0


class AgentError(Exception):
    """The agent did not answer, or answered something else than its format."""


def jvm_flag(socket_path: Path) -> str:
    return f"-javaagent:{agent_jar()}={socket_path}"


def _ask(socket_path: Path, line: bytes, timeout: float) -> dict:
    """One line to the agent, its one JSON line back. Raises AgentError."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(socket_path))
            s.sendall(line)
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
    except OSError as e:
        raise AgentError(f"agent at {socket_path}: {e}") from e
    try:
        reply = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise AgentError(f"agent at {socket_path}: not JSON: {data[:200]!r}") from e
    if not isinstance(reply, dict):
        raise AgentError(f"agent at {socket_path}: not a JSON object: {data[:200]!r}")
    return reply


def query(socket_path: Path, timeout: float = QUERY_TIMEOUT_S) -> dict[str, int]:
    """One reading of the counters. Raises AgentError."""
    reply = _ask(socket_path, b"stats\n", timeout)
    if reply.get("format") != FORMAT:
        raise AgentError(f"agent at {socket_path}: not {FORMAT}: {reply!r:.200}")
    missing = [k for k in COUNTERS if not isinstance(reply.get(k), int)]
    if missing:
        raise AgentError(f"agent at {socket_path}: missing counter(s) {', '.join(missing)}")
    return {k: reply[k] for k in COUNTERS}


def jit(socket_path: Path, timeout: float = QUERY_TIMEOUT_S) -> tuple[int, int]:
    """(compile tasks at work, tasks queued) right now; -1 each where the JVM cannot tell. Raises AgentError."""
    reply = _ask(socket_path, b"jit\n", timeout)
    if reply.get("format") != JIT_FORMAT or not all(isinstance(reply.get(k), int) for k in ("compiling", "queued")):
        raise AgentError(f"agent at {socket_path}: not {JIT_FORMAT}: {reply!r:.200}")
    return reply["compiling"], reply["queued"]


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """What happened between two readings (threads: the count after)."""
    out = {k: after[k] - before[k] for k in ("allocated_bytes", "gc_count", "gc_time_ms", "compile_time_ms")}
    out["threads"] = after["threads"]
    return out
