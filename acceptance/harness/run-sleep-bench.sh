#!/usr/bin/env bash
# run-sleep-bench.sh [TENANTS [WAKES [REQUESTS]]] — `make bench-sleep`: idle tenants that sleep
# (issue 23) in .kubespaces/sleepbench/: a fresh cluster with the real node and the platform
# Gateway, the chart installed by `chart.sh install` (the operator's and the waker's pods from the
# release build, every tenant API through the waker), then acceptance/harness/sleep-bench.py
# measures, side by side:
#   1. the first `kubectl get ns` after a sleep, WAKES times (default 10), beside a new tenant's
#      create-until-Ready (TENANTS at once, default 5: 10 control planes do not fit a 2-core node);
#   2. the host memory of TENANTS control planes with all but one asleep, beside all awake;
#   3. `kubectl get ns` REQUESTS times per side (default 100) on an awake tenant through the
#      waker, beside the chart without it, in alternating blocks (right after the creates, and
#      again with the other tenants asleep).
# Prints the table with the ratios (figures also in .kubespaces/sleepbench/logs/sleep-bench.json).
# The cluster is stopped on exit, also on failure.
# Env: SLEEPBENCH_NO_BUILD=1 uses the operator binary KUBESPACES_OPERATOR_BINARY names (default
#      target/release/kubespaces-operator) as it is (no cargo build).
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=bench-sleep
TENANTS=${1:-5}
WAKES=${2:-10}
REQUESTS=${3:-100}
STATE="$REPO_ROOT/.kubespaces/sleepbench"
T0=$SECONDS

build=(--build kubespaces-operator)
if [ "${SLEEPBENCH_NO_BUILD:-}" = 1 ]; then
  [ -x "${KUBESPACES_OPERATOR_BINARY:-$REPO_ROOT/target/release/kubespaces-operator}" ] \
    || die "no operator binary to use (unset SLEEPBENCH_NO_BUILD)"
  build=()
fi
bench_cluster "$STATE" real "${build[@]}" --with helm --with vcluster --crds --chart
[ -n "${KUBESPACES_API_GATEWAY:-}" ] || die "the cluster in $STATE has no platform Gateway: no tenant control planes"
log "==> cluster and chart ready after $((SECONDS - T0))s; measuring ($TENANTS tenants, $WAKES wakes)"
mkdir -p "$STATE/logs"
rc=0
python3 "$HARNESS_DIR/sleep-bench.py" --state "$STATE" --chart "$REPO_ROOT/charts/kubespaces" \
  --tenants "$TENANTS" --wakes "$WAKES" --requests "$REQUESTS" --results "$STATE/logs/sleep-bench.json" || rc=$?
"$HARNESS_DIR/chart.sh" logs "$STATE" || true
[ "$rc" -eq 0 ] || die "the measurement failed (operator logs: $STATE/logs/operator-pods.log)"
log "done in $((SECONDS - T0))s; figures also in $STATE/logs/sleep-bench.json"
