"""Shards (run-all.sh --shard I/N): the split of the servers, its settings and their errors, and what a shard records.

The splits below are worked out by hand from the longest-first rule (shard.py): each server, the dearest first (ties
by name), goes to the part with the least expected time so far (ties: the lowest part).
"""

import json
import os
import random
from pathlib import Path

import pytest
from runs import make_paired_run, resolve

from latency_diff import settings, shard
from latency_diff.analysis import evaluate
from latency_diff.analysis.export import sentences
from latency_diff.catalog import select
from latency_diff.servers import Server, Variant, discover
from latency_diff.settings import RunError


def server(name: str, **kw) -> Server:
    return Server(name=name, display=name, module_dir=Path("/nowhere") / name, threading="blocking", notes="", **kw)


LADDER = [server("dummy", baseline=True), server("floor", reference=True), server("dummy-nio", reference=True)]


def test_the_longest_first_split_of_known_costs():
    # a 10 -> part 1 (0, 0: the lower part); b 7 -> part 2 (10, 0); c 6 -> part 2 (10, 7); d 5 -> part 1 (10, 13);
    # e 4 -> part 2 (15, 13): parts {a, d} = 15 s and {b, c, e} = 17 s.
    assert shard.partition({"a": 10, "b": 7, "c": 6, "d": 5, "e": 4}, 2) == ([["a", "d"], ["b", "c", "e"]],
                                                                                  [15.0, 17.0])


def test_one_dear_server_is_balanced_by_four_cheap_ones():
    # An even count of servers per part would put 100 + 25 against 75; by cost: 100 against 4 x 25.
    parts, loads = shard.partition({"big": 100, "a": 25, "b": 25, "c": 25, "d": 25}, 2)
    assert (parts, loads) == ([["big"], ["a", "b", "c", "d"]], [100.0, 100.0])


def test_servers_of_one_cost_go_by_name_whatever_order_they_come_in():
    # Equal costs: w -> 1, x -> 2, y -> 1 (1, 1: the lower part), z -> 2.
    costs = {"z": 1.0, "x": 1.0, "w": 1.0, "y": 1.0}
    assert shard.partition(costs, 2)[0] == [["w", "y"], ["x", "z"]]
    # Twelve servers of three costs, offered in five other orders: one split.
    names = [f"s{i:02}" for i in range(12)]
    expected = shard.partition({n: 1.0 + i % 3 for i, n in enumerate(names)}, 3)
    for seed in range(5):
        order = names[:]
        random.Random(seed).shuffle(order)
        assert shard.partition({n: 1.0 + int(n[1:]) % 3 for n in order}, 3) == expected


def test_every_shard_has_the_ladder_and_the_anchors_and_together_they_cover_each_server_once():
    rest = [server(n) for n in ("a", "b", "c", "d", "e", "f", "g")]
    chosen = [*LADDER, *rest, server("undertow"), server("jetty")]
    costs = {"a": 9, "b": 8, "c": 7, "d": 6, "e": 5, "f": 4, "g": 3, "undertow": 50, "jetty": 50}
    measured = []
    for i in (1, 2, 3):
        servers, plan = shard.plan(chosen, chosen, i, 3, ("undertow", "jetty"), costs, "test")
        names = [s.name for s in servers]
        assert {"dummy", "floor", "dummy-nio", "undertow", "jetty"} <= set(names)
        measured += [n for n in names if n in "abcdefg"]
        # by hand: a 9 -> 1; b 8 -> 2; c 7 -> 3; d 6 -> 3 (9, 8, 7); e 5 -> 2 (9, 8, 13); f 4 -> 1 (9, 13, 13);
        # g 3 -> 1 (13, 13, 13)
        assert plan.parts == (("a", "f", "g"), ("b", "e"), ("c", "d"))
        assert plan.expected_s == (16.0, 13.0, 13.0) and plan.mine == plan.parts[i - 1]
    assert sorted(measured) == list("abcdefg")


def test_an_anchor_not_chosen_is_added_to_every_shard():
    known = [*LADDER, server("a"), server("b"), server("undertow"), server("jetty")]
    chosen = [*LADDER, server("a"), server("b")]
    for i in (1, 2):
        servers, plan = shard.plan(chosen, known, i, 2, ("undertow", "jetty"), {}, "equal")
        assert [s.name for s in servers] == ["dummy", "floor", "dummy-nio", ["a", "b"][i - 1], "undertow", "jetty"]
        assert plan.parts == (("a",), ("b",))


