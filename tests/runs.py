"""Synthetic run directories in the paired format (latency-diff/run/3), with block values chosen by the test.

A lean block is 20,000 round trips of the chosen value, or all but one and one stall; its histogram
holds each value exactly (single-value buckets), so trimmed means and plain means can be worked out
by hand. An ab block is a real ab output (tests/fixtures/ab) with its requests-per-second line set
to the chosen round trip.
"""

from __future__ import annotations

import json
from pathlib import Path

AB = Path(__file__).resolve().parent / "fixtures" / "ab"
LEAN_REQUESTS = 20000  # the same as ab's fixture, so one block size fits both clients
AB_REQUESTS = 20000
QUAD = (("base", "server", "server", "base"), ("server", "base", "base", "server"))


def lean_block(value_ns: int, stall_ns: int | None = None, *, non_2xx: int = 0, response_bytes: int = 296) -> dict:
    values = [value_ns] * (LEAN_REQUESTS - (1 if stall_ns else 0)) + ([stall_ns] if stall_ns else [])
    counts: dict[int, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return {"format": "latency-diff/lean/1", "requests": LEAN_REQUESTS, "warmup": 0, "completed": LEAN_REQUESTS,
            "non_2xx": non_2xx, "length_mismatch": 0, "request_bytes": 107, "response_bytes": response_bytes,
            "elapsed_ns": sum(values), "sum_ns": sum(values), "min_ns": min(values), "max_ns": max(values),
            "clamped": 0, "error": None,
            "histogram": {"precision_bits": 8, "buckets": [[v, v, c] for v, c in sorted(counts.items())]}}


def ab_block(rtt_ns: float) -> str:
    text = (AB / "valid-dummy.txt").read_text()
    lines = [f"Requests per second:    {1e9 / rtt_ns:.2f} [#/sec] (mean)" if line.startswith("Requests per second")
             else line for line in text.splitlines()]
    return "\n".join(lines) + "\n"


def make_paired_run(tmp: Path, pairs: dict[str, list], *, status: str = "complete", clients=("lean",),
                    settings: dict | None = None, meta: dict[str, dict] | None = None, ab_rtt=None) -> Path:
    """pairs: server -> list of pairs; a pair is (base_ns, server_ns) (2 quads of lean blocks, every block
    that value), a dict {"quads": [(b, s), ...], "stall": ns (in the first server block, or with
    "stall_every_server_block": True in each), "cpu": (server ticks, base ticks), "jvm": {...}},
    or "failed:<phase>:<reason>". ab_rtt: server -> (base, server) round trips for ab blocks, per pair."""
    run = tmp / "run"
    run.mkdir(parents=True)
    st = {"profile": "test", "block_requests": LEAN_REQUESTS, "block_warmup": 0, "quads": 2, "min_pairs": 3,
          "max_pairs": 5, "budget_s": 60.0, "precision_pct": 5.0, "precision_floor_us": 0.5, "clients": list(clients),
          "http": "auto", "pinning": "shared", "client_cpu": 1, "server_cpu": 1, "jvm_flags": [], "wait_for_jit": True,
          **(settings or {})}
    (run / "run.json").write_text(json.dumps({"format": "latency-diff/run/3", "run_id": "test", "status": status,
                                              "settings": st, "seconds": 90.0}))
    names = ["dummy", *pairs]
    servers = [{"name": n, "display": n.title(), "threading": "blocking", "baseline": n == "dummy",
                "reference": n in ("floor", "dummy-nio", "null"), "library": None, "notes": "test",
                **((meta or {}).get(n, {}))} for n in names]
    (run / "env.json").write_text(json.dumps({"servers": servers, "load_average_start": [0.0, 0.0, 0.0],
                                              "cpus_online": 2, "cpu_model": "Test CPU"}))
    lines = []
    for name, plist in pairs.items():
        folder = run / "blocks" / name
        folder.mkdir(parents=True)
        for k, p in enumerate(plist, 1):
            entry: dict = {"server": name, "pair": k, "round": k, "http": "1.0", "response_bytes": 296,
                           "base_response_bytes": 296, "seconds": {"total": 20.0}}
            if isinstance(p, str):
                _, phase, reason = p.split(":", 2)
                entry.update(status="failed", phase=phase, reason=reason)
                lines.append(json.dumps(entry))
                continue
            spec = p if isinstance(p, dict) else {"quads": [p, p]}
            entry["status"] = "measured"
            blocks = []
            for q, (b, s) in enumerate(spec["quads"]):
                for slot, target in enumerate(QUAD[q % 2]):
                    value = b if target == "base" else s
                    every = spec.get("stall_every_server_block") and target == "server"
                    stall = spec.get("stall") if (q, slot) == (0, 1) or every else None
                    rel = f"blocks/{name}/p{k}-lean-q{q}-{slot}{target[0]}.json"
                    block = lean_block(value, stall, non_2xx=spec.get("non_2xx", 0) if target == "server" else 0)
                    (run / rel).write_text(json.dumps(block))
                    blocks.append({"client": "lean", "quad": q, "slot": slot, "target": target, "file": rel})
                if "ab" in clients and ab_rtt and name in ab_rtt:
                    ab_b, ab_s = ab_rtt[name][k - 1]
                    for slot, target in enumerate(QUAD[q % 2]):
                        rel = f"blocks/{name}/p{k}-ab-q{q}-{slot}{target[0]}.txt"
                        (run / rel).write_text(ab_block(ab_b if target == "base" else ab_s))
                        blocks.append({"client": "ab", "quad": q, "slot": slot, "target": target, "file": rel})
            entry["blocks"] = blocks
            if "cpu" in spec:
                entry["costs"] = {}
                for who, ticks in zip(("server", "base"), spec["cpu"], strict=True):
                    entry["costs"][who] = {"requests": 1000, "wall_s": 1.0, "clock_ticks_per_s": 100,
                                           "utime_ticks": ticks[0], "stime_ticks": ticks[1],
                                           "jit_ticks": ticks[2] if len(ticks) > 2 else 0,
                                           **({"jvm": spec["jvm"]} if who == "server" and "jvm" in spec else {})}
            lines.append(json.dumps(entry))
    (run / "pairs.jsonl").write_text("\n".join(lines) + "\n")
    return run
