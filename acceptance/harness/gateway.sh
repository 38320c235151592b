#!/usr/bin/env bash
# gateway.sh up STATE_DIR — the platform's Gateway on the real node of the cluster in STATE_DIR,
# run by cluster-up.sh once the node runs pods (the Gateway API CRDs are applied with the other
# CRDs, before kube-controller-manager): Traefik (manifests/gateway/traefik.yaml) serving
# GatewayClass `traefik`, the Gateway kubespaces-gateway/kubespaces (manifests/gateway/gateway.yaml)
# with listener `api` for *.api.<domain>, and hosts-sync.py, which keeps the hostnames of accepted
# routes under <domain> in /etc/hosts while the cluster runs (cluster-down.sh stops it and removes
# its block).
#
# The domain is the state dir's name under kubespaces.internal (.kubespaces/dev: dev.kubespaces.internal).
# Appends to STATE_DIR/env:
#   KUBESPACES_DOMAIN            <state dir name>.kubespaces.internal
#   KUBESPACES_GATEWAY_ADDRESS   <node address>:443, how this machine reaches the Gateway (hostPort)
#   KUBESPACES_GATEWAY_SERVICE   traefik.kubespaces-gateway.svc:443, how pods reach it
#   KUBESPACES_API_GATEWAY       kubespaces-gateway/kubespaces/api, the parentRef of tenant API
#                                routes (namespace/name/sectionName)
#   KUBESPACES_TLSSERVER_IMAGE   an HTTPS test backend (acceptance/tools/images/tlsserver)
# and to STATE_DIR/operator.env (the operator's settings, lib.sh): KUBESPACES_GATEWAY_ADDRESS and
# KUBESPACES_API_GATEWAY as above, and
#   KUBESPACES_APPS_GATEWAY_CLASS traefik, the class of the tenants' apps Gateways (their HTTPS
#                                listeners share the entry point on 443 with `api`)
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=gateway

{ [ $# -eq 2 ] && [ "$1" = up ]; } || die "usage: $0 up STATE_DIR"
STATE=$(cd "$2" && pwd)
# shellcheck disable=SC1091
. "$STATE/run/node.env"
# shellcheck disable=SC1091
. "$STATE/env"
K=$KUBESPACES_KUBECTL
BIN=$KUBESPACES_BIN
M="$HARNESS_DIR/manifests/gateway"

# gateway_domain STATE: <state dir name as a DNS label>.kubespaces.internal
label=$(basename "$STATE" | tr '[:upper:]_.' '[:lower:]--' | tr -cd 'a-z0-9-' | sed 's/^-*//; s/-*$//' | cut -c1-40)
DOMAIN="${label:-cluster}.kubespaces.internal"
# The image images.sh built and node-up.sh imported, named by the binary's own version.
TRAEFIK_V=$("$BIN/traefik" version | awk '$1 == "Version:" {print $2}')
[ -n "$TRAEFIK_V" ] || die "$BIN/traefik version says no version (rebuild it with build-tools.sh)"
IMAGE="localhost/kubespaces/traefik:$TRAEFIK_V"

# Where the API server listens (the `kubernetes` EndpointSlice): the Gateway's egress policy
# admits it and nothing of the platform besides.
api_slice() { "$K" get endpointslices -n default -l kubernetes.io/service-name=kubernetes -o jsonpath="{.items[0].$1}"; }
API_ADDRESS=$(api_slice 'endpoints[0].addresses[0]')
API_PORT=$(api_slice 'ports[0].port')
[ -n "$API_ADDRESS" ] && [ -n "$API_PORT" ] || die "the kubernetes EndpointSlice names no API server address and port"

log "Traefik $TRAEFIK_V as the Gateway for *.api.$DOMAIN at $NODE_IP:443"
sed -e "s#@TRAEFIK_IMAGE@#$IMAGE#" -e "s#@NODE_IP@#$NODE_IP#" \
  -e "s#@API_ADDRESS@#$API_ADDRESS#" -e "s#@API_PORT@#$API_PORT#" "$M/traefik.yaml" \
  | "$K" apply --server-side --field-manager=kubespaces-harness -f - >&2
sed -e "s#@DOMAIN@#$DOMAIN#" "$M/gateway.yaml" \
  | "$K" apply --server-side --field-manager=kubespaces-harness -f - >&2

wait_for "Traefik" 90 "$K" -n kubespaces-gateway rollout status deployment/traefik --timeout=1s \
  || die "Traefik did not become available ($K -n kubespaces-gateway describe pods; logs: $K -n kubespaces-gateway logs deploy/traefik)"
condition() { "$K" get "$1" -n kubespaces-gateway "$2" -o jsonpath="{.status.conditions[?(@.type==\"$3\")].status}"; }
gateway_programmed() { [ "$(condition gateway kubespaces Programmed)" = True ]; }
wait_for "Gateway kubespaces Programmed" 60 gateway_programmed \
  || die "Gateway kubespaces-gateway/kubespaces is not Programmed: $("$K" -n kubespaces-gateway get gateway kubespaces -o jsonpath='{.status}')"

env_set "$STATE/env" KUBESPACES_DOMAIN "$DOMAIN"
env_set "$STATE/env" KUBESPACES_GATEWAY_ADDRESS "$NODE_IP:443"
env_set "$STATE/env" KUBESPACES_GATEWAY_SERVICE "traefik.kubespaces-gateway.svc:443"
env_set "$STATE/env" KUBESPACES_API_GATEWAY "kubespaces-gateway/kubespaces/api"
# The same for operators (STATE/operator.env, lib.sh), with the class of the apps Gateways.
operator_setting "$STATE" KUBESPACES_GATEWAY_ADDRESS "$NODE_IP:443"
operator_setting "$STATE" KUBESPACES_API_GATEWAY "kubespaces-gateway/kubespaces/api"
operator_setting "$STATE" KUBESPACES_APPS_GATEWAY_CLASS traefik
# The HTTPS test backend images.sh builds (tests/gateway.rs).
env_set "$STATE/env" KUBESPACES_TLSSERVER_IMAGE "localhost/kubespaces/tlsserver:1"

log "starting hosts-sync (the routes' hostnames in /etc/hosts)"
stop_one "$STATE" hosts-sync 5   # one started by an earlier run of this script
# The interpreter itself, not a version manager's shim in front of it (pid_alive checks the exe).
PY=$(python3 -c 'import sys; print(sys.executable)')
start_bg "$STATE" hosts-sync "$PY" "$HARNESS_DIR/hosts-sync.py" run "$STATE"
# Its first line after start-up says it has read the env and is watching.
watching() { pid_alive "$STATE" hosts-sync && grep -q "keeping the block" "$STATE/logs/hosts-sync.log"; }
wait_for hosts-sync 30 watching || die "hosts-sync did not start (log: $STATE/logs/hosts-sync.log)"
log "Gateway kubespaces-gateway/kubespaces Programmed; routes under $DOMAIN resolve here while the cluster runs"
