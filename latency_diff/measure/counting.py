"""Work per request, counted: system calls (in all, and by name for the common ones), context switches, CPU
migrations, page faults, and which threads ran.

A diff is the server's own computation plus its kernel work (system calls, wake-ups and hand-offs between
threads), and hosts differ most in the price of the second. Counts say how much of it each server does; unlike a
time, a count should carry from one machine to another.

Counting touches the request path (a tracepoint on every system call), so it never runs while round trips are
measured: a pair's counting window comes after its measured phase, in the same two warm processes, and its round
trips are not used. The window has two parts, each counted for both processes at once:

- idle: IDLE_S seconds without a request, for what a process does by the clock (timers, a cached Date header,
  the JVM's own threads), which is then taken off the request part in proportion to its length;
- busy: the interleaved client sends N requests to each process.

Sources: `perf stat` (software events and the syscall tracepoints; exact, all threads, started disabled and
switched on and off through its control FIFO so that only the window counts) when it runs here, and always
/proc (per thread: voluntary and involuntary switches; per process: page faults, read- and write-like
syscalls from /proc/PID/io). The record keeps every raw count with its source; `per_request` makes them figures.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from .process import taskset_prefix

#: Seconds of the idle part of a window.
IDLE_S = 1.0
#: perf's software events, counted for every thread of a process.
EVENTS = ("raw_syscalls:sys_enter", "context-switches", "cpu-migrations", "page-faults", "task-clock")
#: System calls counted by name (those that exist on the host): the ones an HTTP server's request loop makes. Each
#: name is a tracepoint, and the kernel takes about 40 ms to remove one when its last perf session ends: the list is
#: short (every name any server of the kit made at least once in 200 requests is in it), and the rest is in
#: `syscalls`.
NAMED_SYSCALLS = ("read", "write", "readv", "writev", "recvfrom", "sendto", "recvmsg", "sendmsg", "epoll_wait",
                  "epoll_pwait", "epoll_ctl", "poll", "ppoll", "futex", "sched_yield", "fcntl", "ioctl", "mprotect",
                  "io_uring_enter")
TRACING = (Path("/sys/kernel/tracing/events/syscalls"), Path("/sys/kernel/debug/tracing/events/syscalls"))
#: Seconds to wait for perf to acknowledge a command on its control FIFO.
ACK_TIMEOUT_S = 10.0


class CountError(Exception):
    """perf did not count; the message says why (the window falls back to /proc)."""


# -- perf ---------------------------------------------------------------------------------------------------------
_probe: tuple[tuple[str, ...], str | None] | None = None
#: Why perf counts here without the system calls by name (None: it counts them, or perf does not count at all).
_names_problem: str | None = None


def perf_events() -> tuple[tuple[str, ...], str | None]:
    """(the perf events this host counts, why perf cannot count here or None); probed once per process."""
    global _probe
    if _probe is None:
        _probe = _probe_perf()
    return _probe


def names_problem() -> str | None:
    """Why the system calls are not counted by name on this host although perf counts (None: they are)."""
    perf_events()
    return _names_problem


def _probe_perf() -> tuple[tuple[str, ...], str | None]:
    global _names_problem
    perf = shutil.which("perf")
    if perf is None:
        return (), "perf is not installed (Debian/Ubuntu: apt-get install linux-perf, or linux-tools-generic)"
    named = ()
    for folder in TRACING:
        try:
            named = tuple(f"syscalls:sys_enter_{n}" for n in NAMED_SYSCALLS if (folder / f"sys_enter_{n}").is_dir())
        except OSError:
            continue
        if named:
            break
    why = ""
    for events in (EVENTS + named, EVENTS, EVENTS[1:]):
        try:
            proc = subprocess.run([perf, "stat", "-x", ",", "-e", ",".join(events), "--", "true"],
                                  capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            return (), f"perf stat did not run: {e}"
        if proc.returncode == 0 and "<not supported>" not in proc.stderr:
            if not named:
                _names_problem = "no syscall tracepoints (sys_enter_*) under " + " or ".join(map(str, TRACING))
            elif not any(e.startswith("syscalls:") for e in events):
                _names_problem = f"perf refused the syscall tracepoints ({why})"
            return events, None
        why = (proc.stderr.strip().splitlines() or ["no message"])[-1]
    return (), f"perf stat cannot count here ({why}); as root, or with kernel.perf_event_paranoid <= 1, it can"


class Perf:
    """`perf stat` attached to one process, started disabled; counts between enable() and disable()."""

    def __init__(self, pid: int, events: tuple[str, ...], cpu: int | None, folder: Path, part: str):
        self.out = folder / f"perf-{pid}-{part}.csv"
        self.ctl, self.ack = folder / f"ctl-{pid}-{part}", folder / f"ack-{pid}-{part}"
        for fifo in (self.ctl, self.ack):
            os.mkfifo(fifo)
        # Read-write opens do not block on a FIFO with no other end yet.
        self.ctl_fd = os.open(self.ctl, os.O_RDWR)
        self.ack_fd = os.open(self.ack, os.O_RDWR)
        self.proc = subprocess.Popen(
            taskset_prefix(cpu) + ["perf", "stat", "-x", ",", "-o", str(self.out), "-D", "-1",
                                   "--control", f"fifo:{self.ctl},{self.ack}", "-e", ",".join(events),
                                   "-p", str(pid)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True)

    def command(self, what: str) -> None:
        os.write(self.ctl_fd, f"{what}\n".encode())
        deadline = time.monotonic() + ACK_TIMEOUT_S
        got = b""
        while b"ack" not in got:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                err = self.proc.stderr.read() if self.proc.poll() is not None and self.proc.stderr else ""
                raise CountError(f"perf did not acknowledge '{what}'" + (f": {err.strip()}" if err else ""))
            ready, _, _ = select.select([self.ack_fd], [], [], min(left, 0.2))
            if ready:
                got += os.read(self.ack_fd, 64)

    def finish(self) -> dict[str, float]:
        """Stops perf; the counts of the enabled time, by event."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=ACK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise CountError("perf did not stop within 10 s of SIGINT") from None
        finally:
            self.close()
        try:
            text = self.out.read_text()
        except OSError as e:
            raise CountError(f"perf wrote no counts ({err.strip() or e})") from None
        return parse_perf_csv(text)

    def close(self) -> None:
        """Idempotent: a file descriptor closed twice could close another thread's file that reused its number."""
        fds, self.ctl_fd, self.ack_fd = (self.ctl_fd, self.ack_fd), -1, -1
        for fd in fds:
            if fd >= 0:
                os.close(fd)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def parse_perf_csv(text: str) -> dict[str, float]:
    """perf stat -x, output: {event: count}. An event that never ran while enabled ("<not counted>", a process
    whose threads all slept) counted nothing; "<not supported>" is an error."""
    counts: dict[str, float] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#") or "," not in line:
            continue
        fields = line.split(",")
        if len(fields) < 3:
            raise CountError(f"perf stat line not understood: {line!r}")
        value, event = fields[0], fields[2]
        if value == "<not counted>":
            counts[event] = 0.0
        elif value == "<not supported>":
            raise CountError(f"perf cannot count {event} here")
        else:
            try:
                counts[event] = float(value)
            except ValueError:
                raise CountError(f"perf stat line not understood: {line!r}") from None
    if not counts:
        raise CountError("perf stat wrote no counts")
    return counts


