"""The warnings a run can raise: values whose text says what is wrong and what to do about it.

Evaluation (evaluate.py) only creates them with their figures; each class words itself, once, with
its remedy. A server's warnings name no server: the reports group a warning that several servers
share into one line that names them. Times are in ns.

Two sorts: a warning proper asks the reader to act (rerun, give a server more time or warm-up, read a
diff with a caveat before comparing it); a finding (`finding = True`) says what a server did that the
numbers alone do not show (a pair apart from its others, a client that sees it otherwise, CPU time
that does not match its round trip), where the run is sound and nothing is to be done about it. The
reports list them apart, so that a default run on a quiet machine warns only where a reader should act.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


class RunWarning:
    """A problem a reader of the run must know of."""

    #: A finding about the server, not a problem of the run (the module doc).
    finding: ClassVar[bool] = False

    @property
    def text(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.text


def _us(ns: float) -> str:
    return f"{ns / 1000:.2f}"


def p_text(p: float) -> str:
    """A p-value as a report shows it: three decimals, or under 0.001."""
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


# -- per server ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TooFewPairs(RunWarning):
    pairs: int

    @property
    def text(self) -> str:
        return (f"only {self.pairs} process pair: no interval; use the default profile or --min-pairs 3")


@dataclass(frozen=True)
class TargetMissed(RunWarning):
    #: The half-width the target judges (the ratio's, in us at the reference), the pairs, the target, the spread
    #: between processes, and the part of the half-width that the server's spread between runs alone takes (t x tau,
    #: in us at the reference; prior.py), which no number of pairs in one run narrows.
    half_width_ns: float
    pairs: int
    target_ns: float
    between_sd_ns: float | None
    between_runs_ns: float | None = None

    @property
    def text(self) -> str:
        spread = "" if self.between_sd_ns is None else f"; between-process spread {_us(self.between_sd_ns)} us"
        head = (f"precision target missed: ±{_us(self.half_width_ns)} us after {self.pairs} pairs (target "
                f"±{_us(self.target_ns)} us){spread}")
        if self.between_runs_ns is not None and self.between_runs_ns >= self.target_ns:
            return (f"{head}; its mean moves between runs on this kind of host by ±{_us(self.between_runs_ns)} us "
                    "(its earlier runs), more than the target: no --budget meets it here; compare it by ratio "
                    "within this run")
        return f"{head}; give it more --budget or --max-pairs, or a quieter machine"


@dataclass(frozen=True)
class SpeedModes(RunWarning):
    """A server whose fresh JVMs fall into two speed modes (prior.modes), in us at the run's reference."""
    finding = True
    fast_ns: float
    slow_ns: float
    slow_share: float
    pairs: int
    source: str

    @property
    def text(self) -> str:
        return (f"two speed modes, {_us(self.fast_ns)} and {_us(self.slow_ns)} us ({self.slow_share:.0%} of "
                f"{self.pairs} pairs {self.source} in the slow one): a fresh JVM lands in one or the other, so its row "
                "is the mean over fresh JVMs and its interval is as wide as the modes make it; a few pairs of one "
                "mode say little")


@dataclass(frozen=True)
class OutlierPair(RunWarning):
    finding = True
    pair: int
    value_ns: float
    median_ns: float
    pairs: int

    @property
    def text(self) -> str:
        return (f"process pair {self.pair} is an outlier ({_us(self.value_ns)} us against a median of "
                f"{_us(self.median_ns)} us over {self.pairs} pairs): one JVM compiled or laid out differently, or the "
                "machine changed; its pair is kept, so the interval shows it")


@dataclass(frozen=True)
class ClientsDisagree(RunWarning):
    finding = True
    ab_ns: float
    lean_ns: float
    #: The lean client's plain (untrimmed) mean diff, when it sides with ab's (nearer it than the headline, intervals
    #: overlapping): then rare slow requests, which the headline's trimmed mean leaves out and ab's mean keeps,
    #: explain the gap.
    lean_plain_ns: float | None = None

    @property
    def text(self) -> str:
        head = (f"ab and the lean client disagree on the diff ({_us(self.ab_ns)} against {_us(self.lean_ns)} us, "
                "intervals apart): ")
        if self.lean_plain_ns is not None:
            return head + (f"the lean client's plain mean ({_us(self.lean_plain_ns)} us) agrees with ab, so the gap is "
                           "rare slow requests, which the headline's 1%-trimmed mean leaves out (see the tail in the "
                           "report); compare servers by the headline, and read the tail for the slow requests")
        return head + ("ab leaves more time between requests (its own work) and starts a fresh connection per "
                       "block, and this server's cost per request depends on that (a poller that parks between "
                       "requests, a thread per connection); compare servers by one client's diffs, the headline's")


