"""How busy other processes kept the machine while a run measured: sampled on a background thread, summarized in
run.json's env ("busy"), checked by the analysis (evaluate.BUSY_SHARE_MAX).

Every INTERVAL_S the sampler reads the machine's CPU time from /proc/stat (user + nice + system over every CPU,
in clock ticks) and the run's own: utime + stime + cutime + cstime of the driver and of every descendant
(/proc/<pid>/stat, found through their parent links), so that a client or a server JVM that has exited and been
reaped still counts, in its parent's cutime and cstime. The machine's minus the run's own is other processes'
time: a build, another benchmark, a backup. Interrupts, softirqs (the run's own loopback traffic is mostly there)
and steal (the hypervisor's other guests) are left out of both; steal is summarized beside.

The summary (summarize, a pure function of the samples) gives other processes' share of the machine's CPU time
over the run and in its busiest WINDOW_S, the run's own share, and steal's. The sampler's thread keeps off the
measured CPUs (it reads a few hundred small files per sample), and charges its time to the driver: the run's own.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")
INTERVAL_S = 5.0
WINDOW_S = 60.0


@dataclass(frozen=True)
class Sample:
    """Cumulative counters at one moment, in clock ticks (t: time.monotonic(), in s)."""
    t: float
    #: user + nice + system over every CPU (/proc/stat).
    busy: int
    #: The run's own processes: utime + stime + cutime + cstime of the driver and its descendants.
    own: int
    steal: int


def machine_ticks(stat_text: str) -> tuple[int, int, int]:
    """(user + nice + system, steal, CPUs) from the text of /proc/stat: the first line sums every CPU."""
    cpus = sum(1 for line in stat_text.splitlines() if line.startswith("cpu") and line[3:4].isdigit())
    for line in stat_text.splitlines():
        if line.startswith("cpu "):
            f = [int(x) for x in line.split()[1:]]
            return f[0] + f[1] + f[2], f[7] if len(f) > 7 else 0, cpus
    raise ValueError("/proc/stat has no 'cpu ' line")


def _stat_fields(text: str) -> list[str]:
    """The fields of a /proc/<pid>/stat after the command name (which may hold spaces and parentheses): [0] is the
    state, [1] the parent pid, [11:15] utime, stime, cutime, cstime (fields 3, 4 and 14-17 of proc(5))."""
    return text.rsplit(")", 1)[1].split()


def tree_ticks(root: int, proc: Path = Path("/proc")) -> int:
    """utime + stime + cutime + cstime of process `root` and every descendant, in clock ticks."""
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            f = _stat_fields((entry / "stat").read_text())
        except (OSError, IndexError):
            continue  # it exited meanwhile
        pid = int(entry.name)
        parent[pid] = int(f[1])
        ticks[pid] = sum(int(x) for x in f[11:15])
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo += children.get(pid, [])
    return total


def summarize(samples: list[Sample], ticks_per_s: float, cpus: int, window_s: float = WINDOW_S) -> dict | None:
    """Other processes' share of the machine's CPU time (0 to 1: all of every CPU) from the first sample to the last,
    and in the busiest stretch of at least window_s between two samples (the whole run when it is shorter); the
    run's own share and steal's over the run. None with fewer than 2 samples or no time between them."""
    if len(samples) < 2 or samples[-1].t <= samples[0].t:
        return None

    def share(a: Sample, b: Sample, ticks: int) -> float:
        return max(ticks, 0) / ((b.t - a.t) * ticks_per_s * cpus)

    first, last = samples[0], samples[-1]
    worst, j = None, 0
    for i, a in enumerate(samples):
        j = max(j, i + 1)
        while j < len(samples) and samples[j].t - a.t < window_s:
            j += 1
        if j == len(samples):
            break
        b = samples[j]
        x = share(a, b, (b.busy - a.busy) - (b.own - a.own))
        worst = x if worst is None else max(worst, x)
    other = share(first, last, (last.busy - first.busy) - (last.own - first.own))
    span = last.t - first.t
    return {"seconds": round(span, 1), "samples": len(samples), "cpus": cpus,
            "other_share": round(other, 4), "other_cpu_s": round(max(other, 0) * span * cpus, 1),
            "worst_share": round(worst if worst is not None else other, 4),
            "worst_window_s": round(min(window_s, span), 1),
            "own_share": round(share(first, last, last.own - first.own), 4),
            "steal_share": round(share(first, last, last.steal - first.steal), 4)}


class Sampler:
    """Samples on a daemon thread from start() to stop(), which returns the summary (None if it could not read
    /proc). `avoid` are CPUs the thread keeps off (the measured ones), when others are usable."""

    def __init__(self, root: int | None = None, interval_s: float = INTERVAL_S, avoid: set[int] | None = None,
                 proc: Path = Path("/proc")):
        self.root = os.getpid() if root is None else root
        self.interval_s = interval_s
        self.avoid = avoid or set()
        self.proc = proc
        self.samples: list[Sample] = []
        self.cpus = 0
        self.error: str | None = None
        self.note: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        busy, steal, self.cpus = machine_ticks((self.proc / "stat").read_text())
        self.samples.append(Sample(time.monotonic(), busy, tree_ticks(self.root, self.proc), steal))

    def _loop(self) -> None:
        allowed = os.sched_getaffinity(0) - self.avoid
        if allowed:
            try:
                os.sched_setaffinity(0, allowed)  # this thread only (Linux: pid 0 is the calling thread)
            except OSError as e:  # then it samples wherever it runs: a few ms every INTERVAL_S; the summary says so
                self.note = f"not kept off CPUs {sorted(self.avoid)}: {e}"
        try:
            self.sample()
            while not self._stop.wait(self.interval_s):
                self.sample()
        except (OSError, ValueError) as e:  # no /proc (not Linux), or a format this reader does not know
            self.error = f"{type(e).__name__}: {e}"

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="busy-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> dict | None:
        if self._thread is None:
            return None
        self._stop.set()
        self._thread.join(10)
        if self.error is None:
            try:
                self.sample()
            except (OSError, ValueError) as e:
                self.error = f"{type(e).__name__}: {e}"
        if self.error is not None:
            return {"error": self.error}
        summary = summarize(self.samples, CLOCK_TICKS_PER_S, self.cpus)
        if summary is not None and self.note:
            summary["note"] = self.note
        return summary
