"""What the kit's benchmarks share: their output folder, driver runs, the injectors, intervals at equal time."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from .. import KIT_ROOT
from ..analysis import evaluate
from ..analysis.export import tables
from ..analysis.model import RunResult

#: The driver's command line: this kit's, then an older layout's (before latency_diff/measure/; the oldest had
#: none but latency_diff.driver).
_DRIVERS = ("latency_diff.measure.cli", "latency_diff.cli")
#: The core servers of the targets: the ladder comes with every run.
CORE = "undertow,vertx,jetty,tomcat-nio,tomcat-nio2,jdk"


def out_dir(results: Path, kind: str) -> Path:
    """results/<kind>-<UTC time>/, new."""
    d = results / f"{kind}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    d.mkdir(parents=True)
    return d


def run_driver(folder: Path, args: list[str], kit: Path = KIT_ROOT, python: str = sys.executable) -> tuple[Path, float]:
    """One run of a kit's driver into the fresh folder `folder`: its run directory and its wall time in minutes. Exits
    when it failed."""
    run_dir, minutes, _ = run_gated(folder, args, kit, python, ok=(0, 3))
    return run_dir, minutes


def run_gated(folder: Path, args: list[str], kit: Path = KIT_ROOT, python: str = sys.executable,
              ok: tuple[int, ...] = (0, 1, 3)) -> tuple[Path, float, int]:
    """As run_driver, with the exit status too, any of `ok` (a gated run's PASS, FAIL and UNDECIDED by default)."""
    folder.mkdir(parents=True)
    # The driver's command line in this kit's layout, or in an older kit's (a benchmark may run one).
    module = next((m for m in _DRIVERS if (kit / (m.replace(".", "/") + ".py")).is_file()), "latency_diff.driver")
    start = time.monotonic()
    code = subprocess.run([python, "-m", module, "--results-dir", str(folder), "--allow-concurrent", *args],
                          cwd=kit).returncode
    minutes = (time.monotonic() - start) / 60
    runs = [d for d in folder.iterdir() if d.is_dir()]
    if code not in ok or len(runs) != 1:
        raise SystemExit(f"benchmark: the run in {folder} failed (exit status {code}); see above")
    return runs[0], minutes, code


@contextmanager
def injector(mode: str | None, cpu: int | None, seed: int = 1):
    """The stall or drift injector running (for at most two hours) while the block runs; nothing for mode None."""
    if mode is None:
        yield
        return
    cmd = [sys.executable, "-m", "latency_diff.measure.injector", mode, "--seconds", "7200", "--seed", str(seed)]
    proc = subprocess.Popen(cmd + ([] if cpu is None else ["--cpu", str(cpu)]), cwd=KIT_ROOT)
    try:
        yield
    finally:
        proc.terminate()
        proc.wait(10)


def injector_cpu(mode: str | None, measured: int | None, other: int | None) -> int | None:
    """Where an injector runs: the stall injector on the measured CPU, the drift injector on the other one."""
    return measured if mode == "stall" else other


def widths(r: RunResult) -> dict[str, tuple[float, float]]:
    """server -> (diff, half-width) in ns, for every measured server with an interval."""
    return {s.name: (s.diff.mean, s.diff.half_width) for s in r.ranked
            if not s.baseline and s.diff.half_width is not None}


def narrower_at_equal_time(half_a: float, minutes_a: float, half_b: float, minutes_b: float) -> float:
    """How many times narrower b's interval is than a's at equal time: an interval narrows with the square root of the
    time spent, so (a x sqrt(a's minutes)) / (b x sqrt(b's minutes))."""
    if half_b == 0:
        return math.inf
    return (half_a * math.sqrt(minutes_a)) / (half_b * math.sqrt(minutes_b))


def build(run_dir: Path) -> RunResult:
    return evaluate.build(run_dir)


def write(out: Path, kind: str, title: str, parts: list[str], data: dict) -> None:
    """<kind>.md (title, parts) and <kind>.json (data) in the benchmark's folder; prints where."""
    (out / f"{kind}.md").write_text("\n\n".join([f"# {title}", *parts]) + "\n", encoding="utf-8")
    (out / f"{kind}.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"Files: {out / f'{kind}.md'}, {out / f'{kind}.json'}")


def md_table(t: tables.Table) -> str:
    return tables.render_md(t)


def us_pm(mean: float, half: float | None) -> str:
    return f"{mean / 1000:.2f} ± {half / 1000:.2f}" if half is not None else f"{mean / 1000:.2f}"
