"""The result model of a run, built from its raw files; every report is rendered from it.

A run (format latency-diff/run/3) is a list of process pairs (pairs.jsonl): a server process
beside a baseline dummy process, measured in ABBA quads of blocks per client (latency_diff/pair.py,
latency_diff/paired.py). A pair counts only if it was measured and every block passes every check
(no failed or non-2xx request, all kept alive, the response length unchanged). A server with any
failed pair is invalid, with the reason, and is left out of the comparison.

Per server and client: the diff is the mean of the pairs' estimates (median of the quads' robust
diffs), with a Student-t 95% interval over pairs; beside it, the study's plain mean (requests over
elapsed time) paired the same way, the tail from the merged histograms, and the costs per request
of the server process and of its baseline. The headline client is the lean client when the run used
it (its trimmed block mean is robust to stalls; ab reports only a mean), else ab.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from . import histogram, lean, paired, stats
from .abparse import AbParseError, parse_file
from .histogram import Histogram
from .stats import Summary

SUMMARY_FORMAT = "latency-diff/summary/3"
RUN_FORMAT = "latency-diff/run/3"
OLD_FORMATS = ("latency-diff/run/1", "latency-diff/run/2")
BODY_BYTES = 10
_PAIR_FIELDS = ("server", "pair", "status")
#: JIT compilation during a pair's blocks above this share of their wall time means warm-up was short.
JIT_BUSY_SHARE = 0.01
#: The CPU cross-check (shared pinning): the latency diff and the CPU-time diff should agree within this.
CPU_CHECK_ABS_NS = 2000.0
CPU_CHECK_REL = 0.5
#: Without waiting for the JIT, a JVM that served fewer requests than this (warm-up and one block) is still
#: interpreting and compiling while it is measured (the default profile warms up with this many and waits).
WARM_REQUESTS = 100_000
NULL_PAIR = "null"


class AnalysisError(Exception):
    """The run directory cannot be analyzed; the message names the file and the field."""


@dataclass
class Block:
    client: str
    quad: int
    slot: int
    target: str
    file: str
    #: The block's robust round trip: trimmed mean (lean) or ab's mean (ab), in ns.
    value_ns: float
    #: The study's plain figure: elapsed time over requests, in ns.
    plain_ns: float
    histogram: Histogram | None = None


@dataclass
class Costs:
    """One process's costs per request over a pair's measured blocks."""
    requests: int
    cpu_user_ns: float
    cpu_system_ns: float
    jit_cpu_ms: float
    wall_s: float
    #: The JIT compiler threads' share of the CPU per request (they compile, off the request path).
    jit_ns: float = 0.0
    alloc_bytes: float | None = None
    gc_count: int | None = None
    gc_time_ms: int | None = None
    jvm_error: str | None = None

    @property
    def cpu_ns(self) -> float:
        return self.cpu_user_ns + self.cpu_system_ns

    @property
    def request_cpu_ns(self) -> float:
        """CPU per request outside the JIT compiler threads: what the cross-check compares with the latency diff."""
        return self.cpu_ns - self.jit_ns


@dataclass
class Pair:
    pair: int
    status: str
    round: int | None = None
    reason: str | None = None
    phase: str | None = None
    http: str = "1.0"
    blocks: list[Block] = field(default_factory=list)
    costs: dict[str, Costs] = field(default_factory=dict)
    seconds: float | None = None

    @property
    def valid(self) -> bool:
        return self.status == "measured" and self.reason is None

    def quads(self, client: str, plain: bool = False) -> list[float]:
        """Each complete quad's diff (server minus baseline) for one client, in quad order."""
        by_quad: dict[int, list[Block]] = {}
        for b in self.blocks:
            if b.client == client:
                by_quad.setdefault(b.quad, []).append(b)
        out = []
        for q in sorted(by_quad):
            bs = sorted(by_quad[q], key=lambda b: b.slot)
            if len(bs) == 4:
                out.append(paired.quad_diff([b.target for b in bs], [b.plain_ns if plain else b.value_ns for b in bs]))
        return out

    def estimate(self, client: str, plain: bool = False) -> float | None:
        q = self.quads(client, plain)
        return paired.pair_estimate(q) if q else None

    def values(self, client: str, target: str, plain: bool = False) -> list[float]:
        return [b.plain_ns if plain else b.value_ns for b in self.blocks if b.client == client and b.target == target]


