"""The result model of a run, built from its raw files; every report is rendered from it.

A trial counts only if it was measured and every client's output passes every check (no failed or
non-2xx request, all kept alive, the response length unchanged). A server with any failed trial is
invalid, with the reason, and is left out of the comparison: its numbers are never silently
averaged in.

Each trial holds one measurement per client (ab, lean). The primary client, whose round trip makes
the diffs, the ranking and the cost per request, is the lean client when the run used it (lower
and steadier overhead of its own, and a histogram), else ab; the other one's numbers are kept
beside it, and the two are compared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from . import histogram, lean, stats
from .abparse import AbParseError, parse_file
from .histogram import Histogram
from .stats import Summary

SUMMARY_FORMAT = "latency-diff/summary/2"
RUN_FORMATS = ("latency-diff/run/1", "latency-diff/run/2")
BODY_BYTES = 10
_TRIAL_FIELDS = ("server", "trial", "status")
#: ab's and the lean client's round trips should agree within this (issue target: 2%).
AGREEMENT = 0.02
#: JIT compilation during a measured run above this share of its wall time means warm-up was short.
JIT_BUSY_SHARE = 0.01


class AnalysisError(Exception):
    """The run directory cannot be analyzed; the message names the file and the field."""


@dataclass
class Measurement:
    """One client's measured run in one trial, with the server's costs over exactly that run."""
    client: str
    file: str
    rtt_ns: float
    rps: float
    bytes_per_response: float | None = None
    #: lean only: the mean of the timed round trips (rtt_ns also counts the client's loop, like ab).
    mean_rtt_ns: float | None = None
    histogram: Histogram | None = None
    cpu_user_ns_per_request: float | None = None
    cpu_system_ns_per_request: float | None = None
    alloc_bytes_per_request: float | None = None
    gc_count: int | None = None
    gc_time_ms: int | None = None
    compile_time_ms: int | None = None
    #: CPU time of the JIT compiler threads during the run (from /proc), in ms.
    jit_cpu_ms: float | None = None
    wall_s: float | None = None
    jvm_error: str | None = None

    @property
    def cpu_ns_per_request(self) -> float | None:
        if self.cpu_user_ns_per_request is None:
            return None
        return self.cpu_user_ns_per_request + self.cpu_system_ns_per_request


@dataclass
class Trial:
    trial: int
    status: str
    reason: str | None = None
    phase: str | None = None
    requests: int | None = None
    measurements: dict[str, Measurement] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return self.status == "measured" and self.reason is None


@dataclass
class ClientResult:
    """One client's numbers for one server, over its valid trials."""
    client: str
    rtt: Summary
    rps: Summary
    diff: Summary | None = None
    mean_rtt: Summary | None = None
    #: lean only: percentiles of all trials' round trips together, and minus the dummy's, in ns.
    percentiles: dict[str, int] | None = None
    percentile_diffs: dict[str, int] | None = None
    histogram: Histogram | None = None
    #: lean only: each trial's median round trip (p50 of its histogram): robust to the rare long stalls
    #: that dominate a mean on a noisy machine. Summarized like the mean, and minus the dummy's.
    p50_values: list[float] = field(default_factory=list)
    p50: Summary | None = None
    p50_diff: Summary | None = None
    cpu_user: Summary | None = None
    cpu_system: Summary | None = None
    cpu: Summary | None = None
    alloc: Summary | None = None
    gc_count: Summary | None = None
    gc_time_ms: Summary | None = None
    compile_time_ms: Summary | None = None
    jit_cpu_ms: Summary | None = None


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
    trials: list[Trial] = field(default_factory=list)
    primary: str = "ab"
    clients: dict[str, ClientResult] = field(default_factory=dict)
    valid: bool = False
    reason: str | None = None
    rtt: Summary | None = None
    rps: Summary | None = None
    cpu: Summary | None = None
    diff: Summary | None = None
    bytes_per_response: float | None = None
    requests: int = 0
    warnings: list[str] = field(default_factory=list)
    #: False when this server's diff is not significantly different from the row above it.
    differs_from_previous: bool | None = None

    def client_rtts(self, client: str) -> list[float]:
        return [t.measurements[client].rtt_ns for t in self.trials if t.valid and client in t.measurements]

    @property
    def rtts(self) -> list[float]:
        """The primary client's round trip of each valid trial."""
        return self.client_rtts(self.primary)

    @property
    def agreement(self) -> float | None:
        """(ab - lean) / lean of the mean round trips, when both clients measured."""
        if "ab" not in self.clients or "lean" not in self.clients:
            return None
        lean_mean = self.clients["lean"].rtt.mean
        return (self.clients["ab"].rtt.mean - lean_mean) / lean_mean


