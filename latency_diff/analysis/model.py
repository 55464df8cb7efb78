"""The result model of a run: the types every report is rendered from (evaluate.py fills them).

Times are in nanoseconds (the field names say `_ns`); the reports convert to microseconds. A diff is
what a server adds to a round trip over the baseline dummy. The headline is *scaled*: each pair's
ratio (server / dummy) times the run's reference baseline round trip (`ref_ns`, the median of the
run's pairs' baseline round trips), so that a machine that ran faster or slower during a pair does not
move it (paired.py); the unscaled diff is kept beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..histogram import Histogram
from ..paired import PairEstimate, Unit
from ..records import NULL_PAIR
from ..stats import Summary
from .warnings import RunWarning


def unit(name: str, default=None):
    """A field whose values are in `name` (ns, bytes, ms, s): summary.json names it <field>_<unit>."""
    return field(default=default, metadata={"unit": name})


def internal(**kw):
    """A field the exports leave out (raw data: units, histograms)."""
    return field(metadata={"export": False}, **kw)


@dataclass
class Costs:
    """One process's costs per request over a pair's measured phase."""
    requests: int
    cpu_user_ns: float
    cpu_system_ns: float
    jit_cpu_ms: float
    wall_s: float
    #: The JIT compiler threads' share of the CPU per request (they compile, off the request path).
    jit_ns: float = 0.0
    alloc_bytes: float | None = None
    gc_count: int | None = None
    gc_time_ms: int | None = None
    jvm_error: str | None = None
    #: One /proc clock tick in ns: the resolution of utime and stime, which cpu_user_ns and cpu_system_ns divide
    #: by the requests (0: not known).
    tick_ns: float = 0.0

    @property
    def cpu_ns(self) -> float:
        return self.cpu_user_ns + self.cpu_system_ns

    @property
    def request_cpu_ns(self) -> float:
        """CPU per request outside the JIT compiler threads: what the cross-check compares with the latency diff."""
        return self.cpu_ns - self.jit_ns


@dataclass
class Pair:
    """One process pair of a server, as measured."""
    pair: int
    status: str
    round: int | None = None
    reason: str | None = None
    phase: str | None = None
    http: str = "1.0"
    #: Per client: its units (segments of the interleaved client, or ABBA quads of blocks), in order.
    units: dict[str, list[Unit]] = internal(default_factory=dict)
    #: Per client (lean): the round-trip histograms of each process, one per block or segment side.
    histograms: dict[str, dict[str, list[Histogram]]] = internal(default_factory=dict)
    costs: dict[str, Costs] = internal(default_factory=dict)
    #: The run-length check's units (the lean client at a longer run length, the same processes), if it ran.
    check_units: list[Unit] = internal(default_factory=list)
    #: The run-length check's run length.
    check_run: int | None = None
    #: Where its time on the measured CPU went (wait, hand_over, measure, stop, total), in seconds.
    seconds: dict[str, float] = field(default_factory=dict, metadata={"unit": "s"})
    #: Its counting window's work per request, per process ("base", "server"; counting.per_request), if it had one,
    #: and why the window does not count, if so.
    work: dict[str, dict] = internal(default_factory=dict)
    work_problem: str | None = internal(default=None)
    #: Its profiling window's record (records.PairRecord.profile) and collapsed stacks, if it had one.
    profile: dict | None = internal(default=None)
    stacks: str | None = internal(default=None)
    #: Whether the run kept its profile's flame graph (a committed run may leave its profiles.jsonl.xz out).
    flamegraph: bool = internal(default=False)

    @property
    def valid(self) -> bool:
        return self.status == "measured" and self.reason is None

    def estimate(self, client: str) -> PairEstimate | None:
        from ..paired import estimate
        units = self.units.get(client)
        return estimate(units) if units else None


@dataclass
class ClientResult:
    """One client's numbers for one server, over its valid pairs."""
    client: str
    #: The reference baseline round trip the diffs are scaled to (the run's, for this client).
    ref: float = unit("ns")
    #: The diff at ref: mean of the pairs' scaled diffs, Student-t 95% interval over pairs.
    diff: Summary = unit("ns")
    #: Server round trip over the dummy's: mean of the pairs' median unit ratios.
    ratio: Summary = None  # type: ignore[assignment]
    #: The diff without the scaling: mean of the pairs' median unit diffs.
    unscaled_diff: Summary = unit("ns")
    #: The study's plain mean (elapsed or untrimmed time over requests), paired the same way, unscaled.
    plain_diff: Summary = unit("ns")
    #: The server's and its baselines' robust round trips, and the server's plain one (means over pairs).
    rtt: Summary = unit("ns")
    base_rtt: Summary = unit("ns")
    plain_rtt: Summary = unit("ns")
    #: Per pair: the scaled and the unscaled diff, and the units it had.
    estimates: list[float] = field(default_factory=list, metadata={"unit": "ns"})
    unscaled_estimates: list[float] = field(default_factory=list, metadata={"unit": "ns"})
    #: Per pair: its ratio, server over dummy round trip (the median over its units); estimates = (ratio - 1) x ref.
    #: Free of the reference, so two runs compare by these (analyze.py compare).
    ratios: list[float] = field(default_factory=list)
    units: list[int] = field(default_factory=list)
    #: The ratio's sd over pairs as measured, and which bound its interval took instead when larger (stopping.py):
    #: "pairs" (its own), "within" (its units' noise), "run" (the run's relative spread) or "target" (the fixed width).
    own_ratio_sd: float | None = None
    sd_bound: str | None = None
    #: The interval as the stopping rule computed it (stopping.Interval), for whether the target was met.
    interval: object = internal(default=None)
    #: Pooled within-pair standard deviation of one unit's scaled diff, and the between-pair component.
    within_sd: float | None = unit("ns")
    between_sd: float | None = unit("ns")
    #: lean only: percentiles of every server segment or block together, of its baselines', and the differences.
    percentiles: dict[str, int] | None = unit("ns")
    base_percentiles: dict[str, int] | None = unit("ns")
    percentile_diffs: dict[str, int] | None = unit("ns")
    histogram: Histogram | None = internal(default=None)


