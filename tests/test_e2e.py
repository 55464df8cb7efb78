"""End to end: the real run-all.sh, its exit codes, its files, and what an interruption leaves behind."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from latency_diff import rundir, settings
from latency_diff.analysis import analyze
from latency_diff.measure import cli, counting, driver, pair, ports, warmup
from latency_diff.measure.process import java_executable, pin_threads
from latency_diff.servers import Server, discover

ROOT = Path(__file__).resolve().parent.parent
RUN_ALL = ROOT / "scripts" / "run-all.sh"


def free_port() -> int:
    """A port P with the run's ports P to P+8 free, below Linux's ephemeral range (32768 and up), so that no client
    connection's own port can take one of them between two servers."""
    import random
    for _ in range(200):
        port = random.randrange(20000, 32000)
        if all(ports.free(p) for p in range(port, port + ports.PORTS)):
            return port
    raise AssertionError("no nine free ports in a row in 20000-32000")


def nothing_left(port: int) -> bool:
    return all(kit_processes(p) == [] for p in range(port, port + ports.PORTS))


def the_run(tmp_path: Path) -> Path:
    (run_dir,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    return run_dir


def pairs_of(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "pairs.jsonl").read_text().splitlines() if x.strip()]


def run_all(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUN_ALL), *args], capture_output=True, text=True, timeout=timeout)


def kit_processes(port: int) -> list[str]:
    """Processes whose command line holds '--port N' (a server of the kit, or a client)."""
    # After "--": pgrep would read a pattern starting with "--" as an option, print usage and exit 2.
    proc = subprocess.run(["pgrep", "-af", "--", f"--port {port}( |$)"], capture_output=True, text=True)
    if proc.returncode not in (0, 1):  # 1: nothing matched
        raise RuntimeError(f"pgrep failed with status {proc.returncode}: {proc.stderr.strip()}")
    return [line for line in proc.stdout.splitlines() if "pgrep" not in line]


def test_kit_processes_sees_a_server_left_running():
    port = free_port()
    stray = subprocess.Popen(["bash", "-c", f"exec -a 'fake-server --port {port}' sleep 30"])
    try:
        time.sleep(0.2)
        assert len(kit_processes(port)) == 1 and not nothing_left(port)
        assert kit_processes(port + 10) == []
    finally:
        stray.kill()
        stray.wait()
    assert nothing_left(port)


def strings(x) -> list[str]:
    """Every string value in a JSON document."""
    if isinstance(x, str):
        return [x]
    if isinstance(x, dict):
        return [s for v in x.values() for s in strings(v)]
    if isinstance(x, list):
        return [s for v in x for s in strings(v)]
    return []


