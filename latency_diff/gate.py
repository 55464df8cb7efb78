"""The gate a CI job acts on: is run B's server slower than run A's by more than a margin?

A margin is in microseconds ("1us", "0.5us") or in percent of A's diff ("10%"). The verdict comes from the 95% interval
of the change of the server's ratio, in microseconds at A's reference round trip (analyze.compare), against it:
PASS (exit 0) when the upper end is below the margin (B is shown not slower by more than it), FAIL (1) when the lower
end is above it (B is shown slower by more), UNDECIDED (3) when the interval straddles it (more pairs would decide).
A usage error exits 2. Several servers: FAIL if any fails, else UNDECIDED if any is, else PASS. Judged on two runs
(analyze.py compare RUN_A RUN_B), or on one head-to-head run (run-all.sh --compare A B), whose B stops getting
pairs as soon as its interval clears the margin (schedule.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PASS, FAIL, UNDECIDED, USAGE = 0, 1, 3, 2
WORDS = {PASS: "PASS", FAIL: "FAIL", UNDECIDED: "UNDECIDED"}
_MARGIN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|%)\s*$")


@dataclass(frozen=True)
class Margin:
    value: float
    #: "us" (microseconds) or "%" (of run A's diff).
    unit: str

    def ns(self, diff_a_ns: float) -> float:
        return self.value * 1000 if self.unit == "us" else self.value / 100 * abs(diff_a_ns)

    def __str__(self) -> str:
        return f"{self.value:g}{self.unit}"


def parse_margin(text: str) -> Margin:
    """'1us', '0.5us' or '10%'; raises ValueError with what is wrong."""
    m = _MARGIN.match(text)
    if not m:
        raise ValueError("give a margin in microseconds or percent of A's diff, e.g. 1us or 10%")
    return Margin(float(m.group(1)), m.group(2))


def verdict(low_ns: float | None, high_ns: float | None, margin_ns: float) -> int:
    """PASS, FAIL or UNDECIDED for a change interval [low_ns, high_ns] (None: no interval) against margin_ns."""
    if low_ns is None or high_ns is None:
        return UNDECIDED
    if high_ns < margin_ns:
        return PASS
    if low_ns > margin_ns:
        return FAIL
    return UNDECIDED


@dataclass(frozen=True)
class Judged:
    """One server's verdict: the change B - A in ns with its interval (None: no interval), the margin in ns (None:
    not known), or why there is no verdict to speak of."""
    name: str
    code: int
    change_ns: float | None = None
    low_ns: float | None = None
    high_ns: float | None = None
    margin_ns: float | None = None
    why: str | None = None

    def line(self, margin: Margin) -> str:
        if self.why or self.change_ns is None or self.margin_ns is None:
            return f"gate: {self.name}: {self.why or 'not compared (see the notes)'}: {WORDS[self.code]}"
        span = "no interval" if self.low_ns is None or self.high_ns is None else \
            f"[{self.low_ns / 1000:+.2f}, {self.high_ns / 1000:+.2f}]"
        return (f"gate: {self.name}: B minus A {self.change_ns / 1000:+.2f} us {span} against a margin of "
                f"{self.margin_ns / 1000:.2f} us ({margin}): {WORDS[self.code]}")


def judge(name: str, change_ns: float, low_ns: float | None, high_ns: float | None, margin: Margin,
          diff_a_ns: float | None) -> Judged:
    """The verdict on a change B - A (ns) and its interval; diff_a_ns: A's diff, which a margin in percent needs."""
    if margin.unit == "%" and diff_a_ns is None:
        return Judged(name, UNDECIDED, why=f"a margin of {margin} needs A's diff, which the run does not have")
    m = margin.ns(diff_a_ns or 0.0)
    return Judged(name, verdict(low_ns, high_ns, m), change_ns, low_ns, high_ns, m)


def judge_run(r, margin: Margin) -> Judged:
    """The verdict of a head-to-head run (run-all.sh --compare A B; r: its model.RunResult): B's row is B - A at A's
    round trip, and A's diff is minus the dummy's row (the dummy is measured against A)."""
    name = r.settings["compare"][1]
    b, dummy = r.server(name), r.server("dummy")
    if b is None or not b.valid:
        return Judged(name, UNDECIDED, why="no valid row (see the warnings)")
    diff_a = -dummy.diff.mean if dummy is not None and dummy.valid else None
    return judge(name, b.diff.mean, b.diff.ci95_low, b.diff.ci95_high, margin, diff_a)


def combine(codes: list[int]) -> int:
    if not codes:
        return UNDECIDED
    return FAIL if FAIL in codes else UNDECIDED if UNDECIDED in codes else PASS
