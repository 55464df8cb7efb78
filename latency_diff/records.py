"""The records of a run: written by the measurement, read by the analysis; their one schema.

A run directory (rundir.py) holds one PairRecord a line in pairs.jsonl and one BlockRecord a line in
blocks.jsonl.xz. A pair record says what happened to one process pair (a fresh server process beside
a baseline dummy process): its processes, warm-up, costs and times. A block record holds one client
invocation of a measured pair, its output verbatim: the interleaved lean client's segments, or one
ab (or single-connection lean) block of an ABBA quad.

History of the format (run.json's "format"):
- latency-diff/run/1 and /2: one server at a time, trials in fresh processes (the single-server
  design); no longer read.
- latency-diff/run/3: process pairs measured in ABBA quads of blocks, one file per block, a pair's
  record naming its block files; no longer read (fe56ca45's latency_diff/migrate.py converted them to /4).
- latency-diff/run/4: these records; blocks in one gzip file, logs in another, settings,
  environment and server metadata once, in run.json.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

RUN_FORMAT = "latency-diff/run/4"
#: Clients a block can come from: the interleaved lean client (segments of both processes), one
#: single-connection lean block, one ab block, the interleaved client's run-length check.
CLIENT_KINDS = ("lean-pair", "lean", "ab", "lean-check")
#: Interleaved clients' blocks (all segments of both processes in one block; no quad): the pair's measurement, and
#: the run-length check (a few segments at a longer run length, the same processes).
INTERLEAVED = ("lean-pair", "lean-check")
TARGETS = ("base", "server")
#: A pair's status: measured (every block on record), failed (phase and reason say where and why),
#: interrupted (the run was stopped during it).
STATUSES = ("measured", "failed", "interrupted")

#: The null pair's row: a second baseline dummy process against the round's, under this name in the records.
NULL_PAIR = "null"


class RecordError(ValueError):
    """A record that does not follow the schema; the message names the field."""


@dataclass
class WarmupRound:
    """One round of a process's warm-up: requests sent, then the wait for the JIT."""
    requests: int
    wall_ms: int
    #: CPU time of the JIT compiler threads during the round and its wait (/proc).
    jit_cpu_ms: int
    #: Seconds spent waiting for the JIT after the requests.
    settle_s: float


@dataclass
class ProcessRecord:
    """One server process of a pair (the server, or the round's baseline dummy)."""
    tag: str
    pid: int | None = None
    port: int | None = None
    #: Length of its conformance-checked response (the response every block is checked against).
    response_bytes: int | None = None
    #: The CPUs its threads may run on while measured (one, when pinned).
    affinity: list[int] | None = None
    warmup: list[WarmupRound] = field(default_factory=list)
    #: Start, conformance check and warm-up, in seconds.
    prepare_s: float | None = None
    exit_status: int | None = None
    #: Seconds of its preparation in which it could also run on the measured CPU, which waited for it (--lend-cpu).
    lent_s: float = 0.0


@dataclass
class CostRecord:
    """A process's counters over a pair's measured phase: /proc ticks and the agent's JVM counters."""
    requests: int
    wall_s: float
    clock_ticks_per_s: int
    utime_ticks: int
    stime_ticks: int
    jit_ticks: int
    #: The agent's differences (allocated_bytes, gc_count, gc_time_ms, compile_time_ms, threads), if it answered.
    jvm: dict[str, int] | None = None
    jvm_error: str | None = None


