import re
import subprocess
import sys

import pytest

from latency_diff import catalog, servers
from latency_diff.servers import ServerError


def test_discovery_finds_the_dummy_first_and_unique_names():
    found = servers.discover()
    assert found[0].name == "dummy" and found[0].baseline
    assert len({s.name for s in found}) == len(found)
    for s in found:
        assert s.threading in servers.THREADING_MODELS
        if s.is_java:
            assert s.artifact == s.jar and s.jar.name.endswith(".jar")
        elif s.script:
            assert s.artifact == s.module_dir / s.script and s.interpreter
        else:
            assert s.artifact.parent == servers.NATIVE_BUILD and s.reference
    ladder = [s.name for s in found if s.baseline or s.reference]
    assert ladder == ["dummy", "dummy-nio", "floor"]


def test_select_keeps_the_baseline_and_rejects_unknown_names():
    found = servers.discover()
    chosen = catalog.select(found, "undertow")
    assert [s.name for s in chosen] == ["dummy", "dummy-nio", "floor", "undertow"]
    with pytest.raises(ServerError, match="unknown server\\(s\\): nope"):
        catalog.select(found, "undertow,nope")


def test_the_root_pom_builds_every_module():
    assert servers.reactor_problems() == []
    listed = servers.reactor_modules()
    assert listed[:2] == ["common", "agent"] and "native" not in listed
    assert {f"servers/{d.name}" for d in servers.module_dirs() if d.parent.name == "servers"} <= set(listed)


def test_a_module_missing_from_the_reactor_names_the_line_to_add(tmp_path):
    (tmp_path / "pom.xml").write_text(
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modules><module>common</module><module>agent</module>'
        '<module>servers/gone</module></modules></project>')
    for d in ("common", "agent", "servers/x"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "pom.xml").write_text("<project/>")
    (tmp_path / "servers" / "x" / "server.toml").write_text('[[server]]\nname = "x"\n')
    assert servers.reactor_problems(tmp_path) == [
        "servers/x/ has a pom.xml but the root pom.xml does not build it: add <module>servers/x</module> to its "
        "<modules>",
        "the root pom.xml lists <module>servers/gone</module>, but servers/gone/pom.xml does not exist: remove the "
        "line"]
    proc = subprocess.run([sys.executable, "-m", "latency_diff.catalog", "check-reactor"], capture_output=True,
                          text=True, cwd=servers.KIT_ROOT)
    assert proc.returncode == 0 and proc.stderr == ""


def test_a_native_server_runs_its_executable_with_the_reference_template():
    floor = next(s for s in servers.discover() if s.name == "floor")
    cmd = floor.command("java", ["-Xmx1g"], 8080)
    assert cmd[0] == str(servers.NATIVE_BUILD / "floor") and "-Xmx1g" not in cmd
    assert cmd[-2:] == ["--template", str(servers.REFERENCE_RESPONSE)]
    assert not floor.parses_http


def _module(tmp_path, toml: str):
    for d in ("dummy-server", "servers/x"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "pom.xml").write_text("<project><artifactId>x</artifactId></project>")
    (tmp_path / "dummy-server" / "server.toml").write_text(
        '[[server]]\nname="dummy"\ndisplay="D"\nthreading="blocking"\nnotes="n"\nbaseline=true\n')
    (tmp_path / "servers" / "x" / "server.toml").write_text(toml)
    return tmp_path


@pytest.mark.parametrize("toml, message", [
    ('[[server]]\nname="X!"\ndisplay="x"\nthreading="blocking"\nnotes="n"', "must be lower-case"),
    ('[[server]]\nname="x"\ndisplay="x"\nthreading="magic"\nnotes="n"', "threading must be one of"),
    ('[[server]]\nname="x"\ndisplay="x"\nthreading="blocking"', "'notes' must be a non-empty string"),
    ('[[server]]\nname="x"\ndisplay="x"\nthreading="blocking"\nnotes="n"\ncolour="red"', "unknown field"),
    ('[[server]]\nname="dummy"\ndisplay="x"\nthreading="blocking"\nnotes="n"', "used twice: dummy"),
    ('name = ', "not valid TOML"),
    ('[[server]]\nname="x"\ndisplay="x"\nthreading="blocking"\nnotes="n"\nreference="yes"', "must be true or false"),
    ('[[server]]\nname="x"\ndisplay="x"\nthreading="blocking"\nnotes="n"\nexecutable="../x"', "'executable' must"),
    ('[[server]]\nname="x"\ndisplay="x"\nthreading="blocking"\nnotes="n"\nmatrix_only=" "', "'matrix_only' must say"),
    ('[[server]]\nname="x"\ndisplay="x"\nthreading="blocking"\nnotes="n"\nmatrix_only=true', "'matrix_only' must say"),
])
def test_broken_metadata_is_named(tmp_path, toml, message):
    """Each broken server.toml is an error naming the file and the field."""
    root = _module(tmp_path, toml)
    with pytest.raises(ServerError, match=message):
        servers.discover(root)


