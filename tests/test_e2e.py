"""End to end: the real run-all.sh, its exit codes, its files, and what an interruption leaves behind."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from latency_diff import driver
from latency_diff.process import java_executable
from latency_diff.servers import Server, discover

ROOT = Path(__file__).resolve().parent.parent
RUN_ALL = ROOT / "scripts" / "run-all.sh"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_all(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUN_ALL), *args], capture_output=True, text=True, timeout=timeout)


def kit_processes(port: int) -> list[str]:
    out = subprocess.run(["pgrep", "-af", f"--port {port}"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]


def test_quick_run_measures_every_server(tmp_path):
    port = free_port()
    proc = run_all("--quick", "--results-dir", str(tmp_path), "--port", str(port))
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    for name in ("run.json", "env.json", "trials.jsonl", "summary.json", "summary.csv", "report.md", "request.bin",
                 "diffs.png", "diffs.svg", "percentiles.png", "percentiles.svg"):
        assert (run_dir / name).is_file(), name
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "complete"
    by_name = {s["name"]: s for s in summary["servers"]}
    for server in discover():
        s = by_name[server.name]
        if server.nonconformant:
            assert not s["valid"] and "conformance" in s["reason"], s
        else:
            assert s["valid"], f"{server.name}: {s['reason']}"
            assert s["rtt_ns"]["n"] == 2 and s["rtt_ns"]["mean"] > 0
            assert (run_dir / "responses" / f"{server.name}.txt").stat().st_size > 0
            assert s["server_cpu_ns_per_request"]["mean"] >= 0
            assert s["primary_client"] == "lean" and set(s["clients"]) == {"ab", "lean"}
            lean = s["clients"]["lean"]
            p = lean["percentiles_ns"]
            assert 0 < p["p50"] <= p["p90"] <= p["p99"] <= p["p99.9"] <= p["max"]
            if server.is_java:  # the agent answered before and after every measured run
                assert lean["alloc_bytes_per_request"]["mean"] > 0, s
                assert lean["gc_count_per_run"]["mean"] >= 0
            else:
                assert lean["alloc_bytes_per_request"] is None
    env = summary["env"]
    assert env["settings"]["pinning"] == driver.DEFAULT_PINNING
    assert env["settings"]["clients"] == ["ab", "lean"]
    assert env["jdk"]["java.version"] and env["ab"].startswith("This is ApacheBench")
    assert "dummy" in proc.stdout and "diff [us]" in proc.stdout
    assert kit_processes(port) == []


@pytest.mark.parametrize("pinning, client", [("split", "ab"), ("none", "lean")])
def test_pinning_modes_and_single_clients_are_recorded(tmp_path, pinning, client):
    proc = run_all("--quick", "--servers", "undertow", "--pinning", pinning, "--client", client,
                   "--results-dir", str(tmp_path), "--port", str(free_port()))
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    summary = json.loads((run_dir / "summary.json").read_text())
    settings = summary["settings"]
    assert settings["pinning"] == pinning and settings["clients"] == [client]
    usable = sorted(os.sched_getaffinity(0))
    expected = (usable[0], usable[1]) if pinning == "split" else (None, None)
    assert (settings["client_cpu"], settings["server_cpu"]) == expected
    assert {s["name"] for s in summary["servers"] if s["valid"]} == {"dummy", "dummy-nio", "floor", "undertow"}
    assert all(s["primary_client"] == client and set(s["clients"]) == {client} for s in summary["servers"])
    report_md = (run_dir / "report.md").read_text()
    assert f"Pinning {pinning}" in report_md
    assert ("not pinned" in report_md) == (pinning == "none")
    assert (run_dir / "percentiles.png").exists() == (client == "lean")


@pytest.mark.parametrize("args, message", [
    (["--pinning", "shared", "--client-cpu", "0", "--server-cpu", "1"], "puts client and server on one CPU"),
    (["--pinning", "split", "--client-cpu", "1", "--server-cpu", "1"], "needs two CPUs"),
    (["--pinning", "none", "--server-cpu", "1"], "pins nothing"),
    (["--client-cpu", "none"], "pass --pinning none"),
    (["--client", "curl"], "invalid choice: 'curl'"),
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


@pytest.mark.parametrize("sig, phase, marker", [
    (signal.SIGINT, "measure", "ab/dummy-t1.txt"),
    (signal.SIGTERM, "measure", "ab/dummy-t1.txt"),
    (signal.SIGINT, "warmup", "lean/dummy-t1-warmup.json"),
    (signal.SIGTERM, "start", "logs/dummy-t1.log"),
], ids=["sigint-measure", "sigterm-measure", "sigint-warmup", "sigterm-start"])
def test_interruption_leaves_no_server_and_marks_the_run_incomplete(tmp_path, sig, phase, marker):
    port = free_port()
    proc = subprocess.Popen([str(RUN_ALL), "--servers", "undertow", "--requests", "2000000", "--trials", "1",
                             "--warmup", "2000000" if phase == "warmup" else "0",
                             "--results-dir", str(tmp_path), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    # Wait until the phase is under way (its file exists), then interrupt.
    while not list(tmp_path.glob(f"*/{marker}")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"the run did not reach {phase}"
        time.sleep(0.05)
    if phase != "start":
        time.sleep(1)
    os.kill(proc.pid, sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err[-2000:]
    assert "Finished trials are kept" in err
    time.sleep(0.5)
    assert kit_processes(port) == []
    (run_dir,) = list(tmp_path.iterdir())
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "incomplete"
    assert run["stopped_at"]["server"] == "dummy"
    # A JVM may reach READY between the file appearing and the signal: start-up ends in conformance.
    assert run["stopped_at"]["phase"] in ({phase, "conformance"} if phase == "start" else {phase})
    assert run["reason"] == f"interrupted by {sig.name}"


class FaultyServer(Server):
    """A Server whose process is tests/misbehaving.py in the mode args[0], instead of a JVM (same READY line)."""

    @property
    def artifact(self) -> Path:
        return ROOT / "tests" / "misbehaving.py"

    def command(self, java, jvm_flags, port, host="127.0.0.1"):
        return [sys.executable, str(self.artifact), self.args[0], str(port), self.name]


@pytest.mark.parametrize("mode, reason", [
    ("crash-after-3000", "server exited with status 3 during the run"),
    ("hang-after-3000", "ab exited with status"),
])
def test_a_server_that_crashes_or_hangs_mid_run_is_recorded_and_the_run_goes_on(tmp_path, mode, reason):
    servers = discover()
    dummy, undertow = servers[0], next(s for s in servers if s.name == "undertow")
    faulty = FaultyServer(name="faulty", display="Faulty", module_dir=ROOT / "tests", threading="blocking",
                          notes="test", args=(mode,), executable="misbehaving")
    settings = driver.Settings(servers=[dummy, faulty, undertow], profile="test", requests=5000, trials=1,
                               warmup=0, client="both", pinning="none", client_cpu=None, server_cpu=None,
                               port=free_port(), jvm_flags=[],
                               results_dir=tmp_path, start_timeout=30, allow_concurrent=True, sources={})
    run = driver.Run(settings, driver.new_run_dir(tmp_path), java_executable())
    run.measure()
    entries = {e["server"]: e for e in map(json.loads, (run.dir / "trials.jsonl").read_text().splitlines())}
    assert entries["faulty"]["status"] == "failed" and entries["faulty"]["phase"] == "measure"
    assert reason in entries["faulty"]["reason"]
    assert entries["dummy"]["status"] == "measured" and entries["undertow"]["status"] == "measured"
    assert kit_processes(settings.port) == []


def test_an_unusable_results_directory_is_a_clear_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    proc = run_all("--quick", "--results-dir", str(blocker / "results"), "--port", str(free_port()))
    assert proc.returncode == 2
    assert f"cannot create the results directory {blocker / 'results'}" in proc.stderr


def test_a_full_disk_stops_the_run_with_a_clear_error(tmp_path):
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(tiny)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("needs root to mount a small tmpfs: " + mounted.stderr.decode().strip())
    try:
        port = free_port()
        filler = tiny / "filler"
        filler.write_bytes(b"\0" * (1536 * 1024))  # leaves about 0.5 MiB: less than the driver needs
        proc = run_all("--quick", "--servers", "undertow", "--results-dir", str(tiny), "--port", str(port))
        assert proc.returncode == 1, proc.stderr[-2000:]
        assert "KiB free for the results" in proc.stderr and "finished trials are kept" in proc.stderr
        (run_dir,) = [d for d in tiny.iterdir() if d.is_dir()]
        assert not (run_dir / "summary.json").exists()
        assert not list(run_dir.glob(".*.tmp"))
        assert json.loads((run_dir / "run.json").read_text())["status"] == "incomplete"
        assert kit_processes(port) == []
    finally:
        subprocess.run(["umount", str(tiny)], check=True)


def maven_processes_here() -> list[int]:
    pids = subprocess.run(["pgrep", "-f", "plexus.classworlds"], capture_output=True, text=True).stdout.split()
    return [int(p) for p in pids if Path(f"/proc/{p}/cwd").exists() and Path(f"/proc/{p}/cwd").resolve() == ROOT]


def test_interruption_during_the_build_stops_maven_too(tmp_path):
    (ROOT / "servers" / "undertow" / "server.toml").touch()  # a source newer than the last build
    err_file = tmp_path / "stderr"
    with err_file.open("w") as err:
        proc = subprocess.Popen([str(RUN_ALL), "--quick", "--servers", "undertow", "--results-dir", str(tmp_path),
                                 "--port", str(free_port())], stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 120
    while "building with the Maven wrapper" not in err_file.read_text() or not maven_processes_here():
        assert proc.poll() is None, err_file.read_text()
        assert time.monotonic() < deadline, "the build did not start"
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 130
    assert "build interrupted" in err_file.read_text()
    time.sleep(1)
    assert maven_processes_here() == []
