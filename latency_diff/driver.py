"""Measures every server with `ab -k -c1` and the lean client, and writes the raw results of one run.

For each trial, each server in turn (the order rotates from trial to trial so that drift on the
machine hits all alike): start it (a fresh JVM, with the kit's java agent) on its CPU, wait for
READY, check conformance, warm up, then one measured run per client on one keep-alive connection
(ab and the lean client take turns going first), reading the server's CPU time from /proc and its
allocation and GC counters from the agent around each; stop it and make sure the port is free.
The spread across trials therefore includes JVM-to-JVM variation. Everything raw goes into
results/<UTC time>/; then the analysis renders the tables and plots. Every option can also be set
by an environment variable (LATENCY_DIFF_<OPTION>, e.g. LATENCY_DIFF_TRIALS=3); a flag wins.

Pinning: split puts the client and the server on two CPUs (the 2014 study's set-up: the diff is
critical-path latency, including the cross-CPU wake-up); shared puts both on one CPU (the round
trip becomes the sum of client and server CPU work, so the diff is the server's work per request);
none leaves placement to the scheduler.
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from . import KIT_ROOT, agent, conformance, envinfo, lean
from .abparse import AbParseError, parse_file
from .process import ServerProcess, StartError, java_executable, taskset_prefix
from .servers import Server, ServerError, agent_jar, discover, select

#: Profiles: (requests per measured run, trials per server, warm-up requests). See README "Profiles".
PROFILES = {
    "default": {"requests": 100_000, "trials": 5, "warmup": 150_000},
    # A smoke run: no waiting for the JIT after the warm-up (its numbers are not for comparing anyway).
    "quick": {"requests": 1_000, "trials": 2, "warmup": 1_000, "wait_for_jit": False},
    # The 2014 study: one run of ten million requests per server, no separate warm-up.
    "original": {"requests": 10_000_000, "trials": 1, "warmup": 0},
}
DEFAULT_JVM_FLAGS = "-Xms512m -Xmx512m -XX:+AlwaysPreTouch"
CLIENTS = {"ab": ("ab",), "lean": ("lean",), "both": ("ab", "lean")}
PINNINGS = ("split", "shared", "none")
#: Chosen by measurement: see README "Pinning: why shared is the default".
DEFAULT_PINNING = "shared"
AB_SOCKET_TIMEOUT_S = 10
#: Warm-up: the JIT is done when its compiler threads' CPU time stands still this long (/proc)...
JIT_QUIET_S = 1.0
JIT_POLL_S = 0.2
JIT_SETTLE_MAX_S = 20.0
#: ...and another round of a fifth of the warm-up follows if it worked more than this share of a round.
JIT_BUSY_SHARE = 0.01
WARMUP_ROUNDS = 3
MIN_FREE_BYTES = 1 << 20  # an ab output is ~1.3 KB, a server log a few KB
LOCK_FILE = Path(tempfile.gettempdir()) / "latency-diff.lock"
ENV_PREFIX = "LATENCY_DIFF_"
#: run/2: each trial holds one measurement per client ("measurements"); run/1 had ab only.
RUN_FORMAT = "latency-diff/run/2"


class Interrupted(Exception):
    """SIGINT, SIGTERM or SIGHUP arrived: stop everything, keep what is finished."""


class RunError(Exception):
    """A problem that stops the run before it measures anything; the message says what to do."""


@dataclass
class Settings:
    servers: list[Server]
    profile: str
    requests: int
    trials: int
    warmup: int
    client: str
    pinning: str
    client_cpu: int | None
    server_cpu: int | None
    port: int
    jvm_flags: list[str]
    results_dir: Path
    start_timeout: float
    allow_concurrent: bool
    sources: dict[str, str]

    def to_dict(self) -> dict:
        return {
            "servers": [s.name for s in self.servers], "profile": self.profile, "requests": self.requests,
            "trials": self.trials, "warmup": self.warmup, "clients": list(CLIENTS[self.client]),
            "pinning": self.pinning, "client_cpu": self.client_cpu,
            "server_cpu": self.server_cpu, "port": self.port, "jvm_flags": self.jvm_flags,
            "results_dir": str(self.results_dir), "start_timeout_s": self.start_timeout,
            "sources": self.sources,
        }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="run-all.sh", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Profiles (requests/trials/warm-up): " + "; ".join(
            f"{k}: {v['requests']:,}/{v['trials']}/{v['warmup']:,}" for k, v in PROFILES.items()))
    p.add_argument("--servers", metavar="LIST", help="comma-separated server names (default: all); "
                   "the baseline ladder (dummy, floor, dummy-nio) is always measured")
    p.add_argument("--profile", choices=sorted(PROFILES), help="default, quick or original (the study's single "
                   "10,000,000-request run)")
    p.add_argument("--quick", action="store_true",
                   help="same as --profile quick: a smoke run, about two and a half minutes for every server")
    p.add_argument("--requests", type=int, metavar="N", help="requests per measured ab run")
    p.add_argument("--trials", type=int, metavar="N", help="measured runs per server, each in a fresh JVM")
    p.add_argument("--warmup", type=int, metavar="N", help="requests sent before each measured run (JIT warm-up)")
    p.add_argument("--client", choices=sorted(CLIENTS), help="which client measures: ab (the study's), lean (the "
                   "kit's C client, with percentiles) or both, one after the other in each trial (default both)")
    p.add_argument("--pinning", choices=PINNINGS, help=f"split: client and server on two CPUs (the study's); "
                   f"shared: both on one CPU; none: not pinned (default {DEFAULT_PINNING}, see README)")
    p.add_argument("--client-cpu", metavar="C", help="CPU for the client (split default: the first CPU this "
                   "process may use, 0 on most machines; shared: the server's CPU)")
    p.add_argument("--server-cpu", metavar="S", help="CPU for the whole server process (default: the second "
                   "usable CPU, 1 on most machines)")
    p.add_argument("--port", type=int, metavar="P", help="port the servers listen on (default 8080)")
    p.add_argument("--jvm-flags", metavar="FLAGS", help=f"JVM flags for every server (default '{DEFAULT_JVM_FLAGS}')")
    p.add_argument("--results-dir", metavar="DIR", help="where run directories go (default results/)")
    p.add_argument("--start-timeout", type=float, metavar="S", help="seconds a server may take to print READY "
                   "(default 60)")
    p.add_argument("--allow-concurrent", action="store_true", help="run even if another latency-diff run is going "
                   "(their timings will disturb each other)")
    p.add_argument("--list", action="store_true", help="list the servers and exit")
    return p


def _knob(args: argparse.Namespace, name: str, default, sources: dict[str, str], convert=str):
    cli = getattr(args, name)
    env_name = ENV_PREFIX + name.upper()
    if cli not in (None, False):
        sources[name] = "flag"
        return cli
    if os.environ.get(env_name, "") != "":
        sources[name] = env_name
        try:
            return convert(os.environ[env_name])
        except ValueError as e:
            raise RunError(f"{env_name}={os.environ[env_name]!r}: {e}") from e
    sources[name] = "default"
    return default


def _cpu(value: str | int | None) -> int | None:
    if value is None:
        return None
    if str(value).lower() == "none":
        raise RunError("to run without pinning, pass --pinning none instead of a CPU of 'none'")
    cpu = int(value)
    if cpu not in os.sched_getaffinity(0):
        raise RunError(f"CPU {cpu} is not available here (usable: {sorted(os.sched_getaffinity(0))})")
    return cpu


def _usable_cpu(index: int) -> int:
    """The index-th CPU this process may run on (a container's cpuset keeps the host's numbers)."""
    usable = sorted(os.sched_getaffinity(0))
    if len(usable) <= index:
        raise RunError(f"only CPU(s) {usable} usable: split pinning needs two CPUs; give more, or pass "
                       "--pinning shared (one CPU)")
    return usable[index]


def _pin(pinning: str, client: int | None, server: int | None) -> tuple[int | None, int | None]:
    """(client CPU, server CPU) for a pinning mode and the CPUs given on the command line, if any."""
    if pinning == "none":
        if client is not None or server is not None:
            raise RunError("--pinning none pins nothing: drop --client-cpu/--server-cpu, or choose split or shared")
        return None, None
    if pinning == "shared":
        usable = sorted(os.sched_getaffinity(0))
        cpu = server if server is not None else client
        if cpu is None:
            # The second CPU if there is one: the first tends to take more of the machine's interrupts.
            cpu = usable[1] if len(usable) > 1 else usable[0]
        if client is not None and client != cpu:
            raise RunError(f"--pinning shared puts client and server on one CPU, but CPUs {client} and {cpu} were "
                           "given; give one, or choose --pinning split")
        return cpu, cpu
    client = _usable_cpu(0) if client is None else client
    server = (_usable_cpu(1) if client != _usable_cpu(1) else _usable_cpu(0)) if server is None else server
    if client == server:
        raise RunError(f"--pinning split needs two CPUs, but client and server are both on CPU {client}; give "
                       "them different CPUs, or choose --pinning shared")
    return client, server


def _positive(value: str | int) -> int:
    n = int(value)
    if n < 0:
        raise ValueError(f"{n} is negative")
    return n


def resolve(args: argparse.Namespace) -> Settings:
    sources: dict[str, str] = {}
    profile = "quick" if args.quick else _knob(args, "profile", "default", sources)
    if args.quick:
        sources["profile"] = "flag"
    if profile not in PROFILES:
        raise RunError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    prof = PROFILES[profile]
    try:
        servers = select(discover(), _knob(args, "servers", None, sources))
    except ServerError as e:
        raise RunError(str(e)) from e
    s = Settings(
        servers=servers, profile=profile,
        requests=_knob(args, "requests", prof["requests"], sources, _positive),
        trials=_knob(args, "trials", prof["trials"], sources, _positive),
        warmup=_knob(args, "warmup", prof["warmup"], sources, _positive),
        client=_knob(args, "client", "both", sources),
        pinning=_knob(args, "pinning", DEFAULT_PINNING, sources),
        client_cpu=_cpu(_knob(args, "client_cpu", None, sources)),
        server_cpu=_cpu(_knob(args, "server_cpu", None, sources)),
        port=_knob(args, "port", 8080, sources, int),
        jvm_flags=shlex.split(_knob(args, "jvm_flags", DEFAULT_JVM_FLAGS, sources)),
        results_dir=Path(_knob(args, "results_dir", str(KIT_ROOT / "results"), sources)),
        start_timeout=_knob(args, "start_timeout", 60.0, sources, float),
        allow_concurrent=bool(_knob(args, "allow_concurrent", False, sources, lambda v: v not in ("0", "false"))),
        sources=sources,
    )
    if s.requests < 1 or s.trials < 1:
        raise RunError("--requests and --trials must be at least 1")
    if not 1 <= s.port <= 65535:
        raise RunError(f"--port {s.port} is not a port number")
    if s.client not in CLIENTS:
        raise RunError(f"unknown client {s.client!r}; choose one of {', '.join(CLIENTS)}")
    if s.pinning not in PINNINGS:
        raise RunError(f"unknown pinning {s.pinning!r}; choose one of {', '.join(PINNINGS)}")
    s.client_cpu, s.server_cpu = _pin(s.pinning, s.client_cpu, s.server_cpu)
    return s


def port_holder(port: int) -> str:
    """Who listens on the port, if `ss` can tell."""
    try:
        out = subprocess.run(["ss", "-Htlnp", f"sport = :{port}"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.split("users:", 1)[1].strip() if "users:" in out else ""


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def wait_port_free(port: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not port_free(port):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def new_run_dir(results_dir: Path) -> Path:
    """results/<UTC timestamp>, created exclusively: an earlier run is never overwritten."""
    try:
        results_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RunError(f"cannot create the results directory {results_dir}: {e.strerror}") from e
    if not os.access(results_dir, os.W_OK):
        raise RunError(f"the results directory {results_dir} is not writable")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for i in range(1, 100):
        d = results_dir / (stamp if i == 1 else f"{stamp}-{i}")
        try:
            d.mkdir()
            return d
        except FileExistsError:
            continue
    raise RunError(f"cannot find a free run directory name under {results_dir}")


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


def cpu_ticks(pid: int) -> tuple[int, int]:
    """(utime, stime) of the whole process, all threads, in clock ticks, from /proc/<pid>/stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5), after pid and comm


