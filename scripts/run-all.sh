#!/usr/bin/env bash
# The main job: check and set up the tools, build the jars and C programs, measure every server, analyze.
# All options belong to the command line (latency_diff/measure/cli.py); see --help.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<'USAGE'
Usage: ./scripts/run-all.sh [OPTIONS]

Finds a JDK 21+, ApacheBench, a C compiler, Node.js and Python 3.11+ (installing ab, gcc, node and the Python
packages when it can), builds with the Maven wrapper the jars the named servers need (and the java agent) and
with cc the lean client and the floor when they are missing or stale, then measures every server in process
pairs: the server beside a dummy, pinned alike, the interleaved lean client alternating between the two in runs
of requests in ABBA order, and `ab -k -c1` in ABBA blocks as a cross-check (--client); under the default shared
pinning the next processes are prepared on the other CPU meanwhile. A server gets process pairs until its diff
is precise enough or its time budget is spent. Prints the latency-diff tables; results and plots go to
results/<UTC time>/, never over an earlier run.

Examples:
  ./scripts/run-all.sh --servers undertow,jetty    # a first result: two servers and the ladder, in minutes
  ./scripts/run-all.sh                       # default profile, every server (about 25 min on a 2-vCPU VM)
  ./scripts/run-all.sh --quick               # smoke run, one process pair per server (not for comparing)
  ./scripts/run-all.sh --servers jetty --budget 300     # more time for one server's precision
  ./scripts/run-all.sh --compare undertow undertow@1.0.15.Final   # head to head: a release against another
  ./scripts/run-all.sh --pinning split --client ab   # the study's set-up and client
  ./scripts/run-all.sh --profile original    # ab alone, each process serving the study's 10,000,000 requests
  ./scripts/run-all.sh --shard 2/3           # this machine's part of three (then: scripts/analyze.py merge RUN...)

USAGE
}

main() {
  local arg
  for arg in "$@"; do
    if [[ "$arg" == "-h" || "$arg" == "--help" ]]; then
      usage
      # The option list comes from the driver itself (standard library only: no set-up needed).
      (cd "$KIT_ROOT" && python3 -m latency_diff.measure.cli --help | sed -n '/^options:/,$p')
      exit 0
    fi
    if [[ "$arg" == "--list" ]]; then
      cd "$KIT_ROOT" && exec python3 -m latency_diff.measure.cli --list  # discovery only: no set-up, no build
    fi
  done
  if [[ "${LATENCY_DIFF_LIST:-}" =~ ^(1|true|yes|on)$ ]]; then
    cd "$KIT_ROOT" && exec python3 -m latency_diff.measure.cli --list
  fi
  cd "$KIT_ROOT"
  find_jdk
  ensure_ab
  ensure_taskset
  ensure_node
  ensure_venv run
  ensure_perf
  # Only a run that profiles needs async-profiler (on a new machine its fetch is most of the set-up).
  if "$PYTHON" -m latency_diff.settings profiles "$@" 2>/dev/null; then
    ensure_async_profiler
  fi
  # A shard builds only the servers of its part (and the anchors); any other run, what --servers names.
  local servers
  servers="$("$PYTHON" -m latency_diff.settings shard-servers "$@" 2>/dev/null)" || servers="$(servers_arg "$@")"
  build_jars package "" "$servers"
  build_native if-stale
  exec "$PYTHON" -m latency_diff.measure.cli "$@"
}

main "$@"