@dataclass
class ClientResult:
    """One client's numbers for one server, over its valid pairs."""
    client: str
    #: The diff: mean of the pairs' estimates, Student-t 95% interval over pairs.
    diff: Summary
    #: The study's plain mean (elapsed / requests per block), paired the same way.
    plain_diff: Summary
    #: The server's and its baselines' robust round trips (mean of the pairs' block means).
    rtt: Summary
    base_rtt: Summary
    estimates: list[float]
    quads: list[int]
    #: The study's plain round trip (elapsed / requests of the server's blocks), mean over pairs.
    plain_rtt: Summary | None = None
    #: Pooled within-pair standard deviation of one quad's diff, and the between-pair component.
    within_sd: float | None = None
    between_sd: float | None = None
    #: lean only: percentiles of every server block together, of its baselines' blocks, and the differences.
    percentiles: dict[str, int] | None = None
    base_percentiles: dict[str, int] | None = None
    percentile_diffs: dict[str, int] | None = None
    histogram: Histogram | None = None


@dataclass
class ServerResult:
    name: str
    display: str
    threading: str
    library: str | None
    library_version: str | None
    notes: str
    jvm_flags: list[str]
    baseline: bool
    reference: bool = False
    http: str = "1.0"
    #: The server a framework runs on (its own row in the run, when measured), from the metadata.
    runs_on: str | None = None
    pairs: list[Pair] = field(default_factory=list)
    primary: str = "lean"
    clients: dict[str, ClientResult] = field(default_factory=dict)
    valid: bool = False
    reason: str | None = None
    diff: Summary | None = None
    target_ns: float | None = None
    target_met: bool | None = None
    #: Server CPU per request; minus its baselines' (per pair, both without their JIT compiler threads), in ns;
    #: allocation per request, in bytes.
    cpu: Summary | None = None
    cpu_user: Summary | None = None
    cpu_system: Summary | None = None
    cpu_diff: Summary | None = None
    base_cpu: Summary | None = None
    alloc: Summary | None = None
    gc_count: Summary | None = None
    gc_time_ms: Summary | None = None
    jit_cpu_ms: Summary | None = None
    seconds: float = 0.0
    requests: int = 0
    warnings: list[str] = field(default_factory=list)
    #: False when this server's diff is not significantly different from the row above it.
    differs_from_previous: bool | None = None
    #: Whether ab's and the lean client's diff intervals overlap (None: not both measured).
    clients_agree: bool | None = None

    @property
    def estimates(self) -> list[float]:
        """The headline client's per-pair estimates."""
        c = self.clients.get(self.primary)
        return c.estimates if c else []

    @property
    def ladder(self) -> bool:
        return self.baseline or self.reference


@dataclass
class RunResult:
    run_id: str
    status: str
    reason: str | None
    settings: dict
    env: dict
    servers: list[ServerResult]
    warnings: list[str]
    clients: tuple[str, ...] = ("lean",)
    primary: str = "lean"
    #: How long the measurements took (run.json), when the run completed.
    seconds: float | None = None
    #: Why the table must not be read as a ranking (a smoke run's cold JVMs), else None.
    caveat: str | None = None

    @property
    def ranked(self) -> list[ServerResult]:
        """Valid servers: the ladder first (by its diff: floor, dummy, ...), then by diff."""
        valid = [s for s in self.servers if s.valid]
        return sorted(valid, key=lambda s: (not s.ladder, s.diff.mean if s.diff else 0.0))

    @property
    def baseline(self) -> ServerResult | None:
        return next((s for s in self.servers if s.baseline), None)

    @property
    def null(self) -> ServerResult | None:
        return next((s for s in self.servers if s.name == NULL_PAIR), None)

    @property
    def invalid(self) -> list[ServerResult]:
        return [s for s in self.servers if not s.valid and not s.baseline]


