# shellcheck shell=bash
# Shared helpers for the harness scripts. Sourced, never executed: callers set `set -euo pipefail`.

HARNESS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$HARNESS_DIR/../.." && pwd)
export HARNESS_DIR REPO_ROOT

# fd 3 is the caller's stderr, kept so messages from functions whose output is silenced (for
# instance a readiness probe that finds its process dead and aborts) still reach the user.
exec 3>&2
log() { printf '%s %s\n' "[$(date +%H:%M:%S)] ${LOG_PREFIX:-harness}:" "$*" >&3; }
die() { log "error: $*"; exit 1; }
# A command that fails under `set -e` without saying why still names itself and its line.
set -E
trap 'log "error: \"$BASH_COMMAND\" failed (exit $?) at ${BASH_SOURCE[0]##*/}:$LINENO"' ERR

# Installs Debian packages only when one of the named commands is missing. A fresh CI machine runs
# as root without sudo; a developer machine usually has everything already, so apt is rarely touched.
# Usage: ensure_cmds cmd:package ...
ensure_cmds() {
  local missing=() spec
  for spec in "$@"; do
    command -v "${spec%%:*}" >/dev/null 2>&1 || missing+=("${spec#*:}")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing missing packages: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "need ${missing[*]} (not root and no sudo: install them yourself)"
    sudo=(sudo)
  fi
  command -v apt-get >/dev/null 2>&1 || die "need ${missing[*]} and apt-get is not available: install them yourself"
  # DEBIAN_FRONTEND: CI has no stdin, and tzdata & co. must never prompt.
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
}

# The Debian programs the conformance suite's agnhost and glibc-dns-testing images carry (images.sh
# conformance: tests/conformance.rs in make test, and make conformance).
CONFORMANCE_IMAGE_TOOLS=(dash:dash bash:bash curl:curl dig:bind9-dnsutils getent:libc-bin
                         nc.openbsd:netcat-openbsd socat:socat ip:iproute2)

# The runtime needs of the harness (cluster + operator scripts).
ensure_runtime_tools() {
  ensure_cmds curl:curl openssl:openssl python3:python3 flock:util-linux setsid:util-linux
}

# What a real node needs from the machine: root, and Debian's runc, CNI plugins, iptables + ipset
# (kube-proxy, kube-router, the guard rules), conntrack (kube-proxy's UDP clean-up), iproute2 and
# nsenter (the node's network namespace).
ensure_node_tools() {
  [ "$(id -u)" -eq 0 ] || die "the local cluster needs root (network namespace, iptables, mounts, cgroups)"
  ensure_cmds runc:runc iptables:iptables ipset:ipset conntrack:conntrack ip:iproute2 nsenter:util-linux \
    sysctl:procps pkill:procps
  [ -x /usr/lib/cni/bridge ] || ensure_cmds cni-bridge-missing:containernetworking-plugins
  # bridge-nf-call-iptables (set per node namespace) exists only once br_netfilter is loaded.
  [ -e /proc/sys/net/bridge ] || { ensure_cmds modprobe:kmod && modprobe br_netfilter; } || die "cannot load the br_netfilter kernel module: the node's NetworkPolicy and Service rules need it"
}

# Go builds the control plane; it is preinstalled on project machines, so only explain when absent.
ensure_go() {
  command -v go >/dev/null 2>&1 || die "Go is not installed (need >= 1.26, see acceptance/tools/*/go.mod): install it from the official Go release archive and put it on PATH"
  local v
  v=$(go env GOVERSION)
  case "$v" in
    go1.2[6-9]*|go1.[3-9][0-9]*) ;;
    *) die "Go $v is too old: the pinned modules need Go >= 1.26 (GOTOOLCHAIN=local forbids auto-download)" ;;
  esac
}

# Rust (cargo with rustfmt and clippy) and a C linker (ring, the TLS crypto crate, compiles C).
ensure_rust() {
  command -v cargo >/dev/null 2>&1 || die "Rust is not installed: install rustup (stable toolchain) so that cargo is on PATH"
  ensure_cmds cc:gcc
  local pair
  for pair in fmt:rustfmt clippy:clippy; do
    if ! cargo "${pair%%:*}" --version >/dev/null 2>&1; then
      command -v rustup >/dev/null 2>&1 || die "cargo ${pair%%:*} is missing and rustup is not available to add it"
      log "adding Rust component ${pair#*:}"
      rustup component add "${pair#*:}" >&2
    fi
  done
}

# A free loopback TCP port. The kernel picks it; the short race until our process binds it is
# acceptable for a single-user dev/test machine.
freeport() {
  python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'
}

