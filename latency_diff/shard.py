"""Shards: `run-all.sh --shard I/N` measures the I-th of N deterministic, cost-balanced parts of the chosen servers.

The servers of a run (after --servers and --variant are resolved) less the baseline ladder and the anchors are split
into N parts by their expected cost, the longest first, each to the part with the least expected time so far (ties:
the part of the lowest number; servers of one cost: by name). This greedy longest-processing-time rule (Graham,
"Bounds on multiprocessing timing anomalies", 1969) makes the longest part at most 4/3 of the best split's. A shard
measures its part, the ladder (the dummy, floor, NIO dummy and the null pair, as every run does) and the anchors:
servers measured on every shard (Undertow and Jetty by default), from whose spread between shards the merge
(merge.py) learns how much hosts of one type differ.

The same command line gives the same parts on every machine, so N machines cover the servers exactly once. That is
why the expected costs come from one shipped table (costs.json beside this file: per server, the median over the
committed runs of every server of its pairs' time on the measured CPU; `python3 -m latency_diff.shard --write`
builds it) and not from a machine's own results folder, which holds that machine's own runs, and in a container the
host's: two shards reading two folders could split the servers two ways and measure one twice and another never.
A server the table does not know costs what its server costs (a variant), else the median of the table, else (an
empty table) every server costs the same. Each shard records the whole split (run.json's settings), and the merge
refuses shards whose splits differ.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from .servers import Server

COSTS = Path(__file__).resolve().parent / "costs.json"
COSTS_FORMAT = "latency-diff/costs/1"
#: Measured on every shard unless --anchors says otherwise: an event loop (Undertow) and a thread pool (Jetty 12),
#: whose means move little between runs on one host (tau 0.2% and 0.3% of the ratio in the shipped prior, prior.json),
#: so that their spread between shards is mostly the hosts'.
DEFAULT_ANCHORS = ("undertow", "jetty")


@dataclass(frozen=True)
class Plan:
    """Which part of a sharded run this shard is, and the whole split (recorded, so that the merge can check it)."""
    index: int
    count: int
    anchors: tuple[str, ...]
    #: Every shard's part, in shard order (part I is parts[I - 1]), each sorted by name.
    parts: tuple[tuple[str, ...], ...]
    #: Each part's expected seconds on the measured CPU, and where the costs came from.
    expected_s: tuple[float, ...]
    costs: str

    @property
    def mine(self) -> tuple[str, ...]:
        return self.parts[self.index - 1]

    def to_dict(self) -> dict:
        return {"index": self.index, "count": self.count, "anchors": list(self.anchors),
                "parts": [list(p) for p in self.parts], "expected_s": list(self.expected_s), "costs": self.costs}


class AnchorError(ValueError):
    """An --anchors value that names no server to anchor on."""


_SHARD = re.compile(r"^\s*([+-]?\d+)\s*/\s*([+-]?\d+)\s*$")


def parse_shard(value: str) -> tuple[int, int]:
    """'I/N' as (I, N); raises ValueError with what is wrong."""
    m = _SHARD.match(str(value))
    if not m:
        raise ValueError("give the shard as I/N, two whole numbers: this machine's part I of N, e.g. 2/3")
    index, count = int(m.group(1)), int(m.group(2))
    if index < 1 or count < 1:
        raise ValueError(f"I and N must be positive (shards are numbered 1 to N), not {index}/{count}")
    if index > count:
        raise ValueError(f"shard {index} of {count} does not exist: I is at most N")
    return index, count


def parse_anchors(value: str | list[str]) -> tuple[str, ...]:
    """'NAME,NAME' (or 'none') as the anchors' names; raises ValueError with what is wrong."""
    names = value if isinstance(value, list) else [x.strip() for x in str(value).split(",")]
    names = [n for n in names if n]
    if [n.lower() for n in names] == ["none"]:
        return ()
    if not names:
        raise ValueError("give the anchors as NAME,NAME (servers measured on every shard), or none")
    if "none" in (n.lower() for n in names):
        raise ValueError("'none' means no anchor: give it alone, not among names")
    return tuple(dict.fromkeys(names))


def load_costs(path: Path = COSTS) -> dict[str, float]:
    """Per server, its expected seconds on the measured CPU in a run (the shipped table; empty if there is none)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return {k: float(v) for k, v in data["servers"].items()}


def cost_of(server: Server, costs: dict[str, float]) -> float:
    """A server's expected cost: its own, its server's for a variant, else the table's median, else 1 (equal)."""
    if server.name in costs:
        return costs[server.name]
    if server.variant is not None and server.variant.of in costs:
        return costs[server.variant.of]
    return statistics.median(costs.values()) if costs else 1.0


