#!/usr/bin/env bash
# node-restart.sh STATE_DIR PROCESS — restarts one of the node's processes (containerd, kubelet,
# kube-proxy or kube-router) of the cluster in STATE_DIR, as a node's service manager does on an
# upgrade or after a crash: SIGTERM, then the same command line and environment again, in the
# node's network namespace. Pods keep running through it (containerd's shims outlive containerd).
# Used by acceptance/tests/sleep.rs: a wake that a node-process restart interrupts still completes.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=acceptance/harness/node-lib.sh
. "$HARNESS_DIR/node-lib.sh"
LOG_PREFIX=node-restart
[ $# -eq 2 ] || die "usage: node-restart.sh STATE_DIR containerd|kubelet|kube-proxy|kube-router"
STATE=$1 NAME=$2
case "$NAME" in
  containerd | kubelet | kube-proxy | kube-router) ;;
  *) die "node-restart.sh restarts containerd, kubelet, kube-proxy or kube-router, not '$NAME'" ;;
esac
pid=$(pid_alive "$STATE" "$NAME") || die "$NAME of $STATE is not running"
# Read before it stops: its /proc entry goes with it.
mapfile -d '' cmd <"/proc/$pid/cmdline"
mapfile -d '' environment <"/proc/$pid/environ"
[ ${#cmd[@]} -gt 0 ] || die "could not read the command line of $NAME (pid $pid)"
node_ids "$STATE"
stop_one "$STATE" "$NAME"
start_bg "$STATE" "$NAME" "${NODE_EXEC[@]}" env -i "${environment[@]}" "${cmd[@]}"
pid=$(pid_alive "$STATE" "$NAME") || die "$NAME did not start again (log: $STATE/logs/$NAME.log)"
log "$NAME restarted (pid $pid)"
