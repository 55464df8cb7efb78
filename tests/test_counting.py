"""Counting work per request (latency_diff/measure/counting.py): on a server whose system calls and hand-offs per
request are known exactly, on perf's output, and on the per-request arithmetic."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from latency_diff import lean
from latency_diff.analysis import evaluate
from latency_diff.measure import conformance, counting

FIXTURES = Path(__file__).parent / "fixtures"
REQUESTS = 2000


@pytest.fixture(scope="module")
def handoff(tmp_path_factory) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler (scripts/test.sh installs one)"
    exe = tmp_path_factory.mktemp("handoff") / "handoff"
    subprocess.run([cc, "-O2", "-pthread", "-o", str(exe), str(FIXTURES / "handoff.c")], check=True)
    return exe


def _counted(handoff: Path, tmp_path: Path, n: int, monkeypatch=None) -> dict:
    """The handoff server with n hand-offs a request, its main thread, worker and the client on one CPU; counted."""
    cpu = min(os.sched_getaffinity(0))
    other = max(os.sched_getaffinity(0))
    proc = subprocess.Popen(["taskset", "-c", str(cpu), str(handoff), str(n)], stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline().split()[2])  # type: ignore[union-attr]
        request = tmp_path / "request.bin"
        request.write_bytes(conformance.ab_request("127.0.0.1", port))

        def serve() -> None:
            cmd = ["taskset", "-c", str(cpu)] + lean.command("127.0.0.1", port, request, REQUESTS, 5000)
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            assert lean.parse(done.stdout).problems(requests=REQUESTS) == []

        window = counting.count_window({"server": proc.pid}, REQUESTS, serve, other if other != cpu else None,
                                       idle_s=0.3)
        return window["server"]
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("n", [0, 2])
def test_perf_counts_exactly_the_syscalls_of_each_request_and_the_switches_a_hand_off_needs(handoff, tmp_path, n):
    events, why = counting.perf_events()
    if why:
        pytest.skip(f"perf does not count on this host: {why}")  # the /proc test below still runs
    window = _counted(handoff, tmp_path, n)
    assert "perf_problem" not in window, window
    got = counting.per_request(window)
    assert got["source"] == "perf"
    # The connection's accept, its last read and close are 3 calls over the window's 2,000 requests.
    assert got["syscalls"] == pytest.approx(2 + 4 * n, abs=0.01)
    assert got["syscall_names"]["read"] == pytest.approx(1 + 2 * n, abs=0.01)
    assert got["syscall_names"]["write"] == pytest.approx(1 + 2 * n, abs=0.01)
    # On one CPU each hand-off needs the server to switch out twice (main to the worker, and back) and each response
    # once (to the client): at least 1 + 2N switches a request. A wake-up may also preempt the waker before it
    # blocks (the scheduler's choice, and other load on the CPU): at most one more a hand-off.
    assert 1 + 2 * n - 0.01 <= got["switches"] <= 1 + 3 * n + 0.1
    # /proc's per-thread counts of the same part agree with perf's
    assert got["voluntary"] + got["involuntary"] == pytest.approx(got["switches"], abs=0.01)
    assert got["threads_ran"] == (2 if n else 1)
    assert got["migrations"] == pytest.approx(0, abs=0.01)


def test_without_perf_proc_counts_the_switches(handoff, tmp_path, monkeypatch):
    monkeypatch.setattr(counting, "_probe", ((), "perf is not installed (test)"))
    window = _counted(handoff, tmp_path, 2)
    got = counting.per_request(window)
    assert got["source"] == "proc" and "syscalls" not in got
    assert window["perf_problem"] == "perf is not installed (test)"
    assert got["switches"] == pytest.approx(got["voluntary"] + got["involuntary"], abs=1e-3)
    assert 5 - 0.01 <= got["switches"] <= 7.1
    # /proc/PID/io counts read() and write() calls: 1 + 2N of each a request
    assert got["read_syscalls"] == pytest.approx(5, abs=0.01)
    assert got["write_syscalls"] == pytest.approx(5, abs=0.01)


def test_per_request_takes_the_idle_rate_off_in_proportion():
    window = {"requests": 1000,
              "idle": {"wall_s": 1.0, "proc": {"voluntary": 100, "involuntary": 0, "threads_ran": 1, "page_faults": 0},
                       "perf": {"raw_syscalls:sys_enter": 300.0, "context-switches": 100.0, "cpu-migrations": 0.0,
                                "page-faults": 0.0, "task-clock": 2.0, "syscalls:sys_enter_futex": 100.0}},
              "busy": {"wall_s": 0.5, "proc": {"voluntary": 2050, "involuntary": 0, "threads_ran": 3,
                                               "page_faults": 10},
                       "perf": {"raw_syscalls:sys_enter": 3150.0, "context-switches": 2050.0,
                                "cpu-migrations": 1.0, "page-faults": 10.0, "task-clock": 21.0,
                                "syscalls:sys_enter_futex": 1050.0, "syscalls:sys_enter_read": 1000.0,
                                "syscalls:sys_enter_close": 1.0}}}
    got = counting.per_request(window)
    assert got["source"] == "perf"
    assert got["syscalls"] == 3.0           # (3150 - 0.5 x 300) / 1000
    assert got["switches"] == 2.0           # (2050 - 0.5 x 100) / 1000
    assert got["voluntary"] == 2.0
    assert got["task_clock_us"] == 20.0     # (21 - 0.5 x 2) ms / 1000 requests
    assert got["page_faults"] == 0.01
    assert got["threads_ran"] == 3
    assert got["syscall_names"] == {"read": 1.0, "futex": 1.0}  # close: 0.001 a request, left out


def test_counts_without_the_syscall_tracepoints_say_why_instead_of_naming_none():
    """perf counted the total only (the host's tracepoints were missing): the row says "not counted" and why, rather
    than showing a server that makes no calls worth naming."""
    perf = {"raw_syscalls:sys_enter": 3000.0, "context-switches": 1000.0, "cpu-migrations": 0.0, "page-faults": 0.0,
            "task-clock": 10.0}
    proc = {"voluntary": 0, "involuntary": 1000, "threads_ran": 1, "page_faults": 0}
    window = {"requests": 1000, "idle": {"wall_s": 1.0, "proc": {**proc, "involuntary": 0}, "perf": {**perf,
              "raw_syscalls:sys_enter": 0.0, "context-switches": 0.0, "task-clock": 0.0}},
              "busy": {"wall_s": 0.5, "proc": proc, "perf": perf}, "names_problem": "no syscall tracepoints (test)"}
    got = counting.per_request(window)
    assert got["syscalls"] == 3.0 and "syscall_names" not in got
    assert got["names_problem"] == "no syscall tracepoints (test)"
    assert counting.per_request({**window, "names_problem": None})["names_problem"] == \
        "perf counted no system call by name"
    # the dummy's row (the median of its windows) keeps the reason
    assert evaluate.median_work([got, got])["names_problem"] == "no syscall tracepoints (test)"


def test_the_probe_says_why_the_system_calls_are_not_named(monkeypatch, tmp_path):
    if counting.perf_events()[1]:
        pytest.skip("perf does not count on this host")
    monkeypatch.setattr(counting, "_probe", None)
    monkeypatch.setattr(counting, "_names_problem", None)
    monkeypatch.setattr(counting, "TRACING", (tmp_path / "no-tracing",))
    events, why = counting.perf_events()
    assert why is None and not any(e.startswith("syscalls:") for e in events)
    assert counting.names_problem() == f"no syscall tracepoints (sys_enter_*) under {tmp_path / 'no-tracing'}"


def test_perf_output_is_read_strictly():
    text = "# started on a day\n\n12,,raw_syscalls:sys_enter,100,100.00,,\n<not counted>,,context-switches,0,100.00,,\n"
    assert counting.parse_perf_csv(text) == {"raw_syscalls:sys_enter": 12.0, "context-switches": 0.0}
    with pytest.raises(counting.CountError, match="cannot count cpu-migrations"):
        counting.parse_perf_csv("<not supported>,,cpu-migrations,0,100.00,,\n")
    with pytest.raises(counting.CountError, match="not understood"):
        counting.parse_perf_csv("twelve,,raw_syscalls:sys_enter,1,100.00,,\n")
    with pytest.raises(counting.CountError, match="no counts"):
        counting.parse_perf_csv("# started on a day\n")


def test_closing_a_counter_twice_leaves_a_file_that_reused_its_descriptor_open(tmp_path):
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        c = counting.Perf(sleeper.pid, ("context-switches",), None, tmp_path, "t")
        number = c.ctl_fd  # the lower of its two
        c.close()
        other = os.open(tmp_path / "other", os.O_CREAT | os.O_RDWR)  # the lowest free number: the one just closed
        assert other == number
        c.close()
        os.fstat(other)  # still open
        os.close(other)
    finally:
        sleeper.kill()
        sleeper.wait()
