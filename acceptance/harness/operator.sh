#!/usr/bin/env bash
# operator.sh start|stop STATE_DIR [extra operator args]
#
# start: runs `kubespaces-operator run --metrics-addr 127.0.0.1:<free port> [extra args]` against the
#   cluster in STATE_DIR (KUBECONFIG from STATE_DIR/env), logs to STATE_DIR/logs/operator.log, waits
#   up to 60 s for /readyz to answer 200, and adds KUBESPACES_OPERATOR_METRICS and
#   KUBESPACES_OPERATOR_BIN to STATE_DIR/env. If it is already running from the same binary it does
#   nothing; if the binary was rebuilt since, it restarts it (so `make up` after a change picks it up).
# stop: SIGTERM (graceful shutdown, 20 s), then SIGKILL; removes the env lines.
#
# Binary: $KUBESPACES_OPERATOR_BIN, default target/debug/kubespaces-operator (build it first).
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=operator

[ $# -ge 2 ] || die "usage: $0 start|stop STATE_DIR [extra operator args]"
cmd=$1; shift
[ -d "$1" ] || die "state dir $1 does not exist (run cluster-up.sh first)"
STATE=$(cd "$1" && pwd); shift
ENV="$STATE/env"

exec 9>"$STATE/.operator.lock"
flock 9

stop() {
  stop_one "$STATE" operator 20
  env_unset "$ENV" KUBESPACES_OPERATOR_METRICS
  env_unset "$ENV" KUBESPACES_OPERATOR_BIN
}

case "$cmd" in
  stop) stop; exit 0 ;;
  start) ;;
  *) die "unknown command $cmd (start|stop)" ;;
esac

ensure_runtime_tools
[ -f "$ENV" ] || die "$ENV missing: is the cluster in $STATE up? (cluster-up.sh $STATE)"
# shellcheck disable=SC1090
. "$ENV"
OP_BIN=${KUBESPACES_OPERATOR_BIN:-$REPO_ROOT/target/debug/kubespaces-operator}
[ -x "$OP_BIN" ] || die "$OP_BIN not found: build it first (cargo build -p kubespaces-operator)"
OP_BIN=$(cd "$(dirname "$OP_BIN")" && pwd)/$(basename "$OP_BIN")

if pid=$(pid_alive "$STATE" operator); then
  if [ "$OP_BIN" -nt "$STATE/run/operator.pid" ]; then
    log "operator binary was rebuilt since pid $pid started: restarting it"
    stop
  elif [ -n "${KUBESPACES_OPERATOR_METRICS:-}" ] && curl -fs -o /dev/null "$KUBESPACES_OPERATOR_METRICS/readyz"; then
    log "operator already running (pid $pid, $KUBESPACES_OPERATOR_METRICS)"
    exit 0
  else
    log "operator pid $pid is not ready: restarting it"
    stop
  fi
fi

PORT=$(freeport)
ADDR="127.0.0.1:$PORT"
printf '\n===== %s: %s run --metrics-addr %s %s\n' "$(date -Is)" "$OP_BIN" "$ADDR" "$*" >>"$STATE/logs/operator.log"
log "starting $OP_BIN run --metrics-addr $ADDR $*"
# KUBECONFIG is passed explicitly so the operator never falls back to ~/.kube/config, and so are
# the operator's settings for this cluster (STATE_DIR/operator.env, lib.sh); RUST_LOG passes through.
# Tenants get the host side only (the benchmarks run on kwok nodes, where no control plane can
# run) unless KUBESPACES_CONTROL_PLANE or the extra args say otherwise.
SETTINGS=()
[ ! -f "$STATE/operator.env" ] || mapfile -t SETTINGS < <(grep -v '^$' "$STATE/operator.env")
start_bg "$STATE" operator env KUBECONFIG="$KUBECONFIG" "${SETTINGS[@]}" \
  KUBESPACES_CONTROL_PLANE="${KUBESPACES_CONTROL_PLANE:-none}" \
  "$OP_BIN" run --metrics-addr "$ADDR" "$@"
show_log() { tail -n 40 "$STATE/logs/operator.log" >&3; }
# Runs inside wait_for, in this shell: an operator that died ends the script at once.
ready() {
  pid_alive "$STATE" operator >/dev/null || {
    show_log
    rm -f "$STATE/run/operator.pid" "$STATE/run/operator.start"
    die "operator exited during start-up (log: $STATE/logs/operator.log)"
  }
  curl -fs -o /dev/null "http://$ADDR/readyz"
}
T0=$SECONDS
if ! wait_for "the operator's /readyz" 60 ready; then
  show_log
  stop
  die "operator did not answer http://$ADDR/readyz with 200 within 60 s"
fi
env_set "$ENV" KUBESPACES_OPERATOR_METRICS "http://$ADDR"
env_set "$ENV" KUBESPACES_OPERATOR_BIN "$OP_BIN"
log "operator ready after $((SECONDS - T0))s (pid $(cat "$STATE/run/operator.pid"), metrics http://$ADDR)"
