"""Measures every server in process pairs against the dummy baseline, and writes the raw results of one run.

The run goes in rounds. Each round starts a fresh baseline dummy; then each server of the round gets a
fresh process beside it, pinned alike (a process pair): both are checked and warmed up, and the
client alternates between them in short blocks, four at a time in ABBA order (D S S D, S D D S, ...),
per client (the lean client and ab take turns quad by quad), so that drift of the machine cancels
within each quad. A round also measures the null pair (the dummy against a second dummy process)
and the baseline ladder (floor, NIO dummy). Every server gets --min-pairs pairs; then servers whose
diff is not yet within the precision target get more, while their --budget lasts. Everything raw goes
into results/<UTC time>/; then the analysis renders the tables and plots. Every option can also be
set by an environment variable (LATENCY_DIFF_<OPTION>, e.g. LATENCY_DIFF_BUDGET=120); a flag wins.

Pinning: shared puts the client and both servers on one CPU (a round trip is the sum of client and
server CPU work, so the diff is the server's work per request); split puts the client on one CPU and
the servers on another (the 2014 study's set-up: the diff is critical-path latency, including the
cross-CPU wake-up); none leaves placement to the scheduler.
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from . import KIT_ROOT, conformance, envinfo, lean, model, pair
from .clients import Clients
from .process import java_executable
from .schedule import ServerState, next_round
from .servers import Server, agent_jar, discover
from .settings import RunError, Settings, build_parser, print_settings, resolve

MIN_FREE_BYTES = 1 << 20  # a block's output is ~1-5 KB, a server log a few KB
LOCK_FILE = Path(os.environ.get("LATENCY_DIFF_LOCK_FILE") or Path(tempfile.gettempdir()) / "latency-diff.lock")
RUN_FORMAT = model.RUN_FORMAT
#: The measured servers take turns on the ports after the baseline's: P+1 .. P+SERVER_PORTS.
SERVER_PORTS = 8


class Interrupted(Exception):
    """SIGINT, SIGTERM or SIGHUP arrived: stop everything, keep what is finished."""


def port_holder(port: int) -> str:
    """Who listens on the port, if `ss` can tell."""
    import subprocess
    try:
        out = subprocess.run(["ss", "-Htlnp", f"sport = :{port}"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.split("users:", 1)[1].strip() if "users:" in out else ""


def port_free(port: int, host: str = "127.0.0.1", *, strict: bool = False) -> bool:
    """Whether a listener could bind the port now; strict: even one that does not set SO_REUSEADDR (a connection
    the last server closed first keeps the port in TIME_WAIT for a minute, and such a listener fails on it)."""
    import socket
    with socket.socket() as s:
        if not strict:
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


def null_server(dummy: Server) -> Server:
    """The null pair's second dummy: the dummy byte for byte, under a name of its own in the results."""
    return dataclasses.replace(dummy, name=model.NULL_PAIR, display="Dummy again (null pair)", baseline=False,
                               reference=True, alias_of=dummy.name,
                               notes="A second dummy process against the round's dummy: its diff must be 0 "
                                     "within its interval, or the pairing itself is biased.")


