"""Server discovery: every folder with a server.toml (dummy-server/, native/, servers/*/) is a module.

This is the one place that knows where servers live. The driver, the tests and the reports ask it;
the Maven reactor (the root pom.xml's <modules>) is checked against it, so adding a server is one new
folder plus the one <module> line that the check names.

Which of them a run measures, and the command line that lists them: catalog.py.
"""

from __future__ import annotations

import re
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from . import KIT_ROOT
from .envinfo import java_info

THREADING_MODELS = ("event loop", "thread pool", "virtual threads", "blocking")
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_FIELDS = {"name", "display", "library", "threading", "args", "jvm_flags", "notes", "baseline", "nonconformant",
           "reference", "executable", "parses_http", "http",
           "runs_on", "interpreter", "script", "install", "version_property", "server_header",
           "server_header_reason", "binds_every_interface", "matrix_only"}
#: The oldest JDK the kit runs on: the driver's JDK, the dummy's and most modules' release (a module's own
#: <maven.compiler.release> may be older: `Server.java_release`).
MIN_JAVA = 21
#: The server every other is measured against, unless a head-to-head names another (--compare).
BASELINE = "dummy"
#: The HTTP versions a server can be measured with: ab's HTTP/1.0 keep-alive request, or HTTP/1.1.
HTTP_VERSIONS = ("1.0", "1.1")
#: Maven modules that are not servers: built in the same reactor, used by the driver.
AGENT_DIR = KIT_ROOT / "agent"
#: Where scripts/lib.sh builds the C programs of native/ (the lean client and the floor responder).
NATIVE_BUILD = KIT_ROOT / "native" / "build"
REFERENCE_RESPONSE = KIT_ROOT / "common/src/main/resources/org/latencydiff/reference-response.txt"


class ServerError(Exception):
    """A server.toml that breaks the metadata contract; the message names the file and field."""


@dataclass(frozen=True)
class Variant:
    """What a variant changes of its server (variants.py): the library's version, the JDK, JVM flags."""
    spec: str
    #: The server it is a variant of.
    of: str = ""
    version: str | None = None
    #: The java binary to run it with, instead of the run's.
    java: str | None = None
    jvm_flags: tuple[str, ...] = ()

    @property
    def build_dir(self) -> str | None:
        """Where a version's build goes, relative to each module: target/v-<version>."""
        return f"target/v-{self.version}" if self.version else None