# -- /proc --------------------------------------------------------------------------------------------------------
def proc_snapshot(pid: int) -> dict:
    """Counters of a process from /proc: per thread its voluntary and involuntary switches; the process's page faults
    and, when readable, its read- and write-like syscalls."""
    threads: dict[str, list[int]] = {}
    task_dir = Path(f"/proc/{pid}/task")
    for task in task_dir.iterdir():
        try:
            status = (task / "status").read_text()
        except OSError:
            continue  # ended meanwhile
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        threads[task.name] = [int(fields["voluntary_ctxt_switches"]), int(fields["nonvoluntary_ctxt_switches"])]
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    snap: dict = {"threads": threads, "minflt": int(stat[7]), "majflt": int(stat[9])}
    try:
        io = dict(line.split(": ", 1) for line in Path(f"/proc/{pid}/io").read_text().splitlines())
        snap["syscr"], snap["syscw"] = int(io["syscr"]), int(io["syscw"])
    except (OSError, KeyError, ValueError):
        pass  # another user's process without the right to read it
    return snap


def proc_delta(before: dict, after: dict) -> dict:
    """What /proc counted between two snapshots: switches summed over threads (a thread that ended meanwhile took its
    switches with it; one that started counts from zero), the threads that switched at all, faults and syscalls."""
    vol = invol = ran = 0
    for tid, (v, i) in after["threads"].items():
        v0, i0 = before["threads"].get(tid, (0, 0))
        vol, invol = vol + v - v0, invol + i - i0
        ran += (v - v0) + (i - i0) > 0
    out = {"voluntary": vol, "involuntary": invol, "threads": len(after["threads"]), "threads_ran": ran,
           "page_faults": after["minflt"] - before["minflt"] + after["majflt"] - before["majflt"]}
    if "syscr" in before and "syscr" in after:
        out["read_syscalls"] = after["syscr"] - before["syscr"]
        out["write_syscalls"] = after["syscw"] - before["syscw"]
    return out


# -- a window -----------------------------------------------------------------------------------------------------
PARTS = ("idle", "busy")


