"""Property: any mutation of a real ab output either parses to a sane run or fails with AbParseError."""

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from latency_diff.abparse import AbParseError, AbRun, parse

AB = Path(__file__).parent / "fixtures" / "ab"
ORIGINALS = [(AB / name).read_text() for name in ("valid-dummy.txt", "valid-undertow.txt", "failed-length.txt",
                                                  "non-2xx.txt")]


@st.composite
def mutated(draw) -> str:
    text = draw(st.sampled_from(ORIGINALS))
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["truncate", "drop", "duplicate", "replace_char", "insert", "swap_digits"]))
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        if op == "truncate":
            joined = "".join(lines)
            lines = [joined[: draw(st.integers(0, len(joined)))]]
        elif op == "drop":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "replace_char" and lines[i]:
            j = draw(st.integers(0, len(lines[i]) - 1))
            lines[i] = lines[i][:j] + draw(st.characters()) + lines[i][j + 1:]
        elif op == "insert":
            lines.insert(i, draw(st.text(max_size=80)) + "\n")
        elif op == "swap_digits":
            lines[i] = lines[i].translate(str.maketrans("0123456789", "9876543210"))
    return "".join(lines)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_ab_output_parses_sanely_or_fails_cleanly(text):
    try:
        run = parse(text, "fuzz.txt")
    except AbParseError as e:
        assert str(e).startswith("fuzz.txt: ")
        return
    assert isinstance(run, AbRun)
    assert run.complete > 0 and run.time_taken_s > 0
    assert run.rtt_ns > 0 and run.failed >= 0 and run.keep_alive >= 0


VALID = (AB / "valid-dummy.txt").read_text()
#: Every count that decides whether a run counts, as ab prints it in valid-dummy.txt (296-byte responses).
COUNTS = {"Document Length": ("10", " bytes"), "Concurrency Level": ("1", ""), "Complete requests": ("20000", ""),
          "Failed requests": ("0", ""), "Keep-Alive requests": ("20000", ""),
          "Total transferred": ("5920000", " bytes")}


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(COUNTS)), st.integers(0, 10 ** 9))
def test_a_changed_count_is_flagged(label, value):
    original, unit = COUNTS[label]
    if str(value) == original:
        return
    old_line = next(line for line in VALID.splitlines() if line.startswith(label + ":"))
    text = VALID.replace(old_line, old_line.replace(original + unit, f"{value}{unit}"))
    assert text != VALID
    try:
        run = parse(text, "mutated.txt")
    except AbParseError:
        return
    assert run.problems(requests=20000, response_bytes=296, body_bytes=10), f"{label}: {value} went unnoticed"


def test_the_unmutated_fixture_has_no_problem():
    assert parse(VALID, "valid.txt").problems(requests=20000, response_bytes=296, body_bytes=10) == []


def test_a_run_that_stopped_early_is_flagged():
    """ab stopped after 15,000 of 20,000 requests, every one kept alive and of the right length: only the count
    of requests asked for tells."""
    text = (VALID.replace("Complete requests:      20000", "Complete requests:      15000")
            .replace("Keep-Alive requests:    20000", "Keep-Alive requests:    15000")
            .replace("Total transferred:      5920000 bytes", "Total transferred:      4440000 bytes"))
    assert text.count("15000") == 2 and "4440000" in text
    assert parse(text, "early.txt").problems(requests=20000, response_bytes=296, body_bytes=10) == [
        "ab completed 15000 of 20000 requests"]
