"""The gate on cases whose truth is known: run-all.sh --compare A B --fail-if-slower M, run by run.

- **A known regression.** The JDK's own server on JDK 17 (`--old-java`; by default the pinned runtime the JDK
  matrix uses, installed on first use) against itself on the run's JDK, gated at 10% of A's diff
  (`--regression-margin`). On the kit's hosts the old JDK is tens of percent slower, so the gate must FAIL (exit 1).
- **A/A.** A server (`--server`, default undertow) against itself under another name (a variant with `name=`
  alone: the same jar, JVM and flags), `--runs` times, gated at `--margin` (default 1us). B is not slower than A by
  any amount, so every FAIL is a false alarm: at most 5% of the runs, which over 10 runs means none. An
  UNDECIDED run is no false alarm, but it spent its budget and said nothing: the page counts them.

Each run is a default head-to-head run, stopped by the gate (B's pairs stop once its interval clears the margin).
Reported per run: the verdict and exit status, B - A with its interval, the margin, B's pairs and why it stopped,
and the run's minutes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import gate
from ..analysis import evaluate
from ..analysis.export import tables
from ..variants import java_binary, java_major
from . import common, matrix

#: The false alarms the A/A runs may raise, at most (a share of the runs).
FALSE_ALARMS = 0.05


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server", default="undertow", help="the server of the A/A runs (default undertow)")
    p.add_argument("--runs", type=int, default=10, help="A/A runs (default 10)")
    p.add_argument("--margin", default="1us", help="the A/A runs' margin (default 1us)")
    p.add_argument("--old-java", metavar="JDK", help="the JDK of the known regression (default: the JDK 17 runtime "
                   "of requirements-jdk17.txt, as the JDK matrix uses)")
    p.add_argument("--regression-margin", default="10%", help="the known regression's margin (default 10%%)")


def one(out: Path, folder: str, a: str, b: str, margin: str, driver_args: list[str]) -> dict:
    run_dir, minutes, code = common.run_gated(out / folder, ["--compare", a, b, "--fail-if-slower", margin,
                                                             *driver_args])
    r = evaluate.build(run_dir)
    v = gate.judge_run(r, gate.parse_margin(margin))
    row = r.server(v.name)
    return {"dir": str(run_dir.relative_to(out)), "exit": code, "verdict": gate.WORDS.get(code, "ERROR"),
            "judged": gate.WORDS[v.code], "change_ns": v.change_ns, "low_ns": v.low_ns, "high_ns": v.high_ns,
            "margin_ns": v.margin_ns, "pairs": row.stop_pairs if row else None, "stop": row.stop if row else None,
            "minutes": minutes}


def _us(x: float | None) -> str:
    return "-" if x is None else f"{x / 1000:+.2f}"


def run(args: argparse.Namespace, driver_args: list[str]) -> int:
    if args.runs < 1:
        raise SystemExit("gate: --runs must be at least 1")
    for m in (args.margin, args.regression_margin):
        try:
            gate.parse_margin(m)
        except ValueError as e:
            raise SystemExit(f"gate: margin {m!r}: {e}") from e
    old = args.old_java or matrix.jdk_home(17)
    major = java_major(java_binary(old))
    if major is None:
        raise SystemExit(f"gate: --old-java {old}: no java there that runs")
    out = common.out_dir(args.results_dir, "gate")
    runs = [{"case": "regression", "expected": "FAIL",
             **one(out, "run-00-regression", "jdk", f"jdk:java={old};name=jdk-on-{major}", args.regression_margin,
                   driver_args)}]
    for i in range(1, args.runs + 1):
        runs.append({"case": "A/A", "expected": "not FAIL",
                     **one(out, f"run-{i:02d}-aa", args.server, f"{args.server}:name={args.server}-again",
                           args.margin, driver_args)})
    aa = [r for r in runs if r["case"] == "A/A"]
    counts = {w: sum(r["verdict"] == w for r in aa) for w in ("PASS", "FAIL", "UNDECIDED")}
    allowed = FALSE_ALARMS * len(aa)
    reg = runs[0]
    lines = [f"- Known regression (jdk on JDK {major} against jdk on the run's JDK, margin {args.regression_margin}): "
             f"{reg['verdict']} (exit {reg['exit']}), B - A {_us(reg['change_ns'])} [{_us(reg['low_ns'])}, "
             f"{_us(reg['high_ns'])}] us after {reg['pairs']} pairs; expected FAIL: "
             + ("met." if reg["verdict"] == "FAIL" else "**missed**.")]
    lines.append(f"- A/A ({args.server} against itself, margin {args.margin}, {len(aa)} runs): PASS {counts['PASS']}, "
                 f"FAIL {counts['FAIL']}, UNDECIDED {counts['UNDECIDED']}. False alarms {counts['FAIL']} of {len(aa)}; "
                 f"target at most {FALSE_ALARMS:.0%} ({allowed:g} of {len(aa)}): "
                 + ("met." if counts["FAIL"] <= allowed else f"**missed** by {counts['FAIL'] - allowed:g} runs."))
    minutes = [r["minutes"] for r in aa]
    lines.append(f"- Minutes a gated run, A/A: {min(minutes):.1f} to {max(minutes):.1f} (median "
                 f"{sorted(minutes)[len(minutes) // 2]:.1f}), the set-up of the run included; B's pairs: "
                 + ", ".join(str(r["pairs"]) for r in aa) + ".")
    t: tables.Table = (("run", "case", "verdict", "exit", "B - A [us]", "95% CI [us]", "margin [us]", "B's pairs",
                        "stopped because", "minutes"),
                       [[r["dir"], r["case"], r["verdict"], str(r["exit"]), _us(r["change_ns"]),
                         f"[{_us(r['low_ns'])}, {_us(r['high_ns'])}]",
                         "-" if r["margin_ns"] is None else f"{r['margin_ns'] / 1000:.2f}", str(r["pairs"]),
                         r["stop"] or "-", f"{r['minutes']:.1f}"] for r in runs], {4, 5, 6, 7, 9})
    mismatch = [r["dir"] for r in runs if r["verdict"] != r["judged"]]
    if mismatch:
        lines.append(f"- The exit status and the verdict read back from the run differ in {', '.join(mismatch)}.")
    print("\n".join(lines) + "\n" + tables.render_text(t))
    common.write(out, "gate", "The gate on known cases", ["\n".join(lines), common.md_table(t)],
                 {"server": args.server, "margin": args.margin, "regression_margin": args.regression_margin,
                  "old_java": major, "runs": runs, "aa": counts})
    return 0
