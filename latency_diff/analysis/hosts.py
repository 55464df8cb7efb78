"""Hosts side by side (`analyze.py hosts RUN...`): the same servers measured on different machines.

Per server and run: its diff, ratio, rank, and its work per request (system calls and context switches, when the
run counted them). Between each two runs: the pairs of servers that both runs tell apart (intervals apart) and rank
the other way round. Per run that counted work: a least-squares fit of the servers' diffs against what each does
more than the dummy per request,

    diff = a x (user CPU - dummy's) + b x (switches - dummy's) + c x (system calls - dummy's)

no intercept (the dummy's own row is 0, 0, 0 -> 0): b is the host's price of one context switch, c of one system
call, a how a microsecond of the server's own user CPU shows in its round trip (about 1 when the client, dummy
and server share a CPU). R^2 says how much of the spread of diffs across servers the three explain; each server's
residual is what they do not.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from .export.tables import servers_of, side_by_side_rows
from .model import RunResult, ServerResult


@dataclass
class Fit:
    run_id: str
    servers: list[str]
    #: us per unit: user CPU (us per us), one switch, one system call.
    user: float
    switch_us: float
    syscall_us: float
    r2: float
    #: Per server: (diff, fitted) in us.
    points: dict[str, tuple[float, float]]


def label(r: RunResult) -> str:
    cpu = str(r.env.get("cpu_model") or "unknown CPU")
    cpu = "AMD EPYC" if "EPYC" in cpu else "Intel Xeon" if "Xeon" in cpu else cpu
    return f"{cpu}, {r.run_id}"


def table(runs: list[RunResult]) -> tuple[list[str], list[list[str]]]:
    """A row per server valid in any run: per run its diff [us], ratio, rank, system calls and switches per request."""
    per = [servers_of(r) for r in runs]
    names = sorted({n for p in per for n in p}, key=lambda n: next((p[n].diff.mean for p in per if n in p), 0))
    cols = ["server"]
    for i in range(len(runs)):
        cols += [f"diff {i + 1} [us]", f"ratio {i + 1}", f"rank {i + 1}", f"syscalls/req {i + 1}",
                 f"switches/req {i + 1}"]

    def cells(s: ServerResult, rank: int) -> list[str]:
        w = s.work or {}
        return [f"{s.diff.mean / 1000:.2f}", f"{s.clients[s.primary].ratio.mean:.3f}", str(rank),
                f"{w['syscalls']:.2f}" if "syscalls" in w else "-", f"{w['switches']:.2f}" if "switches" in w else "-"]

    rows = side_by_side_rows(runs, names, cells, 5)
    if len(runs) == 2:
        cols.append("diff 1 / diff 2")
        for row in rows:
            a, b = per[0].get(row[0]), per[1].get(row[0])
            row.append(f"{a.diff.mean / b.diff.mean:.2f}x" if a and b and abs(b.diff.mean) > 500 else "-")
    return cols, rows


def _apart(a: ServerResult, b: ServerResult) -> int:
    """-1: a's interval below b's, 1: above, 0: they overlap."""
    if a.diff.ci95_high is None or b.diff.ci95_high is None:
        return 0
    if a.diff.ci95_high < b.diff.ci95_low:
        return -1
    if a.diff.ci95_low > b.diff.ci95_high:
        return 1
    return 0


def flips(x: RunResult, y: RunResult) -> tuple[int, list[tuple[str, str]]]:
    """(pairs of servers both runs tell apart, those of them ranked the other way round)."""
    px, py = servers_of(x), servers_of(y)
    common = sorted(set(px) & set(py))
    told, flipped = 0, []
    for a, b in combinations(common, 2):
        ox, oy = _apart(px[a], px[b]), _apart(py[a], py[b])
        if ox and oy:
            told += 1
            if ox != oy:
                flipped.append((a, b))
    return told, flipped


#: Counts per request "carry" between two hosts when they agree within this share (of the mean of the two).
CARRY_TOLERANCE = 0.10


def carried(x: RunResult, y: RunResult) -> tuple[list[str], list[tuple[str, str, float, float]]]:
    """The servers that both runs counted (the dummy too), and those whose system calls or switches per request
    differ by more than CARRY_TOLERANCE of their mean: (server, "syscalls" or "switches", count in x, count in y)."""
    def counted(r: RunResult) -> dict[str, dict]:
        rows = {s.name: s.work for s in servers_of(r).values() if s.work and "syscalls" in s.work}
        if r.baseline is not None and r.baseline.work and "syscalls" in r.baseline.work:
            rows[r.baseline.name] = r.baseline.work
        return rows
    a, b = counted(x), counted(y)
    both = [n for n in a if n in b]
    apart = []
    for n in both:
        for key in ("syscalls", "switches"):
            u, v = a[n][key], b[n][key]
            if abs(u - v) > CARRY_TOLERANCE * (u + v) / 2:
                apart.append((n, key, u, v))
    return both, apart


def fit(r: RunResult) -> Fit | None:
    """The run's fit of diffs against the work over the dummy's (None: no counts, or fewer than 4 servers)."""
    base = r.baseline
    if base is None or not base.work or "syscalls" not in base.work or base.cpu_user is None:
        return None
    rows, names, ys = [], [], []
    for s in servers_of(r).values():
        w = s.work or {}
        if "syscalls" not in w or s.cpu_user is None:
            continue
        rows.append([(s.cpu_user.mean - base.cpu_user.mean) / 1000, w["switches"] - base.work["switches"],
                     w["syscalls"] - base.work["syscalls"]])
        ys.append(s.diff.mean / 1000)
        names.append(s.name)
    if len(rows) < 4:
        return None
    x, y = np.array(rows), np.array(ys)
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    fitted = x @ coef
    ss_res = float(((y - fitted) ** 2).sum())
    ss_tot = float(((y - y.mean()) ** 2).sum())
    return Fit(r.run_id, names, float(coef[0]), float(coef[1]), float(coef[2]),
               1 - ss_res / ss_tot if ss_tot else 0.0,
               {n: (float(a), float(b)) for n, a, b in zip(names, y, fitted, strict=True)})


def report(runs: list[RunResult]) -> list[str]:
    """The lines of the comparison: runs, the table (markdown), rank flips, fits."""
    from .export.tables import render_md
    out = ["Runs:"] + [f"{i + 1}. {label(r)} (reference round trip {r.ref.get(r.primary, 0) / 1000:.2f} us, dummy "
                       f"{_work_line(r)})" for i, r in enumerate(runs)]
    cols, rows = table(runs)
    out += ["", render_md((tuple(cols), rows, set(range(1, len(cols))))), ""]
    for (i, x), (j, y) in combinations(enumerate(runs), 2):
        told, flipped = flips(x, y)
        out.append(f"Runs {i + 1} and {j + 1}: {len(flipped)} of the {told} pairs of servers both tell apart rank the "
                   "other way round" + (": " + ", ".join(f"{a}/{b}" for a, b in flipped[:12])
                                        + (" ..." if len(flipped) > 12 else "") if flipped else "") + ".")
    for (i, x), (j, y) in combinations(enumerate(runs), 2):
        both, apart = carried(x, y)
        if not both:
            continue
        names = sorted({n for n, *_ in apart})
        dummy = " (the dummy among them)" if x.baseline is not None and x.baseline.name in both else ""
        out.append(f"Runs {i + 1} and {j + 1}: the system calls and switches per request of {len(both) - len(names)} "
                   f"of the {len(both)} servers both counted{dummy} agree within {CARRY_TOLERANCE:.0%}"
                   + ("; apart: " + ", ".join(f"{n} {k} {u:.2f} vs {v:.2f}" for n, k, u, v in apart) if apart else "")
                   + ".")
    for i, r in enumerate(runs):
        f = fit(r)
        if f is None:
            out.append(f"Run {i + 1}: no fit (the run did not count system calls and switches).")
            continue
        worst = sorted(f.points.items(), key=lambda kv: -abs(kv[1][0] - kv[1][1]))[:5]
        out.append(f"Run {i + 1}: diff = {f.user:.2f} x user CPU + {f.switch_us:.2f} us x switches + "
                   f"{f.syscall_us:.2f} us x system calls (each over the dummy's, per request), R^2 = {f.r2:.2f} over "
                   f"{len(f.servers)} servers; least explained: "
                   + ", ".join(f"{n} {d:.2f} us (fit {p:.2f})" for n, (d, p) in worst) + ".")
    return out


def _work_line(r: RunResult) -> str:
    w = (r.baseline.work if r.baseline else None) or {}
    if "syscalls" not in w:
        return "work not counted"
    return f"{w['syscalls']:.2f} system calls and {w['switches']:.2f} switches per request"
