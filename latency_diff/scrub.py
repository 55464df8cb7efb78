"""Takes the measuring machine's paths out of a run's run.json and its logs, as the kit now writes them from the start.

Runs written before 26 November 2026 recorded the results directory, the JDK's folder and its java, and
a JDK variant's java by path. This rewrites, in place and only in run.json (the measurements are not
touched):
- settings.results_dir: the part from "results/" on, or the folder's name;
- env.jdk: without java.home and java (its version and vendor stay);
- a variant's java: its version and vendor (`describe`, from java -XshowSettings:properties when the JDK
  is at hand, else only the JDK's release file's version) instead of the path, and the path in its spec
  replaced by that version.

Runs written before 27 November 2026 also have the paths in their logs (logs.jsonl.xz: each server's
command line, its agent's socket, a profile's native frames). Those are rewritten as the kit now writes
them (rundir.portable_text): the kit's folder, as found in the logs, dropped from paths within it, a JDK's
folder as <JDK>, the driver's temporary folder as <tmp>.

Usage: python3 -m latency_diff.scrub RUN_DIR [RUN_DIR ...]   (prints what it changed)
"""

from __future__ import annotations

import argparse
import json
import lzma
import re
import sys
from collections.abc import Callable
from pathlib import Path

from . import rundir
from .envinfo import java_info

#: Files whose paths are the container runtime's, not this machine's.
CONTAINER_MARKERS = ("/.dockerenv", "/run/.containerenv")


def _portable_dir(path: str) -> str:
    if not path.startswith("/"):
        return path
    parts = Path(path).parts
    return str(Path(*parts[parts.index("results"):])) if "results" in parts else Path(path).name


def describe_java(java: str) -> dict:
    """A java's version and vendor: from the JVM when it runs here, else from its JDK's release file, else {}."""
    info = java_info(java) if Path(java).is_file() else {}
    if not info:
        release = Path(java).parent.parent / "release"
        if release.is_file():
            for line in release.read_text(errors="replace").splitlines():
                key, _, value = line.partition("=")
                if key in ("JAVA_VERSION", "IMPLEMENTOR", "JAVA_RUNTIME_VERSION"):
                    info[key.lower()] = value.strip('"')
    return info


def scrub(run: dict, describe: Callable[[str], dict] = describe_java) -> list[str]:
    """Rewrites run (a run.json object) in place; what it changed, one line each."""
    changed = []
    settings = run.get("settings") or {}
    old = settings.get("results_dir")
    if isinstance(old, str) and old.startswith("/"):
        settings["results_dir"] = _portable_dir(old)
        changed.append(f"settings.results_dir: {settings['results_dir']}")
    jdk = (run.get("env") or {}).get("jdk") or {}
    for key in ("java.home", "java"):
        if key in jdk:
            del jdk[key]
            changed.append(f"env.jdk.{key}: removed")
    for server in run.get("servers") or []:
        variant = server.get("variant") or {}
        java = variant.pop("java", None)
        if java:
            variant["jdk"] = info = describe(java)
            version = info.get("java.runtime.version") or info.get("java_runtime_version") or \
                info.get("java_version") or "unknown"
            home = str(Path(java).parent.parent)
            variant["spec"] = str(variant.get("spec", "")).replace(home, f"<JDK {version}>")
            changed.append(f"{server.get('name')}: variant java {version}")
        elif "java=/" in str(variant.get("spec", "")):  # recorded with its JDK's version but the folder in its spec
            info = variant.get("jdk") or {}
            version = info.get("java.runtime.version") or "unknown"
            variant["spec"] = re.sub(r"java=/[^;]*", f"java=<JDK {version}>", variant["spec"])
            changed.append(f"{server.get('name')}: variant spec, JDK {version}")
    return changed


#: A path inside a kit's folder, as a server's command line has it: the folder is group 1.
_KIT_PATH = re.compile(r"(/[^\s:=\"'\[\]()]+?)/(?:agent/target|dummy-server/target|servers/[^/\s]+/target|native/build|"
                       r"common/src|\.tools)/")


def scrub_logs(run_dir: Path) -> int:
    """Rewrites the run's sealed logs without the machine's folders; how many records changed."""
    path = run_dir / rundir.LOGS
    if not path.is_file():
        return 0
    records = list(rundir.logs(run_dir))
    roots = {m.group(1) for r in records for m in _KIT_PATH.finditer(r.get("text", ""))}
    changed = 0
    for r in records:
        text = r.get("text", "")
        new = text
        for root in sorted(roots, key=len, reverse=True):
            new = rundir.portable_text(new, Path(root))
        new = rundir.portable_text(new)
        if new != text:
            r["text"] = new
            changed += 1
    if changed:
        rundir.write_atomic(path, lzma.compress("".join(json.dumps(r) + "\n" for r in records).encode("utf-8"),
                                                preset=6))
    return changed


def scrub_plain_logs(run_dir: Path) -> int:
    """Rewrites a benchmark's raw logs (logs/*.log, one per process, as the independent benchmark keeps them) without
    the machine's folders; how many files changed."""
    changed = 0
    for path in sorted((run_dir / "logs").glob("*.log")):
        text = path.read_text(encoding="utf-8", errors="replace")
        new = text
        for root in sorted({m.group(1) for m in _KIT_PATH.finditer(text)}, key=len, reverse=True):
            new = rundir.portable_text(new, Path(root))
        new = rundir.portable_text(new)
        if new != text:
            rundir.write_atomic(path, new)
            changed += 1
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m latency_diff.scrub", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR")
    args = parser.parse_args(argv)
    for run_dir in args.runs:
        path = run_dir / rundir.RUN
        changed = []
        plain = scrub_plain_logs(run_dir)
        if plain:
            changed.append(f"logs/*.log: {plain} file(s)")
        raw = not path.is_file() and ((run_dir / rundir.LOGS).is_file() or (run_dir / "logs").is_dir())
        if not raw:  # a benchmark's raw folder may hold logs only
            try:
                run = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as e:
                print(f"scrub: error: {path}: {e}", file=sys.stderr)
                return 1
            in_run = scrub(run)
            if in_run:
                rundir.write_atomic(path, json.dumps(run, indent=2) + "\n")
            changed += in_run
        logs = scrub_logs(run_dir)
        if logs:
            changed.append(f"{rundir.LOGS}: {logs} record(s)")
        if changed:
            print(f"{run_dir}: " + "; ".join(changed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
