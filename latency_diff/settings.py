"""The driver's command line and settings: every option is a flag and a LATENCY_DIFF_<OPTION> variable.

A flag wins over the variable, the variable over the profile. The run prints every setting and
where it came from, and records them in run.json.
"""

from __future__ import annotations

import argparse
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from . import KIT_ROOT, gate, stopping
from . import shard as sharding
from .catalog import select
from .servers import Server, ServerError, discover

#: Profiles. warmup: requests per server process before measuring (then the JIT must be done, `settle`);
#: run_length / segment / segments: the interleaved lean client's runs of requests to one process, its
#: requests per process in a segment (a unit), and the segments of a first pair (later pairs adapt it to the
#: measured variances); pair_warmup: untimed requests to each process as a pair's client connects; ab_quads /
#: ab_requests: ab's ABBA quads per pair and requests per block; pairs: the least and most process pairs per
#: server; budget: seconds per server after which no new pair starts for it.
PROFILES: dict[str, dict] = {
    "default": {"warmup": 50_000, "settle": "queue", "run_length": 256, "segment": 4096, "segments": 8,
                "pair_warmup": 1000, "ab_quads": 1, "ab_requests": 4_000, "min_pairs": 3, "max_pairs": 40,
                "budget": 75.0, "borrow": 1.0, "check_segments": 2, "count_requests": 20_000,
                "profile_requests": 20_000},
    # A smoke run: one pair per server, a short segment, no waiting for the JIT (not for comparing).
    "quick": {"warmup": 1_000, "settle": "none", "run_length": 256, "segment": 1024, "segments": 4,
              "pair_warmup": 50, "ab_quads": 1, "ab_requests": 500, "min_pairs": 1, "max_pairs": 1, "budget": 0.0,
              "borrow": 0.0, "check_segments": 0, "count_requests": 0, "profile_requests": 0},
    # The 2014 study's client and run length: ab alone, one pair, one ABBA quad of 5,000,000-request blocks, so that
    # each process serves the study's 10,000,000 requests, no warm-up. It differs from the study in measuring each
    # server beside a dummy, in ABBA order, pinned.
    "original": {"warmup": 0, "settle": "none", "run_length": 256, "segment": 4096, "segments": 1, "pair_warmup": 0,
                 "ab_quads": 1, "ab_requests": 5_000_000, "min_pairs": 1, "max_pairs": 1, "budget": 0.0,
                 "borrow": 0.0, "client": "ab", "check_segments": 0, "count_requests": 0, "profile_requests": 0},
}
DEFAULT_JVM_FLAGS = "-Xms512m -Xmx512m -XX:+AlwaysPreTouch"
CLIENTS = {"ab": ("ab",), "lean": ("lean",), "both": ("lean", "ab")}
PINNINGS = ("split", "shared", "none")
#: Chosen by measurement: see docs/method.md "Pinning".
DEFAULT_PINNING = "shared"
HTTP_MODES = ("auto", "1.1")
ENV_PREFIX = "LATENCY_DIFF_"
#: Segments per pair are adapted within these bounds (Kalibera and Jones allocation, paired.optimal_units).
MIN_SEGMENTS, MAX_SEGMENTS = 4, 32


class RunError(Exception):
    """A problem that stops the run before it measures anything; the message says what to do."""


