"""scripts/bench.sh NAME [OPTIONS] [DRIVER OPTIONS]: runs one of the kit's benchmarks (see latency_diff/bench)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import KIT_ROOT
from . import (
    coverage,
    firstrun,
    gate,
    independent,
    interleave,
    lend,
    matrix,
    pinning,
    robustness,
    sensitivity,
    warmup,
    windows,
)

BENCHMARKS = {"robustness": robustness, "interleave": interleave, "warmup": warmup,
              "pinning": pinning, "matrix": matrix, "coverage": coverage,
              "sensitivity": sensitivity, "windows": windows, "independent": independent,
              "firstrun": firstrun, "lend": lend, "gate": gate}


def main(argv: list[str] | None = None) -> int:
    from . import __doc__ as doc
    p = argparse.ArgumentParser(prog="bench.sh", description=doc, formatter_class=argparse.RawDescriptionHelpFormatter,
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