def test_a_variant_costs_what_its_server_costs_and_an_unknown_one_the_median():
    variant = server("undertow@1.0.15.Final", variant=Variant("undertow@1.0.15.Final", of="undertow"))
    costs = {"undertow": 15.0, "jetty": 25.0, "akka": 90.0}
    assert shard.cost_of(variant, costs) == 15.0
    assert shard.cost_of(server("new"), costs) == 25.0
    assert shard.cost_of(server("new"), {}) == 1.0


def test_the_kits_own_servers_split_the_same_on_every_call_and_cover_each_once(monkeypatch):
    everything = [s.name for s in select(discover(), None)]
    seen = []
    for i in (1, 2, 3):
        s = resolve(["--shard", f"{i}/3"], monkeypatch)
        names = [x.name for x in s.servers]
        assert {"dummy", "floor", "dummy-nio", "undertow", "jetty"} <= set(names)
        seen += [n for n in names if n not in ("dummy", "floor", "dummy-nio", "undertow", "jetty")]
        again = resolve([], monkeypatch, LATENCY_DIFF_SHARD=f"{i}/3")
        assert [x.name for x in again.servers] == names and again.shard == s.shard
    assert sorted(seen) == sorted(n for n in everything if n not in ("dummy", "floor", "dummy-nio", "undertow",
                                                                      "jetty"))
    assert len(seen) == len(set(seen))


def test_the_shard_is_recorded_with_its_split_and_where_it_came_from(monkeypatch):
    s = resolve(["--shard", "2/2", "--servers", "undertow,jetty,netty,vertx,helidon"], monkeypatch)
    recorded = s.to_dict()["shard"]
    costs = shard.load_costs()
    # netty, vertx and helidon by the shipped costs (the dearest first): helidon alone, then netty and vertx
    by_cost = sorted(["netty", "vertx", "helidon"], key=lambda n: (-costs[n], n))
    assert by_cost[0] == "helidon"
    assert recorded["index"] == 2 and recorded["count"] == 2 and recorded["anchors"] == ["undertow", "jetty"]
    assert recorded["parts"] == [["helidon"], ["netty", "vertx"]]
    assert [x.name for x in s.servers] == ["dummy", "dummy-nio", "floor", "netty", "vertx", "undertow", "jetty"]
    assert s.sources["shard"] == "flag" and s.sources["anchors"] == "default"
    s = resolve(["--servers", "undertow,jetty,netty"], monkeypatch, LATENCY_DIFF_SHARD="1/1",
                LATENCY_DIFF_ANCHORS="none")
    assert s.to_dict()["shard"]["anchors"] == [] and s.to_dict()["shard"]["parts"] == [["jetty", "netty", "undertow"]]
    assert s.sources["anchors"] == "LATENCY_DIFF_ANCHORS"
    assert "shard" not in resolve([], monkeypatch).to_dict()


@pytest.mark.parametrize("argv, env, message", [
    (["--shard", "0/3"], {}, "--shard 0/3: I and N must be positive (shards are numbered 1 to N), not 0/3"),
    (["--shard", "1/-2"], {}, "--shard 1/-2: I and N must be positive (shards are numbered 1 to N), not 1/-2"),
    (["--shard", "4/3"], {}, "--shard 4/3: shard 4 of 3 does not exist: I is at most N"),
    (["--shard", "two"], {}, "--shard two: give the shard as I/N, two whole numbers"),
    ([], {"LATENCY_DIFF_SHARD": "3/2"}, "LATENCY_DIFF_SHARD='3/2': shard 3 of 2 does not exist: I is at most N"),
    (["--shard", "2/2", "--servers", "undertow,jetty,netty"], {},
     "--shard 2/2: 2 shards of 1 server(s) besides the anchors (undertow, jetty): a shard would measure none; give at "
     "most 1 shard"),
    (["--shard", "1/2", "--servers", "undertow,jetty"], {},
     "--shard 1/2: no server besides the anchors (undertow, jetty) to share out"),
    (["--anchors", "undertow"], {}, "--anchors names the servers measured on every shard of a sharded run: give "
     "--shard I/N too"),
    (["--shard", "1/2", "--anchors", "nope"], {}, "--anchors nope: unknown anchor(s) nope: an anchor is a server"),
    (["--shard", "1/2"], {"LATENCY_DIFF_ANCHORS": "floor"},
     "LATENCY_DIFF_ANCHORS floor: floor: the ladder is measured on every shard already"),
    (["--shard", "1/2", "--anchors", "none,undertow"], {}, "--anchors none,undertow: 'none' means no anchor"),
    (["--shard", "1/2", "--compare", "undertow", "jetty"], {}, "--shard with --compare: a head-to-head run"),
])
def test_bad_shards_are_errors_that_say_what_to_do(argv, env, message, monkeypatch):
    with pytest.raises(RunError) as e:
        resolve(argv, monkeypatch, **env)
    assert str(e.value).startswith(message)


