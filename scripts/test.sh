#!/usr/bin/env bash
# The one test command, in two tiers: the fast one by default, every test with --full (what CI runs).
# Sets up what it needs, then builds, lints and runs pytest. Ends with one PASSED or FAILED line.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<'USAGE'
Usage: ./scripts/test.sh [--full] [PYTEST ARGS...]

The fast tier (default; under 3 minutes on a 2-core host with the build present): finds a JDK 21+,
ab, a C compiler, ShellCheck and Python 3.11+ (installing what it can), builds only the jars and
native programs whose sources changed, lints the Python, shell and Dockerfile, then runs pytest
-m "not slow": every unit, parser, statistics and model test, the conformance and hostile-client
tests of a few representative servers (dummy, floor, undertow, tomcat-nio, micronaut,
control-spin) and of every server whose folder changed (uncommitted, or since the upstream of the
main branch; every server when common/ or the root pom.xml changed), and one end-to-end run.

--full (what CI runs; about 12 minutes with the build present): builds every module with the Java
unit tests (Maven verify) and the native programs anew, installs Chromium for the report tests, and
runs every test: every server's conformance and hostile clients, every end-to-end run, the
simulations and the replays of committed runs.

Extra arguments go to pytest, e.g. -k abparse (the build is then only what changed, if anything),
--lf (the last failures), or -m slow (the full tier's extra tests, without its build).
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
  local full=0
  if [[ "${1:-}" == "--full" ]]; then full=1; shift; fi
  cd "$KIT_ROOT"
  trap verdict EXIT
  local status=0 marks=()
  find_jdk
  ensure_ab
  ensure_taskset
  ensure_shellcheck
  ensure_node
  ensure_venv test
  ensure_perf
  ensure_async_profiler
  if ((full)); then
    ensure_chromium
    build_jars verify
    build_native force
  else
    build_jars
    build_native
    # tests/conftest.py marks the per-server tests of the servers left out (not representative, not changed) slow.
    marks=(-m "not slow")
  fi
  info "lint: ruff"
  "${VENV}/bin/ruff" check latency_diff tests scripts/analyze.py || status=1
  info "lint: hadolint"
  "${VENV}/bin/hadolint" Dockerfile || status=1
  info "lint: shellcheck"
  shellcheck scripts/*.sh .ci/run || status=1
  info "pytest ($( ((full)) && echo "every test" || echo "the fast tier; --full for every test"))"
  "$PYTHON" -m pytest -q "${marks[@]}" tests "$@" || status=1
  return "$status"
}

main "$@"
