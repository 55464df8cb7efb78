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
of their points within ±25% (75-100% with the projection at each server's sd so far, the estimate before it); the two
runs made with it after, 89% and 57%. The misses come where a few servers that go on past their budget, or stop out of
reach, hold most of the time left.
The runs of 26 and 27 November used today's stopping rule, those from 18:01 on today's budget rule too (borrowing: a
server past its budget may go on with time others left unspent); the one of 25 November an earlier rule.
"""

from __future__ import annotations

import json
from pathlib import Path

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
        ("20261127T221230Z", 158, 1302.1, 0.56, 0.60)]


def _settings(borrow: float = 0.0):
    from latency_diff.settings import Settings
    return Settings(borrow=borrow, servers=[], profile="default", warmup=0, settle="queue", run_length=256,
                    segment=4096, segments=8,
                    pair_warmup=0, ab_quads=1, ab_requests=4000, min_pairs=3, max_pairs=40, budget=75.0,
                    precision=5.0, precision_floor=0.5, client="both", http="auto", pinning="shared", client_cpu=1,
                    server_cpu=1, prepare_cpu=0, port=8080, jvm_flags=[], results_dir=Path("."), start_timeout=1.0,
                    allow_concurrent=False, sources={})


def replay(run: Path) -> list[tuple[float, float | None, float]]:
    """(elapsed, estimate, truth) in seconds after each counted pair of the recorded run, as today's rule would have
    run it: a server's pairs after the look at which its needs were out of reach (stopping.REACH) are left out."""
    r = evaluate.build(run)
    units = {(s.name, p.pair): p.units["lean"] for s in r.servers for p in s.pairs if p.valid and p.units.get("lean")}
    files = rundir.load(run)
    recorded = [x for x in files.pairs if (x.server, x.pair) in units]
    settings = _settings(files.settings.get("borrow_budgets", 0.0))  # runs before borrowing: none
    records = _play(recorded, units, settings)  # which pairs today's rule takes
    out: list[tuple[float, float | None, float]] = []
    _play(records, units, settings, out)
    return out


def _play(records, units, settings, out=None):
    """Counts the records in order into a schedule (out: gets the points); returns those it counted: a server's are
    left out after the look that found its needs out of reach."""
    last = {x.server: x.pair for x in records}
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
        if out is not None:
            out.append((elapsed, sch.seconds_left(settings), sum(totals[i + 1:])))
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
LIVE_RUNS = [("20261127T123200Z", 164, 0.85, 0.43),
             ("20261127T130903Z", 158, 0.93, 0.39),
             ("20261127T151750Z", 155, 0.91, 0.34),
             ("20261127T155050Z", 144, 0.97, 0.30),
             ("20261127T180141Z", 157, 0.72, 1.05),
             ("20261127T193534Z", 165, 0.68, 0.57),
             ("20261127T214406Z", 149, 0.88, 0.69),
             ("20261127T221230Z", 158, 0.45, 0.60)]


@pytest.mark.parametrize("name,pairs,share,worst", LIVE_RUNS)
def test_the_estimate_a_run_printed(name, pairs, share, worst):
    points = live(RESULTS / name)
    assert len(points) == pairs
    late = [(est - truth) / truth for e, est, truth in points if e >= 120 and truth >= 60 and est is not None]
    inside = sum(abs(x) <= 0.25 for x in late) / len(late)
    print(f"{name}: {inside:.0%} of {len(late)} points within ±25%, worst {min(late):+.0%} / {max(late):+.0%}")
    assert inside >= share
    assert max(abs(x) for x in late) <= worst
