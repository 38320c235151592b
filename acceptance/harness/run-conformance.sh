#!/usr/bin/env bash
# run-conformance.sh — `make conformance` (issue 24): the upstream conformance suite against a tenant,
# with the tenant's own kubeconfig, and against the host cluster beside it, in .kubespaces/conformance/:
# a fresh cluster with the real node and the platform Gateway, the chart installed by `chart.sh
# install` (the operator's pods from the release build, tenant vClusters on); e2e.test and agnhost
# built from the cluster's Kubernetes module (build-tools.sh --with conformance); the images the
# suite's pods run imported into the node under the suite's names (images.sh conformance); then
# acceptance/harness/conformance.py runs the suite on both sides and prints passed / failed /
# skipped, the failures by name and the wall time of each, and what the host passes that the tenant
# does not. JUnit reports: .kubespaces/conformance/conformance/<side>/junit_01.xml.
# The cluster is stopped on exit, also on failure.
# Env: CONFORMANCE_FOCUS (a regular expression over the specs' names; default every [Conformance]
#      spec), CONFORMANCE_SKIP, CONFORMANCE_SIDES (tenant,host), CONFORMANCE_POD_SECURITY (the
#      platform's tenants.podSecurity.level; default baseline).
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=conformance
STATE="$REPO_ROOT/.kubespaces/conformance"
T0=$SECONDS

bench_cluster "$STATE" real --build kubespaces-operator --with helm --with vcluster --with conformance \
  --crds
# The suite's pods run as root and without the restricted profile's settings: its tenant gets the
# Pod Security level it asks for, baseline (docs/conformance.md; CONFORMANCE_POD_SECURITY=restricted
# shows what the chart's default refuses).
"$HARNESS_DIR/chart.sh" install "$STATE" \
  --set-string tenants.podSecurity.level="${CONFORMANCE_POD_SECURITY:-baseline}"
[ -n "${KUBESPACES_API_GATEWAY:-}" ] || die "the cluster in $STATE has no platform Gateway: no tenant control planes"
log "==> the images the suite's pods run (images.sh conformance); the suite's other images, which the harness does not build, follow:"
"$HARNESS_DIR/images.sh" conformance "$STATE" | sed 's/^/  not provided: /' >&3
log "==> cluster, chart and images ready after $((SECONDS - T0))s"
python3 "$HARNESS_DIR/conformance.py" --state "$STATE" --e2e "$KUBESPACES_BIN/e2e.test" \
  --registries "$HARNESS_DIR/manifests/conformance-registries.yaml" \
  --focus "${CONFORMANCE_FOCUS:-\[Conformance\]}" --skip "${CONFORMANCE_SKIP:-}" \
  --sides "${CONFORMANCE_SIDES:-tenant,host}"
log "done in $((SECONDS - T0))s"