@pytest.mark.slow
def test_quick_run_measures_every_server(tmp_path):
    port = free_port()
    proc = run_all("--quick", "--results-dir", str(tmp_path), "--port", str(port))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = the_run(tmp_path)
    # A run is a few files: its records, and what the analysis derives from them.
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "blocks.jsonl.xz", "diffs.png", "logs.jsonl.xz", "pairs.jsonl", "percentiles.png", "report.html", "report.md",
        "run.json", "summary.csv", "summary.json"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "complete"
    by_name = {s["name"]: s for s in summary["servers"]}
    assert by_name["dummy"]["valid"] and by_name["null"]["valid"]
    logs = {(x["kind"], x["tag"]): x["text"] for x in rundir.logs(run_dir)}
    for server in discover():
        if server.matrix_only:  # measured only when named (the releases matrix): not in a run of every server
            assert server.name not in by_name
            continue
        if server.baseline:
            continue
        s = by_name[server.name]
        if server.nonconformant:
            assert not s["valid"] and "conformance" in s["reason"], s
            continue
        assert s["valid"], f"{server.name}: {s['reason']}"
        assert s["diff_ns"]["n"] == 1 and len(s["pairs"]) == 1  # the quick profile: one process pair
        assert logs[("response", f"{server.name}-p1")].startswith("HTTP/1.")
        assert logs[("log", f"{server.name}-p1")].startswith("$ ")  # the command line, then the server's output
        assert s["cpu_ns"]["mean"] > 0 or not server.is_java, s  # a C server may use under a clock tick (10 ms)
        clients = {"lean", "ab"} if server.http == "1.0" else {"lean"}
        assert s["primary"] == "lean" and set(s["clients"]) == clients
        assert s["pairs"][0]["clients"].keys() == clients
        p = s["clients"]["lean"]["percentiles_ns"]
        assert 0 < p["p50"] <= p["p90"] <= p["p99"] <= p["p99.9"] <= p["max"]
        if server.is_java:  # the agent answered before and after the measured phase
            assert s["alloc_bytes"]["mean"] > 0, s
        else:
            assert s["alloc_bytes"] is None
    # Shared pinning: every process was prepared on the other CPU and moved to the measured one before it was
    # measured (the affinity read from every thread then).
    st = summary["settings"]
    assert st["pinning"] == settings.DEFAULT_PINNING == "shared" and st["prepare_cpu"] != st["server_cpu"]
    nonconformant = {x.name for x in discover() if x.nonconformant}
    for e in pairs_of(run_dir):
        if e["server"] in nonconformant:
            continue
        assert e["status"] == "measured", e
        assert e["process"]["affinity"] == [st["server_cpu"]] and e["base"]["affinity"] == [st["server_cpu"]], e
        assert logs[("log", e["process"]["tag"])].startswith(f"$ taskset -c {st['prepare_cpu']} "), e
    assert st["clients"] == ["lean", "ab"]
    assert summary["env"]["jdk"]["java.version"] and summary["env"]["ab"].startswith("This is ApacheBench")
    assert "dummy" in proc.stdout and "diff [us]" in proc.stdout
    assert nothing_left(port)
    # A committed record names no path of the machine that made it: not the kit, the results, the JDK, the
    # virtual environment or the temporary folders (a container's marker file is the container's, not ours).
    record = json.loads((run_dir / "run.json").read_text())
    paths = [x for x in strings(record) if x.startswith("/") and x not in ("/.dockerenv", "/run/.containerenv")]
    assert paths == [] and record["settings"]["results_dir"] == tmp_path.name


def test_a_quick_head_to_head_run_measures_b_against_a_and_gates(tmp_path):
    port = free_port()
    proc = run_all("--quick", "--compare", "undertow", "undertow:jvm=-XX:+UseSerialGC", "--results-dir", str(tmp_path),
                   "--port", str(port), "--fail-if-slower", "10%")
    # One pair a server (--quick): B has no interval, so the gate cannot decide, and says so by its exit status.
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert "gate: UNDECIDED (exit 3)" in proc.stdout
    run_dir = the_run(tmp_path)
    summary = json.loads((run_dir / "summary.json").read_text())
    by_name = {s["name"]: s for s in summary["servers"]}
    # A in the dummy's place, B measured against it, the dummy measured against A as a reference row, and the
    # null pair: a second A process against A.
    assert summary["settings"]["compare"] == ["undertow", "undertow+useserialgc"]
    assert summary["settings"]["fail_if_slower"] == "10%"
    assert set(by_name) == {"undertow", "undertow+useserialgc", "dummy", "null"}
    assert by_name["undertow"]["baseline"] and by_name["dummy"]["reference"]
    assert by_name["undertow+useserialgc"]["valid"] and by_name["dummy"]["valid"]
    for e in pairs_of(run_dir):
        assert e["status"] == "measured" and e["base"]["tag"].startswith("undertow-"), e
    assert "Head to head" in proc.stdout and "B - A (undertow+useserialgc - undertow)" in proc.stdout
    assert "A - dummy (undertow)" in (run_dir / "report.md").read_text()
    assert nothing_left(port)


@pytest.mark.slow
@pytest.mark.parametrize("pinning, client", [("split", "ab"), ("none", "lean")])
def test_pinning_modes_and_single_clients_are_recorded(tmp_path, pinning, client):
    proc = run_all("--quick", "--servers", "undertow", "--pinning", pinning, "--client", client,
                   "--results-dir", str(tmp_path), "--port", str(free_port()))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = the_run(tmp_path)
    summary = json.loads((run_dir / "summary.json").read_text())
    st = summary["settings"]
    assert st["pinning"] == pinning and st["clients"] == [client] and st["prepare_cpu"] is None
    usable = sorted(os.sched_getaffinity(0))
    expected = (usable[0], usable[1]) if pinning == "split" else (None, None)
    assert (st["client_cpu"], st["server_cpu"]) == expected
    assert {s["name"] for s in summary["servers"] if s["valid"]} == {"dummy", "dummy-nio", "floor", "null", "undertow"}
    assert all(s["primary"] == client and set(s["clients"]) == {client} for s in summary["servers"])
    report_md = (run_dir / "report.md").read_text()
    assert f"Pinning {pinning}" in report_md
    assert ("not pinned" in report_md) == (pinning == "none")
    assert (run_dir / "percentiles.png").exists() == (client == "lean")


