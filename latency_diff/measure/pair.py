"""One process pair: each process prepared (started, checked, warmed up), handed over to the measured CPU,
then measured against the other.

Preparing a process is most of a pair's cost (a JVM's start, its warm-up, its JIT), so under shared
pinning it happens on the other CPU while the measured CPU measures the pair before: the driver's
*preparing lane* (driver.py). A prepared process's threads are then moved to the measured CPU
(`hand_over`), and the pair is measured there: the interleaved lean client holds a connection to the
baseline and one to the server and alternates between them (paired.py); ab, which cannot
interleave, adds ABBA quads of blocks as a cross-check. Around the measured phase both processes'
CPU and JIT time (/proc) and JVM counters (the agent) are sampled. Every client output goes to the
run's blocks file; the pair's record (records.PairRecord) says what happened.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import lean, paired, rundir
from ..abparse import parse as parse_ab
from ..records import BlockRecord, CostRecord, PairRecord, ProcessRecord
from ..servers import Server
from ..settings import Settings
from . import agent, conformance
from .clients import Clients
from .process import ServerProcess, StartError, allow_cpus, pin_threads
from .samplers import Sample, delta
from .warmup import WarmupFailed, warm_up

#: The reference response's body: ab checks its document length against it.
BODY_BYTES = 10


class PairFailed(Exception):
    """The pair cannot be measured; `phase` says where, the message why."""

    def __init__(self, phase: str, reason: str):
        super().__init__(reason)
        self.phase = phase


@dataclass
class Prepared:
    """A started, checked and warmed-up process."""
    server: Server
    proc: ServerProcess
    agent_socket: Path | None
    check: conformance.Result
    record: ProcessRecord
    #: When its warm-up ended (time.monotonic()): how long it then sat idle before it was measured is recorded.
    ready_at: float = field(default_factory=time.monotonic)

    @property
    def port(self) -> int:
        assert self.proc.port is not None
        return self.proc.port


@dataclass
class Context:
    """What every pair of a run shares."""
    settings: Settings
    writer: rundir.Writer
    java: str
    agent_dir: Path
    #: The measured CPU's clients, and the preparing lane's (the same CPU when there is no second lane).
    measure_clients: Clients
    prepare_clients: Clients
    #: The CPU processes start and warm up on; the measured CPU (None: not pinned).
    prepare_cpu: int | None
    measure_cpu: int | None
    #: Every server process started and not yet stopped, so that an interrupt can stop them all.
    running: list[ServerProcess] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)
    #: The process the preparing lane is working on (and its tag), and per process the seconds it was lent the
    #: measured CPU.
    preparing: ServerProcess | None = None
    preparing_tag: str | None = None
    lent: dict[int, float] = field(default_factory=dict)

    def stop_everything(self) -> None:
        self.stopping.set()
        self.measure_clients.stop()
        self.prepare_clients.stop()
        with self.lock:
            procs = list(self.running)
        for proc in procs:
            proc.stop(timeout=3)
        with self.lock:
            self.running.clear()


def prepare(ctx: Context, server: Server, port: int, tag: str, *, reference_length: int | None, http: str,
            stage: dict, say: Callable[[str], None]) -> Prepared:
    """Starts a server process on the preparing CPU, checks its response and warms it up. Raises PairFailed
    (the process is then stopped)."""
    t0 = time.monotonic()
    stage.update(server=server.name, phase="start")
    sock = ctx.agent_dir / f"{tag}.sock" if server.is_java and ctx.settings.agent else None
    flags = [*ctx.settings.jvm_flags, *([agent.jvm_flag(sock)] if sock else [])]
    proc = ServerProcess(server, port, ctx.writer.live_log(tag), jvm_flags=flags, cpu=ctx.prepare_cpu,
                         java=ctx.java)
    with ctx.lock:
        ctx.running.append(proc)
        ctx.preparing, ctx.preparing_tag = proc, tag
    try:
        if ctx.stopping.is_set():
            raise PairFailed("start", "the run is stopping")
        try:
            proc.start(ctx.settings.start_timeout)
        except StartError as e:
            raise PairFailed("start", str(e)) from e
        stage["phase"] = "conformance"
        # The live-Date half of the check needs a second: made after the measured blocks (date_check).
        result = conformance.check(port, name=server.expected_server_header, reference_length=reference_length,
                                   check_date_change=False, http=http)
        if result.raw:
            ctx.writer.log("response", tag, result.raw.decode("latin-1"))
        if not result.ok or result.response_bytes is None:
            raise PairFailed("conformance", result.summary())
        record = ProcessRecord(tag=tag, pid=proc.pid, port=port, response_bytes=result.response_bytes)
        if ctx.settings.warmup:
            stage["phase"] = "warmup"
            try:
                record.warmup = warm_up(ctx.prepare_clients, proc.pid, port, http, ctx.settings.warmup,
                                        result.response_bytes, sock, ctx.settings.settle if server.is_java else "none",
                                        lambda text: say(f"{tag}: {text}"))
            except WarmupFailed as e:
                raise PairFailed("warmup", str(e)) from e
        record.prepare_s = round(time.monotonic() - t0, 3)
        return Prepared(server, proc, sock, result, record)
    except BaseException:
        stop(ctx, proc, tag)  # a failed start, check or warm-up leaves nothing running
        raise
    finally:
        with ctx.lock:
            if ctx.preparing is proc:
                ctx.preparing, ctx.preparing_tag = None, None


def abort(ctx: Context, tag: str) -> bool:
    """Kills the process that the preparing lane is preparing as `tag`, if it is that one (True): its start, check
    or warm-up then fails at once, prepare() stops it and the lane goes on to the next process. For a process no
    longer wanted, whose preparation would otherwise be waited for."""
    with ctx.lock:
        proc = ctx.preparing if ctx.preparing_tag == tag else None
        if proc is not None:
            proc.kill()
    return proc is not None


def lend(ctx: Context, seconds: float) -> None:
    """While the measured CPU waits for the preparing lane (nothing is measured): the process being prepared may run
    on both CPUs, so that its JIT compiles beside its warm-up. hand_over pins it to the measured CPU alone. `seconds`:
    the wait since the last call, added to the process's lent time (its record's lent_s)."""
    if ctx.prepare_cpu is None or ctx.measure_cpu is None or ctx.prepare_cpu == ctx.measure_cpu:
        return
    with ctx.lock:
        proc = ctx.preparing
    pid = proc.pid if proc is not None else None
    if pid is None:
        return
    try:
        allow_cpus(pid, {ctx.prepare_cpu, ctx.measure_cpu})
    except OSError:  # it ended: its preparation says why
        return
    ctx.lent[pid] = ctx.lent.get(pid, 0.0) + seconds


def hand_over(ctx: Context, p: Prepared) -> None:
    """Moves every thread of a prepared process to the measured CPU (also those lent it). Raises PairFailed."""
    p.record.lent_s = round(ctx.lent.pop(p.proc.pid, 0.0), 3) if p.proc.pid is not None else 0.0
    cpu = ctx.measure_cpu
    if cpu is not None and cpu != ctx.prepare_cpu:
        try:
            pin_threads(p.proc.pid, cpu)
        except OSError as e:
            raise PairFailed("hand-over", f"could not move {p.server.name} to CPU {cpu}: {e}") from e
    p.record.affinity = affinity(p.proc.pid)


#: The run-length check measures at this many times the run length.
CHECK_FACTOR = 4


@dataclass
class Plan:
    """What one pair measures: the interleaved client's segments, and ab's quads."""
    segments: int
    ab_quads: int


def measure(ctx: Context, base: Prepared, srv: Prepared, rec: PairRecord, plan: Plan, http: str,
            stage: dict, say: Callable[[str], None]) -> list[paired.Unit]:
    """The pair's measured phase; writes its blocks and fills rec.costs, rec.interleave and rec.seconds["measure"].
    Returns the headline client's units (for the schedule). Raises PairFailed on a block that does not count.

    The costs (CPU, JIT, allocation per request) cover the headline client's part: the interleaved client's
    requests, or ab's blocks when ab is the only client."""
    stage["phase"] = "measure"
    settings = ctx.settings
    # ab speaks HTTP/1.0 only
    clients = settings.clients if http == "1.0" else tuple(c for c in settings.clients if c != "ab")
    units: dict[str, list[paired.Unit]] = {}
    t0 = time.monotonic()
    check_first = rec.pair % 2 == 1  # before the measurement in odd pairs, after it in even ones: a trend cancels
    if "lean" in clients and settings.check_segments and check_first:
        _run_length_check(ctx, base, srv, rec, http, "before", say)
    if "lean" in clients:
        requests = plan.segments * settings.segment
        rec.interleave = {"requests": requests, "run": settings.run_length, "segment": settings.segment,
                          "warmup": settings.pair_warmup}
        say(f"{rec.server} pair {rec.pair}: lean client, {requests:,} requests to each in runs of "
            f"{settings.run_length}")
        with _Costs(base, srv, rec, requests + settings.pair_warmup):
            out = ctx.measure_clients.interleaved(
                base.port, srv.port, http, requests, settings.run_length, settings.segment, settings.pair_warmup,
                {"base": base.record.response_bytes, "server": srv.record.response_bytes})
        if out.data is not None:
            ctx.writer.block(BlockRecord(rec.server, rec.pair, "lean-pair", out.data, stderr=out.stderr))
        check_alive(base, srv)
        if out.problem:
            raise PairFailed("measure", f"lean client: {out.problem}")
        run = lean.parse_pair(out.data)  # type: ignore[arg-type]
        units["lean"] = [segment_unit(g) for g in run.segments]
    if "lean" in clients and settings.check_segments and not check_first:
        _run_length_check(ctx, base, srv, rec, http, "after", say)
    if "ab" in clients and plan.ab_quads:
        if units:
            units["ab"] = _ab_quads(ctx, base, srv, rec, plan.ab_quads, say)
        else:
            with _Costs(base, srv, rec, 2 * plan.ab_quads * settings.ab_requests):
                units["ab"] = _ab_quads(ctx, base, srv, rec, plan.ab_quads, say)
    rec.seconds["measure"] = round(time.monotonic() - t0, 3)
    return units.get(settings.primary_client) or next(iter(units.values()), [])


