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


def in_container() -> bool:
    if os.environ.get("LATENCY_DIFF_IN_CONTAINER") == "1":  # set by the kit's Dockerfile
        return True
    if Path("/.dockerenv").exists() or Path("/run/.containerenv").exists():
        return True
    cgroup = _read("/proc/1/cgroup") or ""
    return any(word in cgroup for word in ("docker", "containerd", "kubepods", "libpod"))


def kit_commit() -> dict:
    commit = _run(["git", "-C", str(KIT_ROOT), "rev-parse", "HEAD"])
    dirty = _run(["git", "-C", str(KIT_ROOT), "status", "--porcelain", "--untracked-files=no"])
    ok = commit is not None and len(commit) == 40
    if not ok and os.environ.get("LATENCY_DIFF_KIT_COMMIT"):  # a container image has no .git
        return {"commit": os.environ["LATENCY_DIFF_KIT_COMMIT"], "dirty": None, "source": "image build argument"}
    return {"commit": commit if ok else None, "dirty": bool(dirty) if ok else None}


def java_info(java: str) -> dict:
    props = _run([java, "-XshowSettings:properties", "-version"]) or ""
    wanted = ("java.version", "java.vm.name", "java.vm.version", "java.vendor", "java.home", "java.runtime.version")
    info = {}
    for line in props.splitlines():
        line = line.strip()
        for key in wanted:
            if line.startswith(key + " = "):
                info[key] = line.split(" = ", 1)[1]
    info["java"] = java
    return info


def collect(java: str, settings: dict) -> dict:
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
        "container": in_container(),
        "load_average_start": list(os.getloadavg()),
        "python": platform.python_version(),
        "clock": {"monotonic_resolution_s": time.get_clock_info("monotonic").resolution},
        "settings": settings,
    }
