#!/usr/bin/env bash
# run-portal-bench.sh [TENANTS] — `make bench-portal` (issue 25): how fast the portal shows what the
# operator does, in a real headless Chromium, against `kubectl get tenant -w` in the same run, on a
# fresh cluster in .kubespaces/portal-bench/: the real node with the platform Gateway, the chart
# installed by `chart.sh install` (the operator's pods from the release build, tenant vClusters on)
# and Dex (dex.sh). The driver, acceptance/src/bin/portal-bench.rs (release build), runs the
# server in its own process as the chart's ServiceAccount, creates TENANTS (default 10) tenants
# one after another through the portal's form and follows each one's page until Ready; it prints
# the p50 and p99 of *Create tenant* -> the first checklist on screen, of a status write (seen by a
# kube watch) -> the page, and of the same -> `kubectl get tenant -w`, with the page's over
# kubectl's (target <= 1.2x). The cluster is stopped on exit, also on failure.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=bench-portal
TENANTS=${1:-10}
[[ "$TENANTS" =~ ^[1-9][0-9]*$ ]] || die "usage: $0 [tenants]"
STATE="$REPO_ROOT/.kubespaces/portal-bench"
T0=$SECONDS

bench_cluster "$STATE" real --need chromium:chromium --build kubespaces-operator \
  --build kubespaces-acceptance:portal-bench --with helm --with vcluster --with dex --crds --chart
[ -n "${KUBESPACES_API_GATEWAY:-}" ] || die "the cluster in $STATE has no platform Gateway: no tenant control planes"
"$HARNESS_DIR/dex.sh" start "$STATE"
# shellcheck disable=SC1091  # again: dex.sh added the issuer
. "$STATE/env"
export KUBESPACES_ACCEPTANCE=1
log "==> cluster, chart and Dex ready after $((SECONDS - T0))s; $TENANTS tenants through the portal"
rc=0
"$REPO_ROOT/target/release/portal-bench" --tenants "$TENANTS" || rc=$?
"$HARNESS_DIR/chart.sh" logs "$STATE" || true
[ "$rc" -eq 0 ] || die "the measurement failed (operator logs: $STATE/logs/operator-pods.log)"
log "done in $((SECONDS - T0))s"