class Progress:
    """One line per step, with the time so far and an estimate of what is left."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.left_s: float | None = None

    def say(self, text: str, *, transient: bool = False) -> None:
        elapsed = time.monotonic() - self.started
        left = "" if self.left_s is None else f", ~{int(self.left_s // 60)}:{int(self.left_s % 60):02d} left"
        line = f"[{int(elapsed // 60)}:{int(elapsed % 60):02d}{left}] {text}"
        if transient and self.tty:
            print("\r\033[K" + line, end="", file=sys.stderr, flush=True)
        elif not transient:
            print(("\r\033[K" if self.tty else "") + line, file=sys.stderr, flush=True)


class Run:
    def __init__(self, settings: Settings, run_dir: Path, java: str):
        self.s = settings
        self.dir = run_dir
        self.where: dict = {"server": None, "pair": None, "round": None, "phase": "setup"}
        self.stopped_at: dict | None = None
        for sub in ("logs", "responses", "blocks", "warmup"):
            (self.dir / sub).mkdir(exist_ok=True)
        # The lean client's exact request bytes per HTTP version (1.0: ab's own), the same for the baseline and
        # the server of a pair (Host names the baseline's port for both; no server here looks at it).
        request_files = {}
        for http in ("1.0", "1.1"):
            request_files[http] = self.dir / f"request-http{http}.bin"
            request_files[http].write_bytes(conformance.request_bytes(http, "127.0.0.1", settings.port))
        self.progress = Progress()
        # The agents' sockets: a short private path (a Unix socket path has at most 107 bytes).
        self.agent_dir = Path(tempfile.mkdtemp(prefix="latency-diff-"))
        self.ctx = pair.Context(settings, run_dir, java, self.agent_dir, Clients(settings.client_cpu, request_files),
                                say=lambda t: self.progress.say(t, transient=True), where=self.where)
        dummy = next(x for x in settings.servers if x.baseline)
        measured = [null_server(dummy)] + [x for x in settings.servers if not x.baseline]
        self.states = [ServerState(x, settings.quads) for x in measured]
        self.dummy = dummy
        self.date_checked: set[str] = set()
        self.last_port = settings.port

    def server_port(self) -> int:
        """The next of the servers' ports that is free even of TIME_WAIT connections (else the next one free)."""
        ports = [self.s.port + 1 + (self.last_port - self.s.port + i) % SERVER_PORTS for i in range(SERVER_PORTS)]
        self.last_port = next((p for p in ports if port_free(p, strict=True)),
                              next((p for p in ports if port_free(p)), ports[0]))
        return self.last_port

    # -- files ---------------------------------------------------------------------------------
    def write_json(self, name: str, data: dict) -> None:
        tmp = self.dir / f".{name}.tmp"
        try:
            tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
            tmp.replace(self.dir / name)
        finally:
            tmp.unlink(missing_ok=True)

    def ensure_space(self) -> None:
        """A full disk would truncate a client's output and look like the server's fault: stop before that."""
        free = shutil.disk_usage(self.dir).free
        if free < MIN_FREE_BYTES:
            raise OSError(errno.ENOSPC, f"only {free // 1024} KiB free for the results (need "
                          f"{MIN_FREE_BYTES // 1024} KiB)", str(self.dir))

    def record(self, entry: dict) -> None:
        with (self.dir / "pairs.jsonl").open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def status(self, status: str, **extra) -> None:
        self.write_json("run.json", {"format": RUN_FORMAT, "run_id": self.dir.name, "status": status,
                                     "settings": self.s.to_dict(), **extra})

    # -- the rounds ------------------------------------------------------------------------------
    def measure(self) -> None:
        round_no = 0
        while True:
            round_no += 1
            todo = next_round(self.states, self.s, round_no)
            if not todo:
                return
            self._estimate_left(round_no)
            self.progress.say(f"round {round_no}: {len(todo)} server(s): {', '.join(x.server.name for x in todo)}")
            self.round(round_no, todo)

    def _estimate_left(self, round_no: int) -> None:
        """Time left: the pairs every server still needs at least, plus what the others may still spend of
        their budget on precision (an upper bound: a server stops once its target is met)."""
        times = [t for st in self.states for t in st.pair_seconds]
        if not times:
            return
        mean = sum(times) / len(times)
        left = 0.0
        for st in self.states:
            if st.failed:
                continue
            owed = max(self.s.min_pairs - len(st.pair_quads), 0)
            left += owed * mean if owed else (max(self.s.budget - st.spent, 0.0) if st.wants_more(self.s) else 0.0)
        self.progress.left_s = left

    def round(self, round_no: int, todo: list[ServerState]) -> None:
        ctx = self.ctx
        tag = f"dummy-r{round_no}"
        self.where.update(server=self.dummy.name, round=round_no, pair=None)
        self.ensure_space()
        base: pair.Running | None = None
        try:
            try:
                base = pair.start(ctx, self.dummy, self.s.port, tag, reference_length=None, http="1.0")
            except pair.PairFailed as e:
                for st in todo:
                    self.record({"server": st.server.name, "pair": len(st.pair_quads) + 1, "round": round_no,
                                 "status": "failed", "phase": f"baseline {e.phase}",
                                 "reason": f"the baseline dummy failed: {e}"})
                    st.failed = f"the baseline dummy failed: {e}"
                self.progress.say(f"round {round_no}: the baseline dummy FAILED in {e.phase}: {e}")
                return
            for st in todo:
                self.one_pair(round_no, base, st)
        finally:
            pair.stop(ctx, base)
            wait_port_free(self.s.port)

    def one_pair(self, round_no: int, base: pair.Running, st: ServerState) -> None:
        ctx, s = self.ctx, self.s
        server = st.server
        k = len(st.pair_quads) + 1 + (1 if st.failed else 0)
        tag = f"{server.name}-p{k}"
        http = s.server_http(server)
        entry: dict = {"server": server.name, "pair": k, "round": round_no, "tag": tag, "http": http,
                       "quads": st.quads, "log_file": f"logs/{tag}.log", "base_log_file": f"logs/dummy-r{round_no}.log",
                       "base_pid": base.proc.pid, "base_response_bytes": base.response_bytes}
        self.where.update(server=server.name, pair=k, round=round_no)
        self.progress.say(f"{tag}: starting (round {round_no}, {st.quads} quads)")
        self.ensure_space()
        t0 = time.monotonic()
        srv: pair.Running | None = None
        port = self.server_port()
        entry["port"] = port
        try:
            srv = pair.start(ctx, server, port, tag, reference_length=base.response_bytes, http=http)
            entry.update(pid=srv.proc.pid, response_bytes=srv.response_bytes, affinity=pair.affinity(srv),
                         warmup=srv.warmup, setup_s=round(time.monotonic() - t0, 3))
            pair.measure(ctx, base, srv, entry, st.quads, http)
            if server.name not in self.date_checked:
                pair.date_check(ctx, srv)
                self.date_checked.add(server.name)
            entry["status"] = "measured"
        except pair.PairFailed as e:
            entry.update(status="failed", phase=e.phase, reason=str(e))
            st.failed = f"{e.phase}: {e}"
            self.progress.say(f"{tag}: FAILED in {e.phase}: {e}")
        except (KeyboardInterrupt, Interrupted):
            self.stopped_at = dict(self.where)
            entry.update(status="interrupted", phase=self.where["phase"], reason="run interrupted")
            raise
        finally:
            self.where["phase"] = "stop"
            entry["exit_status"] = pair.stop(ctx, srv)
            if not wait_port_free(port):
                entry.setdefault("notes", []).append(f"port {port} still busy 10 s after stopping")
            total = time.monotonic() - t0
            entry["seconds"] = {"total": round(total, 3)}
            st.spent += total
            if "status" in entry:
                self.record(entry)
        if entry["status"] == "measured":
            self._learn(st, entry, total)

    def _learn(self, st: ServerState, entry: dict, total: float) -> None:
        """Reads the pair's blocks back (as the analysis will) and updates the server's schedule."""
        p = model.read_pair(self.dir, entry, self.s.block_requests)
        primary = "lean" if "lean" in self.s.clients else "ab"
        quads = p.quads(primary) or p.quads("lean")
        if not quads:
            return
        if p.reason:  # a block that does not count: the analysis marks the server invalid with this reason
            st.failed = p.reason
            self.progress.say(f"{entry['tag']}: INVALID: {p.reason}")
            return
        st.record(quads, total, entry["measure_s"], entry["quads"])
        self.progress.say(f"{entry['tag']}: {st.status(self.s)}; {total:.0f} s")

    def stop_all(self) -> None:
        self.ctx.clients.stop()
        for proc in list(self.ctx.running):
            proc.stop(timeout=3)
            self.ctx.running.remove(proc)


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


