"""The run loop: rounds of process pairs, each server measured beside a baseline dummy, on two lanes.

The run goes in rounds. Each round has a fresh baseline dummy, and each server of the round gets a
fresh process beside it, pinned alike (a process pair), measured by the interleaved lean client
(and ab's ABBA quads); a round also measures the null pair (the dummy against a second dummy
process) and the baseline ladder (floor, NIO dummy). Every server gets --min-pairs pairs; then
servers whose diff is not yet within the precision target get more, while their --budget lasts
(schedule.py).

Two lanes (lanes.py): the *measuring lane* (this module's main thread) measures pairs on the measured
CPU; the *preparing lane* (a worker thread) starts, checks and warms up the next processes on another CPU
meanwhile, up to LOOKAHEAD of them ahead, so that a pair's cost is what the slower lane spends on
it, not their sum. Without a second CPU (split or no pinning) the measuring lane prepares each
process itself, just before it needs it. A server is scheduled a pair or two before its previous
one is counted; a process that is no longer wanted is not started, its preparation under way is aborted, and
a prepared one is stopped unmeasured (each on record in the logs as "skipped").

Run's jobs, one method each: the rounds (items), the measuring loop (measure), a round's dummy (_new_round),
one pair (_one_pair), the windows after it (_after_pair), counting it in the schedule (_count), progress
(_report), and the run's record (status, describe, know_priors).
"""

from __future__ import annotations

import dataclasses
import errno
import json
import shutil
import statistics
import tempfile
import time
from collections import Counter, deque
from collections.abc import Iterator
from concurrent import futures
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from .. import KIT_ROOT, envinfo, prior, rundir
from ..records import NULL_PAIR, PairRecord
from ..servers import Server
from ..settings import Settings
from . import conformance, pair, windows
from .clients import Clients
from .lanes import Lanes
from .ports import Ports, wait_free
from .progress import Progress
from .schedule import Schedule, ServerState

MIN_FREE_BYTES = 1 << 20  # a pair's records are ~10-100 KB compressed, a server log a few KB
#: Processes the preparing lane may have ready (or under way) beyond the one being measured.
LOOKAHEAD = 2


class Interrupted(Exception):
    """SIGINT, SIGTERM or SIGHUP arrived: stop everything, keep what is finished."""


def null_server(baseline: Server) -> Server:
    """The null pair's second baseline process: the baseline byte for byte, under a name of its own in the results."""
    return dataclasses.replace(baseline, name=NULL_PAIR, display=f"{baseline.display} again (null pair)",
                               baseline=False, reference=True, alias_of=baseline.wire_name,
                               notes=f"A second {baseline.name} process against the round's: its diff must be 0 "
                                     "within its interval, or the pairing itself is biased.")


@dataclass
class Item:
    """A process the measuring lane will need: a round's baseline dummy, or a server's process of a pair."""
    round: int
    server: Server
    #: Its name in the run's logs and records, unique: dummy-r<round>, or <server>-p<n> for the server's n-th process.
    tag: str
    state: ServerState | None = None
    #: The stage of its preparation (server, phase): what an interrupt reports while the measuring lane waits for it.
    stage: dict = field(default_factory=dict)


