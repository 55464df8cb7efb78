"""Shared fixtures: the kit on the path, and a misbehaving server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@pytest.fixture
def misbehaving():
    """Starts tests/misbehaving.py in a mode on a free port; returns the port. Stopped after the test."""
    procs = []

    def start(mode: str) -> int:
        p = subprocess.Popen([sys.executable, str(ROOT / "tests" / "misbehaving.py"), mode, "0"],
                             stdout=subprocess.PIPE, text=True)
        procs.append(p)
        return int(p.stdout.readline().split()[2])
    yield start
    for p in procs:
        p.kill()
        p.wait()


#: The servers whose conformance and hostile-client tests the fast tier runs (the full tier runs every server's): the
#: baseline, the C floor, an event loop, a thread pool, a framework on Netty and a control.
REPRESENTATIVE = {"dummy", "floor", "undertow", "tomcat-nio", "micronaut", "control-spin"}
#: Paths every server is built from: a change there puts every server in the fast tier.
SHARED = ("common/", "pom.xml")


def _git_paths(*args: str) -> list[str]:
    """The paths a git command lists with -z, relative to the kit."""
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30, check=True).stdout
    return [p for p in out.split("\0") if p]


def _changed_paths() -> list[str] | None:
    """Paths changed in the working tree (untracked ones too), and since the main branch's upstream when it has one
    (the commits of a branch not yet merged); None when git cannot say (not a checkout)."""
    try:
        paths = _git_paths("diff", "--name-only", "--no-renames", "--relative", "-z", "HEAD")
        paths += _git_paths("ls-files", "--others", "--exclude-standard", "-z")
        upstream = subprocess.run(["git", "rev-parse", "--verify", "--quiet", "main@{upstream}"], cwd=ROOT,
                                  capture_output=True, text=True, timeout=30)
        if upstream.returncode == 0:
            paths += _git_paths("diff", "--name-only", "--no-renames", "--relative", "-z",
                                "main@{upstream}...HEAD")
    except (OSError, subprocess.SubprocessError):
        return None
    return paths


def _changed_servers() -> set[str] | None:
    """Servers whose folder changed (None: every one, when common/ or the root pom.xml changed, or git cannot say)."""
    from latency_diff.servers import discover
    paths = _changed_paths()
    if paths is None or any(p.startswith(SHARED) for p in paths):
        return None
    return {s.name for s in discover() for p in paths if (ROOT / p).is_relative_to(s.module_dir)}


def pytest_collection_modifyitems(config, items):
    """Per-server tests of the servers other than the representative ones and those changed are slow: the full tier
    runs them, the fast one (./scripts/test.sh) leaves them out."""
    changed = _changed_servers()
    wanted = None if changed is None else REPRESENTATIVE | changed
    for item in items:
        server = getattr(getattr(item, "callspec", None), "params", {}).get("server")
        name = getattr(server, "name", server)
        if wanted is not None and isinstance(name, str) and name not in wanted:
            item.add_marker(pytest.mark.slow)


def pytest_report_collectionfinish(config, start_path, items):
    """Under -m "not slow" (the fast tier), the servers whose per-server tests run, so that a reader sees the choice."""
    if "not slow" not in (config.option.markexpr or ""):
        return None
    names = sorted({getattr(item.callspec.params["server"], "name", "") for item in items
                    if "server" in getattr(getattr(item, "callspec", None), "params", {})} - {""})
    return f"per-server tests of {', '.join(names) or 'no server'} (every server's: ./scripts/test.sh --full)"
