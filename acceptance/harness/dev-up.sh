#!/usr/bin/env bash
# dev-up.sh — `make up`: a local KubeSpaces for development in .kubespaces/dev/ (gitignored).
# Builds or looks up the cached cluster binaries and helm, starts the cluster (control plane + a
# real node, applying the CRDs), builds the release operator and its image, installs the chart
# (charts/kubespaces: the operator as two pods in kubespaces-system), and prints what to do next.
# Idempotent: a healthy cluster is left alone, and the chart is upgraded in place (a rebuilt
# operator has a new image name, so its pods roll; an unchanged one changes nothing).
set -euo pipefail
# shellcheck source=acceptance/harness/lib.sh
. "$(dirname "$0")/lib.sh"
LOG_PREFIX=make-up
STATE="$REPO_ROOT/.kubespaces/dev"
mkdir -p "$STATE"

ensure_runtime_tools
ensure_node_tools
ensure_go
ensure_rust

BIN=$("$HARNESS_DIR/build-tools.sh" --with helm --with vcluster)
log "building the operator (cargo build --release -p kubespaces-operator)"
(cd "$REPO_ROOT" && cargo build --release -p kubespaces-operator)

# Only the CRDs before kube-controller-manager starts; the chart installs everything else.
KUBESPACES_MANIFESTS=crds KUBESPACES_BIN="$BIN" "$HARNESS_DIR/cluster-up.sh" "$STATE"
# An operator process started by an older `make up` (operator.sh) would reconcile alongside the pods.
"$HARNESS_DIR/operator.sh" stop "$STATE"
if ! KUBESPACES_BIN="$BIN" "$HARNESS_DIR/chart.sh" install "$STATE"; then
  log "the operator did not start; the cluster keeps running (make down stops it)"
  exit 1
fi

rel=${STATE#"$REPO_ROOT/"}
cat <<EOF

KubeSpaces is running locally (state and logs in $rel/, stop with: make down).
The cluster has a real node (containerd, kubelet, kube-proxy, CoreDNS): pods really run.

  . $rel/env                          # KUBECONFIG and friends
  alias kubectl=$BIN/kubectl        # or any kubectl >= 1.36
  kubectl apply -f examples/tenant.yaml
  kubectl get tenants
  kubectl -n kubespaces-tenant-team-atlas run hello --image=\$KUBESPACES_BUSYBOX_IMAGE \\
    --image-pull-policy=IfNotPresent --restart=Never -- echo hello from a real pod
  kubectl -n kubespaces-tenant-team-atlas logs hello
  kubectl -n kubespaces-system get pods,lease     # the operator: two pods, one holds the Lease
  kubectl -n kubespaces-system logs -f --prefix -l app.kubernetes.io/component=operator

Each Tenant gets its own Kubernetes (docs/first-tenant.md) and https://<app>.<tenant>.apps.\$KUBESPACES_DOMAIN
for its apps (docs/exposing-apps.md; curl --cacert \$KUBESPACES_APPS_CA_FILE trusts the local CA).

Stop everything with: make down
EOF

# --- KubeSpaces server, portal and Dex (issue 12) ---
# Dex on loopback (users in dex.sh), then the server (REST API + portal) as a process on
# 127.0.0.1:8080 with the dev cluster's kubeconfig; both are stopped by make down (cluster-down.sh).
log "building the server and the CLI (cargo build --release -p kubespaces-server -p kubespaces-cli)"
(cd "$REPO_ROOT" && cargo build --release -p kubespaces-server -p kubespaces-cli)
KUBESPACES_BIN="$("$HARNESS_DIR/build-tools.sh" --with dex)" "$HARNESS_DIR/dex.sh" start "$STATE"
# shellcheck disable=SC1091
. "$STATE/env"
SERVER_PORT=${KUBESPACES_SERVER_PORT:-8080}
if ! pid_alive "$STATE" kubespaces-server >/dev/null; then
  start_bg "$STATE" kubespaces-server "$REPO_ROOT/target/release/kubespaces-server" \
    --listen "127.0.0.1:$SERVER_PORT" --oidc-issuer "$KUBESPACES_OIDC_ISSUER" \
    --oidc-client-id "$KUBESPACES_OIDC_CLIENT_ID" --admin-group kubespaces-admins
fi
wait_for "the server's /readyz" 60 curl -fsS "http://127.0.0.1:$SERVER_PORT/readyz" \
  || die "the server did not start (log: ${STATE#"$REPO_ROOT/"}/logs/kubespaces-server.log)"
cat <<EOF

Portal:  http://127.0.0.1:$SERVER_PORT   (log in as alice@example.com, password: password;
         also bob@example.com, and admin@example.com, who sees every tenant)
CLI:     target/release/kubespaces login --server http://127.0.0.1:$SERVER_PORT
         target/release/kubespaces tenant create team-atlas --cpu 8 --memory 16Gi
EOF
# --- end KubeSpaces server ---
