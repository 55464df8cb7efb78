"""The environment record of a run: what the numbers were measured on (pyperf-style metadata)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import time
from pathlib import Path

from . import KIT_ROOT


def _run(cmd: list[str]) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout + out.stderr).strip() or None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError:
        return None


def cpu_model() -> str | None:
    text = _read("/proc/cpuinfo") or ""
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or None


def container_evidence() -> str | None:
    """Why the kit thinks it runs in a container (Docker, Podman, Kubernetes), or None: the kit's own image
    says so, or a runtime's marker file exists, or PID 1's cgroup names a runtime. A machine that is itself
    a container (many cloud sandboxes and CI runners) counts too: its timings share a kernel with others."""
    if os.environ.get("LATENCY_DIFF_IN_CONTAINER") == "1":  # set by the kit's Dockerfile
        return "the kit's image"
    for marker in ("/.dockerenv", "/run/.containerenv"):
        if Path(marker).exists():
            return marker
    cgroup = _read("/proc/1/cgroup") or ""
    word = next((w for w in ("docker", "containerd", "kubepods", "libpod") if w in cgroup), None)
    return f"PID 1's cgroup names {word}" if word else None


def kit_commit() -> dict:
    commit = _run(["git", "-C", str(KIT_ROOT), "rev-parse", "HEAD"])
    dirty = _run(["git", "-C", str(KIT_ROOT), "status", "--porcelain", "--untracked-files=no"])
    ok = commit is not None and len(commit) == 40
    image_commit = os.environ.get("LATENCY_DIFF_KIT_COMMIT")
    if not ok and image_commit:  # a container image has no .git
        if image_commit == "unknown":
            return {"commit": None, "dirty": None,
                    "source": "image built without --build-arg KIT_COMMIT=$(git rev-parse HEAD)"}
        return {"commit": image_commit, "dirty": None, "source": "image build argument"}
    return {"commit": commit if ok else None, "dirty": bool(dirty) if ok else None}


def java_info(java: str) -> dict:
    props = _run([java, "-XshowSettings:properties", "-version"]) or ""
    # Version and vendor, not where it is installed: a committed record names no path of the measuring machine.
    wanted = ("java.version", "java.vm.name", "java.vm.version", "java.vendor", "java.runtime.version")
    info = {}
    for line in props.splitlines():
        line = line.strip()
        for key in wanted:
            if line.startswith(key + " = "):
                info[key] = line.split(" = ", 1)[1]
    return info


def collect(java: str) -> dict:
    """Everything about the machine and the tools that can move the numbers."""
    ab_version = _run(["ab", "-V"])
    governors = sorted({g for g in (_read(f"/sys/devices/system/cpu/cpu{i}/cpufreq/scaling_governor")
                                    for i in range(os.cpu_count() or 1)) if g})
    return {
        "kit": kit_commit(),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "jdk": java_info(java),
        "ab": ab_version.splitlines()[0] if ab_version else None,
        "kernel": platform.release(),
        "os": _read("/etc/os-release") and next((line.split("=", 1)[1].strip('"')
                                                 for line in _read("/etc/os-release").splitlines()
                                                 if line.startswith("PRETTY_NAME=")), None),
        "cpu_model": cpu_model(),
        "cpus_online": os.cpu_count(),
        "cpus_usable": sorted(os.sched_getaffinity(0)),
        "cpu_governors": governors or None,
        "virtualization": _run(["systemd-detect-virt"]) if shutil.which("systemd-detect-virt") else None,
        "container": container_evidence() is not None,
        "container_evidence": container_evidence(),
        "load_average_start": list(os.getloadavg()),
        "python": platform.python_version(),
        "clock": {"monotonic_resolution_s": time.get_clock_info("monotonic").resolution},
    }


# -- how the analysis reads the record back (analyze.py compare, merge.py) ------------------------------------------

def jdk_text(env: dict) -> str | None:
    """A run's JDK as one line: VM, version and vendor."""
    jdk = env.get("jdk") or {}
    version = jdk.get("java.runtime.version") or jdk.get("java.version")
    if not version:
        return None
    return f"{jdk.get('java.vm.name', '?')} {version} ({jdk.get('java.vendor', '?')})"


def commit_of(env: dict) -> str | None:
    """A run's kit commit, from its record."""
    return (env.get("kit") or {}).get("commit")


#: The machine and tools a run records (collect), each a fact that can move the figures: a label, and its key in env
#: or a function of env.
FACTS = (("JDK", jdk_text), ("CPU model", "cpu_model"), ("CPUs online", "cpus_online"), ("kernel", "kernel"),
         ("OS", "os"), ("virtualization", "virtualization"), ("container", "container"),
         ("CPU frequency governors", "cpu_governors"), ("ab", "ab"), ("kit commit", commit_of))
FACT_EFFECTS = {"JDK": "a change may be the JDK's", "CPU model": "a change may be the machine's",
                "kit commit": "a change may be the kit's (its clients, the dummy, the method)"}


def shown(key: str, v) -> str:
    """A fact's or a setting's value as a note shows it."""
    if v is None:
        return "not set"
    if key == "jvm_flags" or key.endswith("jvm_flags"):
        return f"`{' '.join(map(str, v))}`" if v else "none"
    if isinstance(v, list | tuple):
        return ", ".join(map(str, v)) if v else "none"
    return str(v)
