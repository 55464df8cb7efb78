"""Which servers a run measures, and the command line that lists them.

`select` turns a run's --servers list (names, "all", and variants: variants.py) into the servers it
measures, the baseline ladder always among them; discovery itself is servers.py's.

Usage: python3 -m latency_diff.catalog list | names | jars | modules [--servers LIST] | check-reactor
"""

from __future__ import annotations

import argparse
import sys

from .servers import Server, ServerError, agent_jar, build_modules, discover, reactor_problems
from .variants import parse


def select(servers: list[Server], names: str | None, variants: list[str] | None = None) -> list[Server]:
    """The servers named in a comma-separated list (None or 'all': every one but those marked matrix_only, which are
    measured only when named), and the variants (variants.py) named there or in `variants`; the baseline ladder
    (dummy, floor, NIO dummy) is always in, since every report shows it. Raises ServerError (a VariantError for a bad
    variant)."""
    by_name = {s.name: s for s in servers}
    tokens = [n.strip() for n in (names or "").split(",") if n.strip()]
    wanted = [n for n in tokens if n != "all"]
    specs = [n for n in wanted if n not in by_name and ("@" in n or ":" in n)] + list(variants or [])
    plain = [n for n in wanted if n not in specs]
    unknown = [n for n in plain if n not in by_name]
    if unknown:
        raise ServerError(f"unknown server(s): {', '.join(unknown)}; known: {', '.join(by_name)}")
    # Every server when --servers names none (--variant adds to them), or names "all"; a matrix_only one only by name.
    everything = "all" in tokens or not tokens
    chosen = [s for s in servers
              if (everything and not s.matrix_only) or s.name in plain or s.baseline or s.reference]
    for spec in specs:
        chosen.append(parse(spec, by_name | {s.name: s for s in chosen}))
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("list", "names", "jars", "modules", "check-reactor"),
                        help="list: a table of servers; names: one name a line; jars: the jar of each module; "
                             "modules: the Maven modules a run of --servers needs and their jars, one a line "
                             "(no --servers: every server's, matrix_only ones too, so that a build builds them); "
                             "check-reactor: check "
                             "that the root pom.xml builds every module folder")
    parser.add_argument("--servers", metavar="LIST", help="modules: the servers of the run (default: every one; "
                        "'all' is a run's all, without the matrix_only ones)")
    args = parser.parse_args(argv)
    try:
        servers = discover()
        if args.what == "list":
            for s in servers:
                only = f"  (only when named: {s.matrix_only})" if s.matrix_only else ""
                print(f"{s.name:14} {s.threading:16} {s.display}{only}")
        elif args.what == "names":
            print("\n".join(s.name for s in servers))
        elif args.what == "jars":
            print("\n".join(dict.fromkeys([*(str(s.jar) for s in servers if s.is_java), str(agent_jar())])))
        elif args.what == "modules":
            chosen = servers if args.servers is None else select(servers, args.servers)
            print("\n".join(f"{m} {jar} {options}".rstrip() for m, jar, options in build_modules(chosen)))
        else:
            problems = reactor_problems()
            if problems:
                raise ServerError("the Maven reactor is out of date:\n  " + "\n  ".join(problems))
    except ServerError as e:
        print(f"catalog: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
