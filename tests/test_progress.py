"""The progress line's estimate of the time left, replayed on a recorded run's timeline.

The README's run (results/20261125T124842Z, every server, 149 pairs) is replayed pair by pair in the
order it measured them: each pair's units and times go into the schedule as the driver counted them,
and a server is stopped when its last recorded pair is counted (the driver decided then too). After
every pair, the estimate (schedule.Schedule.seconds_left) is set against the truth: the recorded times
of the pairs still to come.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from latency_diff import evaluate, rundir, schedule
from latency_diff.servers import Server

RUN = Path(__file__).resolve().parent.parent / "results" / "20261125T124842Z"


def _settings():
    from latency_diff.settings import Settings
    return Settings(servers=[], profile="default", warmup=0, settle="queue", run_length=256, segment=4096, segments=8,
                    pair_warmup=0, ab_quads=1, ab_requests=4000, min_pairs=3, max_pairs=40, budget=75.0,
                    precision=5.0, precision_floor=0.5, client="both", http="auto", pinning="shared", client_cpu=1,
                    server_cpu=1, prepare_cpu=0, port=8080, jvm_flags=[], results_dir=Path("."), start_timeout=1.0,
                    allow_concurrent=False, sources={})


def replay() -> list[tuple[float, float | None, float]]:
    """(elapsed, estimate, truth) in seconds after each counted pair of the recorded run."""
    r = evaluate.build(RUN)
    units = {(s.name, p.pair): p.units["lean"] for s in r.servers for p in s.pairs if p.valid and p.units.get("lean")}
    records = [x for x in rundir.load(RUN).pairs if (x.server, x.pair) in units]
    last = {x.server: x.pair for x in records}
    names = dict.fromkeys(x.server for x in records)
    sch = schedule.Schedule([schedule.ServerState(Server(name=n, display=n, module_dir=Path("."), threading="x",
                                                         notes=""), 8) for n in names])
    state = {st.server.name: st for st in sch.states}
    totals = [x.seconds["total"] for x in records]
    out, elapsed, settings = [], 0.0, _settings()
    for i, x in enumerate(records):
        st = state[x.server]
        ref = sch.reference_ns() or units[(x.server, x.pair)][0].base_ns
        st.record(units[(x.server, x.pair)], x.seconds["total"], x.seconds.get("measure", 0.0), ref)
        st.spent += x.seconds["total"]
        if last[x.server] == x.pair:
            st.stopped = "recorded"
        elapsed += x.seconds["total"]
        out.append((elapsed, sch.seconds_left(settings), sum(totals[i + 1:])))
    return out


def test_the_estimate_is_within_a_quarter_of_the_truth_from_the_second_minute():
    points = replay()
    assert len(points) == 149
    late = [(e, est, truth) for e, est, truth in points if e >= 120 and truth >= 60]
    worst = max(late, key=lambda p: abs(p[1] - p[2]) / p[2])
    print(f"worst: at {worst[0]:.0f} s, estimate {worst[1]:.0f} s against {worst[2]:.0f} s left")
    assert all(abs(est - truth) <= 0.25 * truth for _, est, truth in late), worst
    # The first estimate comes after the first pair; the whole run took 1,433 s of pairs.
    assert points[0][2] == pytest.approx(1433.0 - points[0][0], abs=1.0)
