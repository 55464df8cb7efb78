"""Lending the measured CPU to the process being prepared while the measuring lane waits (pair.lend, --lend-cpu)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from latency_diff.measure import pair
from latency_diff.records import ProcessRecord

CPUS = sorted(os.sched_getaffinity(0))
pytestmark = pytest.mark.skipif(len(CPUS) < 2, reason="lending needs two usable CPUs")

# A process with a few threads, pinned to one CPU as the preparing lane starts it.
THREADS = "import threading, time\nfor _ in range(3): threading.Thread(target=time.sleep, args=(60,)).start()\n" \
          "print('up', flush=True)\ntime.sleep(60)\n"


@pytest.fixture
def prepared():
    p = subprocess.Popen(["taskset", "-c", str(CPUS[0]), sys.executable, "-c", THREADS], stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "up"
    yield p
    p.kill()
    p.wait()


def _threads_affinity(pid: int) -> set[frozenset[int]]:
    return {frozenset(os.sched_getaffinity(int(t))) for t in os.listdir(f"/proc/{pid}/task")}


def _ctx(prepare: int | None, measure: int | None) -> pair.Context:
    return pair.Context(None, None, "java", None, None, None, prepare_cpu=prepare, measure_cpu=measure)


def test_lend_widens_every_thread_and_hand_over_pins_it_back(prepared):
    ctx = _ctx(CPUS[0], CPUS[1])
    assert _threads_affinity(prepared.pid) == {frozenset({CPUS[0]})}
    ctx.preparing = SimpleNamespace(pid=prepared.pid)
    pair.lend(ctx, 0.25)
    pair.lend(ctx, 0.5)
    assert _threads_affinity(prepared.pid) == {frozenset({CPUS[0], CPUS[1]})}
    # Handed over: every thread on the measured CPU alone, and the lent seconds in the process's record.
    p = SimpleNamespace(proc=SimpleNamespace(pid=prepared.pid), record=ProcessRecord(tag="x-p1"),
                        server=SimpleNamespace(name="x"))
    pair.hand_over(ctx, p)
    assert _threads_affinity(prepared.pid) == {frozenset({CPUS[1]})}
    assert p.record.lent_s == 0.75 and p.record.affinity == [CPUS[1]]
    assert ctx.lent == {}


def test_nothing_is_lent_without_a_second_cpu_or_a_process(prepared):
    ctx = _ctx(CPUS[0], CPUS[0])  # prepared where it is measured: nothing to lend
    ctx.preparing = SimpleNamespace(pid=prepared.pid)
    pair.lend(ctx, 1.0)
    assert _threads_affinity(prepared.pid) == {frozenset({CPUS[0]})} and ctx.lent == {}
    ctx = _ctx(CPUS[0], CPUS[1])  # no process under preparation
    pair.lend(ctx, 1.0)
    assert ctx.lent == {}


def test_lending_a_process_that_ended_is_harmless():
    p = subprocess.Popen(["true"])
    p.wait()
    time.sleep(0.05)
    ctx = _ctx(CPUS[0], CPUS[1])
    ctx.preparing = SimpleNamespace(pid=p.pid)
    pair.lend(ctx, 1.0)
    assert ctx.lent == {}
