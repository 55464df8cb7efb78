"""Runs of the earlier layout convert to the current one with identical numbers; every committed run recomputes to
its own summary.json."""

import json

import pytest
from runs import lean_block

from latency_diff import KIT_ROOT, evaluate, migrate, rundir
from latency_diff.export import summary_json

QUAD = (("base", "server", "server", "base"), ("server", "base", "base", "server"))


def old_run(tmp_path, diffs, summary_diffs):
    """A run of format run/3: undertow's pairs of two quads of lean blocks (the dummy at 20,000 ns, undertow 20,000 +
    the pair's diff), and a summary.json that says summary_diffs (mean, low, high) for it."""
    d = tmp_path / "old"
    (d / "blocks" / "undertow").mkdir(parents=True)
    (d / "logs").mkdir()
    (d / "logs" / "undertow-p1.log").write_text("$ java -jar undertow.jar\nREADY undertow 8081\n")
    settings = {"profile": "default", "block_requests": 20000, "block_warmup": 0, "quads": 2, "clients": ["lean"],
                "pinning": "shared", "server_cpu": 1, "precision_pct": 5.0, "precision_floor_us": 0.5, "warmup": 100000,
                "wait_for_jit": True, "port": 8080}
    (d / "run.json").write_text(json.dumps({"format": "latency-diff/run/3", "run_id": "old", "status": "complete",
                                            "settings": settings}))
    servers = [{"name": n, "display": n, "threading": "blocking", "baseline": n == "dummy", "library": None,
                "notes": "n"} for n in ("dummy", "undertow")]
    (d / "env.json").write_text(json.dumps({"servers": servers, "settings": settings, "cpus_online": 2}))
    (d / "request-http1.0.bin").write_bytes(b"GET / HTTP/1.0\r\n\r\n")
    lines = []
    for k, diff in enumerate(diffs, 1):
        blocks = []
        for q in range(2):
            for slot, target in enumerate(QUAD[q]):
                rel = f"blocks/undertow/p{k}-lean-q{q}-{slot}{target[0]}.json"
                (d / rel).write_text(json.dumps(lean_block(20_000 if target == "base" else 20_000 + diff)))
                blocks.append({"client": "lean", "quad": q, "slot": slot, "target": target, "file": rel})
        lines.append(json.dumps({"server": "undertow", "pair": k, "round": k, "status": "measured", "http": "1.0",
                                 "tag": f"undertow-p{k}", "pid": 10 + k, "port": 8081, "response_bytes": 296,
                                 "base_pid": 5, "base_response_bytes": 296, "base_log_file": f"logs/dummy-r{k}.log",
                                 "warmup": [{"requests": 100000, "jit_cpu_ms": 900, "settle_s": 1.0, "wall_ms": 3000}],
                                 "blocks": blocks, "measure_s": 2.0, "seconds": {"total": 9.0}}))
    (d / "pairs.jsonl").write_text("\n".join(lines) + "\n")
    mean, low, high = summary_diffs
    (d / "summary.json").write_text(json.dumps({"servers": [
        {"name": "dummy", "valid": True, "baseline": True, "clients": {}},
        {"name": "undertow", "valid": True, "clients": {"lean": {"diff_ns": {"mean": mean, "ci95_low": low,
                                                                             "ci95_high": high}}}}]}))
    return d


def test_a_run_of_the_earlier_layout_converts_with_identical_numbers(tmp_path):
    d = old_run(tmp_path, [7000, 7000, 7000], (7000.0, 7000.0, 7000.0))
    migrate.migrate(d)
    assert sorted(p.name for p in d.iterdir()) == [
        "blocks.jsonl.xz", "diffs.png", "logs.jsonl.xz", "pairs.jsonl", "percentiles.png", "report.html",
        "report.md", "run.json", "summary.csv", "summary.json"]
    r = evaluate.build(d)
    u = next(s for s in r.servers if s.name == "undertow")
    assert u.clients["lean"].unscaled_diff.mean == 7000.0 and u.diff.mean == pytest.approx(7000.0)
    assert [p.units["lean"][0].diff_ns for p in u.pairs] == [7000.0] * 3  # each quad a unit
    files = rundir.load(d)
    assert files.run["requests"] == {"1.0": "GET / HTTP/1.0\r\n\r\n"} and "settings" not in files.env
    assert files.pairs[0].process.warmup[0].jit_cpu_ms == 900 and files.pairs[0].seconds == {"total": 9.0,
                                                                                             "measure": 2.0}
    assert len(files.blocks[("undertow", 1)]) == 8
    assert ("log", "undertow-p1") in {(x["kind"], x["tag"]) for x in rundir.logs(d)}
    assert summary_json.render(r) == (d / "summary.json").read_text()


def test_a_run_whose_numbers_would_change_is_left_as_it_was(tmp_path):
    d = old_run(tmp_path, [7000, 7000, 7000], (7500.0, 7500.0, 7500.0))
    before = sorted(str(p.relative_to(d)) for p in d.rglob("*"))
    with pytest.raises(migrate.MigrateError, match="the recomputed diffs differ from summary.json: undertow"):
        migrate.migrate(d)
    assert sorted(str(p.relative_to(d)) for p in d.rglob("*")) == before


COMMITTED = sorted(p.parent for p in (KIT_ROOT / "results").rglob("run.json"))


@pytest.mark.slow
@pytest.mark.parametrize("run_dir", COMMITTED, ids=[str(p.relative_to(KIT_ROOT / "results")) for p in COMMITTED])
def test_every_committed_run_is_of_the_current_layout(run_dir):
    """Every committed run reads and evaluates with today's analysis, in a few files. Its summary.json is the record
    of the analysis it was made with, not an oracle: a change of the analysis does not rewrite committed runs."""
    r = evaluate.build(run_dir)
    assert r.servers and json.loads((run_dir / "summary.json").read_text())["run_id"] == r.run_id
    assert len(list(run_dir.iterdir())) <= 12
