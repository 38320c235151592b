#!/usr/bin/env bash
# run-control-plane-bench.sh [TENANTS [ROUNDS]] — `make bench-control-plane`: tenant control planes
# (issue 8) in .kubespaces/cpbench/: a fresh cluster with the real node and the platform Gateway,
# the chart installed by `chart.sh install` (the operator's pods from the release build, tenant
# vClusters on), then acceptance/harness/control-plane-bench.py measures, side by side:
#   1. host memory of one control plane (the vCluster pod, settled) with the values KubeSpaces
#      chooses against the chart's defaults, and ours with GOGC / GOMEMLIMIT on the syncer;
#   2. time to a usable control plane for TENANTS (default 5) at once, ROUNDS (default 2) rounds,
#      the order alternating: Tenants until Ready, against `helm install --wait` of the same chart
#      and values plus a TLSRoute, until `kubectl get ns` answers through the public URL;
#   3. the operator pods' peak memory meanwhile.
# Prints the table with the ratios (figures also in .kubespaces/cpbench/logs/control-plane-bench.json).
# The cluster is stopped on exit, also on failure.
# Env: CPBENCH_NO_BUILD=1 uses target/release/kubespaces-operator as it is (no cargo build);
#      CPBENCH_ARGS passes more options to control-plane-bench.py (--help lists them).
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=bench-control-plane
TENANTS=${1:-5}
ROUNDS=${2:-2}
STATE="$REPO_ROOT/.kubespaces/cpbench"
T0=$SECONDS

# The release operator (its image is made from this binary), unless CPBENCH_NO_BUILD.
build=(--build kubespaces-operator)
if [ "${CPBENCH_NO_BUILD:-}" = 1 ]; then
  [ -x "$REPO_ROOT/target/release/kubespaces-operator" ] || die "target/release/kubespaces-operator missing (unset CPBENCH_NO_BUILD)"
  build=()
fi
# The real node with the Gateway; only the CRDs, the chart installs the rest and, seeing the
# Gateway, turns tenant control planes on (vCluster images imported, values-local.yaml).
bench_cluster "$STATE" real "${build[@]}" --with helm --with vcluster --crds --chart
python3 -c 'import yaml' 2>/dev/null || ensure_cmds yaml-missing:python3-yaml
[ -n "${KUBESPACES_API_GATEWAY:-}" ] || die "the cluster in $STATE has no platform Gateway: no tenant control planes"
log "==> cluster and chart ready after $((SECONDS - T0))s; measuring ($TENANTS at once, $ROUNDS rounds); operator image $KUBESPACES_OPERATOR_IMAGE"
mkdir -p "$STATE/logs"
rc=0
# shellcheck disable=SC2086  # CPBENCH_ARGS: words on purpose
python3 "$HARNESS_DIR/control-plane-bench.py" --state "$STATE" --tenants "$TENANTS" --rounds "$ROUNDS" \
  --variant gogc50=GOGC:50 --variant gogc50-memlimit150=GOGC:50,GOMEMLIMIT:150MiB \
  --results "$STATE/logs/control-plane-bench.json" ${CPBENCH_ARGS:-} || rc=$?
"$HARNESS_DIR/chart.sh" logs "$STATE" || true
if [ "$rc" -ne 0 ]; then
  tail -n 60 "$STATE/logs/operator-pods.log" >&3 || true
  die "the measurement failed (operator logs: $STATE/logs/operator-pods.log)"
fi
log "done in $((SECONDS - T0))s; figures also in $STATE/logs/control-plane-bench.json"