@dataclass
class Settings:
    servers: list[Server]
    profile: str
    warmup: int
    settle: str
    run_length: int
    segment: int
    segments: int
    pair_warmup: int
    ab_quads: int
    ab_requests: int
    min_pairs: int
    max_pairs: int
    budget: float
    precision: float
    precision_floor: float
    client: str
    http: str
    pinning: str
    client_cpu: int | None
    server_cpu: int | None
    #: The CPU server processes start and warm up on while the measured CPU measures (shared pinning with a
    #: second CPU); None: they are prepared where they are measured, one after the other.
    prepare_cpu: int | None
    port: int
    jvm_flags: list[str]
    results_dir: Path
    start_timeout: float
    allow_concurrent: bool
    sources: dict[str, str]
    #: --compare A B: the names of A (the baseline) and B, else None.
    compare: list[str] | None = None
    #: --fail-if-slower with --compare: the gate's margin; B's pairs then stop once its interval clears it.
    fail_if_slower: gate.Margin | None = None
    #: Seconds a prepared server process is held idle after its warm-up, at least, before it is measured (a
    #: method check, `bench.sh sensitivity`; 0: measured as soon as its turn comes).
    hold: float = 0.0
    #: While the measured CPU waits for the preparing lane, the process being prepared may run on it too (its
    #: threads are pinned back to one CPU when it is handed over): shared pinning with preparing ahead only.
    lend_cpu: bool = True
    #: Budgets a server past its --budget may borrow, at most, from what the stopped servers left unspent (0: none).
    borrow: float = 0.0
    #: The kit's java agent in every Java server process (allocation, GC and JIT counters; the compile queue that
    #: the "queue" JIT wait asks for). Off: a method check (`bench.sh sensitivity`), with --settle cpu or none.
    agent: bool = True
    #: Segments per pair of the run-length check (the interleaved client at 4x the run length); 0: none.
    check_segments: int = 0
    #: Requests to each process in the counting window after a server's first measured pair (system calls,
    #: switches, faults: counting.py); 0: no counting.
    count_requests: int = 0
    #: How many of a server's first pairs get a counting window (a server's counts are the median over them); more
    #: than 1 links a pair's counts to its diff, for a server whose pairs differ.
    count_pairs: int = 1
    #: Requests to each process in the profiling window after a JVM server's first measured pair (async-profiler:
    #: profiling.py); 0: no profiling.
    profile_requests: int = 0
    #: Servers of "all" the run leaves out, and why in one sentence (printed at the start, recorded, reported).
    left_out: list[str] | None = None
    left_out_reason: str | None = None
    #: What the run changed of what was asked, one sentence each (printed at the start, recorded, reported).
    notes: list[str] = field(default_factory=list)
    #: --shard I/N: which part of a sharded run this is, with the whole split and the anchors (shard.py); None: a
    #: whole run.
    shard: sharding.Plan | None = None

    @property
    def clients(self) -> tuple[str, ...]:
        return CLIENTS[self.client]

    @property
    def primary_client(self) -> str:
        """The client whose diffs are the headline: the interleaved lean client when it measures, else ab."""
        return "lean" if "lean" in self.clients else "ab"

    def server_http(self, server: Server) -> str:
        """The HTTP version a server (and its baseline) is measured with in this run."""
        return "1.1" if self.http == "1.1" else server.http

    def to_dict(self) -> dict:
        return {
            "servers": [s.name for s in self.servers], "profile": self.profile, "warmup": self.warmup,
            "settle": self.settle, "run_length": self.run_length, "segment": self.segment,
            "segments": self.segments, "pair_warmup": self.pair_warmup, "check_segments": self.check_segments,
            "count_requests": self.count_requests, "count_pairs": self.count_pairs,
            "profile_requests": self.profile_requests,
            "ab_quads": self.ab_quads,
            "ab_requests": self.ab_requests, "min_pairs": self.min_pairs, "max_pairs": self.max_pairs,
            "budget_s": self.budget, "borrow_budgets": self.borrow, "precision_pct": self.precision,
            "precision_floor_us": self.precision_floor,
            "clients": list(self.clients), "http": self.http, "pinning": self.pinning, "client_cpu": self.client_cpu,
            "server_cpu": self.server_cpu, "prepare_cpu": self.prepare_cpu, "port": self.port,
            "jvm_flags": self.jvm_flags, "results_dir": _portable(self.results_dir),
            "start_timeout_s": self.start_timeout,
            "allow_concurrent": self.allow_concurrent, "sources": self.sources, "compare": self.compare,
            **({"fail_if_slower": str(self.fail_if_slower)} if self.fail_if_slower else {}),
            "hold_s": self.hold, "lend_cpu": self.lend_cpu, "agent": self.agent,
            **({"left_out": self.left_out, "left_out_reason": self.left_out_reason} if self.left_out else {}),
            **({"notes": self.notes} if self.notes else {}),
            **({"shard": self.shard.to_dict()} if self.shard else {}),
        }


def _portable(path: Path) -> str:
    """A path as a committed record may hold it: relative to the kit, or only its name (no path of the machine)."""
    path = path.resolve()
    return str(path.relative_to(KIT_ROOT)) if path.is_relative_to(KIT_ROOT) else path.name


