"""A newcomer's first run: the kit cloned at HEAD, `./scripts/run-all.sh --quick --servers undertow` with an empty HOME.

The target: with an empty Maven repository, that command downloads and builds only the dummy, the
agent and Undertow, and prints its table in at most 3 minutes (ab and the JDK installed). The benchmark clones the
kit at the commit it runs from (it refuses a work tree with uncommitted changes, which the clone would not have), runs
the command there with a fresh HOME (no ~/.m2/repository, no Maven wrapper distribution, no pip cache), keeping PATH
and JAVA_HOME, and watches the command's output as it streams:

- the wall time from the command to the table (the first line on stdout after "measurements done") and to its exit;
- where the time went, from the set-up's own lines ("creating the Python virtual environment", "fetching
  async-profiler", "building N module(s)", "compiling native/...") to "latency-diff run" (the driver starts
  measuring), "measurements done" (the analysis starts) and the table;
- the modules Maven built (the folders with a jar in target/), and the megabytes (10^6 bytes) received over the
  network (every non-loopback interface: other traffic counts too) and put in the empty HOME's .m2/repository,
  .m2/wrapper and pip cache (pip keeps only cacheable responses: it may stay empty), and the clone's .venv and .tools.

A run that fails (a non-zero exit, no table) is reported as failed, never as met. The page (firstrun.md), the
figures (firstrun.json), the command's console output (console.log, every line with its second and stream, machine
paths replaced by <clone>, <home> and <JAVA_HOME>) and the clone's run directory (scrubbed of machine paths) go to
results/firstrun-<UTC time>/; the temporary clone and HOME are deleted unless --keep.
"""

from __future__ import annotations

import argparse
import fcntl
import lzma
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .. import KIT_ROOT
from . import common

#: The target: the table within this many seconds of the command.
TARGET_S = 180.0
#: Environment variables that would point the run at this machine's caches, settings or virtual environment instead
#: of the empty HOME's (PIP_FIND_LINKS: a folder of wheels; MAVEN_OPTS can name another local repository).
DROPPED_ENV = ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "PIP_CACHE_DIR", "PIP_NO_CACHE_DIR",
               "PIP_FIND_LINKS", "PIP_CONFIG_FILE", "MAVEN_USER_HOME", "MAVEN_OPTS", "MAVEN_ARGS", "MAVEN_CONFIG",
               "VIRTUAL_ENV", "PYTHONPATH")
#: The set-up's phases, each from the first line that matches its pattern (after "latency-diff: ") to the next
#: phase's line: scripts/lib.sh's info lines, then the driver's first line and its last.
PHASES = (
    ("venv", re.compile(r"creating the Python virtual environment")),
    ("pip install", re.compile(r"installing the Python packages")),
    ("async-profiler", re.compile(r"fetching async-profiler")),
    ("maven build", re.compile(r"building \d+ module\(s\)")),
    ("native", re.compile(r"compiling native/")),
    ("measuring", re.compile(r"latency-diff run \S+")),
    ("analysis", re.compile(r"measurements done in")),
)
BUILDING = re.compile(r"building (\d+) module\(s\)")
#: The console log is compressed (console.log.xz) above this size.
COMPRESS_BYTES = 200_000