def _load_json(path: Path) -> dict:
    if not path.is_file():
        raise AnalysisError(f"{path}: missing (not a latency-diff run directory, or the run never started)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise AnalysisError(f"{path}: not valid JSON: {e}") from e
    if not isinstance(data, dict):
        raise AnalysisError(f"{path}: expected a JSON object")
    return data


def load_lines(path: Path) -> list[dict]:
    """pairs.jsonl: one JSON object a line, each with the fields every pair has."""
    if not path.is_file():
        return []
    entries = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as e:
            raise AnalysisError(f"{path}: line {i}: not valid JSON: {e}") from e
        if not isinstance(entry, dict):
            raise AnalysisError(f"{path}: line {i}: expected a JSON object")
        missing = [f for f in _PAIR_FIELDS if f not in entry]
        if missing:
            raise AnalysisError(f"{path}: line {i}: missing field(s) {', '.join(missing)}")
        entries.append(entry)
    return entries


def read_block(run_dir: Path, b: dict, where: str, response_bytes: int | None, requests: int | None
               ) -> tuple[Block, list[str]]:
    """One block's file: its values, and why it does not count (if so). Raises AnalysisError if unreadable."""
    try:
        client, rel = b["client"], b["file"]
        quad, slot, target = int(b["quad"]), int(b["slot"]), b["target"]
    except (KeyError, TypeError, ValueError) as e:
        raise AnalysisError(f"{where}: a block lacks field {e}") from e
    if target not in ("base", "server"):
        raise AnalysisError(f"{where}: block target {target!r} is neither 'base' nor 'server'")
    path = run_dir / rel
    if client == "lean":
        try:
            run = lean.parse_file(path)
        except lean.LeanParseError as e:
            raise AnalysisError(str(e)) from e
        problems = run.problems(requests=requests, response_bytes=response_bytes)
        if not run.completed:
            return Block(client, quad, slot, target, rel, 0.0, 0.0), problems or ["lean client completed no request"]
        return Block(client, quad, slot, target, rel, paired.trimmed_mean(run.histogram), run.rtt_ns,
                     run.histogram), problems
    if client == "ab":
        try:
            run = parse_file(path)
        except AbParseError as e:
            raise AnalysisError(str(e)) from e
        problems = run.problems(requests=requests, response_bytes=response_bytes, body_bytes=BODY_BYTES)
        return Block(client, quad, slot, target, rel, run.block_rtt_ns, run.rtt_ns), problems
    raise AnalysisError(f"{where}: unknown client {client!r}")


def _costs(c: dict | None, where: str) -> Costs | None:
    if not c:
        return None
    try:
        ns_per_tick = 1e9 / c["clock_ticks_per_s"]
        n = c["requests"]
        out = Costs(requests=n, cpu_user_ns=c["utime_ticks"] * ns_per_tick / n,
                    cpu_system_ns=c["stime_ticks"] * ns_per_tick / n,
                    jit_cpu_ms=c["jit_ticks"] * ns_per_tick / 1e6, wall_s=float(c["wall_s"]),
                    jit_ns=c["jit_ticks"] * ns_per_tick / n,
                    jvm_error=c.get("jvm_error"))
        jvm = c.get("jvm")
        if jvm:
            out.alloc_bytes = jvm["allocated_bytes"] / n if jvm["allocated_bytes"] >= 0 else None
            out.gc_count, out.gc_time_ms = int(jvm["gc_count"]), int(jvm["gc_time_ms"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
        raise AnalysisError(f"{where}: bad cost record ({e!r})") from e
    return out


def read_pair(run_dir: Path, entry: dict, requests: int | None = None) -> Pair:
    """One line of pairs.jsonl with its block files. Raises AnalysisError when a file is unreadable."""
    where = f"{run_dir / 'pairs.jsonl'}: {entry['server']} pair {entry['pair']}"
    p = Pair(pair=entry["pair"], status=entry["status"], round=entry.get("round"), reason=entry.get("reason"),
             phase=entry.get("phase"), http=entry.get("http", "1.0"), seconds=entry.get("seconds", {}).get("total"))
    if p.status != "measured":
        return p  # failed, skipped or interrupted: the reason says why; nothing of it counts
    blocks = entry.get("blocks")
    if not blocks or not isinstance(blocks, list):
        raise AnalysisError(f"{where}: measured but no blocks")
    lengths = {"base": entry.get("base_response_bytes"), "server": entry.get("response_bytes")}
    problems: list[str] = []
    for b in blocks:
        target = b.get("target") if isinstance(b, dict) else None
        block, why = read_block(run_dir, b, where, lengths.get(target), requests)
        p.blocks.append(block)
        who = "baseline" if block.target == "base" else "server"
        problems += [f"{block.client} block {block.file} ({who}): {x}" for x in why]
    if problems:
        p.reason = "; ".join(problems[:3]) + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else "")
    for who, c in (entry.get("costs") or {}).items():
        costs = _costs(c, where)
        if costs is not None:
            p.costs[who] = costs
    return p


def build(run_dir: Path) -> RunResult:
    """Reads run.json, env.json, pairs.jsonl and every block file they name. Raises AnalysisError."""
    if not run_dir.is_dir():
        raise AnalysisError(f"{run_dir}: no such run directory")
    run = _load_json(run_dir / "run.json")
    fmt = run.get("format")
    if fmt in OLD_FORMATS:
        raise AnalysisError(f"{run_dir / 'run.json'}: format {fmt} is a run of the single-server design (before "
                            f"paired measurement); this analysis reads {RUN_FORMAT}. The run's own report.md and "
                            "summary.json were written when it was made; compare it only with runs of its format.")
    if fmt != RUN_FORMAT:
        raise AnalysisError(f"{run_dir / 'run.json'}: field 'format' is {fmt!r}, this analysis reads {RUN_FORMAT}")
    for key in ("status", "settings"):
        if key not in run:
            raise AnalysisError(f"{run_dir / 'run.json'}: missing field '{key}'")
    env = _load_json(run_dir / "env.json")
    if not isinstance(env.get("servers"), list):
        raise AnalysisError(f"{run_dir / 'env.json'}: missing field 'servers'")
    entries = load_lines(run_dir / "pairs.jsonl")
    settings = run["settings"]
    clients = tuple(settings.get("clients") or ("lean",))
    primary = "lean" if "lean" in clients else "ab"
    servers: list[ServerResult] = []
    for meta in env["servers"]:
        try:
            s = ServerResult(name=meta["name"], display=meta["display"], threading=meta["threading"],
                             library=meta.get("library"), library_version=meta.get("library_version"),
                             notes=meta.get("notes", ""), jvm_flags=meta.get("jvm_flags", []),
                             baseline=bool(meta.get("baseline")), reference=bool(meta.get("reference")),
                             http=meta.get("http", "1.0"), runs_on=meta.get("runs_on"), primary=primary)
        except KeyError as e:
            raise AnalysisError(f"{run_dir / 'env.json'}: a server entry lacks field {e}") from e
        mine = sorted((e for e in entries if e["server"] == s.name), key=lambda e: e["pair"])
        s.pairs = [read_pair(run_dir, e, settings.get("block_requests")) for e in mine]
        servers.append(s)
    known = {s.name for s in servers}
    strays = sorted({e["server"] for e in entries} - known)
    if strays:
        raise AnalysisError(f"{run_dir / 'pairs.jsonl'}: pairs of server(s) not in env.json: {', '.join(strays)}")
    result = RunResult(run_id=run.get("run_id", run_dir.name), status=run["status"], reason=run.get("reason"),
                       settings=settings, env=env, servers=servers, warnings=[], clients=clients, primary=primary,
                       seconds=run.get("seconds"), caveat=_cold_caveat(settings))
    evaluate(result)
    return result


def _summary(values: list[float | int | None]) -> Summary | None:
    present = [v for v in values if v is not None]
    return stats.summarize(present) if present else None


def client_result(pairs: list[Pair], client: str) -> ClientResult | None:
    """One client's figures over a server's valid pairs (None if it measured none of them)."""
    used = [p for p in pairs if p.quads(client)]
    if not used:
        return None
    quads = [p.quads(client) for p in used]
    estimates = [paired.pair_estimate(q) for q in quads]
    within = paired.within_variance(quads)
    between = paired.between_variance(quads, within)
    c = ClientResult(
        client=client, diff=stats.summarize(estimates),
        plain_diff=stats.summarize([p.estimate(client, plain=True) for p in used]),
        rtt=stats.summarize([statistics.fmean(p.values(client, "server")) for p in used]),
        base_rtt=stats.summarize([statistics.fmean(p.values(client, "base")) for p in used]),
        estimates=estimates, quads=[len(q) for q in quads],
        plain_rtt=stats.summarize([statistics.fmean(p.values(client, "server", plain=True)) for p in used]),
        within_sd=None if within is None else within ** 0.5, between_sd=None if between is None else between ** 0.5)
    hists = {t: [b.histogram for p in used for b in p.blocks if b.client == client and b.target == t and b.histogram]
             for t in ("server", "base")}
    if hists["server"] and hists["base"]:
        c.histogram = histogram.merge(hists["server"])
        c.percentiles = c.histogram.percentiles()
        c.base_percentiles = histogram.merge(hists["base"]).percentiles()
        c.percentile_diffs = {k: v - c.base_percentiles[k] for k, v in c.percentiles.items()}
    return c


def evaluate(r: RunResult) -> None:
    target_abs = float(r.settings.get("precision_floor_us", paired.ABS_TARGET_NS / 1000)) * 1000
    target_rel = float(r.settings.get("precision_pct", paired.REL_TARGET * 100)) / 100
    base = r.baseline
    for s in r.servers:
        if s.baseline:
            continue
        bad = [p for p in s.pairs if p.status == "failed" or (p.status == "measured" and not p.valid)]
        if bad:
            p = bad[0]
            s.reason = f"pair {p.pair}" + (f", {p.phase}" if p.phase else "") + f": {p.reason}"
        elif not any(p.valid for p in s.pairs):
            s.reason = "not measured" + (" (the run was interrupted)" if r.status != "complete" else "")
        s.valid = s.reason is None
        if not s.valid:
            continue
        valid = [p for p in s.pairs if p.valid]
        for client in r.clients:
            c = client_result(valid, client)
            if c is not None:
                s.clients[client] = c
        if s.primary not in s.clients:  # an HTTP/1.1 server in a run whose headline client is ab: none measured it
            s.primary = next(iter(s.clients))
        s.diff = s.clients[s.primary].diff
        s.target_ns = paired.target_ns(s.diff.mean, target_abs, target_rel)
        s.target_met = paired.target_met(s.diff, target_abs, target_rel)
        _costs_of(s, valid)
        s.seconds = sum(p.seconds or 0.0 for p in s.pairs)
        s.requests = sum(c.requests for p in valid for c in p.costs.values())
        if "ab" in s.clients and "lean" in s.clients:
            a, b = s.clients["ab"].diff, s.clients["lean"].diff
            if a.ci95_low is not None and b.ci95_low is not None:
                s.clients_agree = bool(a.ci95_low <= b.ci95_high and b.ci95_low <= a.ci95_high)
        s.warnings = _warnings(s, r)
    if base is not None:
        _baseline_row(r, base)
    ranked = [s for s in r.ranked if not s.baseline]
    for prev, cur in zip(ranked, ranked[1:], strict=False):
        cur.differs_from_previous = (None if len(cur.estimates) < 2 or len(prev.estimates) < 2
                                     else bool(stats.significantly_different(cur.estimates, prev.estimates)))
    _run_warnings(r)


def _cold_caveat(st: dict) -> str | None:
    warmup, block = st.get("warmup") or 0, st.get("block_requests") or 0
    if st.get("wait_for_jit", True) or warmup + block >= WARM_REQUESTS:
        return None
    return (f"smoke run: each JVM served {warmup:,} warm-up requests and blocks of {block:,}, "
            "and the run did not wait for the JIT, so the diffs include the interpreter and the JIT compiling on "
            "the measured CPU (often 10 times a default run's or more); use the default profile to rank servers")


def _costs_of(s: ServerResult, valid: list[Pair]) -> None:
    server = [p.costs["server"] for p in valid if "server" in p.costs]
    s.cpu = _summary([c.cpu_ns for c in server])
    s.cpu_user = _summary([c.cpu_user_ns for c in server])
    s.cpu_system = _summary([c.cpu_system_ns for c in server])
    s.base_cpu = _summary([p.costs["base"].cpu_ns for p in valid if "base" in p.costs])
    s.cpu_diff = _summary([p.costs["server"].request_cpu_ns - p.costs["base"].request_cpu_ns for p in valid
                           if "server" in p.costs and "base" in p.costs])
    s.alloc = _summary([c.alloc_bytes for c in server])
    s.gc_count = _summary([c.gc_count for c in server])
    s.gc_time_ms = _summary([c.gc_time_ms for c in server])
    s.jit_cpu_ms = _summary([c.jit_cpu_ms for c in server])


def _baseline_row(r: RunResult, base: ServerResult) -> None:
    """The dummy's own row: its round trip and costs from its blocks in every valid pair of the run."""
    pairs = [p for s in r.servers if s.valid and not s.baseline for p in s.pairs if p.valid]
    if not pairs:
        base.reason = "no valid pair in this run"
        return
    base.valid = True
    for client in r.clients:
        values = [statistics.fmean(p.values(client, "base")) for p in pairs if p.values(client, "base")]
        if values:
            rtt = stats.summarize(values)
            zero = Summary(0.0, 0.0, 0.0, 0.0, 0.0, rtt.n)
            plain = stats.summarize([statistics.fmean(p.values(client, "base", plain=True)) for p in pairs
                                     if p.values(client, "base")])
            base.clients[client] = ClientResult(client, zero, zero, rtt, rtt, [], [], plain_rtt=plain)
    base.primary = r.primary if r.primary in base.clients else next(iter(base.clients))
    base.diff = base.clients[base.primary].diff
    costs = [p.costs["base"] for p in pairs if "base" in p.costs]
    base.cpu = _summary([c.cpu_ns for c in costs])
    base.cpu_user = _summary([c.cpu_user_ns for c in costs])
    base.cpu_system = _summary([c.cpu_system_ns for c in costs])
    base.alloc = _summary([c.alloc_bytes for c in costs])
    base.gc_count = _summary([c.gc_count for c in costs])
    base.gc_time_ms = _summary([c.gc_time_ms for c in costs])
    base.jit_cpu_ms = _summary([c.jit_cpu_ms for c in costs])


def _warnings(s: ServerResult, r: RunResult) -> list[str]:
    w = []
    c = s.clients[s.primary]
    if s.diff.n < 2:
        w.append(f"only {s.diff.n} process pair: no interval; use the default profile or --min-pairs 3")
    elif not s.target_met:
        between = f"; between-process spread {c.between_sd / 1000:.2f} us" if c.between_sd is not None else ""
        w.append(f"precision target missed: ±{s.diff.half_width / 1000:.2f} us after {s.diff.n} pairs "
                 f"(target ±{s.target_ns / 1000:.2f} us){between}; give it more --budget or --max-pairs, or a "
                 "quieter machine")
    for i in stats.outliers(c.estimates):
        w.append(f"process pair {i + 1} is an outlier ({c.estimates[i] / 1000:.2f} us against a median of "
                 f"{statistics.median(c.estimates) / 1000:.2f} us over {len(c.estimates)} pairs): one JVM compiled or "
                 "laid out differently, or the machine changed; its pair is kept, so the interval shows it")
    if s.clients_agree is False:
        a, b = s.clients["ab"].diff, s.clients["lean"].diff
        w.append(f"ab and the lean client disagree on the diff ({a.mean / 1000:.2f} against {b.mean / 1000:.2f} us, "
                 "intervals apart): the clients' own work differs per request under this pinning; compare one "
                 "client's diffs only")
    # In a smoke run the JIT's work on the shared CPU explains any gap (the caveat says so, once).
    if r.settings.get("pinning") == "shared" and s.cpu_diff is not None and not s.ladder and not r.caveat:
        gap = abs(s.cpu_diff.mean - s.diff.mean)
        plain = c.plain_diff.mean if c.plain_diff.n else None
        if gap > max(CPU_CHECK_ABS_NS, CPU_CHECK_REL * abs(s.diff.mean)) and plain is not None and \
                abs(s.cpu_diff.mean - plain) <= max(CPU_CHECK_ABS_NS, CPU_CHECK_REL * abs(plain)):
            w.append(f"the CPU-time diff ({s.cpu_diff.mean / 1000:.2f} us per request, /proc) is far from the "
                     f"latency diff ({s.diff.mean / 1000:.2f} us) but near the plain-mean diff ({plain / 1000:.2f} "
                     "us): the server spends it in rare slow requests, which the trimmed mean leaves out; see the "
                     "tail (p99.9) in the report")
        elif gap > max(CPU_CHECK_ABS_NS, CPU_CHECK_REL * abs(s.diff.mean)):
            w.append(f"the CPU-time diff ({s.cpu_diff.mean / 1000:.2f} us per request, /proc) is far from the "
                     f"latency diff ({s.diff.mean / 1000:.2f} us): time went to something neither process was "
                     "charged for (the VM, interrupts) or the server works off the request path; rerun on a quieter "
                     "machine")
    valid = [p for p in s.pairs if p.valid and "server" in p.costs]
    busy = [(p.costs["server"].jit_cpu_ms, p.costs["server"].wall_s) for p in valid if p.costs["server"].wall_s]
    if busy and r.settings.get("wait_for_jit", True):
        ms, wall = max(busy, key=lambda b: b[0] / b[1])
        if ms / 1000 / wall > JIT_BUSY_SHARE:
            w.append(f"the JIT compiler threads used {ms:.0f} ms of CPU during {wall:.1f} s of blocks (over "
                     f"{JIT_BUSY_SHARE:.0%}): warm-up was too short for this server; use more --warmup")
    errors = sorted({c.jvm_error for p in valid for c in p.costs.values() if c.jvm_error})
    if errors:
        w.append(f"no allocation/GC numbers from the agent: {errors[0]}")
    return w


def _run_warnings(r: RunResult) -> None:
    if r.baseline is None or not r.baseline.valid:
        r.warnings.append("the dummy baseline has no valid pair, so no diff can be computed; see the reasons below")
    null = r.null
    if null is not None and null.valid and null.diff.ci95_low is not None and not null.diff.ci95_low <= 0 <= \
            null.diff.ci95_high:
        r.warnings.append(f"the null pair (dummy against a second dummy process) shows a difference: "
                          f"{null.diff.mean / 1000:.2f} us [{null.diff.ci95_low / 1000:.2f}, "
                          f"{null.diff.ci95_high / 1000:.2f}], which should contain 0: the pairing is biased by "
                          "something (port, order, a busy machine); rerun on a quieter machine before trusting the "
                          "diffs")
    if r.status != "complete":
        r.warnings.append(f"the run is {r.status}" + (f" ({r.reason})" if r.reason else "")
                          + ": servers after the stop were not measured, or have fewer pairs")
    st = r.settings
    if st.get("pinning") == "none" or st.get("server_cpu") is None:
        r.warnings.append("client and servers were not pinned to CPUs: expect more noise (use --pinning shared or "
                          "split)")
    load = (r.env.get("load_average_start") or [0])[0]
    cpus = r.env.get("cpus_online") or 1
    if load > 0.25 * cpus:
        r.warnings.append(f"the machine was busy when the run started (1-minute load {load:.2f} on {cpus} CPUs): "
                          "rerun on a quiet machine")