@dataclass(frozen=True)
class Server:
    name: str
    display: str
    module_dir: Path
    threading: str
    notes: str
    library: str | None = None
    args: tuple[str, ...] = ()
    jvm_flags: tuple[str, ...] = ()
    baseline: bool = False
    #: Why this library cannot give ab the reference response (it is still tried, and reported invalid).
    nonconformant: str | None = None
    #: A rung of the baseline ladder (floor, NIO dummy), not a library under test: listed first.
    reference: bool = False
    #: A native program in native/build instead of a Java jar (no JVM flags, no agent).
    executable: str | None = None
    #: A script in the module folder run by a program found on PATH (e.g. node), instead of a Java jar; with
    #: `install`, the command that installs that program (shown when it is missing).
    interpreter: str | None = None
    script: str | None = None
    install: str | None = None
    #: False for the floor: it counts bytes instead of parsing HTTP, so hostile clients do not apply.
    parses_http: bool = True
    #: The HTTP version it is measured with by default: "1.0" (ab's request) or "1.1" for a server that cannot keep
    #: an HTTP/1.0 connection alive (lean client only; the baseline then gets the same request bytes).
    http: str = "1.0"
    #: The name it announces (READY line, Server header) when that is not `name`: the null pair's second
    #: dummy is the dummy itself, byte for byte, under a name of its own in the results.
    alias_of: str | None = None
    #: For a framework: the name of the kit's server it runs on (e.g. "netty"), so a report can show what the
    #: framework adds over it.
    runs_on: str | None = None
    #: The Maven property of its module that holds the library's version (e.g. "undertow.version"): a variant
    #: name@version builds the module with another.
    version_property: str | None = None
    #: Set on a variant of this server (variants.py).
    variant: Variant | None = None
    #: A fixed Server header the library always writes and no API replaces, declared (with the reason) instead of
    #: the name: the conformance check then accepts exactly that value, and nothing else.
    server_header: str | None = None
    server_header_reason: str | None = None
    #: Why it listens on every interface, for a library whose API takes no address (declared, so that the loopback
    #: check expects exactly that); the kit's clients still talk to it over 127.0.0.1 only.
    binds_every_interface: str | None = None
    #: Why it is measured only when named (--servers, a variant, a benchmark's matrix) and left out of a run of every
    #: server ("all"): an older release line, say, that the releases matrix measures. It is still discovered, built,
    #: listed and checked for conformance like any other.
    matrix_only: str | None = None

    @property
    def wire_name(self) -> str:
        return self.alias_of or self.name

    @property
    def expected_server_header(self) -> str:
        """What its responses' Server header must say: its name, or the fixed value its metadata declares."""
        return self.server_header or self.wire_name

    @property
    def is_java(self) -> bool:
        return self.executable is None and self.script is None

    @property
    def module(self) -> str:
        return self.module_dir.name

    @property
    def jar(self) -> Path:
        """The executable jar the module's build produces (fixed name: target/<artifactId>.jar; a version variant's:
        target/v-<version>/<artifactId>.jar)."""
        folder = self.variant.build_dir if self.variant and self.variant.build_dir else "target"
        return self.module_dir / folder / f"{_artifact_id(self.module_dir)}.jar"

    def pom_version(self) -> str | None:
        """The library version its module's pom sets in its version property (what a plain build uses)."""
        if not self.version_property:
            return None
        m = re.search(rf"<{re.escape(self.version_property)}>([^<]+)</", (self.module_dir / "pom.xml").read_text())
        return m.group(1).strip() if m else None

    @property
    def java_release(self) -> int:
        """The oldest JDK its jar runs on: its module's <maven.compiler.release>, else the parent pom's (MIN_JAVA)."""
        m = re.search(r"<maven\.compiler\.release>(\d+)</", (self.module_dir / "pom.xml").read_text())
        return int(m.group(1)) if m else MIN_JAVA

    def library_version(self) -> str | None:
        """The library's version, read from the built jar's lib/ folder (None if not built); for a script, the
        version its interpreter prints (`node --version`)."""
        if self.interpreter:
            return _program_version(self.interpreter)
        if self.library is None:
            return None
        artifact = self.library.split(":")[1]
        pattern = re.compile(rf"^{re.escape(artifact)}-(\d[^/]*)\.jar$")
        lib = self.jar.parent / "lib"
        if not lib.is_dir():
            return None
        for jar in sorted(lib.iterdir()):
            m = pattern.match(jar.name)
            if m:
                return m.group(1)
        return None

    @property
    def artifact(self) -> Path:
        """What the build produces for this server (its jar, or its native executable), or its script."""
        if self.script:
            return self.module_dir / self.script
        return NATIVE_BUILD / self.executable if self.executable else self.jar

    def command(self, java: str, jvm_flags: list[str], port: int, host: str = "127.0.0.1") -> list[str]:
        """The command line that starts this server (the server contract: --port, --host, --name)."""
        common = ["--port", str(port), "--host", host, "--name", self.wire_name, *self.args]
        if self.executable:
            return [str(self.artifact), *common, "--template", str(REFERENCE_RESPONSE)]
        if self.script:
            return [self.interpreter or "", str(self.artifact), *common, "--template", str(REFERENCE_RESPONSE)]
        variant = self.variant or Variant("")
        return [variant.java or java, *jvm_flags, *self.jvm_flags, *variant.jvm_flags, "-jar", str(self.jar), *common]

    def _variant_jdk(self) -> dict | None:
        """A JDK variant's java by version and vendor (its path stays out of the records)."""
        if self.variant is None or not self.variant.java:
            return None
        return java_info(self.variant.java)

    def to_dict(self) -> dict:
        return {
            "name": self.name, "display": self.display, "module": self.module,
            "library": self.library, "library_version": self.library_version(),
            "threading": self.threading, "args": list(self.args), "jvm_flags": list(self.jvm_flags),
            "baseline": self.baseline, "notes": self.notes, "nonconformant": self.nonconformant,
            "reference": self.reference, "executable": self.executable, "parses_http": self.parses_http,
            "http": self.http, "runs_on": self.runs_on, "interpreter": self.interpreter, "script": self.script,
            "version_property": self.version_property, "server_header": self.server_header,
            "server_header_reason": self.server_header_reason, "binds_every_interface": self.binds_every_interface,
            "matrix_only": self.matrix_only,
            "variant": None if self.variant is None else self._variant_record(),
        }

    def _variant_record(self) -> dict:
        """What run.json keeps of a variant: a JDK's folder in its spec becomes "<JDK version>", as scrub.py does for
        the runs recorded before, so that no path of the measuring machine is in the record."""
        assert self.variant is not None
        jdk, spec = self._variant_jdk(), self.variant.spec
        if self.variant.java:
            home = str(Path(self.variant.java).parent.parent)
            spec = spec.replace(home, f"<JDK {(jdk or {}).get('java.runtime.version', 'unknown')}>")
        return {"spec": spec, "of": self.variant.of, "version": self.variant.version, "jdk": jdk,
                "jvm_flags": list(self.variant.jvm_flags)}