def build_parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="run-all.sh", description=description, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Profiles (warm-up / segments x segment in a first pair / runs of / ab quads x requests / pairs "
        "min-max / budget per server): " + "; ".join(
            f"{k}: {v['warmup']:,} / {v['segments']} x {v['segment']:,} / {v['run_length']} / {v['ab_quads']} x "
            f"{v['ab_requests']:,} / {v['min_pairs']}-{v['max_pairs']} / {v['budget']:.0f} s"
            for k, v in PROFILES.items())
        + f". Every option is also a variable {ENV_PREFIX}<OPTION> (e.g. {ENV_PREFIX}BUDGET=120, "
          f"{ENV_PREFIX}QUICK=1); a flag wins.")
    p.add_argument("--servers", metavar="LIST", help="comma-separated server names (default: all, but for the "
                   "matrix_only ones, such as older release lines, measured only when named: see --list); the baseline "
                   "ladder (dummy, floor, dummy-nio) and the null pair are always measured. A name may be a variant: "
                   "undertow@1.0.15.Final (another release), undertow:java=/path/to/jdk (another JDK), "
                   "undertow:jvm=-XX:+UseSerialGC (JVM flags); see --variant")
    p.add_argument("--variant", metavar="SPEC", action="append", help="a variant to measure as a server of its own, "
                   "SERVER[@VERSION][:KEY=VALUE[;KEY=VALUE]] with KEY java (a JDK, at least its module's release: "
                   "17 for the core servers, 21 for the rest), jvm (flags) or name (its row's name); may be given "
                   "again (the variable: several separated by |)")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"), help="head to head: measure B (a server or a variant) "
                   "against A in process pairs, A taking the dummy's place (the dummy is measured against A too, and "
                   "a second A process is the null pair); the report gives B - A with its interval and whether it is "
                   "significant. E.g. --compare undertow undertow@1.0.15.Final")
    p.add_argument("--fail-if-slower", metavar="MARGIN", help="with --compare: a gate for CI. B's pairs stop as "
                   "soon as the interval of B - A clears MARGIN on either side (or on its budget), and the exit "
                   "status says which: 0 B is not slower than A by more than MARGIN, 1 it is, 3 undecided, 2 a "
                   "usage error. MARGIN in microseconds (1us) or percent of A's diff (10%%)")
    p.add_argument("--shard", metavar="I/N", help="measure the I-th of N parts of the chosen servers (after "
                   "--servers and --variant), split by each server's expected time (the committed runs' times: "
                   "latency_diff/costs.json), the same on every machine, so that N machines running I = 1 to N cover "
                   "every server once; each shard is a complete run with the ladder and the --anchors; merge the "
                   "shards with scripts/analyze.py merge (default: the whole run)")
    p.add_argument("--anchors", metavar="LIST", help="with --shard: comma-separated servers measured on every shard, "
                   "from whose spread between shards the merge learns how much the hosts differ; none: no anchor "
                   f"(then the merge cannot tell the hosts' spread) (default {','.join(sharding.DEFAULT_ANCHORS)})")
    p.add_argument("--profile", choices=sorted(PROFILES), help="default, quick or original (default: default)")
    p.add_argument("--quick", action="store_true", default=None,
                   help="same as --profile quick: a smoke run, one process pair per server, cold JVMs "
                   "(not for comparing)")
    p.add_argument("--precision", type=float, metavar="PCT", help="stop adding process pairs to a server once its "
                   "diff's 95%% half-width is at most PCT%% of the diff (or --precision-floor) (default 5)")
    p.add_argument("--precision-floor", type=float, metavar="US", help="...or at most this many microseconds, "
                   "whichever is larger (default 0.5)")
    p.add_argument("--budget", type=float, metavar="S", help="seconds of the measured CPU per server after which no "
                   "new process pair starts for it; a server whose interval would need pairs costing over "
                   f"{stopping.REACH:g} budgets stops at once (default: per profile, 75)")
    p.add_argument("--borrow", type=float, metavar="B", help="budgets a server past its --budget may borrow, at most, "
                   "from the time the servers that stopped before their budget left unspent, while the pairs its "
                   "interval needs at its spread so far fit; it borrows no more than others left, so a run's pairs "
                   "stay within its budgets together, as each server's within its own (0: none) (default: per "
                   "profile, 1)")
    p.add_argument("--min-pairs", type=int, metavar="N", help="process pairs every server gets (default: per profile)")
    p.add_argument("--max-pairs", type=int, metavar="N", help="process pairs a server gets at most (default: per "
                   "profile)")
    p.add_argument("--segments", type=int, metavar="N", help="segments (units) of the interleaved client in a "
                   "server's first pair; later pairs adapt it to the measured variances (default: per profile)")
    p.add_argument("--segment", type=int, metavar="N", help="requests to each process in one segment, a multiple "
                   "of 2 x --run-length (default: per profile)")
    p.add_argument("--run-length", type=int, metavar="N", help="requests in a row to one process before the "
                   "interleaved client turns to the other, in ABBA order (default: per profile)")
    p.add_argument("--pair-warmup", type=int, metavar="N", help="untimed requests to each process as a pair's "
                   "client connects (default: per profile)")
    p.add_argument("--check-segments", type=int, metavar="N", help="segments per pair of the run-length check: the "
                   "same two processes measured again at 4x the run length, so that a server whose ratio still moves "
                   "with it is flagged (0: no check) (default: per profile)")
    p.add_argument("--count-requests", type=int, metavar="N", help="after each server's first measured pair, count "
                   "the work of N requests to each of its two processes (system calls by name, context switches, "
                   "migrations, page faults, threads that ran: perf stat when it can count here, else /proc); its "
                   "round trips are not used (0: no counting) (default: per profile)")
    p.add_argument("--count-pairs", type=int, metavar="N", help="count after each of a server's first N pairs, not "
                   "only the first; the server's counts are the median over them, and each pair's are in pairs.jsonl "
                   "beside its diff (default 1)")
    p.add_argument("--profile-requests", type=int, metavar="N", help="after each JVM server's first measured pair, "
                   "profile its CPU time (async-profiler) over N requests to the server: a flame graph and where the "
                   "time goes per request; its round trips are not used (0: no profiling) (default: per profile)")
    p.add_argument("--ab-quads", type=int, metavar="N", help="ABBA quads of ab blocks per pair, the cross-check "
                   "(default: per profile)")
    p.add_argument("--ab-requests", type=int, metavar="N", help="requests in one ab block (default: per profile)")
    p.add_argument("--warmup", type=int, metavar="N", help="requests each server process gets before it is "
                   "measured (default: per profile)")
    p.add_argument("--settle", choices=("queue", "cpu", "none"), help="how a warm-up waits for the JIT: until its "
                   "compile queue is empty (queue), until its compiler threads' CPU time stands still for 1 s (cpu), "
                   "or not (none) (default: per profile)")
    p.add_argument("--prepare-ahead", choices=("auto", "on", "off"), help="start and warm up the next pair's "
                   "processes on another CPU while the measured CPU measures (auto: under shared pinning when a "
                   "second CPU is usable) (default auto)")
    p.add_argument("--lend-cpu", choices=("on", "off"), help="while the measured CPU waits for the next prepared "
                   "process, let that process run on both CPUs (nothing is measured meanwhile; it is pinned to the "
                   "measured CPU when handed over) (default on)")
    p.add_argument("--agent", choices=("on", "off"), help="load the kit's java agent into every Java server "
                   "process (allocation, GC and JIT counters, and the compile queue that --settle queue waits on); "
                   "off: a check of the method (bench.sh sensitivity), with --settle cpu or none (default on)")
    p.add_argument("--hold", type=float, metavar="S", help="hold each prepared server process idle for at least S "
                   "seconds after its warm-up before it is measured: a check of the method (bench.sh sensitivity), "
                   "not for ranking (default 0)")
    p.add_argument("--client", choices=sorted(CLIENTS), help="which client measures: lean (the kit's interleaved C "
                   "client, the headline), ab (the study's, in ABBA quads of blocks) or both (default both)")
    p.add_argument("--http", choices=HTTP_MODES, help="auto: ab's HTTP/1.0 keep-alive request, or HTTP/1.1 for "
                   "servers whose metadata says so; 1.1: every server over HTTP/1.1, lean client only "
                   "(default auto)")
    p.add_argument("--pinning", choices=PINNINGS, help=f"shared: client, baseline and server on one CPU; split: "
                   f"client on one CPU, the servers on another (the study's); none: not pinned (default "
                   f"{DEFAULT_PINNING})")
    p.add_argument("--client-cpu", metavar="C", help="CPU for the client (split default: the first usable CPU; "
                   "shared: the servers' CPU)")
    p.add_argument("--server-cpu", metavar="S", help="CPU for the server processes, the baseline included (default: "
                   "the second usable CPU)")
    p.add_argument("--port", type=int, metavar="P", help="ports P to P+8 on 127.0.0.1 must be free; each process the "
                   "run starts, dummy or server, takes the next of them in turn, preferring one that no connection "
                   "holds even in TIME_WAIT (default 8080)")
    p.add_argument("--jvm-flags", metavar="FLAGS",
                   help=f"JVM flags for every server, written with '=' since they start with a dash: "
                   f"--jvm-flags='-Xmx1g -XX:+UseZGC' (default '{DEFAULT_JVM_FLAGS}')")
    p.add_argument("--results-dir", metavar="DIR", help="where run directories go (default results/)")
    p.add_argument("--start-timeout", type=float, metavar="S", help="seconds a server may take to print READY "
                   "(default 60)")
    p.add_argument("--allow-concurrent", action="store_true", default=None,
                   help="run even if another latency-diff run is going (their timings will disturb each other)")
    p.add_argument("--list", action="store_true", default=None, help="list the servers and exit")
    return p


