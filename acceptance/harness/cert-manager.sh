#!/usr/bin/env bash
# cert-manager.sh up STATE_DIR — cert-manager on the real node of the cluster in STATE_DIR, run by
# cluster-up.sh right after the Gateway: its CRDs (cert-manager-crds/ of the binary dir; cluster-up
# applies them with the other CRDs already, so this is a no-op there), the controller
# (manifests/cert-manager/cert-manager.yaml: namespace cert-manager, least-privilege RBAC, one
# hardened pod from localhost/kubespaces/cert-manager:<version>), and an issuer chain that works
# offline (manifests/cert-manager/issuers.yaml): ClusterIssuer kubespaces-selfsigned signs the CA
# Certificate cert-manager/kubespaces-apps-ca, which ClusterIssuer kubespaces-apps-ca signs with.
# Waits for that ClusterIssuer to be Ready and writes the CA's certificate (PEM, public) to
# STATE_DIR/apps-ca.crt. Everything it creates lives in the cluster: cluster-down leaves nothing.
#
# Appends to STATE_DIR/env:
#   KUBESPACES_APPS_CLUSTER_ISSUER  kubespaces-apps-ca, the ClusterIssuer for *.<tenant>.apps.<domain>
#   KUBESPACES_APPS_CA_FILE         STATE_DIR/apps-ca.crt, the CA certificate clients trust
# and the issuer to STATE_DIR/operator.env too (the operator's settings, lib.sh).
# Env: KUBESPACES_CERT_MANAGER_IMAGE (another image for the controller, e.g. to see a failed start).
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=cert-manager

