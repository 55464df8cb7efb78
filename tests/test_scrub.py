"""No path of the measuring machine in a committed record (latency_diff/scrub.py for the runs written before)."""

from __future__ import annotations

import json

import pytest

from latency_diff import KIT_ROOT, scrub


def strings(x) -> list[str]:
    if isinstance(x, str):
        return [x]
    if isinstance(x, dict):
        return [s for v in x.values() for s in strings(v)]
    if isinstance(x, list):
        return [s for v in x for s in strings(v)]
    return []


def test_scrub_takes_the_paths_out_and_keeps_versions():
    run = {"settings": {"results_dir": "/home/me/kit/results/matrix-jdks-1/run", "port": 8080},
           "env": {"jdk": {"java.version": "25.0.3", "java.vendor": "Eclipse Adoptium", "java.home": "/opt/jdk",
                           "java": "/opt/jdk/bin/java"}},
           "servers": [{"name": "undertow+jdk21", "variant": {"spec": "undertow:java=/home/me/jdk21", "of": "undertow",
                                                               "java": "/home/me/jdk21/bin/java", "jvm_flags": []}},
                       {"name": "dummy", "variant": None}]}
    changed = scrub.scrub(run, describe=lambda java: {"java.runtime.version": "21.0.8+9", "java.vendor": "X"})
    assert run == {"settings": {"results_dir": "results/matrix-jdks-1/run", "port": 8080},
                   "env": {"jdk": {"java.version": "25.0.3", "java.vendor": "Eclipse Adoptium"}},
                   "servers": [{"name": "undertow+jdk21",
                                "variant": {"spec": "undertow:java=<JDK 21.0.8+9>", "of": "undertow", "jvm_flags": [],
                                            "jdk": {"java.runtime.version": "21.0.8+9", "java.vendor": "X"}}},
                               {"name": "dummy", "variant": None}]}
    assert changed == ["settings.results_dir: results/matrix-jdks-1/run", "env.jdk.java.home: removed",
                       "env.jdk.java: removed", "undertow+jdk21: variant java 21.0.8+9"]
    assert scrub.scrub(run) == []  # done once, nothing more to do
    half = {"servers": [{"name": "u+jdk17", "variant": {"spec": "undertow:java=/x/jdk17/rt;jvm=-Xint",
                                                        "jdk": {"java.runtime.version": "17.0.9+9"}}}]}
    assert scrub.scrub(half) == ["u+jdk17: variant spec, JDK 17.0.9+9"]
    assert half["servers"][0]["variant"]["spec"] == "undertow:java=<JDK 17.0.9+9>;jvm=-Xint"


def test_no_committed_run_names_a_path_of_the_machine_that_made_it():
    for path in sorted((KIT_ROOT / "results").rglob("run.json")):
        found = [x for x in strings(json.loads(path.read_text())) if x.startswith("/")
                 and x not in scrub.CONTAINER_MARKERS]
        assert found == [], f"{path.relative_to(KIT_ROOT)}: {found[:3]}"


def test_a_fresh_jdk_variant_is_recorded_without_its_folder():
    import os

    from latency_diff import variants
    from latency_diff.servers import discover
    home = os.environ.get("JAVA_HOME")
    if not home:
        pytest.skip("needs JAVA_HOME (scripts/test.sh sets it)")
    v = variants.parse(f"undertow:java={home}", {s.name: s for s in discover()})
    record = v.to_dict()["variant"]
    assert home not in json.dumps(record) and record["spec"].startswith("undertow:java=<JDK ")
    assert record["jdk"]["java.runtime.version"] in record["spec"]


def test_a_run_writes_its_logs_without_the_machines_folders(tmp_path):
    import tempfile

    from latency_diff import rundir
    w = rundir.Writer(tmp_path)
    w.log("log", "jetty-p1", f"$ taskset -c 1 /opt/jdk-25/bin/java -javaagent:{KIT_ROOT}/agent/target/a.jar="
          f"{tempfile.gettempdir()}/latency-diff-ab12cd/jetty-p1.sock -jar {KIT_ROOT}/servers/jetty/target/jetty.jar")
    w.close()
    (text,) = [r["text"] for r in rundir.logs(tmp_path)]
    assert text == ("$ taskset -c 1 <JDK>/bin/java -javaagent:agent/target/a.jar=<tmp>/jetty-p1.sock "
                    "-jar servers/jetty/target/jetty.jar")


def test_scrub_takes_another_machines_folders_out_of_a_committed_runs_logs(tmp_path):
    import lzma

    from latency_diff import rundir
    records = [{"kind": "log", "tag": "undertow-p1", "text": "$ /usr/lib/jvm/jdk-21/bin/java -jar "
                "/home/me/kit/servers/undertow/target/undertow.jar --template /home/me/kit/common/src/x.txt\nREADY"},
               {"kind": "response", "tag": "undertow-p1", "text": "HTTP/1.1 200 OK\r\n\r\nHelloWorld"}]
    (tmp_path / rundir.LOGS).write_bytes(lzma.compress("".join(json.dumps(r) + "\n" for r in records).encode()))
    assert scrub.scrub_logs(tmp_path) == 1
    got = list(rundir.logs(tmp_path))
    assert got[0]["text"] == ("$ <JDK>/bin/java -jar servers/undertow/target/undertow.jar --template common/src/x.txt"
                              "\nREADY")
    assert got[1] == records[1]
    assert scrub.scrub_logs(tmp_path) == 0  # nothing left to change


def test_scrub_takes_a_folder_with_logs_only(tmp_path):
    import lzma

    from latency_diff import rundir
    rec = {"kind": "log", "tag": "jetty-p1", "text": "$ /opt/jdk/bin/java -jar /srv/kit/servers/jetty/target/jetty.jar"}
    (tmp_path / rundir.LOGS).write_bytes(lzma.compress((json.dumps(rec) + "\n").encode()))
    assert scrub.main([str(tmp_path)]) == 0
    assert next(rundir.logs(tmp_path))["text"] == "$ <JDK>/bin/java -jar servers/jetty/target/jetty.jar"


def test_scrub_takes_a_benchmarks_plain_logs(tmp_path):
    # The independent benchmark keeps one plain log per process (logs/*.log), its first line the command.
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "01-dummy.log").write_text("$ taskset -c 1 /usr/lib/jvm/jdk-25/bin/java -Xmx512m -jar "
                                       "/home/me/kit/dummy-server/target/dummy.jar --port 0\nREADY dummy 4242\n")
    (logs / "01-jetty.log").write_text("READY jetty 4243\n")
    assert scrub.main([str(tmp_path)]) == 0
    assert (logs / "01-dummy.log").read_text() == ("$ taskset -c 1 <JDK>/bin/java -Xmx512m -jar "
                                                   "dummy-server/target/dummy.jar --port 0\nREADY dummy 4242\n")
    assert (logs / "01-jetty.log").read_text() == "READY jetty 4243\n"
    assert scrub.scrub_plain_logs(tmp_path) == 0  # nothing left to change


def test_no_committed_plain_log_names_a_folder_of_the_machine():
    for path in sorted((KIT_ROOT / "results").rglob("logs/*.log")):
        first = path.read_text(encoding="utf-8", errors="replace").splitlines()[:1]
        assert not any(" /" in line for line in first), f"{path.relative_to(KIT_ROOT)}: {first}"
