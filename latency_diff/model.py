"""The result model of a run, built from its raw files; every report is rendered from it.

A trial counts only if it was measured and its ab output passes every check (no failed or non-2xx
request, all kept alive, the response length unchanged). A server with any failed trial is invalid,
with the reason, and is left out of the comparison: its numbers are never silently averaged in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from . import stats
from .abparse import AbParseError, parse_file
from .stats import Summary

SUMMARY_FORMAT = "latency-diff/summary/1"
RUN_FORMAT = "latency-diff/run/1"
BODY_BYTES = 10
_TRIAL_FIELDS = ("server", "trial", "status")


class AnalysisError(Exception):
    """The run directory cannot be analyzed; the message names the file and the field."""


@dataclass
class Trial:
    trial: int
    status: str
    reason: str | None = None
    phase: str | None = None
    requests: int | None = None
    rtt_ns: float | None = None
    rps: float | None = None
    bytes_per_response: float | None = None
    cpu_ns_per_request: float | None = None
    cpu_user_ns_per_request: float | None = None
    cpu_system_ns_per_request: float | None = None
    ab_file: str | None = None

    @property
    def valid(self) -> bool:
        return self.status == "measured" and self.reason is None


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
    trials: list[Trial] = field(default_factory=list)
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

    @property
    def rtts(self) -> list[float]:
        return [t.rtt_ns for t in self.trials if t.valid]


@dataclass
class RunResult:
    run_id: str
    status: str
    reason: str | None
    settings: dict
    env: dict
    servers: list[ServerResult]
    warnings: list[str]

    @property
    def ranked(self) -> list[ServerResult]:
        """Valid servers, the baseline first, then by diff (round trip if there is no baseline)."""
        valid = [s for s in self.servers if s.valid]
        return sorted(valid, key=lambda s: (not s.baseline, s.diff.mean if s.diff else s.rtt.mean))

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


def _trial(run_dir: Path, entry: dict, response_bytes: int | None) -> Trial:
    t = Trial(trial=entry["trial"], status=entry["status"], reason=entry.get("reason"), phase=entry.get("phase"),
              requests=entry.get("requests"), ab_file=entry.get("ab_file"))
    if t.status != "measured":
        return t
    if not t.ab_file:
        raise AnalysisError(f"{run_dir / 'trials.jsonl'}: {entry['server']} trial {t.trial}: measured but no ab_file")
    try:
        run = parse_file(run_dir / t.ab_file)
    except AbParseError as e:
        raise AnalysisError(str(e)) from e
    problems = run.problems(requests=t.requests, response_bytes=response_bytes, body_bytes=BODY_BYTES)
    if problems:
        t.reason = "; ".join(problems)
    t.rtt_ns, t.rps, t.bytes_per_response = run.rtt_ns, run.rps, run.bytes_per_response
    cpu = entry.get("cpu")
    if cpu:
        try:
            ns_per_tick = 1e9 / cpu["clock_ticks_per_s"]
            t.cpu_user_ns_per_request = cpu["utime_ticks"] * ns_per_tick / run.complete
            t.cpu_system_ns_per_request = cpu["stime_ticks"] * ns_per_tick / run.complete
        except (KeyError, TypeError, ZeroDivisionError) as e:
            raise AnalysisError(f"{run_dir / 'trials.jsonl'}: {entry['server']} trial {t.trial}: bad cpu record") from e
        t.cpu_ns_per_request = t.cpu_user_ns_per_request + t.cpu_system_ns_per_request
    return t


def build(run_dir: Path) -> RunResult:
    """Reads run.json, env.json, trials.jsonl and every ab file they name. Raises AnalysisError."""
    if not run_dir.is_dir():
        raise AnalysisError(f"{run_dir}: no such run directory")
    run = _load_json(run_dir / "run.json")
    if run.get("format") != RUN_FORMAT:
        raise AnalysisError(f"{run_dir / 'run.json'}: field 'format' is {run.get('format')!r}, this analysis reads "
                            f"{RUN_FORMAT!r} (a run from another version of the kit?)")
    for key in ("status", "settings"):
        if key not in run:
            raise AnalysisError(f"{run_dir / 'run.json'}: missing field '{key}'")
    env = _load_json(run_dir / "env.json")
    if not isinstance(env.get("servers"), list):
        raise AnalysisError(f"{run_dir / 'env.json'}: missing field 'servers'")
    entries = _load_trials(run_dir / "trials.jsonl")
    servers: list[ServerResult] = []
    for meta in env["servers"]:
        try:
            s = ServerResult(name=meta["name"], display=meta["display"], threading=meta["threading"],
                             library=meta.get("library"), library_version=meta.get("library_version"),
                             notes=meta.get("notes", ""), jvm_flags=meta.get("jvm_flags", []),
                             baseline=bool(meta.get("baseline")))
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
                       settings=run["settings"], env=env, servers=servers, warnings=[])
    _evaluate(result)
    return result


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
        valid = [t for t in s.trials if t.valid]
        s.rtt = stats.summarize(s.rtts)
        s.rps = stats.summarize([t.rps for t in valid])
        cpus = [t.cpu_ns_per_request for t in valid if t.cpu_ns_per_request is not None]
        s.cpu = stats.summarize(cpus) if cpus else None
        s.bytes_per_response = valid[0].bytes_per_response
        s.requests = sum(t.requests or 0 for t in valid)
        s.warnings = _warnings(s)
    base = next((s for s in r.servers if s.baseline and s.valid), None)
    if base is None:
        r.warnings.append("the dummy baseline has no valid trial, so no diff can be computed; see its reason")
    else:
        for s in r.servers:
            if s.baseline and s.valid:
                s.diff = Summary(0.0, 0.0, 0.0, 0.0, 0.0, s.rtt.n)  # by definition: the baseline's own diff
            elif s.valid:
                s.diff = stats.welch_difference(s.rtts, base.rtts)
    ranked = r.ranked
    for prev, cur in zip(ranked, ranked[1:], strict=False):
        different = stats.significantly_different(cur.rtts, prev.rtts)
        cur.differs_from_previous = different
    if r.status != "complete":
        r.warnings.append(f"the run is {r.status}" + (f" ({r.reason})" if r.reason else "")
                          + ": servers after the stop were not measured, or have fewer trials")
    settings = r.settings
    if settings.get("client_cpu") is None or settings.get("server_cpu") is None:
        r.warnings.append("client and server were not both pinned to CPUs: expect more noise "
                          "(use --client-cpu and --server-cpu)")
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
        w.append(f"trial {valid[i].trial} is an outlier ({valid[i].rtt_ns / 1000:.2f} us against a median of "
                 f"{s.rtt.median / 1000:.2f} us; median-absolute-deviation test): something else may have run then")
    return w
