"""The firstrun benchmark's parts that need no network: reading the command's output, the verdict, the modules, the
environment and the page. The figures below are worked out by hand from the lines given."""

import os
import signal
import sys
import time

import pytest

from latency_diff.bench import firstrun
from latency_diff.bench.firstrun import Line


def _lines():
    """A first run as the command prints it (lib.sh's info lines on stderr, the driver's, the table on stdout)."""
    return [
        Line(0.3, "err", "latency-diff: JDK 25 at <JAVA_HOME>"),
        Line(1.0, "err", "latency-diff: creating the Python virtual environment in <clone>/.venv"),
        Line(4.0, "err", "latency-diff: installing the Python packages of requirements.txt"),
        Line(50.0, "err", "latency-diff: fetching async-profiler 4.1 from Maven Central (for the profiles)"),
        Line(70.5, "err", "latency-diff: building 3 module(s) with the Maven wrapper (package: agent/... missing)"),
        Line(120.0, "out", "[INFO] a line Maven printed on stdout"),
        Line(150.0, "err", "latency-diff: compiling native/lean.c"),
        Line(151.0, "err", "latency-diff: compiling native/floor.c"),
        Line(153.0, "err", "latency-diff run 20261127T010000Z"),
        Line(154.0, "err", "[0:01] round 1: 1 server(s): undertow"),
        Line(190.0, "err", "latency-diff: measurements done in 0.6 min; raw results in <clone>/results/x"),
        Line(196.5, "out", ""),
        Line(197.0, "out", "latency-diff 20261127T010000Z: quick profile"),
        Line(197.1, "out", "Files: <clone>/results/x/report.md"),
    ]


def test_timeline_finds_each_phase_from_its_first_line_and_the_table_on_stdout_after_the_measuring():
    tl = firstrun.timeline(_lines())
    # native starts at its first line (150.0), not its second; Maven's stdout line (120.0) comes before the analysis
    # and is not the table; the empty stdout line at 196.5 is not either.
    assert tl["starts"] == {"venv": 1.0, "pip install": 4.0, "async-profiler": 50.0, "maven build": 70.5,
                            "native": 150.0, "measuring": 153.0, "analysis": 190.0}
    assert tl["table_s"] == 197.0
    assert tl["modules_announced"] == 3


def test_durations_run_from_each_phase_to_the_next_and_the_last_to_the_table():
    tl = firstrun.timeline(_lines())
    d = firstrun.durations(tl["starts"], tl["table_s"], exit_s=198.0)
    # tools 0 -> 1.0; venv 1 -> 4; pip 4 -> 50; async-profiler 50 -> 70.5; maven 70.5 -> 150; native 150 -> 153;
    # measuring 153 -> 190; analysis 190 -> 197 (the table).
    assert d == {"tools": 1.0, "venv": 3.0, "pip install": 46.0, "async-profiler": 20.5, "maven build": 79.5,
                 "native": 3.0, "measuring": 37.0, "analysis": 7.0}
    assert list(d) == ["tools", "venv", "pip install", "async-profiler", "maven build", "native", "measuring",
                       "analysis"]


def test_a_run_that_dies_in_the_build_has_no_table_and_its_last_phase_ends_at_the_exit():
    lines = _lines()[:6] + [Line(130.0, "err", "latency-diff: error: the Maven build failed (see above)")]
    tl = firstrun.timeline(lines)
    assert tl["table_s"] is None and "measuring" not in tl["starts"]
    d = firstrun.durations(tl["starts"], tl["table_s"], exit_s=131.0)
    assert d["maven build"] == 60.5  # 70.5 -> 131.0, the exit
    assert firstrun.verdict(1, tl["table_s"]) == "failed"


@pytest.mark.parametrize(("code", "table_s", "expected"), [
    (0, 179.9, "met"), (0, 180.0, "met"), (0, 180.1, "missed"), (0, 600.0, "missed"),
    (1, 60.0, "failed"),   # a table, then a non-zero exit: failed, however fast
    (3, 60.0, "failed"),   # an incomplete run (analyze.py's 3)
    (0, None, "failed"),   # exit 0 without a table
    (None, 60.0, "failed"),  # stopped by the timeout or a signal
])
def test_verdict_a_failed_run_is_never_met(code, table_s, expected):
    assert firstrun.verdict(code, table_s) == expected