@dataclass
class RunResult:
    run_id: str
    status: str
    reason: str | None
    settings: dict
    env: dict
    servers: list[ServerResult]
    warnings: list[str]
    clients: tuple[str, ...] = ("ab",)
    primary: str = "ab"

    @property
    def ranked(self) -> list[ServerResult]:
        """Valid servers: the ladder first (floor, dummy, NIO dummy: by round trip), then by diff."""
        valid = [s for s in self.servers if s.valid]
        return sorted(valid, key=lambda s: (not (s.baseline or s.reference),
                                            s.rtt.mean if (s.baseline or s.reference) or not s.diff else s.diff.mean))

    @property
    def baseline(self) -> ServerResult | None:
        return next((s for s in self.servers if s.baseline and s.valid), None)

    @property
    def invalid(self) -> list[ServerResult]:
        return [s for s in self.servers if not s.valid]


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


def _load_trials(path: Path) -> list[dict]:
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
        missing = [f for f in _TRIAL_FIELDS if f not in entry]
        if missing:
            raise AnalysisError(f"{path}: line {i}: missing field(s) {', '.join(missing)}")
        entries.append(entry)
    return entries


def _where(run_dir: Path, entry: dict) -> str:
    return f"{run_dir / 'trials.jsonl'}: {entry['server']} trial {entry['trial']}"


def _measurement(run_dir: Path, entry: dict, client: str, m: dict, requests: int | None,
                 response_bytes: int | None) -> tuple[Measurement, list[str]]:
    """Reads one client's output file; returns the measurement and why it does not count (if so)."""
    rel = m.get("file")
    if not isinstance(rel, str):
        raise AnalysisError(f"{_where(run_dir, entry)}: {client} measurement without a file")
    if client == "ab":
        try:
            run = parse_file(run_dir / rel)
        except AbParseError as e:
            raise AnalysisError(str(e)) from e
        problems = run.problems(requests=requests, response_bytes=response_bytes, body_bytes=BODY_BYTES)
        out = Measurement(client, rel, run.rtt_ns, run.rps, bytes_per_response=run.bytes_per_response)
        complete = run.complete
    elif client == "lean":
        try:
            lrun = lean.parse_file(run_dir / rel)
        except lean.LeanParseError as e:
            raise AnalysisError(str(e)) from e
        problems = lrun.problems(requests=requests, response_bytes=response_bytes)
        if not lrun.completed:
            return Measurement(client, rel, 0.0, 0.0), problems or ["lean client completed no request"]
        out = Measurement(client, rel, lrun.rtt_ns, lrun.rps, bytes_per_response=float(lrun.response_bytes),
                          mean_rtt_ns=lrun.mean_rtt_ns, histogram=lrun.histogram)
        complete = lrun.completed
    else:
        raise AnalysisError(f"{_where(run_dir, entry)}: unknown client {client!r}")
    cpu = m.get("cpu")
    if cpu:
        try:
            ns_per_tick = 1e9 / cpu["clock_ticks_per_s"]
            out.cpu_user_ns_per_request = cpu["utime_ticks"] * ns_per_tick / complete
            out.cpu_system_ns_per_request = cpu["stime_ticks"] * ns_per_tick / complete
            out.wall_s = cpu.get("wall_s")
            if cpu.get("jit_ticks") is not None:
                out.jit_cpu_ms = cpu["jit_ticks"] * ns_per_tick / 1e6
        except (KeyError, TypeError, ZeroDivisionError) as e:
            raise AnalysisError(f"{_where(run_dir, entry)}: bad cpu record") from e
    jvm = m.get("jvm")
    if jvm:
        try:
            out.alloc_bytes_per_request = jvm["allocated_bytes"] / complete if jvm["allocated_bytes"] >= 0 else None
            out.gc_count, out.gc_time_ms = int(jvm["gc_count"]), int(jvm["gc_time_ms"])
            out.compile_time_ms = int(jvm["compile_time_ms"])
        except (KeyError, TypeError, ValueError) as e:
            raise AnalysisError(f"{_where(run_dir, entry)}: bad jvm record") from e
    out.jvm_error = m.get("jvm_error")
    return out, problems


def _trial(run_dir: Path, entry: dict, response_bytes: int | None) -> Trial:
    t = Trial(trial=entry["trial"], status=entry["status"], reason=entry.get("reason"), phase=entry.get("phase"),
              requests=entry.get("requests"))
    measurements = entry.get("measurements")
    if measurements is None and entry.get("ab_file"):  # run/1: ab only, its fields on the trial itself
        measurements = {"ab": {"file": entry["ab_file"], "cpu": entry.get("cpu")}}
    if t.status != "measured":
        return t  # failed, skipped or interrupted: the reason says why; nothing of it counts
    if not measurements or not isinstance(measurements, dict):
        raise AnalysisError(f"{_where(run_dir, entry)}: measured but no measurements")
    problems: list[str] = []
    for client, m in measurements.items():
        t.measurements[client], p = _measurement(run_dir, entry, client, m, t.requests, response_bytes)
        problems += [f"{client}: {x}" if len(measurements) > 1 else x for x in p]
    if problems:
        t.reason = "; ".join(problems)
    return t