def parse_bool(value: str) -> bool:
    v = value.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("expected 1/0, true/false, yes/no or on/off")


def positive(value: str | int) -> int:
    n = int(value)
    if n < 1:
        raise ValueError(f"{n} is not a positive whole number")
    return n


def non_negative(value: str | int | float) -> float:
    x = float(value)
    if x < 0 or x != x:
        raise ValueError(f"{value} is negative")
    return x


def setting(args: argparse.Namespace, name: str, default, sources: dict[str, str], convert=str):
    """A setting from its flag, else its LATENCY_DIFF_ variable, else the default; notes where it came from."""
    cli = getattr(args, name)
    env_name = ENV_PREFIX + name.upper()
    if cli is not None:
        sources[name] = "flag"
        try:
            return convert(cli) if not isinstance(cli, bool) else cli
        except ValueError as e:
            raise RunError(f"--{name.replace('_', '-')} {cli}: {e}") from e
    if os.environ.get(env_name, "") != "":
        sources[name] = env_name
        try:
            return convert(os.environ[env_name])
        except ValueError as e:
            raise RunError(f"{env_name}={os.environ[env_name]!r}: {e}") from e
    sources[name] = "default"
    return default


def _cpu(value: str | int | None) -> int | None:
    if value is None:
        return None
    if str(value).lower() == "none":
        raise RunError("to run without pinning, pass --pinning none instead of a CPU of 'none'")
    try:
        cpu = int(value)
    except ValueError as e:
        raise RunError(f"CPU {value!r} is not a CPU number") from e
    if cpu not in os.sched_getaffinity(0):
        raise RunError(f"CPU {cpu} is not available here (usable: {sorted(os.sched_getaffinity(0))})")
    return cpu


