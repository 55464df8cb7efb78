"""The run directory: a few files, written so that a run stopped at any moment stays readable, sealed at the end."""

import gzip
import json
import lzma

import pytest

from latency_diff import KIT_ROOT, rundir
from latency_diff.analysis import evaluate
from latency_diff.records import BlockRecord, PairRecord, ProcessRecord, WarmupRound


def _writer(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    w = rundir.Writer(d)
    w.run({"run_id": "r", "status": "running", "settings": {"clients": ["lean"]}, "env": {}, "servers": []})
    return d, w


def test_records_read_back_as_written(tmp_path):
    d, w = _writer(tmp_path)
    rec = PairRecord(server="x", pair=1, status="measured", round=1,
                     process=ProcessRecord(tag="x-p1", pid=7, warmup=[WarmupRound(100, 50, 3, 0.1)]),
                     seconds={"total": 2.5})
    w.pair(rec)
    w.block(BlockRecord("x", 1, "ab", "text of ab", quad=0, slot=2, target="server"))
    w.log("log", "x-p1", "$ java ...\nREADY x 8081\n")
    files = rundir.load(d)
    assert files.pairs == [rec] and files.run["format"] == "latency-diff/run/4"
    assert files.blocks == {("x", 1): [BlockRecord("x", 1, "ab", "text of ab", quad=0, slot=2, target="server")]}
    assert list(rundir.logs(d)) == [{"kind": "log", "tag": "x-p1", "text": "$ java ...\nREADY x 8081\n"}]
    # A pair record's line leaves out what is unset.
    assert '"phase"' not in (d / "pairs.jsonl").read_text()


def test_while_a_run_goes_each_record_is_a_whole_gzip_member(tmp_path):
    d, w = _writer(tmp_path)
    for k in range(3):
        w.pair(PairRecord(server="x", pair=k, status="measured"))  # (blocks without a record would be noted)
        w.block(BlockRecord("x", k, "lean-pair", {"k": k}))
    data = (d / "blocks.jsonl.gz").read_bytes()
    assert data.count(b"\x1f\x8b\x08") == 3  # three members, each readable alone
    assert [json.loads(x)["pair"] for x in gzip.decompress(data).splitlines()] == [0, 1, 2]
    # Cut mid-way through the last member (the run was killed while writing it): the others still read.
    (d / "blocks.jsonl.gz").write_bytes(data[:-10])
    files = rundir.load(d)
    assert sorted(files.blocks) == [("x", 0), ("x", 1)]
    assert files.notes == ["blocks.jsonl.gz: its last record is cut short (the run stopped while writing it); left out"]


def test_closing_seals_blocks_and_logs_into_xz_and_packs_live_logs(tmp_path):
    d, w = _writer(tmp_path)
    w.block(BlockRecord("x", 1, "lean-pair", {"k": 1}))
    w.live_log("x-p1").write_text("$ java\nstarted\n")
    w.close()
    assert sorted(p.name for p in d.iterdir()) == ["blocks.jsonl.xz", "logs.jsonl.xz", "run.json"]
    assert json.loads(lzma.decompress((d / "blocks.jsonl.xz").read_bytes()))["output"] == {"k": 1}
    assert list(rundir.logs(d)) == [{"kind": "log", "tag": "x-p1", "text": "$ java\nstarted\n"}]
    assert rundir.load(d).blocks == {("x", 1): [BlockRecord("x", 1, "lean-pair", {"k": 1})]}


def test_a_run_directory_is_never_reused(tmp_path):
    first = rundir.create(tmp_path)
    second = rundir.create(tmp_path)
    assert first != second and second.name.startswith(first.name[:16])


@pytest.mark.parametrize("line, message", [
    ('{"server": "x", "pair": 1, "client": "wget", "output": 1}', "client 'wget' is not one of"),
    ('{"server": "x", "pair": 1, "client": "ab", "output": "t", "quad": 0, "slot": 5, "target": "base"}',
     "needs quad, slot (0-3) and target"),
    ('[1, 2]', "expected a JSON object"),
])
def test_a_malformed_block_record_is_an_error_naming_the_line(tmp_path, line, message):
    d, w = _writer(tmp_path)
    (d / "blocks.jsonl.gz").write_bytes(rundir.gzip_member(line))
    with pytest.raises(rundir.RunDirError, match=r"blocks.jsonl.gz: line 1: .*" + message.replace("(", r"\(")
                       .replace(")", r"\)")):
        rundir.load(d)


COMMITTED = sorted(p.parent for p in (KIT_ROOT / "results").rglob("run.json"))


@pytest.mark.slow
@pytest.mark.parametrize("run_dir", COMMITTED, ids=[str(p.relative_to(KIT_ROOT / "results")) for p in COMMITTED])
def test_every_committed_run_is_of_the_current_layout(run_dir):
    """Every committed run reads and evaluates with today's analysis, in a few files. Its summary.json is the record
    of the analysis it was made with, not an oracle: a change of the analysis does not rewrite committed runs."""
    r = evaluate.build(run_dir)
    assert r.servers and json.loads((run_dir / "summary.json").read_text())["run_id"] == r.run_id
    assert len(list(run_dir.iterdir())) <= 12
