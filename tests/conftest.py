"""Shared fixtures: real ab outputs captured from this kit, and synthetic run directories built from them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

AB = ROOT / "tests" / "fixtures" / "ab"
LEAN = ROOT / "tests" / "fixtures" / "lean"


def make_run(tmp: Path, trials: dict[str, list[tuple[str, str | None]]], *, status: str = "complete",
             response_bytes: dict[str, int] | None = None, jvm: dict[str, dict] | None = None,
             settings: dict | None = None) -> Path:
    """A run directory as the driver writes it. trials: server -> [(fixtures or "failed:<reason>", cpu), ...].

    fixtures: an ab output (tests/fixtures/ab/*.txt), a lean-client output (tests/fixtures/lean/*.json), or
    both as "a.txt|b.json"; with any lean output the run is in the current format (run/2, per-client
    measurements), else in the first one (run/1, ab only). cpu: "utime+stime[+JIT threads]" ticks at 100 a
    second.
    jvm: server -> the agent's counter differences, added to each of its measurements.
    """
    run = tmp / "run"
    run.mkdir(parents=True)
    fixtures = [f for entries in trials.values() for f, _ in entries if not f.startswith("failed:")]
    clients = [c for c, ext in (("ab", ".txt"), ("lean", ".json")) if any(ext in f for f in fixtures)] or ["ab"]
    current = "lean" in clients
    settings = {"profile": "test", "trials": max(len(v) for v in trials.values()), "requests": 20000,
                "warmup": 0, "client_cpu": 0, "server_cpu": 1, "jvm_flags": [],
                **({"clients": clients, "pinning": "split"} if current else {}), **(settings or {})}
    (run / "run.json").write_text(json.dumps({"format": f"latency-diff/run/{2 if current else 1}", "run_id": "test",
                                              "status": status, "settings": settings}))
    servers = [{"name": name, "display": name.title(), "threading": "blocking", "baseline": name == "dummy",
                "reference": name in ("floor", "dummy-nio"), "library": None, "notes": "test"} for name in trials]
    (run / "env.json").write_text(json.dumps({"servers": servers, "load_average_start": [0.0, 0.0, 0.0],
                                              "cpus_online": 2}))
    lines = []
    for name, entries in trials.items():
        for i, (fixture, cpu) in enumerate(entries, 1):
            entry: dict = {"server": name, "trial": i, "requests": 20000,
                           "response_bytes": (response_bytes or {}).get(name, 296)}
            if fixture.startswith("failed:"):
                entry.update(status="failed", phase="start", reason=fixture.split(":", 1)[1])
                lines.append(json.dumps(entry))
                continue
            entry["status"] = "measured"
            measurements = {}
            for f in fixture.split("|"):
                client = "lean" if f.endswith(".json") else "ab"
                rel = f"{client}/{name}-t{i}{Path(f).suffix}"
                (run / client).mkdir(exist_ok=True)
                shutil.copy((LEAN if client == "lean" else AB) / f, run / rel)
                m: dict = {"file": rel}
                if cpu:
                    ticks = [int(x) for x in cpu.split("+")]
                    m["cpu"] = {"clock_ticks_per_s": 100, "utime_ticks": ticks[0], "stime_ticks": ticks[1],
                                "wall_s": 1.0}
                    if len(ticks) > 2:
                        m["cpu"]["jit_ticks"] = ticks[2]
                if jvm and name in jvm:
                    m["jvm"] = jvm[name]
                measurements[client] = m
            if current:
                entry["measurements"] = measurements
            else:
                entry["ab_file"] = measurements["ab"]["file"]
                if "cpu" in measurements["ab"]:
                    entry["cpu"] = measurements["ab"]["cpu"]
            lines.append(json.dumps(entry))
    (run / "trials.jsonl").write_text("\n".join(lines) + "\n")
    return run


@pytest.fixture
def ab_dir() -> Path:
    return AB


@pytest.fixture
def misbehaving():
    """Starts tests/misbehaving.py in a mode on a free port; returns the port. Stopped after the test."""
    procs = []

    def start(mode: str) -> int:
        p = subprocess.Popen([sys.executable, str(ROOT / "tests" / "misbehaving.py"), mode, "0"],
                             stdout=subprocess.PIPE, text=True)
        procs.append(p)
        return int(p.stdout.readline().split()[2])
    yield start
    for p in procs:
        p.kill()
        p.wait()


#: The servers whose conformance and hostile-client tests the fast tier runs (the full tier runs every server's): the
#: baseline, the C floor, an event loop, a thread pool, a framework on Netty and a control.
REPRESENTATIVE = {"dummy", "floor", "undertow", "tomcat-nio", "micronaut", "control-spin"}
#: Paths every server is built from: a change there puts every server in the fast tier.
SHARED = ("common/", "pom.xml")


def _git_paths(*args: str) -> list[str]:
    """The paths a git command lists with -z, relative to the kit."""
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30, check=True).stdout
    return [p for p in out.split("\0") if p]


def _changed_paths() -> list[str] | None:
    """Paths changed in the working tree (untracked ones too), and since the main branch's upstream when it has one
    (the commits of a branch not yet merged); None when git cannot say (not a checkout)."""
    try:
        paths = _git_paths("diff", "--name-only", "--no-renames", "--relative", "-z", "HEAD")
        paths += _git_paths("ls-files", "--others", "--exclude-standard", "-z")
        upstream = subprocess.run(["git", "rev-parse", "--verify", "--quiet", "main@{upstream}"], cwd=ROOT,
                                  capture_output=True, text=True, timeout=30)
        if upstream.returncode == 0:
            paths += _git_paths("diff", "--name-only", "--no-renames", "--relative", "-z",
                                "main@{upstream}...HEAD")
    except (OSError, subprocess.SubprocessError):
        return None
    return paths


def _changed_servers() -> set[str] | None:
    """Servers whose folder changed (None: every one, when common/ or the root pom.xml changed, or git cannot say)."""
    from latency_diff.servers import discover
    paths = _changed_paths()
    if paths is None or any(p.startswith(SHARED) for p in paths):
        return None
    return {s.name for s in discover() for p in paths if (ROOT / p).is_relative_to(s.module_dir)}


def pytest_collection_modifyitems(config, items):
    """Per-server tests of the servers other than the representative ones and those changed are slow: the full tier
    runs them, the fast one (./scripts/test.sh) leaves them out."""
    changed = _changed_servers()
    wanted = None if changed is None else REPRESENTATIVE | changed
    for item in items:
        server = getattr(getattr(item, "callspec", None), "params", {}).get("server")
        name = getattr(server, "name", server)
        if wanted is not None and isinstance(name, str) and name not in wanted:
            item.add_marker(pytest.mark.slow)


def pytest_report_collectionfinish(config, start_path, items):
    """Under -m "not slow" (the fast tier), the servers whose per-server tests run, so that a reader sees the choice."""
    if "not slow" not in (config.option.markexpr or ""):
        return None
    names = sorted({getattr(item.callspec.params["server"], "name", "") for item in items
                    if "server" in getattr(getattr(item, "callspec", None), "params", {})} - {""})
    return f"per-server tests of {', '.join(names) or 'no server'} (every server's: ./scripts/test.sh --full)"
