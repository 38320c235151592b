#!/usr/bin/env bash
# dex.sh start|stop STATE_DIR [loopback|node] — Dex, the OIDC provider the server, the CLI and the
# portal log in against, as a process next to the cluster in STATE_DIR (its pid and log with the
# cluster's components, so cluster-down.sh stops it too).
#
#   loopback (the default): plain http on 127.0.0.1, for servers the tests run as processes on
#     this machine. Appends KUBESPACES_OIDC_ISSUER and KUBESPACES_OIDC_CLIENT_ID to STATE_DIR/env.
#   node: https on the machine's end of the node's link (node-lib.sh), for the chart's server,
#     which runs in a pod: the guard (node-lib.sh guard_up) lets the node's pods open connections
#     to exactly that address and port, masqueraded as the node's address. Its certificate is
#     issued by the cluster's cert-manager CA (cert-manager.sh: KUBESPACES_APPS_CA_FILE, which
#     the server and the CLI are given to trust). Its client accepts the portal's door,
#     https://kubespaces.<domain>/auth/callback. Appends KUBESPACES_NODE_OIDC_ISSUER and
#     KUBESPACES_NODE_OIDC_CA_FILE to STATE_DIR/env.
#
# Users (all with password "password"; the hash below is bcrypt("password")):
#   alice@example.com, bob@example.com  ordinary users
#   dave@example.com                    ordinary user, only for the CLI's login test: Dex keeps one
#                                       refresh token per user and client, so a login elsewhere
#                                       as the same user would revoke the one under test
#   admin@example.com                   member of the group kubespaces-admins (the server's admin group)
#   carol@example.com                   email NOT verified (the server must refuse her)
# Client "kubespaces": public (device flow needs one). Without redirect URIs Dex accepts the device
# flow's /device/callback and any http://127.0.0.1:<port>/... (a portal on any loopback port, as
# the tests start it); $KUBESPACES_PORTAL_REDIRECT names the portal's callback instead.
# Client "other-app": a second application of the same issuer (its tokens carry another audience).
# The password grant is enabled (oauth2.passwordConnector) for tests that need a token but do not
# test the login itself.
#
# Env: KUBESPACES_BIN (binaries dir holding dex; default: build-tools.sh --with dex).
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=acceptance/harness/node-lib.sh
. "$HARNESS_DIR/node-lib.sh"
LOG_PREFIX=dex

USAGE="usage: $0 start|stop STATE_DIR [loopback|node]"
[ $# -ge 2 ] && [ $# -le 3 ] || die "$USAGE"
CMD=$1
STATE=$(abspath "$2")
MODE=${3:-loopback}
ENV_FILE="$STATE/env"
case $MODE in
  loopback) NAME=dex; ISSUER_VAR=KUBESPACES_OIDC_ISSUER ;;
  node) NAME=dex-node; ISSUER_VAR=KUBESPACES_NODE_OIDC_ISSUER ;;
  *) die "$USAGE" ;;
esac

# node: the hole in the node's guard for Dex's address and port (guard_up's chains), added or
# removed (-I or -D).
node_hole() {
  local op=$1 host_ip=$2 port=$3
  # shellcheck disable=SC1091
  . "$STATE/run/node.env"
  # Root namespace: connections from the link to Dex only (the chain drops everything else new).
  iptables -w "$op" "KUBESPACES-GUARD-$NODE_ID" -p tcp -d "$host_ip" --dport "$port" -j RETURN
  # Node namespace: pods may open them (forwarded out through the link), under the node's address,
  # which the machine routes back through the link (pod addresses are the same in every cluster).
  in_node iptables -w "$op" KUBESPACES-GUARD -o eth0 -p tcp -d "$host_ip" --dport "$port" -j RETURN
  in_node iptables -w -t nat "$op" POSTROUTING -o eth0 -p tcp -d "$host_ip" --dport "$port" -j MASQUERADE
}

case $CMD in
  stop)
    if [ "$MODE" = node ] && [ -f "$STATE/$NAME/hole" ]; then
      # shellcheck disable=SC2046  # "ADDRESS PORT"
      node_hole -D $(cat "$STATE/$NAME/hole") 2>/dev/null || true
      rm -f "$STATE/$NAME/hole"
    fi
    stop_one "$STATE" "$NAME" 5
    env_unset "$ENV_FILE" "$ISSUER_VAR"
    if [ "$MODE" = node ]; then env_unset "$ENV_FILE" KUBESPACES_NODE_OIDC_CA_FILE
    else
      env_unset "$ENV_FILE" KUBESPACES_OIDC_CLIENT_ID
      env_unset "$ENV_FILE" KUBESPACES_DEX_BIN
    fi
    exit 0 ;;
  start) ;;
  *) die "$USAGE" ;;
esac

if pid=$(pid_alive "$STATE" "$NAME"); then
  log "Dex ($MODE) already runs (pid $pid)"
  exit 0
fi
BIN=${KUBESPACES_BIN:-$("$HARNESS_DIR/build-tools.sh" --with dex)}
[ -x "$BIN/dex" ] || die "$BIN/dex missing: run build-tools.sh --with dex"