@pytest.mark.slow
def test_without_the_agent_a_java_server_has_no_jvm_counters(tmp_path):
    port = free_port()
    proc = run_all("--quick", "--servers", "undertow", "--agent", "off", "--results-dir", str(tmp_path),
                   "--port", str(port))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = the_run(tmp_path)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["settings"]["agent"] is False
    undertow = next(s for s in summary["servers"] if s["name"] == "undertow")
    assert undertow["valid"] and undertow["alloc_bytes"] is None  # measured, without the agent's counters
    commands = [x["text"].splitlines()[0] for x in rundir.logs(run_dir) if x["kind"] == "log"]
    assert any("undertow" in c for c in commands) and not any("-javaagent:" in c for c in commands)
    assert nothing_left(port)


THREAD_SPAWNER = """
import threading, time
threading.stack_size(256 * 1024)
def spawner():
    for _ in range(25):
        threading.Thread(target=time.sleep, args=(5,)).start()
        time.sleep(0.004)
spawners = [threading.Thread(target=spawner) for _ in range(40)]
for t in spawners:
    t.start()
print("spawning", flush=True)
for t in spawners:
    t.join()
print("started", flush=True)
time.sleep(5)
"""


def test_pin_threads_pins_threads_that_other_threads_start_meanwhile():
    usable = sorted(os.sched_getaffinity(0))
    if len(usable) < 2:
        pytest.skip("needs two usable CPUs to tell a pinned thread from an unpinned one")
    proc = subprocess.Popen([sys.executable, "-c", THREAD_SPAWNER], stdout=subprocess.PIPE, text=True)
    try:
        # 40 threads, each starting a thread every 4 ms for 0.1 s: some start while the first pass runs.
        assert proc.stdout.readline() == "spawning\n"
        pin_threads(proc.pid, usable[-1])
        assert proc.stdout.readline() == "started\n"
        tasks = os.listdir(f"/proc/{proc.pid}/task")
        assert len(tasks) > 1000
        assert all(os.sched_getaffinity(int(t)) == {usable[-1]} for t in tasks)
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_http11_runs_every_server_with_the_lean_client_only(tmp_path):
    proc = run_all("--quick", "--servers", "undertow", "--http", "1.1", "--check-segments", "1",
                   "--results-dir", str(tmp_path), "--port", str(free_port()))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = the_run(tmp_path)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["settings"]["http"] == "1.1" and summary["settings"]["clients"] == ["lean"]
    assert summary["settings"]["notes"] == ["--http 1.1: the lean client alone measures (ab speaks HTTP/1.0 only)"]
    assert {e["http"] for e in pairs_of(run_dir)} == {"1.1"}
    # The run-length check ran in every pair (pair 1: before the measurement), at 4 x 256 = 1,024 a run.
    assert {(e["check"]["run"], e["check"]["order"]) for e in pairs_of(run_dir)} == {(1024, "before")}
    files = rundir.load(run_dir)
    assert all([b.client for b in files.blocks[(e["server"], e["pair"])]] == ["lean-check", "lean-pair"]
               for e in pairs_of(run_dir))
    run = json.loads((run_dir / "run.json").read_text())
    assert run["requests"]["1.1"].startswith("GET / HTTP/1.1\r\nHost: 127.0.0.1:")


