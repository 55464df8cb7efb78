"""One process pair: a fresh server beside the round's baseline, both warmed up, then ABBA blocks.

A *round* starts one fresh baseline dummy (port P); each server of the round then gets a fresh
process (port P+1) beside it, pinned alike. The pair is checked (conformance of the server against
the baseline's response length), warmed up (requests, then a quiet JIT), and measured in quads of
four blocks, D S S D then S D D S, per client, the clients taking turns quad by quad. Each block is
one client process over a fresh connection. Around the measured phase the driver samples both
processes' CPU and JIT time (/proc) and JVM counters (the agent). Everything raw goes to files of
the run; the pair's record (pairs.jsonl) names them.

A server's pairs fall in different rounds, so each has a fresh baseline process too: the baseline's
own between-process variation is in every server's interval.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import agent, conformance, paired
from .clients import Clients
from .process import ServerProcess, StartError, pin_threads
from .samplers import CLOCK_TICKS_PER_S, Sample, delta, jit_ticks
from .servers import Server
from .settings import Settings

#: Warm-up: the JIT is done when its compiler threads' CPU time stands still this long (/proc)...
JIT_QUIET_S = 1.0
JIT_POLL_S = 0.2
JIT_SETTLE_MAX_S = 20.0
#: ...and another round of a fifth of the warm-up follows if it worked more than this share of a round.
JIT_BUSY_SHARE = 0.01
WARMUP_ROUNDS = 6


class PairFailed(Exception):
    """The pair cannot be measured; `phase` says where, the message why."""

    def __init__(self, phase: str, reason: str):
        super().__init__(reason)
        self.phase = phase


@dataclass
class Running:
    """A started, checked and warmed-up process of a pair."""
    server: Server
    proc: ServerProcess
    agent_socket: Path | None
    response_bytes: int
    check: conformance.Result
    warmup: list[dict] = field(default_factory=list)


@dataclass
class Context:
    """What every pair of a run shares."""
    s: Settings
    run_dir: Path
    java: str
    agent_dir: Path
    clients: Clients
    say: Callable[[str], None]
    where: dict
    #: Every server process started and not yet stopped, so that an interrupt can stop them all.
    running: list[ServerProcess] = field(default_factory=list)


def start(ctx: Context, server: Server, port: int, tag: str, *, reference_length: int | None,
          http: str) -> Running:
    """Starts a server process, checks its response, warms it up. Raises PairFailed (the process stopped)."""
    ctx.where["phase"] = "start"
    sock = ctx.agent_dir / f"{tag}.sock" if server.is_java else None
    cpu = ctx.s.server_cpu
    late = cpu is not None and ctx.s.pin_after_warmup and server.is_java
    # Pinned late, a JVM must size itself for the one CPU it will run on: its GC and JIT threads, its pools.
    flags = [*ctx.s.jvm_flags, *(["-XX:ActiveProcessorCount=1"] if late else []),
             *([agent.jvm_flag(sock)] if sock else [])]
    proc = ServerProcess(server, port, ctx.run_dir / "logs" / f"{tag}.log", jvm_flags=flags,
                         cpu=None if late else cpu, java=ctx.java)
    ctx.running.append(proc)
    try:
        running = _check_and_warm(ctx, server, proc, sock, port, tag, reference_length, http)
        if late:
            try:
                pin_threads(proc.pid, cpu)
            except OSError as e:
                raise PairFailed("warmup", f"could not pin the server to CPU {cpu}: {e}") from e
        return running
    except BaseException:
        proc.stop()  # a failed start, check or warm-up leaves nothing running
        ctx.running.remove(proc)
        raise


def _check_and_warm(ctx: Context, server: Server, proc: ServerProcess, sock: Path | None, port: int, tag: str,
                    reference_length: int | None, http: str) -> Running:
    try:
        proc.start(ctx.s.start_timeout)
    except StartError as e:
        raise PairFailed("start", str(e)) from e
    ctx.where["phase"] = "conformance"
    # The live-Date check needs a second: made after the measured blocks (conformance.check_date_later).
    result = conformance.check(port, name=server.wire_name, reference_length=reference_length,
                               check_date_change=False, http=http)
    if result.raw:
        (ctx.run_dir / "responses" / f"{tag}.txt").write_bytes(result.raw)
    if not result.ok or result.response_bytes is None:
        raise PairFailed("conformance", result.summary())
    running = Running(server, proc, sock, result.response_bytes, result)
    if ctx.s.warmup:
        ctx.where["phase"] = "warmup"
        _warm_up(ctx, running, port, tag, http)
    return running


def _warm_up(ctx: Context, r: Running, port: int, tag: str, http: str) -> None:
    """Warm-up requests, then waits for the JIT to finish what they queued; tops up while it was busy.

    Under shared pinning the client and the servers share one CPU, so the JIT compiler threads fall
    behind the requests: counting requests is not enough. After each round the compiler threads' CPU
    time must stand still for JIT_QUIET_S; another round of a fifth of the warm-up follows (at most
    WARMUP_ROUNDS in all) when they used more than JIT_BUSY_SHARE of the round's time. The quick
    profile skips the waiting.
    """
    tick_ms = 1000 / CLOCK_TICKS_PER_S
    for i in range(1, WARMUP_ROUNDS + 1):
        n = ctx.s.warmup if i == 1 else max(1, ctx.s.warmup // 5)
        ctx.say(f"{tag}: warming up ({n:,} requests" + (f", round {i})" if i > 1 else ")"))
        jit_before, t0 = jit_ticks(r.proc.pid), time.monotonic()
        out = ctx.run_dir / "warmup" / f"{tag}-w{i}.json"
        problem = ctx.clients.lean(port, http, n, 0, out, r.response_bytes)
        if problem:
            raise PairFailed("warmup", problem)
        if not r.server.is_java or not ctx.s.wait_for_jit:
            return
        settle_s, jit_after = _settle_jit(r.proc.pid)
        wall_ms = (time.monotonic() - t0) * 1000
        jit_ms = (jit_after - jit_before) * tick_ms
        r.warmup.append({"requests": n, "jit_cpu_ms": round(jit_ms), "settle_s": round(settle_s, 2),
                         "wall_ms": round(wall_ms)})
        if jit_ms <= JIT_BUSY_SHARE * wall_ms:
            return


def _settle_jit(pid: int) -> tuple[float, int]:
    """Waits until the JIT threads' CPU time stands still for JIT_QUIET_S (at most JIT_SETTLE_MAX_S);
    returns the seconds waited and the ticks then."""
    start_t = last_change = time.monotonic()
    last = jit_ticks(pid)
    while time.monotonic() - last_change < JIT_QUIET_S and time.monotonic() - start_t < JIT_SETTLE_MAX_S:
        time.sleep(JIT_POLL_S)
        now = jit_ticks(pid)
        if now != last:
            last, last_change = now, time.monotonic()
    return time.monotonic() - start_t, last


def block_plan(quads: int, clients: tuple[str, ...]) -> list[tuple[str, int, int, str]]:
    """(client, quad, slot, target) of every block of a pair, in the order they run: per quad number,
    each client's four blocks (ABBA, BAAB, ...), the clients taking turns going first."""
    plan = []
    for q in range(quads):
        order = clients if q % 2 == 0 else tuple(reversed(clients))
        for client in order:
            for slot, target in enumerate(paired.quad_order(q)):
                plan.append((client, q, slot, target))
    return plan


