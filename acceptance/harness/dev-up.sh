#!/usr/bin/env bash
# dev-up.sh — `make up`: a local KubeSpaces for development in .kubespaces/dev/ (gitignored).
# Builds or looks up the cached cluster binaries, helm and Dex, starts the cluster (control plane +
# a real node, applying the CRDs), starts Dex (the IdP, not part of the product) on the node's
# link, builds the release operator, server and CLI and their images, installs the chart
# (charts/kubespaces: the operator and the server, two pods each, in kubespaces-system, the server
# at https://kubespaces.<domain> through the cluster's Gateway), and prints what to do next.
# Idempotent: a healthy cluster is left alone, and the chart is upgraded in place (a rebuilt
# binary has a new image name, so its pods roll; an unchanged one changes nothing).
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

BIN=$("$HARNESS_DIR/build-tools.sh" --with helm --with vcluster --with dex)
log "building the operator, the server and the CLI (cargo build --release)"
(cd "$REPO_ROOT" && cargo build --release -p kubespaces-operator -p kubespaces-server -p kubespaces-cli)

# Only the CRDs before kube-controller-manager starts; the chart installs everything else.
KUBESPACES_MANIFESTS=crds KUBESPACES_BIN="$BIN" "$HARNESS_DIR/cluster-up.sh" "$STATE"
# What an older `make up` ran as processes: an operator (operator.sh), which would reconcile
# alongside the pods, and the server on 127.0.0.1:8080 with Dex on loopback.
"$HARNESS_DIR/operator.sh" stop "$STATE"
stop_one "$STATE" kubespaces-server 10
"$HARNESS_DIR/dex.sh" stop "$STATE"
KUBESPACES_BIN="$BIN" "$HARNESS_DIR/dex.sh" start "$STATE" node
if ! KUBESPACES_BIN="$BIN" "$HARNESS_DIR/chart.sh" install "$STATE"; then
  log "KubeSpaces did not start; the cluster keeps running (make down stops it)"
  exit 1
fi
# shellcheck disable=SC1091
. "$STATE/env"
PORTAL="https://kubespaces.$KUBESPACES_DOMAIN"
wait_for "the portal at $PORTAL" 120 curl -fsS --cacert "$KUBESPACES_APPS_CA_FILE" "$PORTAL/readyz" \
  || die "the portal does not answer at $PORTAL (kubectl -n kubespaces-system get pods,gateway,httproute)"

rel=${STATE#"$REPO_ROOT/"}
cat <<EOF

KubeSpaces is running locally (state and logs in $rel/, stop with: make down).
The cluster has a real node (containerd, kubelet, kube-proxy, CoreDNS): pods really run.

Portal:  $PORTAL
         log in as alice@example.com, password: password (also bob@example.com, and
         admin@example.com, who sees every tenant). Its certificate is from the cluster's own CA,
         $rel/apps-ca.crt: let your browser trust it, or accept it once.
CLI:     target/release/kubespaces login --server $PORTAL --certificate-authority $rel/apps-ca.crt
         target/release/kubespaces tenant create team-atlas --cpu 2 --memory 4Gi --wait
         (the login records the CA: later commands need no flag; nothing enters the machine's
         trust store)

kubectl:
  . $rel/env                          # KUBECONFIG and friends
  alias kubectl=$BIN/kubectl        # or any kubectl >= 1.36
  kubectl apply -f examples/tenant.yaml
  kubectl get tenants
  kubectl -n kubespaces-system get pods,lease     # the operator and the server: two pods each
  kubectl -n kubespaces-system logs -f --prefix -l app.kubernetes.io/component=operator

Each Tenant gets its own Kubernetes (docs/first-tenant.md) and https://<app>.<tenant>.apps.\$KUBESPACES_DOMAIN
for its apps (docs/exposing-apps.md; curl --cacert \$KUBESPACES_APPS_CA_FILE trusts the local CA).

Stop everything with: make down
EOF
