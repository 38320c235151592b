#!/usr/bin/env bash
# run-node-bench.sh [PODS] — `make bench-node`: what the real node costs, side by side with a kwok
# node (which only simulates pods) as the baseline, in .kubespaces/node-bench/:
#   1. start-up: cluster-up to a Ready real node (containerd, kubelet, kube-proxy, kube-router,
#      CoreDNS) against cluster-up to a Ready kwok node; 3 rounds each, alternating which goes
#      first, warm (images already in the node's store); then once cold (empty image store).
#   2. pod start latency: PODS (default 50) pods of the local busybox image created at once, time
#      from the create request until the client sees each pod Ready; on the real node and on the
#      kwok node of the same cluster; 3 rounds each, alternating.
#   3. memory: PSS of the node's processes with the pods running, against kwok's.
# Prints medians and ranges with the ratio real/kwok. Everything started here is stopped on exit.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=bench-node
PODS=${1:-50}
STATE="$REPO_ROOT/.kubespaces/node-bench"
ROUNDS=3

ensure_runtime_tools
ensure_node_tools
ensure_go
BIN=$("$HARNESS_DIR/build-tools.sh" --with kwok)
export KUBESPACES_BIN="$BIN"
mkdir -p "$STATE"
RESULTS=$(mktemp)
trap '"$HARNESS_DIR/cluster-down.sh" "$STATE" >/dev/null 2>&1 || true; rm -f "$RESULTS"' EXIT

# up_time NODES: seconds from cluster-up start to a ready cluster with those nodes.
up_time() {
  "$HARNESS_DIR/cluster-down.sh" "$STATE" >/dev/null 2>&1
  reset_state_dir "$STATE"
  local t0 t1
  t0=$(date +%s.%N)
  KUBESPACES_NODES=$1 "$HARNESS_DIR/cluster-up.sh" "$STATE" 2>"$STATE/../node-bench-up.log" \
    || { cat "$STATE/../node-bench-up.log" >&2; die "cluster-up ($1) failed"; }
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.2f}')"
}

log "==> start-up, $ROUNDS rounds (warm: the images are in the node's store after the first)"
KUBESPACES_NODES=real "$HARNESS_DIR/cluster-up.sh" "$STATE" 2>/dev/null   # fills the image store
for r in $(seq $ROUNDS); do
  order="real kwok"; [ $((r % 2)) -eq 0 ] && order="kwok real"
  for mode in $order; do
    t=$(up_time "$mode")
    log "round $r: $mode node ready after ${t}s"
    echo "up $mode $t" >>"$RESULTS"
  done
done
"$HARNESS_DIR/cluster-down.sh" "$STATE" >/dev/null 2>&1
rm -rf "$STATE/node/containerd/root"
t=$(up_time real)
log "empty image store (image tarballs cached, imported again): real node ready after ${t}s"
echo "up-cold real $t" >>"$RESULTS"

log "==> pod start latency: $PODS pods, $ROUNDS rounds on each node, one cluster with both nodes"
"$HARNESS_DIR/cluster-down.sh" "$STATE" >/dev/null 2>&1
reset_state_dir "$STATE"
KUBESPACES_NODES=real,kwok "$HARNESS_DIR/cluster-up.sh" "$STATE" 2>/dev/null
# shellcheck disable=SC1091
. "$STATE/env"
python3 "$HARNESS_DIR/node-bench.py" --pods "$PODS" --rounds "$ROUNDS" --kubectl "$KUBESPACES_KUBECTL" \
  --image "$KUBESPACES_BUSYBOX_IMAGE" --state "$STATE" --results "$RESULTS"
python3 "$HARNESS_DIR/node-bench.py" --report "$RESULTS"