@dataclass
class ServerResult:
    name: str
    display: str
    threading: str
    library: str | None
    library_version: str | None
    notes: str
    jvm_flags: list[str]
    baseline: bool
    reference: bool = False
    http: str = "1.0"
    #: The server a framework runs on (its own row in the run, when measured), from the metadata.
    runs_on: str | None = None
    #: For a variant (another release, JDK or JVM flags of a server): the server's name, and what it changes.
    variant_of: str | None = None
    variant: dict | None = None
    pairs: list[Pair] = field(default_factory=list)
    primary: str = "lean"
    clients: dict[str, ClientResult] = field(default_factory=dict)
    valid: bool = False
    reason: str | None = None
    #: The headline client's scaled diff (clients[primary].diff).
    diff: Summary | None = unit("ns")
    target: float | None = unit("ns")
    target_met: bool | None = None
    #: Server CPU per request; the CPU-time diff over its baselines' (per pair, both without their JIT compiler
    #: threads, scaled like the latency diff), and the CPU ratio (server over dummy); allocation per request.
    cpu: Summary | None = unit("ns")
    cpu_user: Summary | None = unit("ns")
    cpu_system: Summary | None = unit("ns")
    cpu_diff: Summary | None = unit("ns")
    cpu_ratio: Summary | None = None
    base_cpu: Summary | None = unit("ns")
    alloc: Summary | None = unit("bytes")
    #: Per pair's measured phase.
    gc_count: Summary | None = None
    gc_time: Summary | None = unit("ms")
    jit_cpu: Summary | None = unit("ms")
    #: Its pairs' time on the measured CPU, and the part of it spent measuring.
    seconds: float = unit("s", 0.0)
    measure_seconds: float = unit("s", 0.0)
    requests: int = 0
    warnings: list[RunWarning] = field(default_factory=list)
    #: False when this server's diff is not significantly different from the row above it.
    differs_from_previous: bool | None = None
    #: Whether ab's and the lean client's diff intervals overlap (None: not both measured).
    clients_agree: bool | None = None
    #: Whether the scaled and the unscaled diff's intervals overlap (None: fewer than 2 pairs).
    scaling_agrees: bool | None = None
    #: Why the run gave it no more pairs (stopping.REASONS: met, budget, out of reach, max pairs, failed,
    #: decided) and after how
    #: many; None for a run that did not record it (before the rule had one home) or a server it never stopped.
    stop: str | None = None
    stop_pairs: int | None = None
    #: The run-length check: per pair, the ratio at 4x the run length minus the pair's ratio; mean and interval
    #: over pairs (None without the check, or with fewer than 2 pairs).
    run_length_shift: Summary | None = None
    #: Work per request (counting.per_request: system calls, switches, faults, threads that ran, with its source)
    #: from the first valid pair with a counting window; the dummy's: the median over every window's baseline side.
    #: None: not counted (why in work_problem, when a window failed).
    work: dict | None = None
    work_pair: int | None = None
    work_problem: str | None = None
    #: Where its CPU time goes (profiling.py), from the first valid pair with a profile: {"pair", "event",
    #: "samples", "shares" (group -> 0-1), "us_per_request" (group -> share x CPU per request), "flamegraph" (the
    #: file, relative to the run)}; None: not profiled (why in profile_problem, when a window failed).
    profile: dict | None = None
    profile_problem: str | None = None
    #: What the kit knew of its spread before the run (prior.Prior as a dict); None: nothing.
    prior: dict | None = None
    #: Two speed modes of its fresh JVMs (evaluate._modes: fast_ns, slow_ns, slow_share, pairs, source); None: not seen.
    modes: dict | None = None
    #: A control's known diff (evaluate._truths: ns, pairs, modes, held: whether the interval holds it); None: not one.
    truth: dict | None = None
    #: In a table merged from shard runs (merge.py): the shards the row was measured on (one, or every shard for an
    #: anchor and the ladder, pooled); None in a run's own table.
    shards: list[int] | None = None

    @property
    def estimates(self) -> list[float]:
        """The headline client's per-pair scaled diffs."""
        c = self.clients.get(self.primary)
        return c.estimates if c else []

    @property
    def estimate_sd(self) -> float:
        """The sd of its per-pair scaled diffs that its interval uses, in ns: the headline client's ratio sd (bounded
        below: docs/method.md "When to stop") at its reference; 0 without an interval. The floor of its sd in a Welch
        difference with another row."""
        c = self.clients.get(self.primary)
        return c.ratio.stdev * c.ref if c is not None and c.ratio.stdev is not None else 0.0

    @property
    def is_variant(self) -> bool:
        return self.variant_of is not None

    @property
    def ladder(self) -> bool:
        """A rung of the baseline ladder (floor, dummy, NIO dummy) or the null pair: listed first, not ranked."""
        return self.baseline or self.reference

    @property
    def measure_share(self) -> float | None:
        return self.measure_seconds / self.seconds if self.seconds else None