abspath() { mkdir -p "$1" && (cd "$1" && pwd); }

# PID bookkeeping. Each started process gets $STATE/run/NAME.pid (the pid) and NAME.start (its
# kernel start time). A PID is only ever signalled when its executable still has the expected name
# and the start time matches, so a recycled PID of someone else's process is never killed.
proc_starttime() { awk '{print $22}' "/proc/$1/stat" 2>/dev/null; }

# True while the process exists and is not a zombie. Our components are reparented to PID 1 once
# the script that started them exits, and PID 1 may take a while to reap them: a zombie is dead.
proc_running() {
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

proc_exe_name() {
  local exe
  exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
  exe=${exe% (deleted)}   # a rebuilt binary still identifies the process that runs the old one
  basename "$exe"
}

# pid_alive STATE NAME -> prints the pid and succeeds if the recorded process is still ours.
pid_alive() {
  local state=$1 name=$2 pid start
  [ -f "$state/run/$name.pid" ] || return 1
  pid=$(cat "$state/run/$name.pid")
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  proc_running "$pid" || return 1
  [ "$(proc_exe_name "$pid")" = "$(exe_name_for "$name")" ] || return 1
  start=$(cat "$state/run/$name.start" 2>/dev/null || true)
  [ -z "$start" ] || [ "$(proc_starttime "$pid")" = "$start" ] || return 1
  echo "$pid"
}

# The executable name behind each component name.
exe_name_for() {
  case "$1" in
    operator) echo kubespaces-operator ;;
    dex-node) echo dex ;;
    # A Python program (gateway.sh): the interpreter is the executable (python3 may be a shim).
    hosts-sync) python3 -c 'import os, sys; print(os.path.basename(os.path.realpath(sys.executable)))' ;;
    *) echo "$1" ;;
  esac
}

# start_bg STATE NAME CMD... : runs CMD detached (own session, stdin from /dev/null, so closing the
# terminal that ran `make up` does not take it down), logs to $STATE/logs/NAME.log.
start_bg() {
  local state=$1 name=$2; shift 2
  mkdir -p "$state/run" "$state/logs"
  # `setsid` does not fork here (the & child is never a process-group leader), so $! is the pid of
  # the component itself once setsid has exec'd it.
  # Close fd 3 (our stderr) and fd 9 (the state-dir lock): a long-lived child holding them would keep
  # the lock forever and keep `make up | tee` from ever seeing EOF.
  setsid "$@" </dev/null >>"$state/logs/$name.log" 2>&1 3>&- 9>&- &
  local pid=$!
  echo "$pid" >"$state/run/$name.pid"
  # Wait until setsid has exec'd the real binary so the recorded start time and exe name are final.
  for _ in $(seq 50); do
    [ "$(proc_exe_name "$pid")" = "$(exe_name_for "$name")" ] && break
    proc_running "$pid" || break
    sleep 0.02
  done
  proc_starttime "$pid" >"$state/run/$name.start" || true
  # Remember the start order so teardown can go newest first.
  grep -qx "$name" "$state/run/order" 2>/dev/null || echo "$name" >>"$state/run/order"
}

# stop_one STATE NAME [GRACE_SECONDS]: SIGTERM, wait, then SIGKILL — only if the pid is still ours.
stop_one() {
  local state=$1 name=$2 grace=${3:-10} pid
  if pid=$(pid_alive "$state" "$name"); then
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq $((grace * 10))); do
      proc_running "$pid" || break
      sleep 0.1
    done
    if proc_running "$pid"; then
      log "$name did not stop within ${grace}s, sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for _ in $(seq 50); do proc_running "$pid" || break; sleep 0.1; done
    fi
  fi
  rm -f "$state/run/$name.pid" "$state/run/$name.start"
  if [ -f "$state/run/order" ]; then
    grep -vx "$name" "$state/run/order" >"$state/run/order.tmp" || true
    mv "$state/run/order.tmp" "$state/run/order"
  fi
}

# wait_for DESCRIPTION SECONDS CMD...: polls CMD every 0.25 s until it succeeds, for at most
# SECONDS of wall time (however long each try of CMD takes).
wait_for() {
  local what=$1 secs=$2; shift 2
  local deadline=$((SECONDS + secs))
  while [ "$SECONDS" -lt "$deadline" ]; do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.25
  done
  log "timed out after ${secs}s waiting for $what"
  return 1
}

