#!/usr/bin/env bash
# Builds every server jar and the java agent with the Maven wrapper (finding a JDK 21+ first), and
# the native programs (lean client, floor responder) with the C compiler.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<'USAGE'
Usage: ./scripts/build.sh [--force] [--test] [--servers LIST]

Creates the Python virtual environment (.venv) with the pinned packages of requirements.txt,
checks that the root pom.xml's <modules> lists every module folder, and builds each
module's executable jar (target/<module>.jar, dependencies in target/lib/) and the java agent
(agent/target/latency-diff-agent.jar); compiles native/lean.c and native/floor.c into native/build/.
  --force   build even if the jars and programs look up to date
  --test    also run the Java unit tests (mvn verify)
  --servers LIST  only what these servers need (variants too: undertow@1.0.15.Final builds that release)
USAGE
}

main() {
  local goal=package force="" servers=""
  while (($#)); do
    case "$1" in
      -h|--help) usage; exit 0 ;;
      --force) force=force ;;
      --test) goal=verify ;;
      --servers) servers="${2:-}"; shift ;;
      *) err "unknown option '$1'"; usage >&2; exit 2 ;;
    esac
    shift
  done
  find_jdk
  ensure_venv run
  build_jars "$goal" "$force" "$servers"
  build_native "$force"
}

main "$@"
