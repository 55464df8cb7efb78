"""The progress line's estimate of the time left, replayed on recorded runs' timelines.

Each committed run of every server is replayed pair by pair in the order it measured them: each pair's units,
time, counting and profiling windows and preparation go into the schedule as the driver counted them, and a
server is stopped when its last recorded pair is counted (the driver decided then too), or earlier where today's
rule finds its needs out of reach (stopping.REACH): its later pairs are left out of the timeline, as the driver would
not have measured them. After every pair, the estimate (schedule.Schedule.seconds_left) is set against the truth:
the recorded times of the pairs still to come.

The target is ±25% from the second minute on. What the estimate reaches is asserted per run as measured
(docs/targets.md): the share of the time within ±25% while at least a minute is left, and its worst error. Since the
estimate plays each server's stopping rule forward (outlook.py), the ten runs it was developed on replay with 82-100%
of their points within ±25% (75-100% with the projection at each server's sd so far, the estimate before it); the three
runs made with it after, 89%, 57% and 96%. The misses come where a few servers that go on past their budget, or stop
out of reach, hold most of the time left: the servers' continuations are calibrated, and with their further pairs
known the costs alone hold 88-100% of each run's points (the last two tests); docs/targets.md, "The time left, run by
run".
The runs of 26 and 27 November used today's stopping rule, those from 18:01 on today's budget rule too (borrowing: a
server past its budget may go on with time others left unspent); the one of 25 November an earlier rule.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from latency_diff import evaluate, rundir, schedule, stopping
from latency_diff.servers import Server

RESULTS = Path(__file__).resolve().parent.parent / "results"
#: Run, its pairs with lean units, its pairs' total seconds, and what the estimate reaches on it: the least share of
#: the points within ±25% and the worst relative error (both measured, with a small margin).
RUNS = [("20261125T124842Z", 145, 1397.0, 0.95, 0.35),
        ("20261126T175636Z", 130, 1863.7, 0.98, 0.37),
        ("20261127T012708Z", 159, 2280.4, 0.98, 0.26),
        ("20261127T065100Z", 188, 1979.7, 0.94, 0.28),
        ("20261127T103456Z", 172, 1806.7, 0.96, 0.29),
        ("20261127T130903Z", 158, 1794.4, 0.99, 0.26),
        ("20261127T151750Z", 155, 1345.6, 0.95, 0.30),
        ("20261127T155050Z", 144, 1240.0, 0.99, 0.24),
        ("20261127T180141Z", 157, 1401.1, 0.95, 0.81),
        ("20261127T193534Z", 165, 1448.9, 0.81, 0.45),
        ("20261127T214406Z", 149, 1231.9, 0.88, 0.70),
        ("20261127T221230Z", 158, 1302.1, 0.56, 0.60),
        ("20261128T003002Z", 153, 1250.1, 0.95, 0.46)]


def _settings(borrow: float = 0.0):
    from latency_diff.settings import Settings
    return Settings(borrow=borrow, servers=[], profile="default", warmup=0, settle="queue", run_length=256,
                    segment=4096, segments=8,
                    pair_warmup=0, ab_quads=1, ab_requests=4000, min_pairs=3, max_pairs=40, budget=75.0,
                    precision=5.0, precision_floor=0.5, client="both", http="auto", pinning="shared", client_cpu=1,
                    server_cpu=1, prepare_cpu=0, port=8080, jvm_flags=[], results_dir=Path("."), start_timeout=1.0,
                    allow_concurrent=False, sources={})


@dataclass
class Replayed:
    """A recorded run replayed pair by pair (see replay)."""
    #: (elapsed, estimate, truth) in seconds after each counted pair.
    points: list[tuple[float, float | None, float]] = field(default_factory=list)
    #: At each look after which the server went on (from its second pair): the share of its continuations that end
    #: before the pairs it took (ties count half), its probability integral transform.
    pits: list[float] = field(default_factory=list)
    #: (elapsed, estimate with each server's further pairs known, truth): the costs per pair alone.
    known: list[tuple[float, float, float]] = field(default_factory=list)


def replay(run: Path) -> list[tuple[float, float | None, float]]:
    """(elapsed, estimate, truth) in seconds after each counted pair of the recorded run, as today's rule would have
    run it: a server's pairs after the look at which its needs were out of reach (stopping.REACH) are left out."""
    return replayed(run.name).points


