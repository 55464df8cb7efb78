"""Variants of a server: the same module with something changed, measured as a server of its own.

A variant is written SERVER[@VERSION][:KEY=VALUE[;KEY=VALUE...]]:

    undertow@1.0.15.Final                   another release of the library (its module's version property,
                                            e.g. undertow.version), built into a jar of its own
    undertow:java=/usr/lib/jvm/jdk-21       another JDK (its home, or its java): its module's release or newer
    undertow:jvm=-XX:+UseSerialGC           JVM flags after the run's own (a later flag wins)
    undertow:java=/opt/jdk21;jvm=-Xint;name=u21   several at once; name= chooses the row's name
    undertow:name=again                     nothing but the name: the server against itself (an A/A check)

Each gets a name of its own (`name=`, or one made of its parts: undertow@1.0.15.Final,
undertow+jdk21, undertow+useserialgc) and is measured, reported and compared like any server. A
bad variant (no such server, a version on a module without a version property, a path that is not
a JDK, a JDK older than its module's release, flags the JVM refuses) stops the run before anything is measured, with
one line; a version that does not resolve stops the build.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import subprocess
from pathlib import Path

from .servers import Server, ServerError, Variant

KEYS = ("java", "jvm", "name")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_NAME = re.compile(r"^[a-z0-9][a-z0-9._@+-]*$")


class VariantError(ServerError):
    """A variant that cannot be run; the message says which and why."""


def java_binary(path: str) -> Path:
    """The java of a JDK home, or the path itself when it is a java."""
    p = Path(path).expanduser()
    return p / "bin" / "java" if p.is_dir() else p


def java_major(java: Path) -> int | None:
    """The major version a java prints (8 for 1.8), or None when it does not run."""
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if out.returncode != 0 or not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def check_flags(java: Path, flags: list[str]) -> str | None:
    """Why the JVM refuses the flags (its first line of complaint), or None."""
    try:
        out = subprocess.run([str(java), *flags, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    if out.returncode == 0:
        return None
    lines = [x for x in (out.stderr + out.stdout).splitlines() if x.strip()]
    return lines[0] if lines else f"exit status {out.returncode}"


def _slug(flags: tuple[str, ...]) -> str:
    """A short name for JVM flags: -XX:+UseSerialGC -> useserialgc, -Xint -> xint."""
    words = [re.sub(r"[^a-z0-9]+", "", re.sub(r"^-+(XX:)?[+-]?", "", f).lower()) for f in flags]
    return ".".join(w for w in words if w)[:32] or "flags"


def parse(spec: str, servers: dict[str, Server], default_java: str = "java") -> Server:
    """The server a variant spec names, changed as it says. Raises VariantError."""
    head, _, rest = spec.partition(":")
    name, _, version = head.partition("@")
    base = servers.get(name)
    if base is None:
        raise VariantError(f"variant {spec!r}: no server {name!r}; known: {', '.join(servers)}")
    settings: dict[str, str] = {}
    for part in filter(None, (x.strip() for x in rest.split(";"))):
        key, eq, value = part.partition("=")
        if not eq or key not in KEYS or not value:
            raise VariantError(f"variant {spec!r}: {part!r} is not KEY=VALUE with KEY one of {', '.join(KEYS)}")
        settings[key] = value
    if not version and not settings:
        raise VariantError(f"variant {spec!r} changes nothing: give @VERSION, java=, jvm=, or name= (the server "
                           "itself under another name, an A/A check)")
    suffix: list[str] = []
    shown: list[str] = [version] if version else []
    if version:
        if not base.version_property:
            raise VariantError(f"variant {spec!r}: the {base.module} module has no version property, so {name} "
                               "comes in one version only")
        if not _VERSION.match(version):
            raise VariantError(f"variant {spec!r}: {version!r} is not a version")
    java = None
    if "java" in settings:
        binary = java_binary(settings["java"])
        major = java_major(binary)
        if major is None:
            raise VariantError(f"variant {spec!r}: {settings['java']} is not a JDK (no java there that runs)")
        if base.is_java and major < base.java_release:
            raise VariantError(f"variant {spec!r}: {settings['java']} is JDK {major}; the {base.module} module is "
                               f"built for release {base.java_release}, so it needs JDK {base.java_release} or newer")
        java = str(binary)
        suffix.append(f"jdk{major}")
        shown.append(f"JDK {major}")
    flags: tuple[str, ...] = ()
    if "jvm" in settings:
        flags = tuple(shlex.split(settings["jvm"]))
        if base.is_java:
            why = check_flags(Path(java or default_java), list(flags))
            if why:
                raise VariantError(f"variant {spec!r}: the JVM refuses {settings['jvm']!r}: {why}")
        suffix.append(_slug(flags))
        shown.append(settings["jvm"])
    label = settings.get("name") or (f"{name}@{version}" if version else name) + "".join(f"+{s}" for s in suffix)
    if not _NAME.match(label.lower()) or label in servers:
        raise VariantError(f"variant {spec!r}: {label!r} cannot name it (taken, or not letters, digits and . _ @ + -): "
                           "give it a name= of its own")
    if not base.is_java and (java or flags):
        raise VariantError(f"variant {spec!r}: {name} is not a Java server: java= and jvm= do not apply")
    variant = Variant(spec=spec, of=base.name, version=version or None, java=java, jvm_flags=flags)
    display = f"{base.display} ({', '.join(shown) if shown else 'itself, as ' + label})"
    return dataclasses.replace(base, name=label, display=display, variant=variant, alias_of=base.wire_name)