def _usable_cpu(index: int) -> int:
    """The index-th CPU this process may run on (a container's cpuset keeps the host's numbers)."""
    usable = sorted(os.sched_getaffinity(0))
    if len(usable) <= index:
        raise RunError(f"only CPU(s) {usable} usable: split pinning needs two CPUs; give more, or pass "
                       "--pinning shared (one CPU)")
    return usable[index]


def pin(pinning: str, client: int | None, server: int | None) -> tuple[int | None, int | None]:
    """(client CPU, server CPU) for a pinning mode and the CPUs given on the command line, if any."""
    if pinning == "none":
        if client is not None or server is not None:
            raise RunError("--pinning none pins nothing: drop --client-cpu/--server-cpu, or choose split or shared")
        return None, None
    if pinning == "shared":
        usable = sorted(os.sched_getaffinity(0))
        cpu = server if server is not None else client
        if cpu is None:
            # The second CPU if there is one: the first tends to take more of the machine's interrupts.
            cpu = usable[1] if len(usable) > 1 else usable[0]
        if client is not None and client != cpu:
            raise RunError(f"--pinning shared puts client and server on one CPU, but CPUs {client} and {cpu} were "
                           "given; give one, or choose --pinning split")
        return cpu, cpu
    client = _usable_cpu(0) if client is None else client
    server = (_usable_cpu(1) if client != _usable_cpu(1) else _usable_cpu(0)) if server is None else server
    if client == server:
        raise RunError(f"--pinning split needs two CPUs, but client and server are both on CPU {client}; give "
                       "them different CPUs, or choose --pinning shared")
    return client, server


def _choice(options: tuple[str, ...] | dict, what: str):
    def convert(value: str) -> str:
        if value not in options:
            raise ValueError(f"unknown {what} {value!r}; choose one of {', '.join(options)}")
        return value
    return convert


def prepare_cpu(mode: str, pinning: str, measured: int | None) -> int | None:
    """The CPU that prepares processes while `measured` measures: another usable CPU, under shared pinning."""
    if mode == "off":
        return None
    others = [c for c in sorted(os.sched_getaffinity(0)) if c != measured]
    if pinning == "shared" and others:
        return others[0]
    if mode == "on":
        raise RunError("--prepare-ahead on needs --pinning shared and a second usable CPU (split pinning uses it for "
                       "the client; none pins nothing)")
    return None


def _flag(sources: dict[str, str], name: str) -> str:
    """How an option was given, for a message: its flag, or its variable."""
    src = sources.get(name, "default")
    return f"--{name.replace('_', '-')}" if src in ("flag", "default") else src


def _pair_of_names(value: str | list[str]) -> list[str]:
    names = value if isinstance(value, list) else [x.strip() for x in value.split("|")]
    if len(names) != 2 or not all(names):
        raise ValueError("give two servers or variants, A and B (the variable: A|B)")
    if names[0] == names[1]:
        raise ValueError(f"A and B are both {names[0]!r}: the null pair measures a server against itself already")
    return names


def head_to_head(known: list[Server], a: str, b: str) -> list[Server]:
    """The servers of --compare A B: A as the baseline (a fresh A process in every round), B, and the dummy measured
    against A; no ladder. Raises ServerError."""
    import dataclasses
    chosen = select(known, None, [])
    by_name = {s.name: s for s in known}
    picked = []
    for name in (a, b):
        found = by_name.get(name) or next((s for s in select(known, name) if s.name not in by_name), None)
        if found is None:
            raise ServerError(f"unknown server {name!r}")
        picked.append(found)
    base, other = picked
    if base.baseline or other.baseline:
        raise ServerError("--compare measures two servers against each other; the dummy is measured against A anyway")
    dummy = next(s for s in chosen if s.baseline)
    return [dataclasses.replace(base, baseline=True, reference=False), other,
            dataclasses.replace(dummy, baseline=False, reference=True)]


