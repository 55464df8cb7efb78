#!/usr/bin/env python3
"""Turns a run directory's raw files into the latency-diff table and its files (see --help).

Runs with any python3: when the analysis packages (scipy, matplotlib) are not importable, it runs
itself again with the kit's virtual environment (.venv, which ./scripts/run-all.sh and
./scripts/test.sh create), so that `scripts/analyze.py RUN_DIR` works as written.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("LATENCY_DIFF_VENV", ROOT / ".venv"))
sys.path.insert(0, str(ROOT))

try:
    import matplotlib  # noqa: F401  (the analysis needs both; check before anything runs)
    import scipy  # noqa: F401
except ModuleNotFoundError as e:
    if (VENV / "bin" / "python").is_file() and Path(sys.prefix).resolve() != VENV.resolve():
        os.execv(str(VENV / "bin" / "python"), [str(VENV / "bin" / "python"), __file__, *sys.argv[1:]])
    sys.exit(f"analyze.py: missing Python package '{e.name}' and no virtual environment at {VENV}: run "
             "./scripts/build.sh once (it creates it), or pip install -r requirements.txt")

from latency_diff.analyze import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
