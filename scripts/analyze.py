#!/usr/bin/env python3
"""Turns a run directory's raw files into the latency-diff table and its files (see --help).

Runs with any python3: when the analysis packages (scipy, matplotlib) are not importable, it creates or
completes the kit's virtual environment (.venv, as run-all.sh does, without needing a JDK) and runs itself
again with it, so that `scripts/analyze.py RUN_DIR` works as written on a fresh clone.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("LATENCY_DIFF_VENV", ROOT / ".venv"))
sys.path.insert(0, str(ROOT))

try:
    import matplotlib  # noqa: F401  (the analysis needs both; check before anything runs)
    import scipy  # noqa: F401
except ModuleNotFoundError as e:
    if Path(sys.prefix).resolve() == VENV.resolve():
        sys.exit(f"analyze.py: missing Python package '{e.name}' in {VENV}: pip install -r requirements.txt there")
    # lib.sh's ensure_venv: creates the environment or installs what requirements.txt adds; says what to do if not.
    setup = subprocess.run(["bash", "-c", 'source "$1/scripts/lib.sh" && ensure_venv run', "analyze.py", str(ROOT)])
    if setup.returncode != 0:
        sys.exit(setup.returncode)
    os.execv(str(VENV / "bin" / "python"), [str(VENV / "bin" / "python"), __file__, *sys.argv[1:]])

from latency_diff.analysis.analyze import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