@dataclass(frozen=True)
class CpuInTail(RunWarning):
    finding = True
    cpu_ns: float
    diff_ns: float
    plain_ns: float

    @property
    def text(self) -> str:
        return (f"the CPU-time diff ({_us(self.cpu_ns)} us per request, /proc) is far from the latency diff "
                f"({_us(self.diff_ns)} us) but near the plain-mean diff ({_us(self.plain_ns)} us): the server spends "
                "it in rare slow requests, which the trimmed mean leaves out; see the tail (p99.9) in the report")


@dataclass(frozen=True)
class CpuGap(RunWarning):
    """Under shared pinning a round trip is the client's, the server's and the kernel's CPU work on one CPU, so the
    server's extra round trip should be its extra CPU time. This one's differs in every pair (evaluate._cpu_check)."""
    finding = True
    cpu_ns: float
    diff_ns: float
    #: Its pairs, and the mean allowance per pair (the /proc tick resolution plus the check's slack).
    pairs: int = 0
    allowed_ns: float = 0.0

    @property
    def text(self) -> str:
        head = (f"the CPU-time diff ({_us(self.cpu_ns)} us per request, /proc) is far from the latency diff "
                f"({_us(self.diff_ns)} us) in each of its {self.pairs} pairs (by more than ±{_us(self.allowed_ns)} "
                "us): ")
        if self.cpu_ns < self.diff_ns:
            why = ("the server waits during a request (a timer, a hand-off the CPU idles through), or leaves work "
                   "that /proc charges to neither process (kernel work in interrupts, or in the client's name: more "
                   "packets per response), or the VM took the time")
        else:
            why = ("the server spends CPU that neither its trimmed nor its plain mean round trip holds (threads "
                   "working outside the requests, or before and after the measured phase)")
        return head + why + ("; rerun on a quieter machine: a gap that stays is the server's, and its diff is then "
                             "more (or less) than its CPU work per request")


@dataclass(frozen=True)
class RunLengthShift(RunWarning):
    """The server's ratio at 4x the run length differs from its ratio, significantly and by more than its target:
    how often the client turns between the two processes moves this server's diff (a thread pool that parks,
    a poller that wakes), so its diff belongs to the run length as much as to the server."""
    shift_ns: float
    low_ns: float
    high_ns: float
    run_length: int
    target_ns: float

    @property
    def text(self) -> str:
        return (f"the diff moves with the run length: {_signed(self.shift_ns)} us [{_us(self.low_ns)}, "
                f"{_us(self.high_ns)}] at runs of {self.run_length:,} (the run-length check; target "
                f"±{_us(self.target_ns)} us): the diff holds for the run length measured only; compare such servers "
                "at several run lengths (bench.sh sensitivity)")


def _signed(ns: float) -> str:
    return f"{ns / 1000:+.2f}"


@dataclass(frozen=True)
class JitBusy(RunWarning):
    jit_ms: float
    wall_s: float
    share: float

    @property
    def text(self) -> str:
        return (f"the JIT compiler threads used {self.jit_ms:.0f} ms of CPU during {self.wall_s:.1f} s of "
                f"measuring (over {self.share:.0%}): warm-up was too short for this server; use more --warmup")


@dataclass(frozen=True)
class NoAgent(RunWarning):
    error: str

    @property
    def text(self) -> str:
        return f"no allocation/GC numbers from the agent: {self.error}"


# -- per run ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NoBaseline(RunWarning):
    @property
    def text(self) -> str:
        return "the dummy baseline has no valid pair, so no diff can be computed; see the reasons below"


@dataclass(frozen=True)
class NullPairBiased(RunWarning):
    mean_ns: float
    low_ns: float
    high_ns: float
    baseline: str = "dummy"

    @property
    def text(self) -> str:
        return (f"the null pair ({self.baseline} against a second {self.baseline} process) shows a difference: "
                f"{_us(self.mean_ns)} us "
                f"[{_us(self.low_ns)}, {_us(self.high_ns)}], which should contain 0: the pairing is biased by "
                "something (port, order, a busy machine); rerun on a quieter machine before trusting the diffs")


