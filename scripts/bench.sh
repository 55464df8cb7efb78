#!/usr/bin/env bash
# The kit's own benchmarks of its method (targets are measured here and in committed runs, not in tests):
#   robustness  the same servers quiet and beside the stall injector: diffs agree, intervals at most 2x wider
#   design      precision per minute: the single-server design against paired measurement, quiet and injected
#   pinning     precision per minute: shared pinning against split (and none) in the paired design
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<'USAGE'
Usage: ./scripts/bench.sh robustness [--servers LIST] [--seed N] [DRIVER OPTIONS...]
       ./scripts/bench.sh design [--servers LIST] [--no-injector]
       ./scripts/bench.sh pinning [--servers LIST] [--pinnings shared,split,none]

Sets up like run-all.sh, then runs one benchmark of the method and writes its verdict and both
runs into results/<benchmark>-<UTC time>/. Each takes minutes per server (several runs of the
default profile); --help after the benchmark's name lists its options.
USAGE
}

main() {
  local bench="${1:-}" module
  case "$bench" in
    robustness) module=latency_diff.robustness ;;
    design) module=latency_diff.designbench ;;
    pinning) module=latency_diff.pinningbench ;;
    -h|--help) usage; exit 0 ;;
    *) err "name a benchmark: robustness, design or pinning"; usage >&2; exit 2 ;;
  esac
  shift
  local arg
  for arg in "$@"; do
    if [[ "$arg" == "-h" || "$arg" == "--help" ]]; then
      (cd "$KIT_ROOT" && python3 -m "$module" --help)
      exit 0
    fi
  done
  cd "$KIT_ROOT"
  find_jdk
  ensure_ab
  ensure_taskset
  ensure_venv
  build_jars package
  build_native if-stale
  exec "$PYTHON" -m "$module" "$@"
}

main "$@"
