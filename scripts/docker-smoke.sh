#!/usr/bin/env bash
# Builds the kit's image with docker or podman, runs the quick profile in it with a results volume,
# and checks that a complete, valid summary came back. Skips (exit 0) when no engine is usable.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<'USAGE'
Usage: ./scripts/docker-smoke.sh [--engine docker|podman] [--image NAME] [--results DIR] [-- RUN-ALL OPTIONS]

Builds the image (docker build, or podman build) from the Dockerfile, runs
`run-all.sh --quick` in it (or the options after --) with DIR mounted as /kit/results, and checks
the summary.json that comes back. Default DIR: a new temporary folder. Exits 0 with a message when
neither docker nor podman can build here.
USAGE
}

main() {
  local engine="" image="latency-diff:smoke" out="" run_args=(--quick)
  while (($#)); do
    case "$1" in
      -h|--help) usage; exit 0 ;;
      --engine) engine="${2:?--engine needs docker or podman}"; shift ;;
      --image) image="${2:?--image needs a name}"; shift ;;
      --results) out="${2:?--results needs a folder}"; shift ;;
      --) shift; run_args=("$@"); break ;;
      *) err "unknown option '$1'"; usage >&2; exit 2 ;;
    esac
    shift
  done
  if [[ -z "$engine" ]]; then
    local e
    for e in docker podman; do
      if command -v "$e" >/dev/null && "$e" info >/dev/null 2>&1; then engine="$e"; break; fi
    done
  fi
  if [[ -z "$engine" ]]; then
    echo "docker-smoke: SKIPPED: neither docker nor podman can reach a container engine here"
    exit 0
  fi
  out="${out:-$(mktemp -d "${TMPDIR:-/tmp}/latency-diff-docker.XXXXXX")}"
  mkdir -p "$out"
  chmod 0777 "$out"  # the container's non-root user writes here
  local commit
  commit="$(git -C "$KIT_ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
  info "building ${image} with ${engine}"
  local build_args=(build -q --build-arg "KIT_COMMIT=${commit}" -t "$image")
  # podman's default OCI image format ignores the Dockerfile's SHELL instruction.
  [[ "$engine" == podman ]] && build_args+=(--format docker)
  "$engine" "${build_args[@]}" "$KIT_ROOT" >/dev/null \
    || die "${engine} build failed (see above)"
  info "running ${run_args[*]} in the container; results in ${out}"
  local cpus
  cpus="$(python3 -c 'import os; print(",".join(map(str, sorted(os.sched_getaffinity(0))[:2])))')"
  local log="${out}/docker-smoke.log"
  "$engine" run --rm --cpuset-cpus "$cpus" -v "${out}:/kit/results" "$image" "${run_args[@]}" 2>&1 | tee "$log" \
    || die "the run in the container failed (see above)"
  # The image carries built jars; a run that builds again would need Maven and the network.
  grep -q "jars are up to date" "$log" || die "the container rebuilt the jars at run time (see ${log})"
  python3 - "$out" <<'PY' || die "no complete, valid summary came back from the container"
import json, pathlib, sys
runs = sorted(pathlib.Path(sys.argv[1]).glob("*/summary.json"))
if not runs:
    sys.exit("docker-smoke: no summary.json in " + sys.argv[1])
s = json.loads(runs[-1].read_text())
valid = [x["name"] for x in s["servers"] if x["valid"]]
print(f"docker-smoke: {runs[-1].parent}: status {s['status']}, container {s['env'].get('container')}, "
      f"valid: {', '.join(valid)}")
if s["status"] != "complete" or "dummy" not in valid or not s["env"].get("container"):
    sys.exit(1)
PY
  echo "docker-smoke: PASSED"
}

main "$@"
