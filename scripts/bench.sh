#!/usr/bin/env bash
# The kit's own benchmarks of its method (targets are measured here and in committed runs, not in tests).
# One entry point: scripts/bench.sh NAME [OPTIONS]; the benchmarks live in latency_diff/bench/.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<'USAGE'
Usage: ./scripts/bench.sh NAME [OPTIONS] [DRIVER OPTIONS]

Sets up like run-all.sh, then runs one benchmark of the method and writes its verdict and its runs
into results/<NAME>-<UTC time>/. Each takes minutes per server (several default runs); `NAME --help`
lists its options (firstrun sets up nothing here: the clone's own set-up is what it measures).
The benchmarks (docs/benchmarks.md; the list is latency_diff/bench/__main__.py's):
USAGE
  (cd "$KIT_ROOT" && python3 -c 'from latency_diff.bench.__main__ import summaries; print(summaries())')
}

main() {
  local name="${1:-}"
  case "$name" in
    -h|--help) usage; exit 0 ;;
    ""|-*) err "name a benchmark"; usage >&2; exit 2 ;;
  esac
  if ! (cd "$KIT_ROOT" && python3 -c 'import sys; from latency_diff.bench.__main__ import BENCHMARKS as B
sys.exit(sys.argv[1] not in B)' "$name"); then
    err "no benchmark named '$name'"; usage >&2; exit 2
  fi
  local arg
  for arg in "$@"; do
    if [[ "$arg" == "-h" || "$arg" == "--help" ]]; then
      (cd "$KIT_ROOT" && python3 -m latency_diff.bench "$name" --help)
      exit 0
    fi
  done
  cd "$KIT_ROOT"
  find_jdk
  if [[ "$name" == firstrun ]]; then
    # The clone sets itself up (venv, jars, tools): that is what firstrun measures, so none of it happens here.
    # Its module needs the standard library only.
    command -v python3 >/dev/null || die "python3 is missing: sudo apt-get install python3"
    exec python3 -m latency_diff.bench "$@"
  fi
  ensure_ab
  ensure_taskset
  ensure_venv run
  ensure_perf
  ensure_async_profiler
  build_jars package
  build_native if-stale
  exec "$PYTHON" -m latency_diff.bench "$@"
}

main "$@"