def count_window(pids: dict[str, int], requests: int, serve: Callable[[], None], cpu: int | None,
                 idle_s: float = IDLE_S) -> dict[str, dict]:
    """Counts each process's work over an idle part (idle_s seconds) and a busy part (`serve()`, which sends
    `requests` requests to each); per process a record for `per_request`.

    perf counts each part in a session of its own, and both parts' sessions attach before the idle part: the kernel
    removes a tracepoint only when its last session ends, so the idle part's sessions end at no cost while the busy
    part's hold them, and the removal is paid once a window instead of once a part."""
    events, problem = perf_events()
    folder = Path(tempfile.mkdtemp(prefix="latency-diff-count-"))
    perfs: dict[str, dict[str, Perf]] = {part: {} for part in PARTS}
    try:
        if events and problem is None:
            try:
                for part in reversed(PARTS):
                    for who, pid in pids.items():
                        perfs[part][who] = Perf(pid, events, cpu, folder, part)
            except (CountError, OSError) as e:
                problem = f"perf: {e}"
                _close(perfs)
        parts: dict[str, dict[str, dict]] = {who: {} for who in pids}
        for part in PARTS:
            running = perfs[part]
            try:
                for perf in running.values():
                    perf.command("enable")
            except (CountError, OSError) as e:
                problem = f"perf: {e}"
                _close(perfs)
                running = {}
            before = {who: proc_snapshot(pid) for who, pid in pids.items()}
            t0 = time.monotonic()
            if part == "idle":
                time.sleep(idle_s)
            else:
                serve()
            wall = time.monotonic() - t0
            for who, pid in pids.items():
                parts[who][part] = {"wall_s": round(wall, 4), "proc": proc_delta(before[who], proc_snapshot(pid))}
            if running:
                try:
                    for perf in running.values():
                        perf.command("disable")
                    for who, perf in running.items():
                        parts[who][part]["perf"] = perf.finish()
                except (CountError, OSError) as e:
                    problem = f"perf: {e}"
                    _close(perfs)
                    for who in pids:
                        for p in parts[who].values():
                            p.pop("perf", None)
        names = names_problem() if problem is None else None
        return {who: {"requests": requests, **parts[who], **({"perf_problem": problem} if problem else {}),
                      **({"names_problem": names} if names else {})} for who in pids}
    finally:
        _close(perfs)
        shutil.rmtree(folder, ignore_errors=True)


def _close(perfs: dict[str, dict[str, Perf]]) -> None:
    """Ends every session still open; a part without its sessions is counted by /proc alone."""
    for running in perfs.values():
        for perf in running.values():
            perf.close()
        running.clear()


# -- per request --------------------------------------------------------------------------------------------------
#: Per-request figures and where each comes from: (name, perf event, /proc field).
FIGURES = (("syscalls", "raw_syscalls:sys_enter", None),
           ("switches", "context-switches", None),
           ("voluntary", None, "voluntary"),
           ("involuntary", None, "involuntary"),
           ("migrations", "cpu-migrations", None),
           ("page_faults", "page-faults", "page_faults"),
           ("task_clock_us", "task-clock", None),
           ("threads_ran", None, "threads_ran"),
           ("read_syscalls", None, "read_syscalls"),
           ("write_syscalls", None, "write_syscalls"))


def per_request(window: dict) -> dict:
    """A process's counts of one window, per request, with the idle part's rate taken off in proportion to the
    busy part's length: {"source": "perf" or "proc", figure: value, ..., "syscall_names": {name: per request}}.
    task_clock_us is CPU microseconds per request; threads_ran is not per request but the number of threads that
    switched in the busy part. Without perf, switches are /proc's voluntary + involuntary, and syscalls unknown.
    /proc misses the switches of threads that ended within the window: with perf, the split into voluntary and
    involuntary is then left out ("split_lost"); without perf, the switches are short by theirs."""
    n, idle, busy = window["requests"], window["idle"], window["busy"]
    scale = busy["wall_s"] / idle["wall_s"] if idle.get("wall_s") else 0.0
    perf = "perf" in busy and "perf" in idle

    def net(key: str, source: str) -> float | None:
        if busy.get(source) is None or key not in busy[source]:
            return None
        return (busy[source][key] - scale * idle.get(source, {}).get(key, 0)) / n

    out: dict = {"source": "perf" if perf else "proc"}
    for name, event, field in FIGURES:
        value = net(event, "perf") if perf and event else None
        if value is None and field:
            value = net(field, "proc")
        if name == "task_clock_us" and value is not None:
            value *= 1000  # perf's task-clock is in milliseconds
        if name == "threads_ran":
            value = busy["proc"]["threads_ran"]
        if name == "switches" and value is None:
            v, i = net("voluntary", "proc"), net("involuntary", "proc")
            value = None if v is None or i is None else v + i
        if value is not None:
            out[name] = round(value, 4)
    if perf and "switches" in out and "voluntary" in out and "involuntary" in out:
        # /proc loses the switches of a thread that ended within the window (a server that serves each connection
        # on a thread of its own ends it with the window's connection): its split is then not shown
        if abs(out["voluntary"] + out["involuntary"] - out["switches"]) > 0.02 + 0.05 * abs(out["switches"]):
            del out["voluntary"], out["involuntary"]
            out["split_lost"] = True
    if perf:
        names = {e.split("sys_enter_", 1)[1]: net(e, "perf") for e in busy["perf"] if e.startswith("syscalls:")}
        if names:
            out["syscall_names"] = {k: round(v, 4) for k, v in sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))
                                    if v is not None and v >= 0.005}
        else:  # counted in total only: said, not shown as a server that makes no calls worth naming
            out["names_problem"] = window.get("names_problem") or "perf counted no system call by name"
    return out