@dataclass
class Scaling:
    """What the scaling by each pair's baseline did to the between-pair spread, over the run's servers, and whether
    it was the right correction (evaluate.scaling)."""
    #: Servers with at least 3 valid pairs, compared (0: none, and no variance figures).
    servers: int
    #: 1 - (sum of the scaled diffs' between-pair variances) / (sum of the unscaled ones).
    removed: float | None
    #: The median over servers of sd(scaled) / sd(unscaled).
    median_sd_ratio: float | None
    #: The scaled diffs' elasticity to the pair's baseline round trip, pooled over the servers (each its mean
    #: removed): 0 when a slower machine multiplies the server's and the dummy's round trips alike (as the scaling
    #: assumes), -1 when it adds the same time to both; its two-sided permutation p-value; the pairs and servers used.
    slope: float | None = None
    slope_p: float | None = None
    slope_pairs: int = 0
    slope_servers: int = 0
    #: The server whose diff that elasticity moves most against its target: by slope x its pairs' mean relative
    #: baseline offset from the reference x its diff; and its target.
    worst: str | None = None
    worst_shift: float | None = unit("ns")
    worst_target: float | None = unit("ns")
    #: Its pairs' mean baseline round trip relative to the reference, minus 1.
    worst_offset: float | None = None
    #: The slope is significant (slope_p under evaluate.SCALING_ALPHA) and moves the worst server's diff by more
    #: than its target.
    fails: bool = False
    #: The slope is significant, whether or not it moves a diff by more than its target.
    significant: bool = field(default=False, metadata={"export": False})


@dataclass
class RunResult:
    run_id: str
    status: str
    reason: str | None
    settings: dict
    env: dict
    servers: list[ServerResult]
    warnings: list[RunWarning]
    clients: tuple[str, ...] = ("lean",)
    primary: str = "lean"
    #: How long the measurements took (run.json), when the run completed.
    seconds: float | None = None
    #: Why the table must not be read as a ranking (a smoke run's cold JVMs), else None.
    caveat: str | None = None
    #: Per client: the reference baseline round trip its diffs are scaled to.
    ref: dict[str, float] = field(default_factory=dict, metadata={"unit": "ns"})
    #: Per client: the relative sd of the run's baseline round trips over its pairs: how the host's speed moved.
    ref_spread: dict[str, float] = field(default_factory=dict)
    #: The host's speed in the run, stated once (evaluate.host_speed): the dummy's round trip, lowest to highest.
    host_speed: dict | None = None
    #: What was known of each server's spread before the run (run.json's "priors"; prior.py), by name.
    priors: dict = field(default_factory=dict, metadata={"export": False})
    scaling: Scaling | None = None
    #: run.json's "stops": per server, why the driver gave it no more pairs, and after how many.
    stops: dict[str, dict] | None = field(default=None, metadata={"export": False})
    #: A table merged from shard runs (merge.py): the shards, the reference, the hosts' spread from the anchors;
    #: None for a run of its own.
    merge: dict | None = field(default=None, metadata={"export": False})
    #: The floor's round trip over the dummy's over its pairs (evaluate.floor_ratio), None for a merge (each shard's
    #: own report checks its floor).
    floor: Summary | None = field(default=None, metadata={"export": False})

    @property
    def ranked(self) -> list[ServerResult]:
        """Valid servers: the ladder first (by its diff: floor, dummy, ...), then by diff."""
        valid = [s for s in self.servers if s.valid]
        return sorted(valid, key=lambda s: (not s.ladder, s.diff.mean if s.diff else 0.0))

    @property
    def baseline(self) -> ServerResult | None:
        return next((s for s in self.servers if s.baseline), None)

    @property
    def null(self) -> ServerResult | None:
        return next((s for s in self.servers if s.name == NULL_PAIR), None)

    def server(self, name: str) -> ServerResult | None:
        return next((s for s in self.servers if s.name == name), None)

    @property
    def invalid(self) -> list[ServerResult]:
        return [s for s in self.servers if not s.valid and not s.baseline]

    @property
    def pair_seconds(self) -> float:
        return sum(s.seconds for s in self.servers)

    @property
    def measure_share(self) -> float | None:
        total = self.pair_seconds
        return sum(s.measure_seconds for s in self.servers) / total if total else None