@dataclass
class Line:
    """One line of the command's output: seconds since the command started, "out" or "err", the text."""
    t: float
    stream: str
    text: str


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--servers", default="undertow", help="servers of the run (default undertow, the target's)")
    p.add_argument("--profile", default="quick", help="the driver's profile (default quick, the target's)")
    p.add_argument("--timeout", type=float, default=1800, help="stop the command after this many seconds: a failed "
                   "run (default 1800)")
    p.add_argument("--keep", action="store_true", help="keep the temporary clone and HOME (their folder is printed)")
    p.add_argument("--allow-dirty", action="store_true", help="measure HEAD even though the work tree has "
                   "uncommitted changes (the clone does not have them)")


def command(servers: str, profile: str, driver_args: list[str]) -> list[str]:
    """The newcomer's command: the target's for the defaults (--quick for the quick profile)."""
    prof = ["--quick"] if profile == "quick" else ["--profile", profile]
    return ["./scripts/run-all.sh", *prof, "--servers", servers, *driver_args]


def timeline(lines: list[Line]) -> dict:
    """When each phase started (seconds), when the table began (the first stdout line after the analysis started),
    and the module count the build announced. A phase is counted once, from its first line."""
    starts: dict[str, float] = {}
    table = None
    modules = None
    for ln in lines:
        text = ln.text.removeprefix("latency-diff: ")
        for name, pattern in PHASES:
            if name not in starts and pattern.match(text):
                starts[name] = ln.t
        if modules is None and (m := BUILDING.match(text)):
            modules = int(m.group(1))
        if table is None and "analysis" in starts and ln.stream == "out" and ln.text.strip():
            table = ln.t
    return {"starts": starts, "table_s": table, "modules_announced": modules}


def durations(starts: dict[str, float], table_s: float | None, exit_s: float) -> dict[str, float]:
    """Seconds of each phase, "tools" (the command's start to the first phase: the JDK, ab, Node.js checks) first;
    each phase ends where the next begins, the last at the table (or at the exit, without one)."""
    order = sorted(starts.items(), key=lambda kv: kv[1])
    marks = [("tools", 0.0), *order]
    end = table_s if table_s is not None else exit_s
    out = {}
    for i, (name, t) in enumerate(marks):
        nxt = marks[i + 1][1] if i + 1 < len(marks) else end
        out[name] = round(max(nxt - t, 0.0), 1)
    return out


def verdict(exit_code: int | None, table_s: float | None, target_s: float = TARGET_S) -> str:
    """"met", "missed" or "failed": a run that did not exit 0 or printed no table failed, whatever its time."""
    if exit_code != 0 or table_s is None:
        return "failed"
    return "met" if table_s <= target_s else "missed"


def modules_built(clone: Path) -> dict[str, list[str]]:
    """Module folder (relative to the clone) -> the jars in its target/, for every folder Maven built a jar in."""
    out: dict[str, list[str]] = {}
    for jar in sorted(clone.glob("**/target/*.jar")):
        rel = jar.relative_to(clone)
        if rel.parts[0] in (".venv", ".tools", ".mvn", "results"):
            continue
        module = str(rel.parent.parent)
        out.setdefault(module, []).append(jar.name)
    return out


def expected_modules(servers: str) -> set[str]:
    """The modules the target allows: the dummy, the agent, the named servers' folders, and common (the shared
    response constants that every one of them depends on, built with them by -am)."""
    return {"dummy-server", "agent", "common", *(f"servers/{s.strip()}" for s in servers.split(",") if s.strip())}


def size_mb(path: Path) -> float | None:
    """Apparent size of the files under path in MB (10^6 bytes); None when path does not exist."""
    if not path.exists():
        return None
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass  # a file removed while walking
    return round(total / 1e6, 1)


def received_bytes(net_dev: str) -> int:
    """Bytes received by the interfaces of a /proc/net/dev text, the loopback left out (the run's own requests)."""
    total = 0
    for line in net_dev.splitlines()[2:]:
        name, _, fields = line.partition(":")
        if name.strip() != "lo" and fields.split():
            total += int(fields.split()[0])
    return total


def network_received() -> int | None:
    """This machine's (or container's) received bytes so far, or None where /proc/net/dev is missing."""
    try:
        return received_bytes(Path("/proc/net/dev").read_text())
    except OSError:
        return None


def git(*args: str, cwd: Path = KIT_ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def check_tree(allow_dirty: bool) -> str:
    """HEAD's commit; exits when tracked files have uncommitted changes (the clone would not have them), unless
    allowed, and warns of untracked files."""
    try:
        head = git("rev-parse", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no")
        untracked = git("status", "--porcelain", "--untracked-files=normal").splitlines()
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"firstrun: error: {KIT_ROOT} is not a git work tree with a commit ({e})") from None
    untracked = [ln[3:] for ln in untracked if ln.startswith("??")]
    if changed:
        files = ", ".join(ln[3:] for ln in changed.splitlines()[:5])
        msg = (f"the work tree has uncommitted changes ({files}); the clone takes HEAD ({head[:10]}) without them")
        if not allow_dirty:
            raise SystemExit(f"firstrun: error: {msg}. Commit them, or pass --allow-dirty to measure HEAD as it is.")
        print(f"firstrun: warning: {msg}", file=sys.stderr)
    if untracked:
        print(f"firstrun: warning: {len(untracked)} untracked file(s) are not in the clone (e.g. {untracked[0]}); "
              "commit them if the run needs them", file=sys.stderr)
    return head


def lock_holder(lock: Path) -> str | None:
    """The pid written in the driver's lock file when another run holds it, else None. The clone's driver would
    refuse to start beside it, after minutes of set-up."""
    if not lock.is_file():
        return None
    with lock.open("r") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return f.read().strip() or "unknown"
        fcntl.flock(f, fcntl.LOCK_UN)
    return None


def clean_env(home: Path) -> tuple[dict[str, str], list[str]]:
    """This environment with HOME the empty folder (for Maven's JVM too: MAVEN_OPTS -Duser.home), and without the
    variables that point at caches, settings or a virtual environment elsewhere (DROPPED_ENV, LATENCY_DIFF_*: the
    run's settings); PATH and JAVA_HOME stay. Also the names it dropped."""
    env = dict(os.environ)
    dropped = sorted(k for k in env if k in DROPPED_ENV or k.startswith("LATENCY_DIFF_"))
    for k in dropped:
        del env[k]
    if sys.prefix != sys.base_prefix:  # this python's virtual environment is not the newcomer's
        venv_bin = str(Path(sys.prefix) / "bin")
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    env["HOME"] = str(home)
    # Java takes user.home from the account (getpwuid), not from $HOME, so Maven would use this account's
    # ~/.m2/repository: a new account's is the empty one.
    env["MAVEN_OPTS"] = f"-Duser.home={home}"
    # Line by line as on a terminal, so that the table's moment is seen as it is written, not at exit's flush.
    env["PYTHONUNBUFFERED"] = "1"
    return env, dropped


def host_facts() -> dict:
    """CPU model (lscpu), CPUs, kernel, the JDK's version line, the date."""
    cpu = None
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        cpu = next((ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name:")), None)
    except OSError:
        pass
    java = Path(os.environ["JAVA_HOME"]) / "bin" / "java" if os.environ.get("JAVA_HOME") else shutil.which("java")
    jdk = None
    if java:
        try:
            r = subprocess.run([str(java), "-version"], capture_output=True, text=True, check=False)
            jdk = next((ln.strip() for ln in r.stderr.splitlines() if "version" in ln), None)
            runtime = [ln.strip() for ln in r.stderr.splitlines() if "Runtime Environment" in ln]
            jdk = f"{jdk}; {runtime[0]}" if jdk and runtime else jdk
        except OSError:
            pass
    return {"cpu": cpu, "cpus": os.cpu_count(), "kernel": platform.release(), "jdk": jdk,
            "python": platform.python_version(), "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def _pump(stream, name: str, start: float, lines: list[Line], lock: threading.Lock, echo) -> None:
    for raw in iter(stream.readline, ""):
        t = time.monotonic() - start
        text = raw.rstrip("\n")
        with lock:
            lines.append(Line(round(t, 2), name, text))
        print(text, file=echo, flush=True)


def run_command(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, float, list[Line],
                                                                                         str | None]:
    """Runs cmd in its own process group, echoing and stamping its lines: exit status (None when stopped), seconds to
    the exit, the lines in time order, and why it was stopped (a timeout), or None. Ctrl-C or SIGTERM stop the whole
    group, then raise KeyboardInterrupt."""
    lines: list[Line] = []
    lock = threading.Lock()
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", start_new_session=True)
    pumps = [threading.Thread(target=_pump, args=(proc.stdout, "out", start, lines, lock, sys.stdout), daemon=True),
             threading.Thread(target=_pump, args=(proc.stderr, "err", start, lines, lock, sys.stderr), daemon=True)]
    for th in pumps:
        th.start()
    stopped = None
    try:
        try:
            code: int | None = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            stopped = f"timeout after {timeout:g} s"
            print(f"firstrun: the command ran past {timeout:g} s; stopping it", file=sys.stderr)
            stop_group(proc)
            code = None
    except BaseException:
        stop_group(proc)
        raise
    exit_s = time.monotonic() - start
    for th in pumps:
        th.join(10)
    return code, round(exit_s, 2), sorted(lines, key=lambda ln: ln.t), stopped


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the command's process group (the driver stops its servers on it), SIGKILL after 30 s."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def portable(text: str, paths: dict[str, str]) -> str:
    """text with each machine path replaced by its name (longest first, so that a folder inside another goes first)."""
    for path, name in sorted(paths.items(), key=lambda kv: -len(kv[0])):
        if path:
            text = text.replace(path, name)
    return text


def write_console(out: Path, lines: list[Line], paths: dict[str, str]) -> Path:
    """console.log (console.log.xz when large): `seconds stream| text` per line."""
    text = portable("".join(f"{ln.t:8.2f} {ln.stream}| {ln.text}\n" for ln in lines), paths)
    data = text.encode()
    if len(data) > COMPRESS_BYTES:
        target = out / "console.log.xz"
        target.write_bytes(lzma.compress(data))
    else:
        target = out / "console.log"
        target.write_bytes(data)
    return target


def copy_run(clone: Path, out: Path, paths: dict[str, str]) -> tuple[str | None, list[str]]:
    """Copies the clone's run directory into out and scrubs its run.json of machine paths: its name and the machine
    paths left in its run.json (empty when clean)."""
    runs = sorted(d for d in (clone / "results").iterdir() if d.is_dir() and (d / "run.json").is_file()) \
        if (clone / "results").is_dir() else []
    known = set(git("ls-tree", "--name-only", "HEAD", "results/", cwd=clone).splitlines())
    runs = [d for d in runs if f"results/{d.name}" not in known]
    if not runs:
        return None, []
    src = runs[-1]
    dst = out / src.name
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("flames"))
    subprocess.run([sys.executable, "-m", "latency_diff.scrub", str(dst)], cwd=KIT_ROOT, check=True)
    text = (dst / "run.json").read_text(encoding="utf-8")
    generic = re.findall(rf"(?:{re.escape(tempfile.gettempdir())}|/home)/[^\"\s]*", text)
    left = sorted({p for p in paths if p and p in text} | set(generic))
    return src.name, left


def page(d: dict) -> list[str]:
    """The page's parts after its title."""
    f, h = d["figures"], d["host"]
    table_s = f["table_s"]
    head = (f"`{d['command']}` in a fresh clone of {d['commit'][:10]} with an empty HOME (no Maven repository, no "
            f"Maven wrapper distribution, no pip cache); PATH and JAVA_HOME kept. Host: {h['cpu']}, {h['cpus']} CPUs, "
            f"{h['jdk']}, {h['date_utc']} UTC.")
    if d["verdict"] == "met":
        result = f"**met**: the table {table_s:.0f} s after the command, within {d['target_s']:.0f} s."
    elif d["verdict"] == "missed":
        result = (f"**missed** by {table_s - d['target_s']:.0f} s: the table {table_s:.0f} s after the command, "
                  f"against {d['target_s']:.0f} s.")
    else:
        result = (f"**failed**: exit status {d['exit_code']}" + (f", {d['stopped']}" if d["stopped"] else "")
                  + ("" if table_s is not None else ", no table") + "; see the console log.")
    rows = ["| part | seconds |", "|---|---|"]
    rows += [f"| {name} | {s:.1f} |" for name, s in f["phases_s"].items()]
    rows += [f"| set-up (command to the driver's first line) | {f['setup_s']:.1f} |" if f["setup_s"] is not None
             else "| set-up | (the driver never started) |",
             f"| command to the table | {table_s:.1f} |" if table_s is not None
             else "| command to the table | (none) |",
             f"| command to its exit | {f['exit_s']:.1f} |"]
    mb = ["| folder | MB |", "|---|---|"] + [f"| {k} | {v if v is not None else '(none)'} |"
                                              for k, v in d["downloads_mb"].items()]
    mods = d["modules"]
    built = ", ".join(f"{m} ({', '.join(j)})" for m, j in mods["built"].items()) or "(none)"
    modules = (f"Maven announced {mods['announced']} module(s); jars were built in: {built}."
               + (f" Not expected: {', '.join(mods['unexpected'])}." if mods["unexpected"] else
                  " Nothing beyond the dummy, the agent, the named servers and common (their shared constants)."))
    parts = [head, f"Target: the table within {d['target_s']:.0f} s (3 minutes): {result}",
             "Where the time went (each part from its first line in the output to the next part's):",
             "\n".join(rows),
             "Received over the network during the command (every non-loopback interface of the machine, so other "
             "traffic too), and what the empty HOME and the clone hold afterwards (downloaded or installed):",
             "\n".join(mb), modules,
             f"Clone of the kit: {d['clone_s']:.1f} s (not counted). Environment variables dropped: "
             f"{', '.join(d['env_dropped']) or 'none'}."]
    if d["run_dir"]:
        parts.append(f"The clone's run: [{d['run_dir']}]({d['run_dir']}/report.md)"
                     + (f"; machine paths left in its run.json: {', '.join(d['paths_left'])}" if d["paths_left"]
                        else "") + f". Console output: [{d['console']}]({d['console']}).")
    else:
        parts.append(f"The clone wrote no run directory. Console output: [{d['console']}]({d['console']}).")
    return parts


def run(args: argparse.Namespace, driver_args: list[str]) -> int:
    if args.timeout <= 0:
        raise SystemExit("firstrun: error: --timeout must be positive")
    if not (KIT_ROOT / "scripts" / "run-all.sh").is_file():
        raise SystemExit(f"firstrun: error: no scripts/run-all.sh under {KIT_ROOT}")
    head = check_tree(args.allow_dirty)
    # The driver's lock (latency_diff/measure/cli.py), where the clone's driver looks for it: LATENCY_DIFF_* is dropped.
    holder = lock_holder(Path(tempfile.gettempdir()) / "latency-diff.lock")
    if holder and "--allow-concurrent" not in driver_args:
        raise SystemExit(f"firstrun: error: another latency-diff run is going (pid {holder}); the clone's driver would "
                         "refuse to start after its set-up. Wait for it, or pass --allow-concurrent (both runs are "
                         "then disturbed, and the time is not a newcomer's).")
    cmd = command(args.servers, args.profile, driver_args)
    tmp = Path(tempfile.mkdtemp(prefix="latency-diff-firstrun-"))
    clone, home = tmp / "clone", tmp / "home"
    home.mkdir()
    # SIGTERM as Ctrl-C: the command's group is stopped and the temporary folder deleted either way.
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        print(f"firstrun: cloning {head[:10]} into {clone}", file=sys.stderr)
        t0 = time.monotonic()
        subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(KIT_ROOT), str(clone)], check=True)
        git("checkout", "--quiet", "--detach", head, cwd=clone)
        clone_s = time.monotonic() - t0
        env, dropped = clean_env(home)
        host = host_facts()
        print(f"firstrun: running {' '.join(cmd)} with HOME={home}", file=sys.stderr)
        net0 = network_received()
        code, exit_s, lines, stopped = run_command(cmd, clone, env, args.timeout)
        net1 = network_received()
        tl = timeline(lines)
        phases = durations(tl["starts"], tl["table_s"], exit_s)
        built = modules_built(clone)
        unexpected = sorted(set(built) - expected_modules(args.servers))
        downloads = {"network, received": round((net1 - net0) / 1e6, 1) if net0 is not None and net1 is not None
                     else None,
                     "~/.m2/repository": size_mb(home / ".m2" / "repository"),
                     "~/.m2/wrapper": size_mb(home / ".m2" / "wrapper"),
                     "~/.cache/pip": size_mb(home / ".cache" / "pip"),
                     "HOME, all": size_mb(home), "clone's .venv": size_mb(clone / ".venv"),
                     "clone's .tools": size_mb(clone / ".tools")}
        out = common.out_dir(args.results_dir, "firstrun")
        paths = {str(clone): "<clone>", str(home): "<home>", str(tmp): "<tmp>", str(KIT_ROOT): "<kit>",
                 os.environ.get("JAVA_HOME", ""): "<JAVA_HOME>"}
        console = write_console(out, lines, paths)
        run_name, left = copy_run(clone, out, paths)
        v = verdict(code, tl["table_s"])
        data = {"command": " ".join(cmd), "commit": head, "servers": args.servers, "profile": args.profile,
                "target_s": TARGET_S, "verdict": v, "met": v == "met", "exit_code": code, "stopped": stopped,
                "host": host, "clone_s": round(clone_s, 1), "env_dropped": dropped,
                "figures": {"table_s": tl["table_s"], "exit_s": exit_s, "setup_s": tl["starts"].get("measuring"),
                            "phase_starts_s": tl["starts"], "phases_s": phases},
                "modules": {"announced": tl["modules_announced"], "built": built, "unexpected": unexpected},
                "downloads_mb": downloads, "run_dir": run_name, "paths_left": left, "console": console.name}
        parts = page(data)
        common.write(out, "firstrun", "A newcomer's first run", parts, data)
        print("\n\n".join(parts[:2]))
        if left:
            print(f"firstrun: warning: machine paths left in {out / run_name / 'run.json'}: {', '.join(left)}",
                  file=sys.stderr)
        return 0 if v != "failed" else 1
    except KeyboardInterrupt:
        print("firstrun: interrupted; the command was stopped", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        if args.keep:
            print(f"firstrun: kept the clone and HOME in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