# Operator processes that tests started against the cluster in STATE and left running (e.g. after a
# panic). Identified by executable name AND by KUBECONFIG pointing into STATE, so nothing outside
# this state dir is ever matched. Prints their pids, excluding the recorded shared operator.
stray_operators() {
  local state=$1 shared p
  shared=$(pid_alive "$state" operator || true)
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" != "$shared" ] || continue
    [ "$(proc_exe_name "$p" 2>/dev/null)" = kubespaces-operator ] || continue
    proc_running "$p" || continue
    # The kubeconfig of the cluster, or one of the least-privileged ones tests write beside it.
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q "^KUBECONFIG=$state/kubeconfig" || continue
    echo "$p"
  done
}

# Prints the last lines of every component log in STATE (used when something failed).
print_log_tails() {
  local state=$1 lines=${2:-40} f
  [ -d "$state/logs" ] || return 0
  for f in "$state"/logs/*.log; do
    [ -f "$f" ] || continue
    printf '\n===== last %s lines of %s =====\n' "$lines" "$f" >&3
    tail -n "$lines" "$f" >&3 || true
  done
}

# print_unwell STATE BIN: what the cluster in STATE holds that is not well, after a failure: every
# Tenant not Ready with the conditions it waits on, and every pod not running and ready. A test
# that timed out waiting for a tenant is then explained in the run's own output.
print_unwell() {
  local state=$1 kc=("$2/kubectl" --kubeconfig "$1/kubeconfig" --request-timeout=10s)
  [ -f "$state/kubeconfig" ] && [ -x "$2/kubectl" ] || return 0
  printf '\n===== Tenants not Ready, and what they wait on =====\n' >&3
  "${kc[@]}" get tenants -A -o jsonpath='{range .items[?(@.status.phase!="Ready")]}{.metadata.name}{" "}{.status.phase}{"\n"}{range .status.conditions[?(@.status!="True")]}{"  "}{.type}{" "}{.reason}{": "}{.message}{"\n"}{end}{end}' >&3 2>&1 || true
  printf '\n===== pods not running and ready =====\n' >&3
  "${kc[@]}" get pods -A -o wide 2>&1 | awk 'NR == 1 || ($4 != "Completed" && ($4 != "Running" || split($3, r, "/") && r[1] != r[2]))' >&3 || true
}

# Removes `export NAME=...` lines from an env file (so re-running a start does not duplicate them).
env_unset() {
  local file=$1 name=$2
  [ -f "$file" ] || return 0
  grep -v "^export $name=" "$file" >"$file.tmp" || true
  mv "$file.tmp" "$file"
}

env_set() {
  local file=$1 name=$2 value=$3
  env_unset "$file" "$name"
  printf 'export %s=%q\n' "$name" "$value" >>"$file"
}

# The operator's settings for the cluster in a state dir: STATE/operator.env, one NAME=VALUE a line
# (no quoting, one line per value). They are the operator's own flag variables (KUBESPACES_*, read
# as fallbacks of its flags: storage class, helm, the Gateway and apps settings), kept out of
# STATE/env so that the processes started with that env (`make test`'s tests, the benchmarks)
# do not pass them on to every operator they start. What starts an operator reads them:
# operator.sh, chart.sh (as chart values), acceptance/src/operator.rs (test-owned operators),
# control-plane-bench.py. A setting a test also reads (the Gateway's address, its parentRef, the
# apps issuer) is in STATE/env as well.
# operator_setting STATE NAME VALUE: sets NAME (replacing an earlier line).
operator_setting() {
  local file="$1/operator.env" name=$2 value=$3
  case $value in *$'\n'*) die "operator setting $name: the value must be one line" ;; esac
  if [ -f "$file" ]; then
    grep -v "^$name=" "$file" >"$file.tmp" || true
    mv "$file.tmp" "$file"
  fi
  printf '%s=%s\n' "$name" "$value" >>"$file"
}

# load_operator_settings STATE: the settings as shell variables of the caller, not exported.
load_operator_settings() {
  local line
  [ -f "$1/operator.env" ] || return 0
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    printf -v "${line%%=*}" '%s' "${line#*=}"
  done <"$1/operator.env"
}

# Empties a state dir for a fresh cluster, keeping only the node's image store (a cache: with it a
# warm start imports no image). Call it only once the cluster in it is down.
reset_state_dir() {
  local state=$1 keep="$1/node/containerd/root"
  if [ -d "$keep" ]; then
    find "$state" -mindepth 1 -maxdepth 1 ! -name node -exec rm -rf {} +
    find "$state/node" -mindepth 1 -maxdepth 1 ! -name containerd -exec rm -rf {} +
    find "$state/node/containerd" -mindepth 1 -maxdepth 1 ! -name root -exec rm -rf {} +
  else
    rm -rf "$state"
  fi
  mkdir -p "$state"
}

# Brings up a fresh cluster in STATE (stopping whatever an earlier run left there) and arranges,
# with an EXIT trap, for it to be stopped when the calling script ends, printing the component
# log tails when it fails. For the benchmark scripts; run-tests.sh has its own, richer cleanup.
throwaway_cluster() {
  THROWAWAY_STATE=$1
  local bin=$2
  trap _throwaway_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  if [ -d "$THROWAWAY_STATE" ]; then "$HARNESS_DIR/cluster-down.sh" "$THROWAWAY_STATE"; fi
  reset_state_dir "$THROWAWAY_STATE"
  KUBESPACES_BIN="$bin" "$HARNESS_DIR/cluster-up.sh" "$THROWAWAY_STATE"
}

# bench_cluster STATE NODES [OPTION...]: the set-up every run-*-bench.sh starts with, in the
# calling shell. From the repository's root: the machine's tools (root and the node's tools when
# NODES has a real node), the release builds first (so rustc does not compete with the cluster for
# CPU during the measurement), the cached binaries in BIN (exported as KUBESPACES_BIN), a fresh
# cluster of NODES in STATE stopped on exit (throwaway_cluster), the chart if asked, and STATE/env
# sourced.
#   --need CMD:PKG     ensure_cmds CMD:PKG too (repeatable)
#   --build PKG[:BIN]  nice cargo build --release -p PKG [--bin BIN] (repeatable; Rust is checked
#                      only when something is built)
#   --with TOOL        build-tools.sh --with TOOL (repeatable)
#   --crds             only the CRDs at cluster-up (KUBESPACES_MANIFESTS=crds)
#   --chart            chart.sh install STATE once the cluster is up
bench_cluster() {
  local state=$1 nodes=$2 crds=false chart=false spec
  local -a needs=() builds=() tools=()
  shift 2
  while [ $# -gt 0 ]; do
    case $1 in
      --need) needs+=("$2"); shift 2 ;;
      --build) builds+=("$2"); shift 2 ;;
      --with) tools+=(--with "$2"); shift 2 ;;
      --crds) crds=true; shift ;;
      --chart) chart=true; shift ;;
      *) die "bench_cluster: unknown option $1" ;;
    esac
  done
  cd "$REPO_ROOT" || die "cannot cd to $REPO_ROOT"
  ensure_runtime_tools
  case ",$nodes," in *,real,*) ensure_node_tools ;; esac
  ensure_go
  [ ${#needs[@]} -eq 0 ] || ensure_cmds "${needs[@]}"
  if [ ${#builds[@]} -gt 0 ]; then
    ensure_rust
    for spec in "${builds[@]}"; do
      if [ "${spec#*:}" != "$spec" ]; then
        log "==> building the release ${spec#*:} (${spec%%:*})"
        nice cargo build --release -p "${spec%%:*}" --bin "${spec#*:}"
      else
        log "==> building the release $spec"
        nice cargo build --release -p "$spec"
      fi
    done
  fi
  case ",$nodes," in *,kwok,*) tools+=(--with kwok) ;; esac
  BIN=$("$HARNESS_DIR/build-tools.sh" "${tools[@]}")
  export KUBESPACES_BIN="$BIN"
  if $crds; then
    KUBESPACES_NODES=$nodes KUBESPACES_MANIFESTS=crds throwaway_cluster "$state" "$BIN"
  else
    KUBESPACES_NODES=$nodes throwaway_cluster "$state" "$BIN"
  fi
  if $chart; then "$HARNESS_DIR/chart.sh" install "$state"; fi
  # shellcheck disable=SC1091
  . "$state/env"
}

# shellcheck disable=SC2317  # invoked by the EXIT trap of throwaway_cluster
_throwaway_cleanup() {
  local rc=$?
  if [ -d "${THROWAWAY_STATE:-}" ]; then
    [ "$rc" -eq 0 ] || print_log_tails "$THROWAWAY_STATE" 40
    "$HARNESS_DIR/cluster-down.sh" "$THROWAWAY_STATE" || true
  fi
  exit "$rc"
}

# chart_tenant_image NAME REF: dies unless charts/kubespaces/values.yaml's tenantImages.NAME is REF
# (kubespaces/NAME:TAG), the image the harness built (chart.sh install) or wrote (dist.sh).
chart_tenant_image() {
  grep -qE "^  $1: $2\$" "$REPO_ROOT/charts/kubespaces/values.yaml" \
    || die "charts/kubespaces/values.yaml: tenantImages.$1 is not $2, the image the harness builds (images.sh)"
}
