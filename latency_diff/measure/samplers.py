"""What the driver reads about a server process without touching its request path.

CPU time of the whole process and of its JIT compiler threads from /proc, and the JVM's allocation,
GC and compilation counters from the kit's java agent (latency_diff/measure/agent.py).
"""

from __future__ import annotations

import os
from pathlib import Path

from . import agent

CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid: int) -> tuple[int, int]:
    """(utime, stime) of the whole process, all threads, in clock ticks, from /proc/<pid>/stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5), after pid and comm


def jit_ticks(pid: int) -> int:
    """CPU ticks (user + system) of the JVM's JIT compiler threads so far, from /proc/<pid>/task/*/stat.

    The JVM's own compile-time counter is elapsed time, which grows while a compiler thread waits for
    the CPU; CPU time says whether it still has work. Threads that exit (the JVM retires idle compiler
    threads) take their ticks with them, which only makes a settled JIT look more settled.
    """
    total = 0
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return 0  # the process has exited; its caller finds out from the process itself
    for task in tasks:
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        if comm.startswith(("C1 CompilerThre", "C2 CompilerThre")):
            fields = stat.rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total


class Sample:
    """Counters of one process at one moment: CPU and JIT ticks, and the agent's reading if it has one."""

    def __init__(self, pid: int, agent_socket: Path | None):
        self.cpu = cpu_ticks(pid)
        self.jit = jit_ticks(pid)
        self.jvm: dict | None = None
        self.jvm_error: str | None = None
        if agent_socket is not None:
            try:
                self.jvm = agent.query(agent_socket)
            except agent.AgentError as e:
                self.jvm_error = str(e)


def delta(before: Sample, after: Sample, requests: int, wall_s: float) -> dict:
    """The process's costs between two samples, over `requests` requests served in `wall_s` seconds."""
    out: dict = {"requests": requests, "wall_s": round(wall_s, 4), "clock_ticks_per_s": CLOCK_TICKS_PER_S,
                 "utime_ticks": after.cpu[0] - before.cpu[0], "stime_ticks": after.cpu[1] - before.cpu[1],
                 "jit_ticks": after.jit - before.jit}
    if before.jvm is not None and after.jvm is not None:
        out["jvm"] = agent.delta(before.jvm, after.jvm)
    error = before.jvm_error or after.jvm_error
    if error:
        out["jvm_error"] = error
    return out