def _data(verdict, code, table_s):
    return {"command": "./scripts/run-all.sh --quick --servers undertow", "commit": "0123456789abcdef",
            "target_s": 180.0, "verdict": verdict, "exit_code": code, "stopped": None,
            "host": {"cpu": "Some CPU", "cpus": 2, "jdk": 'openjdk version "25"', "date_utc": "2026-11-27 01:00"},
            "clone_s": 0.4, "env_dropped": ["PIP_FIND_LINKS"],
            "figures": {"table_s": table_s, "exit_s": 200.0, "setup_s": 153.0, "phases_s": {"tools": 1.0}},
            "modules": {"announced": 3, "built": {"agent": ["latency-diff-agent.jar"]},
                        "unexpected": ["servers/jetty"]},
            "downloads_mb": {"~/.m2/repository": 40.2, "clone's .tools": None}, "run_dir": "20261127T010000Z",
            "paths_left": [], "console": "console.log"}


def test_the_page_says_missed_by_how_much_and_failed_without_a_figure_to_boast():
    missed = "\n".join(firstrun.page(_data("missed", 0, 197.0)))
    assert "**missed** by 17 s: the table 197 s after the command, against 180 s." in missed
    assert "| maven" not in missed and "| tools | 1.0 |" in missed
    assert "| ~/.m2/repository | 40.2 |" in missed and "| clone's .tools | (none) |" in missed
    assert "Not expected: servers/jetty." in missed
    failed = "\n".join(firstrun.page(_data("failed", 1, 60.0)))
    assert "**failed**: exit status 1; see the console log." in failed
    assert "**met**" not in failed and "**missed**" not in failed
    met = "\n".join(firstrun.page(_data("met", 0, 120.4)))
    assert "**met**: the table 120 s after the command, within 180 s." in met


def test_modules_built_are_the_folders_with_a_jar_in_target_and_the_unexpected_ones_are_named(tmp_path):
    for jar in ("agent/target/latency-diff-agent.jar", "dummy-server/target/dummy.jar", "common/target/common.jar",
                "servers/undertow/target/undertow.jar", "servers/jetty/target/jetty.jar",
                ".tools/async-profiler-4.1/target/x.jar", ".venv/lib/target/y.jar"):
        (tmp_path / jar).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / jar).write_bytes(b"PK")
    (tmp_path / "servers/vertx/target").mkdir(parents=True)  # a target/ without a jar: not built
    built = firstrun.modules_built(tmp_path)
    assert built == {"agent": ["latency-diff-agent.jar"], "common": ["common.jar"], "dummy-server": ["dummy.jar"],
                     "servers/jetty": ["jetty.jar"], "servers/undertow": ["undertow.jar"]}
    assert sorted(set(built) - firstrun.expected_modules("undertow")) == ["servers/jetty"]
    assert set(built) - firstrun.expected_modules("undertow, jetty") == set()


def test_the_environment_is_this_one_with_an_empty_home_and_no_pointers_to_other_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", "/opt/some-jdk")
    monkeypatch.setenv("PIP_FIND_LINKS", "/srv/wheels")
    monkeypatch.setenv("MAVEN_OPTS", "-Dmaven.repo.local=/elsewhere")
    monkeypatch.setenv("LATENCY_DIFF_BUDGET", "10")
    monkeypatch.setenv("PIP_CERT", "/etc/ssl/certs/ca.crt")
    env, dropped = firstrun.clean_env(tmp_path)
    assert env["HOME"] == str(tmp_path) and env["JAVA_HOME"] == "/opt/some-jdk"
    assert env["PIP_CERT"] == "/etc/ssl/certs/ca.crt"  # how to reach PyPI, not a store of packages
    assert {"PIP_FIND_LINKS", "MAVEN_OPTS", "LATENCY_DIFF_BUDGET"} <= set(dropped)
    assert not {"PIP_FIND_LINKS", "LATENCY_DIFF_BUDGET"} & set(env)
    # Maven's JVM reads user.home from the account, not $HOME: pointed at the empty folder, the other options gone.
    assert env["MAVEN_OPTS"] == f"-Duser.home={tmp_path}"
    assert env["PATH"].split(os.pathsep)[-1] == os.environ["PATH"].split(os.pathsep)[-1]


