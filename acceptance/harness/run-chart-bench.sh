#!/usr/bin/env bash
# run-chart-bench.sh [TENANTS] — `make bench-chart`: the operator as the chart runs it, in
# .kubespaces/chart-bench/: a fresh cluster with the real node, the chart installed by
# `chart.sh install` (release build, two pods under the chart's requests and limits), then
# acceptance/harness/chart-bench.py measures
#   1. memory (cgroup working set, RSS) and CPU (cgroup CPU time, throttling) of the leader's and
#      the standby's container: idle with no Tenant, while TENANTS (default 300) Tenants are created
#      at once until all are Ready, and settled with them; against the chart's requests and limits
#      and against idle; and how long the Tenants took to be Ready;
#   2. failover, 5 rounds each, alternating: the leader's process SIGKILLed with its pod deleted,
#      and the leader's pod deleted (SIGTERM); time until another pod holds the Lease and until a
#      Tenant created at the kill is Ready, against the Lease's duration.
# Prints medians and ranges with the ratios. The cluster is stopped on exit, also on failure.
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=bench-chart
TENANTS=${1:-300}
STATE="$REPO_ROOT/.kubespaces/chart-bench"

# The release operator (its image is made from this binary); the real node: the operator runs as
# pods. Only the CRDs: the chart installs the rest.
bench_cluster "$STATE" real --build kubespaces-operator --with helm --crds --chart
log "==> measuring: $TENANTS Tenants, then 2 x 5 failovers; image $KUBESPACES_OPERATOR_IMAGE from $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- operator || echo ' + uncommitted changes in operator/')"
rc=0
python3 "$HARNESS_DIR/chart-bench.py" --state "$STATE" --tenants "$TENANTS" \
  --results "$STATE/logs/chart-bench.json" || rc=$?
"$HARNESS_DIR/chart.sh" logs "$STATE" || true
if [ "$rc" -ne 0 ]; then
  tail -n 60 "$STATE/logs/operator-pods.log" >&3 || true
  die "the measurement failed (operator logs: $STATE/logs/operator-pods.log)"
fi
log "figures also in $STATE/logs/chart-bench.json, the operator pods' logs in $STATE/logs/operator-pods{,-history}.log"
