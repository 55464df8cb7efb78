"""The reader of the lean client's output: every malformed output is an error naming the file and the field."""

import json

import pytest
from runs import lean_block, lean_pair

from latency_diff import lean


def _text(**changes) -> str:
    data = lean_block(20_000)
    data.update(changes)
    return json.dumps(data)


def test_a_valid_output_reads_back_exactly():
    run = lean.parse(_text(), "b.json")
    assert (run.completed, run.elapsed_ns, run.histogram.count) == (20_000, 20_000 * 20_000, 20_000)
    assert run.rtt_ns == 20_000 and run.problems(requests=20_000, response_bytes=296) == []


@pytest.mark.parametrize("text, message", [
    (_text()[:-40], "b.json: not valid JSON"),
    ("[]", "b.json: not a JSON object: not lean-client output"),
    (_text(format="latency-diff/lean/0"), "field 'format' is not"),
    (_text(completed=None), "field 'completed' is missing or not a non-negative integer"),
    (_text(non_2xx=-1), "field 'non_2xx' is missing or not a non-negative integer"),
    (_text(elapsed_ns=1.5), "field 'elapsed_ns' is missing or not a non-negative integer"),
    (_text(clamped=True), "field 'clamped' is missing or not a non-negative integer"),
    (_text(error=3), "field 'error' must be null or a string"),
    (_text(histogram={"precision_bits": 8}), "field 'histogram.buckets' is missing"),
    (_text(completed=19_999), "the histogram holds 20000 values, 'completed' says 19999"),
    (_text(elapsed_ns=0), "'elapsed_ns' is 0 for 20000 requests"),
])
def test_malformed_output_is_an_error_naming_the_field(text, message):
    with pytest.raises(lean.LeanParseError, match="^b.json: ") as e:
        lean.parse(text, "b.json")
    assert message in str(e.value)


def test_missing_fields_are_each_named():
    for key in ("requests", "completed", "sum_ns", "max_ns", "response_bytes"):
        data = lean_block(20_000)
        del data[key]
        with pytest.raises(lean.LeanParseError, match=f"field '{key}' is missing"):
            lean.parse(json.dumps(data), "b.json")


def test_what_makes_a_block_not_count():
    run = lean.parse(_text(error="request 7: no response within 300 ms", completed=20_000, clamped=2, non_2xx=1,
                           length_mismatch=4), "b.json")
    assert run.problems(requests=30_000, response_bytes=300) == [
        "lean client: request 7: no response within 300 ms",
        "lean client completed 20000 of 30000 requests",
        "1 non-2xx responses",
        "4 responses of another length than the first: the response length changed",
        "responses of 296 bytes, expected 300",
        "2 round trips beyond the histogram's range",
    ]


def test_an_unreadable_file_is_an_error(tmp_path):
    with pytest.raises(lean.LeanParseError, match="cannot read"):
        lean.parse_file(tmp_path / "missing.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe")
    with pytest.raises(lean.LeanParseError, match="not text"):
        lean.parse_file(tmp_path / "bin.json")


# -- the interleaved client's output ------------------------------------------------------------------------------
def _pair(**changes) -> dict:
    data = lean_pair([(20_000, 27_000), (21_000, 28_000)])
    data.update(changes)
    return data


def test_an_interleaved_output_reads_back_exactly():
    run = lean.parse_pair(json.dumps(_pair()), "p")
    assert (run.requests, run.segment, len(run.segments)) == (4000, 2000, 2)
    assert run.sides["base"].completed == run.sides["server"].completed == 4000
    first = run.segments[0]
    assert (first["base"].mean_ns, first["server"].mean_ns) == (20_000.0, 27_000.0)
    assert first["server"].histogram.buckets == ((27_000, 27_000, 2000),)
    assert run.problems(requests=4000, response_bytes={"base": 296, "server": 296}) == []
    assert lean.parse_pair(_pair(), "p") == run  # the decoded object, as a run's blocks file holds it


def _broken(path, value):
    data = _pair()
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


@pytest.mark.parametrize("data, message", [
    (_pair(format="latency-diff/lean/1"), "field 'format' is not 'latency-diff/lean-pair/1'"),
    (_pair(segment=None), "field 'segment' is missing or not a non-negative integer"),
    (_pair(a=None), "field 'a' is missing"),
    (_broken(["b", "completed"], -1), "side b: field 'completed' is missing or not a non-negative integer"),
    (_pair(segments={}), "field 'segments' is missing"),
    (_broken(["segments", 1, "a"], None), "segment 2 side a: missing, or without buckets"),
    (_broken(["segments", 0, "b", "count"], 1999), "segment 1 side b: 1999 round trips, the segment is 2000"),
    (_broken(["segments", 0, "b", "buckets"], [[27_000, 27_000, 1999]]),
     "segment 1 side b: the histogram holds 1999 values, 'count' says 2000"),
    (_broken(["segments", 0, "a", "buckets"], [[5, 4, 2000]]), "segment 1 side a: bucket [5, 4, 2000]"),
    (_broken(["a", "completed"], 3999), "2 segments of 2000 but only 3999 requests completed on a side"),
])
def test_a_malformed_interleaved_output_is_an_error_naming_the_field(data, message):
    with pytest.raises(lean.LeanParseError, match="^p: ") as e:
        lean.parse_pair(data, "p")
    assert message in str(e.value)


def test_what_makes_an_interleaved_run_not_count():
    data = _pair(error="request 7 to b: no response within 300 ms")
    data["b"].update(non_2xx=2, length_mismatch=1, response_bytes=300)
    run = lean.parse_pair(data, "p")
    assert run.problems(requests=6000, response_bytes={"base": 296, "server": 296}) == [
        "lean client: request 7 to b: no response within 300 ms",
        "lean client completed 4000 of 6000 requests to the baseline",
        "lean client completed 4000 of 6000 requests to the server",
        "2 non-2xx responses from the server",
        "1 responses from the server of another length than the first: the response length changed",
        "responses of 300 bytes from the server, expected 296",
    ]