class Progress:
    """One line per step; ETA from the time the finished steps took."""

    def __init__(self, total_steps: int):
        self.total = total_steps
        self.done = 0
        self.started = time.monotonic()
        self.tty = sys.stderr.isatty()

    def eta(self) -> str:
        if self.done == 0:
            return "?"
        left = (time.monotonic() - self.started) / self.done * (self.total - self.done)
        return f"{int(left // 60)}:{int(left % 60):02d}"

    def say(self, text: str, *, transient: bool = False) -> None:
        elapsed = time.monotonic() - self.started
        line = (f"[{self.done + 1}/{self.total} {int(elapsed // 60)}:{int(elapsed % 60):02d} elapsed, "
                f"~{self.eta()} left] {text}")
        if transient and self.tty:
            print("\r\033[K" + line, end="", file=sys.stderr, flush=True)
        elif not transient:
            print(("\r\033[K" if self.tty else "") + line, file=sys.stderr, flush=True)


class Run:
    def __init__(self, settings: Settings, run_dir: Path, java: str):
        self.s = settings
        self.dir = run_dir
        self.java = java
        self.reference_length: int | None = None
        self.failed: dict[str, str] = {}
        self.where = {"server": None, "trial": None, "phase": "setup"}
        self.stopped_at: dict | None = None
        self.client_proc: subprocess.Popen | None = None
        self.server: ServerProcess | None = None
        self.clients = CLIENTS[settings.client]
        for sub in ("logs", "responses", *self.clients):
            (self.dir / sub).mkdir(exist_ok=True)
        # ab's exact request, for the lean client to send byte for byte.
        self.request_file = self.dir / "request.bin"
        self.request_file.write_bytes(conformance.ab_request("127.0.0.1", settings.port))
        # The agents' sockets: a short private path (a Unix socket path has at most 107 bytes).
        self.agent_dir = Path(tempfile.mkdtemp(prefix="latency-diff-"))

    # -- files ---------------------------------------------------------------------------------
    def write_json(self, name: str, data: dict) -> None:
        tmp = self.dir / f".{name}.tmp"
        try:
            tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
            tmp.replace(self.dir / name)
        finally:
            tmp.unlink(missing_ok=True)

    def ensure_space(self) -> None:
        """A full disk would truncate ab's output and look like the server's fault: stop before that."""
        free = shutil.disk_usage(self.dir).free
        if free < MIN_FREE_BYTES:
            raise OSError(errno.ENOSPC, f"only {free // 1024} KiB free for the results (need "
                          f"{MIN_FREE_BYTES // 1024} KiB)", str(self.dir))

    def record(self, entry: dict) -> None:
        with (self.dir / "trials.jsonl").open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def status(self, status: str, **extra) -> None:
        self.write_json("run.json", {"format": RUN_FORMAT, "run_id": self.dir.name, "status": status,
                                     "settings": self.s.to_dict(), **extra})

    # -- one server, one trial -------------------------------------------------------------------
    def trial(self, server: Server, trial: int, position: int, progress: Progress) -> None:
        name = server.name
        self.where = {"server": name, "trial": trial, "phase": "start"}
        timing: dict[str, float] = {}
        entry_time = [time.monotonic()]

        def phase(name: str) -> None:
            """Moves to the next phase, noting how long the last one took (trials.jsonl: phase_seconds)."""
            now = time.monotonic()
            timing[self.where["phase"]] = round(now - entry_time[0], 3)
            entry_time[0] = now
            self.where["phase"] = name
        tag = f"{name} trial {trial}/{self.s.trials}"
        entry: dict = {"server": name, "trial": trial, "position": position, "requests": self.s.requests,
                       "warmup": self.s.warmup, "log_file": f"logs/{name}-t{trial}.log"}
        if name in self.failed:
            self.record({**entry, "status": "skipped", "reason": f"failed earlier: {self.failed[name]}"})
            progress.say(f"{tag}: skipped (failed earlier)")
            return
        progress.say(f"{tag}: starting")
        agent_socket = self.agent_dir / f"{name}-t{trial}.sock" if server.is_java else None
        flags = self.s.jvm_flags + ([agent.jvm_flag(agent_socket)] if agent_socket else [])
        proc = ServerProcess(server, self.s.port, self.dir / entry["log_file"], jvm_flags=flags,
                             cpu=self.s.server_cpu, java=self.java)
        self.server = proc
        try:
            entry["status"], entry["reason"] = "failed", None
            try:
                proc.start(self.s.start_timeout)
            except StartError as e:
                return self._fail(entry, "start", str(e), progress, tag)
            entry["pid"] = proc.pid
            entry["server_affinity"] = sorted(os.sched_getaffinity(proc.pid)) if proc.alive() else None
            phase("conformance")
            # The live-Date check needs a second to pass: made after the measured runs (check_date_later).
            result = conformance.check(proc.port, name=name, reference_length=self.reference_length,
                                       check_date_change=False)
            entry["response_bytes"] = result.response_bytes
            if trial == 1 and result.raw:
                (self.dir / "responses" / f"{name}.txt").write_bytes(result.raw)
            if not result.ok:
                return self._fail(entry, "conformance", result.summary(), progress, tag)
            if server.baseline and self.reference_length is None:
                self.reference_length = result.response_bytes
            # The clients take turns going first, so that neither always gets the warmer JVM.
            order = self.clients if trial % 2 else tuple(reversed(self.clients))
            if self.s.warmup:
                phase("warmup")
                problem = self._warm_up(entry, proc, f"{name}-t{trial}", result.response_bytes, progress, tag)
                if problem:
                    return self._fail(entry, "warmup", problem, progress, tag)
            phase("measure")
            entry["measurements"] = {}
            for client in order:
                m = self._measure(client, proc, agent_socket, f"{client}/{name}-t{trial}", result.response_bytes,
                                  progress, tag)
                entry["measurements"][client] = m
                if m.get("problem"):
                    return self._fail(entry, "measure", f"{client}: {m.pop('problem')}", progress, tag)
            if trial == 1:
                phase("date check")
                problem = conformance.check_date_later(proc.port, result)
                if problem:
                    return self._fail(entry, "conformance", problem, progress, tag)
            entry["status"] = "measured"
            said = []
            for client in self.clients:
                rel = entry["measurements"][client]["file"]
                rtt = (parse_file(self.dir / rel) if client == "ab" else lean.parse_file(self.dir / rel)).rtt_ns
                said.append(f"{client} {rtt / 1000:.2f} us")
            progress.say(f"{tag}: round trip " + ", ".join(said))
        except (KeyboardInterrupt, Interrupted):
            self.stopped_at = dict(self.where)  # before `finally` moves on to the stop phase
            entry.update(status="interrupted", phase=self.where["phase"], reason="run interrupted")
            raise
        finally:
            phase("stop")
            entry["exit_status"] = proc.stop()
            self.server = None
            if not wait_port_free(self.s.port):
                entry.setdefault("notes", []).append(f"port {self.s.port} still busy 10 s after stopping")
            phase("done")
            entry["phase_seconds"] = timing
            if entry.get("status"):
                self.record(entry)
            progress.done += 1

    def _fail(self, entry: dict, phase: str, reason: str, progress: Progress, tag: str) -> None:
        entry.update(status="failed", phase=phase, reason=reason)
        self.failed[entry["server"]] = f"{phase}: {reason}"
        progress.say(f"{tag}: FAILED in {phase}: {reason}")

    def _warm_up(self, entry: dict, proc: ServerProcess, stem: str, response_bytes: int | None,
                 progress: Progress, tag: str) -> str | None:
        """Warm-up requests, then waits for the JIT to finish what they queued; tops up while it was busy.

        Under shared pinning the client and the server keep their one CPU busy, so the JIT compiler
        threads fall behind the requests: counting requests is not enough. After each round the JIT
        compiler threads' CPU time must stand still for JIT_QUIET_S; another round of a fifth of the
        warm-up follows (at most WARMUP_ROUNDS in all) when they used more than JIT_BUSY_SHARE of the
        round's time. The quick profile skips the waiting.
        """
        client = "lean" if "lean" in self.clients else "ab"
        rounds = entry["warmup_rounds"] = []
        tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
        for i in range(1, WARMUP_ROUNDS + 1):
            n = self.s.warmup if i == 1 else max(1, self.s.warmup // 5)
            progress.say(f"{tag}: warming up ({n:,} requests, {client}" + (f", round {i})" if i > 1 else ")"))
            jit_before, t0 = jit_ticks(proc.pid), time.monotonic()
            problem = self._client(client, n, f"{client}/{stem}-warmup" + (f"{i}" if i > 1 else ""), response_bytes,
                                   progress, tag, "warm-up")
            if problem:
                return problem
            if not proc.server.is_java or not PROFILES.get(self.s.profile, {}).get("wait_for_jit", True):
                return None
            settle_s, jit_after = self._settle_jit(proc.pid)
            wall_ms = (time.monotonic() - t0) * 1000
            jit_ms = (jit_after - jit_before) * tick_ms
            rounds.append({"requests": n, "jit_cpu_ms": round(jit_ms), "settle_s": round(settle_s, 2),
                           "wall_ms": round(wall_ms)})
            if jit_ms <= JIT_BUSY_SHARE * wall_ms:
                return None
        return None

    @staticmethod
    def _settle_jit(pid: int) -> tuple[float, int]:
        """Waits until the JIT threads' CPU time stands still for JIT_QUIET_S (at most JIT_SETTLE_MAX_S);
        returns the seconds waited and the ticks then."""
        start = last_change = time.monotonic()
        last = jit_ticks(pid)
        while time.monotonic() - last_change < JIT_QUIET_S and time.monotonic() - start < JIT_SETTLE_MAX_S:
            time.sleep(JIT_POLL_S)
            now = jit_ticks(pid)
            if now != last:
                last, last_change = now, time.monotonic()
        return time.monotonic() - start, last

    def _measure(self, client: str, proc: ServerProcess, agent_socket: Path | None, stem: str,
                 response_bytes: int | None, progress: Progress, tag: str) -> dict:
        """One measured client run with the server's CPU time (/proc) and JVM counters (agent) around it."""
        m: dict = {"file": stem + (".txt" if client == "ab" else ".json"), "load_before": list(os.getloadavg())}
        jvm_before = self._agent(agent_socket, m)
        before, jit0, t0 = cpu_ticks(proc.pid), jit_ticks(proc.pid), time.monotonic()
        problem = self._client(client, self.s.requests, stem, response_bytes, progress, tag, f"measuring ({client})")
        if not proc.alive():
            problem = f"server exited with status {proc.proc.returncode} during the run: {proc.log_tail(5)}"
        else:
            after = cpu_ticks(proc.pid)
            m["cpu"] = {"clock_ticks_per_s": os.sysconf("SC_CLK_TCK"), "utime_ticks": after[0] - before[0],
                        "stime_ticks": after[1] - before[1], "wall_s": time.monotonic() - t0,
                        "jit_ticks": jit_ticks(proc.pid) - jit0}
            jvm_after = self._agent(agent_socket, m)
            if jvm_before is not None and jvm_after is not None:
                m["jvm"] = agent.delta(jvm_before, jvm_after)
        m["load_after"] = list(os.getloadavg())
        if problem:
            m["problem"] = problem
        return m

    @staticmethod
    def _agent(agent_socket: Path | None, m: dict) -> dict | None:
        """A reading of the agent's counters; a failure is noted in the measurement, not fatal."""
        if agent_socket is None:
            return None
        try:
            return agent.query(agent_socket)
        except agent.AgentError as e:
            m["jvm_error"] = str(e)
            return None

    def _client(self, client: str, requests: int, stem: str, response_bytes: int | None, progress: Progress,
                tag: str, what: str) -> str | None:
        """Runs one client; returns why the run does not count, or None."""
        self.ensure_space()
        if client == "ab":
            return self._ab(requests, stem + ".txt", response_bytes, progress, tag, what)
        return self._lean(requests, stem + ".json", response_bytes, progress, tag, what)

    def _timeout(self, requests: int) -> float:
        return 60 + requests / 1000  # 1 ms a request: ~15x the expected round trip

    def _ab(self, requests: int, rel: str, response_bytes: int | None, progress: Progress, tag: str,
            what: str) -> str | None:
        url = f"http://127.0.0.1:{self.s.port}/"
        cmd = taskset_prefix(self.s.client_cpu) + ["ab", "-k", "-c1", "-n", str(requests),
                                                   "-s", str(AB_SOCKET_TIMEOUT_S), url]
        timeout = self._timeout(requests)
        out_path = self.dir / rel
        with out_path.open("w", encoding="utf-8") as out:
            self.client_proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                                text=True, start_new_session=True)
            started = time.monotonic()
            errors: list[str] = []
            ab = self.client_proc

            def follow() -> None:
                assert ab.stderr
                for line in ab.stderr:
                    if line.startswith("Completed "):
                        done = int(line.split()[1])
                        rate = done / max(time.monotonic() - started, 1e-9)
                        progress.say(f"{tag}: {what} {done * 100 // requests}%, {rate:,.0f} req/s",
                                     transient=True)
                    elif not line.startswith("Finished "):
                        errors.append(line.strip())

            reader = threading.Thread(target=follow, daemon=True)
            reader.start()
            try:
                code = ab.wait(timeout)
            except subprocess.TimeoutExpired:
                _kill(ab)
                return f"ab did not finish {requests:,} requests within {timeout:.0f} s"
            finally:
                reader.join(5)
                self.client_proc = None
        if errors:
            (out_path.with_suffix(".stderr.txt")).write_text("\n".join(errors) + "\n", encoding="utf-8")
        if code != 0:
            return f"ab exited with status {code}: {' / '.join(errors[-3:]) or 'no message'}"
        try:
            run = parse_file(out_path)
        except AbParseError as e:
            return str(e)
        problems = run.problems(requests=requests, response_bytes=response_bytes)
        return "; ".join(problems) or None

    def _lean(self, requests: int, rel: str, response_bytes: int | None, progress: Progress, tag: str,
              what: str) -> str | None:
        cmd = taskset_prefix(self.s.client_cpu) + lean.command("127.0.0.1", self.s.port, self.request_file,
                                                               requests, AB_SOCKET_TIMEOUT_S * 1000)
        timeout = self._timeout(requests)
        out_path = self.dir / rel
        progress.say(f"{tag}: {what}, {requests:,} requests", transient=True)
        with out_path.open("w", encoding="utf-8") as out:
            self.client_proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                                text=True, start_new_session=True)
            try:
                _, err = self.client_proc.communicate(timeout=timeout)
                code = self.client_proc.returncode
            except subprocess.TimeoutExpired:
                _kill(self.client_proc)
                return f"the lean client did not finish {requests:,} requests within {timeout:.0f} s"
            finally:
                self.client_proc = None
        if err.strip():
            (out_path.with_suffix(".stderr.txt")).write_text(err, encoding="utf-8")
        try:
            run = lean.parse_file(out_path)
        except lean.LeanParseError as e:
            return f"lean client exited with status {code}: {err.strip() or e}"
        problems = run.problems(requests=requests, response_bytes=response_bytes)
        if code != 0 and not problems:
            problems.append(f"lean client exited with status {code}: {err.strip() or 'no message'}")
        return "; ".join(problems) or None

    def stop_children(self) -> None:
        if self.client_proc is not None:
            _kill(self.client_proc)
        if self.server is not None:
            self.server.stop(timeout=3)

    # -- the whole run ---------------------------------------------------------------------------
    def measure(self) -> None:
        servers = self.s.servers
        progress = Progress(len(servers) * self.s.trials)
        for trial in range(1, self.s.trials + 1):
            # Rotate the order each trial; the dummy goes first in trial 1 (its length is the reference).
            k = (trial - 1) % len(servers)
            order = servers[k:] + servers[:k]
            for position, server in enumerate(order, 1):
                self.trial(server, trial, position, progress)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _raise_interrupted(signum, _frame):
    raise Interrupted(signal.Signals(signum).name)