def build(run_dir: Path) -> RunResult:
    """Reads run.json, env.json, trials.jsonl and every ab file they name. Raises AnalysisError."""
    if not run_dir.is_dir():
        raise AnalysisError(f"{run_dir}: no such run directory")
    run = _load_json(run_dir / "run.json")
    if run.get("format") not in RUN_FORMATS:
        raise AnalysisError(f"{run_dir / 'run.json'}: field 'format' is {run.get('format')!r}, this analysis reads "
                            f"{' and '.join(RUN_FORMATS)} (a run from another version of the kit?)")
    for key in ("status", "settings"):
        if key not in run:
            raise AnalysisError(f"{run_dir / 'run.json'}: missing field '{key}'")
    env = _load_json(run_dir / "env.json")
    if not isinstance(env.get("servers"), list):
        raise AnalysisError(f"{run_dir / 'env.json'}: missing field 'servers'")
    entries = _load_trials(run_dir / "trials.jsonl")
    clients = tuple(run["settings"].get("clients") or ("ab",))
    primary = "lean" if "lean" in clients else "ab"
    servers: list[ServerResult] = []
    for meta in env["servers"]:
        try:
            s = ServerResult(name=meta["name"], display=meta["display"], threading=meta["threading"],
                             library=meta.get("library"), library_version=meta.get("library_version"),
                             notes=meta.get("notes", ""), jvm_flags=meta.get("jvm_flags", []),
                             baseline=bool(meta.get("baseline")), reference=bool(meta.get("reference")),
                             primary=primary)
        except KeyError as e:
            raise AnalysisError(f"{run_dir / 'env.json'}: a server entry lacks field {e}") from e
        mine = sorted((e for e in entries if e["server"] == s.name), key=lambda e: e["trial"])
        lengths = [e.get("response_bytes") for e in mine if e.get("response_bytes")]
        s.trials = [_trial(run_dir, e, lengths[0] if lengths else None) for e in mine]
        servers.append(s)
    known = {s.name for s in servers}
    strays = sorted({e["server"] for e in entries} - known)
    if strays:
        raise AnalysisError(f"{run_dir / 'trials.jsonl'}: trials of server(s) not in env.json: {', '.join(strays)}")
    result = RunResult(run_id=run.get("run_id", run_dir.name), status=run["status"], reason=run.get("reason"),
                       settings=run["settings"], env=env, servers=servers, warnings=[], clients=clients,
                       primary=primary)
    _evaluate(result)
    return result


def _summary(values: list[float | int | None]) -> Summary | None:
    present = [v for v in values if v is not None]
    return stats.summarize(present) if present else None


def _client_result(s: ServerResult, client: str) -> ClientResult | None:
    ms = [t.measurements[client] for t in s.trials if t.valid and client in t.measurements]
    if not ms:
        return None
    c = ClientResult(client=client, rtt=stats.summarize([m.rtt_ns for m in ms]),
                     rps=stats.summarize([m.rps for m in ms]), mean_rtt=_summary([m.mean_rtt_ns for m in ms]),
                     cpu_user=_summary([m.cpu_user_ns_per_request for m in ms]),
                     cpu_system=_summary([m.cpu_system_ns_per_request for m in ms]),
                     cpu=_summary([m.cpu_ns_per_request for m in ms]),
                     alloc=_summary([m.alloc_bytes_per_request for m in ms]),
                     gc_count=_summary([m.gc_count for m in ms]), gc_time_ms=_summary([m.gc_time_ms for m in ms]),
                     compile_time_ms=_summary([m.compile_time_ms for m in ms]),
                     jit_cpu_ms=_summary([m.jit_cpu_ms for m in ms]))
    hists = [m.histogram for m in ms if m.histogram is not None]
    c.p50_values = [float(h.percentile(50)) for h in hists if h.count]
    c.p50 = _summary(c.p50_values)
    if hists:
        c.histogram = histogram.merge(hists)
        c.percentiles = c.histogram.percentiles()
    return c


