"""Independent: the kit's ratio for a few servers against a separately made measurement of the same servers.

A ratio (server round trip over the dummy's) is what the kit claims with an interval. Its design choices
(the lean client, the ab quad in each pair, preparing processes on the other CPU, the JIT wait, the agent,
the median of segments, the scaling, the stopping rule) are not in that interval; the sensitivity benchmark
varies them one at a time from inside the kit. This benchmark measures from outside it, with as little of the
kit as possible:

- its own client, native/abba.c, written apart from the kit's lean client: two keep-alive connections, the
  dummy (A) and the server (B), runs of --run requests in the order A B B A, each run timed as a whole;
- a fresh dummy and a fresh server for every pair, both started on the measured CPU one after the other
  (no preparing ahead), without the kit's java agent, with the kit's JVM heap flags;
- the warm-up sent by the same client, alternating, on the measured CPU, with no wait for the JIT after it;
- its own statistics: a pair's ratio is its server runs' total time over its dummy runs' (a ratio of means),
  and a server's ratio the geometric mean of its pairs' with a Student-t interval on their logarithms;
- a fixed number of pairs (--pairs), taken in rotation over the servers, no stopping rule.

What is shared with the kit: the servers' jars and their start-up contract (READY line), the request bytes,
the pinning of client and servers to one CPU (the kit's shared pinning), and the Python that starts processes.

Rounds alternate a default kit run of the same servers (its counting and profiling windows off: they never
touch a measured pair) and an independent measurement, --rounds times, so that a drift of the machine lands
on both. Per server: each run's ratio and interval, and the kit's pairs against the independent pairs pooled
over the rounds, with a Welch 95% interval of the difference (the kit's side with the sd its own interval
used). The target: the two agree within that interval for Undertow, Tomcat NIO and Jetty.

`--from DIR` computes the page again from DIR's runs, without measuring.
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import os
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from .. import KIT_ROOT, envinfo, lean, stats
from ..analysis.export import tables
from ..analysis.model import RunResult
from ..measure import conformance
from ..measure.process import ServerProcess, StartError
from ..servers import Server, discover
from ..settings import DEFAULT_JVM_FLAGS, pin
from . import common

SERVERS = "undertow,tomcat-nio,jetty"
ABBA = KIT_ROOT / "native" / "build" / "abba"
KIT_OFF = ["--count-requests", "0", "--profile-requests", "0"]
FORMAT = "latency-diff/abba/1"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--servers", default=SERVERS, help=f"servers (default {SERVERS})")
    p.add_argument("--rounds", type=int, default=2, help="rounds of (a kit run, an independent measurement) "
                   "(default 2)")
    p.add_argument("--pairs", type=int, default=8, help="independent process pairs of every server in a round "
                   "(default 8)")
    p.add_argument("--run", type=int, default=256, help="requests in a row to one process (default 256, the kit's)")
    p.add_argument("--quads", type=int, default=300, help="measured A B B A quads of runs per pair (default 300)")
    p.add_argument("--warmup", type=int, default=200_000, help="warm-up requests to each process, alternating "
                   "runs (default 200,000)")
    p.add_argument("--with-lean", action="store_true", help="in each independent pair, after abba, measure the same "
                   "processes with the kit's lean client too (a diagnosis of the clients' difference)")
    p.add_argument("--from", dest="from_dir", type=Path, help="compute the page again from this folder's runs")


# -- one independent pair -------------------------------------------------------------------------------------------
def check(out: dict, warmup: int, quads: int, run: int) -> str | None:
    """Why an abba output makes its pair invalid, or None."""
    if out.get("format") != FORMAT:
        return f"not an abba output ({out.get('format')!r})"
    if out.get("error"):
        return f"client: {out['error']}"
    for side, who in (("a", "dummy"), ("b", "server")):
        s = out[side]
        if s["non_2xx"]:
            return f"{who}: {s['non_2xx']} non-2xx responses"
        if s["length_changed"]:
            return f"{who}: {s['length_changed']} responses of another length"
        want = warmup + 2 * quads * run
        if s["completed"] != want or len(s["run_ns"]) != 2 * quads:
            return f"{who}: {s['completed']} responses, {len(s['run_ns'])} runs (expected {want}, {2 * quads})"
    return None


def pair_ratio(out: dict) -> float:
    """Server over dummy: total time of the server's measured runs over the dummy's (equal request counts)."""
    return sum(out["b"]["run_ns"]) / sum(out["a"]["run_ns"])


def pair_diff_ns(out: dict) -> float:
    """Server minus dummy: the mean round trips of the measured runs, in ns (a client's own cost per request is in
    both and cancels)."""
    run = out["run"]
    a, b = out["a"]["run_ns"], out["b"]["run_ns"]
    return sum(b) / (len(b) * run) - sum(a) / (len(a) * run)


def measure_pair(server: Server, dummy: Server, cpu: int | None, request: Path, logs: Path, tag: str,
                 args: argparse.Namespace) -> dict:
    """Starts a fresh dummy and server, runs abba against them, stops both: the pair's record."""
    rec: dict = {"server": server.name, "tag": tag, "valid": False, "reason": None}
    t0 = time.monotonic()
    flags = DEFAULT_JVM_FLAGS.split()
    try:
        with ServerProcess(dummy, 0, logs / f"{tag}-dummy.log", jvm_flags=flags, cpu=cpu) as d, \
                ServerProcess(server, 0, logs / f"{tag}-{server.name}.log", jvm_flags=flags, cpu=cpu) as s:
            port_a, port_b = d.start(), s.start()
            rec["start_s"] = time.monotonic() - t0
            cmd = [*([] if cpu is None else ["taskset", "-c", str(cpu)]), str(ABBA), "--port-a", str(port_a),
                   "--port-b", str(port_b), "--request", str(request), "--run", str(args.run),
                   "--quads", str(args.quads), "--warmup", str(args.warmup)]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
            if args.with_lean:
                rec["lean"] = lean_in_pair(port_a, port_b, cpu, request, args)
            if not (d.alive() and s.alive()):
                rec["reason"] = f"{'dummy' if not d.alive() else server.name} exited during the measurement: " \
                                f"{(d if not d.alive() else s).start_failure()}"
    except StartError as e:
        rec["reason"] = f"start: {e}"
        return rec
    rec["seconds"] = time.monotonic() - t0
    try:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        rec["reason"] = rec["reason"] or f"client output unreadable (exit {proc.returncode}): {proc.stderr.strip()}"
        return rec
    rec["abba"] = out
    rec["reason"] = rec["reason"] or check(out, args.warmup, args.quads, args.run)
    if rec["reason"] is None:
        rec["valid"], rec["ratio"] = True, pair_ratio(out)
    return rec