def test_a_shard_builds_only_its_own_servers(monkeypatch):
    # run-all.sh builds what this names: the part of shard 2 of 2 (netty, vertx: see above) and the anchors
    for k in list(os.environ):
        if k.startswith("LATENCY_DIFF_"):
            monkeypatch.delenv(k)
    argv = ["--shard", "2/2", "--servers", "undertow,jetty,netty,vertx,helidon"]
    assert settings.shard_servers(argv) == "netty,vertx,undertow,jetty"
    assert settings.shard_servers(["--servers", "undertow"]) is None  # not sharded: the build takes --servers
    assert settings.shard_servers(["--shard", "3/2"]) is None  # the driver says what is wrong


def test_the_settings_printed_at_the_start_name_the_shard(monkeypatch):
    import io
    s = resolve(["--shard", "1/2", "--servers", "undertow,jetty,netty,vertx,helidon"], monkeypatch)
    out = io.StringIO()
    settings.print_settings(s, "x", "java", out)
    line = next(x for x in out.getvalue().splitlines() if x.lstrip().startswith("shard"))
    assert line.split(None, 1)[1].startswith("1 of 2: 1 of the 3 servers, expected ")
    assert line.endswith("anchors on every shard: undertow, jetty  (flag)")


def test_a_shards_report_says_which_shard_it_is(tmp_path):
    plan = {"index": 2, "count": 3, "anchors": ["undertow", "jetty"], "parts": [["a"], ["b"], ["c"]],
            "expected_s": [1.0, 1.0, 1.0], "costs": "test"}
    run = make_paired_run(tmp_path, {"undertow": [(10_000, 12_000)] * 3, "b": [(10_000, 15_000)] * 3},
                          settings={"shard": plan})
    r = evaluate.build(run)
    assert sentences.headline(r).startswith("latency-diff run test (complete in 1.5 min, shard 2 of 3): ")
    whole = evaluate.build(make_paired_run(tmp_path / "whole", {"b": [(10_000, 15_000)] * 3}))
    assert "shard" not in sentences.headline(whole)


def test_the_cost_table_is_the_median_of_the_committed_runs_of_every_server(tmp_path):
    def summary(folder: str, servers: dict, **kw) -> None:
        (tmp_path / folder).mkdir()
        data = {"status": "complete", "settings": {"profile": "default"},
                "servers": [{"name": n, "valid": True, "ladder": n == "floor", "seconds_s": v}
                            for n, v in servers.items()], **kw}
        (tmp_path / folder / "summary.json").write_text(json.dumps(data))
    summary("r1", {"undertow": 10.0, "jetty": 30.0, "floor": 5.0})
    summary("r2", {"undertow": 14.0, "jetty": 20.0})
    summary("r3", {"undertow": 30.0, "jetty": 40.0})
    summary("merged-x", {"undertow": 1000.0}, merge={"count": 2})  # a merge holds its shards' times again
    summary("quick", {"undertow": 1000.0}, settings={"profile": "quick"})
    built = shard.build_costs(tmp_path)
    # undertow: median of 10, 14, 30 = 14; jetty: of 30, 20, 40 = 30; the floor (the ladder) is on every shard
    assert built["servers"] == {"jetty": 30.0, "undertow": 14.0} and built["runs"] == ["r1", "r2", "r3"]