def resolve(args: argparse.Namespace) -> Settings:
    sources: dict[str, str] = {}
    quick = setting(args, "quick", False, sources, parse_bool)
    profile = "quick" if quick else setting(args, "profile", "default", sources, _choice(PROFILES, "profile"))
    if quick:
        sources["profile"] = sources["quick"]
    prof = PROFILES[profile]
    variants = setting(args, "variant", [], sources,
                       lambda v: v if isinstance(v, list) else [x.strip() for x in v.split("|") if x.strip()])
    compare = setting(args, "compare", None, sources, _pair_of_names)
    margin = setting(args, "fail_if_slower", None, sources, gate.parse_margin)
    if margin is not None and not compare:
        raise RunError(f"{_flag(sources, 'fail_if_slower')} gates B against A: give --compare A B too (or gate two "
                       "runs with scripts/analyze.py compare RUN_A RUN_B --fail-if-slower MARGIN)")
    part = setting(args, "shard", None, sources, sharding.parse_shard)
    anchors = setting(args, "anchors", None, sources, sharding.parse_anchors)
    if anchors is not None and part is None:
        raise RunError(f"{_flag(sources, 'anchors')} names the servers measured on every shard of a sharded run: "
                       "give --shard I/N too, or drop it")
    if part is not None and compare:
        raise RunError(f"{_flag(sources, 'shard')} with --compare: a head-to-head run measures two servers, which "
                       "are not shared out; run it whole")
    names = None
    try:
        known = discover()
        if compare:
            servers = head_to_head(known, *compare)
        else:
            names = setting(args, "servers", None, sources)
            servers = select(known, names, variants)
    except ServerError as e:
        raise RunError(str(e)) from e
    s = Settings(
        servers=servers, profile=profile,
        warmup=int(setting(args, "warmup", prof["warmup"], sources, non_negative)),
        settle=setting(args, "settle", prof["settle"], sources, _choice(("queue", "cpu", "none"), "settle mode")),
        run_length=setting(args, "run_length", prof["run_length"], sources, positive),
        segment=setting(args, "segment", prof["segment"], sources, positive),
        segments=setting(args, "segments", prof["segments"], sources, positive),
        pair_warmup=int(setting(args, "pair_warmup", prof["pair_warmup"], sources, non_negative)),
        check_segments=int(setting(args, "check_segments", prof["check_segments"], sources, non_negative)),
        count_requests=int(setting(args, "count_requests", prof["count_requests"], sources, non_negative)),
        count_pairs=int(setting(args, "count_pairs", 1, sources, positive)),
        profile_requests=int(setting(args, "profile_requests", prof["profile_requests"], sources, non_negative)),
        ab_quads=int(setting(args, "ab_quads", prof["ab_quads"], sources, non_negative)),
        ab_requests=setting(args, "ab_requests", prof["ab_requests"], sources, positive),
        min_pairs=setting(args, "min_pairs", prof["min_pairs"], sources, positive),
        max_pairs=setting(args, "max_pairs", prof["max_pairs"], sources, positive),
        budget=setting(args, "budget", prof["budget"], sources, non_negative),
        borrow=setting(args, "borrow", prof["borrow"], sources, non_negative),
        precision=setting(args, "precision", 5.0, sources, non_negative),
        precision_floor=setting(args, "precision_floor", 0.5, sources, non_negative),
        client=setting(args, "client", prof.get("client", "both"), sources, _choice(CLIENTS, "client")),
        http=setting(args, "http", "auto", sources, _choice(HTTP_MODES, "HTTP mode")),
        pinning=setting(args, "pinning", DEFAULT_PINNING, sources, _choice(PINNINGS, "pinning")),
        client_cpu=_cpu(setting(args, "client_cpu", None, sources)),
        server_cpu=_cpu(setting(args, "server_cpu", None, sources)),
        prepare_cpu=None,
        port=setting(args, "port", 8080, sources, int),
        jvm_flags=shlex.split(setting(args, "jvm_flags", DEFAULT_JVM_FLAGS, sources)),
        results_dir=Path(setting(args, "results_dir", str(KIT_ROOT / "results"), sources)),
        start_timeout=setting(args, "start_timeout", 60.0, sources, non_negative),
        allow_concurrent=setting(args, "allow_concurrent", False, sources, parse_bool),
        sources=sources, compare=[x.name for x in servers[:2]] if compare else None, fail_if_slower=margin,
        hold=setting(args, "hold", 0.0, sources, non_negative),
        lend_cpu=setting(args, "lend_cpu", "on", sources, _choice(("on", "off"), "lend-cpu mode")) == "on",
        agent=setting(args, "agent", "on", sources, _choice(("on", "off"), "agent mode")) == "on",
    )
    if not s.agent and s.settle == "queue":
        raise RunError("--agent off: the JIT wait --settle queue asks the agent for the compile queue; add --settle "
                       "cpu (until the compiler threads' CPU time stands still) or --settle none")
    if s.max_pairs < s.min_pairs:
        raise RunError(f"--max-pairs {s.max_pairs} is below --min-pairs {s.min_pairs}")
    if not 1 <= s.port <= 65535 - 8:
        raise RunError(f"--port {s.port}: the run needs ports P to P+8, so P must be 1 to {65535 - 8}")
    if s.segment % (2 * s.run_length):
        raise RunError(f"--segment {s.segment} is not a multiple of 2 x --run-length ({2 * s.run_length}): an ABBA "
                       "quad of runs sends 2 runs to each process")
    if s.http == "1.1" and "ab" in s.clients:
        if s.sources["client"] == "default":
            s.client = "lean"  # ab speaks HTTP/1.0 only
            s.notes.append("--http 1.1: the lean client alone measures (ab speaks HTTP/1.0 only)")
        else:
            raise RunError("--http 1.1 measures with the lean client only (ab speaks HTTP/1.0); drop --client ab/both")
    if s.client == "ab" and not s.ab_quads:
        raise RunError("--client ab with --ab-quads 0 measures nothing: give ab at least one quad")
    if s.client == "ab":
        # Every server, rather than servers named one by one: no --servers (or "all"), no --compare.
        everything = not compare and all(n.strip() in ("", "all") for n in (names or "").split(","))
        _ab_and_http11(s, everything=everything)
    if part is not None:  # the servers the run would measure whole, shared out
        try:
            s.servers, s.shard = sharding.plan(s.servers, known, *part,
                                               sharding.DEFAULT_ANCHORS if anchors is None else anchors)
        except sharding.AnchorError as e:
            raise RunError(f"{_flag(sources, 'anchors')} {','.join(anchors or sharding.DEFAULT_ANCHORS)}: {e}") from e
        except ValueError as e:
            raise RunError(f"{_flag(sources, 'shard')} {part[0]}/{part[1]}: {e}") from e
    s.client_cpu, s.server_cpu = pin(s.pinning, s.client_cpu, s.server_cpu)
    mode = setting(args, "prepare_ahead", "auto", sources, _choice(("auto", "on", "off"), "prepare-ahead mode"))
    s.prepare_cpu = prepare_cpu(mode, s.pinning, s.server_cpu)
    return s