def lean_in_pair(port_a: int, port_b: int, cpu: int | None, request: Path, args: argparse.Namespace) -> dict:
    """--with-lean: right after abba, the kit's lean client on the same two warm processes, as many requests in runs
    of the same length (in segments of 4,096 or of one run): its ratio of total times, and each side's mean round
    trip, so that the two clients compare on the same processes (a diagnosis, not part of the independent figure)."""
    segment = 4096 if args.run <= 2048 and 4096 % (2 * args.run) == 0 else 2 * args.run
    requests = max(segment, 2 * args.quads * args.run // segment * segment)
    cmd = [*([] if cpu is None else ["taskset", "-c", str(cpu)]),
           *lean.pair_command("127.0.0.1", port_a, port_b, request, requests, args.run, segment, 5000)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    try:
        out = lean.parse_pair(proc.stdout)
    except lean.LeanParseError as e:
        return {"problem": str(e)}
    problems = out.problems(requests=requests)
    if problems:
        return {"problem": "; ".join(problems)}
    a = sum(seg["base"].sum_ns for seg in out.segments) / sum(seg["base"].count for seg in out.segments)
    b = sum(seg["server"].sum_ns for seg in out.segments) / sum(seg["server"].count for seg in out.segments)
    return {"ratio": b / a, "base_ns": a, "server_ns": b, "requests": requests}


def measure(folder: Path, servers: list[Server], dummy: Server, args: argparse.Namespace, round_no: int) -> Path:
    """--pairs pairs of every server, in rotation, into folder/pairs.jsonl.xz; returns that file."""
    folder.mkdir(parents=True)
    cpu, _ = pin("shared", None, None)
    path = folder / "pairs.jsonl.xz"
    with tempfile.TemporaryDirectory(prefix="latency-diff-independent-") as tmp, lzma.open(path, "wt") as f:
        request = Path(tmp) / "request.bin"
        for p in range(args.pairs):
            k = (p + round_no) % len(servers)
            for server in servers[k:] + servers[:k]:
                request.write_bytes(conformance.request_bytes(server.http, "127.0.0.1", 8080))
                rec = measure_pair(server, dummy, cpu, request, folder / "logs", f"{p + 1:02d}", args)
                rec["pair"] = p + 1
                f.write(json.dumps(rec) + "\n")
                f.flush()
                shown = f"ratio {rec['ratio']:.4f}" if rec["valid"] else f"INVALID: {rec['reason']}"
                print(f"independent: pair {p + 1}/{args.pairs} {server.name}: {shown} ({rec.get('seconds', 0):.1f} s)",
                      flush=True)
    return path


# -- statistics -----------------------------------------------------------------------------------------------------
def geometric(ratios: list[float]) -> stats.Summary:
    """The geometric mean of the pairs' ratios with a Student-t 95% interval on their logarithms."""
    logs = [math.log(r) for r in ratios]
    n, m = len(logs), statistics.fmean(logs)
    if n < 2:
        return stats.Summary(math.exp(m), math.exp(m), None, None, None, n)
    sd = statistics.stdev(logs)
    half = stats.t_quantile(0.975, n - 1) * sd / math.sqrt(n)
    return stats.Summary(math.exp(m), statistics.median(ratios), sd, math.exp(m - half), math.exp(m + half), n)


def read_pairs(path: Path) -> list[dict]:
    with lzma.open(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def kit_side(r: RunResult, name: str) -> tuple[list[float], float, stats.Summary] | None:
    """A kit run's per-pair ratios of a server, the sd its interval used, and its ratio."""
    s = r.server(name)
    if s is None or not s.valid or s.primary not in s.clients:
        return None
    c = s.clients[s.primary]
    return list(c.ratios), c.ratio.stdev or 0.0, c.ratio


def compare(kit: list[tuple[list[float], float, stats.Summary]], indep: list[list[float]]) -> dict:
    """Kit pairs against independent pairs, pooled over rounds: Welch 95% interval of kit minus independent, the
    kit's side with the largest sd its runs' intervals used (never below its pairs' own)."""
    a = [x for ratios, _, _ in kit for x in ratios]
    b = [x for ratios in indep for x in ratios]
    d = stats.welch_difference(a, b, sd_a=max(sd for _, sd, _ in kit))
    base = statistics.fmean(b)
    return {"kit": statistics.fmean(a), "independent": base, "kit_pairs": len(a), "independent_pairs": len(b),
            "difference": d.mean, "low": d.ci95_low, "high": d.ci95_high, "pct": 100 * d.mean / base,
            "pct_low": 100 * d.ci95_low / base, "pct_high": 100 * d.ci95_high / base,
            "agrees": d.ci95_low <= 0 <= d.ci95_high}


def compare_us(kit: list[list[float]], indep: list[float]) -> dict:
    """The kit's per-pair diffs (ns, at each kit run's reference) against the independent pairs' (ns, each its own
    round trips), pooled: Welch 95% interval of kit minus independent."""
    a = [x for run in kit for x in run]
    d = stats.welch_difference(a, indep)
    return {"kit_us": statistics.fmean(a) / 1000, "independent_us": statistics.fmean(indep) / 1000,
            "difference_us": d.mean / 1000, "low_us": d.ci95_low / 1000, "high_us": d.ci95_high / 1000,
            "agrees": d.ci95_low <= 0 <= d.ci95_high}


def clients(pairs: list[dict]) -> dict | None:
    """--with-lean: per pair lean's ratio over abba's, and lean's dummy round trip minus abba's (the clients' own
    cost difference), with Student-t 95% intervals over the pairs."""
    both = [p for p in pairs if p["valid"] and "ratio" in (p.get("lean") or {})]
    if len(both) < 2:
        return None
    rel = stats.summarize([p["lean"]["ratio"] / p["ratio"] for p in both])
    cost = stats.summarize([p["lean"]["base_ns"] - sum(p["abba"]["a"]["run_ns"]) / (len(p["abba"]["a"]["run_ns"])
                                                                                 * p["abba"]["run"]) for p in both])
    return {"pairs": len(both), "lean_over_abba": rel.mean, "low": rel.ci95_low, "high": rel.ci95_high,
            "base_cost_ns": cost.mean, "base_cost_low": cost.ci95_low, "base_cost_high": cost.ci95_high}


def _ci(s: stats.Summary) -> str:
    return f"{s.mean:.4f} [{s.ci95_low:.4f}, {s.ci95_high:.4f}]" if s.ci95_low is not None else f"{s.mean:.4f}"


def report(out: Path, names: list[str]) -> dict:
    """The page from out's NN-kit/ and NN-independent/ folders."""
    kit_runs = sorted(d for d in out.iterdir() if d.is_dir() and d.name.endswith("-kit"))
    ind_runs = sorted(d for d in out.iterdir() if d.is_dir() and d.name.endswith("-independent"))
    built = [(d.name, common.build(next(x for x in d.iterdir() if x.is_dir()))) for d in kit_runs]
    pairs = {d.name: read_pairs(d / "pairs.jsonl.xz") for d in ind_runs}
    rows, data, invalid, us_rows, client_rows = [], {}, [], [], []
    for name in names:
        kit = [k for _, r in built if (k := kit_side(r, name)) is not None]
        indep = [[p["ratio"] for p in ps if p["server"] == name and p["valid"]] for ps in pairs.values()]
        indep = [x for x in indep if x]
        invalid += [f"{run} pair {p['pair']} {name}: {p['reason']}" for run, ps in pairs.items() for p in ps
                    if p["server"] == name and not p["valid"]]
        if not kit or not indep or sum(len(x) for x in indep) < 2:
            rows.append([name, "-", "-", "-", "-", "no data on one side"])
            continue
        mine = [p for ps in pairs.values() for p in ps if p["server"] == name and p["valid"]]
        kit_ns = [list(r.server(name).clients[r.server(name).primary].estimates) for _, r in built
                  if kit_side(r, name) is not None]
        u = compare_us(kit_ns, [pair_diff_ns(p["abba"]) for p in mine])
        us_rows.append([name, f"{u['kit_us']:.2f}", f"{u['independent_us']:.2f}",
                        f"{u['difference_us']:+.2f} [{u['low_us']:+.2f}, {u['high_us']:+.2f}]",
                        "agrees" if u["agrees"] else "differs"])
        cl = clients(mine)
        if cl is not None:
            client_rows.append([name, str(cl["pairs"]),
                                f"{cl['lean_over_abba']:.4f} [{cl['low']:.4f}, {cl['high']:.4f}]",
                                f"{cl['base_cost_ns']:+.0f} [{cl['base_cost_low']:+.0f}, {cl['base_cost_high']:+.0f}]"])
        c = compare(kit, indep)
        c["us"], c["clients"] = u, cl
        c["kit_runs"] = [_ci(k[2]) for k in kit]
        c["independent_runs"] = [_ci(geometric(x)) for x in indep]
        data[name] = c
        rows.append([name, "; ".join(c["kit_runs"]), "; ".join(c["independent_runs"]),
                     f"{c['difference']:+.4f} [{c['low']:+.4f}, {c['high']:+.4f}]",
                     f"{c['pct']:+.1f}% [{c['pct_low']:+.1f}, {c['pct_high']:+.1f}]",
                     "agrees" if c["agrees"] else "differs"])
    t: tables.Table = (("server", "kit: ratio per run [95% CI]", "independent: ratio per run [95% CI]",
                        "kit - independent (pairs pooled)", "in % of the independent ratio", "verdict"), rows, set())
    agree = sum(1 for c in data.values() if c["agrees"])
    verdict = (f"{agree} of {len(names)} servers agree: the Welch 95% interval of the kit's mean pair ratio minus the "
               f"independent one holds 0. Target: all of {', '.join(names)}: "
               f"{'met' if agree == len(names) else 'missed'}.")
    us_t: tables.Table = (("server", "kit diff [us]", "independent diff [us]", "kit - independent [us] (pairs pooled)",
                           "verdict"), us_rows, set())
    kit_file = out / "kit.json"
    made_by = json.loads(kit_file.read_text(encoding="utf-8")) if kit_file.is_file() else {}
    if made_by:
        verdict += (f" Measured by the kit at commit {str(made_by.get('commit'))[:8]}"
                    + (" with uncommitted changes." if made_by.get("dirty") else "."))
    parts = [verdict, common.md_table(t),
             "The same pairs in microseconds: the kit's diffs at each run's reference round trip, the independent "
             "pairs' as their server's mean round trip minus their dummy's. A client's own cost per request is in "
             "both round trips and cancels from a diff, but not from a ratio: (S + c) / (D + c) is nearer 1 the "
             "dearer the client c. The machine's speed moves from pair to pair, which the ratio cancels and the "
             "independent diff does not, so this comparison is the wider one.",
             common.md_table(us_t)]
    if client_rows:
        cl_t: tables.Table = (("server", "pairs", "lean ratio / abba ratio [95% CI]",
                               "lean's dummy round trip - abba's [ns] [95% CI]"), client_rows, set())
        parts += ["The two clients on the same processes (--with-lean): in each independent pair, after abba, the "
                  "kit's lean client measured the same two warm processes with as many requests.",
                  common.md_table(cl_t)]
    parts += [
             f"Runs: {', '.join(d.name for d in kit_runs)} (kit, default settings, counting and profiling off); "
             f"{', '.join(d.name for d in ind_runs)} (independent, pairs.jsonl.xz holds every run's time)."]
    if invalid:
        parts.append("Invalid independent pairs (left out of the figures):\n\n" + "\n".join(f"- {x}" for x in invalid))
    print(tables.render_text(t) + "\n" + verdict)
    result = {"servers": data, "agree": agree, "met": agree == len(names), "invalid": invalid,
              "kit_runs": [d.name for d in kit_runs], "independent_runs": [d.name for d in ind_runs]}
    common.write(out, "independent", "Independent: the kit's ratio against a measurement made apart from it",
                 [*parts, "How it is made: see latency_diff/bench/independent.py and docs/benchmarks.md."], result)
    return result


def _terminate(signum, frame):  # SIGTERM ends the benchmark like Ctrl-C: every process started is stopped
    raise KeyboardInterrupt


def run(args: argparse.Namespace, driver_args: list[str]) -> int:
    names = [n.strip() for n in args.servers.split(",") if n.strip()]
    if args.from_dir is not None:
        report(args.from_dir, names)
        return 0
    if args.rounds < 1 or args.pairs < 2 or args.quads < 1 or args.run < 1 or args.warmup < 0:
        raise SystemExit("independent: --rounds >= 1, --pairs >= 2, --quads >= 1, --run >= 1, --warmup >= 0")
    if not os.access(ABBA, os.X_OK):
        raise SystemExit(f"independent: {ABBA.relative_to(KIT_ROOT)} is missing; scripts/bench.sh builds it")
    known = {s.name: s for s in discover()}
    missing = [n for n in names if n not in known]
    if missing:
        raise SystemExit(f"independent: unknown server(s) {', '.join(missing)}")
    servers = [known[n] for n in names]
    signal.signal(signal.SIGTERM, _terminate)
    out = common.out_dir(args.results_dir, "independent")
    # The independent side has no run.json: the commit of the kit that measured it (this process's) is kept here.
    (out / "kit.json").write_text(json.dumps(envinfo.kit_commit()) + "\n", encoding="utf-8")
    for i in range(1, args.rounds + 1):
        common.run_driver(out / f"{2 * i - 1:02d}-kit", ["--servers", ",".join(names), *KIT_OFF, *driver_args])
        measure(out / f"{2 * i:02d}-independent", servers, known["dummy"], args, i)
    report(out, names)
    return 0
