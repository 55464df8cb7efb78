"""Reproducibility: the same run twice, back to back; every interval should overlap, no ranking flip."""

from __future__ import annotations

import argparse

from ..analyze import agreement, compare
from ..export import tables
from . import common


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--servers", default=common.CORE, help=f"servers (default {common.CORE})")


def run(args: argparse.Namespace, driver_args: list[str]) -> int:
    out = common.out_dir(args.results_dir, "repeat")
    runs = []
    for name in ("first", "second"):
        run_dir, minutes = common.run_driver(out / name, ["--servers", args.servers, *driver_args])
        runs.append((common.build(run_dir), run_dir, minutes))
    (a, a_dir, a_min), (b, b_dir, b_min) = runs
    notes = agreement(a, b)
    table, more = compare(a, b)
    parts = [f"First: {tables.headline(a)} ({a_min:.1f} min)", f"Second: {tables.headline(b)} ({b_min:.1f} min)",
             common.md_table(table), *[f"- {n}" for n in notes + more]]
    print(tables.render_text(table) + "\n" + "\n".join(notes))
    common.write(out, "repeat", "Reproducibility: two runs back to back", parts,
                 {"first": str(a_dir.relative_to(out)), "second": str(b_dir.relative_to(out)), "notes": notes + more})
    return 0
