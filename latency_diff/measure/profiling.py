"""Where a JVM server's time goes: a CPU profile of its request loop (async-profiler), grouped by who does the work.

The profiler runs in a window of its own, after a pair's measured phase and its counting window, in the same warm
server process; its round trips are not used. async-profiler (Apache-2.0, Maven Central
tools.profiler:async-profiler, its native library inside the jar; scripts/lib.sh fetches it) is loaded into the
running JVM with `jcmd PID JVMTI.agent_load`, samples CPU time (perf_events, with kernel frames, where the host
allows; else a timer) while the interleaved client sends the window's requests, and writes two files: the
collapsed stacks (one line a stack: frames root to leaf, `;`-separated, and its sample count) and an interactive
flame graph (HTML), which the report links. The run keeps both in profiles.jsonl.xz, and in its logs the stacks cut
to the frames a sample's group is read from (`reduce`: a default run's full stacks are about 190 MB of text, 2 MB
compressed; cut, a few KB), which `where_time_goes` groups exactly as the full ones.

The groups of a sample, by its thread and its innermost frames (`group`):
- GC and VM: a garbage collector's or the VM's own thread;
- JIT compiler: a C1 or C2 compiler thread;
- kernel: the sample's leaf is a kernel frame (system calls, the network stack, scheduling);
- JDK networking and NIO, JDK other: the innermost Java frame is the JDK's (by package);
- server library: the innermost Java frame is the server's library (the package of its Maven group), or, for a
  framework, of the server it runs on;
- framework: the framework's own package;
- other libraries: any other Java frame (the server's module, Kotlin, Jackson, ...);
- JVM and native: no Java frame at all in a request thread (the interpreter, stubs, libc).
Per request (`per_request`): the measured pairs' CPU per request outside the JIT compiler threads, split by the
other groups' shares of the samples; and the JIT compiler's own CPU per request in the measured pairs. The window's
compiler threads are not the measured loop's: its traffic (two connections to the server) makes some servers
compile new paths, up to half of a window's samples, where the measured phase's JIT is a few percent of the CPU.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from .. import KIT_ROOT
from .process import taskset_prefix

ASYNC_PROFILER_VERSION = "4.6"
#: Where scripts/lib.sh puts the native library (by machine: linux-x64, linux-arm64).
TOOLS = KIT_ROOT / ".tools" / f"async-profiler-{ASYNC_PROFILER_VERSION}"
#: Sampling interval of CPU time, in nanoseconds: 2,000 to 10,000 samples over a default window (20,000 requests).
INTERVAL_NS = 100_000
GROUPS = ("kernel", "JDK networking and NIO", "JDK other", "server library", "framework", "other libraries",
          "JVM and native", "GC and VM", "JIT compiler")
JDK_NET = ("java/nio/", "sun/nio/", "java/net/", "sun/net/", "jdk/internal/net/", "jdk/internal/nio/")
JDK = ("java/", "javax/", "jdk/", "sun/", "com/sun/")
GC_THREAD = re.compile(r"^\[(GC Thread|G1 |VM Thread|VM Periodic|Service Thread|ZDirector|ZWorker|Shenandoah|"
                       r"Parallel GC|Concurrent|Monitor Deflation|Common-Cleaner|Finalizer|Reference Handler)")
JIT_THREAD = re.compile(r"^\[(C1|C2) CompilerThre")
JAVA_FRAME = re.compile(r"_\[[ij01]\]$")
KERNEL_LEAF = "kernel_[k]"
#: A thread frame's id, which no group reads: [C2 CompilerThread0 tid=1234].
_TID = re.compile(r" tid=\d+\]$")


class ProfileError(Exception):
    """The profiler could not be loaded, started or stopped; the message says why."""


def library_path() -> Path | None:
    """The native library for this machine, if scripts/lib.sh fetched it."""
    import platform
    arch = {"x86_64": "linux-x64", "aarch64": "linux-arm64"}.get(platform.machine())
    path = TOOLS / arch / "libasyncProfiler.so" if arch else None
    return path if path is not None and path.is_file() else None


def _jcmd(java: str) -> str:
    jcmd = Path(java).with_name("jcmd")
    if jcmd.is_file():
        return str(jcmd)
    found = shutil.which("jcmd")
    if found is None:
        raise ProfileError(f"no jcmd next to {java} or on PATH")
    return found


def agent_command(java: str, pid: int, lib: Path, options: str, cpu: int | None) -> list[str]:
    # jcmd's parser splits an unquoted argument at '=': the agent's options go in double quotes
    return taskset_prefix(cpu) + [_jcmd(java), str(pid), "JVMTI.agent_load", str(lib), f'"{options}"']


def _run(cmd: list[str]) -> None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ProfileError(f"{Path(cmd[0]).name}: {e}") from e
    said = (out.stdout + out.stderr).strip()
    # jcmd prints the agent's answer; async-profiler reports an error as a line starting with "[ERROR]"
    if out.returncode != 0 or "[ERROR]" in said or "return code: " in said and "return code: 0" not in said:
        raise ProfileError(f"jcmd JVMTI.agent_load failed: {said or f'exit status {out.returncode}'}")


def profile(java: str, pid: int, serve: Callable[[], None], folder: Path, cpu: int | None,
            event: str = "cpu") -> dict:
    """Profiles the process while serve() sends it requests: {"event", "collapsed" (text), "html" (path), "seconds"}.
    Raises ProfileError."""
    lib = library_path()
    if lib is None:
        raise ProfileError(f"async-profiler {ASYNC_PROFILER_VERSION} is not fetched (scripts/lib.sh fetches it into "
                           f"{TOOLS.relative_to(KIT_ROOT)})")
    collapsed, html = folder / f"profile-{pid}.collapsed", folder / f"profile-{pid}.html"
    t0 = time.monotonic()
    _run(agent_command(java, pid, lib, f"start,event={event},interval={INTERVAL_NS},threads", cpu))
    try:
        serve()
    finally:
        # the same samples twice: collapsed stacks for the groups, then the flame graph as the profiler stops
        _run(agent_command(java, pid, lib, f"dump,file={collapsed},collapsed,ann", cpu))
        _run(agent_command(java, pid, lib, f"stop,file={html},ann", cpu))
    try:
        text = collapsed.read_text()
    except OSError as e:
        raise ProfileError(f"async-profiler wrote no collapsed stacks: {e}") from e
    if not html.is_file():
        raise ProfileError("async-profiler wrote no flame graph")
    return {"event": event, "interval_ns": INTERVAL_NS, "collapsed": text, "html": html,
            "seconds": round(time.monotonic() - t0, 3)}


# -- where the time goes -------------------------------------------------------------------------------------------
#: A library's Java packages where they are not its Maven group's (by group id), and the JDK's own server's.
PACKAGES = {"io.undertow": ("io/undertow/", "org/xnio/"),
            "org.apache.tomcat.embed": ("org/apache/tomcat/", "org/apache/coyote/", "org/apache/catalina/",
                                        "org/apache/naming/"),
            "io.helidon.webserver": ("io/helidon/",), "org.springframework.boot": ("org/springframework/",),
            "io.quarkus": ("io/quarkus/", "org/jboss/resteasy/"), "com.typesafe.akka": ("akka/",),
            "net.code-story": ("net/codestory/", "org/simpleframework/"), "io.github.robaho": ("robaho/",),
            "com.sparkjava": ("spark/",),
            "org.ninjaframework": ("ninja/",), "io.ktor": ("io/ktor/",), "io.micronaut": ("io/micronaut/",),
            # the engines a library embeds, as its own: Vert.x's Netty, fluent-http's Simple, NanoHTTPD's old package
            "io.vertx": ("io/vertx/", "io/netty/"), "org.nanohttpd": ("fi/iki/elonen/", "org/nanohttpd/")}
JDK_SERVER = ("sun/net/httpserver/", "com/sun/net/httpserver/")
KIT = ("org/latencydiff/",)


def packages(library: str | None, name: str = "") -> tuple[str, ...]:
    """The package prefixes of a server's library (Maven coordinates group:artifact): those PACKAGES names, else its
    group's (org.rapidoid -> org/rapidoid/); the JDK's own server for the kit's jdk modules; the kit's for none."""
    if not library:
        return JDK_SERVER if name.startswith("jdk") else KIT
    group_id = library.split(":")[0]
    return PACKAGES.get(group_id, (group_id.replace(".", "/") + "/",))


def group(frames: list[str], server_pkg: tuple[str, ...], framework_pkg: tuple[str, ...] = ()) -> str:
    """The group of one sample's stack (root to leaf)."""
    thread = frames[0] if frames and frames[0].startswith("[") else ""
    if GC_THREAD.match(thread):
        return "GC and VM"
    if JIT_THREAD.match(thread):
        return "JIT compiler"
    if frames and frames[-1].endswith("_[k]"):
        return "kernel"
    for f in reversed(frames):
        if not JAVA_FRAME.search(f):
            continue
        if server_pkg and f.startswith(server_pkg):  # before the JDK's: the JDK's own server is the library
            return "server library"
        if framework_pkg and f.startswith(framework_pkg):
            return "framework"
        if f.startswith(JDK_NET):
            return "JDK networking and NIO"
        if f.startswith(JDK):
            return "JDK other"
        return "other libraries"
    return "JVM and native"