def _evaluate(r: RunResult) -> None:
    for s in r.servers:
        bad = [t for t in s.trials if t.status in ("failed",) or (t.status == "measured" and not t.valid)]
        if bad:
            t = bad[0]
            where = f"trial {t.trial}" + (f", {t.phase}" if t.phase else "")
            s.reason = f"{where}: {t.reason}"
        elif not s.rtts:
            s.reason = "not measured" + (" (the run was interrupted)" if r.status != "complete" else "")
        s.valid = s.reason is None
        if not s.valid:
            continue
        for client in r.clients:
            c = _client_result(s, client)
            if c is not None:
                s.clients[client] = c
        p = s.clients[s.primary]
        s.rtt, s.rps, s.cpu = p.rtt, p.rps, p.cpu
        valid = [t for t in s.trials if t.valid]
        s.bytes_per_response = valid[0].measurements[s.primary].bytes_per_response
        s.requests = sum(t.requests or 0 for t in valid)
        s.warnings = _warnings(s)
    base = r.baseline
    if base is None:
        r.warnings.append("the dummy baseline has no valid trial, so no diff can be computed; see its reason")
    else:
        for s in r.servers:
            if not s.valid:
                continue
            for client, c in s.clients.items():
                bc = base.clients.get(client)
                if s.baseline:
                    c.diff = Summary(0.0, 0.0, 0.0, 0.0, 0.0, c.rtt.n)  # by definition: the baseline's own diff
                    c.p50_diff = Summary(0.0, 0.0, 0.0, 0.0, 0.0, len(c.p50_values)) if c.p50_values else None
                elif bc is not None:
                    c.diff = stats.welch_difference(s.client_rtts(client), base.client_rtts(client))
                    if c.p50_values and bc.p50_values:
                        c.p50_diff = stats.welch_difference(c.p50_values, bc.p50_values)
                bp = base.clients.get(client)
                if c.percentiles and bp is not None and bp.percentiles:
                    c.percentile_diffs = {k: v - bp.percentiles[k] for k, v in c.percentiles.items()}
            s.diff = s.clients[s.primary].diff
    ranked = r.ranked
    for prev, cur in zip(ranked, ranked[1:], strict=False):
        cur.differs_from_previous = stats.significantly_different(cur.rtts, prev.rtts)
    if r.status != "complete":
        r.warnings.append(f"the run is {r.status}" + (f" ({r.reason})" if r.reason else "")
                          + ": servers after the stop were not measured, or have fewer trials")
    settings = r.settings
    if settings.get("pinning") == "none" or settings.get("client_cpu") is None or settings.get("server_cpu") is None:
        r.warnings.append("client and server were not pinned to CPUs: expect more noise (use --pinning shared "
                          "or split)")
    load = (r.env.get("load_average_start") or [0])[0]
    cpus = r.env.get("cpus_online") or 1
    if load > 0.25 * cpus:
        r.warnings.append(f"the machine was busy when the run started (1-minute load {load:.2f} on {cpus} CPUs): "
                          "rerun on a quiet machine")


def _warnings(s: ServerResult) -> list[str]:
    w = []
    if s.rtt.n < stats.MIN_TRIALS:
        w.append(f"only {s.rtt.n} trial(s): the interval is wide or missing; use --trials {stats.MIN_TRIALS} or more")
    spread = s.rtt.rel_spread
    if spread is not None and spread > stats.UNSTABLE_SPREAD:
        w.append(f"unstable: the round trip's spread is {spread:.0%} of its mean (over "
                 f"{stats.UNSTABLE_SPREAD:.0%}); rerun on a quiet machine or with more --requests")
    valid = [t for t in s.trials if t.valid]
    for i in stats.outliers(s.rtts):
        rtt = valid[i].measurements[s.primary].rtt_ns
        w.append(f"trial {valid[i].trial} is an outlier ({rtt / 1000:.2f} us against a median of "
                 f"{s.rtt.median / 1000:.2f} us; median-absolute-deviation test): something else may have run then")
    agreement = s.agreement
    if agreement is not None and abs(agreement) > AGREEMENT:
        w.append(f"ab and the lean client disagree: ab's round trip is {agreement:+.1%} off the lean client's "
                 f"(more than {AGREEMENT:.0%}); the clients' own costs differ, so compare diffs, not round trips")
    busy = [(m.jit_cpu_ms, m.wall_s) for t in valid for m in [t.measurements[s.primary]]
            if m.jit_cpu_ms is not None and m.wall_s]
    if busy:
        ms, wall = max(busy, key=lambda b: b[0] / b[1])
        if ms / 1000 / wall > JIT_BUSY_SHARE:
            w.append(f"the JIT compiler threads used {ms:.0f} ms of CPU during a {wall * 1000:.0f} ms measured run "
                     f"(over {JIT_BUSY_SHARE:.0%}): warm-up was too short for this server; use more --warmup")
    errors = sorted({m.jvm_error for t in valid for m in t.measurements.values() if m.jvm_error})
    if errors:
        w.append(f"no allocation/GC numbers from the agent: {errors[0]}")
    return w
