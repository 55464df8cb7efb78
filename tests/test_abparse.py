from pathlib import Path

import pytest

from latency_diff.abparse import AbParseError, parse, parse_file

AB = Path(__file__).parent / "fixtures" / "ab"


def test_valid_dummy_run_exact_numbers():
    run = parse_file(AB / "valid-dummy.txt")
    assert run.complete == 20000
    assert run.time_taken_s == 1.284
    assert run.rtt_ns == pytest.approx(64_200.0)  # 1.284 s * 1e9 / 20000
    assert run.rps == pytest.approx(20000 / 1.284)
    assert run.bytes_per_response == 296.0
    assert run.keep_alive == 20000
    assert run.server_software == "dummy"
    assert run.problems(requests=20000, response_bytes=296, body_bytes=10) == []


def test_valid_undertow_run():
    run = parse_file(AB / "valid-undertow.txt")
    assert run.rtt_ns == pytest.approx(109_950.0)  # 2.199 s / 20000
    assert run.bytes_per_response == 299.0
    assert run.rps_reported == 9096.02


def test_failed_requests_make_the_run_invalid():
    run = parse_file(AB / "failed-length.txt")
    assert (run.failed, run.failed_length, run.failed_connect) == (1000, 1000, 0)
    problems = run.problems(requests=2000, response_bytes=302, body_bytes=10)
    assert problems[0] == "1000 failed requests (connect 0, receive 0, length 1000, exceptions 0)"
    assert "document length 11, expected 10" in problems
    assert any("the response length changed" in p for p in problems)


def test_non_2xx_responses_make_the_run_invalid():
    run = parse_file(AB / "non-2xx.txt")
    assert run.non_2xx == 2000
    assert run.problems(requests=2000) == ["2000 non-2xx responses"]


def test_a_changed_request_count_or_lost_keepalive_is_invalid():
    run = parse_file(AB / "valid-dummy.txt")
    assert run.problems(requests=30000) == ["ab completed 20000 of 30000 requests"]
    text = (AB / "valid-dummy.txt").read_text()
    text = text.replace("Keep-Alive requests:    20000", "Keep-Alive requests:    19999")
    assert parse(text).problems() == ["only 19999 of 20000 requests were kept alive"]


@pytest.mark.parametrize("fixture, message", [
    ("truncated.txt", "no '100% ... (longest request)' line at the end: truncated"),
    ("crash.txt", "missing field(s): Server Software, Document Length"),
    ("close-after-3.txt", "(truncated, or ab failed mid-run)"),
])
def test_runs_cut_short_are_errors_naming_the_file(fixture, message):
    with pytest.raises(AbParseError) as e:
        parse_file(AB / fixture)
    assert str(e.value).startswith(str(AB / fixture) + ": ")
    assert message in str(e.value)


def test_malformed_values_name_the_line_and_field():
    text = (AB / "valid-dummy.txt").read_text().replace("1.284 seconds", "1,284 seconds")
    with pytest.raises(AbParseError, match=r"x.txt: line \d+: 'Time taken for tests' has a malformed value"):
        parse(text, "x.txt")


def test_empty_binary_and_foreign_input(tmp_path):
    with pytest.raises(AbParseError, match="empty"):
        parse("  \n", "e.txt")
    binary = tmp_path / "b.txt"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(AbParseError, match="not text"):
        parse_file(binary)
    with pytest.raises(AbParseError, match="not ab output"):
        parse("Requests per second: 5.00 [#/sec] (mean)\n", "w.txt")
    with pytest.raises(AbParseError, match="cannot read"):
        parse_file(tmp_path / "missing.txt")


def test_duplicate_field_is_an_error():
    text = (AB / "valid-dummy.txt").read_text()
    text = text.replace("Complete requests:      20000", "Complete requests:      20000\nComplete requests:      1")
    with pytest.raises(AbParseError, match="appears twice"):
        parse(text)