@functools.cache
def replayed(name: str) -> Replayed:
    run = RESULTS / name
    r = evaluate.build(run)
    units = {(s.name, p.pair): p.units["lean"] for s in r.servers for p in s.pairs if p.valid and p.units.get("lean")}
    files = rundir.load(run)
    recorded = [x for x in files.pairs if (x.server, x.pair) in units]
    settings = _settings(files.settings.get("borrow_budgets", 0.0))  # runs before borrowing: none
    records = _play(recorded, units, settings)  # which pairs today's rule takes
    out = Replayed()
    _play(records, units, settings, out)
    return out


def _play(records, units, settings, out: Replayed | None = None):
    """Counts the records in order into a schedule (out: gets the points); returns those it counted: a server's are
    left out after the look that found its needs out of reach."""
    last = {x.server: x.pair for x in records}
    final = Counter(x.server for x in records)
    names = dict.fromkeys(x.server for x in records)
    sch = schedule.Schedule([schedule.ServerState(Server(name=n, display=n, module_dir=Path("."), threading="x",
                                                         notes=""), 8) for n in names])
    state = {st.server.name: st for st in sch.states}
    totals = [x.seconds["total"] for x in records]
    kept, elapsed = [], 0.0
    for i, x in enumerate(records):
        st = state[x.server]
        if st.stopped:
            continue
        kept.append(x)
        ref = sch.reference_ns() or units[(x.server, x.pair)][0].base_ns
        windows = x.seconds.get("count", 0.0) + x.seconds.get("profile", 0.0)
        st.record(units[(x.server, x.pair)], x.seconds["total"], x.seconds.get("measure", 0.0), ref, windows,
                  x.process.prepare_s if x.process else None)
        st.spent += x.seconds["total"] - windows
        # The recorded run stopped it after its last pair; today's rule stops it earlier when out of reach.
        st.stopped = "recorded" if last[x.server] == x.pair else \
            stopping.OUT_OF_REACH if sch.decide(st, settings) == stopping.OUT_OF_REACH else None
        elapsed += x.seconds["total"]
        if out is None:
            continue
        truth = sum(totals[i + 1:])
        out.points.append((elapsed, sch.seconds_left(settings), truth))
        costs = sch.costs()
        out.known.append((elapsed, sum((final[y.server.name] - y.pairs) * costs[y.server.name] for y in sch.states),
                          truth))
        if not st.stopped and st.pairs >= 2 and not sch._decision(st, settings):
            ends = sch._played(st, settings, sch.states.index(st))
            out.pits.append(float(np.mean(ends < final[x.server]) + 0.5 * np.mean(ends == final[x.server])))
    return kept


@pytest.mark.parametrize("name,pairs,total,share,worst", RUNS)
def test_the_estimate_on_a_recorded_run(name, pairs, total, share, worst):
    points = replay(RESULTS / name)
    assert len(points) == pairs
    # The first estimate comes after the first pair.
    assert points[0][2] == pytest.approx(total - points[0][0], abs=1.0)
    late = [(e, est, truth) for e, est, truth in points if e >= 120 and truth >= 60]
    errors = [(est - truth) / truth for _, est, truth in late]
    inside = sum(abs(x) <= 0.25 for x in errors) / len(errors)
    print(f"{name}: {inside:.0%} of {len(errors)} points within ±25%, worst {min(errors):+.0%} / {max(errors):+.0%}")
    assert inside >= share
    assert max(abs(x) for x in errors) <= worst


@pytest.mark.parametrize("name", [r[0] for r in RUNS])
def test_with_each_servers_pairs_known_the_costs_hold_the_estimate(name):
    # The estimate's two parts, apart: with each server's further pairs taken from the record, the costs so far
    # (Schedule.costs) hold 88-100% of each run's points within ±25% (measured on the thirteen runs: 93% in the run of
    # 18:01, 88% in the one of 28 November, 00:30, whose last pairs cost more than their servers' earlier ones, worst
    # -34%; 99-100% in the others), where the estimate itself holds 57-100%: its misses are mostly the pairs the servers
    # go on to take. A cost model off by a pair's waits fails (the measuring time alone: 34% and 65% in two runs); one
    # within about a fifth may pass (the first pair's time with its windows does).
    late = [(est - truth) / truth for e, est, truth in replayed(name).known if e >= 120 and truth >= 60]
    inside = sum(abs(x) <= 0.25 for x in late) / len(late)
    print(f"{name}: {inside:.0%} of {len(late)} points within ±25%, worst {min(late):+.0%} / {max(late):+.0%}")
    assert inside >= 0.85


