"""The gate a CI job acts on: is run B's server slower than run A's by more than a margin?

A margin is in microseconds ("1us", "0.5us") or in percent of A's diff ("10%"). The verdict comes from the 95% interval
of the change of the server's ratio, in microseconds at A's reference round trip (analyze.compare), against it:
PASS (exit 0) when the upper end is below the margin (B is shown not slower by more than it), FAIL (1) when the lower
end is above it (B is shown slower by more), UNDECIDED (3) when the interval straddles it (more pairs would decide).
A usage error exits 2. Several servers: FAIL if any fails, else UNDECIDED if any is, else PASS.
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
        raise ValueError(f"--fail-if-slower {text!r}: give a margin in microseconds or percent of A's diff, e.g. 1us "
                         "or 10%")
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


def combine(codes: list[int]) -> int:
    if not codes:
        return UNDECIDED
    return FAIL if FAIL in codes else UNDECIDED if UNDECIDED in codes else PASS
