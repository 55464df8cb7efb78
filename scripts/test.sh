#!/usr/bin/env bash
# The one test command: sets up what it needs, then Java tests, lint, and pytest (unit, conformance
# of every server, end to end). Ends with one PASSED or FAILED line.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<'USAGE'
Usage: ./scripts/test.sh [PYTEST ARGS...]

Finds a JDK 21+, ab, a C compiler, ShellCheck, Chromium and Python 3.11+ (installing what it
can), builds every module and runs the Java unit tests (Maven wrapper), compiles the lean client
and the floor, lints the Python, shell and Dockerfile, then runs pytest: the ab and lean-client
parsers, histogram and statistics on known inputs, the paired statistics and the result model on
synthetic runs, the agent, the plots and report.html (rendered in headless Chromium), the
conformance checker and hostile clients against every server, and end-to-end runs of run-all.sh.
Extra arguments go to pytest, e.g. -k conformance.
USAGE
}

# The last line is always the verdict, also when set-up, the build or the Java tests stop the script early.
verdict() {
  local code=$?
  if ((code == 0)); then
    echo "latency-diff tests: PASSED"
  else
    echo "latency-diff tests: FAILED"
  fi
  exit "$code"
}

main() {
  if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then usage; exit 0; fi
  cd "$KIT_ROOT"
  trap verdict EXIT
  local status=0
  find_jdk
  ensure_ab
  ensure_taskset
  ensure_shellcheck
  ensure_node
  ensure_chromium
  ensure_venv test
  ensure_perf
  ensure_async_profiler
  build_jars verify
  build_native force
  info "lint: ruff"
  "${VENV}/bin/ruff" check latency_diff tests scripts/analyze.py || status=1
  info "lint: hadolint"
  "${VENV}/bin/hadolint" Dockerfile || status=1
  info "lint: shellcheck"
  shellcheck scripts/*.sh .ci/run || status=1
  info "pytest"
  "$PYTHON" -m pytest -q -p no:cacheprovider tests "$@" || status=1
  return "$status"
}

main "$@"