@dataclass(frozen=True)
class FloorRatioUnstable(RunWarning):
    mean: float
    rel_sd: float
    limit: float

    @property
    def text(self) -> str:
        return (f"the floor's round trip over the dummy's varies from pair to pair (ratio {self.mean:.3f}, relative "
                f"sd {self.rel_sd:.1%}, more than {self.limit:.1%}): the dummies themselves ran at different speeds "
                "(JIT outcomes), and the scaling by the dummy carries that into every diff; rerun, or run with more "
                "pairs so that it averages out")


@dataclass(frozen=True)
class RunIncomplete(RunWarning):
    status: str
    reason: str | None

    @property
    def text(self) -> str:
        return (f"the run is {self.status}" + (f" ({self.reason})" if self.reason else "")
                + ": servers after the stop were not measured, or have fewer pairs")


@dataclass(frozen=True)
class NotPinned(RunWarning):
    @property
    def text(self) -> str:
        return "client and servers were not pinned to CPUs: expect more noise (use --pinning shared or split)"


@dataclass(frozen=True)
class ScalingNotProportional(RunWarning):
    """The scaling divides each pair by its own baseline round trip: right when a slower machine multiplies the
    server's and the dummy's round trips alike. If a slowdown instead adds the same time to both (a stall, a busy
    neighbour on the measured CPU), a pair's ratio falls as its dummy's round trip rises, and a server measured while
    the machine was slow gets a smaller scaled diff; if it slows the server more than the dummy (a neighbour that
    evicts the server's larger working set), a larger one. Evaluation (evaluate.scaling) regresses each pair's
    scaled diff on its baseline round trip, pooled over the run's servers with each one's mean removed, as an
    elasticity (0: multiplies alike; -1: adds alike); this warning says that elasticity is significant (a permutation
    test) and moves a server's diff, at its pairs' mean baseline, by more than the server's precision target."""
    slope: float
    p: float
    server: str
    shift_ns: float
    target_ns: float
    offset: float

    @property
    def text(self) -> str:
        return (f"the scaled diffs move with the pair's baseline round trip (elasticity {self.slope:+.2f}, "
                f"{p_text(self.p)}; 0 when a slower machine multiplies the server's and the dummy's round trips "
                "alike, as the scaling assumes, -1 when it adds the same time to both): "
                f"{self.server}'s pairs ran with dummies {self.offset:+.1%} from the reference, which moves its "
                f"diff by {_us(self.shift_ns)} us, more than its target ±{_us(self.target_ns)} us; the machine's "
                "speed changed in a way that slowed the server and the dummy unlike each other (stalls, a "
                "neighbour); compare its unscaled diff, and rerun on a quieter machine")


@dataclass(frozen=True)
class BusyMachine(RunWarning):
    """Other processes than the run's own (the driver, its clients, its servers) took CPU time during the run
    (latency_diff/measure/busy.py samples it): on the measured CPU they delay requests, on the other one they take the
    caches and memory bandwidth the measured processes share."""
    share: float
    worst_share: float
    window_s: float
    limit: float

    @property
    def text(self) -> str:
        return (f"the machine was busy during the run: other processes took {self.share:.0%} of its CPU time, and "
                f"{self.worst_share:.0%} in its busiest {self.window_s:.0f} s (more than {self.limit:.0%}); stop "
                "them (a build, another benchmark, a backup) and rerun on a quiet machine")


@dataclass(frozen=True)
class HostSpreadUnknown(RunWarning):
    """A table merged from shards (merge.py) whose anchors give no spread between hosts: none was measured valid on
    two shards or more."""
    shards: int

    @property
    def text(self) -> str:
        return (f"the hosts' spread is not known: no anchor was measured on two or more of the {self.shards} shards "
                "with an interval, so rows of different shards are compared as if their hosts were alike, and a mark "
                "or a rank between them may be the hosts'; shard with anchors (run-all.sh --shard I/N --anchors "
                "NAME,NAME), measured on every shard")


@dataclass(frozen=True)
class FileNote(RunWarning):
    note: str

    @property
    def text(self) -> str:
        return self.note
