"""Positive controls: servers whose true diff over the dummy is known by construction, read from their logs.

control-spin and control-modes (dummy-server/, SpinControl.java) are the blocking dummy plus, before each response,
a busy-wait to a System.nanoTime() deadline that the process times itself. control-spin spins 2000 ns in every
process; a fresh control-modes process draws its mode at start: slow (3000 ns) with probability 0.25, else fast
(1000 ns), so that its mean over fresh processes is 1500 ns. Each prints `MODE <name> <mode>` before its READY line
and, on SIGTERM, one line that this module reads from its log (the run's logs.jsonl.xz, tag `<server>-p<pair>`):

    TRUTH <name> mode=<fixed|fast|slow> requests=<n> spin_ns_total=<ns> spin_ns_median=<ns|none> configured_ns=<ns>
    expected_ns=<ns>

(one line). requests: the responses the process wrote (its conformance check and warm-up included); spin_ns_total:
the spin it timed over all of them, each from the clock read before it to the one that ended it; spin_ns_median: the
median of those spins, to the nanosecond ("none" with no requests, or when it is over 4096 ns past configured_ns);
configured_ns: this process's spin per request; expected_ns: the mean configured spin over fresh processes (a whole
number, or a decimal).

Which figure is the truth: the median. The kit's diff is built from trimmed means of round trips (paired.py), while
spin_ns_total / requests also holds the spins preempted by the JIT's threads on the one CPU a warming-up process
shares with them, and the warm-up is about half of a process's requests or more (the default profile's 50,000 before
some 40,000 measured): a fresh control-modes process pinned to one CPU
averaged 1,064 ns over 5,000 requests of a 1,000 ns spin, its median 1,012 ns. A spin ends a clock read past its
deadline, so the median is some 10-30 ns over configured_ns once the JIT has compiled it, and the true mean over fresh
processes of control-modes is the mean of its processes' medians, near expected_ns plus that overshoot, not exactly
expected_ns. Not counted in either: the few ns of each response's own bookkeeping outside the timed span (a clock read,
the counts' stores, the wrapped stream's call).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import rundir

#: The kit's control servers (dummy-server/server.toml): measured only when named.
CONTROLS = ("control-spin", "control-modes")
#: A control's modes: control-spin's one, control-modes' two.
MODES = ("fixed", "fast", "slow")
#: The fields of a TRUTH line after its name, in the order the servers print them.
FIELDS = ("mode", "requests", "spin_ns_total", "spin_ns_median", "configured_ns", "expected_ns")

_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
_WHOLE = re.compile(r"^\d+$")
_DECIMAL = re.compile(r"^\d+(\.\d+)?$")
#: The log of a process pair's server process (pair.py, driver.py): `<server>-p<pair>`.
_PAIR_TAG = re.compile(r"^(?P<server>.+)-p(?P<pair>[1-9]\d*)$")


@dataclass(frozen=True)
class Truth:
    """What one control process says of itself in its TRUTH line."""
    #: The name it ran under (its READY line's).
    name: str
    #: "fixed" (control-spin), "fast" or "slow" (control-modes).
    mode: str
    #: Responses it wrote, each after one spin.
    requests: int
    #: The spin it timed over all of them [ns].
    spin_ns_total: int
    #: The median of its spins [ns]: this process's true diff over the dummy, as a robust round trip sees it; None
    #: with no requests or when it is beyond the server's histogram.
    spin_ns_median: int | None
    #: This process's configured spin per request [ns].
    configured_ns: int
    #: The mean configured spin over fresh processes [ns]: the true diff a run's interval should cover.
    expected_ns: float
    #: spin_ns_total / requests [ns], preempted spins included; None when it wrote no response.
    spin_ns_per_request: float | None = field(init=False)

    def __post_init__(self) -> None:
        per = self.spin_ns_total / self.requests if self.requests else None
        object.__setattr__(self, "spin_ns_per_request", per)


def parse_truth(log_text: str) -> Truth | None:
    """The TRUTH line of one process's log, or None when it has none (the process was killed, or is no control).
    Raises ValueError naming the line and what is wrong: a malformed line, a second one, a spin shorter than
    configured, or a mode that differs from the MODE line's."""
    found: list[tuple[int, str]] = []
    announced: list[tuple[int, list[str]]] = []
    for i, line in enumerate(log_text.splitlines(), 1):
        words = line.split()
        if words[:1] == ["TRUTH"]:
            found.append((i, line))
        elif words[:1] == ["MODE"]:
            announced.append((i, words))
    if not found:
        return None
    if len(found) > 1:
        raise ValueError(f"{len(found)} TRUTH lines (lines {', '.join(str(i) for i, _ in found)}); a process prints "
                         "one, at its exit")
    i, line = found[0]
    truth = _parse_line(line, f"line {i}")
    for j, words in announced:
        if words[1:] != [truth.name, truth.mode]:
            raise ValueError(f"line {j}: {' '.join(words)!r} does not match the TRUTH line (line {i}), which says "
                             f"{truth.name} mode={truth.mode}")
    return truth


