#!/usr/bin/env bash
# cluster-down.sh STATE_DIR — stops what cluster-up.sh and operator.sh started in STATE_DIR, newest
# first, and removes the etcd data directory. Only PIDs recorded in STATE_DIR/run are signalled, and
# only while they still belong to the expected binary (see pid_alive in lib.sh). Logs are kept for
# inspection; the next cluster-up replaces them. Safe to run when nothing is running.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=cluster-down

locked=false
if [ "${1:-}" = --locked ]; then locked=true; shift; fi   # called by cluster-up, which holds the lock
[ $# -eq 1 ] || die "usage: $0 STATE_DIR"
[ -d "$1" ] || { log "nothing to stop: $1 does not exist"; exit 0; }
STATE=$(cd "$1" && pwd)

if ! $locked; then
  exec 9>"$STATE/.lock"
  flock 9
fi

# Newest first: the recorded start order reversed, then anything recorded but missing from it
# (e.g. a start that died between writing the pid and the order file).
names=()
if [ -f "$STATE/run/order" ]; then
  mapfile -t names < <(tac "$STATE/run/order")
fi
for n in operator kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
  [ -f "$STATE/run/$n.pid" ] && [[ " ${names[*]} " != *" $n "* ]] && names+=("$n")
done

for n in "${names[@]}"; do
  [ -n "$n" ] || continue
  # The operator gets longer to finish its graceful shutdown; etcd last, after its clients.
  case "$n" in operator) stop_one "$STATE" "$n" 20 ;; *) stop_one "$STATE" "$n" 10 ;; esac
done

if [ -f "$STATE/run/etcd-data-dir" ]; then
  d=$(cat "$STATE/run/etcd-data-dir")
  # Only ever delete a directory this harness created.
  case "$d" in
    /dev/shm/kubespaces-etcd.*|"$STATE"/etcd-data) rm -rf "$d" ;;
    *) log "not removing unexpected etcd data dir '$d'" ;;
  esac
  rm -f "$STATE/run/etcd-data-dir"
fi
rm -f "$STATE/run/order"
# The env file describes a running cluster; without one it would only mislead.
rm -f "$STATE/env"
log "stopped everything in $STATE"
