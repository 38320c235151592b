#!/usr/bin/env bash
# cluster-down.sh STATE_DIR — stops what cluster-up.sh and operator.sh started in STATE_DIR, newest
# first, then removes what the node left on the machine (node-lib.sh net_down: processes still in
# its namespace or cgroups, mounts, cgroups, the namespace, the link, the guard rules, sysctls) and
# the etcd data directory. Only PIDs recorded in STATE_DIR/run are signalled by name, and only while
# they still belong to the expected binary (see pid_alive in lib.sh). Logs and the node's image
# store are kept; the next cluster-up replaces the logs. Safe to run when nothing is running, and
# after a crash.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=acceptance/harness/node-lib.sh
. "$(dirname "$0")/node-lib.sh"
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
# The pods' containers and sandboxes, removed through containerd while it runs (the kubelet is
# stopped by then), so its store keeps the images and nothing else.
remove_containers() {
  local sock="$STATE/node/containerd/containerd.sock" ctr_bin ids
  ctr_bin=$(readlink -f "/proc/$(pid_alive "$STATE" containerd)/exe" 2>/dev/null) || return 0
  ctr_bin="$(dirname "$ctr_bin")/ctr"
  [ -x "$ctr_bin" ] || return 0
  c() { timeout 20 "$ctr_bin" --address "$sock" --namespace k8s.io "$@"; }
  ids=$(c tasks ls -q 2>/dev/null) || true
  for id in $ids; do c tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
  for id in $ids; do c tasks delete -f "$id" >/dev/null 2>&1 || true; done
  ids=$(c containers ls -q 2>/dev/null) || true
  # shellcheck disable=SC2086
  [ -z "$ids" ] || c containers delete $ids >/dev/null 2>&1 || true
  ids=$(c sandboxes ls -q 2>/dev/null) || true
  for id in $ids; do c sandboxes rm -f "$id" >/dev/null 2>&1 || true; done
}

names=()
if [ -f "$STATE/run/order" ]; then
  mapfile -t names < <(tac "$STATE/run/order")
fi
for n in hosts-sync operator kwok kube-router kube-proxy kubelet containerd kube-scheduler kube-controller-manager \
         kube-apiserver etcd; do
  [ -f "$STATE/run/$n.pid" ] && [[ " ${names[*]} " != *" $n "* ]] && names+=("$n")
done

for n in "${names[@]}"; do
  [ -n "$n" ] || continue
  # The operator gets longer to finish its graceful shutdown; etcd last, after its clients.
  case "$n" in
    operator) stop_one "$STATE" "$n" 20 ;;
    containerd) remove_containers; stop_one "$STATE" "$n" 10 ;;
    *) stop_one "$STATE" "$n" 10 ;;
  esac
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
# The cluster's block in /etc/hosts (hosts-sync.py, stopped above), and nothing else of the file.
python3 "$HARNESS_DIR/hosts-sync.py" remove "$STATE"
net_down "$STATE"
# The node's runtime state (the image store under node/containerd/root stays: it is a cache).
# The volumes of local-path PVCs go with the cluster (their PersistentVolumes were in etcd).
rm -rf "$STATE/node/containerd/state" "$STATE/node/runc" "$STATE/node/kubelet" "$STATE/node/cni/ipam" \
  "$STATE/node/local-path"
rm -f "$STATE/run/order"
# The env files describe a running cluster; without one they would only mislead.
rm -f "$STATE/env" "$STATE/operator.env"
log "stopped everything in $STATE"
