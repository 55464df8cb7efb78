#!/usr/bin/env bash
# Robustness benchmark: the same servers measured quiet and beside the stall injector, compared.
# All options belong to latency_diff/robustness.py (and the driver); see --help.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

main() {
  local arg
  for arg in "$@"; do
    if [[ "$arg" == "-h" || "$arg" == "--help" ]]; then
      (cd "$KIT_ROOT" && python3 -m latency_diff.robustness --help)
      echo
      echo "Any other option goes to the driver (./scripts/run-all.sh --help), e.g. --budget 120."
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
  exec "$PYTHON" -m latency_diff.robustness "$@"
}

main "$@"
