"""Variants of a server (another release, JDK or JVM flags): their names, builds and commands, and their errors."""

import os
import subprocess
from pathlib import Path

import pytest

from latency_diff import KIT_ROOT, settings, variants
from latency_diff.catalog import select
from latency_diff.servers import MIN_JAVA, ServerError, build_modules, discover

KNOWN = {s.name: s for s in discover()}
JAVA_HOME = os.environ.get("JAVA_HOME") or str(Path(os.path.realpath("/usr/bin/java")).parent.parent)


@pytest.mark.slow
def test_a_release_variant_builds_its_module_into_a_folder_of_its_own():
    v = variants.parse("undertow@1.0.15.Final", KNOWN)
    assert (v.name, v.display, v.wire_name) == ("undertow@1.0.15.Final", "Undertow (1.0.15.Final)", "undertow")
    assert v.jar == KNOWN["undertow"].module_dir / "target" / "v-1.0.15.Final" / "undertow.jar"
    assert v.variant.of == "undertow" and v.variant.version == "1.0.15.Final"
    modules = build_modules([KNOWN["undertow"], v])
    assert modules == [
        ("agent", KNOWN["undertow"].module_dir.parent.parent / "agent" / "target" / "latency-diff-agent.jar", ""),
        ("servers/undertow", KNOWN["undertow"].jar, ""),
        ("servers/undertow", v.jar,
         "-Dundertow.version=1.0.15.Final -Dlatency-diff.build.dir=target/v-1.0.15.Final")]


def test_a_jdk_and_flags_variant_runs_with_them():
    v = variants.parse(f"undertow:java={JAVA_HOME};jvm=-XX:+UseSerialGC -Xss512k", KNOWN)
    major = variants.java_major(Path(JAVA_HOME) / "bin" / "java")
    assert major >= MIN_JAVA
    assert v.name == f"undertow+jdk{major}+useserialgc.xss512k"
    cmd = v.command("java", ["-Xmx512m"], 8081)
    assert cmd[:5] == [f"{JAVA_HOME}/bin/java", "-Xmx512m", "-XX:+UseSerialGC", "-Xss512k", "-jar"]
    assert cmd[cmd.index("--name") + 1] == "undertow"  # it answers as undertow: the READY line, the Server header
    assert variants.parse("undertow:jvm=-Xint;name=slow", KNOWN).name == "slow"
    # A name alone: the server itself under another name, for an A/A check of the gate.
    again = variants.parse("undertow:name=again", KNOWN)
    assert again.name == "again" and again.variant.java is None and again.variant.jvm_flags == ()
    assert again.command("java", ["-Xmx512m"], 8081) == KNOWN["undertow"].command("java", ["-Xmx512m"], 8081)
    assert again.display == f"{KNOWN['undertow'].display} (itself, as again)"


@pytest.mark.parametrize("spec, message", [
    ("nope@1.0", "no server 'nope'"),
    ("jetty@9.2.0", "the jetty module has no version property"),
    ("undertow@1 0", "is not a version"),
    ("undertow:java=/nonexistent/jdk", "/nonexistent/jdk is not a JDK"),
    ("undertow:jvm=-XX:+NoSuchThing", "the JVM refuses '-XX:+NoSuchThing': Unrecognized VM option 'NoSuchThing'"),
    ("undertow:colour=red", "'colour=red' is not KEY=VALUE"),
    ("undertow:", "changes nothing"),
    ("floor:jvm=-Xint", "floor is not a Java server"),
    ("undertow:jvm=-Xint;name=undertow", "'undertow' cannot name it"),
])
def test_a_bad_variant_is_one_clear_line(spec, message):
    with pytest.raises(variants.VariantError, match=message.replace("(", r"\(").replace("+", r"\+")):
        variants.parse(spec, KNOWN)


def test_a_jdk_older_than_the_modules_release_is_refused(tmp_path):
    fake = tmp_path / "jdk" / "bin" / "java"
    fake.parent.mkdir(parents=True)
    fake.write_text('#!/bin/sh\necho \'openjdk version "17.0.15" 2025-04-15\' >&2\n')
    fake.chmod(0o755)
    with pytest.raises(variants.VariantError, match="is JDK 17; the helidon module is built for release 21, so it "
                       "needs JDK 21 or newer"):
        variants.parse(f"helidon:java={tmp_path / 'jdk'}", KNOWN)
    # the core servers are built for release 17, for the JDK matrix: JDK 17 is theirs
    assert KNOWN["undertow"].java_release == 17 and KNOWN["helidon"].java_release == MIN_JAVA
    assert variants.parse(f"undertow:java={tmp_path / 'jdk'}", KNOWN).name == "undertow+jdk17"


def test_variants_come_from_servers_and_variant_and_keep_the_ladder(monkeypatch):
    for k in list(os.environ):
        if k.startswith("LATENCY_DIFF_"):
            monkeypatch.delenv(k)
    s = settings.resolve(settings.build_parser("").parse_args(
        ["--servers", "undertow@2.3.26.Final,undertow", "--variant", "undertow:jvm=-XX:+UseParallelGC"]))
    assert [x.name for x in s.servers] == ["dummy", "dummy-nio", "floor", "undertow", "undertow@2.3.26.Final",
                                           "undertow+useparallelgc"]
    monkeypatch.setenv("LATENCY_DIFF_VARIANT", "undertow:jvm=-Xint;name=a | undertow:jvm=-Xint;name=b")
    s = settings.resolve(settings.build_parser("").parse_args(["--servers", "undertow"]))
    assert [x.name for x in s.servers][-2:] == ["a", "b"]
    with pytest.raises(ServerError, match="'undertow@2.3.26.Final' cannot name it"):  # named twice
        select(discover(), "undertow@2.3.26.Final", ["undertow@2.3.26.Final"])


def test_head_to_head_puts_a_in_the_dummys_place(monkeypatch):
    for k in list(os.environ):
        if k.startswith("LATENCY_DIFF_"):
            monkeypatch.delenv(k)
    s = settings.resolve(settings.build_parser("").parse_args(["--compare", "undertow", "undertow@1.0.15.Final"]))
    assert [(x.name, x.baseline, x.reference) for x in s.servers] == [
        ("undertow", True, False), ("undertow@1.0.15.Final", False, False), ("dummy", False, True)]
    assert s.compare == ["undertow", "undertow@1.0.15.Final"]
    for argv, message in ((["--compare", "undertow", "undertow"], "both 'undertow'"),
                          (["--compare", "undertow", "nope"], r"unknown server\(s\): nope"),
                          (["--compare", "dummy", "undertow"], "the dummy is measured against A anyway")):
        with pytest.raises(settings.RunError, match=message):
            settings.resolve(settings.build_parser("").parse_args(argv))


@pytest.mark.slow
def test_a_release_that_does_not_resolve_stops_the_build_with_one_line_naming_it(tmp_path):
    # Maven Central answers 404 for this version: the build fails before anything is measured, and the last line
    # names the variant's build.
    proc = subprocess.run([str(KIT_ROOT / "scripts" / "build.sh"), "--servers", "undertow@0.0.0-no.such.release"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("latency-diff: error: the build of servers/undertow with "
                           "-Dundertow.version=0.0.0-no.such.release (is that release on Maven Central"), last
    assert not (KNOWN["undertow"].module_dir / "target" / "v-0.0.0-no.such.release" / "undertow.jar").exists()
