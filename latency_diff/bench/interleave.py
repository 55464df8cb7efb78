"""How finely to interleave: the run length N of the interleaved client, from 1 request to 4,096.

For each server, a few process pairs (a fresh dummy and a fresh server, prepared and handed over as
in a run). Within a pair, the client measures the pair again and again, each time with another N
(in a shuffled order per repetition), M requests to each process each time. Two questions:
- precision per minute: the spread of a measurement's diff over the repetitions within a pair,
  times the square root of its duration (the noise in us x sqrt(s): lower is better), per N;
- whether N moves the diff itself: with N = 1 each request meets the other process's traces in the
  caches, while the 2014 study measured a hot loop of one server; the mean diff per N over the pairs,
  with its 95% interval.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from .. import conformance, lean, pair, paired, rundir, stats
from ..clients import Clients
from ..driver import null_server
from ..export import tables
from ..ports import Ports
from ..process import java_executable
from ..records import BlockRecord
from ..servers import discover
from ..settings import DEFAULT_JVM_FLAGS, build_parser, resolve
from . import common

RUN_LENGTHS = (1, 4, 16, 64, 256, 1024, 4096)
DEFAULT_SERVERS = "null,undertow,tomcat-nio,jetty"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--servers", default=DEFAULT_SERVERS, help=f"servers (default {DEFAULT_SERVERS}; null: the dummy "
                   "against a second dummy)")
    p.add_argument("--run-lengths", default=",".join(map(str, RUN_LENGTHS)), help="the N to compare")
    p.add_argument("--pairs", type=int, default=3, help="process pairs per server (default 3)")
    p.add_argument("--repeats", type=int, default=5, help="measurements per N in a pair (default 5)")
    p.add_argument("--requests", type=int, default=16384, help="requests to each process per measurement "
                   "(default 16384; a multiple of 2 x the largest N)")


def say(text: str) -> None:
    print(f"  {text}", flush=True)


def measure_once(ctx: pair.Context, base: pair.Prepared, srv: pair.Prepared, n: int, requests: int, label: str,
                 pair_no: int) -> dict:
    """One measurement with run length n; its output goes to the benchmark's blocks file (the client's output names
    its run length)."""
    segment = max(2048, 2 * n)
    t0 = time.monotonic()
    out = ctx.measure_clients.interleaved(base.port, srv.port, "1.0", requests, n, segment, 200,
                                          {"base": base.record.response_bytes, "server": srv.record.response_bytes})
    seconds = time.monotonic() - t0
    if out.problem:
        raise SystemExit(f"bench interleave: N={n}: {out.problem}")
    ctx.writer.block(BlockRecord(label, pair_no, "lean-pair", out.data))
    units = [pair.segment_unit(g) for g in lean.parse_pair(out.data).segments]  # type: ignore[arg-type]
    e = paired.estimate(units)
    return {"n": n, "diff_ns": e.diff_ns, "ratio": e.ratio, "base_ns": e.base_ns, "seconds": seconds}


def run(args: argparse.Namespace, driver_args: list[str]) -> int:
    ns = sorted({int(x) for x in args.run_lengths.split(",") if x.strip()})
    if any(args.requests % (max(2048, 2 * n)) for n in ns):
        raise SystemExit("bench interleave: --requests must be a multiple of every N's segment (max(2048, 2N))")
    out = common.out_dir(args.results_dir, "interleave")
    s = resolve(build_parser("").parse_args(["--servers", args.servers.replace("null", "undertow"), *driver_args]))
    known = {x.name: x for x in discover()}
    dummy = known["dummy"]
    servers = [null_server(dummy) if name == "null" else known[name] for name in args.servers.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="latency-diff-"))
    files = {}
    for http in ("1.0", "1.1"):
        files[http] = tmp / f"request-http{http}.bin"
        files[http].write_bytes(conformance.request_bytes(http, "127.0.0.1", s.port))
    (out / "raw").mkdir()
    writer = rundir.Writer(out / "raw")  # every client output (blocks) and server log of the benchmark
    prep_cpu = s.prepare_cpu if s.prepare_cpu is not None else s.server_cpu
    ctx = pair.Context(s, writer, java_executable(), tmp, Clients(s.client_cpu, files), Clients(prep_cpu, files),
                       prep_cpu, s.server_cpu)
    ports = Ports(s.port)
    rng = random.Random(1)
    data: dict[str, list[dict]] = {}
    stage: dict = {}
    try:
        for server in servers:
            for k in range(1, args.pairs + 1):
                base = pair.prepare(ctx, dummy, ports.take(), f"dummy-{server.name}-{k}", reference_length=None,
                                    http="1.0", stage=stage, say=say)
                srv = pair.prepare(ctx, server, ports.take(), f"{server.name}-p{k}",
                                   reference_length=base.record.response_bytes, http="1.0", stage=stage, say=say)
                try:
                    pair.hand_over(ctx, base)
                    pair.hand_over(ctx, srv)
                    for rep in range(args.repeats):
                        order = list(ns)
                        rng.shuffle(order)
                        for n in order:
                            m = measure_once(ctx, base, srv, n, args.requests, server.name, k)
                            data.setdefault(server.name, []).append({"pair": k, "repeat": rep, **m})
                        print(f"{server.name} pair {k} repeat {rep + 1}/{args.repeats} done", flush=True)
                finally:
                    pair.stop(ctx, srv.proc, srv.record.tag)
                    pair.stop(ctx, base.proc, base.record.tag)
    finally:
        ctx.stop_everything()
        writer.close()
    result, rows = summarize(data, ns)
    parts = [f"Run lengths {', '.join(map(str, ns))}; {args.pairs} process pairs per server, {args.repeats} "
             f"measurements per N in each, {args.requests:,} requests to each process per measurement; JVM flags "
             f"{DEFAULT_JVM_FLAGS}; pinning {s.pinning}, processes prepared on CPU {prep_cpu}.",
             common.md_table(rows)]
    print(tables.render_text(rows))
    common.write(out, "interleave", "How finely to interleave: the interleaved client's run length", parts,
                 {"measurements": data, "summary": result})
    return 0


def summarize(data: dict[str, list[dict]], ns: list[int]) -> tuple[dict, tables.Table]:
    """Per server and N: the diff over pairs (mean of each pair's mean, Student-t interval), the spread of one
    measurement within a pair (pooled sd over repetitions), and the noise: that spread x sqrt(its seconds)."""
    result: dict = {}
    rows = []
    for name, ms in data.items():
        for n in ns:
            mine = [m for m in ms if m["n"] == n]
            by_pair: dict[int, list[dict]] = {}
            for m in mine:
                by_pair.setdefault(m["pair"], []).append(m)
            means = [statistics.fmean(x["diff_ns"] for x in v) for v in by_pair.values()]
            groups = [[x["diff_ns"] for x in v] for v in by_pair.values()]
            within = paired.within_variance(groups)
            seconds = statistics.fmean(m["seconds"] for m in mine)
            noise = None if within is None else within ** 0.5 * seconds ** 0.5
            diff = stats.summarize(means)
            result.setdefault(name, {})[n] = {"diff_ns": diff.to_dict(), "within_sd_ns": within and within ** 0.5,
                                             "seconds": seconds, "noise_ns_sqrt_s": noise,
                                             "base_ns": statistics.fmean(m["base_ns"] for m in mine)}
            rows.append([name, str(n), common.us_pm(diff.mean, diff.half_width),
                         f"{result[name][n]['base_ns'] / 1000:.2f}",
                         "-" if within is None else f"{within ** 0.5 / 1000:.3f}", f"{seconds:.2f}",
                         "-" if noise is None else f"{noise / 1000:.3f}"])
    cols = ("server", "run length N", "diff [us] (95% CI over pairs)", "dummy round trip [us]",
            "sd of a measurement [us]", "seconds per measurement", "noise [us x sqrt(s)]")
    return result, (cols, rows, {1, 2, 3, 4, 5, 6})