@pytest.mark.slow
def test_a_run_counts_and_profiles_each_server_after_its_first_pair(tmp_path):
    proc = run_all("--quick", "--servers", "undertow,floor", "--min-pairs", "2", "--max-pairs", "2",
                   "--count-requests", "2048", "--profile-requests", "4096",
                   "--results-dir", str(tmp_path), "--port", str(free_port()))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = the_run(tmp_path)
    pairs = {(e["server"], e["pair"]): e for e in pairs_of(run_dir)}
    perf = counting.perf_events()[1] is None
    for name in ("undertow", "floor", "dummy-nio", "null"):
        first, second = pairs[(name, 1)], pairs[(name, 2)]
        assert "counts" in first and "counts" not in second, name  # one counting window a server, after pair 1
        assert first["counts"]["server"]["requests"] == 2048 and "problem" not in first["counts"]
    summary = {s["name"]: s for s in json.loads((run_dir / "summary.json").read_text())["servers"]}
    for name in ("undertow", "floor", "dummy"):
        work = summary[name]["work"]
        assert work["source"] == ("perf" if perf else "proc") and work["switches"] > 0.5, (name, work)
        if perf:
            assert work["syscalls"] >= 1.5, (name, work)
    # the profiles: JVM servers only (not the C floor), with the flame graph next to the report
    assert "profile" in pairs[("undertow", 1)] and "profile" not in pairs[("floor", 1)]
    assert pairs[("undertow", 1)]["profile"]["requests"] == 4096  # all to the server, over two connections
    prof = summary["undertow"]["profile"]
    assert prof is not None, pairs[("undertow", 1)]["profile"]
    assert prof["samples"] > 0 and abs(sum(prof["shares"].values()) - 1) < 0.01
    assert (run_dir / prof["flamegraph"]).read_text().lstrip().lower().startswith("<!doctype html")
    assert prof["flamegraph"] in (run_dir / "report.html").read_text()
    # The full stacks and the flame graphs are in profiles.jsonl.xz, which a committed run may leave out: without
    # it the analysis finds the same shares in the logs' cut stacks, and says the flame graph was not kept.
    (run_dir / "profiles.jsonl.xz").unlink()
    shutil.rmtree(run_dir / "flames")
    assert analyze.main([str(run_dir), "--quiet"]) == 0
    again = {s["name"]: s for s in json.loads((run_dir / "summary.json").read_text())["servers"]}["undertow"]
    assert again["profile"]["shares"] == prof["shares"] and again["profile"]["flamegraph"] is None
    assert not (run_dir / "flames").exists()


@pytest.mark.parametrize("args, message", [
    (["--pinning", "shared", "--client-cpu", "0", "--server-cpu", "1"], "puts client and server on one CPU"),
    (["--pinning", "split", "--client-cpu", "1", "--server-cpu", "1"], "needs two CPUs"),
    (["--pinning", "none", "--server-cpu", "1"], "pins nothing"),
    (["--client-cpu", "none"], "pass --pinning none"),
    (["--client", "curl"], "invalid choice: 'curl'"),
    (["--http", "1.1", "--client", "ab"], "lean client only"),
    (["--min-pairs", "4", "--max-pairs", "2"], "--max-pairs 2 is below --min-pairs 4"),
])
def test_contradictory_pinning_is_a_clear_error(args, message):
    proc = run_all("--quick", "--port", str(free_port()), *args, timeout=120)
    assert proc.returncode == 2
    assert message in proc.stderr, proc.stderr[-2000:]


def test_unknown_server_is_a_clear_error():
    proc = run_all("--servers", "nope", "--port", str(free_port()))
    assert proc.returncode == 2
    assert "unknown server(s): nope" in proc.stderr


