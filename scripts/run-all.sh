#!/usr/bin/env bash
# The main job: check and set up the tools, build the jars and C programs, measure every server, analyze.
# All options belong to the command line (latency_diff/cli.py); see --help.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<'USAGE'
Usage: ./scripts/run-all.sh [OPTIONS]

Finds a JDK 21+, ApacheBench, a C compiler, Node.js and Python 3.11+ (installing ab, gcc, node and the Python
packages when it can), builds the server jars and the java agent with the Maven wrapper and the
lean client and floor responder with cc when they are missing or stale, then measures every server
in process pairs: the server and a fresh dummy side by side, short blocks in ABBA order with the
lean client and `ab -k -c1` (--client), under the chosen CPU pinning (--pinning). A server gets
process pairs until its diff is precise enough or its time budget is spent. Prints the latency-diff
tables; results and plots go to results/<UTC time>/, never over an earlier run.

Examples:
  ./scripts/run-all.sh                       # default profile, every server (about 50 minutes for 31)
  ./scripts/run-all.sh --quick               # smoke run, one process pair per server (about 3 minutes)
  ./scripts/run-all.sh --servers undertow,jetty --budget 150
  ./scripts/run-all.sh --pinning split --client ab   # the study's set-up and client
  ./scripts/run-all.sh --profile original    # the 2014 study's single 10,000,000-request run

USAGE
}

main() {
  local arg
  for arg in "$@"; do
    if [[ "$arg" == "-h" || "$arg" == "--help" ]]; then
      usage
      # The option list comes from the driver itself (standard library only: no set-up needed).
      (cd "$KIT_ROOT" && python3 -m latency_diff.cli --help | sed -n '/^options:/,$p')
      exit 0
    fi
    if [[ "$arg" == "--list" ]]; then
      cd "$KIT_ROOT" && exec python3 -m latency_diff.cli --list  # discovery only: no set-up, no build
    fi
  done
  if [[ "${LATENCY_DIFF_LIST:-}" =~ ^(1|true|yes|on)$ ]]; then
    cd "$KIT_ROOT" && exec python3 -m latency_diff.cli --list
  fi
  cd "$KIT_ROOT"
  find_jdk
  ensure_ab
  ensure_taskset
  ensure_node
  ensure_venv
  build_jars package "" "$(servers_arg "$@")"
  build_native if-stale
  exec "$PYTHON" -m latency_diff.cli "$@"
}

main "$@"
