"""A process's warm-up: requests, then a wait until its JIT has compiled what they made hot.

Under shared pinning a JVM's compiler threads share one CPU with everything else, so they fall
behind the requests: counting requests is not enough. After each round of requests the warm-up
waits for the JIT, and another round of a fifth of the first follows (at most WARMUP_ROUNDS in all)
while the compiler threads used more than JIT_BUSY_SHARE of the round's time. How to wait:
- "queue" (the default): until the compile queue is empty and no compiler thread is at work, asked
  of the kit's java agent (HotSpot's Compiler.queue) every QUEUE_POLL_S;
- "cpu": until the compiler threads' CPU time (/proc) has stood still for CPU_QUIET_S (the kit's
  earlier rule; `bench.sh warmup` compares the two);
- "none": no wait (the quick profile).
A process without the agent (the C floor, Node.js) gets the requests only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from ..records import WarmupRound
from . import agent
from .clients import Clients
from .samplers import CLOCK_TICKS_PER_S, jit_ticks

SETTLE_MODES = ("queue", "cpu", "none")
#: Another round follows while the JIT threads used more than this share of a round's wall time.
JIT_BUSY_SHARE = 0.01
WARMUP_ROUNDS = 6
SETTLE_MAX_S = 20.0
QUEUE_POLL_S = 0.05
#: The queue must be found empty this many times in a row: a compile that finishes can queue another at once.
QUEUE_EMPTY_POLLS = 2
CPU_QUIET_S = 1.0
CPU_POLL_S = 0.2


class WarmupFailed(Exception):
    """A warm-up request failed; the message says why."""


def warm_up(clients: Clients, pid: int, port: int, http: str, requests: int, response_bytes: int | None,
            agent_socket: Path | None, settle: str, say: Callable[[str], None]) -> list[WarmupRound]:
    """Warm-up rounds until the JIT keeps up; raises WarmupFailed."""
    rounds: list[WarmupRound] = []
    tick_ms = 1000 / CLOCK_TICKS_PER_S
    for i in range(1, WARMUP_ROUNDS + 1):
        n = requests if i == 1 else max(1, requests // 5)
        say(f"warming up ({n:,} requests" + (f", round {i})" if i > 1 else ")"))
        jit_before, t0 = jit_ticks(pid), time.monotonic()
        out = clients.lean(port, http, n, 0, response_bytes)
        if out.problem:
            raise WarmupFailed(out.problem)
        waits = agent_socket is not None and settle != "none"
        if agent_socket is None or settle == "none":
            settle_s = 0.0
        elif settle == "queue":
            settle_s = settle_queue(agent_socket, pid)
        else:
            settle_s = settle_cpu(pid)
        wall_ms = (time.monotonic() - t0) * 1000
        jit_ms = (jit_ticks(pid) - jit_before) * tick_ms
        rounds.append(WarmupRound(requests=n, wall_ms=round(wall_ms), jit_cpu_ms=round(jit_ms),
                                  settle_s=round(settle_s, 3)))
        if not waits or jit_ms <= JIT_BUSY_SHARE * wall_ms:
            return rounds
    return rounds


def settle_queue(agent_socket: Path, pid: int) -> float:
    """Waits until the agent finds the compile queue empty QUEUE_EMPTY_POLLS times in a row (at most SETTLE_MAX_S);
    returns the seconds waited."""
    start = time.monotonic()
    empty = 0
    while time.monotonic() - start < SETTLE_MAX_S:
        try:
            compiling, queued = agent.jit(agent_socket)
        except agent.AgentError:
            return time.monotonic() - start  # the counters' absence shows in the costs; nothing to wait for
        if compiling < 0:  # a JVM without the command: fall back to the compiler threads' CPU time
            return (time.monotonic() - start) + settle_cpu(pid)
        empty = empty + 1 if compiling == 0 and queued == 0 else 0
        if empty >= QUEUE_EMPTY_POLLS:
            break
        time.sleep(QUEUE_POLL_S)
    return time.monotonic() - start


def settle_cpu(pid: int) -> float:
    """Waits until the JIT threads' CPU time stands still for CPU_QUIET_S (at most SETTLE_MAX_S); returns the
    seconds waited."""
    start = last_change = time.monotonic()
    last = jit_ticks(pid)
    while time.monotonic() - last_change < CPU_QUIET_S and time.monotonic() - start < SETTLE_MAX_S:
        time.sleep(CPU_POLL_S)
        now = jit_ticks(pid)
        if now != last:
            last, last_change = now, time.monotonic()
    return time.monotonic() - start
