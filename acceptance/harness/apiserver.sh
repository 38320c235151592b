#!/usr/bin/env bash
# apiserver.sh stop|start STATE_DIR — takes the kube-apiserver of the cluster in STATE_DIR down and
# brings it back, for outage tests.
#
# stop:  records the running process's exact command line (/proc/<pid>/cmdline, as cluster-up.sh
#        started it) in STATE_DIR/run/kube-apiserver.cmdline, then SIGTERM and waits until it is gone;
#        SIGKILL after 5 s (a terminating API server keeps serving the watches already open while it
#        drains them, for 20 s and more: that is not an outage). Its place in run/order is kept, so
#        teardown order does not change.
# start: starts it again with that identical command line, in the node's network namespace, through
#        start_bg (pid, start time and log as before), and waits up to 60 s for /readyz.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=apiserver

[ $# -eq 2 ] || die "usage: $0 stop|start STATE_DIR"
cmd=$1
[ -d "$2" ] || die "state dir $2 does not exist"
STATE=$(cd "$2" && pwd)
SAVED="$STATE/run/kube-apiserver.cmdline"
[ -f "$STATE/run/node.env" ] || die "$STATE/run/node.env missing: is the cluster in $STATE up?"
# shellcheck disable=SC1091
. "$STATE/run/node.env"

case "$cmd" in
  stop)
    pid=$(pid_alive "$STATE" kube-apiserver) || die "no running kube-apiserver recorded in $STATE/run"
    cp "/proc/$pid/cmdline" "$SAVED.tmp"
    [ -s "$SAVED.tmp" ] || die "could not read the command line of pid $pid"
    mv "$SAVED.tmp" "$SAVED"
    log "stopping kube-apiserver (pid $pid)"
    kill -TERM "$pid"
    for _ in $(seq 50); do proc_running "$pid" || break; sleep 0.1; done
    if proc_running "$pid"; then
      log "kube-apiserver did not stop within 5 s, sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for _ in $(seq 50); do proc_running "$pid" || break; sleep 0.1; done
    fi
    proc_running "$pid" && die "kube-apiserver (pid $pid) is still running"
    log "kube-apiserver stopped"
    ;;
  start)
    if pid=$(pid_alive "$STATE" kube-apiserver); then
      log "kube-apiserver already running (pid $pid)"
      exit 0
    fi
    [ -s "$SAVED" ] || die "$SAVED missing: stop it with $0 stop first"
    mapfile -d '' argv <"$SAVED"
    [ "$(basename "${argv[0]}")" = kube-apiserver ] || die "$SAVED is not a kube-apiserver command line"
    log "starting kube-apiserver again with its recorded command line"
    start_bg "$STATE" kube-apiserver nsenter "--net=/run/netns/$NODE_NS" -- "${argv[@]}"
    P="$STATE/pki"
    TOKEN=$(cut -d, -f1 "$P/tokens.csv")
    api_ready() {
      pid_alive "$STATE" kube-apiserver >/dev/null || die "kube-apiserver exited (log: $STATE/logs/kube-apiserver.log)"
      curl -fsS --cacert "$P/ca.crt" -H "Authorization: Bearer $TOKEN" "https://$NODE_IP:6443/readyz"
    }
    wait_for "kube-apiserver /readyz" 60 api_ready || die "kube-apiserver did not become ready within 60 s"
    log "kube-apiserver ready"
    ;;
  *) die "unknown command $cmd (stop|start)" ;;
esac
