import pytest

from latency_diff import servers
from latency_diff.servers import ServerError


def test_discovery_finds_the_dummy_first_and_unique_names():
    found = servers.discover()
    assert found[0].name == "dummy" and found[0].baseline
    assert len({s.name for s in found}) == len(found)
    for s in found:
        assert s.threading in servers.THREADING_MODELS
        assert s.jar.name.endswith(".jar")


def test_select_keeps_the_baseline_and_rejects_unknown_names():
    found = servers.discover()
    chosen = servers.select(found, "undertow")
    assert [s.name for s in chosen] == ["dummy", "undertow"]
    with pytest.raises(ServerError, match="unknown server\\(s\\): nope"):
        servers.select(found, "undertow,nope")


def test_reactor_lists_every_module(tmp_path):
    pom = servers.reactor_pom(tmp_path)
    for d in servers.module_dirs():
        assert f"/{d.name}</module>" in pom


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
])
def test_broken_metadata_is_named(tmp_path, toml, message):
    root = _module(tmp_path, toml)
    with pytest.raises(ServerError, match=message):
        servers.discover(root)