{ [ $# -eq 2 ] && [ "$1" = up ]; } || die "usage: $0 up STATE_DIR"
STATE=$(cd "$2" && pwd)
# shellcheck disable=SC1091
. "$STATE/env"
K=$KUBESPACES_KUBECTL
BIN=$KUBESPACES_BIN
M="$HARNESS_DIR/manifests/cert-manager"
NS=cert-manager
ISSUER=kubespaces-apps-ca
T0=$SECONDS

{ [ -x "$BIN/cert-manager" ] && [ -d "$BIN/cert-manager-crds" ]; } \
  || die "missing $BIN/cert-manager or $BIN/cert-manager-crds (run acceptance/harness/build-tools.sh)"
# The image images.sh built and node-up.sh imported, named by the binary's own version.
CM_V=$("$BIN/cert-manager" --version | awk '{print $NF}')
[ -n "$CM_V" ] || die "$BIN/cert-manager --version says no version (rebuild it with build-tools.sh)"
IMAGE=${KUBESPACES_CERT_MANAGER_IMAGE:-localhost/kubespaces/cert-manager:$CM_V}
DOMAIN=${KUBESPACES_DOMAIN:-$(basename "$STATE").kubespaces.internal}

apply() { "$K" apply --server-side --force-conflicts --field-manager=kubespaces-harness "$@" >&2; }

log "cert-manager $CM_V ($IMAGE)"
args=(); for f in "$BIN"/cert-manager-crds/*.yaml; do args+=(-f "$f"); done
apply "${args[@]}" || die "applying the cert-manager CRDs failed"
"$K" wait --for=condition=Established --timeout=60s \
  crd/certificates.cert-manager.io crd/certificaterequests.cert-manager.io \
  crd/issuers.cert-manager.io crd/clusterissuers.cert-manager.io >&2 \
  || die "the cert-manager CRDs are not Established"
sed -e "s#@IMAGE@#$IMAGE#" "$M/cert-manager.yaml" | apply -f - || die "applying $M/cert-manager.yaml failed"

# Why the pod is not ready: per pod its phase and the container's waiting reason and message
# (ErrImagePull, CrashLoopBackOff, ...) or last exit, then the last lines of its log.
why_not_ready() {
  local pods
  pods=$("$K" -n $NS get pods -l app.kubernetes.io/name=cert-manager -o json 2>/dev/null) || true
  python3 -c '
import json, sys
pods = json.loads(sys.argv[1] or "{}").get("items", [])
if not pods:
    print("no pod was created (see: kubectl -n cert-manager get events)")
for p in pods:
    out = [p["metadata"]["name"] + ": " + p["status"].get("phase", "?")]
    for c in p["status"].get("containerStatuses", []):
        w = c.get("state", {}).get("waiting")
        if w:
            out.append(w.get("reason", "") + (": " + w["message"] if w.get("message") else ""))
        t = c.get("lastState", {}).get("terminated")
        if t:
            out.append("last exit %s (%s), %d restart(s)" % (t.get("exitCode"), t.get("reason"), c.get("restartCount", 0)))
    print(", ".join(out))
' "$pods"
  { "$K" -n $NS logs deploy/cert-manager --tail=5 || "$K" -n $NS logs deploy/cert-manager --previous --tail=5; } 2>/dev/null \
    | sed 's/^/  log: /' || true
}
controller_ready() {
  [ "$("$K" -n $NS get deploy cert-manager -o jsonpath='{.status.readyReplicas}')" = 1 ]
}
# A pod that cannot start shows it early: stop waiting as soon as it says so.
hopeless() {
  "$K" -n $NS get pods -l app.kubernetes.io/name=cert-manager \
    -o jsonpath='{.items[*].status.containerStatuses[*].state.waiting.reason}' 2>/dev/null \
    | grep -qE 'ErrImageNeverPull|ErrImagePull|ImagePullBackOff|InvalidImageName|CreateContainerConfigError|CreateContainerError|CrashLoopBackOff'
}
ready_or_hopeless() { controller_ready || hopeless; }
wait_for "the cert-manager controller" 120 ready_or_hopeless || true
controller_ready || die "the cert-manager controller is not ready: $(why_not_ready)
  (more: $K -n $NS describe pods; $K -n $NS logs deploy/cert-manager)"
log "controller ready after $((SECONDS - T0))s"

sed -e "s#@DOMAIN@#$DOMAIN#" "$M/issuers.yaml" | apply -f - || die "applying $M/issuers.yaml failed"
condition() { "$K" get "$@" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}'; }
issuer_ready() { [ "$(condition clusterissuer "$ISSUER")" = True ]; }
if ! wait_for "ClusterIssuer $ISSUER Ready" 60 issuer_ready; then
  die "ClusterIssuer $ISSUER is not Ready: $("$K" get clusterissuer "$ISSUER" -o jsonpath='{.status.conditions}' 2>&1);" \
    "its CA Certificate: $("$K" -n $NS get certificate "$ISSUER" -o jsonpath='{.status.conditions}' 2>&1);" \
    "controller: $(why_not_ready)"
fi

# The CA's certificate: for a self-signed CA, tls.crt is the CA itself.
ca=$("$K" -n $NS get secret "$ISSUER" -o jsonpath='{.data.tls\.crt}' | base64 -d)
grep -q 'BEGIN CERTIFICATE' <<<"$ca" || die "Secret $NS/$ISSUER holds no certificate"
printf '%s\n' "$ca" >"$STATE/apps-ca.crt.tmp"
chmod 644 "$STATE/apps-ca.crt.tmp"
mv "$STATE/apps-ca.crt.tmp" "$STATE/apps-ca.crt"

env_set "$STATE/env" KUBESPACES_APPS_CLUSTER_ISSUER "$ISSUER"
operator_setting "$STATE" KUBESPACES_APPS_CLUSTER_ISSUER "$ISSUER"
env_set "$STATE/env" KUBESPACES_APPS_CA_FILE "$STATE/apps-ca.crt"
log "ClusterIssuer $ISSUER Ready after $((SECONDS - T0))s (CA certificate in $STATE/apps-ca.crt)"
