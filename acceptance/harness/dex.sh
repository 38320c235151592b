#!/usr/bin/env bash
# dex.sh start|stop STATE_DIR — Dex, the OIDC provider the server, the CLI and the portal log in
# against, as a process on loopback next to the cluster in STATE_DIR (its pid and log with the
# cluster's components, so cluster-down.sh stops it too).
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
# Appends to STATE_DIR/env: KUBESPACES_OIDC_ISSUER, KUBESPACES_OIDC_CLIENT_ID, KUBESPACES_DEX_BIN.
# Env: KUBESPACES_BIN (binaries dir holding dex; default: build-tools.sh --with dex).
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=dex

[ $# -eq 2 ] || die "usage: $0 start|stop STATE_DIR"
CMD=$1
STATE=$(abspath "$2")
ENV_FILE="$STATE/env"

case $CMD in
  stop)
    stop_one "$STATE" dex 5
    env_unset "$ENV_FILE" KUBESPACES_OIDC_ISSUER
    env_unset "$ENV_FILE" KUBESPACES_OIDC_CLIENT_ID
    env_unset "$ENV_FILE" KUBESPACES_DEX_BIN
    exit 0 ;;
  start) ;;
  *) die "usage: $0 start|stop STATE_DIR" ;;
esac

if pid=$(pid_alive "$STATE" dex); then
  log "Dex already runs (pid $pid)"
  exit 0
fi
BIN=${KUBESPACES_BIN:-$("$HARNESS_DIR/build-tools.sh" --with dex)}
[ -x "$BIN/dex" ] || die "$BIN/dex missing: run build-tools.sh --with dex"

PORT=$(freeport)
ISSUER="http://127.0.0.1:$PORT/dex"
REDIRECTS=""
[ -z "${KUBESPACES_PORTAL_REDIRECT:-}" ] || REDIRECTS="redirectURIs: ['/device/callback', '$KUBESPACES_PORTAL_REDIRECT']"
# shellcheck disable=SC2016  # a bcrypt hash, not an expression
HASH='$2a$10$2b2cU8CPhOTaGrs1HRQuAueS7JTT5ZHsHSzYiFPm1leZck7Mc8T4W'
mkdir -p "$STATE/dex"
cat >"$STATE/dex/config.yaml" <<YAML
issuer: $ISSUER
storage:
  type: memory
web:
  http: 127.0.0.1:$PORT
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

start_bg "$STATE" dex "$BIN/dex" serve "$STATE/dex/config.yaml"
wait_for "Dex at $ISSUER" 30 curl -fsS "$ISSUER/.well-known/openid-configuration" \
  || { tail -20 "$STATE/logs/dex.log" >&3; die "Dex did not start (log: $STATE/logs/dex.log)"; }
env_set "$ENV_FILE" KUBESPACES_OIDC_ISSUER "$ISSUER"
env_set "$ENV_FILE" KUBESPACES_OIDC_CLIENT_ID kubespaces
env_set "$ENV_FILE" KUBESPACES_DEX_BIN "$BIN/dex"
log "Dex ready at $ISSUER (client kubespaces; users alice, bob, dave, admin, carol @example.com, password: password)"
