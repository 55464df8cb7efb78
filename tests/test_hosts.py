"""Hosts side by side (latency_diff/analysis/hosts.py, analyze.py hosts) on two synthetic runs whose diffs are built
from known prices of a switch and a system call."""

from __future__ import annotations

import pytest
from runs import make_paired_run

from latency_diff.analysis import analyze, evaluate, hosts
from latency_diff.analysis.export import tables

BASE_NS = 10_000
DUMMY = (2.0, 1.0, 2.0)  # the dummy's user CPU [us], switches and system calls per request
#: Per server: user CPU, switches and system calls per request more than the dummy.
MORE = {"a": (1.0, 0.0, 2.0), "b": (2.0, 1.0, 1.0), "c": (0.5, 2.0, 6.0), "d": (3.0, 0.5, 0.0), "e": (1.0, 3.0, 4.0)}
#: Per host: us per us of user CPU, per switch, per system call.
PRICES = {"one": (1.0, 2.0, 0.5), "two": (1.0, 0.2, 1.0)}


def _run(tmp_path, host: str, more: dict | None = None):
    user, switch, syscall = PRICES[host]
    pairs = {}
    for name, (du, dsw, dsc) in (more or MORE).items():
        diff = round(1000 * (user * du + switch * dsw + syscall * dsc))
        spec = {"segments": [(BASE_NS, BASE_NS + diff)] * 2,
                # 1,000,000 requests at 100 ticks a second: a tick is 10 ns a request
                "cpu": ((round(100 * (DUMMY[0] + du)), 0), (round(100 * DUMMY[0]), 0)), "cpu_requests": 1_000_000,
                "counts": {"server": (DUMMY[2] + dsc, DUMMY[1] + dsw), "base": (DUMMY[2], DUMMY[1])}}
        pairs[name] = [spec, spec, spec]
    # The precision target off: rows apart by their own (exact) pairs, not by a fixed width of 0.5 us.
    return evaluate.build(make_paired_run(tmp_path / host, pairs, env={"cpu_model": f"Test CPU {host}"},
                                          settings={"precision_floor_us": 0, "precision_pct": 0}))


def test_the_fit_finds_each_host_s_price_of_a_switch_and_a_system_call(tmp_path):
    for host, (user, switch, syscall) in PRICES.items():
        f = hosts.fit(_run(tmp_path, host))
        assert f is not None and sorted(f.servers) == sorted(MORE)
        assert (f.user, f.switch_us, f.syscall_us) == pytest.approx((user, switch, syscall), abs=1e-6)
        assert f.r2 == pytest.approx(1.0)


def test_the_table_and_the_servers_ranked_the_other_way_round(tmp_path):
    one, two = _run(tmp_path, "one"), _run(tmp_path, "two")
    cols, rows = hosts.table([one, two])
    row = {r[0]: r for r in rows}
    # c: 0.5 + 2 x 2 + 6 x 0.5 = 7.5 us on host one; 0.5 + 2 x 0.2 + 6 x 1 = 6.9 on host two
    assert row["c"][1:6] == ["7.50", "1.750", "4", "8.00", "3.00"]
    assert row["c"][6:9] == ["6.90", "1.690", "5"]
    assert row["c"][-1] == "1.09x" and cols[-1] == "diff 1 / diff 2"
    told, flipped = hosts.flips(one, two)
    assert told == 10 and flipped == [("c", "e")]  # e: 9.0 on one, 5.6 on two


def test_the_command_writes_the_comparison(tmp_path, capsys):
    a = make_paired_run(tmp_path / "x", {"a": [(BASE_NS, 12_000)] * 3, "b": [(BASE_NS, 15_000)] * 3})
    b = make_paired_run(tmp_path / "y", {"a": [(BASE_NS, 16_000)] * 3, "b": [(BASE_NS, 13_000)] * 3})
    out = tmp_path / "hosts.md"
    assert analyze.main(["hosts", str(a), str(b), "--out", str(out)]) == 0
    text = out.read_text()
    assert "1 of the 1 pairs of servers both tell apart rank the other way round: a/b." in text
    assert "Run 1: no fit (the run did not count system calls and switches)." in text
    assert text == capsys.readouterr().out


def test_a_server_counted_in_several_pairs_has_the_median_of_their_counts(tmp_path):
    """--count-pairs N: a window after each of a server's first N pairs; the row shows the median, each pair keeps
    its own counts beside its diff."""
    def pair(syscalls, switches):
        return {"segments": [(BASE_NS, 12_000)] * 2, "counts": {"server": (syscalls, switches), "base": (2.0, 1.0)}}
    r = evaluate.build(make_paired_run(tmp_path, {"a": [pair(3.0, 1.0), pair(9.0, 4.0), pair(4.0, 2.0)]}))
    a = r.server("a")
    assert a.work["windows"] == 3 and a.work_pair == 1
    assert (a.work["syscalls"], a.work["switches"]) == (4.0, 2.0)
    cols, rows, _ = tables.counted_pairs_table(r)
    assert cols[:6] == ("server", "pair", "diff [us]", "ratio", "syscalls/req", "switches/req")
    assert [row[1:6] for row in rows] == [["1", "2.00", "1.200", "3.00", "1.00"],
                                          ["2", "2.00", "1.200", "9.00", "4.00"],
                                          ["3", "2.00", "1.200", "4.00", "2.00"]]
    plain = {"segments": [(BASE_NS, 12_000)] * 2}
    one = evaluate.build(make_paired_run(tmp_path / "one", {"a": [pair(3.0, 1.0), plain]}))
    assert one.server("a").work["syscalls"] == 3.0 and "windows" not in one.server("a").work
    assert tables.counted_pairs_table(one) is None


def test_counts_carry_within_ten_percent_and_the_others_are_named(tmp_path):
    one = _run(tmp_path, "one")
    # On host two, b makes 1.25 switches more than the dummy instead of 1 (2.25 against 2: 11.8% apart, over 10%) and
    # d 0.1 system calls more instead of 0 (2.1 against 2: 4.9%, within).
    two = _run(tmp_path, "two", {**MORE, "b": (2.0, 1.25, 1.0), "d": (3.0, 0.5, 0.1)})
    both, apart = hosts.carried(one, two)
    assert sorted(both) == sorted([*MORE, "dummy"])
    assert apart == [("b", "switches", 2.0, 2.25)]
    text = "\n".join(hosts.report([one, two]))
    assert "the system calls and switches per request of 5 of the 6 servers both counted (the dummy among them) " \
           "agree within 10%; " \
           "apart: b switches 2.00 vs 2.25." in text
