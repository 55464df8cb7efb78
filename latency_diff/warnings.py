"""The warnings a run can raise: values whose text says what is wrong and what to do about it.

Evaluation (evaluate.py) only creates them with their figures; each class words itself, once, with
its remedy. A server's warnings name no server: the reports group a warning that several servers
share into one line that names them. Times are in ns.
"""

from __future__ import annotations

from dataclasses import dataclass


class RunWarning:
    """A problem a reader of the run must know of."""

    @property
    def text(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.text


def _us(ns: float) -> str:
    return f"{ns / 1000:.2f}"


# -- per server ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TooFewPairs(RunWarning):
    pairs: int

    @property
    def text(self) -> str:
        return (f"only {self.pairs} process pair: no interval; use the default profile or --min-pairs 3")


@dataclass(frozen=True)
class TargetMissed(RunWarning):
    half_width_ns: float
    pairs: int
    target_ns: float
    between_sd_ns: float | None

    @property
    def text(self) -> str:
        spread = "" if self.between_sd_ns is None else f"; between-process spread {_us(self.between_sd_ns)} us"
        return (f"precision target missed: ±{_us(self.half_width_ns)} us after {self.pairs} pairs (target "
                f"±{_us(self.target_ns)} us){spread}; give it more --budget or --max-pairs, or a quieter machine")


@dataclass(frozen=True)
class OutlierPair(RunWarning):
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
class ScalingDisagrees(RunWarning):
    scaled_ns: float
    unscaled_ns: float

    @property
    def text(self) -> str:
        return (f"the scaled and the unscaled diff disagree ({_us(self.scaled_ns)} against {_us(self.unscaled_ns)} "
                "us, intervals apart): the machine's speed moved between this server's pairs, or its dummies "
                "differed; the scaled diff is the one that allows for it, but rerun on a quieter machine to be sure")


@dataclass(frozen=True)
class CpuInTail(RunWarning):
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
    cpu_ns: float
    diff_ns: float

    @property
    def text(self) -> str:
        return (f"the CPU-time diff ({_us(self.cpu_ns)} us per request, /proc) is far from the latency diff "
                f"({_us(self.diff_ns)} us): time went to something neither process was charged for (the VM, "
                "interrupts) or the server works off the request path; rerun on a quieter machine")


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
                f"sd {self.rel_sd:.1%}, more than {self.limit:.0%}): the dummies themselves ran at different speeds "
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
class BusyMachine(RunWarning):
    load: float
    cpus: int

    @property
    def text(self) -> str:
        return (f"the machine was busy when the run started (1-minute load {self.load:.2f} on {self.cpus} CPUs): "
                "rerun on a quiet machine")


@dataclass(frozen=True)
class FileNote(RunWarning):
    note: str

    @property
    def text(self) -> str:
        return self.note
