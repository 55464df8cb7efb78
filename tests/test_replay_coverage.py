"""The stopping rule replayed on the committed runs' real pairs, at no machine cost: do met rows hold the truth?

tests/fixtures/committed_pairs.json holds, for each group of comparable committed default runs (one CPU model, JDK
and measuring settings: prior.host_key), each run's reference round trip and each valid server's pair ratios in the
order they were measured (AMD EPYC and Intel Xeon hosts, 22 to 28 November). Each run's rows are replayed through
today's rule (stopping.interval and stopping.met, the out-of-reach rule's --max-pairs limit), look by look from
--min-pairs on, with the server's prior taken from the group's *other* runs of the same state of the host (a reference
round trip within prior.STATE_BAND of the run's; leave one run out, as a run reads its history); a row meets its
target if some look within its recorded pairs meets it, else it stops unmet (a live run would have taken further
pairs). The truth a met row must hold is the pooled mean of the server's pairs in those other runs. Rows are banded
by the server's spread between pairs (the prior's sigma) over its target.

The pairs were taken under earlier rules, which stopped many servers at 3 pairs: so the replay undercounts the met
rows of wide servers, never their coverage. Made from the runs by `python3 -m latency_diff.prior --fixture FILE`.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path

import pytest

from latency_diff import prior, stopping

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "committed_pairs.json"
ABS_NS, REL, MIN_PAIRS, MAX_PAIRS = 500.0, 0.05, 3, 40


def replay(groups: list[dict], *, use_prior: bool = True) -> Counter:
    """Counts per (host, band, "rows" | "met" | "held") and per (server, "met" | "held")."""
    out: Counter = Counter()
    for g in groups:
        host = g["host"].split()[0]
        runs = g["runs"]
        for rid, run in runs.items():
            ref = run["ref_ns"]
            for name, pairs in run["servers"].items():
                others = [o["servers"][name] for k, o in runs.items()
                          if k != rid and name in o["servers"] and prior.same_state(o["ref_ns"], ref)]
                if len(others) < 2:
                    continue
                truth = statistics.fmean(x for o in others for x in o)
                got = prior.spread(others)
                known = prior.Prior(sigma=got[0], df=min(got[1], prior.MAX_DF), tau=got[2], runs=got[3],
                                    source="history") if got and use_prior else None
                goal = stopping.target_ns((truth - 1) * ref, ABS_NS, REL) / ref
                band = "wide" if got and got[0] * truth >= goal else "narrow"
                out[host, band, "rows"] += 1
                first = MIN_PAIRS if known else max(MIN_PAIRS, stopping.FIRST_STAGE)
                for n in range(max(2, first), len(pairs) + 1):
                    iv = stopping.interval(pairs[:n], ref, prior=known, target=(ABS_NS, REL))
                    if stopping.met(iv, ref, ABS_NS, REL):
                        held = iv.ratio.ci95_low <= truth <= iv.ratio.ci95_high
                        out[host, band, "met"] += 1
                        out[host, band, "held"] += held
                        out[name, "met"] += 1
                        out[name, "held"] += held
                        break
                    need = stopping.pairs_needed(iv.stop_sd * ref, n, stopping.target_ns(iv.diff.mean, ABS_NS, REL),
                                                 MAX_PAIRS, True, tau_sd=iv.tau_sd * ref,
                                                 prior_df=known.df if known else 0)
                    if need > MAX_PAIRS:
                        break
    return out


@pytest.fixture(scope="module")
def counts() -> Counter:
    return replay(json.loads(FIXTURE.read_text())["groups"])


def _share(c: Counter, *key) -> float:
    return c[(*key, "held")] / c[(*key, "met")]


def test_the_fixture_holds_both_hosts_and_the_hard_servers():
    groups = json.loads(FIXTURE.read_text())["groups"]
    assert {g["host"].split()[0] for g in groups} == {"AMD", "Intel(R)"}
    names = {n for g in groups for r in g["runs"].values() for n in r["servers"]}
    assert {"rapidoid", "ktor-cio", "jetty-vt", "spring-mvc", "helidon", "tomcat-nio2"} <= names


def test_met_rows_hold_the_other_runs_mean(counts):
    """Measured on the fixture (29 November, a history of at most 8 df from the same state of the host): AMD 197 of 198
    narrow and 5 of 5 wide met rows held the truth; Intel 99 of 101 and 10 of 10 (its runs span references of 10.4 to
    13.3 us, so fewer rows have two other runs of their state); 311 of 314 in all (99.0%). The issue's targets: 93%
    over all met rows, 90% of the wide."""
    met = sum(v for k, v in counts.items() if k[-1] == "met" and len(k) == 3)
    held = sum(v for k, v in counts.items() if k[-1] == "held" and len(k) == 3)
    assert met >= 300 and held / met >= 0.93
    wide_met = counts["AMD", "wide", "met"] + counts["Intel(R)", "wide", "met"]
    wide_held = counts["AMD", "wide", "held"] + counts["Intel(R)", "wide", "held"]
    assert wide_met >= 10 and wide_held / wide_met >= 0.90
    assert _share(counts, "AMD", "narrow") >= 0.95 and _share(counts, "Intel(R)", "narrow") >= 0.93


def test_wide_servers_mostly_stop_unmet_rather_than_meet_on_luck(counts):
    """A wide server's row meets only where its pairs and its history support the target: on the AMD host 5 of its 48
    wide rows met; Rapidoid and Ktor CIO, whose runs' means move by 5% (tau), never."""
    assert counts["AMD", "wide", "met"] <= 0.25 * counts["AMD", "wide", "rows"]
    assert counts["rapidoid", "met"] <= 4 and counts["ktor-cio", "met"] == 0
