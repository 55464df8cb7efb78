"""Converts a run of the paired design's first layout (latency-diff/run/3: a file per block) to the current one.

A run/3 directory holds run.json, env.json, pairs.jsonl naming one file per block under blocks/,
server logs under logs/, checked responses under responses/, the request bytes, warm-up outputs
(read by nothing) and the derived reports. The conversion writes the run's records in the layout of
rundir.py (run.json with the settings, environment and servers; pairs.jsonl; blocks.jsonl.xz with
every block's output verbatim; logs.jsonl.xz), recomputes the derived files, and only then removes
the old files. Before it removes anything it checks that the recomputed diffs equal the run's own
summary.json: the old diff is today's unscaled diff (the scaled one is new), for every client.

Usage: python3 -m latency_diff.migrate RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
from pathlib import Path

from . import evaluate, rundir
from .records import BlockRecord, CostRecord, PairRecord, ProcessRecord, WarmupRound

OLD_FORMAT = "latency-diff/run/3"
OLD_FILES = ("env.json", "request-http1.0.bin", "request-http1.1.bin", "diffs.svg", "percentiles.svg")
OLD_DIRS = ("blocks", "logs", "responses", "warmup")


class MigrateError(Exception):
    """A run that cannot be converted; nothing of it was changed."""


def _process(tag: str, entry: dict, prefix: str, port: int | None) -> ProcessRecord:
    return ProcessRecord(tag=tag, pid=entry.get(f"{prefix}pid"), port=port,
                         response_bytes=entry.get(f"{prefix}response_bytes"))


def pair_record(entry: dict, settings: dict) -> PairRecord:
    """An old pairs.jsonl line as a PairRecord (blocks apart)."""
    base_tag = Path(entry.get("base_log_file") or f"logs/dummy-r{entry.get('round')}.log").stem
    base = _process(base_tag, entry, "base_", settings.get("port")) if entry.get("status") != "failed" or \
        "base_pid" in entry else None
    proc = None
    if "pid" in entry:
        proc = _process(entry.get("tag") or f"{entry['server']}-p{entry['pair']}", entry, "", entry.get("port"))
        proc.affinity = entry.get("affinity")
        proc.warmup = [WarmupRound(**w) for w in entry.get("warmup") or []]
        proc.prepare_s = entry.get("setup_s")
        proc.exit_status = entry.get("exit_status")
    seconds = {"total": entry.get("seconds", {}).get("total")}
    if "measure_s" in entry:
        seconds["measure"] = entry["measure_s"]
    return PairRecord(server=entry["server"], pair=entry["pair"], status=entry["status"], round=entry.get("round"),
                      http=entry.get("http", "1.0"), phase=entry.get("phase"), reason=entry.get("reason"),
                      base=base, process=proc,
                      costs={k: CostRecord(**v) for k, v in (entry.get("costs") or {}).items()},
                      seconds={k: v for k, v in seconds.items() if v is not None}, notes=list(entry.get("notes") or []))


def block_records(run_dir: Path, entry: dict) -> list[BlockRecord]:
    out = []
    for b in entry.get("blocks") or []:
        path = run_dir / b["file"]
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise MigrateError(f"{path}: cannot read: {e.strerror}") from e
        if b["client"] == "lean":
            try:
                output = json.loads(text)
            except json.JSONDecodeError as e:
                raise MigrateError(f"{path}: not valid JSON: {e}") from e
        else:
            output = text
        err = path.with_suffix(".stderr.txt")
        out.append(BlockRecord(server=entry["server"], pair=entry["pair"], client=b["client"], output=output,
                               quad=b["quad"], slot=b["slot"], target=b["target"],
                               stderr=err.read_text(encoding="utf-8").strip() if err.is_file() else None))
    return out


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)


def check_numbers(old: dict, result: evaluate.RunResult) -> list[str]:
    """Where the recomputed run differs from its own summary.json: every server's validity and, per client, the
    diff (today's unscaled diff) and its interval."""
    problems = []
    by_name = {s.name: s for s in result.servers}
    for o in old["servers"]:
        s = by_name.get(o["name"])
        if s is None or s.valid != o["valid"]:
            problems.append(f"{o['name']}: valid {o['valid']} before, {None if s is None else s.valid} now")
            continue
        if not o["valid"] or o.get("baseline"):
            continue
        for client, oc in o["clients"].items():
            c = s.clients.get(client)
            new = c.unscaled_diff if c else None
            od = oc["diff_ns"]
            if new is None or not all(_same(od[k], getattr(new, k)) for k in ("mean", "ci95_low", "ci95_high")):
                problems.append(f"{o['name']} ({client}): diff {od} before, {new} now")
    return problems


def migrate(run_dir: Path) -> None:
    """Converts one run/3 directory in place. Raises MigrateError (the directory is then as it was)."""
    try:
        run = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        env = json.loads((run_dir / "env.json").read_text(encoding="utf-8"))
        old_summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise MigrateError(f"{run_dir}: cannot read run.json, env.json or summary.json: {e}") from e
    if run.get("format") != OLD_FORMAT:
        raise MigrateError(f"{run_dir / 'run.json'}: format {run.get('format')!r}, not {OLD_FORMAT}")
    settings = run.pop("settings")
    env.pop("settings", None)
    servers = env.pop("servers")
    requests = {}
    for http in ("1.0", "1.1"):
        f = run_dir / f"request-http{http}.bin"
        if f.is_file():
            requests[http] = f.read_bytes().decode("latin-1")
    entries = [json.loads(x) for x in (run_dir / "pairs.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    staging = run_dir / ".migrating"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        w = rundir.Writer(staging)
        run.pop("format")
        w.run({**run, "settings": settings, "requests": requests, "env": env, "servers": servers})
        for e in entries:
            for b in block_records(run_dir, e):
                w.block(b)
            w.pair(pair_record(e, settings))
        for folder, kind in (("logs", "log"), ("responses", "response")):
            for f in sorted((run_dir / folder).glob("*")) if (run_dir / folder).is_dir() else []:
                text = f.read_bytes().decode("latin-1" if kind == "response" else "utf-8", errors="replace")
                w.log(kind, f.stem, text)
        w.close()
        result = evaluate.build(staging)
        problems = check_numbers(old_summary, result)
        if problems:
            raise MigrateError(f"{run_dir}: the recomputed diffs differ from summary.json: " + "; ".join(problems[:5]))
        from . import export  # the plots need matplotlib, from the kit's virtual environment
        export.write_all(staging, result)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    # Everything checked: the old files go, the new ones take their place.
    for name in OLD_FILES:
        (run_dir / name).unlink(missing_ok=True)
    for name in OLD_DIRS:
        shutil.rmtree(run_dir / name, ignore_errors=True)
    for f in staging.iterdir():
        f.replace(run_dir / f.name)
    staging.rmdir()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", type=Path, help="run directories of format latency-diff/run/3")
    args = p.parse_args(argv)
    failed = 0
    for d in args.runs:
        try:
            migrate(d)
            print(f"migrate: {d}: converted")
        except (MigrateError, evaluate.AnalysisError) as e:
            print(f"migrate: error: {e}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
