"""Starting and stopping servers (JVMs and the native floor): one process group each, READY detection, no leftovers."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from pathlib import Path

from ..rundir import portable_text
from ..servers import Server

READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0


class StartError(Exception):
    """A server that did not reach READY; the message carries the reason and its log tail."""


def java_executable() -> str:
    """The java to run servers with: $JAVA_HOME/bin/java (scripts/lib.sh sets it to a JDK 21+), else PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    return "java"


def taskset_prefix(cpu: int | None) -> list[str]:
    """`taskset -c CPU` so that the whole process (every JVM thread: JIT, GC) runs on that CPU."""
    return [] if cpu is None else ["taskset", "-c", str(cpu)]


def pin_threads(pid: int, cpu: int, passes: int = 5) -> None:
    """Pins every thread of a running process to one CPU. A thread started during a pass by one not yet pinned
    inherits the old mask, so passes repeat until one finds every thread pinned. Raises OSError."""
    for _ in range(passes):
        moved = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                if os.sched_getaffinity(int(tid)) != {cpu}:
                    os.sched_setaffinity(int(tid), {cpu})
                    moved += 1
            except ProcessLookupError:  # the thread ended
                continue
        if not moved:
            return
    raise OSError(f"process {pid} kept starting threads on other CPUs after {passes} passes")


def allow_cpus(pid: int, cpus: set[int]) -> None:
    """Lets every thread of a running process run on these CPUs (one pass: a thread started meanwhile by one not yet
    changed keeps the old mask until the next call). Raises OSError when the process is gone."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            if os.sched_getaffinity(int(tid)) != cpus:
                os.sched_setaffinity(int(tid), cpus)
        except ProcessLookupError:  # the thread ended
            continue


class ServerProcess:
    """One running server. Use as a context manager so that it is always stopped."""

    def __init__(self, server: Server, port: int, log_path: Path, *, jvm_flags: list[str] | None = None,
                 cpu: int | None = None, host: str = "127.0.0.1", java: str | None = None):
        self.server = server
        self.port: int | None = None
        self.log_path = log_path
        self.command = taskset_prefix(cpu) + server.command(java or java_executable(), jvm_flags or [], port, host)
        self.proc: subprocess.Popen | None = None
        self._ready = threading.Event()
        self._tail: deque[str] = deque(maxlen=40)
        self._own: deque[str] = deque(maxlen=5)  # one-line reasons, kept even after a long crash report
        self._reader: threading.Thread | None = None
        # start() and stop() may run on different threads (a run's interrupt stops a process another thread is
        # starting): a process stopped before it started never starts.
        self._lifecycle = threading.Lock()
        self._stopped = False

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self, timeout: float = READY_TIMEOUT_S) -> int:
        """Starts the JVM and waits for `READY <name> <port>`; returns the port. Raises StartError."""
        if not self.server.artifact.is_file():
            raise StartError(f"{self.server.name}: {self.server.artifact} is missing (build with scripts/build.sh)")
        if self.server.interpreter and shutil.which(self.server.interpreter) is None:
            raise StartError(f"{self.server.name}: needs '{self.server.interpreter}', which is not on PATH"
                             + (f"; install it with: {self.server.install}" if self.server.install else ""))
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self._lifecycle:
            if self._stopped:
                raise StartError(f"{self.server.name}: stopped before it started")
            log = self.log_path.open("w", encoding="utf-8", errors="replace")
            log.write("$ " + portable_text(" ".join(self.command)) + "\n")  # no machine folders in a kept log
            log.flush()
            self.proc = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True, text=True,
                                         errors="replace")
        self._reader = threading.Thread(target=self._read, args=(log,), daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.05):
            if self.proc.poll() is not None:
                self._reader.join(2)
                raise StartError(f"{self.server.name} exited with status {self.proc.returncode} before READY: "
                                 f"{self.start_failure()}")
            if time.monotonic() > deadline:
                self.stop()
                raise StartError(f"{self.server.name} printed no READY line within {timeout:.0f} s: {self.log_tail(5)}")
        return self.port  # type: ignore[return-value]

    def _read(self, log) -> None:
        assert self.proc and self.proc.stdout
        with log:
            for line in self.proc.stdout:
                log.write(line)
                log.flush()
                self._tail.append(line.rstrip("\n"))
                if line.startswith((f"{self.server.wire_name}: ", "latency-diff-agent: ")):
                    self._own.append(line.rstrip("\n"))
                parts = line.split()
                if not self._ready.is_set() and len(parts) == 3 and parts[0] == "READY" \
                        and parts[1] == self.server.wire_name and parts[2].isdigit():
                    self.port = int(parts[2])
                    self._ready.set()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start_failure(self) -> str:
        """Why the process exited: the kit's own one-line reasons (the server's or the agent's, see the server
        contract) when it printed one, else the last lines of its output (e.g. a JVM's crash report)."""
        return " | ".join(self._own) if self._own else self.log_tail(5)

    def log_tail(self, lines: int = 10) -> str:
        tail = list(self._tail)[-lines:]
        return " | ".join(tail) if tail else "(no output)"

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int | None:
        """SIGTERM to the process group, SIGKILL after the timeout; returns the exit status."""
        with self._lifecycle:
            self._stopped = True
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            _signal_group(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                _signal_group(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        else:
            _signal_group(self.proc.pid, signal.SIGKILL)  # stray children of an exited leader, if any
        if self._reader:
            self._reader.join(2)
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL to the process group, from any thread, without waiting: a start still to come is refused, one
        waiting for READY sees the exit. The owner's stop() then reaps it."""
        with self._lifecycle:
            self._stopped = True
            if self.proc is not None and self.proc.poll() is None:
                _signal_group(self.proc.pid, signal.SIGKILL)

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
