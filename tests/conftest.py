"""Shared fixtures: real ab outputs captured from this kit, and synthetic run directories built from them."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

AB = ROOT / "tests" / "fixtures" / "ab"


def make_run(tmp: Path, trials: dict[str, list[tuple[str, str | None]]], *, status: str = "complete",
             response_bytes: dict[str, int] | None = None) -> Path:
    """A run directory as the driver writes it. trials: server -> [(fixture file or "failed:<reason>", ...)]."""
    run = tmp / "run"
    (run / "ab").mkdir(parents=True)
    settings = {"profile": "test", "trials": max(len(v) for v in trials.values()), "requests": 20000,
                "warmup": 0, "client_cpu": 0, "server_cpu": 1, "jvm_flags": []}
    (run / "run.json").write_text(json.dumps({"format": "latency-diff/run/1", "run_id": "test", "status": status,
                                              "settings": settings}))
    servers = [{"name": name, "display": name.title(), "threading": "blocking", "baseline": name == "dummy",
                "library": None, "notes": "test"} for name in trials]
    (run / "env.json").write_text(json.dumps({"servers": servers, "load_average_start": [0.0, 0.0, 0.0],
                                              "cpus_online": 2}))
    lines = []
    for name, entries in trials.items():
        for i, (fixture, cpu) in enumerate(entries, 1):
            entry = {"server": name, "trial": i, "requests": 20000,
                     "response_bytes": (response_bytes or {}).get(name, 296)}
            if fixture.startswith("failed:"):
                entry.update(status="failed", phase="start", reason=fixture.split(":", 1)[1])
            else:
                shutil.copy(AB / fixture, run / "ab" / f"{name}-t{i}.txt")
                entry.update(status="measured", ab_file=f"ab/{name}-t{i}.txt")
                if cpu:
                    utime, stime = (int(x) for x in cpu.split("+"))
                    entry["cpu"] = {"clock_ticks_per_s": 100, "utime_ticks": utime, "stime_ticks": stime}
            lines.append(json.dumps(entry))
    (run / "trials.jsonl").write_text("\n".join(lines) + "\n")
    return run


@pytest.fixture
def ab_dir() -> Path:
    return AB
