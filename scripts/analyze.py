#!/usr/bin/env python3
"""Turns a run directory's raw files into the latency-diff table and its files (see --help).

Run it with the kit's virtual environment (.venv/bin/python scripts/analyze.py RUN_DIR), which
scripts/run-all.sh creates; it calls this at the end of every run.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

try:
    from latency_diff.analyze import main
except ModuleNotFoundError as e:  # scipy and friends live in the kit's virtual environment
    sys.exit(f"analyze.py: missing Python package '{e.name}': run it as .venv/bin/python scripts/analyze.py "
             "(./scripts/run-all.sh --help creates .venv), or pip install -r requirements.txt")

if __name__ == "__main__":
    sys.exit(main())