def test_busy_port_stops_before_anything_runs(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        proc = run_all("--quick", "--port", str(port), "--results-dir", str(tmp_path))
    assert proc.returncode == 2
    assert f"port {port} on 127.0.0.1 is already in use" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_help_needs_no_setup():
    proc = run_all("--help", timeout=60)
    assert proc.returncode == 0
    assert "--servers LIST" in proc.stdout and "--profile" in proc.stdout


def client_running(pattern: str) -> bool:
    """Whether a lean client whose command line matches `pattern` runs now."""
    out = subprocess.run(["pgrep", "-af", "--", pattern], capture_output=True, text=True).stdout
    return any("native/build/lean" in line for line in out.splitlines())


@pytest.mark.slow
@pytest.mark.parametrize("sig, phase, server", [
    (signal.SIGINT, "measure", "null"),
    (signal.SIGTERM, "measure", "null"),
    (signal.SIGINT, "warmup", "dummy"),
    (signal.SIGTERM, "start", "dummy"),
], ids=["sigint-measure", "sigterm-measure", "sigint-warmup", "sigterm-start"])
def test_interruption_leaves_no_server_and_marks_the_run_incomplete(tmp_path, sig, phase, server):
    port = free_port()
    # In the start phase, every JVM waits for a debugger that never comes: it cannot get past start-up.
    hold = ["--jvm-flags=-agentlib:jdwp=transport=dt_socket,server=y,suspend=y,address=127.0.0.1:0"]
    proc = subprocess.Popen([str(RUN_ALL), "--servers", "undertow", "--segments", "1", "--segment", "2000896",
                             "--min-pairs", "1", "--warmup", "2000000" if phase == "warmup" else "0",
                             "--results-dir", str(tmp_path), "--port", str(port), *(hold if phase == "start" else [])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120

    def reached() -> bool:
        if phase == "start":
            logs = list(tmp_path.glob("*/.live/dummy-r1.log"))
            return bool(logs) and "Listening for transport" in logs[0].read_text()
        if phase == "warmup":
            return client_running("--requests 2000000 --warmup 0")
        return client_running(f"--port {port} --interleave")

    try:
        # Wait until the phase is under way, then interrupt.
        while not reached():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, f"the run did not reach {phase}"
            time.sleep(0.05)
        if phase != "start":
            time.sleep(1)
        os.kill(proc.pid, sig)
        out, err = proc.communicate(timeout=30)
    finally:  # a run that did not stop must not hold the lock (and its ports) for the tests after this one
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert "Finished pairs are kept" in err
    time.sleep(0.5)
    assert nothing_left(port)
    run_dir = the_run(tmp_path)
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "incomplete"
    assert (run["stopped_at"]["server"], run["stopped_at"]["phase"]) == (server, phase)
    assert run["reason"] == f"interrupted by {sig.name}"
    assert not (run_dir / ".live").exists() and (run_dir / "logs.jsonl.xz").is_file()  # every log packed
    if phase == "measure":  # the interrupted pair is on record, and the analysis says what is missing
        (entry,) = pairs_of(run_dir)
        assert (entry["server"], entry["status"], entry["phase"]) == ("null", "interrupted", "measure")
        analysis = subprocess.run([sys.executable, "-m", "latency_diff.analysis.analyze", str(run_dir)],
                                  capture_output=True, text=True, cwd=ROOT)
        assert analysis.returncode == 3, analysis.stderr
        assert "undertow: not measured (the run was interrupted)" in analysis.stdout


class FaultyServer(Server):
    """A Server whose process is tests/misbehaving.py in the mode args[0], instead of a JVM (same READY line)."""

    @property
    def artifact(self) -> Path:
        return ROOT / "tests" / "misbehaving.py"

    def command(self, java, jvm_flags, port, host="127.0.0.1"):
        return [sys.executable, str(self.artifact), self.args[0], str(port), self.name]


def _settings(tmp_path, servers, **kw):
    base = dict(servers=servers, profile="test", warmup=0, settle="none", run_length=4, segment=1000, segments=2,
                pair_warmup=0, ab_quads=1, ab_requests=2000, min_pairs=1, max_pairs=1, budget=0.0, precision=5.0,
                precision_floor=0.5, client="both", http="auto", pinning="none", client_cpu=None, server_cpu=None,
                prepare_cpu=None, port=free_port(), jvm_flags=[], results_dir=tmp_path, start_timeout=30,
                allow_concurrent=True, sources={})
    base.update(kw)
    return settings.Settings(**base)


def _run(s):
    run = driver.Run(s, rundir.create(s.results_dir), java_executable())
    try:
        run.describe(java_executable())
        run.status("running")
        run.measure()
    finally:
        run.stop_all()
        run.close()
    return run


@pytest.mark.slow
@pytest.mark.parametrize("mode, reason", [
    ("crash-after-3000", "faulty exited with status 3 during the measurement"),
    ("hang-after-3000", "no response within 10000 ms"),
])
def test_a_server_that_crashes_or_hangs_mid_run_is_recorded_and_the_run_goes_on(tmp_path, mode, reason):
    servers = discover()
    dummy, undertow = servers[0], next(s for s in servers if s.name == "undertow")
    faulty = FaultyServer(name="faulty", display="Faulty", module_dir=ROOT / "tests", threading="blocking",
                          notes="test", args=(mode,), executable="misbehaving")
    s = _settings(tmp_path, [dummy, faulty, undertow], segment=4000)
    run = _run(s)
    entries = {e["server"]: e for e in pairs_of(run.dir)}
    assert entries["faulty"]["status"] == "failed" and entries["faulty"]["phase"] == "measure"
    assert reason in entries["faulty"]["reason"]
    assert entries["null"]["status"] == "measured" and entries["undertow"]["status"] == "measured"
    assert nothing_left(s.port)


@pytest.mark.slow
@pytest.mark.parametrize("pinning", ["none", "shared"])
def test_the_run_rotates_the_servers_and_measures_each_pair_interleaved_then_in_abba_blocks(tmp_path, pinning):
    """What the driver ran, in the order it ran it (the blocks file's order), not what it planned; with a preparing
    lane (shared pinning) and without."""
    servers = discover()
    dummy, floor = servers[0], next(s for s in servers if s.name == "floor")
    steady = FaultyServer(name="steady", display="Steady", module_dir=ROOT / "tests", threading="blocking",
                          notes="test", args=("ok",), executable="misbehaving")
    usable = sorted(os.sched_getaffinity(0))
    kw = {} if pinning == "none" else {"client_cpu": usable[-1], "server_cpu": usable[-1], "prepare_cpu": usable[0]}
    s = _settings(tmp_path, [dummy, floor, steady], min_pairs=2, max_pairs=2, pinning=pinning, **kw)
    run = _run(s)
    entries = pairs_of(run.dir)
    assert all(e["status"] == "measured" for e in entries), entries
    files = rundir.load(run.dir)
    order = {}
    for (server, k), blocks in files.blocks.items():
        order[(server, k)] = [(b.client, b.target) for b in blocks]
    ran = [server for server, _ in files.blocks]  # the blocks file: in the order the pairs were measured
    assert sorted(ran[:3]) == ["floor", "null", "steady"] and len(ran) == 6 and len(files.pairs) == 6
    assert ran[3:] == ran[1:3] + ran[:1]  # each round starts one server later
    # Each pair: the interleaved client first, then ab's quad, D S S D.
    assert set(map(tuple, order.values())) == {(("lean-pair", None), ("ab", "base"), ("ab", "server"),
                                                ("ab", "server"), ("ab", "base"))}
    assert nothing_left(s.port)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="preparing ahead needs a second CPU")
def test_a_preparation_under_way_for_a_server_that_stopped_is_aborted_not_waited_for(tmp_path):
    """The server meets its goal with its first pair while its second process is still starting on the other lane
    (READY only after 120 s): that preparation is killed at once, on record as skipped, and is no failure."""
    servers = discover()
    steady = FaultyServer(name="steady", display="Steady", module_dir=ROOT / "tests", threading="blocking",
                          notes="test", args=("ok",), executable="misbehaving")
    slow = dataclasses.replace(steady, args=("slow-start",))
    usable = sorted(os.sched_getaffinity(0))
    s = _settings(tmp_path, [servers[0], steady], min_pairs=1, max_pairs=1, pinning="shared", client_cpu=usable[-1],
                  server_cpu=usable[-1], prepare_cpu=usable[0], start_timeout=100)
    run = driver.Run(s, rundir.create(tmp_path), java_executable())
    prepare = run.prepare
    run.prepare = lambda item: prepare(dataclasses.replace(item, server=slow) if item.tag == "steady-p2" else item)
    t0 = time.monotonic()
    try:
        run.describe(java_executable())
        run.measure()
    finally:
        run.stop_all()
        run.close()
    assert time.monotonic() - t0 < 60  # waited for, the start would have taken its 100 s timeout
    entries = pairs_of(run.dir)
    assert [(e["server"], e["pair"], e["status"]) for e in entries if e["server"] == "steady"] == [("steady", 1,
                                                                                                    "measured")]
    skipped = {o["tag"]: json.loads(o["text"]) for o in rundir.logs(run.dir) if o["kind"] == "skipped"}
    assert skipped["steady-p2"]["how"] == "aborted" and skipped["steady-p2"]["wait_s"] < 30
    assert run.schedule.stops()["steady"]["reason"] != "failed"
    assert nothing_left(s.port)


def test_the_warm_up_waits_for_an_empty_compile_queue(tmp_path):
    """A Java server's warm-up ends only once its JIT's queue is empty, and tops up while the JIT was busy."""
    servers = discover()
    undertow = next(x for x in servers if x.name == "undertow")
    s = _settings(tmp_path, [servers[0], undertow], warmup=5000, settle="queue", client="lean")
    run = driver.Run(s, rundir.create(tmp_path), java_executable())
    try:
        p = pair.prepare(run.ctx, undertow, s.port, "undertow-w", reference_length=None, http="1.0", stage={},
                         say=lambda _t: None)
    finally:
        run.stop_all()
        run.close()
    rounds = p.record.warmup
    assert 1 <= len(rounds) <= warmup.WARMUP_ROUNDS
    assert rounds[0].requests == 5000 and all(x.requests == 1000 for x in rounds[1:])
    assert all(x.settle_s >= warmup.QUEUE_POLL_S for x in rounds)  # it asked the agent, and waited, every round
    assert rounds[0].jit_cpu_ms > 0  # a fresh JVM compiles under its first requests
    last = rounds[-1]
    assert len(rounds) == warmup.WARMUP_ROUNDS or last.jit_cpu_ms <= warmup.JIT_BUSY_SHARE * last.wall_ms


def test_an_unusable_results_directory_is_a_clear_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    proc = run_all("--quick", "--results-dir", str(blocker / "results"), "--port", str(free_port()))
    assert proc.returncode == 2
    assert f"cannot create the results directory {blocker / 'results'}" in proc.stderr


def test_ensure_space_refuses_below_the_minimum(tmp_path, monkeypatch):
    s = _settings(tmp_path, discover()[:1])
    run = driver.Run(s, rundir.create(tmp_path), java_executable())
    run.close()
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(driver.shutil, "disk_usage", lambda _p: usage._replace(free=driver.MIN_FREE_BYTES - 1))
    with pytest.raises(OSError, match="only 1023 KiB free for the results"):
        run.ensure_space()
    monkeypatch.setattr(driver.shutil, "disk_usage", lambda _p: usage._replace(free=driver.MIN_FREE_BYTES))
    run.ensure_space()


def test_a_full_disk_stops_the_run_with_a_clear_error(tmp_path, monkeypatch, capsys):
    """The driver's ENOSPC path, in process: the disk 'fills up' once the first pair has measured."""
    real = shutil.disk_usage

    def usage(path):
        u = real(path)
        filled = any(tmp_path.glob("*/blocks.jsonl.gz"))
        return u._replace(free=1024) if filled else u
    monkeypatch.setattr(driver.shutil, "disk_usage", usage)
    monkeypatch.setattr(cli, "LOCK_FILE", tmp_path / "lock")
    port = free_port()
    code = cli.main(["--quick", "--servers", "undertow", "--results-dir", str(tmp_path), "--port", str(port)])
    assert code == 1
    err = capsys.readouterr().err
    assert "only 1 KiB free for the results" in err and "finished pairs are kept" in err
    (run_dir,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    assert not (run_dir / "summary.json").exists()
    assert json.loads((run_dir / "run.json").read_text())["status"] == "incomplete"
    # What finished stays: the pair measured before the disk filled; the pair that was starting is on record as
    # stopped, and why.
    # (Their records are written as each pair's processes stop, in either order.)
    first, second = sorted(pairs_of(run_dir), key=lambda e: e["status"] != "measured")
    assert first["status"] == "measured" and second["status"] == "interrupted"
    assert second["reason"].startswith("run stopped: ") and "only 1 KiB free for the results" in second["reason"]
    assert nothing_left(port)


def maven_processes_here() -> list[int]:
    pids = subprocess.run(["pgrep", "-f", "plexus.classworlds"], capture_output=True, text=True).stdout.split()
    return [int(p) for p in pids if Path(f"/proc/{p}/cwd").exists() and Path(f"/proc/{p}/cwd").resolve() == ROOT]


def test_interruption_during_the_build_stops_maven_too(tmp_path):
    stamp = ROOT / ".build" / "servers_undertow.stamp"
    os.utime(stamp, (0, 0))  # undertow's last build is older than every source: the next run of it rebuilds it
    err_file = tmp_path / "stderr"
    with err_file.open("w") as err:
        proc = subprocess.Popen([str(RUN_ALL), "--quick", "--servers", "undertow", "--results-dir", str(tmp_path),
                                 "--port", str(free_port())], stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 120
    while "with the Maven wrapper" not in err_file.read_text() or not maven_processes_here():
        assert proc.poll() is None, err_file.read_text()
        assert time.monotonic() < deadline, "the build did not start"
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 130
    assert "build interrupted" in err_file.read_text()
    time.sleep(1)
    assert maven_processes_here() == []