def _program_version(program: str) -> str | None:
    import subprocess
    try:
        out = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.removeprefix("v") or None


def _artifact_id(module_dir: Path) -> str:
    pom = (module_dir / "pom.xml").read_text(encoding="utf-8")
    # The module's own artifactId is the first one after the </parent> block.
    after_parent = pom.split("</parent>", 1)[-1]
    m = re.search(r"<artifactId>([^<]+)</artifactId>", after_parent)
    if not m:
        raise ServerError(f"{module_dir / 'pom.xml'}: no artifactId")
    return m.group(1).strip()


def server_dirs(root: Path = KIT_ROOT) -> list[Path]:
    """The dummy first, then native/, then servers/* in name order: every folder with a server.toml."""
    dirs = [root / "dummy-server", root / "native"] + sorted(p for p in (root / "servers").glob("*") if p.is_dir())
    return [d for d in dirs if (d / "server.toml").is_file()]


def module_dirs(root: Path = KIT_ROOT) -> list[Path]:
    """The Maven modules among the server folders (those with a pom.xml)."""
    return [d for d in server_dirs(root) if (d / "pom.xml").is_file()]


def _load(path: Path) -> list[Server]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ServerError(f"{path}: not valid TOML: {e}") from e
    entries = data.get("server")
    if not isinstance(entries, list) or not entries:
        raise ServerError(f"{path}: needs at least one [[server]] table")
    servers = []
    for i, entry in enumerate(entries, 1):
        where = f"{path}: [[server]] #{i}"
        unknown = set(entry) - _FIELDS
        if unknown:
            raise ServerError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        for key in ("name", "display", "threading", "notes"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise ServerError(f"{where}: '{key}' must be a non-empty string")
        if not _NAME.match(entry["name"]):
            raise ServerError(f"{where}: name '{entry['name']}' must be lower-case letters, digits, '.', '_', '-'")
        if entry["threading"] not in THREADING_MODELS:
            raise ServerError(f"{where}: threading must be one of {', '.join(THREADING_MODELS)}")
        gap = entry.get("nonconformant")
        if gap is not None and (not isinstance(gap, str) or not gap.strip()):
            raise ServerError(f"{where}: 'nonconformant' must say why, as a non-empty string")
        library = entry.get("library")
        if library is not None and (not isinstance(library, str) or library.count(":") != 1):
            raise ServerError(f"{where}: library must be 'group:artifact'")
        executable = entry.get("executable")
        if executable is not None and (not isinstance(executable, str) or not _NAME.match(executable)):
            raise ServerError(f"{where}: 'executable' must be the name of a program in native/build")
        script, interpreter = entry.get("script"), entry.get("interpreter")
        if (script is None) != (interpreter is None):
            raise ServerError(f"{where}: 'script' and 'interpreter' go together (a script, the program that runs it)")
        if script is not None:
            if not isinstance(script, str) or "/" in script or not (path.parent / script).is_file():
                raise ServerError(f"{where}: 'script' must name a file in {path.parent.name}/")
            if not isinstance(interpreter, str) or not _NAME.match(interpreter):
                raise ServerError(f"{where}: 'interpreter' must be the name of a program on PATH")
        install = entry.get("install")
        if install is not None and (not isinstance(install, str) or script is None):
            raise ServerError(f"{where}: 'install' (a command) goes with 'interpreter'")
        if executable is None and script is None and not (path.parent / "pom.xml").is_file():
            raise ServerError(f"{where}: no pom.xml next to it, so it needs 'executable', or 'script' and "
                              "'interpreter'")
        for key in ("reference", "parses_http", "baseline"):
            if key in entry and not isinstance(entry[key], bool):
                raise ServerError(f"{where}: '{key}' must be true or false")
        runs_on = entry.get("runs_on")
        if runs_on is not None and (not isinstance(runs_on, str) or not _NAME.match(runs_on)):
            raise ServerError(f"{where}: 'runs_on' must be the name of another server of the kit")
        header, header_reason = entry.get("server_header"), entry.get("server_header_reason")
        if (header is None) != (header_reason is None) or any(
                x is not None and (not isinstance(x, str) or not x.strip()) for x in (header, header_reason)):
            raise ServerError(f"{where}: 'server_header' (a fixed Server value) goes with 'server_header_reason' (why "
                              "the library cannot send the name), both non-empty strings")
        everywhere = entry.get("binds_every_interface")
        if everywhere is not None and (not isinstance(everywhere, str) or not everywhere.strip()):
            raise ServerError(f"{where}: 'binds_every_interface' must say why the library cannot bind one address")
        matrix_only = entry.get("matrix_only")
        if matrix_only is not None and (not isinstance(matrix_only, str) or not matrix_only.strip()):
            raise ServerError(f"{where}: 'matrix_only' must say why it is left out of a run of every server")
        prop = entry.get("version_property")
        if prop is not None and (not isinstance(prop, str) or not re.match(r"^[a-z0-9][a-z0-9.-]*$", prop)):
            raise ServerError(f"{where}: 'version_property' must be the name of a Maven property of the module")
        http = entry.get("http", "1.0")
        if http not in HTTP_VERSIONS:
            raise ServerError(f"{where}: 'http' must be one of {', '.join(repr(v) for v in HTTP_VERSIONS)}")
        for key in ("args", "jvm_flags"):
            value = entry.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ServerError(f"{where}: '{key}' must be a list of strings")
        servers.append(Server(
            name=entry["name"], display=entry["display"], module_dir=path.parent,
            threading=entry["threading"], notes=" ".join(entry["notes"].split()), library=library,
            args=tuple(entry.get("args", [])), jvm_flags=tuple(entry.get("jvm_flags", [])),
            baseline=bool(entry.get("baseline", False)),
            nonconformant=" ".join(gap.split()) if gap else None,
            reference=bool(entry.get("reference", False)), executable=executable,
            parses_http=bool(entry.get("parses_http", True)), http=http, runs_on=runs_on,
            interpreter=interpreter, script=script, install=install, version_property=prop,
            server_header=header, server_header_reason=" ".join(header_reason.split()) if header_reason else None,
            binds_every_interface=" ".join(everywhere.split()) if everywhere else None,
            matrix_only=" ".join(matrix_only.split()) if matrix_only else None,
        ))
    return servers


def discover(root: Path = KIT_ROOT) -> list[Server]:
    """All servers, the baseline first. Raises ServerError on a broken or duplicate entry."""
    servers: list[Server] = []
    for d in server_dirs(root):
        servers.extend(_load(d / "server.toml"))
    names = [s.name for s in servers]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ServerError(f"server name(s) used twice: {', '.join(dupes)}")
    unknown = sorted({f"{s.name} -> {s.runs_on}" for s in servers if s.runs_on and s.runs_on not in names})
    if unknown:
        raise ServerError(f"'runs_on' names no server of the kit: {', '.join(unknown)}")
    baselines = [s.name for s in servers if s.baseline]
    if baselines != [BASELINE]:
        raise ServerError(f"exactly one baseline, 'dummy', expected; found {baselines or 'none'}")
    return servers


def agent_jar() -> Path:
    """The java agent every Java server runs with (allocation and GC counters, agent/)."""
    return AGENT_DIR / "target" / "latency-diff-agent.jar"


#: Maven modules of the reactor that are not server folders.
SUPPORT_MODULES = ("common", "agent")
_POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def reactor_modules(root: Path = KIT_ROOT) -> list[str]:
    """The <module> entries of the root pom.xml, as written there."""
    try:
        pom = ET.parse(root / "pom.xml").getroot()
    except (OSError, ET.ParseError) as e:
        raise ServerError(f"{root / 'pom.xml'}: cannot read the reactor: {e}") from e
    return [(m.text or "").strip() for m in pom.findall("m:modules/m:module", _POM_NS)]


def reactor_problems(root: Path = KIT_ROOT) -> list[str]:
    """What is wrong with the reactor: a module folder it does not list, or an entry with no module behind it."""
    listed = reactor_modules(root)
    wanted = [*SUPPORT_MODULES, *(d.relative_to(root).as_posix() for d in module_dirs(root))]
    problems = [f"{m}/ has a pom.xml but the root pom.xml does not build it: add <module>{m}</module> to its "
                "<modules>" for m in wanted if m not in listed]
    problems += [f"the root pom.xml lists <module>{m}</module>, but {m}/pom.xml does not exist: remove the line"
                 for m in listed if not (root / m / "pom.xml").is_file()]
    return problems


def build_modules(servers: list[Server], root: Path = KIT_ROOT) -> list[tuple[str, Path, str]]:
    """(root-relative folder, the jar it builds, its Maven -D options) of each build the servers' jars come from,
    with the agent every Java server runs with: what `./mvnw -pl ... -am` must build for a run of just these
    servers. A version variant is a build of its own: the module with its version property set, into its own
    folder."""
    builds: dict[tuple[Path, str], Path] = {}
    for s in servers:
        if not s.is_java:
            continue
        options = ""
        if s.variant and s.variant.version:
            options = f"-D{s.version_property}={s.variant.version} -Dlatency-diff.build.dir={s.variant.build_dir}"
        builds.setdefault((s.module_dir, options), s.jar)
    return [("agent", agent_jar(), ""), *((d.relative_to(root).as_posix(), builds[(d, o)], o)
                                          for d, o in sorted(builds))]