def acquire_lock(allow: bool):
    f = LOCK_FILE.open("a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip() or "unknown"
        if not allow:
            f.close()
            raise RunError(f"another latency-diff run is going (pid {holder}); two runs on one machine disturb "
                           "each other's timing. Wait for it, or pass --allow-concurrent.") from None
        return f
    f.truncate(0)
    f.write(str(os.getpid()))
    f.flush()
    return f


def print_settings(s: Settings, run_dir: Path, java: str) -> None:
    def src(k: str) -> str:
        return "" if s.sources.get(k, "default") == "default" else f"  ({s.sources[k]})"
    print(f"latency-diff run {run_dir.name}", file=sys.stderr)
    rows = [("profile", s.profile, "profile"), ("servers", ",".join(x.name for x in s.servers), "servers"),
            ("requests", f"{s.requests:,}", "requests"), ("trials", s.trials, "trials"),
            ("warmup", f"{s.warmup:,}", "warmup"), ("clients", " and ".join(CLIENTS[s.client]), "client"),
            ("pinning", s.pinning, "pinning"), ("client cpu", s.client_cpu, "client_cpu"),
            ("server cpu", s.server_cpu, "server_cpu"), ("port", s.port, "port"),
            ("jvm flags", " ".join(s.jvm_flags), "jvm_flags"), ("java", java, "java"),
            ("results", run_dir, "results_dir")]
    for label, value, key in rows:
        print(f"  {label:11} {value}{src(key)}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.list:
            for s in discover():
                print(f"{s.name:14} {s.threading:16} {s.display}")
            return 0
        settings = resolve(args)
        if not port_free(settings.port):
            holder = port_holder(settings.port)
            raise RunError(f"port {settings.port} on 127.0.0.1 is already in use"
                           f"{' by ' + holder if holder else ''}; stop that, or choose another with --port")
        needed = [s.artifact for s in settings.servers] + [agent_jar()]
        if "lean" in CLIENTS[settings.client]:
            needed.append(lean.EXECUTABLE)
        missing = [str(p.relative_to(KIT_ROOT)) for p in dict.fromkeys(needed) if not p.is_file()]
        if missing:
            raise RunError(f"missing: {', '.join(missing)}; build with scripts/build.sh")
        lock = acquire_lock(settings.allow_concurrent)
        run_dir = new_run_dir(settings.results_dir)
    except RunError as e:
        print(f"latency-diff: error: {e}", file=sys.stderr)
        return 2
    java = java_executable()
    print_settings(settings, run_dir, java)
    run = Run(settings, run_dir, java)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_interrupted)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        run.status("running", started_utc=started, pid=os.getpid())
        env = envinfo.collect(java, settings.to_dict())
        env["servers"] = [s.to_dict() for s in settings.servers]
        run.write_json("env.json", env)
        run.measure()
    except (KeyboardInterrupt, Interrupted) as e:
        reason = "interrupted by " + (str(e) if isinstance(e, Interrupted) else "SIGINT")
        run.stop_children()
        where = run.stopped_at or run.where
        run.status("incomplete", started_utc=started, reason=reason, stopped_at=where,
                   ended_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        print(f"\nlatency-diff: {reason} during {where['phase']} of {where['server'] or '-'} trial "
              f"{where['trial'] or '-'}. Finished trials are kept in {run_dir} (marked incomplete); "
              f"analyze them with scripts/analyze.py {run_dir}", file=sys.stderr)
        return 130
    except OSError as e:  # a full disk, an unwritable results directory, a missing tool
        run.stop_children()
        where = run.stopped_at or run.where
        try:
            run.status("incomplete", started_utc=started, reason=f"error: {e}", stopped_at=where)
        except OSError:
            pass  # the disk may be what failed; the message below still says what happened
        print(f"latency-diff: error: {e} (during {where['phase']} of {where['server'] or '-'}); finished trials "
              f"are kept in {run_dir}", file=sys.stderr)
        return 1
    except BaseException as e:
        run.stop_children()
        run.status("incomplete", started_utc=started, reason=f"driver error: {e!r}", stopped_at=run.where)
        raise
    finally:
        lock.close()
        shutil.rmtree(run.agent_dir, ignore_errors=True)
    env_end = {"load_average_end": list(os.getloadavg())}
    run.status("complete", started_utc=started, ended_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               **env_end)
    print(f"latency-diff: measurements done; raw results in {run_dir}", file=sys.stderr)
    from . import analyze  # needs the analysis packages (scipy), installed by run-all.sh
    return analyze.main([str(run_dir)])


if __name__ == "__main__":
    sys.exit(main())