def _ab_and_http11(s: Settings, *, everything: bool) -> None:
    """ab speaks HTTP/1.0 only, so with ab as the only client an HTTP/1.1 server (server.toml: http = "1.1") gets no
    unit, and the run would add process pairs for it without end. Servers named on the command line: the run is
    refused; servers the run took as "all": those are left out, and the run says so (left_out)."""
    http11 = [x for x in s.servers if s.server_http(x) == "1.1"]
    src = s.sources.get("client", "default")
    why = ("--client ab" if src == "flag" else f"{src}=ab" if src != "default" else
           f"the {s.profile} profile's client, ab,")
    named = [x.name for x in http11 if not everything or x.variant is not None]  # a --variant is named too
    if named:
        listed = ", ".join(named)
        raise RunError(f"{why} cannot measure HTTP/1.1 servers (it speaks HTTP/1.0), and {listed} "
                       f"{'is one' if len(named) == 1 else 'are'} (server.toml: http = \"1.1\"): use --client both or "
                       f"lean, or leave out {listed}")
    if http11:
        s.left_out = [x.name for x in http11]
        s.servers = [x for x in s.servers if x.name not in s.left_out]
        s.left_out_reason = (f"{', '.join(s.left_out)} left out: HTTP/1.1 servers, which {why} cannot measure (it "
                             "speaks HTTP/1.0); measure them with --client both or lean")