def _parse_line(line: str, where: str) -> Truth:
    words = line.split()
    if len(words) < 2 or not _NAME.match(words[1]) or "=" in words[1]:
        raise ValueError(f"{where}: {line!r}: expected 'TRUTH <name> {' '.join(f'{k}=...' for k in FIELDS)}'")
    name, values = words[1], {}
    for word in words[2:]:
        key, eq, value = word.partition("=")
        if not eq:
            raise ValueError(f"{where}: {line!r}: {word!r} is not key=value")
        if key not in FIELDS:
            raise ValueError(f"{where}: {line!r}: unknown field {key!r}; expected {', '.join(FIELDS)}")
        if key in values:
            raise ValueError(f"{where}: {line!r}: {key} given twice")
        values[key] = value
    missing = [k for k in FIELDS if k not in values]
    if missing:
        raise ValueError(f"{where}: {line!r}: missing {', '.join(missing)}")
    if values["mode"] not in MODES:
        raise ValueError(f"{where}: {line!r}: mode is {values['mode']!r}, expected one of {', '.join(MODES)}")
    for key in ("requests", "spin_ns_total", "configured_ns"):
        if not _WHOLE.match(values[key]):
            raise ValueError(f"{where}: {line!r}: {key} is {values[key]!r}, expected a whole number")
    if not _DECIMAL.match(values["expected_ns"]):
        raise ValueError(f"{where}: {line!r}: expected_ns is {values['expected_ns']!r}, expected a decimal number")
    median = values["spin_ns_median"]
    if median != "none" and not _WHOLE.match(median):
        raise ValueError(f"{where}: {line!r}: spin_ns_median is {median!r}, expected a whole number or none")
    truth = Truth(name=name, mode=values["mode"], requests=int(values["requests"]),
                  spin_ns_total=int(values["spin_ns_total"]), spin_ns_median=None if median == "none" else int(median),
                  configured_ns=int(values["configured_ns"]), expected_ns=float(values["expected_ns"]))
    # Every spin lasts at least configured_ns (the clock is monotonic): anything else is a broken control.
    if truth.spin_ns_total < truth.requests * truth.configured_ns:
        raise ValueError(f"{where}: {line!r}: spin_ns_total {truth.spin_ns_total} is less than requests x "
                         f"configured_ns = {truth.requests * truth.configured_ns}, yet every spin lasts at least "
                         "configured_ns")
    if truth.spin_ns_median is not None and (truth.requests == 0 or truth.spin_ns_median < truth.configured_ns):
        raise ValueError(f"{where}: {line!r}: spin_ns_median {truth.spin_ns_median} "
                         + ("with no requests" if truth.requests == 0 else
                            f"is less than configured_ns {truth.configured_ns}, yet every spin lasts at least that"))
    return truth


def truths(run_dir: Path, names: tuple[str, ...] = CONTROLS) -> dict[str, dict[int, Truth | None]]:
    """Per control server of a run (those in `names`, and any other whose pair log holds a TRUTH line), its process
    pairs' truths by pair number, in pair order; None for a pair whose log holds no TRUTH line (its process was killed
    or crashed). A server with no pair log in the run is left out. Raises ValueError naming the log for a malformed
    TRUTH line, and for a pair logged twice; rundir.RunDirError for an unreadable run."""
    found: dict[str, dict[int, Truth | None]] = {}
    twice: dict[str, str] = {}
    for record in rundir.logs(run_dir):
        m = _PAIR_TAG.match(str(record.get("tag", "")))
        if record.get("kind") != "log" or not m:
            continue
        server, pair, tag = m["server"], int(m["pair"]), m[0]
        try:
            truth = parse_truth(str(record.get("text", "")))
        except ValueError as e:
            raise ValueError(f"{run_dir / rundir.LOGS}: log {tag}: {e}") from e
        pairs = found.setdefault(server, {})
        if pair in pairs:
            twice.setdefault(server, tag)
        pairs[pair] = truth
    controls = [s for s, pairs in found.items() if s in names or any(t is not None for t in pairs.values())]
    for server in controls:
        if server in twice:
            raise ValueError(f"{run_dir / rundir.LOGS}: log {twice[server]} appears twice")
    return {server: dict(sorted(found[server].items())) for server in controls}
