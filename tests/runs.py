"""Synthetic run directories in the current format (latency-diff/run/4), with every value chosen by the test.

They are written by the kit's own writer and records (rundir.py, records.py), as a run would. A pair's
interleaved client output has segments of SEGMENT round trips per process, every one of them the
chosen value (or all but one, and one stall); its histograms hold each value exactly (single-value
buckets), so trimmed means, plain means, ratios and scaled diffs can be worked out by hand. An ab
block is a real ab output (tests/fixtures/ab) with its requests-per-second line set to the chosen
round trip.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from latency_diff import rundir, settings
from latency_diff.records import BlockRecord, CostRecord, PairRecord, ProcessRecord

AB = Path(__file__).resolve().parent / "fixtures" / "ab"
SEGMENT = 2000
AB_REQUESTS = 20000  # as in ab's fixture
QUAD = (("base", "server", "server", "base"), ("server", "base", "base", "server"))


def lean_block(value_ns: int, stall_ns: int | None = None, *, requests: int = 20000, non_2xx: int = 0,
               response_bytes: int = 296) -> dict:
    """A single-connection lean output (a warm-up's, or a block of the earlier layout) of `requests` round trips."""
    values = [value_ns] * (requests - (1 if stall_ns else 0)) + ([stall_ns] if stall_ns else [])
    counts: dict[int, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return {"format": "latency-diff/lean/1", "requests": requests, "warmup": 0, "completed": requests,
            "non_2xx": non_2xx, "length_mismatch": 0, "request_bytes": 107, "response_bytes": response_bytes,
            "elapsed_ns": sum(values), "sum_ns": sum(values), "min_ns": min(values), "max_ns": max(values),
            "clamped": 0, "error": None,
            "histogram": {"precision_bits": 8, "buckets": [[v, v, c] for v, c in sorted(counts.items())]}}


def side(value_ns: int, stall_ns: int | None = None, count: int = SEGMENT) -> dict:
    """One process's side of one segment: `count` round trips of value_ns (the last one stall_ns, if given)."""
    values = [value_ns] * (count - (1 if stall_ns else 0)) + ([stall_ns] if stall_ns else [])
    counts: dict[int, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return {"count": count, "sum_ns": sum(values), "min_ns": min(values), "max_ns": max(values), "clamped": 0,
            "buckets": [[v, v, c] for v, c in sorted(counts.items())]}


def lean_pair(segments: list[tuple[int, int]], *, stall: int | None = None, stall_every: bool = False,
              non_2xx: int = 0, response_bytes: int = 296, run: int = 1) -> dict:
    """The interleaved client's output for segments [(base ns, server ns), ...]; a stall lands in the first
    server side (or in every server side)."""
    segs = [{"a": side(b), "b": side(s, stall if (i == 0 or stall_every) else None)}
            for i, (b, s) in enumerate(segments)]
    n = len(segments) * SEGMENT
    elapsed = sum(g[k]["sum_ns"] for g in segs for k in "ab")
    return {"format": "latency-diff/lean-pair/1", "requests": n, "warmup": 0, "run": run, "segment": SEGMENT,
            "request_bytes": 106, "elapsed_ns": elapsed,
            "a": {"port": 8080, "completed": n, "non_2xx": 0, "length_mismatch": 0, "response_bytes": 296},
            "b": {"port": 8081, "completed": n, "non_2xx": non_2xx, "length_mismatch": 0,
                  "response_bytes": response_bytes}, "error": None, "segments": segs}


def ab_block(rtt_ns: float) -> str:
    text = (AB / "valid-dummy.txt").read_text()
    lines = [f"Requests per second:    {1e9 / rtt_ns:.2f} [#/sec] (mean)" if line.startswith("Requests per second")
             else line for line in text.splitlines()]
    return "\n".join(lines) + "\n"


def make_paired_run(tmp: Path, pairs: dict[str, list], *, status: str = "complete", clients=("lean",),
                    settings: dict | None = None, meta: dict[str, dict] | None = None, ab_rtt=None,
                    seconds: dict | None = None, baseline: str = "dummy", env: dict | None = None) -> Path:
    """pairs: server -> list of pairs; a pair is (base_ns, server_ns) (2 segments, every request that value), a
    dict {"segments": [(b, s), ...], "stall": ns, "stall_every_server_segment": bool, "non_2xx": n,
    "cpu": (server ticks, base ticks), "cpu_requests": n (the requests they are over; default 1,000, at 100 ticks a
    second), "jvm": {...}}, or "failed:<phase>:<reason>". ab_rtt: server -> per pair
    (base, server) round trips of one ab quad. seconds: a pair's times (default total 20, measure 10). baseline: the
    server in every pair's base place (another for --compare A B; the dummy is then a reference row measured
    against it). env: entries added to run.json's env."""
    run = tmp / "run"
    run.mkdir(parents=True)
    st = {"profile": "test", "warmup": 0, "settle": "queue", "run_length": 1, "segment": SEGMENT, "segments": 2,
          "pair_warmup": 0, "ab_quads": 1 if "ab" in clients else 0, "ab_requests": AB_REQUESTS, "min_pairs": 3,
          "max_pairs": 5, "budget_s": 60.0, "precision_pct": 5.0, "precision_floor_us": 0.5, "clients": list(clients),
          "http": "auto", "pinning": "shared", "client_cpu": 1, "server_cpu": 1, "prepare_cpu": 0, "jvm_flags": [],
          **(settings or {})}
    names = [baseline, *pairs]
    servers = [{"name": n, "display": n.title(), "threading": "blocking", "baseline": n == baseline,
                "reference": n in ("floor", "dummy-nio", "null") or (n == "dummy" and n != baseline),
                "library": None, "notes": "test",
                **((meta or {}).get(n, {}))} for n in names]
    w = rundir.Writer(run)
    w.run({"run_id": "test", "status": status, "seconds": 90.0, "settings": st, "requests": {},
           "env": {"load_average_start": [0.0, 0.0, 0.0], "cpus_online": 2, "cpu_model": "Test CPU", **(env or {})},
           "servers": servers})
    for name, plist in pairs.items():
        for k, p in enumerate(plist, 1):
            rec = PairRecord(server=name, pair=k, status="measured", round=k,
                             seconds=dict(seconds or {"wait": 10.0, "measure": 10.0, "total": 20.0}))
            if isinstance(p, str):
                _, rec.phase, rec.reason = p.split(":", 2)
                rec.status = "failed"
                w.pair(rec)
                continue
            spec = p if isinstance(p, dict) else {"segments": [p, p]}
            rec.base = ProcessRecord(tag=f"{baseline}-r{k}", response_bytes=296)
            rec.process = ProcessRecord(tag=f"{name}-p{k}", response_bytes=296)
            if "lean" in clients:
                out = lean_pair(spec["segments"], stall=spec.get("stall"),
                                stall_every=spec.get("stall_every_server_segment", False),
                                non_2xx=spec.get("non_2xx", 0))
                rec.interleave = {"requests": out["requests"], "run": 1, "segment": SEGMENT, "warmup": 0}
                w.block(BlockRecord(name, k, "lean-pair", out))
                if "check" in spec:  # the run-length check's segments [(base ns, server ns), ...]
                    check = lean_pair(spec["check"], run=4)
                    rec.check = {"requests": check["requests"], "run": 4, "segment": SEGMENT,
                                 "order": "before" if k % 2 else "after"}
                    w.block(BlockRecord(name, k, "lean-check", check))
            if "ab" in clients and ab_rtt and name in ab_rtt:
                ab_b, ab_s = ab_rtt[name][k - 1]
                rec.ab = {"quads": 1, "requests": AB_REQUESTS}
                for slot, target in enumerate(QUAD[0]):
                    w.block(BlockRecord(name, k, "ab", ab_block(ab_b if target == "base" else ab_s), quad=0,
                                        slot=slot, target=target))
            if "counts" in spec:  # {"server": (syscalls, switches) per request, "base": (...)}
                rec.counts = {who: counting_window(*v) for who, v in spec["counts"].items()}
            if "cpu" in spec:
                for who, ticks in zip(("server", "base"), spec["cpu"], strict=True):
                    rec.costs[who] = CostRecord(requests=spec.get("cpu_requests", 1000), wall_s=1.0,
                                                clock_ticks_per_s=100,
                                                utime_ticks=ticks[0], stime_ticks=ticks[1],
                                                jit_ticks=ticks[2] if len(ticks) > 2 else 0,
                                                jvm=spec["jvm"] if who == "server" and "jvm" in spec else None)
            w.pair(rec)
    w.close()
    return run


def counting_window(syscalls: float, switches: float, requests: int = 10_000) -> dict:
    """A counting window (counting.count_window's record of one process) with the given work per request, perf as
    its source, a quiet idle part."""
    def part(wall: float, sc: float, sw: float) -> dict:
        return {"wall_s": wall, "proc": {"voluntary": round(sw), "involuntary": 0, "threads": 2, "threads_ran": 1,
                                         "page_faults": 0},
                "perf": {"raw_syscalls:sys_enter": sc, "context-switches": sw, "cpu-migrations": 0.0,
                         "page-faults": 0.0, "task-clock": 0.0}}
    return {"requests": requests, "idle": part(1.0, 0.0, 0.0),
            "busy": part(0.5, syscalls * requests, switches * requests)}


def read_json_lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def resolve(argv: list[str], monkeypatch, **env: str) -> settings.Settings:
    """The settings a command line gives, with no LATENCY_DIFF_ variable set but those in `env`."""
    for k in list(os.environ):
        if k.startswith("LATENCY_DIFF_"):
            monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return settings.resolve(settings.build_parser("").parse_args(argv))