PORT=$(freeport)
REDIRECTS=""
mkdir -p "$STATE/$NAME"
if [ "$MODE" = loopback ]; then
  ISSUER="http://127.0.0.1:$PORT/dex"
  WEB="http: 127.0.0.1:$PORT"
  [ -z "${KUBESPACES_PORTAL_REDIRECT:-}" ] || REDIRECTS="redirectURIs: ['/device/callback', '$KUBESPACES_PORTAL_REDIRECT']"
else
  [ -f "$STATE/run/node.env" ] || die "no node in $STATE (cluster-up.sh $STATE first)"
  # shellcheck disable=SC1091
  . "$STATE/env"
  [ -n "${KUBESPACES_APPS_CLUSTER_ISSUER:-}" ] || die "no cert-manager issuer in $STATE (cluster-up.sh runs cert-manager.sh)"
  HOST_IP=$(. "$STATE/run/node.env" && echo "$NODE_HOST_IP")
  ISSUER="https://$HOST_IP:$PORT/dex"
  # Its certificate, for the address, from the cluster's CA (cert-manager keeps the Secret).
  cert=kubespaces-dex
  "$KUBESPACES_KUBECTL" apply --server-side --field-manager=kubespaces-harness -f - >/dev/null <<YAML
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: $cert, namespace: cert-manager}
spec:
  secretName: $cert
  ipAddresses: ["$HOST_IP"]
  issuerRef: {group: cert-manager.io, kind: ClusterIssuer, name: $KUBESPACES_APPS_CLUSTER_ISSUER}
YAML
  "$KUBESPACES_KUBECTL" -n cert-manager wait --for=condition=Ready "certificate/$cert" --timeout=60s >/dev/null \
    || die "Dex's certificate (cert-manager/$cert) is not Ready"
  ( umask 077
    "$KUBESPACES_KUBECTL" -n cert-manager get secret "$cert" -o 'jsonpath={.data.tls\.crt}' | base64 -d >"$STATE/$NAME/tls.crt"
    "$KUBESPACES_KUBECTL" -n cert-manager get secret "$cert" -o 'jsonpath={.data.tls\.key}' | base64 -d >"$STATE/$NAME/tls.key" )
  WEB="https: $HOST_IP:$PORT
  tlsCert: $STATE/$NAME/tls.crt
  tlsKey: $STATE/$NAME/tls.key"
  REDIRECTS="redirectURIs: ['/device/callback', 'https://kubespaces.$KUBESPACES_DOMAIN/auth/callback']"
  node_hole -I "$HOST_IP" "$PORT"
  echo "$HOST_IP $PORT" >"$STATE/$NAME/hole"
fi
# shellcheck disable=SC2016  # a bcrypt hash, not an expression
HASH='$2a$10$2b2cU8CPhOTaGrs1HRQuAueS7JTT5ZHsHSzYiFPm1leZck7Mc8T4W'
cat >"$STATE/$NAME/config.yaml" <<YAML
issuer: $ISSUER
storage:
  type: memory
web:
  $WEB
logger:
  level: info
oauth2:
  skipApprovalScreen: true
  passwordConnector: local
expiry:
  deviceRequests: 5m
  idTokens: 10m
enablePasswordDB: true
staticPasswords:
- {email: alice@example.com, hash: "$HASH", username: alice, userID: 0b5d3f1e-0000-4000-8000-00000000a11c}
- {email: bob@example.com, hash: "$HASH", username: bob, userID: 0b5d3f1e-0000-4000-8000-000000000b0b}
- {email: admin@example.com, hash: "$HASH", username: admin, userID: 0b5d3f1e-0000-4000-8000-0000000ad111, groups: [kubespaces-admins]}
- {email: dave@example.com, hash: "$HASH", username: dave, userID: 0b5d3f1e-0000-4000-8000-00000000da4e}
- {email: carol@example.com, hash: "$HASH", username: carol, userID: 0b5d3f1e-0000-4000-8000-00000000ca01, emailVerified: false}
staticClients:
- id: kubespaces
  name: KubeSpaces
  public: true
  $REDIRECTS
# Another application of the same issuer: its ID tokens are valid, but not for KubeSpaces (aud).
- id: other-app
  name: Other application
  public: true
  redirectURIs: ['/device/callback']
YAML

start_bg "$STATE" "$NAME" "$BIN/dex" serve "$STATE/$NAME/config.yaml"
CA=()
[ "$MODE" = loopback ] || CA=(--cacert "$KUBESPACES_APPS_CA_FILE")
wait_for "Dex at $ISSUER" 30 curl -fsS "${CA[@]}" "$ISSUER/.well-known/openid-configuration" \
  || { tail -20 "$STATE/logs/$NAME.log" >&3; die "Dex did not start (log: $STATE/logs/$NAME.log)"; }
env_set "$ENV_FILE" "$ISSUER_VAR" "$ISSUER"
if [ "$MODE" = node ]; then
  env_set "$ENV_FILE" KUBESPACES_NODE_OIDC_CA_FILE "$KUBESPACES_APPS_CA_FILE"
else
  env_set "$ENV_FILE" KUBESPACES_OIDC_CLIENT_ID kubespaces
  env_set "$ENV_FILE" KUBESPACES_DEX_BIN "$BIN/dex"
fi
log "Dex ($MODE) ready at $ISSUER (client kubespaces; users alice, bob, dave, admin, carol @example.com, password: password)"