def check_shape(run_length: int, segment: int) -> tuple[int, int]:
    """The run-length check's run length (CHECK_FACTOR x the measurement's) and segment (the measurement's rounded up
    to whole ABBA quads of the longer runs)."""
    run = CHECK_FACTOR * run_length
    return run, -(-segment // (2 * run)) * 2 * run


def _run_length_check(ctx: Context, base: Prepared, srv: Prepared, rec: PairRecord, http: str, order: str,
                      say: Callable[[str], None]) -> None:
    """A few segments of the same two processes at a longer run length: whether the ratio still moves with it."""
    settings = ctx.settings
    run, segment = check_shape(settings.run_length, settings.segment)
    requests = settings.check_segments * segment
    rec.check = {"requests": requests, "run": run, "segment": segment, "order": order}
    say(f"{rec.server} pair {rec.pair}: run-length check, {requests:,} requests to each in runs of {run}")
    out = ctx.measure_clients.interleaved(base.port, srv.port, http, requests, run, segment, 0,
                                          {"base": base.record.response_bytes, "server": srv.record.response_bytes})
    if out.data is not None:
        ctx.writer.block(BlockRecord(rec.server, rec.pair, "lean-check", out.data, stderr=out.stderr))
    check_alive(base, srv)
    if out.problem:
        raise PairFailed("measure", f"lean client (run-length check): {out.problem}")


class _Costs:
    """Samples both processes around a phase in which each served `requests`; fills rec.costs."""

    def __init__(self, base: Prepared, srv: Prepared, rec: PairRecord, requests: int):
        self.procs = {"base": base, "server": srv}
        self.rec, self.requests = rec, requests

    def __enter__(self) -> None:
        self.before = {who: Sample(p.proc.pid, p.agent_socket) for who, p in self.procs.items()}
        self.t0 = time.monotonic()

    def __exit__(self, *exc) -> None:
        if exc[0] is not None:
            return
        wall = time.monotonic() - self.t0
        self.rec.costs = {who: CostRecord(**delta(self.before[who], Sample(p.proc.pid, p.agent_socket), self.requests,
                                                  wall)) for who, p in self.procs.items()}


def _ab_quads(ctx: Context, base: Prepared, srv: Prepared, rec: PairRecord, quads: int,
              say: Callable[[str], None]) -> list[paired.Unit]:
    """ABBA quads of ab blocks (each a fresh ab process and connection); their units."""
    n = ctx.settings.ab_requests
    procs = {"base": base, "server": srv}
    rec.ab = {"quads": quads, "requests": n}
    units = []
    for q in range(quads):
        order = paired.quad_order(q)
        values, plains = [], []
        for slot, target in enumerate(order):
            say(f"{rec.server} pair {rec.pair}: ab block {4 * q + slot + 1}/{4 * quads} ({target})")
            p = procs[target]
            out = ctx.measure_clients.ab(p.port, n, p.record.response_bytes, BODY_BYTES)
            if out.data is not None:
                ctx.writer.block(BlockRecord(rec.server, rec.pair, "ab", out.data, quad=q, slot=slot, target=target,
                                             stderr=out.stderr))
            check_alive(base, srv)
            if out.problem:
                who = "the baseline" if target == "base" else rec.server
                raise PairFailed("measure", f"ab block against {who}: {out.problem}")
            run = parse_ab(out.data)  # type: ignore[arg-type]
            values.append(run.block_rtt_ns)
            plains.append(run.rtt_ns)
        units.append(paired.quad_unit(order, values, plains))
    return units


def segment_unit(segment: dict[str, lean.SegmentSide]) -> paired.Unit:
    """An interleaved segment as a unit: each side's trimmed mean, and its plain mean."""
    b, s = segment["base"], segment["server"]
    return paired.Unit(paired.trimmed_mean(b.histogram), paired.trimmed_mean(s.histogram), b.mean_ns, s.mean_ns)


def check_alive(*procs: Prepared) -> None:
    """A crash explains a failed block better than the client's view of it."""
    for p in procs:
        if not p.proc.alive():
            raise PairFailed("measure", f"{p.server.name} exited with status {p.proc.proc.returncode} during the "
                             f"measurement: {p.proc.log_tail(5)}")


def date_check(p: Prepared, stage: dict) -> None:
    """The live-Date half of conformance (needs a second since the first check): once per server and run."""
    stage["phase"] = "date check"
    problem = conformance.check_date_later(p.port, p.check)  # in the HTTP version of the first check
    if problem:
        raise PairFailed("conformance", problem)


def stop(ctx: Context, proc: ServerProcess | None, tag: str) -> int | None:
    """Stops a process (SIGTERM, then SIGKILL), packs its log into the run; returns its exit status. A process on
    the measured CPU is first moved to the preparing CPU, so that its shutdown does not run where the next pair
    is measured."""
    if proc is None:
        return None
    if proc.alive() and ctx.prepare_cpu is not None and ctx.prepare_cpu != ctx.measure_cpu:
        try:
            pin_threads(proc.pid, ctx.prepare_cpu)
        except OSError:
            pass  # exiting meanwhile: nothing left to move
    status = proc.stop()
    with ctx.lock:
        if proc in ctx.running:
            ctx.running.remove(proc)
    ctx.writer.pack_log(tag)
    return status


def affinity(pid: int | None) -> list[int] | None:
    """The CPUs any of a process's threads may run on (one, when it is pinned)."""
    cpus: set[int] = set()
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                cpus |= os.sched_getaffinity(int(tid))
            except ProcessLookupError:
                continue
    except OSError:
        return None
    return sorted(cpus)