def test_the_continuations_are_calibrated_on_the_recorded_runs():
    # At each look after which a server went on, the share of its continuations that end before the pairs it took is
    # uniform if they are calibrated: its mean near 1/2, a tenth of the looks in each tail (fewer, as many
    # continuations end on the pairs it took itself and count half). Measured on the thirteen runs: 1,061 looks, mean
    # 0.52, 4% below 0.1 and 8% above 0.9 (with each server's sd taken as its pairs show it, without its uncertainty,
    # 15% above 0.9). The servers' outcomes are as uncertain as the continuations say; the run's time left sums them.
    pits = np.array([p for r in RUNS for p in replayed(r[0]).pits])
    print(f"{pits.size} looks, mean {pits.mean():.2f}, {np.mean(pits < 0.1):.0%} below 0.1, "
          f"{np.mean(pits > 0.9):.0%} above 0.9")
    assert pits.size >= 1000
    assert 0.45 <= pits.mean() <= 0.58
    assert np.mean(pits < 0.1) <= 0.12
    assert np.mean(pits > 0.9) <= 0.12


def live(run: Path) -> list[tuple[float, float | None, float]]:
    """(elapsed, estimate, truth) after each counted pair, as the run itself printed them: the estimates it recorded
    in its logs, against the time from each to the end of its last pair."""
    points = [(json.loads(x["text"])["elapsed_s"], json.loads(x["text"])["left_s"])
              for x in rundir.logs(run) if x.get("kind") == "progress"]
    end = max(e for e, _ in points)
    return [(e, left, end - e) for e, left in points]


#: Runs that recorded their live estimate: the run, its counted pairs, and what the estimate reached (as above).
#: Until the preparations of processes no longer needed were aborted (run 20261127T155050Z on), the live estimate
#: missed the measuring lane's waits for them, which no pair's time holds: about 30-50 s of each run, most of it near
#: the end. The run of 18:01 borrowed (stopping.limit): the estimate then projected servers with a wide spread from 5
#: pairs to borrow up to twice their budget, where most went out of reach instead (+105% with 2 min left); the schedule
#: has since projected borrowing only for those whose pairs cost at most REACH budgets (its replay: 87% within). The
#: run of 19:35, made so, is low the other way (-56%): Helidon and Jetty 12.1 on virtual threads borrowed and met at 14
#: and 15 pairs. Whether a server of wide spread borrows or goes out of reach is decided by its next pairs' noise. The
#: run of 21:44 is the first whose estimate plays each server's rule forward over that noise (outlook.py): 89% within,
#: worst +68% with 1.5 min left (the six servers still going took 96 s where 158 were expected; Jetty 12.1 on virtual
#: threads went out of reach at its seventh pair). The run of 22:12, made so too, is low from its seventh minute to its
#: end (46% within, worst -59%): Jetty 12.1 on virtual threads, Spring MVC, Akka and Ktor CIO all went on longer than
#: their continuations expected (16, 12, 7 and 6 pairs). On these two runs, which it was not fitted on, the estimate
#: before it replays about as well (90% and 50% within, worst +40% and -72%, against 89% and 57%, +69% and -59%).
#: The run of 28 November, 00:30, made so too: 88% within, worst -45% with 1.1 min left (Tomcat NIO2 and Helidon, the
#: last two servers, went on to 13 and 11 pairs, and their last pairs cost more than their earlier ones).
LIVE_RUNS = [("20261127T123200Z", 164, 0.85, 0.43),
             ("20261127T130903Z", 158, 0.93, 0.39),
             ("20261127T151750Z", 155, 0.91, 0.34),
             ("20261127T155050Z", 144, 0.97, 0.30),
             ("20261127T180141Z", 157, 0.72, 1.05),
             ("20261127T193534Z", 165, 0.68, 0.57),
             ("20261127T214406Z", 149, 0.88, 0.69),
             ("20261127T221230Z", 158, 0.45, 0.60),
             ("20261128T003002Z", 153, 0.87, 0.46)]


@pytest.mark.parametrize("name,pairs,share,worst", LIVE_RUNS)
def test_the_estimate_a_run_printed(name, pairs, share, worst):
    points = live(RESULTS / name)
    assert len(points) == pairs
    late = [(est - truth) / truth for e, est, truth in points if e >= 120 and truth >= 60 and est is not None]
    inside = sum(abs(x) <= 0.25 for x in late) / len(late)
    print(f"{name}: {inside:.0%} of {len(late)} points within ±25%, worst {min(late):+.0%} / {max(late):+.0%}")
    assert inside >= share
    assert max(abs(x) for x in late) <= worst