def test_a_server_without_pom_needs_an_executable(tmp_path):
    root = _module(tmp_path, '[[server]]\nname="x"\ndisplay="x"\nthreading="blocking"\nnotes="n"')
    (root / "servers" / "x" / "pom.xml").unlink()
    with pytest.raises(ServerError, match="no pom.xml next to it, so it needs 'executable'"):
        servers.discover(root)


#: The older release lines, measured by the releases matrix only (bench/matrix.py), written out by hand.
MATRIX_ONLY = {"jetty10", "jetty11", "netty41", "tomcat9-nio"}
#: The positive controls (dummy-server, latency_diff/analysis/controls.py), measured only when named too.
CONTROLS = {"control-spin", "control-modes"}


def test_a_matrix_only_server_is_left_out_of_all_but_measured_by_name(tmp_path):
    root = _module(tmp_path, '[[server]]\nname="x"\ndisplay="X"\nthreading="blocking"\nnotes="n"\n'
                             'matrix_only="an older   release line"\n')
    found = servers.discover(root)
    assert found[1].matrix_only == "an older release line"  # whitespace folded, as notes are
    assert found[1].to_dict()["matrix_only"] == "an older release line"
    assert [s.name for s in catalog.select(found, None)] == ["dummy"]
    assert [s.name for s in catalog.select(found, "all")] == ["dummy"]
    assert [s.name for s in catalog.select(found, "x")] == ["dummy", "x"]
    assert [s.name for s in catalog.select(found, "all,x")] == ["dummy", "x"]


def test_the_older_release_lines_are_matrix_only_and_still_built(capsys):
    found = servers.discover()
    assert {s.name for s in found if s.matrix_only} == MATRIX_ONLY | CONTROLS
    everything = {s.name for s in catalog.select(found, None)}
    assert not everything & MATRIX_ONLY and {"netty", "tomcat-nio", "jetty9", "jetty"} <= everything
    assert [s.name for s in catalog.select(found, "netty41,tomcat9-nio")][-2:] == ["netty41", "tomcat9-nio"]
    (v,) = [s for s in catalog.select(found, "netty41@4.1.100.Final") if s.variant]
    assert v.variant.of == "netty41"
    # A build with no --servers (scripts/build.sh) builds them; the build of a run of "all" (run-all.sh) does not.
    assert catalog.main(["modules"]) == 0
    built = {line.split()[0] for line in capsys.readouterr().out.splitlines()}
    assert {"servers/netty41", "servers/tomcat9", "servers/jetty10", "servers/jetty11"} <= built
    assert catalog.main(["modules", "--servers", "all"]) == 0
    built_for_all = {line.split()[0] for line in capsys.readouterr().out.splitlines()}
    assert built - built_for_all == {"servers/netty41", "servers/tomcat9", "servers/jetty10", "servers/jetty11"}


def test_list_shows_a_matrix_only_server_with_its_reason(capsys):
    from latency_diff.measure import cli
    assert cli.main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    (i,) = [i for i, line in enumerate(lines) if line.split()[:1] == ["netty41"]]
    assert lines[i + 1].strip() == ("measured only when named in --servers: an older release line, measured in the "
                                    "releases matrix (bench.sh matrix releases)")
    (j,) = [j for j, line in enumerate(lines) if line.split()[:1] == ["netty"]]
    assert lines[j + 1].split()[0] != "measured"


def test_a_script_server_runs_under_its_interpreter(tmp_path):
    node = next(s for s in servers.discover() if s.name == "node")
    assert not node.is_java and node.artifact == servers.KIT_ROOT / "servers" / "node" / "server.js"
    cmd = node.command("java", ["-Xmx1g"], 8080)
    assert cmd[:2] == ["node", str(node.artifact)] and "-Xmx1g" not in cmd
    assert cmd[-2:] == ["--template", str(servers.REFERENCE_RESPONSE)]


@pytest.mark.parametrize("fields, message", [
    ('script = "s.js"', "'script' and 'interpreter' go together"),
    ('script = "missing.js"\ninterpreter = "node"', "'script' must name a file in x/"),
    ('script = "s.js"\ninterpreter = "/usr/bin/node"', "'interpreter' must be the name of a program on PATH"),
    ('install = "apt-get install x"', "'install' (a command) goes with 'interpreter'"),
])
def test_bad_script_fields_are_errors(tmp_path, fields, message):
    d = tmp_path / "x"
    d.mkdir()
    (d / "s.js").write_text("")
    (d / "server.toml").write_text(f'[[server]]\nname = "x"\ndisplay = "X"\nthreading = "blocking"\nnotes = "n"\n'
                                   f'{fields}\n')
    with pytest.raises(ServerError, match=re.escape(message)):
        servers._load(d / "server.toml")
