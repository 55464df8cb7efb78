"""scripts/bench.sh NAME [OPTIONS] [DRIVER OPTIONS]: runs one of the kit's benchmarks (see latency_diff/bench)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import KIT_ROOT
from . import (
    coverage,
    firstrun,
    fleet,
    gate,
    independent,
    matrix,
    robustness,
    sensitivity,
    windows,
)

#: The benchmarks, the one list of them.
BENCHMARKS = {"coverage": coverage, "gate": gate, "fleet": fleet, "matrix": matrix, "sensitivity": sensitivity,
              "robustness": robustness, "windows": windows, "independent": independent, "firstrun": firstrun}


def summaries() -> str:
    """One line per benchmark: its name and its docstring's first line."""
    return "\n".join(f"  {name:12} {(m.__doc__ or '').splitlines()[0]}" for name, m in BENCHMARKS.items())


def main(argv: list[str] | None = None) -> int:
    from . import __doc__ as doc
    p = argparse.ArgumentParser(prog="bench.sh", description=f"{doc}\nThe benchmarks:\n{summaries()}",
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Options a benchmark does not know go to the driver of each of its runs (e.g. "
                                "--budget 120).")
    sub = p.add_subparsers(dest="name", required=True, metavar="NAME")
    for name, module in BENCHMARKS.items():
        sp = sub.add_parser(name, help=(module.__doc__ or "").splitlines()[0], description=module.__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        sp.add_argument("--results-dir", type=Path, default=KIT_ROOT / "results", help="where to write (default "
                        "results/)")
        module.add_arguments(sp)
    args, driver_args = p.parse_known_args(argv)
    return BENCHMARKS[args.name].run(args, driver_args)


if __name__ == "__main__":
    sys.exit(main())