@dataclass
class PairRecord:
    server: str
    pair: int
    status: str
    round: int | None = None
    http: str = "1.0"
    phase: str | None = None
    reason: str | None = None
    base: ProcessRecord | None = None
    process: ProcessRecord | None = None
    #: The interleaved client's settings of this pair: requests per side, run length, segment size.
    interleave: dict[str, int] | None = None
    #: The run-length check's settings (requests per side, run length, segment) and whether it ran before or after
    #: the measurement ("order"), when it ran.
    check: dict[str, Any] | None = None
    #: ab's ABBA quads of the pair and the requests of one block, when ab measured it.
    ab: dict[str, int] | None = None
    costs: dict[str, CostRecord] = field(default_factory=dict)
    #: The counting window after the measured phase (counting.count_window), when the pair had one: per process
    #: ("base", "server") its raw counts; "problem" when its client failed.
    counts: dict[str, Any] | None = None
    #: The profiling window after the counting one (profiling.py), when the pair had one: requests to each process,
    #: the profiler's event and interval, seconds, the server process's tag (its stacks are in the logs under it);
    #: "problem" when the profiler or the client failed.
    profile: dict[str, Any] | None = None
    #: Where the pair's time went (measure lane): waiting for its processes, handing them over, measuring,
    #: stopping; "total" is their sum.
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return _drop_none(dataclasses.asdict(self))

    @staticmethod
    def from_json(data: dict, where: str) -> PairRecord:
        d = _object(data, where)
        for key in ("server", "pair", "status"):
            if key not in d:
                raise RecordError(f"{where}: missing field '{key}'")
        if d["status"] not in STATUSES:
            raise RecordError(f"{where}: status {d['status']!r} is not one of {', '.join(STATUSES)}")
        try:
            procs = {k: _process(d[k], f"{where}: {k}") if d.get(k) else None for k in ("base", "process")}
            costs = {who: CostRecord(**c) for who, c in (d.get("costs") or {}).items()}
            return PairRecord(server=d["server"], pair=int(d["pair"]), status=d["status"], round=d.get("round"),
                              http=d.get("http", "1.0"), phase=d.get("phase"), reason=d.get("reason"),
                              interleave=d.get("interleave"), check=d.get("check"), ab=d.get("ab"), costs=costs,
                              counts=d.get("counts"), profile=d.get("profile"),
                              seconds=d.get("seconds") or {},
                              notes=list(d.get("notes") or []), **procs)
        except (TypeError, ValueError) as e:
            raise RecordError(f"{where}: {e}") from e


@dataclass
class BlockRecord:
    """One client invocation of a measured pair, its output verbatim."""
    server: str
    pair: int
    client: str
    #: The raw output: the lean client's JSON object, or ab's text.
    output: Any
    #: ABBA position of a single block (ab, lean): quad number, slot 0-3, and which process it measured.
    quad: int | None = None
    slot: int | None = None
    target: str | None = None
    #: A client that wrote to stderr: what it said.
    stderr: str | None = None

    def to_json(self) -> dict:
        return _drop_none(dataclasses.asdict(self))

    @staticmethod
    def from_json(data: dict, where: str) -> BlockRecord:
        d = _object(data, where)
        for key in ("server", "pair", "client", "output"):
            if key not in d:
                raise RecordError(f"{where}: missing field '{key}'")
        if d["client"] not in CLIENT_KINDS:
            raise RecordError(f"{where}: client {d['client']!r} is not one of {', '.join(CLIENT_KINDS)}")
        if d["client"] not in INTERLEAVED:
            if d.get("target") not in TARGETS or not isinstance(d.get("quad"), int) or d.get("slot") not in range(4):
                raise RecordError(f"{where}: a {d['client']} block needs quad, slot (0-3) and target (base or "
                                  "server)")
        return BlockRecord(server=d["server"], pair=int(d["pair"]), client=d["client"], output=d["output"],
                           quad=d.get("quad"), slot=d.get("slot"), target=d.get("target"), stderr=d.get("stderr"))


def _object(data: Any, where: str) -> dict:
    if not isinstance(data, dict):
        raise RecordError(f"{where}: expected a JSON object")
    return data


def _process(data: dict, where: str) -> ProcessRecord:
    d = dict(_object(data, where))
    d["warmup"] = [WarmupRound(**w) for w in d.get("warmup") or []]
    return ProcessRecord(**d)


def _drop_none(value: Any) -> Any:
    """A record's JSON without its unset (None) fields: a line of pairs.jsonl stays short and readable."""
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value
