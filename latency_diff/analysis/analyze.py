"""Turns a run directory's raw files into the latency-diff tables, files and plots, or compares two runs.

Usage: scripts/analyze.py RUN_DIR [--quiet]
       scripts/analyze.py compare RUN_A RUN_B [--html FILE]
       scripts/analyze.py hosts RUN RUN... [--out FILE]
       scripts/analyze.py merge RUN_DIR... [--by-host] [--out DIR]

RUN_DIR: writes summary.json, summary.csv, report.md, report.html (one self-contained page), and
the diffs and percentiles plots (PNG) into the run directory and prints the tables. Parses
strictly: a malformed file is an error naming the file and what is wrong, the exit status is
non-zero and nothing is written (a last record cut short by a stopped run is left out, with a
warning).

compare: for each server valid in both runs, the change of its ratio (server over dummy round trip,
each process pair over its own baseline) from RUN_A to RUN_B with a 95% Welch interval over both runs'
process pairs, and "not significant" where the interval includes zero: a regression check between
versions, JDKs or machines. Each run scales its diffs to its own reference baseline round trip, and
that reference moves between runs of one host, so the microsecond columns put both runs at RUN_A's
reference: diff = (ratio - 1) x ref A, change = (ratio B - ratio A) x ref A; both references are
printed. A server is compared by its headline client, or by a client both runs measured it with
when the runs' headline clients differ (client column). Notes name every setting and fact of the
machine that differs (JDK, JVM flags, run length, pinning, CPU, kernel, kit commit, ...), every
server valid in one run only (with why), and every server that could not be compared (with why).
--html FILE also writes the comparison as a page. Both runs must be of the current format
(latency-diff/run/4); a run of an earlier
single-server format is refused with a message saying so (one error line, exit status 1). Exit
status: 0; 1 on an unreadable run; RUN_DIR: 3 when the run is incomplete (compare says so in a note).
A gate (compare --fail-if-slower MARGIN, or RUN_DIR of a run-all.sh --compare A B --fail-if-slower MARGIN
run): 0 PASS, 1 FAIL, 3 UNDECIDED (an incomplete run too), 2 a usage error (gate.py).

hosts: runs of different machines side by side (latency_diff/analysis/hosts.py): per server its diff, ratio, rank
and work per request in each run, the pairs of servers whose order flips, and per run that counted the
work a fit of the diffs against user CPU, context switches and system calls (the host's price of each).

merge: one table from the shard runs of one sharded run (run-all.sh --shard I/N), by ratio, with the
hosts' spread from the anchors in every comparison of rows of different shards (latency_diff/analysis/merge.py);
--by-host: runs of different hosts side by side, one column per host. Writes a new folder,
results/merged-<UTC time>/ or --out DIR, never an existing one. Exit status 2 when the runs cannot be
merged (missing, incomplete, a duplicate shard, different CPU models, JDKs or kit commits, ...).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from .. import envinfo, gate, prior, stats
from ..stats import Summary
from . import evaluate, export
from .export import html, sentences, tables, terminal
from .model import ClientResult, RunResult, ServerResult

#: Settings that do not change what is measured (where files go, which port, where a value came from): compare
#: names every other one that differs, a setting added later included.
UNMEASURED_SETTINGS = frozenset({"servers", "results_dir", "port", "start_timeout_s", "sources", "allow_concurrent",
                                 "shard"})
#: What a differing setting may do to the figures, where that is not plain.
SETTING_EFFECTS = {
    "pinning": "the diffs measure different things (shared: the server's CPU work; split: its critical-path latency)",
    "jvm_flags": "every server and the dummy ran with other flags: a change may be the flags'",
    "http": "the servers may have been measured over other request bytes",
    "clients": "a server may be compared by another client (client column)",
    "run_length": "the interleaving differs (requests in a row to one process)",
    "settle": "the JVMs may have been measured at another stage of the JIT's work",
    "warmup": "the JVMs may have been measured at another stage of the JIT's work",
    "compare": "a head-to-head run measures against another baseline",
}


def _design(cfg: dict) -> str:
    return "the interleaved lean client" if "segment" in cfg else "ABBA blocks (the earlier layout)"


def run_differences(a: RunResult, b: RunResult) -> list[str]:
    """Everything about how and where the two runs were made that differs: one note each."""
    out = []
    for label, r in (("A", a), ("B", b)):
        if r.status != "complete":
            out.append(f"{label} is {r.status}" + (f" ({r.reason})" if r.reason else "")
                       + ": its servers' pairs may be fewer than planned")
        if r.caveat:
            out.append(f"{label}: {r.caveat}")
        if (r.env.get("kit") or {}).get("dirty"):
            out.append(f"{label}'s kit had uncommitted changes: its commit does not say which code measured it")
    if _design(a.settings) != _design(b.settings):
        out.append(f"the design differs: A measured with {_design(a.settings)}, B with {_design(b.settings)}")
    if a.primary != b.primary:
        out.append(f"the runs' headline clients differ ({a.primary} in A, {b.primary} in B): each server is compared "
                   "by a client both runs measured it with (client column)")
    for key in sorted((set(a.settings) | set(b.settings)) - UNMEASURED_SETTINGS):
        va, vb = a.settings.get(key), b.settings.get(key)
        if va != vb:
            effect = SETTING_EFFECTS.get(key)
            out.append(f"setting {key} differs: {envinfo.shown(key, va)} in A, {envinfo.shown(key, vb)} in B"
                       + (f": {effect}" if effect else ""))
    for label, fact in envinfo.FACTS:
        va, vb = (fact(r.env) if callable(fact) else r.env.get(fact) for r in (a, b))
        if va != vb:
            effect = envinfo.FACT_EFFECTS.get(label)
            out.append(f"{label} differs: {envinfo.shown(label, va)} in A, {envinfo.shown(label, vb)} in B"
                       + (f": {effect}" if effect else ""))
    return out


def _client(sa: ServerResult, sb: ServerResult) -> str | None:
    """The client a server is compared by: its headline client in both runs, else one both runs measured it with
    (A's headline client first), else None."""
    both = [c for c in (sa.primary, sb.primary, *sa.clients) if c in sa.clients and c in sb.clients]
    return both[0] if both else None


def _ratios(c: ClientResult) -> list[float]:
    """A server's per-pair ratios (server over dummy round trip), free of any reference."""
    return list(c.ratios) or [1 + e / c.ref for e in c.estimates]


def _plus(x: float, digits: int) -> str:
    """x with its sign, and no "-0.00" for a change that rounds to nothing."""
    return f"{round(x, digits) + 0.0:+.{digits}f}"


def _fixed(x: float, digits: int) -> str:
    return f"{round(x, digits) + 0.0:.{digits}f}"


def _interval(x: Summary, digits: int, k: float = 1.0) -> str:
    if x.ci95_low is None:
        return "-"
    return f"[{_fixed(x.ci95_low * k, digits)}, {_fixed(x.ci95_high * k, digits)}]"


def _library(s: ServerResult) -> str:
    return " ".join(x for x in (s.library or "no library", s.library_version) if x)


def _variant(s: ServerResult) -> str:
    return ", ".join(f"{k} {envinfo.shown(k, v)}" for k, v in sorted((s.variant or {}).items())) or "none"


def _baseline_name(r: RunResult) -> str | None:
    return r.baseline.name if r.baseline else None


def _server_notes(a: RunResult, b: RunResult) -> list[str]:
    """Every server that is not compared, and why: valid in one run only (in both directions), a baseline in one run
    and a row in the other, valid in neither."""
    out = []
    for x, y, lx, ly in ((a, b, "A", "B"), (b, a, "B", "A")):
        missing = []
        for s in x.servers:
            if not s.valid or s.baseline:
                continue
            t = y.server(s.name)
            if t is None:
                missing.append(s.name)
            elif t.baseline:
                out.append(f"{s.name}: a row of {lx}, the baseline of {ly} (every row of {ly} is measured against it): "
                           "not compared")
            elif not t.valid:
                out.append(f"{s.name}: valid in {lx} only; invalid in {ly}: {t.reason or 'no reason recorded'}")
        if missing:
            out.append(f"valid in {lx} only, not in {ly}: {', '.join(missing)}")
    for s in a.servers + [t for t in b.servers if a.server(t.name) is None]:
        sa, sb = a.server(s.name), b.server(s.name)
        rows = [t for t in (sa, sb) if t is not None and not t.baseline]
        if any(t.valid for t in rows) or not rows:
            continue  # compared or listed above; or a baseline, which the notes on the runs name
        out.append(f"{s.name}: valid in neither run ({_why(sa, 'A')}; {_why(sb, 'B')})")
    return out


def _why(s: ServerResult | None, label: str) -> str:
    if s is None:
        return f"not in {label}"
    if s.baseline:
        return f"the baseline of {label}"
    return f"invalid in {label}: {s.reason or 'no reason recorded'}"


def compare(a: RunResult, b: RunResult, changes: list | None = None) -> tuple[tables.Table, list[str]]:
    """The change of each server's ratio (server over dummy round trip) from run a to run b, and in microseconds at
    a's reference baseline round trip; notes: the references, what differs between the runs, and every server that
    could not be compared, with why. Never raises on a server: what cannot be compared is a note. changes: gets
    (server, change of the ratio as a Summary, A's reference ns, A's diff ns) per compared server."""
    notes = run_differences(a, b)
    rows, used = [], []
    base_a, base_b = _baseline_name(a), _baseline_name(b)
    if base_a != base_b:
        notes.append(f"the runs measure against different baselines ({base_a} in A, {base_b} in B): a ratio is over "
                     "another process's round trip in each, so no server is compared")
    for sa in a.ranked if base_a == base_b else []:
        sb = b.server(sa.name)
        if sa.baseline or sb is None or sb.baseline or not sb.valid:
            continue  # the baseline itself, or listed by _server_notes
        if sa.jvm_flags != sb.jvm_flags:
            notes.append(f"{sa.name}: its own JVM flags differ: {envinfo.shown('jvm_flags', sa.jvm_flags)} in A, "
                         f"{envinfo.shown('jvm_flags', sb.jvm_flags)} in B")
        if _library(sa) != _library(sb):
            notes.append(f"{sa.name}: {_library(sa)} in A, {_library(sb)} in B")
        if sa.variant != sb.variant:
            notes.append(f"{sa.name}: its variant differs: {_variant(sa)} in A, {_variant(sb)} in B")
        if sa.http != sb.http:
            notes.append(f"{sa.name}: HTTP/{sa.http} in A, HTTP/{sb.http} in B")
        client = _client(sa, sb)
        if client is None:
            notes.append(f"{sa.name}: not compared: measured by {', '.join(sa.clients)} in A and by "
                         f"{', '.join(sb.clients)} in B, no client in common")
            continue
        ca, cb = sa.clients[client], sb.clients[client]
        ra, rb = _ratios(ca), _ratios(cb)
        if not ra or not rb:
            notes.append(f"{sa.name}: not compared: no pair's ratio in {'A' if not ra else 'B'} ({client} client)")
            continue
        if client != sa.primary or client != sb.primary:
            notes.append(f"{sa.name}: compared by the {client} client, the one both runs measured it with (its "
                         f"headline client: {sa.primary} in A, {sb.primary} in B)")
        if len(ra) < 2 or len(rb) < 2:
            notes.append(f"{sa.name}: {len(ra)} process pair(s) in A and {len(rb)} in B: no interval for the change, "
                         "not tested (an interval needs 2 or more pairs in each run; the default profile gives 3)")
        if client not in used:
            used.append(client)
        ref = ca.ref
        # ratio B - ratio A, Welch over both runs' pairs, each run's sd bounded as in its own interval
        change = stats.welch_difference(rb, ra, cb.ratio.stdev or 0.0, ca.ratio.stdev or 0.0)
        mean_a, mean_b = statistics.fmean(ra), statistics.fmean(rb)
        diff_a, diff_b = (mean_a - 1) * ref, (mean_b - 1) * ref
        holds_one = ca.ratio.ci95_low is not None and ca.ratio.ci95_low <= 1 <= ca.ratio.ci95_high
        rel = "-" if holds_one or abs(diff_a) < 1 else _plus(100 * change.mean * ref / abs(diff_a), 0) + "%"
        if changes is not None:
            changes.append((sa.name, change, ref, diff_a))
        rows.append([sa.name, client, _fixed(mean_a, 4), _fixed(mean_b, 4), _plus(change.mean, 4),
                     _interval(change, 4), _fixed(diff_a / 1000, 2), _fixed(diff_b / 1000, 2),
                     _plus(change.mean * ref / 1000, 2), _interval(change, 2, ref / 1000), rel,
                     tables.change_verdict(change)])
    refs = []
    for client in used or [a.primary]:
        ra_ns, rb_ns = a.ref.get(client), b.ref.get(client)
        refs.append(f"reference baseline round trip ({client} client): {tables.us(ra_ns)} us in A, {tables.us(rb_ns)} "
                    f"us in B; every [us] column is at A's ({tables.us(ra_ns)} us), B's diffs rescaled to it")
    cols = ("server", "client", "ratio A", "ratio B", "ratio change", "ratio change 95% CI", "diff A [us]",
            "diff B [us]", "change [us]", "change 95% CI [us]", "relative change", "verdict")
    return (cols, rows, set(range(2, 11))), refs + notes + _server_notes(a, b)


def agreement(a: RunResult, b: RunResult) -> list[str]:
    """Reproducibility of b against a, judged on the ratios (free of each run's reference round trip): whose ratio
    intervals overlap, and whether the servers whose intervals are apart in both runs rank the same in both (pairs
    apart in one run only are counted, not judged). Each server by the client compare uses; nothing when the runs
    measure against different baselines (compare says so)."""
    both = []
    for sa in a.ranked if _baseline_name(a) == _baseline_name(b) else []:
        sb = b.server(sa.name)
        if sa.baseline or sb is None or sb.baseline or not sb.valid:
            continue
        client = _client(sa, sb)
        if client is None:
            continue
        xa, xb = sa.clients[client].ratio, sb.clients[client].ratio
        if xa.ci95_low is not None and xb.ci95_low is not None:
            both.append((sa.name, xa, xb))
    if not both:
        return []

    def order(x: Summary, y: Summary) -> int:  # -1: x below y, 1: above, 0: intervals overlap
        if x.ci95_high < y.ci95_low:
            return -1
        return 1 if y.ci95_high < x.ci95_low else 0

    apart_iv = [name for name, xa, xb in both if order(xa, xb)]
    out = [f"ratio intervals overlap for {len(both) - len(apart_iv)} of {len(both)} servers"
           + (f" (not: {', '.join(apart_iv)})" if apart_iv else "")]
    same, flipped, one_run = 0, [], 0
    for i, (x, xa, xb) in enumerate(both):
        for y, ya, yb in both[i + 1:]:
            oa, ob = order(xa, ya), order(xb, yb)
            if oa and ob:
                if oa == ob:
                    same += 1
                else:
                    flipped.append(f"{x}/{y}")
            elif oa or ob:
                one_run += 1
    out.append(f"ranking: {same} pairs of servers are apart in both runs and rank the same, {len(flipped)} rank the "
               f"other way round" + (f" ({', '.join(flipped)})" if flipped else "")
               + f"; {one_run} pairs are apart in one run only")
    return out


def main_compare(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="analyze.py compare", description="Change of each server's ratio (server "
                                     "over dummy) from RUN_A to RUN_B with its 95% interval, and in microseconds at "
                                     "RUN_A's reference round trip; 'not significant' within noise.")
    parser.add_argument("run_a", type=Path, help="the earlier or reference run directory")
    parser.add_argument("run_b", type=Path, help="the run to compare with it")
    parser.add_argument("--html", type=Path, metavar="FILE", help="also write the comparison as a page to FILE")
    parser.add_argument("--fail-if-slower", metavar="MARGIN", help="a gate for CI: exit 0 when every compared "
                        "server (or --server) is shown not slower in B than in A by more than MARGIN (1us, or 10%% "
                        "of A's diff), 1 when one is shown slower by more, 3 when undecided, 2 on a usage error")
    parser.add_argument("--server", action="append", metavar="NAME", help="the server(s) the gate judges (default: "
                        "every compared one)")
    args = parser.parse_args(argv)
    try:
        margin = gate.parse_margin(args.fail_if_slower) if args.fail_if_slower else None
    except ValueError as e:
        parser.error(f"--fail-if-slower {args.fail_if_slower}: {e}")
    try:
        a, b = evaluate.build(args.run_a), evaluate.build(args.run_b)
    except evaluate.AnalysisError as e:
        print(f"analyze: error: {e}", file=sys.stderr)
        return 1
    changes: list = []
    t, notes = compare(a, b, changes)
    print(f"A: {sentences.headline(a)}\nB: {sentences.headline(b)}\n")
    print(tables.render_text(t) if t[1] else "(no server to compare)")
    print(f"\n{COMPARE_EXPLANATION}")
    notes += agreement(a, b)
    for n in notes:
        print(f"note: {n}")
    if args.html:
        try:
            args.html.write_text(html.compare_html(a, b, t, notes, COMPARE_EXPLANATION), encoding="utf-8")
        except OSError as e:
            print(f"analyze: error: {args.html}: cannot write: {e.strerror}", file=sys.stderr)
            return 1
        print(f"Page: {args.html}")
    return 0 if margin is None else _gate(changes, margin, args.server)


def _gate(changes: list, margin: gate.Margin, names: list[str] | None) -> int:
    """Prints the gate's verdict per judged server and returns the exit status (gate.py)."""
    judged = [c for c in changes if names is None or c[0] in names]
    verdicts = [gate.Judged(name, gate.UNDECIDED) for name in sorted(set(names or ()) - {c[0] for c in judged})]
    for name, change, ref, diff_a in judged:
        low = None if change.ci95_low is None else change.ci95_low * ref
        high = None if change.ci95_high is None else change.ci95_high * ref
        verdicts.append(gate.judge(name, change.mean * ref, low, high, margin, diff_a))
    return _say(verdicts, margin)


def _say(verdicts: list[gate.Judged], margin: gate.Margin) -> int:
    for v in verdicts:
        print(v.line(margin))
    code = gate.combine([v.code for v in verdicts])
    print(f"gate: {gate.WORDS[code]} (exit {code})")
    return code


def main_hosts(argv: list[str]) -> int:
    from . import hosts
    parser = argparse.ArgumentParser(prog="analyze.py hosts", description=hosts.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="run directories, e.g. one per host")
    parser.add_argument("--out", type=Path, metavar="FILE", help="also write the comparison (markdown) to FILE")
    args = parser.parse_args(argv)
    if len(args.runs) < 2:
        parser.error("give at least two runs")
    try:
        runs = [evaluate.build(d) for d in args.runs]
    except evaluate.AnalysisError as e:
        print(f"analyze: error: {e}", file=sys.stderr)
        return 1
    text = "\n".join(hosts.report(runs)) + "\n"
    print(text, end="")
    if args.out:
        try:
            args.out.write_text(text, encoding="utf-8")
        except OSError as e:
            print(f"analyze: error: {args.out}: cannot write: {e.strerror}", file=sys.stderr)
            return 1
    return 0


COMPARE_EXPLANATION = (
    "ratio: server over dummy round trip, the mean over the run's process pairs (each pair over its own dummy, so it "
    "does not depend on the run's reference); ratio change: ratio B minus ratio A with a 95% Welch interval over both "
    "runs' process pairs; verdict: not significant when the interval includes 0, too few pairs when a run has one "
    "pair of the server. [us] columns: at A's reference baseline round trip (first note), for both runs: diff = "
    "(ratio - 1) x ref A, change = ratio change x ref A (B's own report, at B's reference, shows other diffs); "
    "relative change: change over |diff A|, '-' when A's diff is not distinguishable from 0.")


def main_merge(argv: list[str]) -> int:
    from . import merge
    parser = argparse.ArgumentParser(prog="analyze.py merge", description=merge.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", metavar="RUN_DIR", help="the shard runs (run-all.sh --shard "
                        "I/N), every one of 1 to N; with --by-host, the runs of several hosts")
    parser.add_argument("--by-host", action="store_true", help="runs of different hosts (CPU model, JDK or kit "
                        "commit) side by side, one column per host, each merged on its own and ranked within itself")
    parser.add_argument("--out", type=Path, metavar="DIR", help="the folder to write, which must not exist (default: "
                        "results/merged-<UTC time>/)")
    args = parser.parse_args(argv)
    try:
        shards = merge.load(args.runs)
        if args.by_host:
            groups = merge.hosts(shards)
        else:
            merge.check_hosts(shards)
            merge.check_set(shards)
        out = merge.out_dir(args.out)  # only once the runs are known to merge: no empty folder is left behind
    except merge.MergeError as e:
        print(f"analyze: merge: error: {e}", file=sys.stderr)
        print("analyze: nothing was written", file=sys.stderr)
        return 2
    try:
        if args.by_host:
            cols = merge.columns(groups, out.name)
            written = merge.write_by_host(out, cols)
            print(tables.render_text(merge.side_by_side(cols)))
            print("\n" + merge.BY_HOST_TEXT)
            for line in merge.column_lines(cols):
                print(line)
        else:
            result = merge.merged(shards, out.name)
            written = merge.write(out, result, shards)
            print(terminal.render(result))
    except export.ExportError as e:
        print(f"analyze: merge: error: {e}", file=sys.stderr)
        return 1
    print("Files: " + ", ".join(str(p) for p in written))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "compare":
        return main_compare(argv[1:])
    if argv and argv[0] == "hosts":
        return main_hosts(argv[1:])
    if argv and argv[0] == "merge":
        return main_merge(argv[1:])
    parser = argparse.ArgumentParser(prog="analyze.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path, help="a run directory, e.g. results/20261122T050000Z")
    parser.add_argument("--quiet", action="store_true", help="write the files, print only their location")
    args = parser.parse_args(argv)
    try:
        result = evaluate.build(args.run_dir)
    except evaluate.AnalysisError as e:
        print(f"analyze: error: {e}", file=sys.stderr)
        print("analyze: nothing was written", file=sys.stderr)
        return 1
    try:
        written = export.write_all(args.run_dir, result)
    except export.ExportError as e:
        print(f"analyze: error: {e}", file=sys.stderr)
        return 1
    prior.remember(args.run_dir, json.loads((args.run_dir / "summary.json").read_text()))
    if not args.quiet:
        print(terminal.render(result))
    print("Files: " + ", ".join(str(p) for p in written))
    if result.settings.get("fail_if_slower") and result.settings.get("compare"):
        code = _gate_run(result, gate.parse_margin(result.settings["fail_if_slower"]))
        if result.status != "complete":
            print(f"gate: the run is incomplete: UNDECIDED (exit {gate.UNDECIDED})")
            return gate.UNDECIDED
        return code
    return 0 if result.status == "complete" else 3


def _gate_run(r: RunResult, margin: gate.Margin) -> int:
    """The gate of a head-to-head run (run-all.sh --compare A B --fail-if-slower M): B's row is B - A."""
    return _say([gate.judge_run(r, margin)], margin)


if __name__ == "__main__":
    sys.exit(main())