def test_portable_replaces_the_inner_folder_first():
    paths = {"/t/x": "<tmp>", "/t/x/clone": "<clone>", "": "<JAVA_HOME>"}
    assert firstrun.portable("cd /t/x/clone; ls /t/x/home", paths) == "cd <clone>; ls <tmp>/home"


def test_the_command_is_the_targets_by_default():
    assert firstrun.command("undertow", "quick", []) == ["./scripts/run-all.sh", "--quick", "--servers", "undertow"]
    assert firstrun.command("jetty", "default", ["--budget", "60"]) == [
        "./scripts/run-all.sh", "--profile", "default", "--servers", "jetty", "--budget", "60"]


def test_run_command_stamps_both_streams_and_returns_the_exit_status(tmp_path):
    script = "echo one; echo two >&2; sleep 0.3; echo three; exit 4"
    code, exit_s, lines, stopped = firstrun.run_command(["sh", "-c", script], tmp_path, dict(os.environ), 10)
    assert code == 4 and stopped is None
    assert [(ln.stream, ln.text) for ln in lines if ln.stream == "out"] == [("out", "one"), ("out", "three")]
    assert [ln.text for ln in lines if ln.stream == "err"] == ["two"]
    three = next(ln for ln in lines if ln.text == "three")
    assert 0.3 <= three.t <= exit_s < 5


def test_run_command_stops_the_whole_group_at_the_timeout(tmp_path):
    pidfile = tmp_path / "child"
    # The shell starts a child that would outlive it; the timeout must end both.
    script = f"sleep 60 & echo $! > {pidfile}; wait"
    start = time.monotonic()
    code, _, _, stopped = firstrun.run_command(["sh", "-c", script], tmp_path, dict(os.environ), 0.5)
    assert code is None and stopped == "timeout after 0.5 s"
    assert time.monotonic() - start < 20
    child = int(pidfile.read_text())
    for _ in range(50):  # the killed child is reaped by init; give it a moment
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail(f"the command's child {child} outlived the timeout")
    assert firstrun.verdict(code, 10.0) == "failed"


def test_help_works_without_the_analysis_packages():
    """bench.sh runs firstrun with the system python3 before any set-up: the module must need the standard library
    only."""
    import subprocess
    r = subprocess.run([sys.executable, "-S", "-m", "latency_diff.bench", "firstrun", "--help"], capture_output=True,
                       text=True, cwd=firstrun.KIT_ROOT)
    assert r.returncode == 0, r.stderr
    assert "--servers SERVERS" in r.stdout and "--keep" in r.stdout


def test_lock_holder_names_the_pid_of_a_run_that_holds_the_drivers_lock(tmp_path):
    import fcntl
    lock = tmp_path / "latency-diff.lock"
    assert firstrun.lock_holder(lock) is None  # no file: nobody
    lock.write_text("4242")
    assert firstrun.lock_holder(lock) is None  # a file nobody holds: a run that ended
    with lock.open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert firstrun.lock_holder(lock) == "4242"


def test_received_bytes_add_every_interface_but_the_loopback():
    net_dev = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier
    lo: 314651165744 1250756187    0    0    0     0          0         0 314651165744 1250756187    0    0    0     0
  ifb0:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0
  eth0: 1716111252   57467    0    0    0     0          0         0  4688775   39809    0    0    0     0       0
  eth1:1000 5 0 0 0 0 0 0 7 1 0 0 0 0 0 0
"""
    # eth0's 1,716,111,252 and eth1's 1,000 (written without a space after the colon); lo's left out.
    assert firstrun.received_bytes(net_dev) == 1_716_112_252