def print_settings(s: Settings, run_name: str, java: str, out) -> None:
    def src(k: str) -> str:
        return "" if s.sources.get(k, "default") == "default" else f"  ({s.sources[k]})"
    print(f"latency-diff run {run_name}", file=out)
    ab = f"{s.ab_quads} ABBA quad(s) of {s.ab_requests:,}-request blocks per pair" if "ab" in s.clients else "off"
    rows = [("profile", s.profile, "profile"), ("servers", ",".join(x.name for x in s.servers), "servers"),
            ("clients", " and ".join(s.clients) + f" (diffs from {s.primary_client})", "client"),
            ("http", s.http, "http"),
            ("precision", f"95% half-width <= max({s.precision_floor} us, {s.precision}% of the diff)", "precision"),
            ("budget", f"{s.budget:.0f} s per server"
             + (f", and up to {s.borrow:g} budget(s) more borrowed from what the servers that stopped early left "
                "unspent"
                if s.borrow and s.budget else ""), "budget"),
            ("pairs", f"{s.min_pairs} to {s.max_pairs} per server", "min_pairs"),
            ("lean", f"{s.segments} segments of {s.segment:,} requests per process in a first pair, then adapted; "
                     f"runs of {s.run_length} in ABBA order; {s.pair_warmup:,} untimed first"
                     + (f"; run-length check: {s.check_segments} segment(s) at runs of {4 * s.run_length}"
                        if s.check_segments else ""), "segments"),
            ("ab", ab, "ab_quads"),
            ("counting", f"{s.count_requests:,} requests to each process after a server's first "
             + ("pair" if s.count_pairs == 1 else f"{s.count_pairs} pairs") if s.count_requests else "off",
             "count_requests"),
            ("profiling", f"{s.profile_requests:,} requests to the server after a JVM server's first pair "
             "(async-profiler)" if s.profile_requests else "off", "profile_requests"),
            ("warmup", f"{s.warmup:,} requests per process, then JIT wait: {s.settle}", "warmup"),
            ("agent", "in every Java server process" if s.agent else "off: no allocation, GC or JIT counters",
             "agent"),
            ("pinning", s.pinning, "pinning"), ("client cpu", s.client_cpu, "client_cpu"),
            ("server cpu", s.server_cpu, "server_cpu"),
            ("prepare cpu", "none: processes are prepared on the measured CPU" if s.prepare_cpu is None
             else f"{s.prepare_cpu}: the next processes start and warm up there while CPU {s.server_cpu} measures"
             + ("; and on both CPUs while it waits for them" if s.lend_cpu else ""), "prepare_ahead"),
            ("ports", f"{s.port}-{s.port + 8}, each process the next free one in turn", "port"),
            ("jvm flags", " ".join(s.jvm_flags), "jvm_flags"), ("java", java, "java"),
            ("start timeout", f"{s.start_timeout:.0f} s", "start_timeout"),
            ("concurrent", "allowed" if s.allow_concurrent else "refused", "allow_concurrent"),
            ("results", s.results_dir, "results_dir")]
    if s.left_out_reason:
        rows.insert(2, ("note", s.left_out_reason, "client"))
    for note in s.notes:
        rows.insert(2, ("note", note, "http"))
    if s.shard:
        sh = s.shard
        rows.insert(2, ("shard", f"{sh.index} of {sh.count}: {len(sh.mine)} of the "
                        f"{sum(len(x) for x in sh.parts)} servers, expected {sh.expected_s[sh.index - 1]:.0f} s of "
                        f"pairs (the parts: {', '.join(f'{x:.0f}' for x in sh.expected_s)} s; costs: {sh.costs}); "
                        f"anchors on every shard: {', '.join(sh.anchors) or 'none'}", "shard"))
    if s.hold:
        rows.append(("hold", f"each server process idle for at least {s.hold:g} s after its warm-up (a method check)",
                     "hold"))
    for label, value, key in rows:
        print(f"  {label:13} {value}{src(key)}", file=out)


def profiles(argv: list[str]) -> bool:
    """Whether a run with these arguments profiles its servers (scripts/run-all.sh fetches async-profiler only then);
    True when they do not resolve, so that the driver, not the set-up, reports what is wrong with them."""
    try:
        return resolve(build_parser("").parse_args(argv)).profile_requests > 0
    except (RunError, SystemExit, ValueError):
        return True


def shard_servers(argv: list[str]) -> str | None:
    """The servers a sharded run with these arguments measures, as --servers names them (a variant by its spec), so
    that scripts/run-all.sh builds only their jars; None for a run that is not sharded, or whose arguments do not
    resolve (the driver reports what is wrong with them)."""
    try:
        s = resolve(build_parser("").parse_args(argv))
    except (RunError, SystemExit, ValueError):
        return None
    if s.shard is None:
        return None
    return ",".join(x.variant.spec if x.variant else x.name for x in s.servers if not (x.baseline or x.reference))


if __name__ == "__main__":
    import sys
    # python3 -m latency_diff.settings profiles ARGS...: exit 0 when the run would profile, 1 when not.
    # python3 -m latency_diff.settings shard-servers ARGS...: a sharded run's servers (exit 0), or exit 1.
    if sys.argv[1:2] == ["shard-servers"]:
        servers = shard_servers(sys.argv[2:])
        if servers is not None:
            print(servers)
        sys.exit(0 if servers is not None else 1)
    if sys.argv[1:2] != ["profiles"]:
        sys.exit("usage: python3 -m latency_diff.settings profiles|shard-servers [DRIVER ARGS]")
    sys.exit(0 if profiles(sys.argv[2:]) else 1)