class Run:
    def __init__(self, settings: Settings, run_dir: Path, java: str):
        self.settings = settings
        self.dir = run_dir
        self.writer = rundir.Writer(run_dir)
        self.stage: dict = {"server": None, "pair": None, "round": None, "phase": "setup"}
        self.waiting_for: Item | None = None
        self.stopped_at: dict | None = None
        self.progress = Progress()
        # The agents' sockets and the request files: a short private path (a Unix socket path has at most 107 bytes).
        self.tmp = Path(tempfile.mkdtemp(prefix="latency-diff-"))
        self.requests = {http: conformance.request_bytes(http, "127.0.0.1", settings.port) for http in ("1.0", "1.1")}
        files = {}
        for http, data in self.requests.items():
            files[http] = self.tmp / f"request-http{http}.bin"
            files[http].write_bytes(data)
        self.ctx = pair.Context(settings, self.writer, java, self.tmp,
                                measure_clients=Clients(settings.client_cpu, files),
                                prepare_clients=Clients(settings.prepare_cpu if settings.prepare_cpu is not None
                                                        else settings.server_cpu, files),
                                prepare_cpu=settings.prepare_cpu if settings.prepare_cpu is not None
                                else settings.server_cpu, measure_cpu=settings.server_cpu)
        self.ports = Ports(settings.port)
        dummy = next(x for x in settings.servers if x.baseline)
        measured = [null_server(dummy)] + [x for x in settings.servers if not x.baseline]
        self.schedule = Schedule([ServerState(x, settings.segments) for x in measured])
        self.dummy = dummy
        #: Whether the schedule has the servers' priors (know_priors, at the first measured pair).
        self.priors_known = False
        self.date_checked: set[str] = set()
        #: Servers whose work per request has been counted (in a counting window after one of their pairs).
        self.counted: Counter[str] = Counter()
        self.profiled: set[str] = set()
        self.lanes = Lanes(self.ctx, ahead=settings.prepare_cpu is not None, lend=settings.lend_cpu)
        #: Measuring-lane time waiting for a round's dummy, billed to the round's first pair.
        self.carry_s = 0.0

    # -- the run's record --------------------------------------------------------------------------
    def status(self, status: str, **extra) -> None:
        self.writer.run({"run_id": self.dir.name, "status": status, **extra, "settings": self.settings.to_dict(),
                         "requests": {k: v.decode("latin-1") for k, v in self.requests.items()},
                         "env": self.env, "servers": self.servers_meta,
                         "priors": {k: v.to_dict() for k, v in self.schedule.priors.items()},
                         "stops": self.schedule.stops()})

    def describe(self, java: str) -> None:
        self.env = envinfo.collect(java)
        self.servers_meta = [s.to_dict() for s in [self.dummy] + [st.server for st in self.schedule.states]]

    def know_priors(self, ref_ns: float) -> None:
        """What the kit knows of each server's spread on this kind of host in this state of it (its earlier runs at a
        reference round trip near the run's first pair's: prior.STATE_BAND), or the shipped prior; once, at the
        first measured pair, before any look of the stopping rule."""
        self.priors_known = True
        self.schedule.priors = prior.for_servers([st.server.name for st in self.schedule.states],
                                                 [self.settings.results_dir, KIT_ROOT / "results"],
                                                 self.settings.to_dict(), self.env, leave_out=self.dir.name,
                                                 ref_ns=ref_ns)
        known = sorted({p.runs for p in self.schedule.priors.values() if p.source == "history"})
        self.progress.say(f"what is known before the pairs: the servers' earlier runs on this host at a reference "
                          f"round trip within {prior.STATE_BAND:.0%} of {ref_ns / 1000:.2f} us ("
                          + (("" if len(known) == 1 else f"{known[0]} to ") + f"{known[-1]} runs a server" if known
                             else "none: the shipped prior")
                          + ")")

    def ensure_space(self) -> None:
        """A full disk would cut a client's output short and look like the server's fault: stop before that."""
        free = shutil.disk_usage(self.dir).free
        if free < MIN_FREE_BYTES:
            raise OSError(errno.ENOSPC, f"only {free // 1024} KiB free for the results (need "
                          f"{MIN_FREE_BYTES // 1024} KiB)", str(self.dir))

    # -- the rounds ---------------------------------------------------------------------------------
    def items(self) -> Iterator[Item]:
        round_no = 0
        while True:
            round_no += 1
            todo = self.schedule.next_round(self.settings, round_no)
            if not todo:
                return
            self.progress.say(f"round {round_no}: {len(todo)} server(s): {', '.join(x.server.name for x in todo)}")
            yield Item(round_no, self.dummy, f"{self.dummy.name}-r{round_no}")
            for st in todo:
                st.processes += 1
                yield Item(round_no, st.server, f"{st.server.name}-p{st.processes}", st)

    def prepare(self, item: Item) -> pair.Prepared:
        """On the preparing lane: start, check and warm up the item's process."""
        reference = None if item.state is None else self.base_length.get(item.round)
        http = self.settings.server_http(item.server) if item.state else "1.0"
        return pair.prepare(self.ctx, item.server, self.ports.take(), item.tag, reference_length=reference,
                            http=http, stage=item.stage,
                            say=lambda t: self.progress.say(f"(preparing) {t}", transient=True))

    def measure(self) -> None:
        self.base_length: dict[int, int | None] = {}
        items = self.items()
        queue: deque[tuple[Item, Future]] = deque()
        base: pair.Prepared | None = None
        base_failed: str | None = None

        def fill() -> None:
            while len(queue) <= LOOKAHEAD:
                item = next(items, None)
                if item is None:
                    return
                # Bind the item now: the lambda runs later, on the preparing lane.
                queue.append((item, self.lanes.submit(lambda it=item: self.prepare(it))))

        try:
            fill()
            while queue:
                item, future = queue.popleft()
                if item.state is None:
                    base, base_failed = self._new_round(item, future, base)
                    fill()
                    continue
                fill()
                self._one_pair(item, future, base, base_failed)
        except BaseException:
            self.ctx.stop_everything()  # first, so that the preparing lane is not waited for with a process held up
            raise
        finally:
            if base is not None:
                pair.stop(self.ctx, base.proc, base.record.tag)
            for _, future in queue:  # prepared, never measured
                future.cancel()
            self.lanes.shutdown()
            for _, future in queue:
                if future.done() and not future.cancelled() and future.exception() is None:
                    p = future.result()
                    pair.stop(self.ctx, p.proc, p.record.tag)

    def _wait(self, item: Item, future: Future) -> pair.Prepared:
        """The item's prepared process; an interrupt while waiting is reported where the preparation was."""
        self.waiting_for = item
        try:
            return self.lanes.wait(future)
        except (KeyboardInterrupt, Interrupted):
            self.stopped_at = self.stopped_at or dict(item.stage)
            raise
        finally:
            self.waiting_for = None

    def _new_round(self, item: Item, future: Future, old: pair.Prepared | None
                   ) -> tuple[pair.Prepared | None, str | None]:
        """The round's dummy replaces the last round's; (the new dummy, or None and why it failed)."""
        self.ensure_space()
        self.stage.update(server=self.dummy.name, round=item.round, pair=None, phase="wait")
        t0 = time.monotonic()
        try:
            base = self._wait(item, future)
            if old is not None:
                self._stop_later(old, None)
            pair.hand_over(self.ctx, base)
        except pair.PairFailed as e:
            if old is not None:
                pair.stop(self.ctx, old.proc, old.record.tag)
            self.base_length[item.round] = None
            self.progress.say(f"round {item.round}: the baseline dummy FAILED in {e.phase}: {e}")
            return None, f"the baseline dummy failed in {e.phase}: {e}"
        finally:
            self.carry_s += time.monotonic() - t0
        self.base_length[item.round] = base.record.response_bytes
        return base, None

    def _one_pair(self, item: Item, future: Future, base: pair.Prepared | None, base_failed: str | None) -> None:
        st, settings = item.state, self.settings
        assert st is not None
        k = st.pairs + 1 + (1 if st.failed else 0)
        http = settings.server_http(st.server)
        rec = PairRecord(server=st.server.name, pair=k, status="measured", round=item.round, http=http)
        self.stage.update(server=st.server.name, pair=k, round=item.round, phase="wait")
        t0, carried, self.carry_s = time.monotonic(), self.carry_s, 0.0
        srv: pair.Prepared | None = None
        units: list = []
        seconds: dict[str, float] = {}
        skipped = False
        try:
            # Met its target, spent its budget or failed since it was scheduled: a process not yet prepared is not
            # started at all; one being prepared is aborted; one already prepared is stopped unmeasured.
            skipped = not self.schedule.wants_more(st, settings)
            if skipped and future.cancel():
                self._skipped(item, "not started", 0.0)
                return
            if skipped:
                # Under way on the other lane: killed rather than waited for (its warm-up can take 10 s and more). A
                # preparation that fails, killed or on its own, is no failure of a server that has stopped already.
                aborted = pair.abort(self.ctx, item.tag)
                futures.wait([future])
                seconds["wait"] = time.monotonic() - t0 + carried
                error = future.exception()
                if isinstance(error, pair.PairFailed) or (aborted and isinstance(error, Exception)):
                    self._skipped(item, "aborted" if aborted else f"its preparation failed ({error})", seconds["wait"])
                    return
            srv = self._wait(item, future)
            seconds["wait"] = time.monotonic() - t0 + carried
            if skipped:
                self._skipped(item, "stopped unmeasured", seconds["wait"])
                return
            if base is None:
                raise pair.PairFailed("baseline", base_failed or "no baseline dummy")
            self.ensure_space()
            rec.base, rec.process = base.record, srv.record
            held = settings.hold - (time.monotonic() - srv.ready_at)
            if held > 0:  # --hold: the method check of how long a prepared process sits idle
                self.stage["phase"] = "hold"
                time.sleep(held)
            t1 = time.monotonic()
            self.stage["phase"] = "hand-over"
            pair.hand_over(self.ctx, srv)
            seconds["hand_over"] = time.monotonic() - t1
            # How long since each process's warm-up ended: the server's sat idle (a prepared process waits while the
            # pairs before it measure); the round's dummy served the round's earlier pairs meanwhile.
            now = time.monotonic()
            seconds["since_warmup"], seconds["base_since_warmup"] = now - srv.ready_at, now - base.ready_at
            plan = pair.Plan(segments=self.schedule.segments(st, self.lanes.recent()), ab_quads=settings.ab_quads)
            self.lanes.prepare_times.append(srv.record.prepare_s or 0.0)
            units = pair.measure(self.ctx, base, srv, rec, plan, http, self.stage,
                                 lambda t: self.progress.say(t, transient=True))
            seconds["measure"] = rec.seconds["measure"]
            self._after_pair(st.server, base, srv, rec, http, seconds)
        except pair.PairFailed as e:
            rec.status, rec.phase, rec.reason = "failed", e.phase, str(e)
            st.failed = f"{e.phase}: {e}"
            self.progress.say(f"{item.tag}: FAILED in {e.phase}: {e}")
        except BaseException as e:  # an interrupt, a full disk: the run stops, and the pair is on record as stopped
            self.stopped_at = self.stopped_at or dict(self.stage)
            rec.status, rec.phase = "interrupted", self.stopped_at.get("phase")
            rec.reason = "run interrupted" if isinstance(e, KeyboardInterrupt | Interrupted) else f"run stopped: {e}"
            raise
        finally:
            t2 = time.monotonic()
            self.stage["phase"] = "stop"
            seconds.setdefault("wait", t2 - t0 + carried)
            seconds["total"] = t2 - t0 + carried
            rec.seconds = {k: round(v, 3) for k, v in seconds.items()}
            # counting and profiling are not the server's precision budget
            st.spent += seconds["total"] - seconds.get("count", 0.0) - seconds.get("profile", 0.0)
            if srv is not None and not skipped:
                rec.process = srv.record
            if srv is not None:
                self._stop_later(srv, None if skipped else rec)
            elif not skipped:
                self.writer.pair(rec)
        if rec.status == "measured":
            self._count(st, rec, units)

    def _after_pair(self, server: Server, base: pair.Prepared, srv: pair.Prepared, rec: PairRecord, http: str,
                    seconds: dict[str, float]) -> None:
        """What follows a measured pair on the same processes, its time in `seconds`: the server's Date header checked
        (once a server), its work per request counted (after its first --count-pairs pairs), its CPU time profiled (once
        a Java server). None of it is the server's precision budget."""
        settings, name = self.settings, server.name
        say = lambda t: self.progress.say(t, transient=True)  # noqa: E731
        if name not in self.date_checked:
            t0 = time.monotonic()
            pair.date_check(srv, self.stage)
            self.date_checked.add(name)
            seconds["date_check"] = time.monotonic() - t0
        if settings.count_requests and self.counted[name] < settings.count_pairs:
            t0 = time.monotonic()
            self.counted[name] += 1  # a window a pair of its first count_pairs, counted or not
            windows.count(self.ctx, base, srv, rec, http, self.stage, say)
            seconds["count"] = time.monotonic() - t0
        if settings.profile_requests and server.is_java and name not in self.profiled:
            t0 = time.monotonic()
            self.profiled.add(name)  # one window a server (rec.profile says how it went)
            windows.profile(self.ctx, base, srv, rec, http, self.stage, say)
            seconds["profile"] = time.monotonic() - t0

    def _skipped(self, item: Item, how: str, wait_s: float) -> None:
        """A process prepared ahead for a server that stopped meanwhile: said, and on record with the wait it cost."""
        st = item.state
        assert st is not None
        self.progress.say(f"{item.tag}: no longer needed ({self.schedule.status(st, self.settings)}); {how}")
        self.writer.log("skipped", item.tag, json.dumps({"how": how, "wait_s": round(wait_s, 3)}))

    def _stop_later(self, p: pair.Prepared, rec: PairRecord | None) -> None:
        """Stops a finished process, then writes its pair's record (with the exit status); in the background when
        there is a preparing lane (the process is moved off the measured CPU first)."""
        def stop() -> None:
            t0 = time.monotonic()
            p.record.exit_status = pair.stop(self.ctx, p.proc, p.record.tag)
            if rec is not None:
                if self.lanes.reaper is None:  # stopped on the measuring lane: its time is the pair's
                    rec.seconds["stop"] = round(time.monotonic() - t0, 3)
                    rec.seconds["total"] = round(rec.seconds["total"] + rec.seconds["stop"], 3)
                if not wait_free(p.port):
                    rec.notes.append(f"port {p.port} still busy 10 s after stopping")
                self.writer.pair(rec)
        if not self.lanes.in_background(stop):
            stop()

    def _count(self, st: ServerState, rec: PairRecord, units: list) -> None:
        """Counts a measured pair in the server's schedule; one that yielded no unit fails its server (the analysis
        finds it invalid too), so that no server takes pairs for ever."""
        if not units:
            st.failed = "measure: the pair yielded no complete unit"
            self.progress.say(f"{st.server.name}-p{rec.pair}: FAILED: the pair yielded no complete unit")
            return
        ref = self.schedule.reference_ns() or statistics.fmean(u.base_ns for u in units)
        if not self.priors_known:
            self.know_priors(ref)
        st.record(units, rec.seconds["total"], rec.seconds.get("measure", 0.0), ref,
                  windows_s=rec.seconds.get("count", 0.0) + rec.seconds.get("profile", 0.0),
                  prepare_s=rec.process.prepare_s if rec.process else None)
        self._report(st, rec)

    def _report(self, st: ServerState, rec: PairRecord) -> None:
        """A counted pair on the terminal, and the time left on the terminal and on record (so that the estimate can
        be set against the time the run then took)."""
        self.progress.say(f"{st.server.name}-p{rec.pair}: {self.schedule.status(st, self.settings)}; "
                          f"{rec.seconds['total']:.0f} s ({rec.seconds.get('measure', 0):.0f} s measuring)")
        left = self.progress.left = self.schedule.seconds_left(self.settings)
        self.writer.log("progress", f"{st.server.name}-p{rec.pair}", json.dumps(
            {"elapsed_s": round(time.monotonic() - self.progress.started, 1),
             "left_s": None if left is None else round(left[0], 1),
             "at_most_s": None if left is None else round(left[1], 1)}))

    def stop_all(self) -> None:
        self.ctx.stop_everything()
        self.lanes.shutdown()
        self.ctx.stop_everything()  # what the preparing lane started while it was stopping

    def close(self) -> None:
        self.writer.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