def measure(ctx: Context, base: Running, srv: Running, entry: dict, quads: int, http: str) -> None:
    """The pair's blocks; fills entry["blocks"] and entry["costs"]. Raises PairFailed on a bad block."""
    ctx.where["phase"] = "measure"
    s = ctx.s
    clients = tuple(c for c in s.clients if c == "lean" or http == "1.0")  # ab speaks HTTP/1.0 only
    ports = {"base": base.proc.port, "server": srv.proc.port}
    lengths = {"base": base.response_bytes, "server": srv.response_bytes}
    served = {"base": 0, "server": 0}
    name = srv.server.name
    folder = ctx.run_dir / "blocks" / name
    folder.mkdir(parents=True, exist_ok=True)
    blocks = entry["blocks"] = []
    plan = block_plan(quads, clients)
    before = {"base": Sample(base.proc.pid, base.agent_socket), "server": Sample(srv.proc.pid, srv.agent_socket)}
    t0 = time.monotonic()
    for i, (client, q, slot, target) in enumerate(plan, 1):
        ctx.say(f"{entry['tag']}: block {i}/{len(plan)} ({client}, {target})")
        stem = f"p{entry['pair']}-{client}-q{q}-{slot}{target[0]}"
        rel = f"blocks/{name}/{stem}." + ("json" if client == "lean" else "txt")
        if client == "lean":
            problem = ctx.clients.lean(ports[target], http, s.block_requests, s.block_warmup, ctx.run_dir / rel,
                                       lengths[target])
            served[target] += s.block_requests + s.block_warmup
        else:
            problem = ctx.clients.ab(ports[target], s.block_requests, ctx.run_dir / rel, lengths[target])
            served[target] += s.block_requests
        blocks.append({"client": client, "quad": q, "slot": slot, "target": target, "file": rel})
        for r in (base, srv):  # a crash explains a failed block better than the client's view of it
            if not r.proc.alive():
                raise PairFailed("measure", f"{r.server.name} exited with status {r.proc.proc.returncode} during "
                                 f"the blocks: {r.proc.log_tail(5)}")
        if problem:
            who = "the baseline" if target == "base" else name
            raise PairFailed("measure", f"{client} block against {who}: {problem}")
    wall = time.monotonic() - t0
    entry["costs"] = {who: delta(before[who], Sample(r.proc.pid, r.agent_socket), served[who], wall)
                      for who, r in (("base", base), ("server", srv))}
    entry["measure_s"] = round(wall, 3)


def date_check(ctx: Context, r: Running) -> None:
    """The live-Date half of conformance (needs a second since the first check): once per server and run."""
    ctx.where["phase"] = "date check"
    problem = conformance.check_date_later(r.proc.port, r.check)  # in the HTTP version of the first check
    if problem:
        raise PairFailed("conformance", problem)


def stop(ctx: Context, r: Running | ServerProcess | None) -> int | None:
    """Stops a process of the pair (SIGTERM, then SIGKILL) and waits until its port is free."""
    if r is None:
        return None
    proc = r.proc if isinstance(r, Running) else r
    status = proc.stop()
    if proc in ctx.running:
        ctx.running.remove(proc)
    return status


def affinity(r: Running) -> list[int] | None:
    """The CPUs any of the server's threads may run on (one, when it is pinned)."""
    cpus: set[int] = set()
    try:
        for tid in os.listdir(f"/proc/{r.proc.pid}/task"):
            try:
                cpus |= os.sched_getaffinity(int(tid))
            except ProcessLookupError:
                continue
    except OSError:
        return None
    return sorted(cpus)