def parse_collapsed(text: str) -> list[tuple[list[str], int]]:
    """Collapsed stacks: (frames root to leaf, samples) per line. Raises ValueError on a line without a count."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            raise ValueError(f"collapsed stacks, line {n}: no sample count: {line[:80]!r}")
        out.append((stack.split(";"), int(count)))
    return out


def reduce(text: str) -> str:
    """Collapsed stacks cut to what `group` reads: each stack's thread frame (when it has one, without its thread id),
    its innermost Java frame, and its leaf when that is a kernel frame (as KERNEL_LEAF: only that it is the kernel's
    is read) or the stack would be empty; the samples of stacks cut alike added up. Every sample keeps its group."""
    counts: Counter[str] = Counter()
    for frames, n in parse_collapsed(text):
        keep = [_TID.sub("]", frames[0])] if frames[0].startswith("[") else []
        java = next((f for f in reversed(frames) if JAVA_FRAME.search(f)), None)
        keep += [java] if java is not None else []
        if frames[-1].endswith("_[k]"):
            keep.append(KERNEL_LEAF)
        elif not keep:
            keep.append(frames[-1])
        counts[";".join(keep)] += n
    return "".join(f"{stack} {n}\n" for stack, n in sorted(counts.items()))


def per_request(shares: dict[str, float], cpu_ns: float, jit_ns: float) -> dict[str, float]:
    """Microseconds per request by group (see the module doc): cpu_ns and jit_ns are the measured pairs' CPU per
    request, all threads, and that of the JIT compiler threads alone."""
    rest = 1.0 - shares.get("JIT compiler", 0.0)
    work = max(cpu_ns - jit_ns, 0.0) / 1000
    return {g: (jit_ns / 1000 if g == "JIT compiler" else (v / rest * work if rest > 0 else 0.0))
            for g, v in shares.items()}


def where_time_goes(text: str, server_pkg: tuple[str, ...], framework_pkg: tuple[str, ...] = ()
                    ) -> tuple[int, dict[str, float]]:
    """(the samples, each group's share of them: 0-1, every group in GROUPS order)."""
    counts: Counter[str] = Counter()
    for frames, n in parse_collapsed(text):
        counts[group(frames, server_pkg, framework_pkg)] += n
    total = sum(counts.values())
    return total, {g: (counts[g] / total if total else 0.0) for g in GROUPS}