def partition(costs: dict[str, float], count: int) -> tuple[list[list[str]], list[float]]:
    """The names split into count parts by the longest-first greedy rule (the module doc), and each part's total
    cost. Deterministic: by cost, then name; a part's names sorted."""
    if count < 1:
        raise ValueError("at least one part")
    parts: list[list[str]] = [[] for _ in range(count)]
    loads = [0.0] * count
    for name in sorted(costs, key=lambda n: (-costs[n], n)):
        i = min(range(count), key=lambda k: (loads[k], k))
        parts[i].append(name)
        loads[i] += costs[name]
    return [sorted(p) for p in parts], loads


def plan(chosen: list[Server], known: list[Server], index: int, count: int, anchors: tuple[str, ...],
         costs: dict[str, float] | None = None, costs_source: str | None = None) -> tuple[list[Server], Plan]:
    """The servers of shard index of count, from the run's chosen servers (the ladder among them) and every known
    server (for anchors not chosen), and its plan. Raises ValueError with what is wrong."""
    if costs is None:
        costs = load_costs()
        costs_source = (f"{COSTS.name}: per server, the median time of its pairs in the committed runs"
                        if costs else "none known: every server costs the same")
    by_name = {s.name: s for s in known} | {s.name: s for s in chosen}
    unknown = [a for a in anchors if a not in by_name]
    if unknown:
        servers = ", ".join(s.name for s in known if not (s.baseline or s.reference))
        raise AnchorError(f"unknown anchor(s) {', '.join(unknown)}: an anchor is a server of the kit, measured on "
                          f"every shard (known: {servers})")
    ladder = [a for a in anchors if by_name[a].baseline or by_name[a].reference]
    if ladder:
        raise AnchorError(f"{', '.join(ladder)}: the ladder is measured on every shard already; anchor servers instead")
    rest = [s for s in chosen if not (s.baseline or s.reference) and s.name not in anchors]
    if count > len(rest):
        named = ", ".join(anchors) or "none"
        raise ValueError(f"{count} shards of {len(rest)} server(s) besides the anchors ({named}): a shard would "
                         f"measure none; give at most {len(rest)} shard{'s' if len(rest) != 1 else ''}" if rest else
                         f"no server besides the anchors ({named}) to share out")
    parts, loads = partition({s.name: cost_of(s, costs) for s in rest}, count)
    p = Plan(index, count, anchors, tuple(tuple(x) for x in parts), tuple(round(x, 1) for x in loads),
             costs_source or "given")
    mine = set(p.mine)
    anchored = [by_name[a] for a in anchors]
    servers = [s for s in chosen if s.baseline or s.reference or s.name in mine]
    return servers + [a for a in anchored if a not in servers], p


# -- the shipped table -------------------------------------------------------------------------------------------
def build_costs(results: Path) -> dict:
    """The cost table from the runs of every server in `results` (its folders' summary.json: default profile,
    complete, not a merge): per server, the median over those runs of its pairs' time on the measured CPU (seconds)."""
    seen: dict[str, list[float]] = {}
    runs = []
    for path in sorted(results.glob("*/summary.json")):
        summary = json.loads(path.read_text(encoding="utf-8"))
        if summary.get("merge") or summary.get("status") != "complete" or \
                summary.get("settings", {}).get("profile") != "default":
            continue
        runs.append(path.parent.name)
        for s in summary.get("servers", []):
            if s.get("valid") and not s.get("ladder") and s.get("seconds_s"):
                seen.setdefault(s["name"], []).append(float(s["seconds_s"]))
    return {"format": COSTS_FORMAT,
            "about": "per server, the median over the committed runs of every server of its pairs' time on the "
                     "measured CPU, in seconds: the expected cost that run-all.sh --shard balances "
                     "(latency_diff/shard.py)", "runs": runs,
            "servers": {k: round(statistics.median(v), 1) for k, v in sorted(seen.items())}}


def main(argv: list[str] | None = None) -> int:
    from . import KIT_ROOT
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=KIT_ROOT / "results", help="the runs to take the costs from")
    parser.add_argument("--write", action="store_true", help=f"write {COSTS.name} (else print it)")
    args = parser.parse_args(argv)
    text = json.dumps(build_costs(args.results), indent=1) + "\n"
    if args.write:
        COSTS.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