def _utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def main(argv: list[str] | None = None) -> int:
    args = build_parser(__doc__ or "").parse_args(argv)
    try:
        if args.list or os.environ.get("LATENCY_DIFF_LIST", "").strip().lower() in ("1", "true", "yes", "on"):
            for s in discover():
                print(f"{s.name:16} {s.threading:16} HTTP/{s.http}  {s.display}")
            return 0
        settings = resolve(args)
        last = settings.port + SERVER_PORTS
        for port in range(settings.port, last + 1):
            if not port_free(port):
                holder = port_holder(port)
                raise RunError(f"port {port} on 127.0.0.1 is already in use{' by ' + holder if holder else ''}; "
                               f"the run needs ports {settings.port} to {last}: stop that, or choose another "
                               "with --port")
        needed = [s.artifact for s in settings.servers] + [agent_jar(), lean.EXECUTABLE]
        missing = [str(p.relative_to(KIT_ROOT)) for p in dict.fromkeys(needed) if not p.is_file()]
        if missing:
            raise RunError(f"missing: {', '.join(missing)}; build with scripts/build.sh")
        lock = acquire_lock(settings.allow_concurrent)
        run_dir = new_run_dir(settings.results_dir)
    except RunError as e:
        print(f"latency-diff: error: {e}", file=sys.stderr)
        return 2
    java = java_executable()
    print_settings(settings, run_dir.name, java, sys.stderr)
    run = Run(settings, run_dir, java)
    # SIGINT too: a run started in the background by a script inherits SIGINT ignored, and `kill -INT` must
    # still stop it cleanly.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_interrupted)
    started = _utc()
    try:
        run.status("running", started_utc=started, pid=os.getpid())
        env = envinfo.collect(java, settings.to_dict())
        env["servers"] = [s.to_dict() for s in [run.dummy] + [st.server for st in run.states]]
        run.write_json("env.json", env)
        run.measure()
    except (KeyboardInterrupt, Interrupted) as e:
        reason = "interrupted by " + (str(e) if isinstance(e, Interrupted) else "SIGINT")
        run.stop_all()
        where = run.stopped_at or run.where
        run.status("incomplete", started_utc=started, reason=reason, stopped_at=where, ended_utc=_utc())
        print(f"\nlatency-diff: {reason} during {where['phase']} of {where['server'] or '-'} pair "
              f"{where['pair'] or '-'}. Finished pairs are kept in {run_dir} (marked incomplete); "
              f"analyze them with scripts/analyze.py {run_dir}", file=sys.stderr)
        return 130
    except OSError as e:  # a full disk, an unwritable results directory, a missing tool
        run.stop_all()
        where = run.stopped_at or run.where
        try:
            run.status("incomplete", started_utc=started, reason=f"error: {e}", stopped_at=where)
        except OSError:
            pass  # the disk may be what failed; the message below still says what happened
        print(f"latency-diff: error: {e} (during {where['phase']} of {where['server'] or '-'}); finished pairs "
              f"are kept in {run_dir}", file=sys.stderr)
        return 1
    except BaseException as e:
        run.stop_all()
        run.status("incomplete", started_utc=started, reason=f"driver error: {e!r}", stopped_at=run.where)
        raise
    finally:
        lock.close()
        shutil.rmtree(run.agent_dir, ignore_errors=True)
    run.status("complete", started_utc=started, ended_utc=_utc(), load_average_end=list(os.getloadavg()),
               seconds=round(time.monotonic() - run.progress.started, 1))
    print(f"\nlatency-diff: measurements done in {(time.monotonic() - run.progress.started) / 60:.1f} min; raw "
          f"results in {run_dir}", file=sys.stderr)
    from . import analyze  # needs the analysis packages (scipy), installed by run-all.sh
    return analyze.main([str(run_dir)])


if __name__ == "__main__":
    sys.exit(main())
